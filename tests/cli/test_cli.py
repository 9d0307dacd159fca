"""The CLI and the Decision JSON contract: `explain --json` validates against the project's schema,
bad input exits 2 with one line on stderr, traces replay, `check-policy` and `athletes` work."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from engine_support import PAIN, derive_policy
from jsonschema import Draft202012Validator
from repo_paths import DECISION_SCHEMA, ROOT

from coachctx.cli import main
from coachctx.engine.pipeline import select
from coachctx.engine.policy import DEFAULT_POLICY_PATH, Policy, load_policy, policy_to_yaml
from coachctx.engine.services import Bundle

ATHLETES = ["ines", "kenji", "lucia", "maya", "omar", "priya", "tom"]
QUESTIONS = [PAIN, "Can I add more mileage next week?", "What should I eat after intervals tonight?",
             "¿Puedo correr hoy con dolor de rodilla?", "thanks!"]


@pytest.fixture(scope="module")
def validator() -> Draft202012Validator:
    schema = json.loads(DECISION_SCHEMA.read_text(encoding="utf-8"))
    Draft202012Validator.check_schema(schema)
    return Draft202012Validator(schema)


def _valid(validator: Draft202012Validator, doc: Any) -> None:
    errors = sorted(validator.iter_errors(doc), key=lambda e: list(e.absolute_path))
    assert not errors, "\n".join(f"{list(e.absolute_path)}: {e.message}" for e in errors[:5])


Run = Callable[..., tuple[int, str, str]]


_LOADED: dict[tuple[str, int, int], Policy] = {}


def _cached_load_policy(path: str | Path | None = None) -> Policy:
    """`load_policy`, remembered per (file, mtime, size): parsing the checked-in YAML for each of
    forty in-process runs would be most of this module's time."""
    p = Path(path) if path is not None else DEFAULT_POLICY_PATH
    try:
        st = p.stat()
    except OSError:
        return load_policy(p)
    key = (str(p.resolve()), st.st_mtime_ns, st.st_size)
    if key not in _LOADED:
        _LOADED[key] = load_policy(p)
    return _LOADED[key]


@pytest.fixture
def cli(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> Run:
    """Run `coachctx ARGS` in-process: (exit code, stdout, stderr)."""
    monkeypatch.setattr("coachctx.cli.common.load_policy", _cached_load_policy)

    def run(*args: str) -> tuple[int, str, str]:
        capsys.readouterr()
        try:
            code = main(list(args))
        except SystemExit as e:  # argparse's own usage errors
            code = int(e.code or 0)
        out, err = capsys.readouterr()
        return code, out, err

    return run


def _console_script() -> list[str]:
    script = shutil.which("coachctx", path=str(Path(sys.executable).parent))
    return [script] if script else [sys.executable, "-m", "coachctx.cli"]


def _subprocess(*args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "COACHCTX_"))}
    return subprocess.run([*_console_script(), *args], capture_output=True, text=True, cwd=ROOT, env=env,
                          timeout=60, check=False)


def _one_clean_line(err: str) -> str:
    assert "Traceback" not in err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("coachctx: ")
    return lines[0]


