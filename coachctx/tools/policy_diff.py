"""A readable diff of two policies: what a coach changed, in the policy's own terms.

`diff_policies` returns a `PolicyDiff`, a flat tuple of typed `Change`s (section, subject,
path, kind, item, before, after) that the app can tabulate or filter; `render_diff` turns it
into text grouped by section and subject. Compared:

- intents: per intent, which fragments moved between primary / secondary / exclude (or were
  added or removed), reordering of primary and secondary (prompt and budget order), max_words;
- vocabulary: per intent and language, terms added, removed or re-weighted;
- scopes: scope terms per language, modifiers added, removed or changed, the intents that imply the scope;
- routing thresholds, tiers, clinical terms and fragment terms.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, Literal

from coachctx.engine.policy import INTENTS, SCOPES, Modifier, Policy

Section = Literal["routing", "tiers", "intents", "vocabulary", "scopes", "clinical_terms", "fragment_terms",
                  "referral_terms"]
ChangeKind = Literal["added", "removed", "changed", "moved", "reordered"]
ROLES: Final = ("primary", "secondary", "exclude")


@dataclass(frozen=True)
class Change:
    """One difference. `before`/`after` are None for an added/removed item."""

    section: Section
    subject: str
    """What the change belongs to: an intent, `injury (es)`, a scope, a tier, a language."""
    path: str
    """Where in the policy document, e.g. `intents.injury.primary` or `vocabulary.injury.es`."""
    kind: ChangeKind
    item: str
    """The fragment, term, key or modifier that changed."""
    before: Any
    after: Any

    def describe(self) -> str:
        """One line, without the section and subject it is listed under."""
        if self.section == "intents":
            if self.item == "max_words":
                return f"max_words: {self.before} -> {self.after}"
            if self.kind == "reordered":
                return f"{self.item} order: {', '.join(self.before)} -> {', '.join(self.after)}"
            if self.kind == "moved":
                return f"{self.item}: {self.before} -> {self.after}"
            if self.kind == "added":
                return f"+ {self.item} in {self.after}"
            return f"- {self.item} from {self.before}"
        if self.section == "vocabulary":
            if self.kind == "added":
                return f"+ {self.item!r} {self.after:g}"
            if self.kind == "removed":
                return f"- {self.item!r} (was {self.before:g})"
            return f"~ {self.item!r} {self.before:g} -> {self.after:g}"
        if self.section == "scopes" and self.path.endswith("implied_by"):
            return f"{'+' if self.kind == 'added' else '-'} implied by {self.item} questions with no scope term"
        if self.section == "scopes" and self.path.endswith("modifiers"):
            if self.kind == "added":
                return f"+ modifier {self.item}: {self.after['reason']!r}"
            if self.kind == "removed":
                return f"- modifier {self.item}"
            parts = [f"{k} {self.before[k]!r} -> {self.after[k]!r}" for k in ("action", "reason")
                     if self.before[k] != self.after[k]]
            return f"~ modifier {self.item}: {'; '.join(parts)}"
        if self.section in ("scopes", "clinical_terms", "fragment_terms", "referral_terms"):
            language = self.path.rsplit(".", 1)[-1]
            sign = "+" if self.kind == "added" else "-"
            return f"{sign} term ({language}) {self.item!r}"
        if self.kind == "added":
            return f"+ {self.item}: {self.after}"
        if self.kind == "removed":
            return f"- {self.item} (was {self.before})"
        return f"{self.item}: {_fmt(self.before)} -> {_fmt(self.after)}"

    def to_json(self) -> dict[str, Any]:
        return {"section": self.section, "subject": self.subject, "path": self.path, "kind": self.kind,
                "item": self.item, "before": self.before, "after": self.after, "text": self.describe()}


@dataclass(frozen=True)
class PolicyDiff:
    before_digest: str
    after_digest: str
    changes: tuple[Change, ...]

    @property
    def same(self) -> bool:
        return not self.changes

    def grouped(self) -> dict[Section, dict[str, list[Change]]]:
        """Changes by section, then subject, in document order."""
        out: dict[Section, dict[str, list[Change]]] = {}
        for c in self.changes:
            out.setdefault(c.section, {}).setdefault(c.subject, []).append(c)
        return out

    def to_json(self) -> dict[str, Any]:
        return {"before": self.before_digest, "after": self.after_digest, "same": self.same,
                "changes": [c.to_json() for c in self.changes]}


def diff_policies(before: Policy, after: Policy) -> PolicyDiff:
    changes: list[Change] = [*_routing(before, after), *_tiers(before, after), *_intents(before, after),
                             *_vocabulary(before, after), *_scopes(before, after), *_clinical(before, after),
                             *_fragment_terms(before, after), *_referral(before, after)]
    return PolicyDiff(before.digest, after.digest, tuple(changes))


def render_diff(diff: PolicyDiff, before_name: str = "before", after_name: str = "after") -> str:
    head = f"{before_name} ({diff.before_digest}) -> {after_name} ({diff.after_digest})"
    if diff.same:
        return f"{head}: no differences"
    lines = [f"{head}: {len(diff.changes)} change{'s' if len(diff.changes) != 1 else ''}"]
    for section, subjects in diff.grouped().items():
        lines.append(section.replace("_", " "))
        for subject, changes in subjects.items():
            if section in ("routing", "tiers"):
                lines += [f"  {c.describe()}" for c in changes]
                continue
            lines.append(f"  {subject}")
            lines += [f"    {c.describe()}" for c in changes]
    return "\n".join(lines)


# --- sections --------------------------------------------------------------------------------


def _fmt(value: Any) -> str:
    return f"{value:g}" if isinstance(value, float) else str(value)


def _routing(a: Policy, b: Policy) -> Iterable[Change]:
    for key in ("confident_threshold", "margin"):
        x, y = getattr(a.routing, key), getattr(b.routing, key)
        if x != y:
            yield Change("routing", "routing", f"routing.{key}", "changed", key, x, y)


def _tiers(a: Policy, b: Policy) -> Iterable[Change]:
    for tier in _keys(a.tiers, b.tiers):
        x, y = a.tiers.get(tier), b.tiers.get(tier)
        if x != y:
            yield Change("tiers", "tiers", f"tiers.{tier}", _kind(x, y), tier, x, y)


def _roles(policy: Policy, intent: str) -> dict[str, str]:
    ip = policy.intent(intent)
    return {f: role for role in ROLES for f in getattr(ip, role)}


def _intents(a: Policy, b: Policy) -> Iterable[Change]:
    for intent in INTENTS:
        ra, rb = _roles(a, intent), _roles(b, intent)
        for fragment in _keys(ra, rb):
            x, y = ra.get(fragment), rb.get(fragment)
            if x != y:
                kind: ChangeKind = "moved" if x is not None and y is not None else _kind(x, y)
                yield Change("intents", intent, f"intents.{intent}.{y or x}", kind, fragment, x, y)
        for role in ("primary", "secondary"):
            # order is meaning here: prompt order for primary, spending order for secondary
            xa, xb = getattr(a.intent(intent), role), getattr(b.intent(intent), role)
            kept_a, kept_b = [f for f in xa if f in xb], [f for f in xb if f in xa]
            if kept_a != kept_b:
                yield Change("intents", intent, f"intents.{intent}.{role}", "reordered", role, kept_a, kept_b)
        wa, wb = a.intent(intent).max_words, b.intent(intent).max_words
        if wa != wb:
            yield Change("intents", intent, f"intents.{intent}.max_words", "changed", "max_words", wa, wb)


def _vocabulary(a: Policy, b: Policy) -> Iterable[Change]:
    for intent in INTENTS:
        va, vb = a.vocabulary.get(intent, {}), b.vocabulary.get(intent, {})  # type: ignore[call-overload]
        for language in _keys(va, vb):
            ta, tb = va.get(language, {}), vb.get(language, {})
            for term in _keys(ta, tb):
                x, y = ta.get(term), tb.get(term)
                if x != y:
                    yield Change("vocabulary", f"{intent} ({language})", f"vocabulary.{intent}.{language}",
                                 _kind(x, y), term, x, y)


def _term_lists(section: Section, subject: str | None, path: str, a: Mapping[Any, Sequence[str]],
                b: Mapping[Any, Sequence[str]]) -> Iterable[Change]:
    """Terms added and removed per language; `subject` None lists them under the language."""
    for language in _keys(a, b):
        xa, xb = list(a.get(language, [])), list(b.get(language, []))
        under = subject if subject is not None else language
        for term in xa:
            if term not in xb:
                yield Change(section, under, f"{path}.{language}", "removed", term, term, None)
        for term in xb:
            if term not in xa:
                yield Change(section, under, f"{path}.{language}", "added", term, None, term)


def _modifier_key(m: Modifier) -> str:
    scope = f" for {', '.join(sorted(m.intents))}" if m.intents is not None else ""
    return f"{m.fragment}{scope}"


def _scopes(a: Policy, b: Policy) -> Iterable[Change]:
    for scope in SCOPES:
        sa, sb = a.scopes.get(scope), b.scopes.get(scope)  # type: ignore[call-overload]
        terms_a = sa.terms if sa is not None else {}
        terms_b = sb.terms if sb is not None else {}
        yield from _term_lists("scopes", scope, f"scopes.{scope}.terms", terms_a, terms_b)
        ma = {_modifier_key(m): m for m in (sa.modifiers if sa is not None else [])}
        mb = {_modifier_key(m): m for m in (sb.modifiers if sb is not None else [])}
        path = f"scopes.{scope}.modifiers"
        for key in _keys(ma, mb):
            x, y = ma.get(key), mb.get(key)
            dx = x.model_dump(mode="json") if x is not None else None
            dy = y.model_dump(mode="json") if y is not None else None
            if dx == dy:
                continue
            shown = y if y is not None else x
            assert shown is not None
            item = f"{shown.action} {key}" if x is None or y is None or x.action == y.action else key
            yield Change("scopes", scope, path, _kind(x, y), item, dx, dy)
        implied_a = sa.implied_by if sa is not None else []
        implied_b = sb.implied_by if sb is not None else []
        for intent in [*[i for i in implied_a if i not in implied_b], *[i for i in implied_b if i not in implied_a]]:
            added = intent in implied_b
            yield Change("scopes", scope, f"scopes.{scope}.implied_by", "added" if added else "removed", intent,
                         None if added else intent, intent if added else None)


def _clinical(a: Policy, b: Policy) -> Iterable[Change]:
    return _term_lists("clinical_terms", None, "clinical_terms", a.clinical_terms, b.clinical_terms)


def _referral(a: Policy, b: Policy) -> Iterable[Change]:
    return _term_lists("referral_terms", None, "referral_terms", a.referral_terms, b.referral_terms)


def _fragment_terms(a: Policy, b: Policy) -> Iterable[Change]:
    for fragment in _keys(a.fragment_terms, b.fragment_terms):
        yield from _term_lists("fragment_terms", fragment, f"fragment_terms.{fragment}",
                               a.fragment_terms.get(fragment, {}), b.fragment_terms.get(fragment, {}))


def _keys(a: Mapping[Any, Any], b: Mapping[Any, Any]) -> list[Any]:
    """Keys of both, in `a`'s order and then the new ones in `b`'s."""
    return [*a, *[k for k in b if k not in a]]


def _kind(before: object, after: object) -> ChangeKind:
    if before is None:
        return "added"
    if after is None:
        return "removed"
    return "changed"
