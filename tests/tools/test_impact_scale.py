"""Impact on several processes and on a Dask cluster: the same report as one process."""

from __future__ import annotations

import io
import json
import os
import re
from pathlib import Path
from typing import Any

import pytest

from coachctx.cli import main
from coachctx.engine.policy import Policy, policy_to_yaml, validate_policy
from coachctx.tools.impact import run_impact
from coachctx.tools.questions import Question, read_questions

ROOT = Path(__file__).resolve().parents[2]
DEV_QUESTIONS = ROOT / "tests" / "data" / "questions" / "dev.yaml"
EXTRA = ["무릎이 아픈데 달려도 될까요?", "Posso treinar hoje com dor no joelho?", "膝が痛いけど走ってもいい？",
         "Knieschmerzen nach dem Lauf, was tun?", "thank you", "!!!", "Kan jeg løbe med knæsmerter?"]
ATHLETES = ("maya", "kenji", "omar", "tom", "nobody")


def worse(policy: Policy) -> Policy:
    data = policy.model_dump(mode="json")
    data["intents"]["nutrition"]["primary"].remove("readiness_nutrition")
    data["tiers"]["free"] = 120
    return validate_policy(data)


def log_rows() -> list[dict[str, Any]]:
    texts = [q.question for q in read_questions(DEV_QUESTIONS).questions] + EXTRA
    return [{"question": t, "athlete": ATHLETES[i % len(ATHLETES)], "tier": "free" if i % 3 else "paid"}
            for i, t in enumerate(texts * 3)]


def without_timing(data: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in data.items() if k not in ("seconds", "questions")}


class TestProcesses:
    def test_two_jobs_give_the_report_of_one(self, policy: Policy) -> None:
        # row numbers repeat (each text once per tier), as a caller's may
        qs = [Question(i // 2, r["question"], athlete=r["athlete"], tier=tier)
              for i, r in enumerate(log_rows(), 1) for tier in ("free", "paid")]
        one = run_impact(qs, policy, worse(policy))
        two = run_impact(qs, policy, worse(policy), jobs=2)
        assert one.summary()["changed"] > 0 and one.skipped  # 'nobody' is skipped, with its row
        assert without_timing(two.to_json()) == without_timing(one.to_json())

    def test_changed_only_holds_the_changed_rows_and_the_figures_over_all(self, policy: Policy) -> None:
        qs = [Question(i, r["question"], athlete=r["athlete"], tier=r["tier"]) for i, r in enumerate(log_rows(), 1)]
        every = run_impact(qs, policy, worse(policy))
        for jobs in (1, 2):
            changed = run_impact(qs, policy, worse(policy), changed_only=True, jobs=jobs)
            assert len(changed.rows) == every.summary()["changed"] < len(every.rows)
            assert without_timing(changed.to_json(changed_only=True)) == \
                without_timing(every.to_json(changed_only=True))

    def test_progress_reaches_the_end(self, policy: Policy) -> None:
        calls: list[tuple[int, int]] = []
        qs = [Question(i, f"question {i} about sleep") for i in range(1, 120)]
        run_impact(qs, policy, policy, jobs=2, progress=lambda done, total: calls.append((done, total)))
        assert calls[-1] == (119, 119) and [d for d, _ in calls] == sorted(d for d, _ in calls)


@pytest.fixture(scope="module")
def cluster() -> Any:
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1",
                                  dashboard_address=None) as c:
        yield c


@pytest.fixture()
def logs(tmp_path: Path, policy: Policy) -> Path:
    rows = log_rows()
    lines = [json.dumps(r, ensure_ascii=False).encode() for r in rows]
    lines.insert(5, b"{not json")  # a bad line is skipped under its line number in both engines
    lines.insert(20, b'{"question": "r\xe9cup\xe9ration?"}')  # so is a byte that is not UTF-8
    # a raw CR inside a string, and a U+2028: rows end at \n alone in both (Dask split at the CR)
    lines.insert(30, b'{"question": "x\rb"}')
    lines.insert(31, '{"question": "knee pain\u2028today"}'.encode())
    (tmp_path / "all.jsonl").write_bytes(b"\n".join(lines) + b"\n")
    parts = tmp_path / "parts"
    parts.mkdir()
    cut = [0, 17, 40, len(lines)]
    for n, (a, b) in enumerate(zip(cut, cut[1:], strict=False)):
        (parts / f"log-{n}.jsonl").write_bytes(b"\n".join(lines[a:b]) + b"\n")
    (tmp_path / "worse.yaml").write_text(policy_to_yaml(worse(policy)), encoding="utf-8")
    return tmp_path


def impact_json(capsys: pytest.CaptureFixture[str], *argv: str) -> dict[str, Any]:
    code = main(["impact", *argv, "--json"])
    out, err = capsys.readouterr()
    assert code == 0, err
    return json.loads(out)  # type: ignore[no-any-return]