class TestExplainJson:
    @pytest.mark.parametrize("athlete", ATHLETES)
    def test_every_athlete_validates(self, cli: Run, validator: Draft202012Validator, athlete: str) -> None:
        code, out, err = cli("explain", PAIN, "--athlete", athlete, "--json")
        assert (code, err) == (0, "")
        doc = json.loads(out)
        _valid(validator, doc)
        assert doc["athlete"] == athlete
        assert doc["tokens"]["prompt"] < doc["tokens"]["naive"]

    @pytest.mark.parametrize(("question", "scope", "tier", "costs"), [
        (QUESTIONS[0], "auto", "paid", "hand"),
        (QUESTIONS[1], "week", "free", "measured"),
        (QUESTIONS[2], "today", "paid", "measured"),
        (QUESTIONS[3], "months", "free", "hand"),
        (QUESTIONS[4], "auto", "free", "measured"),
    ])
    def test_questions_scopes_tiers_and_cost_modes_validate(
            self, cli: Run, validator: Draft202012Validator, question: str, scope: str, tier: str,
            costs: str) -> None:
        code, out, _ = cli("explain", question, "--athlete", "maya", "--scope", scope, "--tier", tier,
                           "--costs", costs, "--json")
        assert code == 0
        doc = json.loads(out)
        _valid(validator, doc)
        assert (doc["scope"]["requested"], doc["tier"], doc["tokens"]["cost_mode"]) == (scope, tier, costs)

    def test_a_custom_budget_validates(self, cli: Run, validator: Draft202012Validator) -> None:
        code, out, _ = cli("explain", PAIN, "--athlete", "tom", "--budget", "0", "--json")
        doc = json.loads(out)
        _valid(validator, doc)
        assert (code, doc["tier"], doc["budget"]) == (0, "custom", 0)

    def test_the_pain_question_shows_what_the_issue_asks_for(self, cli: Run) -> None:
        _, out, _ = cli("explain", PAIN, "--athlete", "maya", "--json")
        doc = json.loads(out)
        assert {"readiness_training", "readiness_injury"} <= set(doc["selected"])
        assert doc["intent"]["source"] == "fallback"
        assert doc["intent"]["contenders"] == ["training", "injury"]
        assert doc["tokens"]["prompt"] > 0 and doc["tokens"]["naive"] > doc["tokens"]["prompt"]
        assert doc["policy"]["source"].endswith("default.yaml") and len(doc["policy"]["digest"]) == 12

    def test_every_combination_of_select_validates(self, policy: Policy, bundles: dict[str, Bundle],
                                                   validator: Draft202012Validator) -> None:
        for athlete in ATHLETES:
            for i, question in enumerate(QUESTIONS):
                for scope in ("auto", "today", "week", "months"):
                    d = select(question, bundles[athlete], policy, scope=scope, tier=("free", "paid")[i % 2],
                               cost_mode=("hand", "measured")[(i + len(scope)) % 2])
                    _valid(validator, d.to_json())

    def test_as_a_subprocess_through_the_console_script(self, validator: Draft202012Validator) -> None:
        proc = _subprocess("explain", PAIN, "--athlete", "maya", "--json")
        assert proc.returncode == 0, proc.stderr
        assert proc.stderr == ""
        doc = json.loads(proc.stdout)
        _valid(validator, doc)
        assert {"readiness_training", "readiness_injury"} <= set(doc["selected"])

    @pytest.mark.parametrize("module", ["coachctx", "coachctx.cli"])
    def test_python_dash_m_runs_the_same_command_line(self, module: str) -> None:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "COACHCTX_"))}
        proc = subprocess.run([sys.executable, "-m", module, "explain", PAIN, "--athlete", "maya"],
                              capture_output=True, text=True, cwd=ROOT, env=env, timeout=60, check=False)
        assert (proc.returncode, proc.stderr) == (0, "")
        assert proc.stdout == _subprocess("explain", PAIN, "--athlete", "maya").stdout

    def test_bad_input_as_a_subprocess_has_no_traceback(self) -> None:
        proc = _subprocess("explain", "   ", "--athlete", "maya")
        assert proc.returncode == 2
        assert _one_clean_line(proc.stderr) == "coachctx: question is empty: type what the athlete asked"
        assert proc.stdout == ""

    def test_the_text_report(self, cli: Run) -> None:
        code, out, _ = cli("explain", PAIN, "--athlete", "maya", "--prompt")
        assert code == 0
        assert "intent     training via fallback    contenders training, injury" in out
        assert "kept_despite_exclude: training excludes it" in out
        assert "[system]\nYou are an endurance coach's assistant" in out


