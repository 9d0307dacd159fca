"""Impact analysis on a Dask cluster: `coachctx impact LOG --engine dask [--scheduler ADDRESS]`.

The log is partitioned JSONL (one partition per file: a file, a directory of `*.jsonl` files or a
glob) or Parquet (a file or a directory, one partition per row group as Dask reads it). Every
partition is decided by `impact.decide_chunk`, the function the local run uses, on whichever
worker Dask picks; the client puts the partitions back in order, numbering rows across the whole
log as the local run numbers the lines of one file, so the report is the same.

With `changed_only`, a partition sends back only its changed rows and the totals of the rest
(`impact_report.Totals`), which is what lets a log of a hundred million questions fit on the client.
Needs the optional extra: `pip install 'coachctx[dask]'`.
"""

from __future__ import annotations

import dataclasses
import glob
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Final

from coachctx.engine.availability import CostMode
from coachctx.engine.policy import Policy
from coachctx.engine.services import Upstream
from coachctx.errors import InputError
from coachctx.reading import check_regular_file, printable, shown
from coachctx.tools.impact import DEFAULT_ATHLETE, ImpactJob, decide_chunk
from coachctx.tools.impact_report import ImpactReport, Totals
from coachctx.tools.questions import Question, _jsonl_records, _question

JSONL_SUFFIXES: Final = (".jsonl", ".ndjson")
PARQUET_SUFFIXES: Final = (".parquet", ".pq")


def _dask() -> Any:
    try:
        import dask
        import dask.bag  # noqa: F401
    except ImportError as e:
        raise InputError("the dask engine needs the optional extra: pip install 'coachctx[dask]'") from e
    return dask


def log_files(source: str) -> tuple[str, list[str]]:
    """(format, files in order) for a file, a directory or a glob of JSONL or Parquet files."""
    path = Path(source)
    if path.is_dir():
        files = sorted(str(p) for p in path.iterdir() if p.suffix.lower() in JSONL_SUFFIXES + PARQUET_SUFFIXES)
    elif any(c in source for c in "*?["):
        files = sorted(glob.glob(source))
    elif path.is_file():
        files = [str(path)]
    else:
        raise InputError(f"{source}: no such file, directory or glob")
    if not files:
        raise InputError(f"{source}: no .jsonl, .ndjson or .parquet files")
    for f in files:  # a FIFO named log.jsonl hung the whole run (an adversarial pass)
        check_regular_file(f, "a JSONL or Parquet log file")
    kinds = {"parquet" if Path(f).suffix.lower() in PARQUET_SUFFIXES else
             "jsonl" if Path(f).suffix.lower() in JSONL_SUFFIXES else Path(f).suffix for f in files}
    if len(kinds) != 1 or not kinds <= {"jsonl", "parquet"}:
        raise InputError(f"{source}: the dask engine reads JSONL (.jsonl, .ndjson) or Parquet files, "
                         f"one kind per log; found {', '.join(sorted(k or '(no suffix)' for k in kinds))}")
    return kinds.pop(), files


@dataclasses.dataclass(frozen=True)
class PartResult:
    """One partition's answer: how many rows it numbered, its rows (row numbers local to the
    partition), what it skipped and, when only changed rows travel, the totals of all."""

    numbered: int
    rows: tuple[Any, ...]
    skipped: tuple[tuple[int, str], ...]
    totals: Totals | None


def _records_to_questions(records: Sequence[tuple[int, Any]]) -> tuple[list[Question], list[tuple[int, str]]]:
    questions: list[Question] = []
    skipped: list[tuple[int, str]] = []
    for row, record in records:
        if isinstance(record, str):
            skipped.append((row, record))
            continue
        try:
            questions.append(_question(row, record, labels_scope=False))
        except ValueError as e:
            skipped.append((row, str(e)))
    return questions, skipped


def _decide(job: ImpactJob, records: Sequence[tuple[int, Any]], numbered: int, changed_only: bool) -> PartResult:
    questions, skipped = _records_to_questions(records)
    result = decide_chunk(job, questions)
    if not changed_only:
        return PartResult(numbered, result.rows, (*skipped, *result.skipped), None)
    return PartResult(numbered, tuple(r for r in result.rows if r.changed), (*skipped, *result.skipped),
                      Totals.of(result.rows))


def jsonl_partition(job: ImpactJob, lines: Sequence[str], changed_only: bool) -> PartResult:
    """A JSONL file's lines, read exactly as `questions.parse_questions` reads a log."""
    text = "".join(lines)
    # rows end at \n alone, as the local reader's: splitlines() also cut at a bare \r or U+2028
    rows = text.count("\n") + (1 if text and not text.endswith("\n") else 0)
    return _decide(job, list(_jsonl_records(text)), rows, changed_only)


def parquet_partition(job: ImpactJob, frame: Any, changed_only: bool) -> PartResult:
    """A Parquet partition (a pandas DataFrame): each row a record, numbered from 1."""
    records = []
    for i, record in enumerate(frame.to_dict(orient="records"), 1):
        clean = {str(k).strip().casefold(): _plain(v) for k, v in record.items()}
        records.append((i, clean))
    return _decide(job, records, len(frame), changed_only)


def _one_column_per_name(source: str, columns: Sequence[str]) -> None:
    """`athlete` and `Athlete` are one column to the reader: refused, as the CSV reader refuses
    them, rather than the last one silently winning (an adversarial pass)."""
    seen: dict[str, str] = {}
    for column in columns:
        first = seen.setdefault(column.strip().casefold(), column)
        if first != column:
            raise InputError(f"{printable(source)}: the columns {shown(first)} and {shown(column)} are one column "
                             "to the reader (case and spaces aside): which one is meant?")


