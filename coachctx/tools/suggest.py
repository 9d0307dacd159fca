"""Vocabulary suggestions learned from labelled questions: the rules learn from what they missed
while staying rules a coach can read.

From rows labelled with the intents that would have been right (a coach's label, or a model's,
which counts as weaker evidence), `suggest` proposes policy edits: a new term (a word or a two- or
three-word phrase of the question, in its own script, filed under the row's language) for an
intent, a weight change, or removing a term that routes rows wrong. Each suggestion carries its
evidence, measured with the edit applied, not guessed: the rows it fixes, the rows it breaks, the
rows it moves from the model to the rules (or back), and the lint findings it would add. Nothing
that breaks as much as it fixes is suggested. Routing is judged as without a model: a question
the rules are unsure of takes the keyword fallback, the route `select()` takes with no model.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, Literal

from coachctx.engine.common_words import function_words
from coachctx.engine.pipeline import MAX_QUESTION_CHARS
from coachctx.engine.policy import INTENTS, LANGUAGES, Policy, validate_policy
from coachctx.engine.routing import TermMatcher, is_confident, score, term_matching, vocabulary_matcher
from coachctx.engine.text import Tokens, script_of, stem_variants, tokenise
from coachctx.errors import InputError
from coachctx.reading import file_path, parse_json, read_text
from coachctx.tools.lint import RULES, lint_policy
from coachctx.tools.questions import MAX_FILE_BYTES, MAX_QUESTIONS, read_questions

COACH_WEIGHT: Final = 1.0
MODEL_WEIGHT: Final = 0.5
"""A model's label is evidence too, but weaker than a coach's."""
RULES_WEIGHT: Final = 0.1
"""A row a correct edit moves from the model to the rules counts this much: a model call saved."""
MAX_PHRASE: Final = 3
NEW_WEIGHTS: Final = (1.0, 1.5)
DEFAULT_MAX: Final = 20
Origin = Literal["coach", "model"]
EditKind = Literal["add", "reweight", "remove"]

SCRIPT_LANGUAGE: Final[Mapping[str, str]] = {
    "Latin": "en", "Cyrillic": "ru", "Greek": "el", "Arabic": "ar", "Devanagari": "hi", "Hangul": "ko",
    "Han": "zh", "Hiragana": "ja", "Katakana": "ja",
}
"""The language a term is filed under when the row does not say: the script's most common one here."""


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


@dataclass(frozen=True)
class Edit:
    kind: EditKind
    intent: str
    language: str
    term: str
    weight: float | None
    """The new weight; None for a removal."""
    old_weight: float | None = None

    def describe(self) -> str:
        where = f"vocabulary.{self.intent}.{self.language}"
        if self.kind == "add":
            return f"add {self.term!r}: {self.weight:g} to {where}"
        if self.kind == "remove":
            return f"remove {self.term!r} ({self.old_weight:g}) from {where}"
        return f"change {self.term!r} in {where} from {self.old_weight:g} to {self.weight:g}"

    def to_json(self) -> dict[str, Any]:
        return {"kind": self.kind, "intent": self.intent, "language": self.language, "term": self.term,
                "weight": self.weight, "old_weight": self.old_weight}


@dataclass(frozen=True)
class Suggestion:
    edit: Edit
    fixes: tuple[int, ...]
    """Rows routed wrong today and right with the edit (row numbers)."""
    breaks: tuple[int, ...]
    to_rules: tuple[int, ...]
    """Rows routed right both ways that the rules decide with the edit and did not before."""
    from_rules: tuple[int, ...]
    lint: tuple[str, ...] = ()
    """Lint findings the edit would add."""
    gain: float = 0.0

    def to_json(self, rows: Mapping[int, LabelledRow] | None = None) -> dict[str, Any]:
        def show(numbers: Sequence[int]) -> list[Any]:
            return [{"row": n, "question": rows[n].question, "labels": list(rows[n].intents),
                     "origin": rows[n].origin} for n in numbers] if rows else list(numbers)

        return {"edit": self.edit.to_json(), "describe": self.edit.describe(), "gain": self.gain,
                "fixes": show(self.fixes), "breaks": show(self.breaks), "to_rules": show(self.to_rules),
                "from_rules": show(self.from_rules), "lint": list(self.lint)}


# --- reading labelled rows ---------------------------------------------------------------------