class TestBadInput:
    @pytest.mark.parametrize(("args", "message"), [
        (["explain", "", "--athlete", "maya"], "coachctx: question is empty: type what the athlete asked"),
        (["explain", PAIN, "--athlete", "bob"],
         "coachctx: unknown athlete 'bob'; sample athletes are: ines, kenji, lucia, maya, omar, priya, tom"),
        (["explain", PAIN, "--athlete", "conditions"], "coachctx: unknown athlete 'conditions'"),
        (["explain", PAIN, "--athlete", "maya", "--scope", "year"], "coachctx: argument --scope: invalid choice"),
        (["explain", PAIN, "--athlete", "maya", "--tier", "gold"],
         "coachctx: unknown tier 'gold'; the policy defines: free, paid"),
        (["explain", PAIN, "--athlete", "maya", "--costs", "vibes"], "coachctx: argument --costs: invalid choice"),
        (["explain", PAIN, "--athlete", "maya", "--budget", "-3"],
         "coachctx: argument --budget: expected a whole number from 0 to 1000000, got '-3'"),
        (["explain", PAIN, "--athlete", "maya", "--budget", "lots"],
         "coachctx: argument --budget: expected a whole number from 0 to 1000000, got 'lots'"),
        (["explain", PAIN], "coachctx: the following arguments are required: --athlete"),
        (["frobnicate"], "coachctx: argument command: invalid choice"),
        (["explain", PAIN, "--athlete", "maya", "--trace-out", "/nonexistent-dir/t.json"],
         "coachctx: cannot write /nonexistent-dir/t.json: No such file or directory"),
    ])
    def test_exit_2_and_one_line(self, cli: Run, args: list[str], message: str) -> None:
        code, out, err = cli(*args)
        assert code == 2
        assert _one_clean_line(err).startswith(message)
        assert out == ""

    def test_an_invalid_policy_file(self, cli: Run, tmp_path: Path) -> None:
        bad = tmp_path / "bad.yaml"
        bad.write_text("intents: [\n", encoding="utf-8")
        code, _, err = cli("explain", PAIN, "--athlete", "maya", "--policy", str(bad))
        assert code == 2
        assert _one_clean_line(err).startswith(f"coachctx: invalid policy {bad}: line 2, column 1: YAML syntax error")

    def test_a_missing_policy_file(self, cli: Run, tmp_path: Path) -> None:
        code, _, err = cli("explain", PAIN, "--athlete", "maya", "--policy", str(tmp_path / "gone.yaml"))
        assert code == 2
        assert _one_clean_line(err) == f"coachctx: invalid policy {tmp_path / 'gone.yaml'}: no such file"

    def test_a_policy_with_several_problems_still_exits_2(self, cli: Run, policy: Policy, tmp_path: Path) -> None:
        bad = tmp_path / "two.yaml"
        bad.write_text(policy_to_yaml(policy).replace("free: 50", "free: -1").replace("margin: 1.0", "margin: -1"),
                       encoding="utf-8")
        code, _, err = cli("check-policy", str(bad))
        assert code == 2
        assert "Traceback" not in err
        assert err.startswith("coachctx: invalid policy\n")
        assert "routing.margin" in err and "tiers.free" in err


