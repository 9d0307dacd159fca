"""What replaying a trace compares: every field of the recorded Decision JSON against the decision
made again, so a trace whose bundle or decision was edited does not replay as the same decision.

The route, the selection, each fragment's line and the prompt are compared as named fields
(`NAMED`); every other field of the Decision is compared leaf by leaf under its JSON path, except
where the policy and the code came from (`PROVENANCE`), which say nothing about the decision. A
recorded field that is missing or malformed counts as different; fields the Decision does not
have are reported once per object, so a tampered trace cannot make the report longer than the
decision itself."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Final

NAMED: Final[tuple[tuple[str, Callable[[Mapping[str, Any]], Any]], ...]] = (
    ("question", lambda d: d["question"]),
    ("athlete", lambda d: d["athlete"]),
    ("policy.digest", lambda d: d["policy"]["digest"]),
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
PROVENANCE: Final = frozenset({"policy.source", "policy.version", "version", "intent.model.latency_ms"})
"""Where the policy was read from (a path, a stored version), the coachctx version, and how long
the model took: the same decision can be made again from another copy of the policy, by a later
release, from the model's recorded answer."""
_COMPARED_APART: Final = frozenset({name for name, _ in NAMED} | {"prompt"})

Difference = dict[str, Any]


def compare(recorded: Mapping[str, Any], now: Mapping[str, Any]) -> list[Difference]:
    """Field-by-field differences between two Decision JSONs: [{field, recorded, now}], the named
    fields first, then each fragment's line and each prompt message, then every other field."""
    fields: list[tuple[str, Any, Any]] = [(name, _get(get, recorded), get(now)) for name, get in NAMED]
    before_lines, after_lines = _lines(recorded), _lines(now)
    fields += [(f"fragments.{name}.line", before_lines.get(name), after_lines.get(name))
               for name in dict.fromkeys([*after_lines, *before_lines])]
    for key in ("messages", "naive_messages"):
        before_prompt, after_prompt = _messages(recorded, key), _messages(now, key)
        for i in range(max(len(before_prompt), len(after_prompt))):
            role = (after_prompt[i] if i < len(after_prompt) else before_prompt[i])[0]
            fields.append((f"prompt.{key}[{i}].{role}", _content(before_prompt, i), _content(after_prompt, i)))
            if i < len(before_prompt) and i < len(after_prompt):
                fields.append((f"prompt.{key}[{i}].role", before_prompt[i][0], after_prompt[i][0]))
    differences = [{"field": name, "recorded": before, "now": after} for name, before, after in fields
                   if before != after]
    skip = _COMPARED_APART | PROVENANCE
    for key, value in now.items():
        if key in BY_NAME:
            _by_name(key, recorded.get(key), value, differences)
        elif key not in skip:
            _leaves(key, recorded.get(key), value, differences, skip)
    _extra("", recorded, now, differences)
    return differences


def _leaves(path: str, recorded: Any, now: Any, out: list[Difference], skip: frozenset[str]) -> None:
    """The differences under `path`, walking the objects of the decision made now (lists are
    compared whole)."""
    if path in skip:
        return
    if isinstance(now, Mapping) and isinstance(recorded, Mapping):
        for key, value in now.items():
            _leaves(f"{path}.{key}", recorded.get(key), value, out, skip)
        _extra(path, recorded, now, out)
    elif recorded != now or type(recorded) is not type(now):
        out.append({"field": path, "recorded": recorded, "now": now})


BY_NAME: Final = {"fragments": ("name", "line"), "withheld": ("fragment", "reason")}
"""Lists of the Decision whose entries are compared by name: (the key that names an entry, its
field compared apart, in `NAMED` or as `fragments.NAME.line`)."""


def _by_name(path: str, recorded: Any, now: list[Mapping[str, Any]], out: list[Difference]) -> None:
    """Each entry's fields by its name; recorded entries the decision does not have, in one
    difference."""
    key, apart = BY_NAME[path]
    by_name = {str(e.get(key)): e for e in recorded if isinstance(e, Mapping)} if isinstance(recorded, list) else {}
    names = [str(entry[key]) for entry in now]
    for name, entry in zip(names, now, strict=True):
        _leaves(f"{path}.{name}", by_name.get(name), entry, out, frozenset({f"{path}.{name}.{apart}"}))
    known = set(names)
    extra = [name for name in by_name if name not in known]
    if extra or not isinstance(recorded, list):
        out.append({"field": path, "recorded": f"entries the decision does not have: {extra}" if extra else recorded,
                    "now": names})


def _extra(path: str, recorded: Mapping[str, Any], now: Mapping[str, Any], out: list[Difference]) -> None:
    """Fields the recorded object has and the decision's has not: one difference for all of them."""
    extra = [key for key in recorded if key not in now] if isinstance(recorded, Mapping) else []
    if extra:
        out.append({"field": f"{path}.(fields the decision does not have)" if path
                    else "(fields the decision does not have)", "recorded": extra, "now": None})


def _get(get: Callable[[Mapping[str, Any]], Any], d: Mapping[str, Any]) -> Any:
    try:
        return get(d)
    except (KeyError, TypeError, AttributeError, IndexError):
        return None


def _lines(d: Mapping[str, Any]) -> dict[str, Any]:
    fragments = d.get("fragments")
    if not isinstance(fragments, list):
        return {}
    return {str(f.get("name")): f.get("line") for f in fragments if isinstance(f, Mapping)}


def _messages(d: Mapping[str, Any], key: str) -> list[tuple[str, Any]]:
    prompt = d.get("prompt")
    messages = prompt.get(key) if isinstance(prompt, Mapping) else None
    if not isinstance(messages, list):
        return [("message", None)]  # nothing recorded: differs from any prompt
    return [(str(m.get("role", "message")), m.get("content")) if isinstance(m, Mapping) else ("message", m)
            for m in messages]


def _content(messages: list[tuple[str, Any]], i: int) -> Any:
    return messages[i][1] if i < len(messages) else None
