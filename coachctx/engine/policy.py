"""The policy: intents, vocabulary, routing thresholds, scope modifiers, tiers, clinical terms,
referral terms.

Reading a file (`read_policy_text`), parsing YAML safely (`policy_loading.parse_yaml`) and validating
(`validate_policy`) are separate steps; `load_policy` chains them. Every failure becomes a
`PolicyError` naming the source, the path inside the document (`intents.injury.primary[1]`)
and the offending value, with a "did you mean" for near-miss names. The canonical forms
(`policy_digest`, `policy_to_yaml`) are in `policy_canonical`.
"""

from __future__ import annotations

import copy
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Annotated, Any, Final, Literal, TypeVar

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    ValidationError,
    field_validator,
    model_validator,
)

from coachctx.engine.collector import collector_paused
from coachctx.engine.fragments import FRAGMENT_NAMES
from coachctx.engine.policy_canonical import policy_digest as policy_digest  # re-exported
from coachctx.engine.policy_canonical import policy_to_yaml as policy_to_yaml  # re-exported
from coachctx.engine.policy_errors import describe_error
from coachctx.engine.policy_loading import parse_yaml
from coachctx.engine.policy_loading import read_policy_text as read_policy_text  # re-exported
from coachctx.engine.term_text import EXACT_MARK as EXACT_MARK  # re-exported
from coachctx.engine.term_text import matched_as, never_matches, same_term, term_problem, term_work
from coachctx.errors import PolicyError
from coachctx.reading import ReadError, control_character, decode_utf8, file_path, shown

_T = TypeVar("_T")
_MISSING: Final = object()

DEFAULT_POLICY_PATH: Final = Path(__file__).resolve().parents[2] / "policy" / "default.yaml"
MAX_TERMS: Final = 36_000
"""Terms in all term lists together (the default policy has 34,748; `check-policy` shows the count)."""
MAX_TERM_WORK: Final = 125_000
"""Matching work of all terms: each term's phrase keys (a word with accents is filed twice, a phrase
of six such words 64 times) times the parts of its phrase lint compares (21 for six words). The
default needs about 116,000; with `MAX_TERMS` the worst accepted policy checks in about 2 s."""
MAX_UNSPACED_TERM_CHARS: Final = 16
"""Japanese, Chinese and Korean terms match as substrings or prefixes, and lint compares every part
of each with every other term: 16 characters is a long phrase there (the default's longest is 9)."""
MAX_BUDGET: Final = 1_000_000
"""The largest token budget: a tier's or a custom one."""
MAX_ROUTING_VALUE: Final = 10_000.0

INTENTS: Final[tuple[str, ...]] = ("training", "injury", "recovery", "nutrition", "conditions", "general")
SCOPES: Final[tuple[str, ...]] = ("today", "week", "months")
DEFAULT_TIER: Final = "paid"
"""The tier a decision takes when none is given: `select()`, `explain`, `impact`, the playground."""
CUSTOM_TIER: Final = "custom"
"""What a decision with a budget of its own reports as its tier (`--budget`): no policy tier's name."""
LANGUAGES: Final[Mapping[str, str]] = {
    # code -> how its terms match: a Snowball stemmer name, "word" (whole words, accents folded:
    # Vietnamese, whose syllables do not inflect), "substring" (Han/Kana) or "prefix" (Hangul)
    "en": "english", "es": "spanish", "de": "german", "fr": "french", "pt": "portuguese",
    "it": "italian", "ru": "russian", "nl": "dutch", "sv": "swedish", "da": "danish",
    "no": "norwegian", "fi": "finnish", "pl": "polish", "tr": "turkish", "el": "greek",
    "ar": "arabic", "hi": "hindi", "id": "indonesian", "vi": "word",
    "ja": "substring", "zh": "substring", "ko": "prefix",
}

