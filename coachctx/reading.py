"""Reading what the project did not write: policy files, traces, question logs, athlete fixtures.

Every file goes through `read_bytes`: regular files only (a FIFO would block forever, `/dev/zero`
never ends, a directory is not a document), and the size limit is enforced while reading, so a
file that grows, or lies about its size, cannot get past it. `decode_utf8` decodes strictly and
says on which line and column the first bad byte is. `parse_json` reads JSON with the limits a
document from outside needs: a nesting depth, no NaN/Infinity, no integer too long to convert,
no lone surrogate in any string (it would break the first print or database write far away).

Errors are `ReadError`, an `InputError` that keeps the source, the place and the problem apart,
so the policy loader can re-raise them as a `PolicyError` with the same pieces.
"""

from __future__ import annotations

import json
import math
import os
import re
import stat
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Final

from coachctx.errors import InputError

MAX_JSON_DEPTH: Final = 64
"""A decision trace nests about eight levels; service payloads inside it a few more."""
MAX_JSON_INT_DIGITS: Final = 20
"""Enough for any 64-bit number; Python refuses to convert past 4,300 digits with a traceback."""
_READ_CHUNK: Final = 1 << 20

# Characters that must never reach a table, a prompt or a log line from data: C0/C1 controls
# (newlines, ESC, BEL, DEL), Unicode line and paragraph separators, bidi embeddings/overrides/
# isolates (they reorder what a reader sees), zero-width characters that join nothing (U+200B, U+2060,
# U+FEFF, U+180E: "str\u200bength" looks like "strength" and is not; ZWJ and ZWNJ shape Indic, Arabic
# and emoji text, so they stay), and lone surrogates (not text: UTF-8 cannot hold them).
CONTROL_CHARACTERS: Final = re.compile(
    "[\x00-\x1f\x7f-\x9f\u180e\u200b\u2028\u2029\u202a-\u202e\u2060\u2066-\u2069\ufeff\ud800-\udfff]")


class ReadError(InputError):
    """A file or document could not be read: `source` (the file), `where` (a line, a path
    inside the document, or "") and `problem`, one line each."""

    def __init__(self, source: str, problem: str, where: str = "") -> None:
        self.source = source
        self.where = where
        self.problem = problem
        super().__init__(f"{source}: {where}: {problem}" if where else f"{source}: {problem}")


