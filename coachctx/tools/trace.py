"""Decision traces: the Decision's JSON plus the fetched bundle snapshot and the inputs, so an
engineer can reproduce a reported answer and see whether today's policy decides differently."""

from __future__ import annotations

import errno
import json
import math
import os
import re
import stat
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from coachctx.engine.availability import CostMode
from coachctx.engine.decision import Decision
from coachctx.engine.pipeline import select
from coachctx.engine.policy import CUSTOM_TIER, MAX_BUDGET, Policy
from coachctx.engine.routing import ModelAnswer
from coachctx.engine.services import ATHLETE_ID, Bundle, refuse_unknown_keys
from coachctx.errors import InputError, TraceError
from coachctx.reading import (
    ReadError,
    control_character,
    decode_utf8,
    parse_json,
    read_bytes,
    shown,
)
from coachctx.tools.trace_compare import compare

TRACE_FORMAT: Final = "coachctx.trace/1"
MAX_TRACE_BYTES: Final = 5 * 1024 * 1024


NONFINITE_KEY: Final = "$nonfinite"
"""A bundle number JSON cannot hold (NaN, Infinity) is written as {"$nonfinite": "Infinity"} and
read back as the number, so a replay sees the payload the decision saw."""


def make_trace(decision: Decision, bundle: Bundle, *, cost_mode: str, budget: int | None) -> dict[str, Any]:
    """The trace document. A lone surrogate anywhere (a question typed as bytes that were not
    UTF-8, a model's broken answer) is written as U+FFFD: a trace is a file read back strictly,
    like every file coachctx reads, so it holds only valid Unicode."""
    return _valid_text({
        "format": TRACE_FORMAT,
        "inputs": {"question": decision.question, "athlete": decision.athlete,
                   "scope": decision.scope.requested, "tier": decision.tier, "budget": budget,
                   "cost_mode": cost_mode},
        "decision": decision.to_json(),
        "bundle": _tag_nonfinite(bundle.to_snapshot()),
    })