IntentName = Literal["training", "injury", "recovery", "nutrition", "conditions", "general"]
ScopeName = Literal["today", "week", "months"]
FragmentName = Literal[
    "athlete_profile", "chronotype", "training_block", "baseline_aerobic", "baseline_mobility",
    "baseline_strength", "readiness_training", "readiness_recovery", "readiness_nutrition",
    "readiness_injury", "conditions_today",
]
Language = Literal["en", "es", "de", "fr", "pt", "it", "ru", "nl", "sv", "da", "no", "fi", "pl", "tr", "el", "ar",
                   "hi", "id", "vi", "ja", "zh", "ko"]
MAX_TERM_CHARS: Final = 80
Term = Annotated[str, Field(strict=True, min_length=1, max_length=MAX_TERM_CHARS)]


def term_chars_limit(language: str) -> int:
    """The most characters a term of this language may have: `MAX_UNSPACED_TERM_CHARS` where terms
    match as substrings or word starts (Japanese, Chinese, Korean), else `MAX_TERM_CHARS`."""
    return MAX_UNSPACED_TERM_CHARS if LANGUAGES[language] in ("substring", "prefix") else MAX_TERM_CHARS


MAX_PROBLEMS_SHOWN: Final = 20
"""A policy with 40,000 unknown keys is named by its first problems, not 40,000 lines."""
MIN_WEIGHT: Final = 0.000001
"""Scores are kept to six decimals: a lighter weight would match and add nothing."""


def _shows_in_a_score(weight: float) -> float:
    if weight < MIN_WEIGHT:
        raise ValueError(f"{weight!r} is lighter than the smallest weight a score shows ({MIN_WEIGHT:f}: scores "
                         f"are kept to six decimals), so the term would match and add nothing")
    return weight


Weight = Annotated[float, Field(strict=True, allow_inf_nan=False, gt=0, le=100), AfterValidator(_shows_in_a_score)]
"""Strict: an unquoted `yes`/`on` is a boolean in YAML, never the weight 1."""



def _plain_text(term: str) -> str:
    problem = term_problem(term)
    if problem is not None:
        raise ValueError(problem)
    return term


def _no_duplicates(values: Sequence[str]) -> Sequence[str]:
    seen: set[str] = set()
    for value in values:
        if value in seen:
            raise ValueError(f"lists {value!r} twice")
        seen.add(value)
    return values


ReferralTerm = Annotated[str, Field(strict=True, min_length=1, max_length=80), AfterValidator(_plain_text)]
"""A word or phrase that refers the athlete to a professional, found in a reply, never in a question."""
ReferralTerms = Annotated[list[ReferralTerm], AfterValidator(_no_duplicates)]

assert set(FragmentName.__args__) == set(FRAGMENT_NAMES)  # type: ignore[attr-defined]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class IntentPolicy(_Strict):
    """What one intent asks for. Primary is never cut by the budget; secondary is."""

    primary: list[FragmentName]
    secondary: list[FragmentName] = []
    exclude: list[FragmentName] = []
    max_words: Annotated[int, Field(strict=True, gt=0, le=2000)]

    @field_validator("primary", "secondary", "exclude")
    @classmethod
    def _unique(cls, values: list[str]) -> list[str]:
        return list(_no_duplicates(values))

    @model_validator(mode="after")
    def _disjoint(self) -> IntentPolicy:
        for a, b in (("primary", "secondary"), ("primary", "exclude"), ("secondary", "exclude")):
            both = [f for f in getattr(self, a) if f in getattr(self, b)]
            if both:
                raise ValueError(f"{both[0]!r} is in both {a} and {b}")
        return self

    def requests(self, fragment: str) -> Literal["primary", "secondary"] | None:
        """`primary`, `secondary` or None."""
        if fragment in self.primary:
            return "primary"
        if fragment in self.secondary:
            return "secondary"
        return None


