"""Form edits on the draft's text: each rewrites only the value it changes (the comments and layout stay) and says what it did."""

from __future__ import annotations

import copy
import difflib
import functools
import io
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

import pandas as pd
import yaml

from coachctx.engine.policy_loading import YAML_DUMPER, parse_yaml
from coachctx.errors import InputError, PolicyError
from coachctx.playground.policy_text import _show
from coachctx.playground.words import _and, fragment_title


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


def _node_at(text: str, path: Sequence[str | int]) -> yaml.Node | None:
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


def _flow(value: Any, column: int) -> str:
    """`value` as flow YAML that fits where a node started at `column` (continuation lines
    indented past it, so the text around stays valid)."""
    dumped = yaml.dump(value, Dumper=YAML_DUMPER, default_flow_style=True, allow_unicode=True, sort_keys=False,
                       width=max(40, 110 - column))
    dumped = dumped.removesuffix("\n").removesuffix("\n...").rstrip("\n")
    return dumped.replace("\n", "\n" + " " * (column + 1))


def _in_place(text: str, path: Sequence[str | int], value: Any) -> str | None:
    node = _node_at(text, path)
    if node is None:
        return None
    if isinstance(node, yaml.ScalarNode) and node.style not in (None, "", "'", '"'):
        return None  # a literal or folded block scalar: its span includes the lines below
    if isinstance(node, yaml.CollectionNode) and not node.flow_style:
        return None
    start, end = node.start_mark.index, node.end_mark.index
    return text[:start] + _flow(value, node.start_mark.column) + text[end:]


def _last_leaf(node: yaml.Node) -> yaml.Node:
    """The last scalar (or flow collection) of a block collection: its line is the collection's
    last line (the collection's own end mark lies past the comments that follow it)."""
    while isinstance(node, yaml.CollectionNode) and not node.flow_style and node.value:
        last = node.value[-1]
        node = last[1] if isinstance(last, tuple) else last
    return node


def _line_end(text: str, index: int) -> int:
    """The index just past the line break of the line holding `index` (or the end of the text)."""
    end = text.find("\n", index)
    return len(text) if end < 0 else end + 1


def _line_start(text: str, index: int) -> int:
    return text.rfind("\n", 0, index) + 1


def _new_key(text: str, path: Sequence[str | int], value: Any) -> str | None:
    """A key the draft does not have yet, written as one more line of its parent mapping (or one
    more entry of a flow mapping); a missing parent is created the same way."""
    if not path:
        return None
    parent = _node_at(text, path[:-1])
    if parent is None:
        return _new_key(text, path[:-1], {path[-1]: value})
    if not isinstance(parent, yaml.MappingNode):
        return None
    if parent.flow_style:
        close = parent.end_mark.index - 1
        if text[close] != "}":
            return None
        entry = _flow({path[-1]: value}, parent.start_mark.column)[1:-1]
        return text[:close] + (", " if parent.value else "") + entry + text[close:]
    if not parent.value:
        return None
    indent = parent.value[0][0].start_mark.column
    end = _line_end(text, _last_leaf(parent.value[-1][1]).end_mark.index)
    line = " " * indent + _flow({path[-1]: value}, indent)[1:-1]
    return text[:end] + line + "\n" + text[end:]


def _entry_span(text: str, first: yaml.Node, last: yaml.Node) -> tuple[int, int]:
    """The whole lines from `first`'s line to `last`'s last line: one entry of a block collection."""
    return _line_start(text, first.start_mark.index), _line_end(text, _last_leaf(last).end_mark.index)


def _without(text: str, spans: Sequence[tuple[int, int]]) -> str:
    for start, end in sorted(spans, reverse=True):
        text = text[:start] + text[end:]
    return text


def _piecewise_mapping(text: str, path: Sequence[str | int], node: yaml.MappingNode, old: Mapping[str, Any],
                       value: Mapping[str, Any]) -> str | None:
    gone = [(k, v) for k, v in node.value if isinstance(k, yaml.ScalarNode) and k.value not in value]
    if len(gone) == len(node.value):
        return None  # an emptied block mapping has no line left to hold it
    text = _without(text, [_entry_span(text, k, v) for k, v in gone])
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
    seq = _node_at(text, path)
    assert isinstance(seq, yaml.SequenceNode)
    text = _without(text, [_entry_span(text, seq.value[i], seq.value[i]) for i in removed])
    for item in appended:
        seq = _node_at(text, path)
        if not isinstance(seq, yaml.SequenceNode) or not seq.value:
            return None
        last = seq.value[-1]
        end = _line_end(text, _last_leaf(last).end_mark.index)
        column = last.start_mark.column
        text = text[:end] + " " * (column - 2) + "- " + _flow(item, column) + "\n" + text[end:]
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
    return _without(text, spans) if spans else None