def _valid_text(obj: Any) -> Any:
    if isinstance(obj, str):
        return "".join("\ufffd" if "\ud800" <= ch <= "\udfff" else ch for ch in obj) if _has_surrogate(obj) else obj
    if isinstance(obj, Mapping):
        return {_valid_text(k): _valid_text(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [_valid_text(v) for v in obj]
    return obj


def _has_surrogate(text: str) -> bool:
    return any("\ud800" <= ch <= "\udfff" for ch in text)


def _tag_nonfinite(obj: Any) -> Any:
    if isinstance(obj, float) and not math.isfinite(obj):
        return {NONFINITE_KEY: repr(obj).replace("inf", "Infinity").replace("nan", "NaN")}
    if isinstance(obj, Mapping):
        return {k: _tag_nonfinite(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [_tag_nonfinite(v) for v in obj]
    return obj


def _untag_nonfinite(obj: Any) -> Any:
    if isinstance(obj, Mapping):
        if set(obj) == {NONFINITE_KEY} and obj[NONFINITE_KEY] in ("NaN", "Infinity", "-Infinity"):
            return float(obj[NONFINITE_KEY].replace("Infinity", "inf"))
        return {k: _untag_nonfinite(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_untag_nonfinite(v) for v in obj]
    return obj


_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def _finite(obj: Any) -> Any:
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    if isinstance(obj, Mapping):
        return {k if isinstance(k, str) else str(k): _finite(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [_finite(v) for v in obj]
    return obj


def json_text(obj: Any, *, indent: int | None = 2, ascii_only: bool = False) -> str:
    """Strict JSON any UTF-8 stream can carry: no NaN or Infinity (a non-finite number is null),
    and a lone surrogate in any string (a question pasted from a broken source) written as its
    `\\udXXX` escape, which reads back as the same string."""
    text = json.dumps(_finite(obj), ensure_ascii=ascii_only, allow_nan=False, indent=indent, default=str)
    return _LONE_SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


def _refuse_special(p: Path) -> None:
    """Only a new file or a regular one is (re)written: never through a symlink, and never
    over a directory, a FIFO, a socket or a device node."""
    parent = p.parent if str(p.parent) else Path(".")
    try:
        if not parent.is_dir():
            why = ("No such file or directory (the directory {} does not exist)" if not parent.exists() else
                   "Not a directory ({} is not a directory)")
            raise InputError(f"cannot write {p}: {why.format(parent)}")
    except OSError as e:
        raise InputError(f"cannot write {p}: {e.strerror or e}") from e
    try:
        mode = os.lstat(p).st_mode
    except FileNotFoundError:
        return
    except OSError as e:
        raise InputError(f"cannot write {p}: {e.strerror or e}") from e
    if stat.S_ISREG(mode):
        if _is_sqlite(p):
            raise InputError(f"cannot write {p}: it is an SQLite database (a policy store?); give a new file or a "
                             "regular file to replace")
        return
    kind = ("a symbolic link" if stat.S_ISLNK(mode) else "a directory" if stat.S_ISDIR(mode) else
            "a FIFO (named pipe)" if stat.S_ISFIFO(mode) else "a socket" if stat.S_ISSOCK(mode) else
            "a device" if stat.S_ISCHR(mode) or stat.S_ISBLK(mode) else "not a regular file")
    raise InputError(f"cannot write {p}: it is {kind}; give a new file or a regular file to replace")


def _is_sqlite(p: Path) -> bool:
    try:
        with p.open("rb") as f:
            return f.read(16) == b"SQLite format 3\x00"
    except OSError:
        return False


def _refuse_inputs(p: Path, inputs: Sequence[str | Path]) -> None:
    """The file a command reads is never the file it writes (`--trace-out` naming the `--policy`),
    nor a file in a folder it reads whole (`--trace-out sample_athletes/maya.json` replaced maya with
    a trace, and every later decision said her services computed nothing; a new name there would be
    a new athlete)."""
    for given in inputs:
        if os.path.isdir(given):
            try:
                inside = os.path.samefile(p.parent if str(p.parent) else ".", given)
            except OSError:  # the folder written to is missing: writing will say so
                continue
            if inside:
                raise InputError(f"cannot write {p}: it is in {given}, a folder this command reads "
                                 "whole (every JSON file there is read as input); give a file elsewhere")
            continue
        try:
            same = os.path.samefile(p, given)
        except OSError:  # either is missing: not the same file
            continue
        if same:
            raise InputError(f"cannot write {p}: it is {given}, which this command reads; give another file")


def write_json_atomic(path: str | Path, obj: Any, *, inputs: Sequence[str | Path] = (), replace: bool = True) -> None:
    """Write JSON so the file is either the old one or the whole new one, never half: a
    temporary file in the same directory, renamed over the path. Anything but a new or regular
    file is refused, as are a policy store and the files in `inputs` (what the command reads),
    naming the path asked for, and nothing is left behind on failure. `replace=False` refuses a
    file that is there, however it got there (linked into place, never renamed over)."""
    write_text_atomic(path, json_text(obj) + "\n", inputs=inputs, replace=replace)


def write_text_atomic(path: str | Path, text: str, *, inputs: Sequence[str | Path] = (), replace: bool = True) -> None:
    """`text` written as `write_json_atomic` writes JSON: whole or not at all."""
    p = Path(path)
    _refuse_special(p)
    _refuse_inputs(p, inputs)
    if not replace and os.path.lexists(p):
        raise InputError(f"{p} exists; pass --force to replace it")
    parent = p.parent if str(p.parent) else Path(".")
    try:
        # the name cut short: a target name near the file system's limit still leaves room for the temp's
        fd, tmp = tempfile.mkstemp(prefix=f".{p.name[:64]}.", suffix=".tmp", dir=parent)
    except OSError as e:  # name the file the user asked for, not the temporary one
        if e.errno == errno.ENOENT and parent.is_dir():  # /proc, /sys: the folder is there but takes no new file
            raise InputError(f"cannot write {p}: {parent} takes no new files ({e.strerror})") from e
        raise InputError(f"cannot write {p}: {e.strerror or e}") from e
    try:
        os.fchmod(fd, _mode_for(p))
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        _refuse_special(p)  # narrows the window in which something else appeared at the path
        if replace:
            os.replace(tmp, p)
        else:
            os.link(tmp, p)  # fails if the file is there, even one made a moment ago
            Path(tmp).unlink()
    except FileExistsError as e:
        Path(tmp).unlink(missing_ok=True)
        raise InputError(f"{p} exists; pass --force to replace it") from e
    except OSError as e:
        Path(tmp).unlink(missing_ok=True)
        raise InputError(f"cannot write {p}: {e.strerror or e}") from e
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _mode_for(p: Path) -> int:
    """The permissions the written file gets: those of the file it replaces, else what a new file
    gets under the process's umask (a temporary file is created private, 0600, and would pass
    that on to a trace a colleague is meant to read)."""
    try:
        return stat.S_IMODE(p.stat().st_mode)
    except OSError:
        return 0o666 & ~_umask()


def _umask() -> int:
    """The process's umask, read without setting it (os.umask would change it for every thread
    for a moment): Linux reports it in /proc/self/status; elsewhere the usual 022."""
    try:
        for line in Path("/proc/self/status").read_text(encoding="ascii").splitlines():
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    return 0o022


@dataclass(frozen=True)
class TraceInputs:
    """The inputs a trace recorded, as `parse_trace` checked them; None where the trace does not say."""

    question: str
    athlete: str | None
    scope: str | None
    tier: str | None
    budget: int | None
    cost_mode: CostMode | None


@dataclass(frozen=True)
class Trace:
    inputs: Mapping[str, Any]
    decision: Mapping[str, Any]
    bundle: Bundle
    source: str
    asked: TraceInputs
    """`inputs` as a record."""


def parse_trace(text: str | bytes, source: str = "<trace>") -> Trace:
    """A trace from its JSON (text, or bytes as uploaded): strict JSON (`reading.parse_json`),
    then the shape replay needs, every input checked as `select()` would take it. A UTF-8 byte
    order mark (a trace saved by a Windows editor) is skipped."""
    if isinstance(text, bytearray):
        text = bytes(text)
    if not isinstance(text, str | bytes):
        raise TraceError(f"{source}: expected the trace's JSON text, got {type(text).__name__}")
    if len(text) > MAX_TRACE_BYTES:
        raise TraceError(f"{source}: trace is larger than {MAX_TRACE_BYTES} bytes")
    try:
        obj = parse_json(decode_utf8(text, source, strip_bom=True) if isinstance(text, bytes)
                         else text.removeprefix("\ufeff"), source)
    except ReadError as e:
        raise TraceError(str(e)) from e
    if not isinstance(obj, Mapping):
        raise TraceError(f"{source}: expected a JSON object with inputs, decision and bundle")
    if obj.get("format") != TRACE_FORMAT:
        raise TraceError(f"{source}: format is {obj.get('format')!r}, expected {TRACE_FORMAT!r} "
                         "(write one with `coachctx explain ... --trace-out FILE`)")
    for key in ("inputs", "decision", "bundle"):
        if not isinstance(obj.get(key), Mapping):
            raise TraceError(f"{source}: {key}: expected an object")
    inputs = obj["inputs"]
    try:
        refuse_unknown_keys(obj, ("format", "inputs", "decision", "bundle"), "the trace")
        refuse_unknown_keys(inputs, _INPUT_KEYS, "inputs")
    except ValueError as e:
        raise TraceError(f"{source}: {e}") from e
    asked = _inputs(inputs, source)
    try:
        bundle = Bundle.from_snapshot(_untag_nonfinite(obj["bundle"]))
    except ValueError as e:
        raise TraceError(f"{source}: {e}") from e
    if asked.athlete is not None and bundle.athlete and bundle.athlete != asked.athlete:
        raise TraceError(f"{source}: inputs.athlete is {shown(asked.athlete)} but the bundle was fetched for "
                         f"{shown(bundle.athlete)}: the trace was edited")
    return Trace(inputs=inputs, decision=obj["decision"], bundle=bundle, source=source, asked=asked)


_INPUT_KEYS: Final = ("question", "athlete", "scope", "tier", "budget", "cost_mode")
"""What `make_trace` records of the call; the policy is replay's own argument, never the trace's."""


def _inputs(inputs: Mapping[str, Any], source: str) -> TraceInputs:
    """The recorded inputs replay hands to `select()`: the question, text where text is expected,
    and a budget that is a whole number in range (JSON `true` is not the budget 1)."""
    if not isinstance(inputs.get("question"), str) or not inputs["question"].strip():
        raise TraceError(f"{source}: inputs.question: expected the question text")
    for key in ("athlete", "scope", "tier", "cost_mode"):
        value = inputs.get(key)
        if value is not None and not isinstance(value, str):
            raise TraceError(f"{source}: inputs.{key}: expected text or null, got {type(value).__name__}")
        if value is not None and control_character(value) is not None:
            raise TraceError(f"{source}: inputs.{key}: holds the control character {control_character(value)}")
        if key == "athlete" and value is not None and not ATHLETE_ID.match(value):
            raise TraceError(f"{source}: inputs.athlete: {shown(value)} is not an athlete id "
                             "(lower-case letters, digits, '-' and '_'; never a path)")
    budget = inputs.get("budget")
    if budget is not None and (isinstance(budget, bool) or not isinstance(budget, int)
                               or not 0 <= budget <= MAX_BUDGET):
        raise TraceError(f"{source}: inputs.budget: expected a whole number from 0 to {MAX_BUDGET} or null, "
                         f"got {budget!r}")
    cost_mode = inputs.get("cost_mode")
    if cost_mode is not None and cost_mode not in ("hand", "measured"):
        raise TraceError(f"{source}: inputs.cost_mode: expected hand or measured, got {cost_mode!r}")
    return TraceInputs(question=inputs["question"], athlete=inputs.get("athlete"), scope=inputs.get("scope"),
                       tier=inputs.get("tier"), budget=budget, cost_mode=cost_mode)


def read_trace(path: str | Path) -> Trace:
    """Read a trace file: a regular file of at most `MAX_TRACE_BYTES`, then `parse_trace`."""
    try:
        data = read_bytes(path, MAX_TRACE_BYTES, expected="a trace JSON file")
    except ReadError as e:
        raise TraceError(str(e)) from e
    return parse_trace(data, str(path))


class RecordedClassifier:
    """Answers with the model label recorded in a trace, so a replay does not call a model."""

    def __init__(self, raw: str | None) -> None:
        self.raw = raw

    def __call__(self, question: str, intents: Sequence[str]) -> ModelAnswer:
        if self.raw is None:
            return ModelAnswer(raw=None, latency_ms=0.0, error="no model answer recorded in the trace")
        return ModelAnswer(raw=self.raw, latency_ms=0.0)


@dataclass(frozen=True)
class Replay:
    trace: Trace
    decision: Decision
    differences: list[dict[str, Any]]

    @property
    def same(self) -> bool:
        return not self.differences


def replay(trace: Trace, policy: Policy, *, policy_source: str, policy_version: str | None = None) -> Replay:
    """Decide again from the trace's bundle snapshot under `policy`. A model answer recorded in
    the trace is reused, so replay never calls a model."""
    asked = trace.asked
    model = trace.decision.get("intent", {}).get("model") if isinstance(trace.decision.get("intent"), Mapping) \
        else None
    raw = model.get("raw") if isinstance(model, Mapping) else None
    if raw is not None and not isinstance(raw, str):
        raise TraceError(f"{trace.source}: decision.intent.model.raw: expected the model's text answer, "
                         f"got {type(raw).__name__}")
    classifier = RecordedClassifier(raw) if raw is not None else None
    tier = asked.tier or "paid"
    if tier != CUSTOM_TIER and tier not in policy.tiers:  # an error naming no file read as the user's --tier
        raise TraceError(f"{trace.source}: inputs.tier: unknown tier {shown(tier)}; the policy replayed under "
                         f"defines {', '.join(policy.tiers)}")
    where = "inputs" if asked.budget is not None or tier != CUSTOM_TIER else "inputs or decision.budget"
    try:
        decision = select(
            asked.question, trace.bundle, policy, scope=asked.scope or "auto",
            tier=tier if tier != CUSTOM_TIER else "paid",
            budget=asked.budget if asked.budget is not None else (
                trace.decision.get("budget") if tier == CUSTOM_TIER else None),
            cost_mode=asked.cost_mode or "hand",
            classifier=classifier, policy_source=policy_source, policy_version=policy_version)
    except InputError as e:  # a scope, a question or a recorded budget select() refuses
        raise TraceError(f"{trace.source}: {where}: {e}") from e
    return Replay(trace=trace, decision=decision, differences=compare(trace.decision, decision.to_json()))
