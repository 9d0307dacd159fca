"""What the command groups share: argument types, `--policy` / `--policy-version`, JSON on stdout."""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any, Final

from coachctx.engine.policy import DEFAULT_POLICY_PATH, Policy, load_policy
from coachctx.errors import InputError
from coachctx.reading import shown
from coachctx.tools.trace import json_text

STORE_HELP: Final = ("policy store: any SQLAlchemy URL or a SQLite file path "
                     "(default: $COACHCTX_STORE, else ~/.coachctx/policies.sqlite)")


def whole_number(low: int, high: int) -> Callable[[str], int]:
    """An argparse type: ASCII digits only, within [low, high]. `int()` alone takes `1_000`,
    Arabic-Indic digits and numbers too large for SQLite, each ending in a traceback or a surprise."""

    def parse(text: str) -> int:
        value = text.strip()
        if not re.fullmatch(r"-?[0-9]{1,18}", value) or not low <= int(value) <= high:
            raise argparse.ArgumentTypeError(f"expected a whole number from {low} to {high}, got {shown(text)}")
        return int(value)

    parse.__name__ = "whole number"
    return parse


def add_policy_version_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--policy-version", default=None, metavar="V|LABEL",
                   help="take the policy from the store: a version number or a label such as live")
    p.add_argument("--store", default=None, metavar="URL", help=STORE_HELP)


def store_url(value: str | None) -> str | None:
    """A plain path given to --store means a SQLite file, as $COACHCTX_STORE does."""
    from coachctx.tools.store import default_store_url

    if value is None:
        return None
    return default_store_url({"COACHCTX_STORE": value})


def policy_from_store(ref: str, store: str | None) -> tuple[Policy, str, str]:
    """(policy, source, version) for `--policy-version`: the Decision records the version."""
    from coachctx.tools.store import looks_like_file, resolve_policy

    if not ref.strip() or looks_like_file(ref):
        raise InputError(f"--policy-version takes a version number or a label, got {shown(ref)} "
                         "(for a file, use --policy)")
    loaded = resolve_policy(ref, store_url(store))
    return loaded.policy, loaded.source, str(loaded.version)


def _policy_file(path: str | None) -> tuple[Policy, str]:
    p = Path(path) if path else DEFAULT_POLICY_PATH
    return load_policy(p), display_path(p)


def policy_for(args: argparse.Namespace) -> tuple[Policy, str, str | None]:
    """(policy, source, store version): `--policy FILE`, `--policy-version V|LABEL`, or the default."""
    if args.policy_version is None:
        return (*_policy_file(args.policy), None)
    if args.policy is not None:
        raise InputError("use --policy FILE or --policy-version V, not both")
    return policy_from_store(args.policy_version, args.store)


def display_path(p: Path) -> str:
    try:
        return str(p.resolve().relative_to(Path.cwd()))
    except ValueError:
        return str(p)


def print_json(obj: Any) -> None:
    """Strict JSON on stdout; all-ASCII escapes when stdout cannot encode the text (a Latin-1 terminal)."""
    print(_stdout_json(obj))


def print_json_rows(head: Mapping[str, Any], key: str, rows: Iterable[Any]) -> None:
    """`print_json({**head, key: list(rows)})`, the same text, written a row at a time: a report of a
    million rows is never one object, nor one string, in memory."""
    opening = _stdout_json({**head, key: []})
    assert opening.endswith("[]\n}"), opening[-20:]
    out = sys.stdout
    out.write(opening[:-len("[]\n}")] + "[")
    first = True
    for row in rows:
        out.write(("\n    " if first else ",\n    ") + _stdout_json(row).replace("\n", "\n    "))
        first = False
    out.write("]\n}\n" if first else "\n  ]\n}\n")


def _stdout_json(obj: Any) -> str:
    text = json_text(obj)
    encoding = getattr(sys.stdout, "encoding", None) or "utf-8"
    try:
        text.encode(encoding)
    except (UnicodeEncodeError, LookupError):
        text = json_text(obj, ascii_only=True)
    return text
