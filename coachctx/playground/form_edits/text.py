"""Edits on the draft's text that rewrite only the value they change, so the comments and
layout stay: in place, a new key, entry by entry, or ruamel.yaml's round trip; each result is
checked against the plain data edit before it is returned."""

from __future__ import annotations

import difflib
import io
import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

import yaml

from coachctx.errors import PolicyError
from coachctx.playground.form_edits.data import draft_data, draft_to_yaml, draft_value, get, with_setting
from coachctx.playground.form_edits.nodes import entry_span, flow, last_leaf, line_end, node_at, without


def _in_place(text: str, path: Sequence[str | int], value: Any) -> str | None:
    node = node_at(text, path)
    if node is None:
        return None
    if isinstance(node, yaml.ScalarNode) and node.style not in (None, "", "'", '"'):
        return None  # a literal or folded block scalar: its span includes the lines below
    if isinstance(node, yaml.CollectionNode) and not node.flow_style:
        return None
    start, end = node.start_mark.index, node.end_mark.index
    return text[:start] + flow(value, node.start_mark.column) + text[end:]


def _new_key(text: str, path: Sequence[str | int], value: Any) -> str | None:
    """A key the draft does not have yet, written as one more line of its parent mapping (or one
    more entry of a flow mapping); a missing parent is created the same way."""
    if not path:
        return None
    parent = node_at(text, path[:-1])
    if parent is None:
        return _new_key(text, path[:-1], {path[-1]: value})
    if not isinstance(parent, yaml.MappingNode):
        return None
    if parent.flow_style:
        close = parent.end_mark.index - 1
        if text[close] != "}":
            return None
        entry = flow({path[-1]: value}, parent.start_mark.column)[1:-1]
        return text[:close] + (", " if parent.value else "") + entry + text[close:]
    if not parent.value:
        return None
    indent = parent.value[0][0].start_mark.column
    end = line_end(text, last_leaf(parent.value[-1][1]).end_mark.index)
    line = " " * indent + flow({path[-1]: value}, indent)[1:-1]
    return text[:end] + line + "\n" + text[end:]


def _piecewise_mapping(text: str, path: Sequence[str | int], node: yaml.MappingNode, old: Mapping[str, Any],
                       value: Mapping[str, Any]) -> str | None:
    gone = [(k, v) for k, v in node.value if isinstance(k, yaml.ScalarNode) and k.value not in value]
    if len(gone) == len(node.value):
        return None  # an emptied block mapping has no line left to hold it
    text = without(text, [entry_span(text, k, v) for k, v in gone])
    for key, item in value.items():
        if old.get(key) != item:
            step = _in_place(text, [*path, key], item) if key in old else _new_key(text, [*path, key], item)
            if step is None:
                step = _piecewise(text, [*path, key], item) if key in old else None
            if step is None:
                return None
            text = step
    return text


def _piecewise_sequence(text: str, path: Sequence[str | int], node: yaml.SequenceNode, old: list[Any],
                        value: list[Any]) -> str | None:
    """Items removed, changed one for one, or appended; anything else is left to the next way."""
    matcher = difflib.SequenceMatcher(a=[json.dumps(o, sort_keys=True, default=str) for o in old],
                                      b=[json.dumps(v, sort_keys=True, default=str) for v in value], autojunk=False)
    removed: list[int] = []
    changed: list[tuple[int, Any]] = []
    appended: list[Any] = []
    for op, a0, a1, b0, b1 in matcher.get_opcodes():
        if op == "delete":
            removed += range(a0, a1)
        elif op == "replace" and a1 - a0 == b1 - b0:
            changed += zip(range(a0, a1), value[b0:b1], strict=True)
        elif op == "insert" and a0 == len(old):
            appended += value[b0:b1]
        elif op != "equal":
            return None
    if len(removed) == len(old) and not changed and not appended:
        return None
    for i, item in changed:  # in place first: the indices still hold
        step = _in_place(text, [*path, i], item)
        if step is None:
            return None
        text = step
    seq = node_at(text, path)
    assert isinstance(seq, yaml.SequenceNode)
    text = without(text, [entry_span(text, seq.value[i], seq.value[i]) for i in removed])
    for item in appended:
        seq = node_at(text, path)
        if not isinstance(seq, yaml.SequenceNode) or not seq.value:
            return None
        last = seq.value[-1]
        end = line_end(text, last_leaf(last).end_mark.index)
        column = last.start_mark.column
        text = text[:end] + " " * (column - 2) + "- " + flow(item, column) + "\n" + text[end:]
    return text


def _flow_removal(text: str, node: yaml.MappingNode, old: Mapping[str, Any], value: Mapping[str, Any]) -> str | None:
    """Entries removed from a flow mapping (a term deleted from a vocabulary), each cut out with
    its comma, so the lines around keep their breaks. None for any other change."""
    if not value or any(k not in old or old[k] != v for k, v in value.items()):
        return None
    entries = node.value
    spans = []
    for i, (k, v) in enumerate(entries):
        if not isinstance(k, yaml.ScalarNode) or k.value in value:
            continue
        if i + 1 < len(entries):  # "key: value, " up to the next key
            spans.append((k.start_mark.index, entries[i + 1][0].start_mark.index))
        else:  # the last one: from the end of the value before it
            spans.append((entries[i - 1][1].end_mark.index, v.end_mark.index))
    return without(text, spans) if spans else None


