"""What a write must pass before it reaches the database (a label's name, one line of plain text),
and stored text shown back as one line."""

from __future__ import annotations

import re
from typing import Final

from coachctx.reading import control_character, printable, shown
from coachctx.tools.store.errors import StoreError

LABEL_PATTERN: Final = re.compile(r"[a-z][a-z0-9_-]{0,31}\Z")
MAX_MESSAGE_CHARS: Final = 500
MAX_AUTHOR_CHARS: Final = 100
VERSION_REF: Final = re.compile(r"v?([0-9]{1,9})\Z")
"""A version as `resolve` reads it (`3` or `v3`): at most nine digits, or SQLite would overflow."""
VERSION_LIKE: Final = re.compile(r"v[0-9]+\Z")
"""`v` and digits, whatever their count: refused as a label even past the digits `resolve` reads."""


def check_label(name: str) -> str:
    """A label's name: lower-case letters, digits, '-' and '_', starting with a letter, and never
    something `resolve` would read as a version number (`v2` would name version 2, not the label)."""
    if not isinstance(name, str) or not LABEL_PATTERN.match(name):
        raise StoreError(f"label {shown(str(name), 40)} is not valid: use lower-case letters, digits, '-' or '_', "
                         "starting with a letter (e.g. live, draft)")
    if VERSION_REF.match(name) or VERSION_LIKE.match(name):
        raise StoreError(f"label {name!r} is not valid: it reads as a version number (versions are named 3 or "
                         "v3); choose a name such as live, draft or release-3")
    return name


def check_text(what: str, value: str, limit: int, empty: str | None = None) -> str:
    """A message, an author or a labelled question: one line of plain text. A newline, a tab or an
    escape sequence would break the history table, the label log and `policy show`'s first line."""
    if value is not None and not isinstance(value, str):  # JSON `5`, a list: not "empty", the wrong kind
        raise StoreError(f"{what}: expected text, got {type(value).__name__} {shown(value)}")
    if not value or not value.strip():
        if empty is None:
            empty = f"say {'what changed and why' if what == 'message' else 'who you are'}"
        raise StoreError(f"{what} is empty: {empty}")
    value = value.strip()
    bad = control_character(value)
    if bad is not None:
        raise StoreError(f"{what} holds the control character {bad}; write it as one line of plain text")
    if len(value) > limit:
        raise StoreError(f"{what} is {len(value)} characters; the limit is {limit}")
    return value


def one_line(text: str) -> str:
    """Stored text as one printable line: versions saved before control characters were refused
    may still hold newlines or escape sequences, and must not break a table or a terminal."""
    return printable(" ".join(text.split()))
