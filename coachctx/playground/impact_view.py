"""Impact reports and traces as tables, and uploaded question sets."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Final

import pandas as pd

from coachctx.engine.decision import Decision
from coachctx.engine.policy import INTENTS
from coachctx.engine.services import Bundle
from coachctx.errors import InputError
from coachctx.playground.policy_text import _show, check_upload_size
from coachctx.playground.recorded import RecordedFragment
from coachctx.playground.words import STATUS_LABELS
from coachctx.tools.impact import ImpactReport, QuestionSet
from coachctx.tools.impact_report import Metrics
from coachctx.tools.questions import FORMATS, parse_questions
from coachctx.tools.trace import make_trace

MAX_QUESTIONS_UPLOAD_BYTES: Final = 5 * 1024 * 1024
"""An uploaded question set larger than this is refused before it is decoded (~50,000 rows)."""


def parse_question_upload(data: bytes, name: str) -> QuestionSet:
    """An uploaded question set (YAML like dev.yaml, JSONL or CSV, by its suffix). Raises
    InputError, with a message for the page, for anything it cannot use."""
    suffix = Path(name).suffix.lower()
    fmt = FORMATS.get(suffix)
    if fmt is None:
        raise InputError(f"{name}: unknown question set format {suffix or '(no suffix)'!r}; upload a .yaml "
                         "(like dev.yaml), .jsonl or .csv file")
    check_upload_size(name, len(data), MAX_QUESTIONS_UPLOAD_BYTES, "a question set")
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        raise InputError(f"{name}: not UTF-8 text (byte {e.start})") from e
    try:
        return parse_questions(text, fmt, name)
    except RecursionError as e:  # deeply nested YAML or JSON
        raise InputError(f"{name}: nested too deeply to be a question set") from e


def _rate(n: int, d: int) -> str:
    return f"{100 * n / d:.1f}% ({n}/{d})" if d else "— (no labels)"


def _delta(a: float | None, b: float | None, *, points: bool = False) -> str:
    if a is None or b is None:
        return ""
    d = (b - a) * (100 if points else 1)
    if abs(d) < 1e-9:
        return "same"
    return f"{d:+.1f} pts" if points else f"{d:+g}"


def impact_metrics_frame(report: ImpactReport) -> pd.DataFrame:
    """Route accuracy, needs recall and tokens for base and candidate, with the change."""
    b, c = report.base_metrics, report.candidate_metrics
    rows = [
        ("questions decided", str(b.questions), str(c.questions), ""),
        ("route accuracy", _rate(b.route_correct, b.route_labelled), _rate(c.route_correct, c.route_labelled),
         _delta(b.route_accuracy, c.route_accuracy, points=True)),
        ("needs recall", _rate(b.needs_met, b.needs_total), _rate(c.needs_met, c.needs_total),
         _delta(b.needs_recall, c.needs_recall, points=True)),
        ("every need met", _rate(b.needs_rows_met, b.needs_rows), _rate(c.needs_rows_met, c.needs_rows),
         _delta(b.needs_rows_met / b.needs_rows if b.needs_rows else None,
                c.needs_rows_met / c.needs_rows if c.needs_rows else None, points=True)),
        ("unsure (would ask the model)", str(b.unsure), str(c.unsure), _delta(b.unsure, c.unsure)),
        ("prompt tokens, total", str(b.tokens_total), str(c.tokens_total), _delta(b.tokens_total, c.tokens_total)),
        ("prompt tokens, mean", f"{b.tokens_mean:.1f}", f"{c.tokens_mean:.1f}",
         _delta(round(b.tokens_mean, 1), round(c.tokens_mean, 1))),
    ]
    return pd.DataFrame(rows, columns=["measure", "base", "candidate", "change"])


def confusion_frame(m: Metrics) -> pd.DataFrame:
    """Rows: the labelled intent; columns: where the policy routed it."""
    frame = pd.DataFrame([[m.confusion[e][r] for r in INTENTS] for e in INTENTS], columns=list(INTENTS))
    frame.insert(0, "labelled", list(INTENTS))
    return frame


IMPACT_PAIRS: Final = (("base_intent", "candidate_intent"), ("base_selected", "candidate_selected"),
                       ("base_tokens", "candidate_tokens"))


def impact_frame(report: ImpactReport, *, changed_only: bool) -> pd.DataFrame:
    """One row per question: each policy's intent, selection and tokens, and what changed."""
    columns = ["row", "question", "athlete", *[c for pair in IMPACT_PAIRS for c in pair], "changes"]
    return pd.DataFrame(report.table(changed_only), columns=columns)


def impact_row(row: Mapping[str, Any]) -> tuple[str, str]:
    """One question of an impact report as an expandable row: the question and its intents as a
    title; inside, the question and what changed in full, and what each policy sends."""
    question = str(row["question"])
    short = question if len(question) <= 70 else question[:69] + "…"
    intents = row["base_intent"] if row["base_intent"] == row["candidate_intent"] else \
        f"{row['base_intent']} → {row['candidate_intent']}"
    title = f"row {row['row']} · {short} — {intents}"
    body = (f"**Question:** {question}  \n**Athlete:** {row['athlete']}  \n"
            f"**What changed:** {row['changes'] or 'nothing'}  \n"
            f"**Base sends** ({row['base_tokens']} tokens): {row['base_selected'] or 'nothing'}  \n"
            f"**Candidate sends** ({row['candidate_tokens']} tokens): {row['candidate_selected'] or 'nothing'}")
    return title, body


def changed_cells(row: Mapping[str, Any]) -> set[str]:
    """The columns of an impact row whose base and candidate values differ."""
    out: set[str] = set()
    for a, b in IMPACT_PAIRS:
        if row.get(a) != row.get(b):
            out |= {a, b}
    if row.get("changes"):
        out.add("changes")
    return out


def decision_trace_json(d: Decision, bundle: Bundle, *, cost_mode: str, budget: int | None) -> str:
    """The decision as a trace file (`coachctx replay` and the trace tab read it); its
    `decision.policy` names the policy source and stored version the page used."""
    return json.dumps(make_trace(d, bundle, cost_mode=cost_mode, budget=budget), ensure_ascii=False, indent=2) + "\n"


def trace_fragments_frame(recorded: Mapping[str, RecordedFragment], now: Decision) -> pd.DataFrame:
    """Fragment by fragment: what the trace recorded (`recorded_fragments`) next to what the
    current policy decides; "—" where the trace has no such fragment or no reason."""
    rows = []
    for f in now.fragments:
        old = recorded.get(f.name)
        old_status, new_status = (old.status if old is not None else "—"), f.status
        old_why = ", ".join(old.reasons) if old is not None and old.reasons else "—"
        new_why = ", ".join(r.code for r in f.reasons) or "—"
        rows.append({"fragment": f.name,
                     "recorded": STATUS_LABELS.get(old_status, old_status), "recorded reasons": old_why,
                     "now": STATUS_LABELS.get(new_status, new_status), "now reasons": new_why,
                     "changed": old_status != new_status or old_why != new_why})
    return pd.DataFrame(rows)


def differences_frame(differences: Sequence[Mapping[str, Any]]) -> pd.DataFrame:
    rows = [{"field": d["field"], "recorded": _show(d["recorded"]), "now": _show(d["now"])} for d in differences]
    return pd.DataFrame(rows, columns=["field", "recorded", "now"])
