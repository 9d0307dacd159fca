"""The policy: intents, vocabulary, routing thresholds, scope modifiers, tiers, clinical terms.

Reading a file (`read_policy_text`), parsing YAML safely (`parse_yaml`) and validating
(`validate_policy`) are separate steps; `load_policy` chains them. Every failure becomes a
`PolicyError` naming the source, the path inside the document (`intents.injury.primary[1]`)
and the offending value, with a "did you mean" for near-miss names.
"""

from __future__ import annotations

import difflib
import hashlib
import json
import re
import reprlib
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Final, Literal, TypeVar

import yaml
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    ValidationError,
    field_validator,
    model_validator,
)

from coachctx.engine.fragments import FRAGMENT_NAMES
from coachctx.engine.text import fold_accents
from coachctx.errors import PolicyError
from coachctx.reading import ReadError, control_character, decode_utf8, file_path, printable, read_text

_T = TypeVar("_T")
_MISSING: Final = object()

DEFAULT_POLICY_PATH: Final = Path(__file__).resolve().parents[2] / "policy" / "default.yaml"
MAX_POLICY_BYTES: Final = 512 * 1024
MAX_YAML_DEPTH: Final = 24
MAX_YAML_ALIASES: Final = 64
MAX_YAML_NODES: Final = 100_000
"""Scalars and collections after every alias is expanded: the default policy has about 19,000,
and a document that expands past this limit is refused before anything is built from it."""
MAX_YAML_INT_DIGITS: Final = 100
"""Far past any range a policy allows, so pydantic still names the range; Python itself gives up at 4,300."""
MAX_TERMS: Final = 22_000
"""Terms in all term lists together (the default policy has about 18,100)."""
_PHRASE_WORDS: Final = 6
"""`routing.MAX_PHRASE_WORDS`: the words of a term that routing files (and matches)."""
MAX_TERM_WORK: Final = 70_000
"""Matching work of all terms together: each term counts its phrase keys (a word written with
accents is filed twice, so a phrase of six such words 64 times) times the parts of its phrase
that lint compares (21 for six words). The default policy needs about 49,000; with `MAX_TERMS`
this keeps the worst accepted policy checking in under 2 s."""
MAX_UNSPACED_TERM_CHARS: Final = 16
"""Japanese, Chinese and Korean terms match as substrings or prefixes, and lint compares every
part of each with every other term: 16 characters is a long phrase in those scripts (the default's
longest is 9)."""
MAX_BUDGET: Final = 1_000_000
"""The largest token budget: a tier's or a custom one."""
MAX_ROUTING_VALUE: Final = 10_000.0

INTENTS: Final[tuple[str, ...]] = ("training", "injury", "recovery", "nutrition", "conditions", "general")
SCOPES: Final[tuple[str, ...]] = ("today", "week", "months")
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
Term = Annotated[str, Field(strict=True, min_length=1, max_length=80)]
EXACT_MARK: Final = "="
"""A term written `=allenamento` matches those words as written (accents folded), not their stem:
for a word whose stem is an everyday word elsewhere (Italian "allenamento" stems to German "allen")."""
Weight = Annotated[float, Field(strict=True, allow_inf_nan=False, gt=0, le=100)]
"""Strict: an unquoted `yes`/`on` is a boolean in YAML, never the weight 1."""

assert set(FragmentName.__args__) == set(FRAGMENT_NAMES)  # type: ignore[attr-defined]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


def _no_duplicates(values: Sequence[str]) -> Sequence[str]:
    seen: set[str] = set()
    for value in values:
        if value in seen:
            raise ValueError(f"lists {value!r} twice")
        seen.add(value)
    return values


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

    def requests(self, fragment: str) -> str | None:
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