@pytest.fixture(scope="module")
def pain_trace(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    path = tmp_path_factory.mktemp("trace") / "pain.json"
    assert main(["explain", PAIN, "--athlete", "maya", "--trace-out", str(path), "--json"]) == 0
    trace: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return trace


def _write(tmp_path: Path, obj: Any, name: str = "trace.json") -> Path:
    path = tmp_path / name
    path.write_text(obj if isinstance(obj, str) else json.dumps(obj), encoding="utf-8")
    return path


class TestReplay:
    def test_explain_writes_a_trace_with_the_decision_and_the_bundle(self, pain_trace: dict[str, Any],
                                                                    validator: Draft202012Validator) -> None:
        assert pain_trace["format"] == "coachctx.trace/1"
        assert pain_trace["inputs"] == {"question": PAIN, "athlete": "maya", "scope": "auto", "tier": "paid",
                                        "budget": None, "cost_mode": "hand"}
        _valid(validator, pain_trace["decision"])
        assert set(pain_trace["bundle"]["services"]) == {"account", "baselines", "readiness", "conditions"}

    def test_replay_gives_the_same_decision(self, cli: Run, pain_trace: dict[str, Any], tmp_path: Path) -> None:
        path = _write(tmp_path, pain_trace)
        code, out, err = cli("replay", str(path))
        assert (code, err) == (0, "")
        assert "result     the same decision: today's policy decides exactly as recorded" in out

    def test_replay_json(self, cli: Run, pain_trace: dict[str, Any], tmp_path: Path,
                         validator: Draft202012Validator) -> None:
        code, out, _ = cli("replay", str(_write(tmp_path, pain_trace)), "--json")
        doc = json.loads(out)
        assert (code, doc["same"], doc["differences"]) == (0, True, [])
        _valid(validator, doc["decision"])
        assert doc["decision"]["selected"] == pain_trace["decision"]["selected"]

    def test_replay_uses_the_snapshot_not_todays_services(self, cli: Run, pain_trace: dict[str, Any],
                                                          tmp_path: Path) -> None:
        trace = json.loads(json.dumps(pain_trace))
        trace["bundle"]["services"]["readiness"] = {"status": "unreachable", "detail": "down at the time",
                                                    "body": None, "latency_ms": None}
        code, out, _ = cli("replay", str(_write(tmp_path, trace)), "--json")
        doc = json.loads(out)
        assert code == 1 and doc["same"] is False  # differs: exit 1, as diff does
        assert "readiness_injury" not in doc["decision"]["selected"]
        assert {d["field"] for d in doc["differences"]} >= {"selected", "withheld"}

    def test_replay_under_a_modified_policy_lists_differences_field_by_field(
            self, cli: Run, policy: Policy, pain_trace: dict[str, Any], tmp_path: Path) -> None:
        def tighter(data: dict[str, Any]) -> None:
            data["tiers"]["paid"] = 20
            data["intents"]["training"]["secondary"] = ["athlete_profile"]

        changed = tmp_path / "tight.yaml"
        changed.write_text(policy_to_yaml(derive_policy(policy, tighter)), encoding="utf-8")
        trace_path = _write(tmp_path, pain_trace)

        code, out, _ = cli("replay", str(trace_path), "--policy", str(changed), "--json")
        doc = json.loads(out)
        assert code == 1 and doc["same"] is False
        diffs = {d["field"]: d for d in doc["differences"]}
        assert diffs["budget"] == {"field": "budget", "recorded": 1400, "now": 20}
        assert "conditions_today" in diffs["selected"]["recorded"]
        assert "conditions_today" not in diffs["selected"]["now"]
        assert diffs["withheld"]["now"]["conditions_today"] == "over_budget"
        assert "tokens.prompt" in diffs
        assert doc["recorded_policy"]["digest"] != doc["decision"]["policy"]["digest"]

        code, text, _ = cli("replay", str(trace_path), "--policy", str(changed))
        assert code == 1
        assert f"result     {len(diffs)} difference(s):" in text
        assert "  budget: recorded 1400 -> now 20" in text

    def test_a_model_answer_in_the_trace_is_reused_not_asked_again(self, cli: Run, pain_trace: dict[str, Any],
                                                                   tmp_path: Path) -> None:
        trace = json.loads(json.dumps(pain_trace))
        trace["decision"]["intent"].update(source="model", name="injury", fallback_reason=None,
                                           model={"label": "injury", "raw": "injury", "latency_ms": 80.0})
        code, out, _ = cli("replay", str(_write(tmp_path, trace)), "--json")
        doc = json.loads(out)
        assert code == (0 if doc["same"] else 1)  # the hand-edited intent leaves other fields recorded otherwise
        assert (doc["decision"]["intent"]["name"], doc["decision"]["intent"]["source"]) == ("injury", "model")

    MALFORMED: list[tuple[str, Callable[[dict[str, Any]], Any], str]] = [
        ("not json", lambda t: "{nope", "not valid JSON"),
        ("a list", lambda t: [t], "expected a JSON object with inputs, decision and bundle"),
        ("wrong format", lambda t: {**t, "format": "other/9"}, "format is 'other/9', expected 'coachctx.trace/1'"),
        ("no bundle", lambda t: {k: v for k, v in t.items() if k != "bundle"}, "bundle: expected an object"),
        ("no question", lambda t: {**t, "inputs": {**t["inputs"], "question": "  "}},
         "inputs.question: expected the question text"),
        ("services not objects", lambda t: {**t, "bundle": {**t["bundle"], "services": dict.fromkeys(
            ("account", "baselines", "readiness", "conditions"), 5)}}, "bundle.services.account: expected an object"),
        ("a service missing", lambda t: {**t, "bundle": {**t["bundle"], "services": {}}},
         "bundle.services: missing account"),
        ("language not text", lambda t: {**t, "bundle": {**t["bundle"], "language": {"en": 1}}},
         "bundle.language: expected text or null, got dict"),
        ("bad scope", lambda t: {**t, "inputs": {**t["inputs"], "scope": "forever"}}, "unknown scope 'forever'"),
        ("bad cost mode", lambda t: {**t, "inputs": {**t["inputs"], "cost_mode": ["hand"]}},
         "inputs.cost_mode: expected text or null, got list"),
        ("bad budget", lambda t: {**t, "inputs": {**t["inputs"], "budget": -5}},
         "inputs.budget: expected a whole number from 0 to 1000000 or null, got -5"),
        ("model raw not text", lambda t: {**t, "decision": {**t["decision"], "intent": {
            **t["decision"]["intent"], "model": {"raw": 42}}}}, "decision.intent.model.raw: expected the model's"),
    ]

    @pytest.mark.parametrize(("change", "message"), [m[1:] for m in MALFORMED], ids=[m[0] for m in MALFORMED])
    def test_a_malformed_trace_exits_2_with_one_line(self, cli: Run, pain_trace: dict[str, Any], tmp_path: Path,
                                                     change: Callable[[dict[str, Any]], Any], message: str) -> None:
        path = _write(tmp_path, change(json.loads(json.dumps(pain_trace))))
        code, out, err = cli("replay", str(path))
        assert code == 2
        assert message in _one_clean_line(err)
        assert out == ""

    def test_a_missing_trace_file(self, cli: Run, tmp_path: Path) -> None:
        code, _, err = cli("replay", str(tmp_path / "nope.json"))
        assert code == 2
        assert _one_clean_line(err) == f"coachctx: {tmp_path / 'nope.json'}: no such file"

    def test_a_directory_is_not_a_trace(self, cli: Run, tmp_path: Path) -> None:
        code, _, err = cli("replay", str(tmp_path))
        assert code == 2
        assert _one_clean_line(err).endswith("is a directory, expected a trace JSON file")


class TestCheckPolicyAndAthletes:
    def test_check_policy_ok(self, cli: Run, policy: Policy, tmp_path: Path) -> None:
        path = tmp_path / "p.yaml"
        path.write_text(policy_to_yaml(policy), encoding="utf-8")
        code, out, err = cli("check-policy", str(path))
        assert (code, err) == (0, "")
        assert out.startswith(f"{path}: ok (digest {policy.digest}; 6 intents, ")

    def test_check_policy_error(self, cli: Run, policy: Policy, tmp_path: Path) -> None:
        path = tmp_path / "p.yaml"
        path.write_text(policy_to_yaml(policy).replace("readiness_injury", "readiness_injuri", 1), encoding="utf-8")
        code, out, err = cli("check-policy", str(path))
        assert (code, out) == (2, "")
        line = _one_clean_line(err)
        assert line.startswith(f"coachctx: invalid policy {path}: intents.")
        assert line.endswith("unknown fragment 'readiness_injuri' (did you mean 'readiness_injury'?)")

    def test_athletes_lists_the_seven(self, cli: Run) -> None:
        code, out, _ = cli("athletes")
        assert code == 0
        lines = out.strip().splitlines()
        assert [line.split()[0] for line in lines] == ATHLETES
        assert "Readiness service unreachable" in lines[ATHLETES.index("omar")]


class TestClosedPipe:
    def test_a_reader_that_stops_early_gets_no_traceback(self, tmp_path: Path) -> None:
        log = tmp_path / "log.jsonl"
        log.write_text("".join(json.dumps({"question": f"How hard should session {i} be today?"}) + "\n"
                               for i in range(400)), encoding="utf-8")
        policy = str(ROOT / "policy" / "default.yaml")
        proc = subprocess.Popen(
            [sys.executable, "-m", "coachctx.cli", "impact", str(log), "--base", policy, "--candidate", policy,
             "--json"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=ROOT)
        assert proc.stdout is not None and proc.stderr is not None
        assert proc.stdout.read(16)
        proc.stdout.close()  # like `| head -c 16`, long before the ~500 kB of JSON are written
        stderr = proc.stderr.read().decode()
        assert proc.wait(timeout=60) == 0
        assert "Traceback" not in stderr and "Broken pipe" not in stderr


def test_standard_output_closed_is_one_line_not_a_traceback() -> None:
    """`coachctx explain ... >&-`: Python starts with no sys.stdout; the answer has nowhere to go."""
    proc = subprocess.run([*_console_script(), "explain", PAIN, "--athlete", "maya"], stdout=None, stderr=subprocess.PIPE,
                          text=True, cwd=ROOT, timeout=120, preexec_fn=lambda: os.close(1))
    assert proc.returncode == 2
    assert proc.stderr == "coachctx: standard output is closed; nothing could be written\n"