class UnmatchedPolicy(_Strict):
    """What a question may see when no term matched and no model answered: a safe set."""

    primary: list[FragmentName]
    secondary: list[FragmentName] = []

    @field_validator("primary", "secondary")
    @classmethod
    def _unique(cls, values: list[str]) -> list[str]:
        return list(_no_duplicates(values))

    @model_validator(mode="after")
    def _disjoint(self) -> UnmatchedPolicy:
        both = [f for f in self.primary if f in self.secondary]
        if both:
            raise ValueError(f"{both[0]!r} is in both primary and secondary")
        return self


class Routing(_Strict):
    confident_threshold: Annotated[float, Field(strict=True, allow_inf_nan=False, ge=0, le=MAX_ROUTING_VALUE)] = 1.0
    margin: Annotated[float, Field(strict=True, allow_inf_nan=False, ge=0, le=MAX_ROUTING_VALUE)] = 1.0


class Modifier(_Strict):
    """One scope action. `reason` travels into the Decision verbatim."""

    action: Literal["promote", "demote", "drop"]
    fragment: FragmentName
    reason: Annotated[str, Field(strict=True, min_length=3, max_length=300)]
    intents: list[IntentName] | None = None
    """Only for these intents (routed intent or any contender); all intents when absent."""

    @field_validator("reason")
    @classmethod
    def _one_line(cls, value: str) -> str:
        bad = control_character(value)
        if bad is not None:
            # the reason travels into the Decision, the CLI's table and the app verbatim
            raise ValueError(f"the reason holds the control character {bad}; write it on one line, as plain text")
        if not value.strip():
            raise ValueError("the reason is only whitespace")
        return value

    @field_validator("intents")
    @classmethod
    def _some_intents(cls, value: list[str] | None) -> list[str] | None:
        if value is not None and not value:
            raise ValueError("an empty list of intents would never apply; leave `intents` out for every intent")
        return value if value is None else list(_no_duplicates(value))


class ScopePolicy(_Strict):
    terms: dict[Language, list[Term]] = {}
    modifiers: list[Modifier] = []
    implied_by: Annotated[list[IntentName], AfterValidator(_no_duplicates)] = []
    """Intents whose questions are about this horizon when no scope's term matched (`infer_scope`)."""

    @model_validator(mode="after")
    def _one_action_per_fragment(self) -> ScopePolicy:
        # Two modifiers on one fragment whose intents overlap (no `intents` = every intent) would
        # be applied in list order, so the file's order would decide: refused whichever comes first.
        seen: dict[str, list[Modifier]] = {}
        for m in self.modifiers:
            mine = set(m.intents) if m.intents is not None else set(INTENTS)
            for earlier in seen.get(m.fragment, []):
                theirs = set(earlier.intents) if earlier.intents is not None else set(INTENTS)
                both = [i for i in INTENTS if i in mine & theirs]
                if both:
                    raise ValueError(f"{m.fragment!r} has two actions ({earlier.action} and {m.action}) for "
                                     f"{', '.join(both) if len(both) < len(INTENTS) else 'every intent'}")
            seen.setdefault(m.fragment, []).append(m)
        return self