def _plain(value: Any) -> Any:
    """A Parquet cell as the JSONL reader would see it: lists for arrays, None for nulls."""
    if hasattr(value, "tolist"):
        value = value.tolist()
    if isinstance(value, float) and value != value:
        return None
    return value


def _parquet_problem(e: BaseException) -> str:
    """pyarrow's own message, without the lines Dask wraps it in."""
    text = str(e)
    original = " ".join(text.split("Original Message:", 1)[-1].split())
    return printable(original[:300]) + ("…" if len(original) > 300 else "")


def run_impact_dask(source: str, base: Policy, candidate: Policy, *, scheduler: str | None = None,
                    base_name: str = "base", candidate_name: str = "candidate", upstream: Upstream | None = None,
                    default_athlete: str = DEFAULT_ATHLETE, cost_mode: CostMode = "hand",
                    changed_only: bool = False) -> ImpactReport:
    """`impact.run_impact` over a partitioned log on a Dask cluster (`scheduler` is its address,
    e.g. tcp://10.0.0.5:8786; None runs Dask's local process scheduler)."""
    dask = _dask()
    started = time.perf_counter()
    kind, files = log_files(source)
    job = ImpactJob(base, candidate, upstream=upstream, default_athlete=default_athlete, cost_mode=cost_mode)
    if kind == "jsonl":
        # bytes that are not UTF-8 kept as `questions.read_questions` keeps them: that row is skipped alone
        # lines end at \n alone (as `questions.read_questions` reads them), a \r kept as it was written
        parts = dask.bag.read_text(files, blocksize=None, encoding="utf-8-sig", errors="surrogateescape",
                                   linedelimiter="\n").to_delayed()
        decide = dask.delayed(jsonl_partition, pure=True)
    else:
        try:
            import dask.dataframe as dask_dataframe
        except ImportError as e:
            raise InputError("reading Parquet needs dask[dataframe] and pyarrow: pip install 'coachctx[dask]'") from e
        try:
            frame = dask_dataframe.read_parquet(files)
        except (ValueError, OSError) as e:  # pyarrow's ArrowInvalid is a ValueError
            raise InputError(f"{printable(source)}: not a Parquet log Dask can read: {_parquet_problem(e)}") from e
        _one_column_per_name(source, [str(c) for c in frame.columns])
        parts, decide = frame.to_delayed(), dask.delayed(parquet_partition, pure=True)
    client = None
    try:
        client = _connect(scheduler) if scheduler is not None else None
        try:
            if client is not None:
                shipped = client.scatter(job, broadcast=True)
                tasks = [decide(shipped, part, changed_only) for part in parts]
                results: Sequence[PartResult] = client.gather(client.compute(tasks))
            else:
                shipped = dask.delayed(job, pure=False)
                results = dask.compute(*[decide(shipped, part, changed_only) for part in parts],
                                       scheduler="processes")
        except (ValueError, OSError) as e:  # a data page pyarrow cannot read shows only when computed
            if kind != "parquet":
                raise
            raise InputError(f"{printable(source)}: not a Parquet log Dask can read: {_parquet_problem(e)}") from e
    finally:
        if client is not None:
            client.close()
    return _assemble(results, source, job, base_name, candidate_name, changed_only, time.perf_counter() - started)


def _connect(scheduler: str) -> Any:
    """A `distributed.Client` of the scheduler at this tcp:// address, or one line saying why not."""
    try:
        from distributed import Client
    except ImportError as e:
        raise InputError("--scheduler needs dask.distributed: pip install 'coachctx[dask]'") from e
    scheme = scheduler.partition("://")[0] if "://" in scheduler else "tcp"
    if scheme != "tcp":  # tls, ucx, ws need a security or transport configuration: a traceback
        raise InputError(f"--scheduler {shown(scheduler)}: coachctx connects to a Dask scheduler over "
                         f"tcp:// only (host:port or tcp://host:port), not {printable(scheme)[:20]}:// (TLS, "
                         "UCX and websockets need a security or transport configuration it does not take)")
    try:
        return Client(scheduler, timeout="10s")
    except ValueError as e:  # "bogus", "tcp://", "tcp://host:notaport": no address at all
        raise InputError(f"--scheduler {shown(scheduler)} is not a Dask scheduler address such as "
                         f"tcp://10.0.0.5:8786 ({e})") from e
    except (OSError, TimeoutError) as e:
        raise InputError(f"cannot reach the Dask scheduler at {printable(scheduler)[:100]}: {e}") from e


def _assemble(results: Sequence[PartResult], source: str, job: ImpactJob, base_name: str, candidate_name: str,
              changed_only: bool, seconds: float) -> ImpactReport:
    rows: list[Any] = []
    skipped: list[tuple[int, str]] = []
    totals: Totals | None = None
    offset = 0
    for part in results:
        for r in part.rows:
            rows.append(dataclasses.replace(r, question=dataclasses.replace(r.question, row=r.question.row + offset)))
        skipped += [(row + offset, why) for row, why in part.skipped]
        if part.totals is not None:
            totals = part.totals if totals is None else totals + part.totals
        offset += part.numbered
    if not rows and not changed_only:
        why = f" (row {min(skipped)[0]}: {min(skipped)[1]})" if skipped else ""
        raise InputError(f"{source}: no questions found{why}")
    if changed_only and totals is None:
        raise InputError(f"{source}: no questions found")
    return ImpactReport(source=source, base_name=base_name, candidate_name=candidate_name,
                        base_digest=job.base.digest, candidate_digest=job.candidate.digest, rows=tuple(rows),
                        skipped=tuple(sorted(skipped)), seconds=seconds, totals=totals)
