"""The playground's labels and suggestions, without Streamlit: a label from a decision, the
labelled rows `suggest` learns from, the same rows as a question set for the impact view, and
ticked suggestions written into the draft's YAML with its comments kept.

The Suggest tab (`playground/ui/tabs/suggest.py`) renders what these return; nothing here decides.
"""

from __future__ import annotations

import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import pandas as pd
import yaml

from coachctx import playground as pg
from coachctx.engine.policy import SCOPES, Policy, parse_policy
from coachctx.errors import CoachctxError, InputError
from coachctx.playground.recorded import decision_facts
from coachctx.tools.questions import Question, QuestionSet
from coachctx.tools.store import QuestionLabel
from coachctx.tools.suggest import Edit, LabelledRow, Suggestion, apply_edits, read_labelled
from coachctx.tools.suggest_candidates import MAX_OFFERING_WORDS
from coachctx.tools.suggest_log import conflicting_labels, describe_conflict

UPLOAD_SUFFIXES: Final = (".jsonl", ".ndjson", ".yaml", ".yml", ".csv")
MAX_LABELS_UPLOAD_BYTES: Final = 5 * 1024 * 1024
MAX_ROWS_NAMED: Final = 10
"""Of a question labelled two ways, how many rows per label the Suggest tab names."""
MAX_PAGE_LEARNING_WORDS: Final = 20_000
"""The most words the page learns suggestions from, in one script run of the shared server: learning
costs about 0.7 ms and 15 kB a word of distinct words (a 1.7 MB log of 300-word rows held the server
for 104 s and 4 GB; an adversarial pass). `coachctx suggest` has no such cap."""
EVIDENCE: Final = (("fixes", "fixes"), ("breaks", "breaks"), ("to_rules", "moves to the rules"),
                   ("from_rules", "moves to the model"))
"""(Suggestion field, what a coach reads) for each kind of evidence row."""


def label_of_decision(decision: Mapping[str, Any], *, intents: Sequence[str], needs: Sequence[str],
                      author: str) -> QuestionLabel:
    """A coach's label for a decision (the Decision's JSON, as the Decision tab has it and a trace
    records it): the question and athlete it was for, the scope it was asked with, and what the
    policy of the day did (its digest, the route source and the intent). `TraceError` names the
    field of a decision that does not have the Decision's shape."""
    facts = decision_facts(decision)
    return QuestionLabel(
        question=facts.question, intents=tuple(intents), author=author, athlete=facts.athlete,
        needs=tuple(needs) if needs else None,
        scope=facts.requested_scope if facts.requested_scope in SCOPES else None, policy_digest=facts.digest,
        route_source=facts.source, routed=facts.intent)


@dataclass(frozen=True)
class LabelledLog:
    """The rows suggestions are learned from and measured on: the stored labels (rows 1 to n),
    then an uploaded log's rows (numbered on from n + 1), and where each row came from."""

    rows: tuple[LabelledRow, ...]
    where: Mapping[int, str]
    athletes: Mapping[int, str]
    needs: Mapping[int, tuple[str, ...]]
    scopes: Mapping[int, str]

    def by_row(self) -> dict[int, LabelledRow]:
        return {r.row: r for r in self.rows}

    @property
    def words(self) -> int:
        """The words suggestions are learned from: each row's, up to the most a row offers."""
        return sum(min(len(r.question.split()), MAX_OFFERING_WORDS) for r in self.rows)

    def too_large(self) -> str | None:
        """Why the page will not learn from this log, or None when it will."""
        words = self.words
        if words <= MAX_PAGE_LEARNING_WORDS:
            return None
        return (f"These {len(self.rows):,} labelled questions hold {words:,} words; the page learns from at most "
                f"{MAX_PAGE_LEARNING_WORDS:,} (learning from more would hold the shared server for minutes). Upload "
                "a smaller log, or run `coachctx suggest FILE` on your machine, which has no such limit.")

    def questions(self) -> QuestionSet:
        """The same rows as a question set, for the impact view: each stored label decided for its
        athlete with its scope, judged by its intents and needs."""
        return QuestionSet("labelled questions", tuple(
            Question(row=r.row, question=r.question, athlete=self.athletes.get(r.row),
                     scope=self.scopes.get(r.row, "auto"), intents=r.intents, needs=self.needs.get(r.row),
                     lang=r.lang, origin=r.origin) for r in self.rows))


def labelled_log(labels: Sequence[QuestionLabel], uploaded: Sequence[LabelledRow] = (),
                 upload_name: str = "upload") -> LabelledLog:
    rows: list[LabelledRow] = []
    where: dict[int, str] = {}
    athletes: dict[int, str] = {}
    needs: dict[int, tuple[str, ...]] = {}
    scopes: dict[int, str] = {}
    for n, label in enumerate(labels, 1):
        rows.append(LabelledRow(n, label.question, label.intents, label.lang, label.origin))
        where[n] = f"label {label.id} by {label.author}"
        if label.athlete is not None:
            athletes[n] = label.athlete
        if label.needs is not None:
            needs[n] = label.needs
        if label.scope is not None:
            scopes[n] = label.scope
    for r in uploaded:
        n = len(rows) + 1
        rows.append(LabelledRow(n, r.question, r.intents, r.lang, r.origin))
        where[n] = f"{upload_name} row {r.row}"
    return LabelledLog(tuple(rows), where, athletes, needs, scopes)