class Policy(_Strict):
    """The whole policy document. All six intents must be present."""

    routing: Routing = Routing()
    tiers: dict[Annotated[str, Field(strict=True, pattern=r"^[a-z][a-z0-9_-]{0,31}$")],
                Annotated[int, Field(strict=True, ge=0, le=MAX_BUDGET)]]
    intents: dict[IntentName, IntentPolicy]
    unmatched: UnmatchedPolicy | None = None
    """The safe set for a question no term matched; without it such a question sees `general`'s."""
    vocabulary: dict[IntentName, dict[Language, dict[Term, Weight]]]
    scopes: dict[ScopeName, ScopePolicy] = {}
    clinical_terms: dict[Language, list[Term]] = {}
    fragment_terms: dict[FragmentName, dict[Language, list[Term]]] = {}
    """Words that name a fragment's topic ("deadlift", "night owl"): a question that uses one gets
    that fragment as a secondary ahead of the route's own, and no exclude withholds it."""
    referral_terms: dict[Language, ReferralTerms] = {}
    """Words that refer the athlete to a professional ("physiotherapist", "Arzt"): a reply to a
    clinical question should close with a sentence naming one. Replies are checked for them in
    every language listed; questions are never matched against them."""

    _derived: dict[str, Any] = PrivateAttr(default_factory=dict)

    @model_validator(mode="after")
    def _complete(self) -> Policy:
        if missing := [i for i in INTENTS if i not in self.intents]:
            raise ValueError(f"intents: missing intent(s) {', '.join(missing)}")
        if not self.tiers or CUSTOM_TIER in self.tiers:  # replay took a tier "custom" for a --budget
            raise ValueError("tiers: at least one tier is needed" if not self.tiers else f"tiers.{CUSTOM_TIER}: the "
                             "name is reserved for a decision given a budget of its own (--budget); name it otherwise")
        implied = [i for sp in self.scopes.values() for i in sp.implied_by]
        for twice in dict.fromkeys(i for i in implied if implied.count(i) > 1):
            raise ValueError(f"scopes: {twice!r} is in the implied_by of two scopes; a question has one horizon")
        work = 0
        spelled: dict[tuple[str, str, tuple[str, ...]], str] = {}
        """(where, language, the term as the matcher reads it: `matched_as`) -> the first spelling of it."""
        for count, (where, language, term) in enumerate(((w, lang, t) for w, by_language in self.term_lists()
                                                         for lang, terms in by_language.items() for t in terms), 1):
            exact = term.startswith(EXACT_MARK)
            problem = term_problem(term)
            if problem is not None:
                raise ValueError(f"{where}.{language}: {problem}")
            matched = matched_as(term, LANGUAGES[language])
            first = spelled.setdefault((where, language, matched), term)
            if first is not term:
                raise ValueError(f"{where}.{language}: {same_term(first, term)}")
            if exact and LANGUAGES[language] in ("substring", "prefix"):
                raise ValueError(f"{where}.{language}: {shown(term)}: exact terms ({EXACT_MARK}word) are for spaced "
                                 f"scripts; {language} terms already match as written")
            if len(term) > term_chars_limit(language):
                raise ValueError(f"{where}.{language}: the term {shown(term)} has {len(term)} characters; "
                                 f"{language} terms may have at most {term_chars_limit(language)}")
            dead = never_matches(term, language, LANGUAGES[language], matched)
            if dead is not None:
                raise ValueError(f"{where}.{language}: {dead}")
            if count > MAX_TERMS:
                raise ValueError(f"the policy has more than {MAX_TERMS} terms (the limit); split the vocabulary "
                                 "or drop terms that match the same words")
            work += term_work(term, LANGUAGES[language])
            if work > MAX_TERM_WORK:
                raise ValueError(f"the terms need more than {MAX_TERM_WORK} units of matching work (the limit; a "
                                 "phrase of n words costs n(n+1)/2, doubled for each accented word), reached at "
                                 f"{where}.{language}: {shown(term)}")
        return self

    def term_lists(self) -> list[tuple[str, Mapping[Any, Iterable[str]]]]:
        """Every term list matched against questions, as (where, language -> terms)."""
        return [*((f"vocabulary.{i}", v) for i, v in self.vocabulary.items()), ("clinical_terms", self.clinical_terms),
                *((f"scopes.{s}.terms", sp.terms) for s, sp in self.scopes.items()),
                *((f"fragment_terms.{f}", v) for f, v in self.fragment_terms.items())]

    def __eq__(self, other: object) -> bool:
        # Content decides: pydantic would also compare `_derived`, so a policy whose digest or
        # matchers were already built would differ from a fresh copy of the same document.
        if not isinstance(other, Policy):
            return NotImplemented
        return self.model_dump() == other.model_dump()

    __hash__ = None  # type: ignore[assignment]  # dict fields: a policy was never hashable anyway

    # A copy builds its own matchers and digest: `model_copy(update=...)` shared the memo, so a variant
    # decided with the original's tables and digest, and compiled tables cannot be pickled or deep-copied.
    def __copy__(self) -> Policy:
        return _without_derived(super().__copy__())

    def __deepcopy__(self, memo: dict[int, Any] | None = None) -> Policy:
        copied = type(self).__new__(type(self))  # as BaseModel.__deepcopy__, but the memo is not copied
        for name in ("__dict__", "__pydantic_extra__", "__pydantic_fields_set__"):
            object.__setattr__(copied, name, copy.deepcopy(getattr(self, name), memo))
        return _without_derived(copied)

    def __getstate__(self) -> dict[Any, Any]:
        return {**super().__getstate__(), "__pydantic_private__": {"_derived": {}}}

    def intent(self, name: str) -> IntentPolicy:
        return self.intents[name]  # type: ignore[index]

    @property
    def digest(self) -> str:
        return self.derived("digest", policy_digest)

    def derived(self, key: str, build: Callable[[Policy], _T]) -> _T:
        """A value computed once from this (immutable) policy: compiled matchers, the digest; once also
        when many threads ask at the same time (32 threads compiled a fresh policy 32 times: 26 s, 750 MB)."""
        # straight to pydantic's private store: `self._derived` goes through BaseModel.__getattr__,
        # about 4 µs a call, several times per decision
        cache = self.__pydantic_private__["_derived"]  # type: ignore[index]
        found = cache.get(key, _MISSING)
        if found is _MISSING:
            # re-entrant: a build asks for what it is built from; the collector paused (`collector`)
            with _BUILDING, collector_paused():
                found = cache.get(key, _MISSING)
                if found is _MISSING:
                    found = cache[key] = build(self)
        return found  # type: ignore[no-any-return]


