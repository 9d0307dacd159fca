"""Vocabulary suggestions learned from labelled questions: the rules learn from what they missed
while staying rules a coach can read.

From rows labelled with the intents that would have been right (a coach's label, or a model's,
which counts as weaker evidence), `suggest` proposes policy edits: a new term (a word or a two- or
three-word phrase of the question, in its own script, filed under the row's language) for an
intent, a weight change, or removing a term that routes rows wrong. Each suggestion carries its
evidence, measured with the edit compiled into the matcher: the rows it fixes, the rows it breaks,
the rows it moves from the model to the rules (or back), and the lint findings it would add (every
candidate is first estimated from the rows' scores, and only the most promising are measured).
Nothing that breaks as much as it fixes is suggested. Routing is judged as without a model: a
question the rules are unsure of takes the keyword fallback, the route `select()` takes with no
model. `learn` applies suggestions until none gains, then adds light terms for the words an
intent's rows share, so that the next question is routed too (`make bench`, section 3c).
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, Literal

from coachctx.engine.common_words import function_words
from coachctx.engine.matching import TermMatcher, filed_under, term_matching, vocabulary_matcher
from coachctx.engine.pipeline import MAX_QUESTION_CHARS
from coachctx.engine.policy import INTENTS, LANGUAGES, Policy, validate_policy
from coachctx.engine.routing import is_confident, score
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
MAX_RAISE: Final = 1.5
"""A weight change never makes a term heavier than this, the heaviest a new term gets."""
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
    scores: dict[str, float]
    intent: str
    ruled: bool

    @property
    def correct(self) -> bool:
        return self.intent in self.label.intents


def _decide(scores: Mapping[str, float], policy: Policy) -> tuple[str, bool]:
    """The route without a model, from the intents' scores: (intent, decided by the rules). Ties
    keep the policy's intent order, as `Scores.ranked` does."""
    ranked = sorted(scores.items(), key=lambda kv: -kv[1])
    (top, top_score), (_, runner_score) = ranked[0], ranked[1]
    ruled = is_confident(top_score, runner_score, policy.routing.confident_threshold, policy.routing.margin)
    return (top if top_score > 0 else "general"), ruled


def _outcome(tokens: Tokens, policy: Policy, matcher: TermMatcher) -> tuple[dict[str, float], str, bool]:
    scores = dict(score(tokens, policy, matcher).scores)
    return (scores, *_decide(scores, policy))


@dataclass(frozen=True)
class _Candidate:
    edit: Edit
    touched: tuple[int, ...]
    """Positions of the rows the edited term meets (found by stem, without fuzzy or compound readings)."""
    support: float
    """Weighted rows the term meets labelled with its intent, less those labelled without it: the
    evidence that the word means the intent, beyond the rows it changes."""