def _piecewise(text: str, path: Sequence[str | int], value: Any) -> str | None:
    """A block mapping or sequence changed entry by entry (each in place, removed as whole lines,
    or a new key or item line), so a table edit rewrites only the rows that changed."""
    node = _node_at(text, path)
    if not isinstance(node, yaml.CollectionNode):
        return None
    old = _get_path(draft_data(text), path)
    if isinstance(node, yaml.MappingNode) and node.flow_style and isinstance(old, Mapping) \
            and isinstance(value, Mapping):
        return _flow_removal(text, node, old, value)
    if isinstance(node, yaml.MappingNode) and isinstance(old, Mapping) and isinstance(value, Mapping):
        return _piecewise_mapping(text, path, node, old, value)
    if isinstance(node, yaml.SequenceNode) and not node.flow_style and isinstance(old, list) \
            and isinstance(value, list) and old:
        return _piecewise_sequence(text, path, node, old, value)
    return None


def _get_path(data: Any, path: Sequence[str | int]) -> Any:
    for part in path:
        if isinstance(data, Mapping):
            data = data.get(part)
        elif isinstance(data, list) and isinstance(part, int) and 0 <= part < len(data):
            data = data[part]
        else:
            return None
    return data


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
    node = _node_at(text, ("vocabulary", intent, language))
    data = draft_data(text)
    terms = _get(_get(_get(data, "vocabulary"), intent), language)
    wanted = {**(dict(terms) if isinstance(terms, Mapping) else {}), term: weight}
    if isinstance(node, yaml.MappingNode) and node.flow_style and data is not None:
        close = node.end_mark.index - 1
        if text[close] == "}":
            entry = _flow({term: weight}, 0)[1:-1]
            candidate = text[:close] + (", " if node.value else "") + entry + text[close:]
            if draft_data(candidate) == with_setting(data, ("vocabulary", intent, language), wanted):
                return candidate
    return edit_draft_text(text, ("vocabulary", intent, language), wanted)


def draft_value(data: Mapping[str, Any] | None, path: Sequence[str | int]) -> Any:
    """The value at `path` in draft data, None where the path does not exist."""
    return _get_path(data, path)


def show_value(value: Any) -> str:
    if value is None:
        return "not set"
    if isinstance(value, float):
        return f"{value:g}"
    return _show(value)


def find_term(data: Mapping[str, Any], intent: str, term: str) -> tuple[str, Any] | None:
    """(language, weight) of `term` in the intent's vocabulary, matched without case."""
    by_language = _get(_get(data, "vocabulary"), intent)
    if not isinstance(by_language, Mapping):
        return None
    folded = term.casefold()
    for language, terms in by_language.items():
        if isinstance(terms, Mapping):
            for t, w in terms.items():
                if str(t).casefold() == folded:
                    return str(language), w
    return None


@dataclass(frozen=True)
class EditFeedback:
    """What a form edit did, in a coach's words; `offer` is a one-click follow-up
    (label, path, value) when the edit probably did not do what was meant."""

    kind: str  # "ok", "info" (nothing changed), "warning" (done, but read this)
    message: str
    offer: tuple[str, tuple[str | int, ...], Any] | None = None


def _names(fragments: Sequence[str]) -> str:
    return _and([fragment_title(f) for f in fragments])


