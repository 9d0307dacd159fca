"""Decision traces: the Decision's JSON plus the fetched bundle snapshot and the inputs, so an
engineer can reproduce a reported answer and see whether today's policy decides differently."""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from coachctx.decision import Decision
from coachctx.errors import InputError, TraceError
from coachctx.pipeline import select
from coachctx.policy import MAX_BUDGET, Policy
from coachctx.reading import ReadError, control_character, parse_json, read_bytes
from coachctx.routing import ModelAnswer
from coachctx.services import Bundle

TRACE_FORMAT: Final = "coachctx.trace/1"
MAX_TRACE_BYTES: Final = 5 * 1024 * 1024


def make_trace(decision: Decision, bundle: Bundle, *, cost_mode: str, budget: int | None) -> dict[str, Any]:
    return {
        "format": TRACE_FORMAT,
        "inputs": {"question": decision.question, "athlete": decision.athlete,
                   "scope": decision.scope["requested"], "tier": decision.tier, "budget": budget,
                   "cost_mode": cost_mode},
        "decision": decision.to_json(),
        "bundle": bundle.to_snapshot(),
    }


def write_json_atomic(path: str | Path, obj: Any) -> None:
    """Write JSON so the file is either the old one or the whole new one, never half."""
    p = Path(path)
    text = json.dumps(obj, ensure_ascii=False, indent=2) + "\n"
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{p.name}.", dir=p.parent if str(p.parent) else ".")
    except OSError as e:  # name the file the user asked for, not the temporary one
        raise InputError(f"cannot write {p}: {e.strerror or e}") from e
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, p)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


@dataclass(frozen=True)
class Trace:
    inputs: Mapping[str, Any]
    decision: Mapping[str, Any]
    bundle: Bundle
    source: str


def parse_trace(text: str | bytes, source: str = "<trace>") -> Trace:
    """A trace from its JSON (text, or bytes as uploaded): strict JSON (`reading.parse_json`),
    then the shape replay needs, every input checked as `select()` would take it."""
    if len(text) > MAX_TRACE_BYTES:
        raise TraceError(f"{source}: trace is larger than {MAX_TRACE_BYTES} bytes")
    try:
        obj = parse_json(text, source)
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
    if not isinstance(inputs.get("question"), str) or not inputs["question"].strip():
        raise TraceError(f"{source}: inputs.question: expected the question text")
    _check_inputs(inputs, source)
    try:
        bundle = Bundle.from_snapshot(obj["bundle"])
    except ValueError as e:
        raise TraceError(f"{source}: {e}") from e
    return Trace(inputs=inputs, decision=obj["decision"], bundle=bundle, source=source)


def _check_inputs(inputs: Mapping[str, Any], source: str) -> None:
    """The recorded inputs replay hands to `select()`: text where text is expected, and a budget
    that is a whole number in range (JSON `true` is not the budget 1)."""
    for key in ("athlete", "scope", "tier", "cost_mode"):
        value = inputs.get(key)
        if value is not None and not isinstance(value, str):
            raise TraceError(f"{source}: inputs.{key}: expected text or null, got {type(value).__name__}")
        if value is not None and control_character(value) is not None:
            raise TraceError(f"{source}: inputs.{key}: holds the control character {control_character(value)}")
    budget = inputs.get("budget")
    if budget is not None and (isinstance(budget, bool) or not isinstance(budget, int)
                               or not 0 <= budget <= MAX_BUDGET):
        raise TraceError(f"{source}: inputs.budget: expected a whole number from 0 to {MAX_BUDGET} or null, "
                         f"got {budget!r}")
    cost_mode = inputs.get("cost_mode")
    if cost_mode is not None and cost_mode not in ("hand", "measured"):
        raise TraceError(f"{source}: inputs.cost_mode: expected hand or measured, got {cost_mode!r}")


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


COMPARED: Final = (
    ("intent.name", lambda d: d["intent"]["name"]),
    ("intent.source", lambda d: d["intent"]["source"]),
    ("intent.contenders", lambda d: d["intent"]["contenders"]),
    ("intent.scores", lambda d: {k: v for k, v in d["intent"]["scores"].items() if v}),
    ("scope.effective", lambda d: d["scope"]["effective"]),
    ("budget", lambda d: d["budget"]),
    ("selected", lambda d: d["selected"]),
    ("withheld", lambda d: {w["fragment"]: w["reason"] for w in d["withheld"]}),
    ("tokens.prompt", lambda d: d["tokens"]["prompt"]),
    ("warnings", lambda d: d["warnings"]),
)


def compare(recorded: Mapping[str, Any], now: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Field-by-field differences between two Decision JSONs: [{field, recorded, now}]."""
    out = []
    for name, get in COMPARED:
        try:
            before = get(recorded)
        except (KeyError, TypeError, AttributeError):
            before = None
        after = get(now)
        if before != after:
            out.append({"field": name, "recorded": before, "now": after})
    return out


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
    inputs = trace.inputs
    model = trace.decision.get("intent", {}).get("model") if isinstance(trace.decision.get("intent"), Mapping) \
        else None
    raw = model.get("raw") if isinstance(model, Mapping) else None
    if raw is not None and not isinstance(raw, str):
        raise TraceError(f"{trace.source}: decision.intent.model.raw: expected the model's text answer, "
                         f"got {type(raw).__name__}")
    classifier = RecordedClassifier(raw) if raw is not None else None
    tier = str(inputs.get("tier") or "paid")
    budget = inputs.get("budget")
    decision = select(
        str(inputs["question"]), trace.bundle, policy,
        scope=str(inputs.get("scope") or "auto"),
        tier=tier if tier != "custom" else "paid",
        budget=budget if isinstance(budget, int) else (trace.decision.get("budget") if tier == "custom" else None),
        cost_mode=inputs.get("cost_mode") or "hand",
        classifier=classifier, policy_source=policy_source, policy_version=policy_version,
    )
    return Replay(trace=trace, decision=decision, differences=compare(trace.decision, decision.to_json()))