def _kind(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISFIFO(mode):
        return "a FIFO (named pipe)"
    if stat.S_ISCHR(mode):
        return "a character device"
    if stat.S_ISBLK(mode):
        return "a block device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file"


def check_regular_file(path: str | Path, expected: str = "a file") -> None:
    """`ReadError` unless `path` is a regular file (a symlink is followed): for files another
    reader opens later (Dask's), which a FIFO would block and a device never end."""
    source = str(path)
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError as e:
        raise ReadError(source, "no such file") from e
    except (OSError, ValueError) as e:
        raise ReadError(source, f"cannot open: {getattr(e, 'strerror', None) or e}") from e
    if not stat.S_ISREG(mode):
        raise ReadError(source, f"is {_kind(mode)}, expected {expected}")


def file_path(path: Any, expected: str = "a file") -> Path:
    """`path` as a Path, or `ReadError` when it is not one: `Path(None)` or `Path(3)` would raise a
    TypeError naming no file, and a library caller deserves the same one line the CLI gets."""
    if isinstance(path, str | os.PathLike) and not isinstance(os.fspath(path), bytes):
        if not os.fspath(path):  # Path("") is ".", the current directory: name what was given
            raise ReadError("''", f"the path is empty; name {expected}")
        return Path(path)
    raise ReadError(f"<{type(path).__name__}>", f"expected the path of {expected}, got {printable(repr(path))[:60]}")


def read_bytes(path: str | Path, limit: int, *, expected: str = "a file") -> bytes:
    """The file's bytes, refusing anything but a regular file and anything over `limit` bytes.

    The file is opened non-blocking, so a FIFO without a writer is refused at once instead of
    hanging in `open()`; its type is checked on the open descriptor, so a symlink swapped in
    between a check and the read cannot slip through; and the size is counted as it is read.
    """
    p = file_path(path, expected)
    source = str(p)
    flags = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(p, flags)
    except FileNotFoundError as e:
        raise ReadError(source, "no such file") from e
    except IsADirectoryError as e:
        raise ReadError(source, f"is a directory, expected {expected}") from e
    except PermissionError as e:
        raise ReadError(source, "permission denied") from e
    except (OSError, ValueError) as e:  # ValueError: a NUL byte in the path
        raise ReadError(source, f"cannot open: {getattr(e, 'strerror', None) or e}") from e
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise ReadError(source, f"is {_kind(info.st_mode)}, expected {expected}")
        if info.st_size > limit:  # refused before reading a byte; the loop below still counts
            raise ReadError(source, f"file is {info.st_size} bytes; the limit is {limit}")
        os.set_blocking(fd, True)
        chunks: list[bytes] = []
        total = 0
        while True:
            chunk = os.read(fd, min(_READ_CHUNK, limit + 1 - total))
            if not chunk:
                return b"".join(chunks)
            total += len(chunk)
            if total > limit:
                raise ReadError(source, f"file is more than {limit} bytes; the limit is {limit}")
            chunks.append(chunk)
    except OSError as e:
        raise ReadError(source, f"cannot read: {e.strerror or e}") from e
    finally:
        os.close(fd)


def decode_utf8(data: bytes, source: str, *, strip_bom: bool = False) -> str:
    """`data` as UTF-8 text; `ReadError` naming the line and column of the first bad byte."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        line_start = data.rfind(b"\n", 0, e.start) + 1
        line = data.count(b"\n", 0, e.start) + 1
        column = len(data[line_start:e.start].decode("utf-8", "replace")) + 1
        raise ReadError(source, f"not UTF-8 text (byte {e.start})", f"line {line}, column {column}") from e
    return text.removeprefix("\ufeff") if strip_bom else text


def read_text(path: str | Path, limit: int, *, expected: str = "a file", strip_bom: bool = False) -> str:
    """`read_bytes` then `decode_utf8`."""
    return decode_utf8(read_bytes(path, limit, expected=expected), str(path), strip_bom=strip_bom)


def clip(text: str, limit: int) -> str:
    """`text`, or its first `limit` characters and how many more there were."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}… [{len(text) - limit} more characters not kept]"


def printable(text: str) -> str:
    """`text` on one line with every `CONTROL_CHARACTERS` match written as an escape (`\\n`,
    `\\x1b`, `\\u2028`): for data shown in a table, whatever was stored before it was refused."""
    return CONTROL_CHARACTERS.sub(lambda m: m.group().encode("unicode_escape", "backslashreplace").decode("ascii")
                                  if not "\ud800" <= m.group() <= "\udfff" else f"\\u{ord(m.group()):04x}", text)


MAX_SHOWN_CHARS: Final = 80
"""How much of a value an error message quotes: a 10 MB cell must not make a 10 MB message."""


def shown(value: Any, limit: int = MAX_SHOWN_CHARS) -> str:
    """A value quoted for a message, on one printable line however long or strange it is: text in
    quotes (`'trainig'`), anything else as its repr (`['en']`); past `limit` characters, the first
    `limit` and `… (N characters)`."""
    text = value if isinstance(value, str) else repr(value)
    head = printable(text[:limit])  # only the prefix: escaping all 10 MB first would cost 10 MB
    cut = "" if len(text) <= limit else "…"
    quoted = f"'{head}{cut}'" if isinstance(value, str) else head + cut
    return quoted if not cut else f"{quoted} ({len(text)} characters)"


_MARKS: Final = "\u200e\u200f\u061c"
DIRECTION_MARKS: Final = re.compile(f"[{_MARKS}]")
"""Left-to-right, right-to-left and Arabic letter marks: invisible, only steering how text around
them is displayed. A question may hold one (an RTL keyboard types them); a policy term, which a
coach must be able to read as the matcher does, may not."""


MARKS_ESCAPED: Final = {ord(c): f"\\u{ord(c):04x}" for c in _MARKS}
"""`str.translate` table writing each direction mark as its escape, to show where one hides."""


def direction_mark(text: str) -> str | None:
    """The first `DIRECTION_MARKS` character of `text`, written as U+XXXX."""
    m = DIRECTION_MARKS.search(text)
    return f"U+{ord(m.group()):04X}" if m else None


def control_character(text: str) -> str | None:
    """The first character of `text` that `CONTROL_CHARACTERS` refuses, written as U+XXXX."""
    m = CONTROL_CHARACTERS.search(text)
    return f"U+{ord(m.group()):04X}" if m else None


# --- JSON ----------------------------------------------------------------------------------------


class _Refused(ValueError):
    pass


class _Ambiguous(_Refused):
    """JSON that parses but does not say one thing."""


def _refuse_constant(name: str) -> Any:
    raise _Refused(f"{name} is not a JSON number")


def _bounded_int(digits: str) -> int:
    if len(digits.lstrip("-")) > MAX_JSON_INT_DIGITS:
        raise _Refused(f"an integer of {len(digits.lstrip('-'))} digits; the limit is {MAX_JSON_INT_DIGITS}")
    return int(digits)


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise _Refused(f"{text[:40]} is too large for a number")
    return value


def _one_value_per_key(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """An object whose keys are distinct: JSON lets a key repeat and Python keeps the last value,
    so `{"question": "a", "question": "b"}` would silently read as "b"."""
    obj: dict[str, Any] = {}
    for key, value in pairs:
        if key in obj:
            raise _Ambiguous(f"the key {shown(key)} appears twice in one object (which value is meant?)")
        obj[key] = value
    return obj


def valid_text(text: str) -> str:
    """`text` with each lone surrogate read as U+FFFD. A byte that is not UTF-8 on a command line
    reaches Python as one; kept, it made a Decision's JSON hold "\\udcff" (which coachctx's own
    readers refuse) while a trace of it held U+FFFD."""
    return text if text.isascii() or not _LONE_SURROGATE.search(text) else _LONE_SURROGATE.sub("\ufffd", text)


_LONE_SURROGATE: Final = re.compile("[\ud800-\udfff]")


def _has_surrogate(text: str) -> bool:
    if text.isascii():
        return False
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def _path(parts: tuple[str | int, ...]) -> str:
    out = ""
    for part in parts:
        out += f"[{part}]" if isinstance(part, int) else ("." if out else "") + part
    return out or "(top level)"


def check_json_value(value: Any, source: str, *, max_depth: int = MAX_JSON_DEPTH) -> None:
    """Refuse a value nested deeper than `max_depth`, or holding text that is not valid Unicode
    (a lone surrogate written as `\\ud800`): walked without recursion."""
    stack: list[tuple[Any, tuple[str | int, ...]]] = [(value, ())]
    while stack:
        item, at = stack.pop()
        if len(at) > max_depth:
            raise ReadError(source, f"nested deeper than {max_depth} levels (under {_path(at[:3])})")
        if isinstance(item, str):
            if _has_surrogate(item):
                raise ReadError(source, "text holds a lone surrogate (not valid Unicode)", _path(at))
        elif isinstance(item, Mapping):
            for key, child in item.items():
                if isinstance(key, str) and _has_surrogate(key):
                    raise ReadError(source, "a key holds a lone surrogate (not valid Unicode)", _path(at))
                stack.append((child, (*at, str(key))))
        elif isinstance(item, list):
            stack.extend((child, (*at, i)) for i, child in enumerate(item))


def _json_problem(e: json.JSONDecodeError) -> str:
    """JSON's own words, finished where they stop short ("Invalid control character at")."""
    if e.msg.startswith("Invalid control character") and e.pos < len(e.doc):
        code = f"{ord(e.doc[e.pos]):04x}"
        return f"a raw control character U+{code.upper()} inside a string; write it as \\u{code}"
    return e.msg


def parse_json(text: str | bytes, source: str, *, max_depth: int = MAX_JSON_DEPTH) -> Any:
    """Strict JSON from outside: `ReadError` (with line and column where JSON says) for text that
    is not JSON, NaN/Infinity, numbers Python cannot hold, a key twice in one object, nesting deeper
    than `max_depth` and lone surrogates."""
    if isinstance(text, bytes):
        text = decode_utf8(text, source)
    try:
        value = json.loads(text, parse_constant=_refuse_constant, parse_int=_bounded_int,
                           parse_float=_finite_float, object_pairs_hook=_one_value_per_key)
    except json.JSONDecodeError as e:
        raise ReadError(source, f"not valid JSON: {_json_problem(e)}", f"line {e.lineno}, column {e.colno}") from e
    except _Ambiguous as e:
        raise ReadError(source, str(e)) from e
    except _Refused as e:
        raise ReadError(source, f"not valid JSON: {e}") from e
    except RecursionError as e:
        raise ReadError(source, f"nested deeper than {max_depth} levels") from e
    check_json_value(value, source, max_depth=max_depth)
    return value


def parse_json_line(line: str, where: str) -> Any:
    """`parse_json` of one line of a JSONL file, `where` naming the file and line: a syntax error
    gives its column on that line, not "line 1" of a one-line document."""
    try:
        return parse_json(line, where)
    except ReadError as e:
        if not e.where.startswith("line 1, "):
            raise
        raise ReadError(e.source, e.problem, e.where.removeprefix("line 1, ")) from e
