"""Where a value stands in the draft's text: its YAML node, the lines an entry spans, and a value
written as flow YAML to fit where it goes. Nothing here changes the text but `without`."""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any

import yaml

from coachctx.engine.policy_loading import YAML_DUMPER

_COMPOSER: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


@functools.lru_cache(maxsize=4)
def _compose(text: str) -> yaml.Node | None:
    """The draft's nodes, composed once per text (an edit looks several up, and checks each way it
    tries), with libyaml's C composer where installed: the same marks, several times faster.
    Read only: nothing changes a node."""
    try:
        return yaml.compose(text, Loader=_COMPOSER)
    except (yaml.YAMLError, RecursionError):
        return None


def node_at(text: str, path: Sequence[str | int]) -> yaml.Node | None:
    node = _compose(text)
    if node is None:
        return None
    for part in path:
        child = None
        if isinstance(node, yaml.MappingNode):
            child = next((v for k, v in node.value if isinstance(k, yaml.ScalarNode) and k.value == str(part)), None)
        elif isinstance(node, yaml.SequenceNode) and isinstance(part, int) and 0 <= part < len(node.value):
            child = node.value[part]
        if child is None:
            return None
        node = child
    return node


def flow(value: Any, column: int) -> str:
    """`value` as flow YAML that fits where a node started at `column` (continuation lines
    indented past it, so the text around stays valid)."""
    dumped = yaml.dump(value, Dumper=YAML_DUMPER, default_flow_style=True, allow_unicode=True, sort_keys=False,
                       width=max(40, 110 - column))
    dumped = dumped.removesuffix("\n").removesuffix("\n...").rstrip("\n")
    return dumped.replace("\n", "\n" + " " * (column + 1))


def last_leaf(node: yaml.Node) -> yaml.Node:
    """The last scalar (or flow collection) of a block collection: its line is the collection's
    last line (the collection's own end mark lies past the comments that follow it)."""
    while isinstance(node, yaml.CollectionNode) and not node.flow_style and node.value:
        last = node.value[-1]
        node = last[1] if isinstance(last, tuple) else last
    return node


def line_end(text: str, index: int) -> int:
    """The index just past the line break of the line holding `index` (or the end of the text)."""
    end = text.find("\n", index)
    return len(text) if end < 0 else end + 1


def _line_start(text: str, index: int) -> int:
    return text.rfind("\n", 0, index) + 1


def entry_span(text: str, first: yaml.Node, last: yaml.Node) -> tuple[int, int]:
    """The whole lines from `first`'s line to `last`'s last line: one entry of a block collection."""
    return _line_start(text, first.start_mark.index), line_end(text, last_leaf(last).end_mark.index)


def without(text: str, spans: Sequence[tuple[int, int]]) -> str:
    for start, end in sorted(spans, reverse=True):
        text = text[:start] + text[end:]
    return text