def read_labelled(path: str | Path) -> list[LabelledRow]:
    """Labelled rows from a question set (YAML like the corpus, JSONL or CSV with `question` and
    `intents`, optional `lang` and `origin`), or from `explain --json` / trace lines, whose model
    routes count as model labels. A row that cannot be read is an error naming its line."""
    p = file_path(path, "a labelled log")
    if p.suffix.lower() in (".jsonl", ".ndjson"):
        return _jsonl_labelled(p)
    questions = read_questions(p)
    if questions.skipped:
        row, why = questions.skipped[0]
        raise InputError(f"{p}: row {row}: {why}")
    out = [LabelledRow(q.row, q.question, q.intents, _language(q.lang, p, q.row), _origin(q.origin, p, q.row))
           for q in questions.questions if q.intents is not None]
    return _non_empty(out, p)


def _jsonl_labelled(p: Path) -> list[LabelledRow]:
    text = read_text(p, MAX_FILE_BYTES, expected="a labelled log", strip_bom=True)
    out: list[LabelledRow] = []
    for line_no, line in enumerate(text.split("\n"), 1):
        if not line.strip():
            continue
        obj = parse_json(line, f"{p}: line {line_no}")
        if not isinstance(obj, dict):
            raise InputError(f"{p}: line {line_no}: expected a JSON object, got {type(obj).__name__}")
        row = _row_of(obj, line_no, p)
        if row is not None:
            if len(out) >= MAX_QUESTIONS:
                raise InputError(f"{p}: more than {MAX_QUESTIONS} labelled rows; split the log")
            out.append(row)
    return _non_empty(out, p)


def _row_of(obj: Mapping[str, Any], line_no: int, p: Path) -> LabelledRow | None:
    where = f"{p}: line {line_no}"
    question = obj.get("question", obj.get("q"))
    if not isinstance(question, str) or not question.strip():
        raise InputError(f"{where}: no question")
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
        raise InputError(f"{where}: unknown intent {value!r}; use one of {', '.join(INTENTS)}")
    return str(value)


def _language(value: Any, p: Path, row: int) -> str | None:
    if value is None or value == "":
        return None
    if not isinstance(value, str) or value not in LANGUAGES:  # a list or a mapping is no language (nor hashable)
        raise InputError(f"{p}: row {row}: unknown language {value!r}; the policy has {', '.join(LANGUAGES)}")
    return str(value)


def _origin(value: Any, p: Path, row: int) -> Origin:
    if value is None or value in ("", "coach"):
        return "coach"
    if value == "model":
        return "model"
    raise InputError(f"{p}: row {row}: origin must be coach or model, got {value!r}")


def _non_empty(rows: list[LabelledRow], p: Path) -> list[LabelledRow]:
    if not rows:
        raise InputError(f"{p}: no labelled rows (a row needs `intents`, a `model_label`, or a model route)")
    return rows


# --- measuring an edit ---------------------------------------------------------------------------


@dataclass
class _Row:
    label: LabelledRow
    tokens: Tokens
    intent: str
    ruled: bool

    @property
    def correct(self) -> bool:
        return self.intent in self.label.intents


def _outcome(tokens: Tokens, policy: Policy, matcher: TermMatcher) -> tuple[str, bool]:
    """The route without a model: (intent, decided by the rules)."""
    s = score(tokens, policy, matcher)
    top, top_score = s.top
    _, runner_score = s.runner_up
    ruled = top is not None and is_confident(top_score, runner_score, policy.routing.confident_threshold,
                                             policy.routing.margin)
    return (top if top is not None else "general"), ruled


@dataclass
class _Workbench:
    policy: Policy
    rows: list[_Row]
    matcher: TermMatcher = field(init=False)

    def __post_init__(self) -> None:
        self.matcher = vocabulary_matcher(self.policy)

    def measure(self, edit: Edit, matcher: TermMatcher, candidates: Iterable[_Row]) -> Suggestion:
        fixes: list[int] = []
        breaks: list[int] = []
        to_rules: list[int] = []
        from_rules: list[int] = []
        gain = 0.0
        for r in candidates:
            intent, ruled = _outcome(r.tokens, self.policy, matcher)
            now = intent in r.label.intents
            if now and not r.correct:
                fixes.append(r.label.row)
                gain += r.label.weight
            elif r.correct and not now:
                breaks.append(r.label.row)
                gain -= r.label.weight
            elif now and ruled != r.ruled:
                (to_rules if ruled else from_rules).append(r.label.row)
                gain += RULES_WEIGHT * r.label.weight * (1 if ruled else -1)
        return Suggestion(edit, tuple(fixes), tuple(breaks), tuple(to_rules), tuple(from_rules),
                          gain=round(gain, 6))


def _language_of(row: LabelledRow, word: str) -> str:
    """The row's language when the word is in that language's script, else the script's usual one."""
    script = script_of(word[0])
    if row.lang is not None and (script_of(_SAMPLE[row.lang]) == script
                                 or (script == "Han" and row.lang in ("ja", "zh"))):
        return row.lang
    return SCRIPT_LANGUAGE.get(script, "en")


