"""The labelled rows suggestions are learned from: a coach's labels, or a model's (weaker evidence),
read from a question set (YAML, JSONL, CSV), `explain --json` lines or `--trace-out` traces."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, Literal

from coachctx.engine.fragments import FRAGMENT_NAMES
from coachctx.engine.pipeline import MAX_QUESTION_CHARS
from coachctx.engine.policy import INTENTS, LANGUAGES
from coachctx.engine.text import tokenise
from coachctx.errors import InputError
from coachctx.reading import file_path, parse_json, parse_json_line, read_text, shown
from coachctx.tools.questions import MAX_FILE_BYTES, MAX_QUESTIONS, both_spellings, names_in, read_questions

COACH_WEIGHT: Final = 1.0
MODEL_WEIGHT: Final = 0.5
"""A model's label is evidence too, but weaker than a coach's."""
Origin = Literal["coach", "model"]


@dataclass(frozen=True)
class LabelledRow:
    row: int
    """1-based: the line (JSONL), data row (CSV) or list index (YAML) it came from."""
    question: str
    intents: tuple[str, ...]
    lang: str | None = None
    origin: Origin = "coach"

    @property
    def weight(self) -> float:
        return COACH_WEIGHT if self.origin == "coach" else MODEL_WEIGHT


def conflicting_labels(rows: Sequence[LabelledRow]) -> list[tuple[LabelledRow, ...]]:
    """Rows that ask the same question (the same words; case, accents-as-typed and punctuation as the
    matcher reads them) with different labels, a group per question, in row order. Their evidence
    cancels out: no edit can route the question both ways, so a suggestion fixing some of them is
    silent about the others unless the coach sees the disagreement."""
    groups: dict[tuple[tuple[str, ...], str], list[LabelledRow]] = {}
    for r in rows:
        tokens = tokenise(r.question)
        # a question with no words ("🏃", "😴") is the same question only as the same text
        key = (tokens.words, tokens.unspaced) if tokens.words or tokens.unspaced else ((), " ".join(tokens.text.split()))
        groups.setdefault(key, []).append(r)
    return [tuple(group) for group in groups.values() if len({frozenset(r.intents) for r in group}) > 1]


def describe_conflict(group: Sequence[LabelledRow], most: int) -> str:
    """A group of `conflicting_labels` as its rows per label, at most `most` row numbers named per
    label: "injury: 3 rows (1, 2, 3); training: 1 row (4); training by a model: 1 row (5)"."""
    by_label: dict[str, list[int]] = {}
    for r in group:
        by_label.setdefault("/".join(r.intents) + (" by a model" if r.origin == "model" else ""), []).append(r.row)
    return "; ".join(f"{label}: {len(rows)} row{'s' if len(rows) > 1 else ''} ({', '.join(map(str, rows[:most]))}"
                     + (", …)" if len(rows) > most else ")") for label, rows in by_label.items())


def read_labelled(path: str | Path) -> list[LabelledRow]:
    """Labelled rows from a question set (YAML like the corpus, JSONL or CSV with `question` and
    `intents`, optional `lang` and `origin`, or a `model_label` column), or from `explain --json`
    documents and `--trace-out` traces (JSONL, one a line, or one `.json` file), whose model routes
    count as model labels: weaker evidence than a coach's. A row that cannot be read is an error
    naming its line."""
    p = file_path(path, "a labelled log")
    if p.suffix.lower() in (".jsonl", ".ndjson"):
        return _jsonl_labelled(p)
    if p.suffix.lower() == ".json":
        return _json_labelled(p)
    questions = read_questions(p)
    if questions.skipped:
        row, why = questions.skipped[0]
        raise InputError(f"{p}: row {row}: {why}")
    out = []
    for q in questions.questions:
        if q.intents is not None:
            out.append(LabelledRow(q.row, q.question, q.intents, _language(q.lang, p, q.row),
                                   _origin(q.origin, p, q.row)))
        elif q.model_label is not None:  # a model's route and no coach's label: weaker evidence
            out.append(LabelledRow(q.row, q.question, (_intent(q.model_label, f"{p}: row {q.row}"),),
                                   _language(q.lang, p, q.row), "model"))
    return _non_empty(out, p)


def _jsonl_labelled(p: Path) -> list[LabelledRow]:
    text = read_text(p, MAX_FILE_BYTES, expected="a labelled log", strip_bom=True)
    out: list[LabelledRow] = []
    for line_no, line in enumerate(text.split("\n"), 1):
        if not line.strip():
            continue
        obj = parse_json_line(line, f"{p}: line {line_no}")
        if not isinstance(obj, dict):
            raise InputError(f"{p}: line {line_no}: expected a JSON object, got {type(obj).__name__}")
        row = _row_of(obj, line_no, p)
        if row is not None:
            if len(out) >= MAX_QUESTIONS:
                raise InputError(f"{p}: more than {MAX_QUESTIONS} labelled rows; split the log")
            out.append(row)
    return _non_empty(out, p)


def _json_labelled(p: Path) -> list[LabelledRow]:
    """One `explain --json` document or `--trace-out` trace, or a JSON list of them."""
    doc = parse_json(read_text(p, MAX_FILE_BYTES, expected="a labelled log", strip_bom=True), str(p))
    docs = doc if isinstance(doc, list) else [doc]
    out = []
    for n, obj in enumerate(docs, 1):
        if not isinstance(obj, dict):
            raise InputError(f"{p}: item {n}: expected a JSON object, got {type(obj).__name__}")
        row = _row_of(obj, n, p, "item")
        if row is not None:
            out.append(row)
    return _non_empty(out, p)


def _row_of(obj: Mapping[str, Any], line_no: int, p: Path, unit: str = "line") -> LabelledRow | None:
    where = f"{p}: {unit} {line_no}"
    if isinstance(obj.get("decision"), Mapping) and "question" not in obj:  # a trace: the decision it holds
        obj = obj["decision"]
    both = both_spellings(obj, (("question", "q"), ("intents", "labels")))
    if both is not None:
        raise InputError(f"{where}: {both}")
    question = obj.get("question", obj.get("q"))
    if not isinstance(question, str) or not question.strip():
        raise InputError(f"{where}: no question")
    try:  # needs are not learned from, but a wrong one is a wrong log, as impact says
        names_in(obj.get("needs") or None, FRAGMENT_NAMES, "needs", "fragment")
    except ValueError as e:
        raise InputError(f"{where}: {e}") from e
    if len(question.strip()) > MAX_QUESTION_CHARS:  # as `read_questions` refuses it for YAML and CSV
        raise InputError(f"{where}: the question is {len(question.strip())} characters; "
                         f"the limit is {MAX_QUESTION_CHARS}")
    intent = obj.get("intent")
    if isinstance(intent, Mapping):  # an `explain --json` line or a trace: the model's route is a label
        if intent.get("source") != "model":
            return None
        return LabelledRow(line_no, question.strip(), (_intent(intent.get("name"), where),), None, "model")
    labels = obj.get("intents", obj.get("labels"))
    origin = _origin(obj.get("origin"), p, line_no)
    if labels is None and obj.get("model_label") is not None:
        labels, origin = [obj["model_label"]], "model"
    if labels is None:
        return None
    if isinstance(labels, str):
        labels = labels.replace(",", " ").replace(";", " ").split()
    if not isinstance(labels, list) or not labels:
        raise InputError(f"{where}: intents: expected a list of intent names")
    return LabelledRow(line_no, question.strip(), tuple(_intent(v, where) for v in labels),
                       _language(obj.get("lang"), p, line_no), origin)


def _intent(value: Any, where: str) -> str:
    if not isinstance(value, str) or value not in INTENTS:
        raise InputError(f"{where}: unknown intent {shown(value)}; use one of {', '.join(INTENTS)}")
    return str(value)


def _language(value: Any, p: Path, row: int) -> str | None:
    if value is None or value == "":
        return None
    if not isinstance(value, str) or value not in LANGUAGES:  # a list or a mapping is no language (nor hashable)
        raise InputError(f"{p}: row {row}: unknown language {shown(value)}; the policy has {', '.join(LANGUAGES)}")
    return str(value)


def _origin(value: Any, p: Path, row: int) -> Origin:
    if value is None or value in ("", "coach"):
        return "coach"
    if value == "model":
        return "model"
    raise InputError(f"{p}: row {row}: origin must be coach or model, got {shown(value)}")


def _non_empty(rows: list[LabelledRow], p: Path) -> list[LabelledRow]:
    if not rows:
        raise InputError(f"{p}: no labelled rows (a row needs `intents`, a `model_label`, or a model route)")
    return rows