@pytest.mark.timeout(180)
class TestDask:
    def test_a_two_worker_cluster_gives_the_local_report(self, cluster: Any, logs: Path,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
        policies = ("--base", "policy/default.yaml", "--candidate", str(logs / "worse.yaml"))
        local = impact_json(capsys, str(logs / "all.jsonl"), *policies)
        remote = impact_json(capsys, str(logs / "parts"), *policies, "--engine", "dask",
                             "--scheduler", cluster.scheduler_address)
        assert local["summary"]["changed"] > 0
        assert any(s["row"] == 6 and s["reason"].startswith("not valid JSON") for s in local["skipped"])
        assert {"row": 21, "reason": "not UTF-8 text (column 16)"} in local["skipped"]
        assert without_timing(remote) == without_timing(local)
        # only the changed rows travel back, with the totals of all
        changed = impact_json(capsys, str(logs / "parts" / "log-*.jsonl"), *policies, "--engine", "dask",
                              "--scheduler", cluster.scheduler_address, "--changed-only")
        local_changed = impact_json(capsys, str(logs / "all.jsonl"), *policies, "--changed-only")
        assert without_timing(changed) == without_timing(local_changed)

    def test_parquet_partitions(self, cluster: Any, logs: Path, capsys: pytest.CaptureFixture[str]) -> None:
        pd = pytest.importorskip("pandas")
        pytest.importorskip("pyarrow")
        rows = log_rows()
        folder = logs / "parquet"
        folder.mkdir()
        for n, (a, b) in enumerate([(0, 30), (30, len(rows))]):
            pd.DataFrame(rows[a:b]).to_parquet(folder / f"part-{n}.parquet")
        (logs / "rows.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
        policies = ("--base", "policy/default.yaml", "--candidate", str(logs / "worse.yaml"))
        local = impact_json(capsys, str(logs / "rows.jsonl"), *policies)
        remote = impact_json(capsys, str(folder), *policies, "--engine", "dask", "--scheduler",
                             cluster.scheduler_address)
        assert without_timing(remote) == without_timing(local)


class TestCommand:
    @pytest.mark.parametrize(("extra", "message"), [
        (["--jobs", "0"], r"^coachctx: --jobs must be 1 or more, got 0$"),
        (["--scheduler", "tcp://127.0.0.1:1"], r"^coachctx: --scheduler is for --engine dask$"),
        (["--engine", "dask", "--jobs", "2"], r"^coachctx: --jobs is for the local engine"),
        (["--engine", "dask", "--scheduler", "tcp://127.0.0.1:1"],
         r"^coachctx: cannot reach the Dask scheduler at tcp://127\.0\.0\.1:1: "),
        (["--jobs", "100000"], r"^coachctx: --jobs 100000 is more than the \d+ core\(s\) this process may use; "
                               r"at most --jobs \d+"),
        *[(["--engine", "dask", "--scheduler", address],
           rf"^coachctx: --scheduler '{re.escape(address)}' is not a Dask scheduler address such as tcp://")
          for address in ("bogus", "tcp://", "tcp://host:notaport")],
        # tls:// and ucx:// ended in a TypeError traceback (an adversarial pass)
        *[(["--engine", "dask", "--scheduler", address],
           rf"^coachctx: --scheduler '{re.escape(address)}': coachctx connects to a Dask scheduler over tcp:// only")
          for address in ("tls://127.0.0.1:1", "ucx://127.0.0.1:1", "inproc://x")],
    ])
    @pytest.mark.timeout(60)
    def test_bad_options_exit_2_with_one_line(self, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
                                              extra: list[str], message: str) -> None:
        monkeypatch.chdir(ROOT)
        code = main(["impact", str(ROOT / "sample_logs" / "questions.jsonl"), "--base", "policy/default.yaml",
                     "--candidate", "policy/default.yaml", *extra])
        out, err = capsys.readouterr()
        assert (code, out) == (2, "")
        assert len(err.splitlines()) == 1 and re.match(message, err), err


    @pytest.mark.timeout(60)
    def test_a_fifo_among_the_logs_is_refused_not_waited_on(self, capsys: pytest.CaptureFixture[str],
                                                            tmp_path: Path) -> None:
        (tmp_path / "a.jsonl").write_text('{"question": "knee pain", "athlete": "maya"}\n', encoding="utf-8")
        os.mkfifo(tmp_path / "b.jsonl")  # it hung the dask engine; the local one refused it
        code = main(["impact", str(tmp_path), "--engine", "dask", "--base", str(ROOT / "policy" / "default.yaml"),
                     "--candidate", str(ROOT / "policy" / "default.yaml")])
        assert (code, capsys.readouterr().err) == (
            2, f"coachctx: {tmp_path / 'b.jsonl'}: is a FIFO (named pipe), expected a JSONL or Parquet log file\n")

    @pytest.mark.timeout(60)
    @pytest.mark.parametrize("damage", ["columns", "page"])
    def test_a_parquet_log_it_cannot_read_alike_is_one_line(self, capsys: pytest.CaptureFixture[str], tmp_path: Path,
                                                             damage: str) -> None:
        """Columns `athlete` and `Athlete` were merged, the last winning; a garbled data page (its
        footer sound) gave pyarrow's message naming no log (an adversarial pass)."""
        pd = pytest.importorskip("pandas")
        pytest.importorskip("pyarrow")
        path = tmp_path / "log.parquet"
        rows = [{"question": f"knee pain {i}", "athlete": "tom", "Athlete": "omar"} for i in range(50)]
        pd.DataFrame(rows if damage == "columns" else [{"question": r["question"]} for r in rows]).to_parquet(path)
        if damage == "page":
            data = bytearray(path.read_bytes())
            data[4:40] = b"\x0e" * 36  # the first data page's header, after the PAR1 magic
            path.write_bytes(bytes(data))
        code = main(["impact", str(path), "--engine", "dask", "--base", str(ROOT / "policy" / "default.yaml"),
                     "--candidate", str(ROOT / "policy" / "default.yaml")])
        err = capsys.readouterr().err
        assert code == 2 and len(err.splitlines()) == 1, err
        assert err.startswith(f"coachctx: {path}: " + ("the columns 'athlete' and 'Athlete' are one column" if
                                                          damage == "columns" else "not a Parquet log Dask can read"))

    @pytest.mark.timeout(60)
    def test_a_file_that_is_not_parquet_is_one_line_naming_it(self, capsys: pytest.CaptureFixture[str],
                                                               tmp_path: Path) -> None:
        """Dask wraps pyarrow's message in its own lines; the user gets pyarrow's, on one line."""
        bad = tmp_path / "log.parquet"
        bad.write_bytes(b"PAR1 not a parquet file PAR1")
        code = main(["impact", str(bad), "--engine", "dask", "--base", str(ROOT / "policy" / "default.yaml"),
                     "--candidate", str(ROOT / "policy" / "default.yaml")])
        out, err = capsys.readouterr()
        assert (code, out) == (2, "")
        assert len(err.splitlines()) == 1 and "Original Message" not in err and "\\n" not in err, err
        assert err.startswith(f"coachctx: {bad}: not a Parquet log Dask can read: ") and "Is this a 'parquet' file?" in err


class TestOrder:
    @pytest.mark.timeout(120)
    def test_a_row_is_decided_alike_whatever_came_before(self, policy: Policy) -> None:
        # a plan memo keyed on too little made a row's selection depend on which question filled it
        from bench.workload import dev_rows, question_log

        log = question_log(dev_rows(), list(ATHLETES[:4]), 3000)
        qs = [Question(i, r.question, athlete=r.athlete, tier=r.tier) for i, r in enumerate(log, 1)]
        forward = {r.question.row: r.to_json() for r in run_impact(qs, policy, worse(policy)).rows}
        backward = {r.question.row: r.to_json() for r in run_impact(qs[::-1], policy, worse(policy)).rows}
        assert forward == backward


# --- how far a long run is -------------------------------------------------------------------------


class _Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def _run(out: io.StringIO, steps: list[tuple[float, int]], total: int = 1000) -> str:
    from coachctx.cli.impact import Progress

    clock = _Clock()
    with Progress(out, clock=clock) as progress:
        for at, done in steps:
            clock.now = 100.0 + at
            progress(done, total)
    return out.getvalue()


def test_a_short_run_prints_no_progress() -> None:
    assert _run(io.StringIO(), [(1.0, 500), (4.9, 1000)]) == ""
    assert _run(_Terminal(), [(1.0, 500), (4.9, 1000)]) == ""


def test_a_long_run_in_a_log_prints_a_line_at_each_tenth_with_the_time_left() -> None:
    steps = [(6.0, 100), (7.0, 150), (12.0, 200), (130.0, 900), (131.0, 950), (140.0, 1000)]
    assert _run(io.StringIO(), steps).splitlines() == [
        "impact: 100 of 1,000 questions decided (10%) in 6 s, about 54 s left",
        "impact: 200 of 1,000 questions decided (20%) in 12 s, about 48 s left",
        "impact: 900 of 1,000 questions decided (90%) in 2 min 10 s, about 14 s left",
        "impact: 1,000 of 1,000 questions decided (100%) in 2 min 20 s",
    ]


def test_on_a_terminal_one_line_is_rewritten_at_most_once_a_second_and_ended() -> None:
    text = _run(_Terminal(), [(6.0, 100), (6.5, 150), (7.2, 200), (8.0, 1000)])
    assert text.count("\r") == 3 and text.endswith("in 8 s\x1b[K\n")
    assert "150 of" not in text  # half a second after the last line