_SAMPLE: Final[Mapping[str, str]] = {
    "en": "a", "es": "a", "de": "a", "fr": "a", "pt": "a", "it": "a", "nl": "a", "sv": "a", "da": "a", "no": "a",
    "fi": "a", "pl": "a", "tr": "a", "id": "a", "vi": "a", "ru": "я", "el": "α", "ar": "ع", "hi": "क",
    "ja": "あ", "zh": "中", "ko": "한",
}
"""A letter of each policy language's script."""


def _phrases(row: LabelledRow, tokens: Tokens) -> set[tuple[str, str]]:
    """(language, term) candidates a question offers: its words and runs of two or three words
    that begin and end with a content word, and the two- to four-character pieces of its Han/Kana
    runs. A function word ("when", "still", "wie") is never a term on its own or at a phrase's edge."""
    out: set[tuple[str, str]] = set()
    stop = function_words()
    words = tokens.words
    for n in range(1, MAX_PHRASE + 1):
        for i in range(len(words) - n + 1):
            part = words[i:i + n]
            if part[0] in stop or part[-1] in stop or any(w.isdigit() for w in part):
                continue
            if n == 1 and len(part[0]) < 3 and script_of(part[0][0]) != "Hangul":
                continue
            lang = _language_of(row, part[0])
            if LANGUAGES[lang] == "substring" or (LANGUAGES[lang] == "prefix" and n > 1):
                continue
            out.add((lang, " ".join(part)))
    for run in tokens.unspaced.split():
        lang = "ja" if any(script_of(c) in ("Hiragana", "Katakana") for c in run) or row.lang == "ja" else "zh"
        for n in (2, 3, 4):
            out.update((lang, run[i:i + n]) for i in range(len(run) - n + 1))
    return out


@dataclass
class _Index:
    """Which rows a term would match, without running a matcher over every row: stemmed runs of
    words per algorithm, looked up by the term's stem keys; Han/Kana and Hangul by scanning."""

    rows: Sequence[_Row]
    phrases: dict[str, dict[tuple[str, ...], list[_Row]]] = field(default_factory=dict)

    def touched(self, language: str, term: str) -> list[_Row]:
        text, mode = term_matching(term, language)
        if mode == "substring":
            key = tokenise(text).unspaced
            return [r for r in self.rows if key and key in r.tokens.unspaced]
        words = tokenise(text).words
        if mode == "prefix":
            return [r for r in self.rows if words and any(w.startswith(words[0]) for w in r.tokens.words)]
        table = self.phrases.get(mode)
        if table is None:
            table = self.phrases[mode] = {}
            for r in self.rows:
                stems = r.tokens.stems(mode)
                for n in range(1, MAX_PHRASE + 1):
                    for i in range(len(stems) - n + 1):
                        table.setdefault(tuple(stems[i:i + n]), []).append(r)
        found: dict[int, _Row] = {}
        for phrase in itertools.product(*(sorted(stem_variants(w, mode)) for w in words)):
            found.update((id(r), r) for r in table.get(tuple(phrase), []))
        return list(found.values())


def _edited(policy: Policy, edits: Sequence[Edit]) -> Policy:
    data = policy.model_dump(mode="json")
    for e in edits:
        terms = data["vocabulary"][e.intent].setdefault(e.language, {})
        if e.kind == "remove":
            terms.pop(e.term, None)
        else:
            terms[e.term] = e.weight
    return validate_policy(data, "<suggested>")


def apply_edits(policy: Policy, edits: Sequence[Edit]) -> Policy:
    """The policy with the edits made, validated like any policy."""
    return _edited(policy, edits)


def suggest(rows: Sequence[LabelledRow], policy: Policy, *, limit: int = DEFAULT_MAX,
            lint: bool = True) -> list[Suggestion]:
    """The best edits for these labelled rows, best first: measured gain, then fewer breaks, then
    the edit itself (so the same input always gives the same order)."""
    if limit < 1:
        raise InputError(f"--max must be at least 1, got {limit}")
    matcher = vocabulary_matcher(policy)
    prepared = []
    for label in rows:
        tokens = tokenise(label.question)
        intent, ruled = _outcome(tokens, policy, matcher)
        prepared.append(_Row(label, tokens, intent, ruled))
    bench = _Workbench(policy, prepared)
    found = [*_additions(bench), *_removals(bench)]
    ranked = sorted((s for s in found if s.gain > 0 and len(s.fixes) + len(s.to_rules) > len(s.breaks)),
                    key=lambda s: (-s.gain, len(s.breaks), s.edit.kind, s.edit.intent, s.edit.language, s.edit.term))
    best: list[Suggestion] = []
    seen: set[tuple[str, str, str]] = set()
    before = {str(f) for f in lint_policy(policy)} if lint else set()
    for s in ranked:
        key = (s.edit.intent, s.edit.language, s.edit.term)
        if key in seen:
            continue
        seen.add(key)
        if lint:
            s = _with_lint(s, policy, before)
            if any(f.endswith(_ERROR_RULES) for f in s.lint):
                continue  # an edit the policy's own lint would refuse is no suggestion
        best.append(s)
        if len(best) == limit:
            break
    return best


