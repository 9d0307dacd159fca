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
from collections.abc import Callable, Iterable, Mapping, Sequence
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

from coachctx.errors import PolicyError
from coachctx.fragments import FRAGMENT_NAMES

_T = TypeVar("_T")
_MISSING: Final = object()

DEFAULT_POLICY_PATH: Final = Path(__file__).resolve().parent.parent / "policy" / "default.yaml"
MAX_POLICY_BYTES: Final = 512 * 1024
MAX_YAML_DEPTH: Final = 24
MAX_YAML_ALIASES: Final = 64

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
Term = Annotated[str, Field(min_length=1, max_length=80)]
EXACT_MARK: Final = "="
"""A term written `=allenamento` matches those words as written (accents folded), not their stem:
for a word whose stem is an everyday word elsewhere (Italian "allenamento" stems to German "allen")."""
Weight = Annotated[float, Field(gt=0, le=100)]

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
    max_words: Annotated[int, Field(gt=0, le=2000)]

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
    confident_threshold: Annotated[float, Field(ge=0)] = 1.0
    margin: Annotated[float, Field(ge=0)] = 1.0


class Modifier(_Strict):
    """One scope action. `reason` travels into the Decision verbatim."""

    action: Literal["promote", "demote", "drop"]
    fragment: FragmentName
    reason: Annotated[str, Field(min_length=3, max_length=300)]
    intents: list[IntentName] | None = None
    """Only for these intents (routed intent or any contender); all intents when absent."""


class ScopePolicy(_Strict):
    terms: dict[Language, list[Term]] = {}
    modifiers: list[Modifier] = []

    @model_validator(mode="after")
    def _one_action_per_fragment(self) -> ScopePolicy:
        seen: dict[str, str] = {}
        for m in self.modifiers:
            if m.fragment in seen and m.intents is None:
                raise ValueError(f"{m.fragment!r} has two actions ({seen[m.fragment]} and {m.action})")
            seen[m.fragment] = m.action
        return self


class Policy(_Strict):
    """The whole policy document. All six intents must be present."""

    routing: Routing = Routing()
    tiers: dict[Annotated[str, Field(pattern=r"^[a-z][a-z0-9_-]{0,31}$")], Annotated[int, Field(ge=0, le=1_000_000)]]
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
        for where, language, term in ((w, lang, t) for w, by_language in self.term_lists()
                                      for lang, terms in by_language.items() for t in terms):
            exact = term.startswith(EXACT_MARK)
            if not term.removeprefix(EXACT_MARK).strip():
                raise ValueError(f"{where}.{language}: the term {term!r} has no words")
            if exact and LANGUAGES[language] in ("substring", "prefix"):
                raise ValueError(f"{where}.{language}: {term!r}: exact terms ({EXACT_MARK}word) are for spaced "
                                 f"scripts; {language} terms already match as written")
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


class _GuardedLoader(_NoDuplicateKeys, yaml.SafeLoader):
    """SafeLoader that refuses deep nesting and alias bombs before anything is built."""

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self._depth = 0
        self._aliases = 0

    def compose_node(self, parent: Any, index: Any) -> Any:
        if self.check_event(yaml.AliasEvent):
            self._aliases += 1
            if self._aliases > MAX_YAML_ALIASES:
                mark = self.peek_event().start_mark
                raise yaml.YAMLError(f"more than {MAX_YAML_ALIASES} aliases (line {mark.line + 1})")
        self._depth += 1
        try:
            if self._depth > MAX_YAML_DEPTH:
                mark = self.peek_event().start_mark
                raise yaml.YAMLError(f"nested deeper than {MAX_YAML_DEPTH} levels (line {mark.line + 1})")
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1


_CBase: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
YAML_DUMPER: Any = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
"""libyaml's emitter writes the same text as the pure-Python one, four times faster."""


class _FastLoader(_NoDuplicateKeys, _CBase):  # type: ignore[misc,valid-type]
    """The same rules on libyaml's parser: `parse_yaml` runs it after `_within_limits` checked the
    event stream, and falls back to `_GuardedLoader` (whose messages the tests pin) on any error."""