class _Workbench:
    """Labelled rows as the policy routes them today, and the edits they offer, each estimated
    quickly (the edited term's weight added to, or taken from, its intent's score on the rows it
    meets), then the most promising measured exactly with the edit compiled in."""

    def __init__(self, rows: Sequence[LabelledRow], policy: Policy, tokens: Sequence[Tokens] | None = None,
                 index: _Index | None = None) -> None:
        self.policy = policy
        self.matcher = vocabulary_matcher(policy)
        tokens = [tokenise(r.question) for r in rows] if tokens is None else tokens
        self.rows = [_Row(label, t, *_outcome(t, policy, self.matcher)) for label, t in zip(rows, tokens, strict=True)]
        self.index = _Index(tokens) if index is None else index

    def estimate(self, c: _Candidate) -> Suggestion:
        delta = (c.edit.weight or 0.0) - (c.edit.old_weight or 0.0)  # an addition has no old weight, a removal no new
        outcomes = []
        for i in c.touched:
            r = self.rows[i]
            scores = dict(r.scores)
            scores[c.edit.intent] = round(scores[c.edit.intent] + delta, 6)
            outcomes.append((r, *_decide(scores, self.policy)))
        return _evidence(c.edit, outcomes)

    def measure(self, c: _Candidate) -> Suggestion:
        """The edit's evidence with the edit compiled into the matcher: what routing would do."""
        e = c.edit
        # a heavier copy of a stemmed term takes its place when compiled in, so only a lighter one,
        # or a Han/Kana or Hangul one, needs the term taken out first (a pass over the whole table)
        replaces = e.kind == "add" or (LANGUAGES[e.language] not in ("substring", "prefix")
                                       and (e.weight or 0.0) > (e.old_weight or 0.0))
        matcher = self.matcher if replaces else self.matcher.without_term(e.intent, e.term)
        if e.weight is not None:
            matcher = matcher.with_term(e.intent, e.language, e.term, e.weight)
        outcomes = [(self.rows[i], *_outcome(self.rows[i].tokens, self.policy, matcher)[1:]) for i in c.touched]
        return _evidence(e, outcomes)

    def candidates(self, min_support: float) -> list[tuple[_Candidate, Suggestion]]:
        """Every edit worth measuring with its estimate, best first."""
        found = []
        for c in [*self._additions(min_support, self.rows), *self._removals()]:
            s = self.estimate(c)
            if _worth(s):
                found.append((c, s))
        found.sort(key=lambda cs: _rank(cs[1], cs[0].support))
        return found

    def reinforcements(self, min_support: float, precision: float, weight: float) -> list[Edit]:
        """Terms for words the rows of an intent share, though no row needs them today: each
        breaks nothing here, and a question that uses the word without the terms that route
        these rows is routed too. One intent per word: the one with most evidence."""
        best: dict[tuple[str, tuple[Any, ...]], tuple[float, Edit]] = {}
        for c in self._additions(min_support, self.rows, every_row=True, weights=(weight,)):
            pos = sum(self.rows[i].label.weight for i in c.touched if c.edit.intent in self.rows[i].label.intents)
            total = sum(self.rows[i].label.weight for i in c.touched)
            if total == 0 or pos / total < precision:
                continue
            s = self.estimate(c)
            if s.breaks or s.from_rules:
                continue
            key = (c.edit.language, filed_under(c.edit.term, c.edit.language))
            if key not in best or c.support > best[key][0]:
                best[key] = (c.support, c.edit)
        return [e for _, e in sorted(best.values(), key=lambda se: (-se[0], se[1].intent, se[1].language, se[1].term))]

    def _support(self, intent: str, touched: Iterable[int]) -> float:
        return round(sum(r.label.weight * (1 if intent in r.label.intents else -1)
                         for r in (self.rows[i] for i in touched)), 6)

    def _additions(self, min_support: float, rows: Sequence[_Row], every_row: bool = False,
                   weights: Sequence[float] = NEW_WEIGHTS) -> Iterable[_Candidate]:
        """A word or phrase of a row the rules missed (wrong, or right but unsure) for one of its
        labels, once per stem: "taper", "tapers" and "tapering" are one candidate, shown as the
        form the rows use most."""
        offers: dict[tuple[str, str, tuple[Any, ...]], dict[str, int]] = {}
        for r in rows:
            if r.correct and r.ruled and not every_row:
                continue
            for lang, term in sorted(_phrases(r.label, r.tokens)):
                key = filed_under(term, lang)
                for intent in r.label.intents:
                    forms = offers.setdefault((intent, lang, key), {})
                    forms[term] = forms.get(term, 0) + 1
        known = {(i, lang, t.casefold()) for i, by_lang in self.policy.vocabulary.items()
                 for lang, terms in by_lang.items() for t in terms}
        for (intent, lang, _), forms in offers.items():
            term = min(forms, key=lambda t: (-forms[t], len(t), t))
            # a word the vocabulary already reads (any intent, any language) is the vocabulary's
            # business to weigh: its weight or removal is suggested, not a copy of it
            if (intent, lang, term) in known or (" " not in term and self._reads(term)):
                continue
            touched = tuple(self.index.touched(lang, term))
            support = self._support(intent, touched)
            if support < min_support:
                continue
            for weight in weights:
                yield _Candidate(Edit("add", intent, lang, term, weight), touched, support)

    def _reads(self, word: str) -> bool:
        """Whether the vocabulary reads this word as a term of its own. A word it reads only as a
        guess (a misspelling of a term, a compound holding one) may get its own term, which ends
        the guess: once "corked" is a term, it is no longer read as a misspelt "cooked"."""
        return any(" (" not in e.term for e in self.matcher.find(tokenise(word)))

    def _removals(self) -> Iterable[_Candidate]:
        """A term that pushed a row to a wrong intent: removed, or at half its weight."""
        where: dict[tuple[str, str], tuple[str, float]] = {}
        twice: set[tuple[str, str]] = set()
        for i, by_lang in self.policy.vocabulary.items():
            for language, terms in by_lang.items():
                for t, w in terms.items():
                    if (i, t) in where:
                        twice.add((i, t))  # the same text in two languages of one intent: edit it by hand
                    where[(i, t)] = (str(language), w)
        culprits: dict[tuple[str, str, str], float] = {}
        helpers: dict[tuple[str, str, str], float] = {}
        for r in self.rows:
            if r.correct and r.ruled:
                continue
            matched = score(r.tokens, self.policy, self.matcher).matched
            for intent in (r.label.intents if r.correct else (r.intent, *r.label.intents)):
                for term, _ in matched[intent]:
                    base = term.split(" (", 1)[0]
                    if (intent, base) in where and (intent, base) not in twice:
                        lang, weight = where[(intent, base)]
                        (helpers if intent in r.label.intents else culprits)[(intent, lang, base)] = weight
        for (intent, lang, term), weight in sorted(culprits.items()):
            touched = tuple(self.index.touched(lang, term))
            support = -self._support(intent, touched)
            yield _Candidate(Edit("remove", intent, lang, term, None, weight), touched, support)
            if weight > 0.5:
                yield _Candidate(Edit("reweight", intent, lang, term, weight / 2, weight), touched, support)
        for (intent, lang, term), weight in sorted(helpers.items()):
            if weight < MAX_RAISE:  # a term too light to route the rows that use it: twice as heavy
                touched = tuple(self.index.touched(lang, term))
                yield _Candidate(Edit("reweight", intent, lang, term, min(2 * weight, MAX_RAISE), weight), touched,
                                 self._support(intent, touched))


