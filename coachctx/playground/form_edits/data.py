"""The draft as plain data: read from its text (valid or not), changed as a deep copy, looked up."""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from typing import Any

import yaml

from coachctx.engine.policy_loading import YAML_DUMPER, parse_yaml
from coachctx.errors import InputError, PolicyError


def draft_data(text: str) -> dict[str, Any] | None:
    """The draft as plain data when its YAML parses to a mapping (valid or not), else None."""
    try:
        data = parse_yaml(text)
    except PolicyError:
        return None
    return data if isinstance(data, dict) else None


def draft_to_yaml(data: Mapping[str, Any]) -> str:
    return yaml.dump(dict(data), Dumper=YAML_DUMPER, sort_keys=False, allow_unicode=True, width=100, default_flow_style=None)


def with_setting(data: Mapping[str, Any], path: Sequence[str | int], value: Any) -> dict[str, Any]:
    """A deep copy of `data` with the value at `path` replaced (missing mappings are created)."""
    out = copy.deepcopy(dict(data))
    node: Any = out
    for part, after in zip(path[:-1], path[1:], strict=True):
        # a draft can hold anything (`intents: [training]`): what the path cannot go through is
        # replaced by the mapping the form edits, and the policy's validation speaks about the rest
        wanted = list if isinstance(after, int) else dict
        if isinstance(node, list) and not (isinstance(part, int) and -len(node) <= part < len(node)):
            raise InputError(f"the draft has no item {part!r} at {'.'.join(map(str, path))}")
        child = node[part] if isinstance(node, list) and isinstance(part, int) else node.get(part)
        if not isinstance(child, wanted) or (isinstance(after, int) and not -len(child) <= after < len(child)):
            if wanted is list:
                raise InputError(f"the draft has no item {after!r} at {'.'.join(map(str, path))}")
            child = node[part] = {}
        node = child
    node[path[-1]] = value
    return out


def draft_value(data: Mapping[str, Any] | None, path: Sequence[str | int]) -> Any:
    """The value at `path` in draft data, None where the path does not exist."""
    node: Any = data
    for part in path:
        if isinstance(node, Mapping):
            node = node.get(part)
        elif isinstance(node, list) and isinstance(part, int) and 0 <= part < len(node):
            node = node[part]
        else:
            return None
    return node


def find_term(data: Mapping[str, Any], intent: str, term: str) -> tuple[str, Any] | None:
    """(language, weight) of `term` in the intent's vocabulary, matched without case."""
    by_language = get(get(data, "vocabulary"), intent)
    if not isinstance(by_language, Mapping):
        return None
    folded = term.casefold()
    for language, terms in by_language.items():
        if isinstance(terms, Mapping):
            for t, w in terms.items():
                if str(t).casefold() == folded:
                    return str(language), w
    return None


def get(data: Any, key: str) -> Any:
    """`data[key]` when data is a mapping; drafts may be invalid, so anything else reads as None."""
    return data.get(key) if isinstance(data, Mapping) else None