def _within_limits(text: str) -> bool:
    """Depth and alias limits on libyaml's event stream, before anything is built."""
    depth = aliases = 0
    for event in yaml.parse(text, Loader=_CBase):
        if isinstance(event, yaml.AliasEvent):
            aliases += 1
            if aliases > MAX_YAML_ALIASES or depth + 1 > MAX_YAML_DEPTH:
                return False
        elif isinstance(event, yaml.CollectionStartEvent):
            depth += 1
            if depth > MAX_YAML_DEPTH:
                return False
        elif isinstance(event, yaml.CollectionEndEvent):
            depth -= 1
        elif isinstance(event, yaml.ScalarEvent) and depth + 1 > MAX_YAML_DEPTH:
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


def _fast_load(text: str) -> tuple[bool, Any]:
    """(True, data) when libyaml reads the document within the limits; (False, None) otherwise,
    so the pure-Python loader can say exactly what is wrong."""
    if _CBase is yaml.SafeLoader:
        return False, None
    try:
        if not _within_limits(text):
            return False, None
        loader = _FastLoader(text)
        try:
            return True, loader.get_single_data()
        finally:
            loader.dispose()
    except Exception:  # any trouble: the pure-Python loader reads it again and says what is wrong
        return False, None


def read_policy_text(path: str | Path) -> str:
    p = Path(path)
    try:
        size = p.stat().st_size
        if size > MAX_POLICY_BYTES:
            raise PolicyError(str(p), [("", f"file is {size} bytes; the limit is {MAX_POLICY_BYTES}")])
        return p.read_text(encoding="utf-8")
    except PolicyError:
        raise
    except FileNotFoundError as e:
        raise PolicyError(str(p), [("", "no such file")]) from e
    except IsADirectoryError as e:
        raise PolicyError(str(p), [("", "is a directory, expected a YAML file")]) from e
    except UnicodeDecodeError as e:
        line = e.object[: e.start].count(b"\n") + 1
        raise PolicyError(str(p), [(f"line {line}", f"not UTF-8 text (byte {e.start})")]) from e
    except OSError as e:
        raise PolicyError(str(p), [("", f"cannot read: {e.strerror}")]) from e


def parse_yaml(text: str, source: str = "<draft>") -> Any:
    """`yaml.safe_load` with size, depth and alias limits; tags that build objects are refused."""
    if len(text.encode("utf-8", "surrogatepass")) > MAX_POLICY_BYTES:
        raise PolicyError(source, [("", f"document is larger than {MAX_POLICY_BYTES} bytes")])
    done, data = _fast_load(text)
    if done:
        return data
    try:
        loader = _GuardedLoader(text)
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
    return validate_policy(parse_yaml(text, source), source)


def load_policy(path: str | Path | None = None) -> Policy:
    """Read and validate a policy file (the checked-in default when `path` is None)."""
    p = Path(path) if path is not None else DEFAULT_POLICY_PATH
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
            out += ("." if out else "") + str(part)
    return out


def _kind(expected: Sequence[str]) -> str:
    for kind, options in _OPTIONS.items():
        if set(expected) <= set(options):
            return kind
    return "value"


def _did_you_mean(value: Any, options: Sequence[str]) -> str:
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
        return path, f"unknown key {loc[-1]!r}{_did_you_mean(loc[-1], known)}" + (
            f"; allowed: {', '.join(known)}" if known else "")
    if kind == "literal_error":
        expected = [s.strip().strip("'") for s in str(ctx.get("expected", "")).replace(" or ", ",").split(",")]
        expected = [e for e in expected if e]
        what = _kind(expected)
        return path, f"unknown {what} {value!r}{_did_you_mean(value, expected)}"
    if kind == "missing":
        return path, "required key is missing"
    if kind in ("greater_than", "greater_than_equal", "less_than_equal", "less_than"):
        return path, f"{err['msg'].lower()}, got {value!r}"
    if kind == "value_error":
        msg = str(ctx.get("error", err["msg"]))
        return path, msg
    if kind.endswith("_type") or kind.endswith("_parsing"):
        return path, f"{err['msg'].lower()}, got {type(value).__name__} {_short(value)}"
    return path, f"{err['msg']}, got {_short(value)}"


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."