def list_edit_feedback(data: Mapping[str, Any], intent: str, field: str, new: Sequence[str]) -> EditFeedback:
    """Feedback for a change to an intent's primary, secondary or exclude list."""
    spec = _get(_get(data, "intents"), intent)
    old_values = _get(spec, field)
    old = [f for f in old_values if isinstance(f, str)] if isinstance(old_values, list) else []
    added, removed = [f for f in new if f not in old], [f for f in old if f not in new]
    if not added and not removed:
        if list(new) != old:
            return EditFeedback("ok", f"Reordered {intent}'s {field} list: {', '.join(new)}.")
        return EditFeedback("info", f"No change: {intent}'s {field} list already reads {', '.join(new) or 'empty'}.")
    parts = []
    if added:
        parts.append(f"added {_names(added)} to")
    if removed:
        parts.append(f"removed {_names(removed)} from")
    message = f"{' and '.join(parts).capitalize()} {intent}'s {field} list."
    if field == "exclude" and removed:
        asked = set(_get(spec, "primary") or []) | set(_get(spec, "secondary") or [])
        still_out = [f for f in removed if f not in asked]
        if still_out:
            message += (f" An exclude only withholds a fact the intent might otherwise get (from another intent "
                        f"with evidence, or while routing is unsure). {intent} does not ask for "
                        f"{_names(still_out)} itself, so on a clear {intent} question it stays out — now as "
                        "“not asked for” instead of “excluded”. To send it, add it to the secondary list.")
            secondary = [f for f in (_get(spec, "secondary") or []) if isinstance(f, str)]
            return EditFeedback("warning", message, (f"Add {_names(still_out)} to {intent}'s secondary list",
                                                     ("intents", intent, "secondary"), [*secondary, *still_out]))
    if field == "exclude" and added:
        message += (" It is withheld on questions routed to " + intent + " with certainty; a contender or a "
                    "question that names it still gets it.")
    return EditFeedback("ok", message)


def _get(data: Any, key: str) -> Any:
    """`data[key]` when data is a mapping; drafts may be invalid, so anything else reads as None."""
    return data.get(key) if isinstance(data, Mapping) else None


def vocabulary_rows(data: Mapping[str, Any], intent: str) -> pd.DataFrame:
    """The intent's vocabulary as (language, term, weight) rows, for a table editor."""
    rows = []
    by_language = _get(_get(data, "vocabulary"), intent)
    if isinstance(by_language, Mapping):
        for language, terms in by_language.items():
            if isinstance(terms, Mapping):
                rows += [{"language": str(language), "term": str(t), "weight": w} for t, w in terms.items()]
    return pd.DataFrame(rows, columns=["language", "term", "weight"])


def vocabulary_from_rows(rows: Sequence[Mapping[str, Any]]) -> dict[str, dict[str, Any]]:
    """Rows back to {language: {term: weight}}; rows without a language or a term are skipped."""
    out: dict[str, dict[str, Any]] = {}
    for row in rows:
        language, term = str(row.get("language") or "").strip(), str(row.get("term") or "").strip()
        if language and term:
            weight = row.get("weight")
            out.setdefault(language, {})[term] = 1.0 if weight is None or weight != weight else weight
    return out


def apply_table_edits(rows: Sequence[Mapping[str, Any]], edits: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Apply a data editor's edit state ({edited_rows, added_rows, deleted_rows}) to its rows."""
    out = [dict(r) for r in rows]
    for idx, changes in (edits.get("edited_rows") or {}).items():
        i = int(idx)
        if 0 <= i < len(out):
            out[i].update(changes)
    deleted = {int(i) for i in edits.get("deleted_rows") or []}
    out = [r for i, r in enumerate(out) if i not in deleted]
    out += [dict(r) for r in edits.get("added_rows") or []]
    return out


MODIFIER_COLUMNS: Final = ("action", "fragment", "reason", "intents")


def modifier_rows(data: Mapping[str, Any], scope: str) -> pd.DataFrame:
    mods = _get(_get(_get(data, "scopes"), scope), "modifiers")
    mods = mods if isinstance(mods, list) else []
    rows = [{"action": m.get("action"), "fragment": m.get("fragment"), "reason": m.get("reason"),
             "intents": ", ".join(m["intents"]) if isinstance(m.get("intents"), list) else ""}
            for m in mods if isinstance(m, Mapping)]
    return pd.DataFrame(rows, columns=list(MODIFIER_COLUMNS))


def modifiers_from_rows(rows: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    out = []
    for row in rows:
        if not any(row.get(c) for c in ("action", "fragment", "reason")):
            continue
        mod: dict[str, Any] = {"action": row.get("action"), "fragment": row.get("fragment"),
                               "reason": row.get("reason")}
        intents = [s.strip() for s in str(row.get("intents") or "").split(",") if s.strip()]
        if intents:
            mod["intents"] = intents
        out.append(mod)
    return out
