"""The first line `policy show` writes above a version (`# coachctx policy version N ...`), which
`save` reads back as the base, so "show, edit, save" is safe without remembering N."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Final

from coachctx.tools.store.checks import one_line

if TYPE_CHECKING:
    from coachctx.tools.store.versions import Label, Version

HEADER_PREFIX: Final = "# coachctx policy version "
_HEADER = re.compile(r"^# coachctx policy version ([0-9]{1,9})\b[^\n]*\n?")
"""At most nine digits, as `resolve` reads them: a longer number is no version and would overflow SQLite."""


def based_on(text: str) -> int | None:
    """The version a file exported by `export_text` says it came from, if it says so."""
    m = _HEADER.match(text)
    return int(m.group(1)) if m else None


def strip_header(text: str) -> str:
    return _HEADER.sub("", text, count=1)


def export_text(version: Version, labels: Mapping[str, Label] | None = None) -> str:
    """The version's YAML under a first line naming it, which `save` reads back as the base."""
    on = [name for name, label in (labels or {}).items() if label.version == version.number]
    tags = f" ({', '.join(on)})" if on else ""
    header = (f"{HEADER_PREFIX}{version.number}{tags}, saved {version.created_at:%Y-%m-%d %H:%M} UTC by "
              f"{one_line(version.author)}: {one_line(version.message)}")
    body = version.yaml if version.yaml.endswith("\n") else version.yaml + "\n"
    return f"{header}\n{body}"