_BUILDING: Final = threading.RLock()  # held while a derived value is built; one built is read without it


def _without_derived(policy: Policy) -> Policy:
    object.__setattr__(policy, "__pydantic_private__", {"_derived": {}})
    return policy


def validate_policy(data: Any, source: str = "<draft>") -> Policy:
    if data is None:
        raise PolicyError(source, [("", "the document is empty")])
    if not isinstance(data, Mapping):
        raise PolicyError(source, [("", f"expected a mapping at the top level, got {type(data).__name__}")])
    try:
        return Policy.model_validate(data)
    except ValidationError as e:
        errors = e.errors()
        problems = [describe_error(err, data) for err in errors[:MAX_PROBLEMS_SHOWN]]
        if len(errors) > MAX_PROBLEMS_SHOWN:
            problems.append(("", f"and {len(errors) - MAX_PROBLEMS_SHOWN} more problem(s); fix these and check again"))
        raise PolicyError(source, problems) from e


def parse_policy(text: str, source: str = "<draft>") -> Policy:
    if isinstance(text, bytes | bytearray):  # an upload as it arrived: strict UTF-8, like a file
        try:
            text = decode_utf8(bytes(text), source)
        except ReadError as e:
            raise PolicyError(source, [(e.where, e.problem)]) from e
    if not isinstance(text, str):
        raise PolicyError(source, [("", f"expected the policy's YAML text, got {type(text).__name__}")])
    return validate_policy(parse_yaml(text, source), source)


def load_policy(path: str | Path | None = None) -> Policy:
    """Read and validate a policy file (the checked-in default when `path` is None)."""
    try:
        p = file_path(path, "a YAML file") if path is not None else DEFAULT_POLICY_PATH
    except ReadError as e:
        raise PolicyError(e.source, [(e.where, e.problem)]) from e
    return parse_policy(read_policy_text(p), str(p))