_ERROR_RULES: Final = tuple(f"[{code}]" for code, (severity, _) in RULES.items() if severity == "error")


def _with_lint(s: Suggestion, policy: Policy, before: set[str]) -> Suggestion:
    after = [str(f) for f in lint_policy(_edited(policy, [s.edit]))]
    return Suggestion(s.edit, s.fixes, s.breaks, s.to_rules, s.from_rules,
                      tuple(f for f in after if f not in before), s.gain)


def _additions(bench: _Workbench) -> Iterable[Suggestion]:
    """A term from a row the rules missed (wrong, or right but unsure), for one of its labels."""
    offers: dict[tuple[str, str, str], None] = {}
    for r in bench.rows:
        if r.correct and r.ruled:
            continue
        for lang, term in sorted(_phrases(r.label, r.tokens)):
            for intent in r.label.intents:
                offers.setdefault((intent, lang, term))
    known = {(i, lang, t.casefold()) for i, by_lang in bench.policy.vocabulary.items()
             for lang, terms in by_lang.items() for t in terms}
    index = _Index(bench.rows)
    for intent, lang, term in offers:
        # a word the vocabulary already reads (any intent, any language, or misspelt) is the
        # vocabulary's business to weigh: its weight or removal is suggested, not a copy of it
        if (intent, lang, term) in known or (" " not in term and bench.matcher.find(tokenise(term))):
            continue
        touched = index.touched(lang, term)
        best: Suggestion | None = None
        for weight in NEW_WEIGHTS:
            matcher = bench.matcher.with_term(intent, lang, term, weight)
            s = bench.measure(Edit("add", intent, lang, term, weight), matcher, touched)
            if best is None or s.gain > best.gain:
                best = s
        if best is not None and best.gain > 0:
            yield best


def _removals(bench: _Workbench) -> Iterable[Suggestion]:
    """A term that pushed a row to a wrong intent: removed, or at half its weight."""
    culprits: dict[tuple[str, str, str], float] = {}
    where: dict[tuple[str, str], tuple[str, float]] = {}
    twice: set[tuple[str, str]] = set()
    for i, by_lang in bench.policy.vocabulary.items():
        for language, terms in by_lang.items():
            lang = str(language)
            for t, w in terms.items():
                if (i, t) in where:
                    twice.add((i, t))  # the same text in two languages of one intent: edit it by hand
                where[(i, t)] = (lang, w)
    for r in bench.rows:
        if r.correct:
            continue
        for term, _ in score(r.tokens, bench.policy, bench.matcher).matched[r.intent]:
            base = term.split(" (", 1)[0]
            if (r.intent, base) in where and (r.intent, base) not in twice:
                lang, weight = where[(r.intent, base)]
                culprits[(r.intent, lang, base)] = weight
    index = _Index(bench.rows)
    for (intent, lang, term), weight in sorted(culprits.items()):
        touched = index.touched(lang, term)
        without = bench.matcher.without_term(intent, term)
        options = [bench.measure(Edit("remove", intent, lang, term, None, weight), without, touched)]
        if weight > 0.5:
            half = without.with_term(intent, lang, term, weight / 2)
            options.append(bench.measure(Edit("reweight", intent, lang, term, weight / 2, weight), half, touched))
        yield max(options, key=lambda s: s.gain)


def learn(rows: Sequence[LabelledRow], policy: Policy, *, rounds: int = 200, per_round: int = 10) -> tuple[Policy, list[Edit]]:
    """Apply the top suggestions again and again (each measured against the policy as it then is),
    until none gains or `rounds` edits are made: what a coach accepting every suggestion would get."""
    applied: list[Edit] = []
    while len(applied) < rounds:
        batch = suggest(rows, policy, limit=per_round, lint=False)
        if not batch:
            break
        chosen = [batch[0].edit]
        touched = {batch[0].edit.term}
        for s in batch[1:]:  # independent edits (no shared words) can go in one round
            if not any(w in s.edit.term.split() for t in touched for w in t.split()):
                chosen.append(s.edit)
                touched.add(s.edit.term)
        policy = apply_edits(policy, chosen)
        applied.extend(chosen)
    return policy, applied
