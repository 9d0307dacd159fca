"""Reading a policy document safely.

`parse_yaml` is `yaml.safe_load` with limits on size, depth, aliases and expanded size, duplicate
keys refused and tags that build objects refused (libyaml when the document is within the limits,
the pure-Python loader to say exactly what is wrong otherwise). What is wrong with a document that
parsed is `policy_errors.describe_error`'s.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import yaml

from coachctx.engine.policy_errors import short_value
from coachctx.errors import PolicyError
from coachctx.reading import ReadError, read_text

MAX_POLICY_BYTES: Final = 1024 * 1024
"""The default policy is about 450 KB in flow style and 560 KB dumped in block style: room for a
coach to paste it either way, and to grow."""
MAX_YAML_DEPTH: Final = 24
MAX_YAML_ALIASES: Final = 64
MAX_YAML_NODES: Final = 100_000
"""Scalars and collections after every alias is expanded: the default policy has about 45,000,
and a document that expands past this limit is refused before anything is built from it."""
MAX_YAML_INT_DIGITS: Final = 100
"""Far past any range a policy allows, so pydantic still names the range; Python itself gives up at 4,300."""


# --- YAML ---------------------------------------------------------------------------------


class _NoDuplicateKeys:
    """PyYAML keeps the last of two equal keys without a word; a policy refuses them."""

    def construct_mapping(self, node: Any, deep: bool = False) -> Any:
        # PyYAML keeps the last of two equal keys without a word: a second `training:` would
        # silently replace the first. Merge keys (`<<`) may still be overridden, as YAML intends;
        # but a second `<<` in one mapping dropped the first mapping it merged without a word.
        if isinstance(node, yaml.MappingNode):
            first_line: dict[Any, int] = {}
            merge_line: int | None = None
            for key_node, _ in node.value:
                if key_node.tag == "tag:yaml.org,2002:merge":
                    if merge_line is not None:
                        raise yaml.constructor.ConstructorError(
                            "while constructing a mapping", node.start_mark,
                            f"found a second merge key '<<' (first on line {merge_line + 1}); merge several "
                            "mappings with one key: '<<: [*first, *second]'", key_node.start_mark)
                    merge_line = key_node.start_mark.line
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


_YAML11_NUMBER_QUIRK: Final = re.compile(r"[-+]?(0[0-9_]|0[xXoObB])|.*[_:]")
"""What YAML 1.1 reads as a number and YAML 1.2 (and a reader) does not, or not as the same
value: a leading zero (`050` is octal 40), `0x`/`0b`, underscores (`1_000`) and base 60 (`1:30` is 90)."""


def _bounded_int(loader: yaml.SafeLoader, node: yaml.ScalarNode) -> Any:
    """Python refuses to turn more than 4,300 digits into an int, with a ValueError no YAML
    handler expects; no number in a policy or a question set needs more than `MAX_YAML_INT_DIGITS`.
    A YAML 1.1 quirk stays the text it was written as: where a number belongs, validation refuses
    it by its path and `describe_error` says how to write it; where text belongs, it is that text."""
    if _YAML11_NUMBER_QUIRK.match(str(node.value)):
        return loader.construct_scalar(node)
    digits = sum(ch.isdigit() for ch in str(node.value))
    if digits > MAX_YAML_INT_DIGITS:
        raise yaml.constructor.ConstructorError(
            None, None, f"a number of {digits} digits; the limit is {MAX_YAML_INT_DIGITS}", node.start_mark)
    return yaml.SafeLoader.construct_yaml_int(loader, node)


def _plain_float(loader: yaml.SafeLoader, node: yaml.ScalarNode) -> Any:
    """A float without YAML 1.1's underscores or base 60 (`1:30.5`); those stay text, as in `_bounded_int`."""
    if "_" in str(node.value) or ":" in str(node.value):
        return loader.construct_scalar(node)
    return yaml.SafeLoader.construct_yaml_float(loader, node)


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
        None, None, f"the tag {node.tag!r} is not allowed (a policy or a question set holds plain lists, "
        "mappings, text and numbers)", node.start_mark)


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
                None, None, f"{short_value(node.value)} is not a valid {tag} ({type(e).__name__})", node.start_mark) from e

    return construct_checked


for _loader in (_GuardedLoader, _FastLoader):
    _loader.add_constructor("tag:yaml.org,2002:int", _checked("int", _bounded_int))
    for _name, _construct in (("float", _plain_float),
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


def read_policy_text(path: str | Path) -> str:
    """The file's text: a regular file of at most `MAX_POLICY_BYTES`, strict UTF-8."""
    try:
        return read_text(path, MAX_POLICY_BYTES, expected="a YAML file")
    except ReadError as e:
        raise PolicyError(e.source, [(e.where, e.problem)]) from e