class ScopePolicy(_Strict):
    terms: dict[Language, list[Term]] = {}
    modifiers: list[Modifier] = []

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

    _derived: dict[str, Any] = PrivateAttr(default_factory=dict)

    @model_validator(mode="after")
    def _complete(self) -> Policy:
        missing = [i for i in INTENTS if i not in self.intents]
        if missing:
            raise ValueError(f"intents: missing intent(s) {', '.join(missing)}")
        if not self.tiers:
            raise ValueError("tiers: at least one tier is needed")
        work = 0
        for count, (where, language, term) in enumerate(((w, lang, t) for w, by_language in self.term_lists()
                                                         for lang, terms in by_language.items() for t in terms), 1):
            exact = term.startswith(EXACT_MARK)
            bad = control_character(term)
            if bad is not None:
                # clinical terms are quoted in the system prompt: a newline there starts a new line
                raise ValueError(f"{where}.{language}: the term {term!r} holds the control character {bad}; "
                                 "a term is plain text on one line")
            if not _has_words(term.removeprefix(EXACT_MARK)):
                raise ValueError(f"{where}.{language}: the term {term!r} has no words")
            if exact and LANGUAGES[language] in ("substring", "prefix"):
                raise ValueError(f"{where}.{language}: {term!r}: exact terms ({EXACT_MARK}word) are for spaced "
                                 f"scripts; {language} terms already match as written")
            if LANGUAGES[language] in ("substring", "prefix") and len(term) > MAX_UNSPACED_TERM_CHARS:
                raise ValueError(f"{where}.{language}: the term {term!r} has {len(term)} characters; "
                                 f"{language} terms may have at most {MAX_UNSPACED_TERM_CHARS}")
            if count > MAX_TERMS:
                raise ValueError(f"the policy has more than {MAX_TERMS} terms (the limit); split the vocabulary "
                                 "or drop terms that match the same words")
            work += _term_work(term, language)
            if work > MAX_TERM_WORK:
                raise ValueError(f"the terms need more than {MAX_TERM_WORK} units of matching work (the limit; a "
                                 "phrase of n words costs n(n+1)/2, doubled for each accented word), reached at "
                                 f"{where}.{language}: {term!r}")
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

    def intent(self, name: str) -> IntentPolicy:
        return self.intents[name]  # type: ignore[index]

    @property
    def digest(self) -> str:
        return self.derived("digest", policy_digest)

    def derived(self, key: str, build: Callable[[Policy], _T]) -> _T:
        """A value computed once from this (immutable) policy: compiled matchers, the digest."""
        # straight to pydantic's private store: `self._derived` goes through BaseModel.__getattr__,
        # about 4 µs a call, several times per decision
        cache = self.__pydantic_private__["_derived"]  # type: ignore[index]
        found = cache.get(key, _MISSING)
        if found is _MISSING:
            found = cache[key] = build(self)
        return found  # type: ignore[no-any-return]


def _has_words(text: str) -> bool:
    """Letters or digits, not only spaces, punctuation or invisible characters."""
    return any(ch.isalnum() for ch in text)


_WORDS: Final = re.compile(r"[^\W_]+")