def read_labelled_upload(data: bytes, name: str) -> list[LabelledRow]:
    """An uploaded labelled log, read as `coachctx suggest LOG` reads a file (the format from the
    name's suffix); errors name the upload and the line."""
    pg.check_upload_size(name, len(data), MAX_LABELS_UPLOAD_BYTES, "a labelled log")
    suffix = Path(name).suffix.lower()
    if suffix not in UPLOAD_SUFFIXES:
        raise InputError(f"{name}: a labelled log is {', '.join(UPLOAD_SUFFIXES)}, not {suffix or 'a file without a suffix'}")
    with tempfile.TemporaryDirectory(prefix="coachctx-labels-") as folder:
        path = Path(folder) / f"upload{suffix}"
        path.write_bytes(data)
        try:
            return read_labelled(path)
        except CoachctxError as e:  # the temporary path means nothing to the coach: name the upload
            raise InputError(str(e).replace(str(path), name)) from e


def labels_frame(labels: Sequence[QuestionLabel]) -> pd.DataFrame:
    return pd.DataFrame([{
        "row": n, "question": label.question, "should be": ", ".join(label.intents),
        "was routed": f"{label.routed} ({label.route_source})" if label.routed else "",
        "needs": ", ".join(label.needs or ()), "athlete": label.athlete or "", "by": label.author,
        "origin": label.origin, "when (UTC)": f"{label.created_at:%Y-%m-%d %H:%M}" if label.created_at else "",
        "id": label.id,
    } for n, label in enumerate(labels, 1)], columns=["row", "question", "should be", "was routed", "needs", "athlete",
                                                     "by", "origin", "when (UTC)", "id"])


def evidence_lines(s: Suggestion, log: LabelledLog) -> list[str]:
    """One markdown line per evidence row: what the edit does to it, the question and its labels."""
    rows = log.by_row()
    out = []
    for field, words in EVIDENCE:
        for n in getattr(s, field):
            r = rows[n]
            weaker = " · the model's label, half weight" if r.origin == "model" else ""
            out.append(f"**{words}** row {n}: “{pg.clean_text(r.question)}” → {'/'.join(r.intents)} "
                       f"({log.where.get(n, '')}{weaker})")
    out.extend(f"**lint** {finding}" for finding in s.lint)
    return out


def conflict_lines(log: LabelledLog) -> list[str]:
    """One markdown line per question labelled one way in some rows and another way in others."""
    return [f"“{pg.clean_text(group[0].question)}” → {describe_conflict(group, MAX_ROWS_NAMED)}"
            for group in conflicting_labels(log.rows)]


def edit_key(edit: Edit) -> str:
    """A stable widget key for a suggested edit (the same edit keeps its tick across reruns)."""
    return f"{edit.kind}|{edit.intent}|{edit.language}|{edit.term}|{edit.weight}"


def _yaml_term(data: Mapping[str, Any] | None, edit: Edit) -> tuple[str, dict[str, Any]] | None:
    """The term as the draft's YAML spells it (a policy reads terms without case), and its language's terms."""
    terms = pg.draft_value(data, ("vocabulary", edit.intent, edit.language))
    if not isinstance(terms, Mapping):
        return None
    folded = edit.term.casefold()
    for t in terms:
        if str(t).casefold() == folded:
            return str(t), dict(terms)
    return None


def _cut_entry(text: str, intent: str, language: str, term: str) -> str | None:
    """The text with one entry cut out of the language's flow mapping (`{a: 1, b: 2}`), nothing
    else touched; None where the terms are not written as one."""
    try:
        node: Any = yaml.compose(text, Loader=yaml.SafeLoader)
    except (yaml.YAMLError, RecursionError):
        return None
    for part in ("vocabulary", intent, language):
        if not isinstance(node, yaml.MappingNode):
            return None
        node = next((v for k, v in node.value if isinstance(k, yaml.ScalarNode) and k.value == part), None)
    if not isinstance(node, yaml.MappingNode) or not node.flow_style:
        return None
    entries = node.value
    at = next((i for i, (k, _) in enumerate(entries) if isinstance(k, yaml.ScalarNode) and k.value == term), None)
    if at is None:
        return None
    if at + 1 < len(entries):  # up to the next key: its comma and any line break go with it
        start, end = entries[at][0].start_mark.index, entries[at + 1][0].start_mark.index
    elif at > 0:  # the last entry: from the end of the one before
        start, end = entries[at - 1][1].end_mark.index, entries[at][1].end_mark.index
    else:
        start, end = entries[at][0].start_mark.index, entries[at][1].end_mark.index
    return text[:start] + text[end:]


def apply_to_draft(text: str, policy: Policy, edits: Sequence[Edit]) -> str:
    """The draft's text with the edits made, each a one-line change where the YAML allows (the
    editor's form edits: comments and layout kept). The result must read back as `apply_edits`
    makes the same edits to the policy, or nothing is applied."""
    for e in edits:
        if e.kind == "add":
            text = pg.add_term_text(text, e.intent, e.language, e.term, float(e.weight or 1.0))
            continue
        found = _yaml_term(pg.draft_data(text), e)
        if found is None:
            raise InputError(f"the draft has no term {e.term!r} in vocabulary.{e.intent}.{e.language} any more")
        term, terms = found
        if e.kind == "reweight":
            text = pg.edit_draft_text(text, ("vocabulary", e.intent, e.language, term), e.weight)
        else:
            terms.pop(term)
            text = _cut_entry(text, e.intent, e.language, term) or pg.edit_draft_text(
                text, ("vocabulary", e.intent, e.language), terms)
    wanted = apply_edits(policy, edits)
    got = parse_policy(text, "the draft")
    if got.vocabulary != wanted.vocabulary:
        raise InputError("the edits could not be written into the draft as suggested; edit the vocabulary in the "
                         "Policy editor instead")
    return text


def save_message(edits: Sequence[Edit]) -> str:
    """A default message for saving applied suggestions: what they changed."""
    described = "; ".join(e.describe() for e in edits)
    text = f"suggested from labelled questions: {described}"
    return text if len(text) <= 480 else text[:477] + "..."