def _evidence(edit: Edit, outcomes: Iterable[tuple[_Row, str, bool]]) -> Suggestion:
    fixes: list[int] = []
    breaks: list[int] = []
    to_rules: list[int] = []
    from_rules: list[int] = []
    gain = 0.0
    for r, intent, ruled in outcomes:
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
    return Suggestion(edit, tuple(fixes), tuple(breaks), tuple(to_rules), tuple(from_rules), gain=round(gain, 6))


def _worth(s: Suggestion) -> bool:
    """Nothing that breaks as much as it fixes."""
    return s.gain > 0 and len(s.fixes) + len(s.to_rules) > len(s.breaks)


def _rank(s: Suggestion, support: float) -> tuple[Any, ...]:
    """Measured gain, then the evidence across rows (a word many rows of the intent use before a
    word of one row), then fewer breaks, then the edit itself: the same input, the same order."""
    return (-s.gain, -support, len(s.breaks), s.edit.kind, s.edit.intent, s.edit.language, s.edit.term,
            s.edit.weight or 0.0)


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
            if any(_JAMO.fullmatch(w) for w in part):  # ㅠㅠ, ㅋㅋ: crying and laughing, not words
                continue
            lang = _language_of(row, part[0])
            if LANGUAGES[lang] == "substring" or (LANGUAGES[lang] == "prefix" and n > 1):
                continue
            out.add((lang, " ".join(part)))
    for run in tokens.unspaced.split():
        lang = "ja" if any(script_of(c) in ("Hiragana", "Katakana") for c in run) or row.lang == "ja" else "zh"
        for n in (2, 3, 4):
            out.update((lang, run[i:i + n]) for i in range(len(run) - n + 1) if _a_piece(run, i, i + n))
    return out


_JAMO: Final = re.compile(r"[\u1100-\u11ff\u3130-\u318f]+")


def _a_piece(run: str, start: int, end: int) -> bool:
    """A piece of a Han/Kana run worth offering as a term: not kana alone, which is grammar
    ("って", "でも"), and not part of a Katakana word ("イン" of "オフライン")."""
    piece = run[start:end]
    if all(script_of(c) == "Hiragana" for c in piece):
        return False
    cut = (start > 0 and script_of(run[start - 1]) == script_of(piece[0]) == "Katakana") or \
          (end < len(run) and script_of(run[end]) == script_of(piece[-1]) == "Katakana")
    return not cut


class _Index:
    """Which rows a term meets, without running a matcher over every row: stemmed runs of words
    per algorithm, looked up by the term's stem keys; Han/Kana and Hangul by scanning. It depends
    on the rows alone, so one index serves every round of `learn`."""

    def __init__(self, tokens: Sequence[Tokens]) -> None:
        self.tokens = tokens
        self.phrases: dict[str, dict[tuple[str, ...], list[int]]] = {}
        self.seen: dict[tuple[str, str], list[int]] = {}

    def touched(self, language: str, term: str) -> list[int]:
        key = (language, term)
        found = self.seen.get(key)
        if found is None:
            found = self.seen[key] = self._touched(language, term)
        return found

    def _touched(self, language: str, term: str) -> list[int]:
        text, mode = term_matching(term, language)
        if mode == "substring":
            key = tokenise(text).unspaced
            return [i for i, t in enumerate(self.tokens) if key and key in t.unspaced]
        words = tokenise(text).words
        if mode == "prefix":
            return [i for i, t in enumerate(self.tokens) if words and any(w.startswith(words[0]) for w in t.words)]
        table = self.phrases.get(mode)
        if table is None:
            table = self.phrases[mode] = {}
            for i, t in enumerate(self.tokens):
                stems = t.stems(mode)
                for n in range(1, MAX_PHRASE + 1):
                    for j in range(len(stems) - n + 1):
                        table.setdefault(tuple(stems[j:j + n]), []).append(i)
        found: set[int] = set()
        for phrase in itertools.product(*(sorted(stem_variants(w, mode)) for w in words)):
            found.update(table.get(tuple(phrase), ()))
        return sorted(found)