def _piecewise(text: str, path: Sequence[str | int], value: Any) -> str | None:
    """A block mapping or sequence changed entry by entry (each in place, removed as whole lines,
    or a new key or item line), so a table edit rewrites only the rows that changed."""
    node = node_at(text, path)
    if not isinstance(node, yaml.CollectionNode):
        return None
    old = draft_value(draft_data(text), path)
    if isinstance(node, yaml.MappingNode) and node.flow_style and isinstance(old, Mapping) \
            and isinstance(value, Mapping):
        return _flow_removal(text, node, old, value)
    if isinstance(node, yaml.MappingNode) and isinstance(old, Mapping) and isinstance(value, Mapping):
        return _piecewise_mapping(text, path, node, old, value)
    if isinstance(node, yaml.SequenceNode) and not node.flow_style and isinstance(old, list) \
            and isinstance(value, list) and old:
        return _piecewise_sequence(text, path, node, old, value)
    return None


_NESTED = re.compile(r"^( *)[^\s#-][^\n]*:[ \t]*(?:#[^\n]*)?\n(?:[ \t]*(?:#[^\n]*)?\n)*( *)(-?)", re.MULTILINE)


def _indentation(text: str) -> tuple[int, int]:
    """(how far a nested mapping is indented, how far a block sequence's dash is indented under
    its key), as the file does it; (2, 2) where the file does not say."""
    mapping, dash = None, None
    for m in _NESTED.finditer(text):
        step = len(m.group(2)) - len(m.group(1))
        if m.group(3) and dash is None and step >= 0:
            dash = step
        elif not m.group(3) and mapping is None and step > 0:
            mapping = step
    return mapping or 2, 2 if dash is None else dash


def _round_trip(text: str, path: Sequence[str | int], value: Any) -> str:
    """The last way before a canonical dump: ruamel.yaml's round trip, with the file's own
    indentation and the replaced value's flow style, so comments stay and the new value looks
    like the one it replaces. Flow collections elsewhere may be re-wrapped onto one line each."""
    from ruamel.yaml import YAML
    from ruamel.yaml.comments import CommentedMap, CommentedSeq

    indent, offset = _indentation(text)
    rt = YAML(typ="rt")
    rt.width, rt.preserve_quotes = 4096, True  # ruamel's wrapping can split a multi-word key in a flow map
    rt.indent(mapping=indent, sequence=offset + 2, offset=offset)
    data = rt.load(text)
    node = data
    for part in path[:-1]:
        if isinstance(node, dict) and not isinstance(node.get(part), dict | list):
            node[part] = CommentedMap()
        node = node[part]
    replaced = node.get(path[-1]) if isinstance(node, dict) else None
    if isinstance(replaced, CommentedSeq | CommentedMap) and replaced.fa.flow_style() and \
            isinstance(value, list | dict):
        value = (CommentedSeq if isinstance(value, list) else CommentedMap)(value)
        value.fa.set_flow_style()
    node[path[-1]] = value
    out = io.StringIO()
    rt.dump(data, out)
    return out.getvalue()


def edit_draft_text(text: str, path: Sequence[str | int], value: Any) -> str:
    """The draft's text with the value at `path` set, keeping every comment. The result is
    checked against a plain data edit; a text that would not read back as intended is never
    returned (the canonical dump is, comments lost, as a last resort)."""
    data = draft_data(text)
    if data is None:
        raise PolicyError("<draft>", [("", "the draft does not parse as a YAML mapping, so the form cannot edit it")])
    wanted = with_setting(data, path, value)
    for attempt in (_piecewise, _in_place, _new_key, _round_trip):
        try:
            candidate = attempt(text, path, value)
        except Exception:  # ruamel raises its own error types for exotic documents: try the next way
            continue
        if candidate is not None and draft_data(candidate) == wanted:
            return candidate
    return draft_to_yaml(wanted)


def add_term_text(text: str, intent: str, language: str, term: str, weight: float) -> str:
    """A new term appended inside the language's flow mapping (a one-line change), else set
    through `edit_draft_text`."""
    node = node_at(text, ("vocabulary", intent, language))
    data = draft_data(text)
    terms = get(get(get(data, "vocabulary"), intent), language)
    wanted = {**(dict(terms) if isinstance(terms, Mapping) else {}), term: weight}
    if isinstance(node, yaml.MappingNode) and node.flow_style and data is not None:
        close = node.end_mark.index - 1
        if text[close] == "}":
            entry = flow({term: weight}, 0)[1:-1]
            candidate = text[:close] + (", " if node.value else "") + entry + text[close:]
            if draft_data(candidate) == with_setting(data, ("vocabulary", intent, language), wanted):
                return candidate
    return edit_draft_text(text, ("vocabulary", intent, language), wanted)