def _term_work(term: str, language: str) -> int:
    """The phrase keys `routing.TermMatcher` files a term under (each word of a spaced script
    under its stem and, when it has accents, under its accent-folded stem too), times the parts
    of the phrase `lint` compares. Counted on words as a regex splits them: close to the
    tokeniser, and cheap enough to run on every term of every policy loaded."""
    if LANGUAGES[language] in ("substring", "prefix"):
        return 1
    words = _WORDS.findall(term.casefold())[:_PHRASE_WORDS]
    keys = 1
    if LANGUAGES[language] != "russian" and not term.isascii():
        for word in words:
            if not word.isascii() and fold_accents(word) != word:
                keys *= 2
    return keys * max(1, len(words) * (len(words) + 1) // 2)


def policy_digest(policy: Policy) -> str:
    """A short content hash: equal policies have equal digests whatever their YAML layout."""
    data = policy.model_dump(mode="json")
    if data.get("unmatched") is None:  # a policy written before the section existed keeps its digest
        data.pop("unmatched", None)
    if not data.get("fragment_terms"):  # nor does one written before fragment terms existed
        data.pop("fragment_terms", None)
    canonical = json.dumps(data, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(canonical.encode()).hexdigest()[:12]


# --- reading ---------------------------------------------------------------------------------


class _NoDuplicateKeys:
    """PyYAML keeps the last of two equal keys without a word; a policy refuses them."""

    def construct_mapping(self, node: Any, deep: bool = False) -> Any:
        # PyYAML keeps the last of two equal keys without a word: a second `training:` would
        # silently replace the first. Merge keys (`<<`) may still be overridden, as YAML intends.
        if isinstance(node, yaml.MappingNode):
            first_line: dict[Any, int] = {}
            for key_node, _ in node.value:
                if key_node.tag == "tag:yaml.org,2002:merge":
                    continue
                key = self.construct_object(key_node, deep=deep)  # type: ignore[attr-defined]
                try:
                    seen = key in first_line
                except TypeError:  # unhashable key: SafeConstructor reports it
                    continue
                if seen:
                    raise yaml.constructor.ConstructorError(
                        "while constructing a mapping", node.start_mark,
                        f"found duplicate key {key!r} (first on line {first_line[key] + 1})", key_node.start_mark)
                first_line[key] = key_node.start_mark.line
        return super().construct_mapping(node, deep=deep)  # type: ignore[misc]


@dataclass(frozen=True)
class YamlLimits:
    """What a YAML document may cost before anything is built from it."""

    max_bytes: int = MAX_POLICY_BYTES
    max_depth: int = MAX_YAML_DEPTH
    max_aliases: int = MAX_YAML_ALIASES
    max_nodes: int = MAX_YAML_NODES
    """Scalars and collections with every alias expanded: 57 aliases can stand for 885 MB."""


POLICY_YAML: Final = YamlLimits()


def _bounded_int(loader: yaml.SafeLoader, node: yaml.ScalarNode) -> Any:
    """Python refuses to turn more than 4,300 digits into an int, with a ValueError no YAML
    handler expects; no number in a policy or a question set needs more than `MAX_YAML_INT_DIGITS`."""
    digits = sum(ch.isdigit() for ch in str(node.value))
    if digits > MAX_YAML_INT_DIGITS:
        raise yaml.constructor.ConstructorError(
            None, None, f"a number of {digits} digits; the limit is {MAX_YAML_INT_DIGITS}", node.start_mark)
    return yaml.SafeLoader.construct_yaml_int(loader, node)


class _GuardedLoader(_NoDuplicateKeys, yaml.SafeLoader):
    """SafeLoader that refuses deep nesting, alias bombs and documents that expand past a node
    count before anything is built."""

    def __init__(self, stream: str, limits: YamlLimits = POLICY_YAML) -> None:
        super().__init__(stream)
        self._limits = limits
        self._depth = 0
        self._aliases = 0
        self._nodes = 0
        self._expanded: dict[int, int] = {}
        """id(node) -> its size with aliases expanded, for the aliases that point at it."""

    def _count(self, n: int) -> None:
        self._nodes += n
        if self._nodes > self._limits.max_nodes:
            mark = self.peek_event().start_mark if self.check_event() else None
            line = f" (line {mark.line + 1})" if mark is not None else ""
            raise yaml.YAMLError(f"expands to more than {self._limits.max_nodes} nodes{line}")

    def compose_node(self, parent: Any, index: Any) -> Any:
        if self.check_event(yaml.AliasEvent):
            self._aliases += 1
            if self._aliases > self._limits.max_aliases:
                mark = self.peek_event().start_mark
                raise yaml.YAMLError(f"more than {self._limits.max_aliases} aliases (line {mark.line + 1})")
            node = super().compose_node(parent, index)
            self._count(self._expanded.get(id(node), 1))
            return node
        self._depth += 1
        try:
            if self._depth > self._limits.max_depth:
                mark = self.peek_event().start_mark
                raise yaml.YAMLError(f"nested deeper than {self._limits.max_depth} levels (line {mark.line + 1})")
            before = self._nodes
            self._count(1)
            node = super().compose_node(parent, index)
            self._expanded[id(node)] = self._nodes - before
            return node
        finally:
            self._depth -= 1


_CBase: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
YAML_DUMPER: Any = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
"""libyaml's emitter writes the same text as the pure-Python one, four times faster."""


class _FastLoader(_NoDuplicateKeys, _CBase):  # type: ignore[misc,valid-type]
    """The same rules on libyaml's parser: `parse_yaml` runs it after `_within_limits` checked the
    event stream, and falls back to `_GuardedLoader` (whose messages the tests pin) on any error."""


def _within_limits(text: str, limits: YamlLimits) -> bool:
    """Depth, alias and expanded-size limits on libyaml's event stream, before anything is built."""
    depth = aliases = nodes = 0
    anchored: dict[str, int] = {}
    opened: list[tuple[str | None, int]] = []
    for event in yaml.parse(text, Loader=_CBase):
        if isinstance(event, yaml.AliasEvent):
            aliases += 1
            nodes += anchored.get(event.anchor or "", 1)
            if aliases > limits.max_aliases or depth + 1 > limits.max_depth:
                return False
        elif isinstance(event, yaml.CollectionStartEvent):
            depth += 1
            opened.append((event.anchor, nodes))
            nodes += 1
            if depth > limits.max_depth:
                return False
        elif isinstance(event, yaml.CollectionEndEvent):
            depth -= 1
            anchor, before = opened.pop()
            if anchor is not None:
                anchored[anchor] = nodes - before
        elif isinstance(event, yaml.ScalarEvent):
            nodes += 1
            if event.anchor is not None:
                anchored[event.anchor] = 1
            if depth + 1 > limits.max_depth:
                return False
        if nodes > limits.max_nodes:
            return False
    return True


def _refuse_tag(loader: yaml.SafeLoader, node: yaml.Node) -> Any:
    raise yaml.constructor.ConstructorError(
        None, None, f"the tag {node.tag!r} is not allowed in a policy (use plain lists, mappings, text and numbers)",
        node.start_mark)


# Safe, but not plain data: a `!!set` would give primary an order that changes per process.
for _tag in ("binary", "set", "omap", "pairs"):
    _GuardedLoader.add_constructor(f"tag:yaml.org,2002:{_tag}", _refuse_tag)
    _FastLoader.add_constructor(f"tag:yaml.org,2002:{_tag}", _refuse_tag)
def _checked(tag: str, construct: Callable[[Any, Any], Any]) -> Callable[[Any, Any], Any]:
    """PyYAML's scalar constructors raise ValueError, KeyError or AttributeError for a value that
    does not fit its tag (`2024-13-45`, `!!int abc`, `!!bool maybe`): a YAML error on its line instead."""

    def construct_checked(loader: Any, node: Any) -> Any:
        try:
            return construct(loader, node)
        except (ValueError, KeyError, AttributeError, TypeError, OverflowError) as e:
            raise yaml.constructor.ConstructorError(
                None, None, f"{_short(node.value)} is not a valid {tag} ({type(e).__name__})", node.start_mark) from e

    return construct_checked


for _loader in (_GuardedLoader, _FastLoader):
    _loader.add_constructor("tag:yaml.org,2002:int", _checked("int", _bounded_int))
    for _name, _construct in (("float", yaml.SafeLoader.construct_yaml_float),
                              ("bool", yaml.SafeLoader.construct_yaml_bool),
                              ("timestamp", yaml.SafeLoader.construct_yaml_timestamp)):
        _loader.add_constructor(f"tag:yaml.org,2002:{_name}", _checked(_name, _construct))


def _fast_load(text: str, limits: YamlLimits) -> tuple[bool, Any]:
    """(True, data) when libyaml reads the document within the limits; (False, None) otherwise,
    so the pure-Python loader can say exactly what is wrong."""
    if _CBase is yaml.SafeLoader:
        return False, None
    try:
        if not _within_limits(text, limits):
            return False, None
        loader = _FastLoader(text)
        try:
            return True, loader.get_single_data()
        finally:
            loader.dispose()
    except Exception:  # any trouble: the pure-Python loader reads it again and says what is wrong
        return False, None


def read_policy_text(path: str | Path) -> str:
    """The file's text: a regular file of at most `MAX_POLICY_BYTES`, strict UTF-8."""
    try:
        return read_text(path, MAX_POLICY_BYTES, expected="a YAML file")
    except ReadError as e:
        raise PolicyError(e.source, [(e.where, e.problem)]) from e


def parse_yaml(text: str, source: str = "<draft>", limits: YamlLimits = POLICY_YAML) -> Any:
    """`yaml.safe_load` with size, depth, alias and expanded-size limits; tags that build
    objects are refused."""
    if len(text.encode("utf-8", "surrogatepass")) > limits.max_bytes:
        raise PolicyError(source, [("", f"document is larger than {limits.max_bytes} bytes")])
    done, data = _fast_load(text, limits)
    if done:
        return data
    try:
        loader = _GuardedLoader(text, limits)
        try:
            return loader.get_single_data()
        finally:
            loader.dispose()
    except yaml.MarkedYAMLError as e:
        mark = e.problem_mark or e.context_mark
        where = f"line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        raise PolicyError(source, [(where, f"YAML syntax error: {e.problem or e.context}")]) from e
    except yaml.reader.ReaderError as e:  # a character YAML refuses (NUL, BEL, ...): say on which line
        line = text[: e.position].count("\n") + 1
        char = f"#x{e.character:04x}" if isinstance(e.character, int) else repr(e.character)
        raise PolicyError(source, [(f"line {line}", f"YAML error: unacceptable character {char}: {e.reason}")]) from e
    except yaml.YAMLError as e:
        raise PolicyError(source, [("", f"YAML error: {e}")]) from e
    except RecursionError as e:
        raise PolicyError(source, [("", "YAML nested too deeply")]) from e


def validate_policy(data: Any, source: str = "<draft>") -> Policy:
    if data is None:
        raise PolicyError(source, [("", "the document is empty")])
    if not isinstance(data, Mapping):
        raise PolicyError(source, [("", f"expected a mapping at the top level, got {type(data).__name__}")])
    try:
        return Policy.model_validate(data)
    except ValidationError as e:
        raise PolicyError(source, [_describe(err, data) for err in e.errors()]) from e


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


def policy_to_yaml(policy: Policy) -> str:
    """The policy as YAML a coach can read; `parse_policy` of it gives an equal policy."""
    return policy.derived("yaml", _to_yaml)


def _to_yaml(policy: Policy) -> str:
    data = policy.model_dump(mode="json", exclude_defaults=False)
    if data.get("unmatched") is None:
        data.pop("unmatched", None)
    if not data.get("fragment_terms"):
        data.pop("fragment_terms", None)
    for scope in data.get("scopes", {}).values():
        for m in scope.get("modifiers", []):
            if m.get("intents") is None:
                m.pop("intents", None)
    return yaml.dump(data, Dumper=YAML_DUMPER, sort_keys=False, allow_unicode=True, width=100, default_flow_style=None)


# --- error wording ---------------------------------------------------------------------------

_OPTIONS: Final[Mapping[str, Sequence[str]]] = {
    "fragment": FRAGMENT_NAMES,
    "intent": INTENTS,
    "scope": SCOPES,
    "language": tuple(LANGUAGES),
}


def format_path(loc: Sequence[Any]) -> str:
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            # a key is data: 400 kB of it, or a newline in it, must not become the error's path
            text = printable(str(part))
            out += ("." if out else "") + (text if len(text) <= 60 else text[:57] + "...")
    return out


def _kind(expected: Sequence[str]) -> str:
    for kind, options in _OPTIONS.items():
        if set(expected) <= set(options):
            return kind
    return "value"


def _did_you_mean(value: Any, options: Sequence[str]) -> str:
    if not isinstance(value, str) or len(value) > 100:
        return ""
    close = difflib.get_close_matches(str(value), list(options), n=1, cutoff=0.6)
    return f" (did you mean {close[0]!r}?)" if close else ""


def _model_at(loc: Sequence[Any]) -> type[BaseModel] | None:
    """The model class a location points into, for suggesting key names."""
    model: type[BaseModel] | None = Policy
    steps = list(loc)
    while steps and model is not None:
        step = steps.pop(0)
        if model is Policy and step == "unmatched":
            model = UnmatchedPolicy
        elif model is Policy and step in ("intents", "scopes") and steps:
            steps.pop(0)
            model = IntentPolicy if step == "intents" else ScopePolicy
        elif model is ScopePolicy and step == "modifiers" and steps:
            steps.pop(0)
            model = Modifier
        elif model is Policy and step == "routing":
            model = Routing
        else:
            return model if not steps else None
    return model


def _describe(err: Mapping[str, Any], data: Any) -> tuple[str, str]:
    path, message = _describe_error(err, data)
    if err["loc"] and err["loc"][-1] == "[key]" and isinstance(err.get("input"), bool):
        message += " (YAML reads an unquoted yes/no/on/off as true/false: quote the key, e.g. 'no')"
    elif isinstance(err.get("input"), bool) and err["type"] in ("int_type", "float_type"):
        message += " (YAML reads an unquoted yes/no/on/off/true/false as a boolean, not a number)"
    elif isinstance(err.get("input"), str) and err["type"] in ("int_type", "float_type"):
        message += " (a number is written without quotes)"
    return path, message


def _describe_error(err: Mapping[str, Any], data: Any) -> tuple[str, str]:
    loc = list(err["loc"])
    kind = err["type"]
    value = err.get("input")
    if loc and loc[-1] == "[key]":
        loc = loc[:-1]
        if loc and not isinstance(value, str):
            loc[-1] = str(value)  # pydantic reports a key of True/False as 1/0: name it as written
        else:
            value = loc[-1] if loc else value
    path = format_path(loc)
    ctx = err.get("ctx") or {}
    if kind == "extra_forbidden":
        model = _model_at(loc[:-1])
        known = list(model.model_fields) if model else []
        return path, f"unknown key {_short(loc[-1])}{_did_you_mean(loc[-1], known)}" + (
            f"; allowed: {', '.join(known)}" if known else "")
    if kind == "literal_error":
        expected = [s.strip().strip("'") for s in str(ctx.get("expected", "")).replace(" or ", ",").split(",")]
        expected = [e for e in expected if e]
        what = _kind(expected)
        return path, f"unknown {what} {_short(value)}{_did_you_mean(value, expected)}"
    if kind == "missing":
        return path, "required key is missing"
    if kind in ("greater_than", "greater_than_equal", "less_than_equal", "less_than"):
        return path, f"{err['msg'].lower()}, got {_short(value)}"
    if kind == "value_error":
        msg = str(ctx.get("error", err["msg"]))
        return path, msg
    if kind.endswith("_type") or kind.endswith("_parsing"):
        return path, f"{err['msg'].lower()}, got {type(value).__name__} {_short(value)}"
    return path, f"{err['msg']}, got {_short(value)}"


_REPR: Final = reprlib.Repr()
_REPR.maxlevel, _REPR.maxlist, _REPR.maxdict, _REPR.maxstring, _REPR.maxother = 2, 4, 4, 50, 50


def _short(value: Any) -> str:
    # reprlib never builds the whole repr: a value YAML aliases made huge stays a short line
    text = _REPR.repr(value)
    return text if len(text) <= 60 else text[:57] + "..."