def apply_edits(policy: Policy, edits: Sequence[Edit]) -> Policy:
    """The policy with the edits made, validated like any policy."""
    data = policy.model_dump(mode="json")
    for e in edits:
        terms = data["vocabulary"][e.intent].setdefault(e.language, {})
        if e.kind == "remove":
            terms.pop(e.term, None)
        else:
            terms[e.term] = e.weight
    return validate_policy(data, "<suggested>")


EXACT_POOL: Final = 40
"""How many of the best estimates `suggest` measures exactly, at the least."""


def suggest(rows: Sequence[LabelledRow], policy: Policy, *, limit: int = DEFAULT_MAX, lint: bool = True,
            min_support: float = 0.0) -> list[Suggestion]:
    """The best edits for these labelled rows, best first: measured gain, then the evidence across
    rows, then fewer breaks, then the edit itself (so the same input always gives the same order).
    `min_support`: a new term must meet this many more rows of its intent than of others (weighted)."""
    if limit < 1:
        raise InputError(f"--max must be at least 1, got {limit}")
    bench = _Workbench(rows, policy)
    measured = []
    for c, _ in bench.candidates(min_support)[:max(EXACT_POOL, 3 * limit)]:
        s = bench.measure(c)
        if _worth(s):
            measured.append((s, c.support))
    measured.sort(key=lambda sc: _rank(*sc))
    best: list[Suggestion] = []
    seen: set[tuple[str, str, str]] = set()
    before = {str(f) for f in lint_policy(policy)} if lint else set()
    for s, _ in measured:
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
    after = [str(f) for f in lint_policy(apply_edits(policy, [s.edit]))]
    return Suggestion(s.edit, s.fixes, s.breaks, s.to_rules, s.from_rules,
                      tuple(f for f in after if f not in before), s.gain)


LEARN_MIN_SUPPORT: Final = 2.0
"""A term `learn` adds to fix rows must meet two more rows of its intent than of others: one row's
word fixes that row and rarely the next question."""
REINFORCE_WEIGHT: Final = 0.5
"""The weight of a word `learn` adds because rows of an intent share it: below the threshold, so
it never makes the rules sure alone, but it routes a question nothing else matched, and it is
outweighed by any full term that disagrees."""
REINFORCE_PRECISION: Final = 0.6
"""The share of the (weighted) rows a reinforcing word meets that must be labelled with its intent."""


def learn(rows: Sequence[LabelledRow], policy: Policy, *, max_edits: int = 10_000, max_rounds: int = 100,
          min_support: float = LEARN_MIN_SUPPORT, reinforce: bool = True) -> tuple[Policy, list[Edit]]:
    """What a coach accepting every suggestion would get, and then some. Three steps:

    1. fix: apply the best suggestions round after round, each measured against the policy as it
       then is, until none gains. A round takes every edit, best first, that meets no row an edit
       taken before it in the round meets, so its edits do not change each other's evidence;
    2. reinforce: every word or phrase the rows of one intent share (at least `REINFORCE_PRECISION`
       of the rows it meets, and one more row of the intent than of others) and that breaks no
       row, at `REINFORCE_WEIGHT`: the rows do not need it, the next question may;
    3. fix again what step 2 disturbed.
    """
    tokens = [tokenise(r.question) for r in rows]
    index = _Index(tokens)
    policy, applied = _fix(rows, policy, tokens, index, min_support, max_edits, max_rounds)
    if reinforce and len(applied) < max_edits:
        bench = _Workbench(rows, policy, tokens, index)
        chosen = bench.reinforcements(1.0, REINFORCE_PRECISION, REINFORCE_WEIGHT)[:max_edits - len(applied)]
        policy = apply_edits(policy, chosen)
        policy, fixed = _fix(rows, policy, tokens, index, min_support, max_edits - len(applied) - len(chosen),
                             max_rounds)
        applied += chosen + fixed
    return policy, applied


def _fix(rows: Sequence[LabelledRow], policy: Policy, tokens: Sequence[Tokens], index: _Index, min_support: float,
         max_edits: int, max_rounds: int) -> tuple[Policy, list[Edit]]:
    applied: list[Edit] = []
    for _ in range(max_rounds if max_edits > 0 else 0):
        bench = _Workbench(rows, policy, tokens, index)
        used: set[int] = set()
        chosen: list[Edit] = []
        for c, _ in bench.candidates(min_support):
            if used.intersection(c.touched) or any(e.term == c.edit.term for e in chosen):
                continue
            s = bench.measure(c)
            if _worth(s):
                chosen.append(c.edit)
                used.update(c.touched)
                if len(applied) + len(chosen) == max_edits:
                    break
        if not chosen:
            break
        policy = apply_edits(policy, chosen)
        applied.extend(chosen)
        if len(applied) >= max_edits:
            break
    return policy, applied
