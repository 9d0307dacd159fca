"""`coachctx policy ...`: the versioned policy store from the command line (save, history, show,
diff, label). The store and diff modules are imported inside the commands, so `coachctx explain`
does not pay for SQLAlchemy.
"""

from __future__ import annotations

import argparse
import getpass
import os
import sys
from typing import Any, Final

from coachctx.cli.common import STORE_HELP, print_json, store_url, whole_number
from coachctx.engine.policy import Policy, read_policy_text
from coachctx.errors import InputError
from coachctx.reading import printable, shown

AUTHOR_ENV: Final = "COACHCTX_AUTHOR"


MAX_HISTORY_LIMIT: Final = 1_000_000


def _default_author() -> str:
    try:
        return os.environ.get(AUTHOR_ENV) or getpass.getuser()
    except (KeyError, OSError):
        return "unknown"


def register(sub: Any) -> None:
    store = argparse.ArgumentParser(add_help=False)
    store.add_argument("--store", default=None, metavar="URL", help=STORE_HELP)

    p = sub.add_parser("policy", help="the versioned policy store: save, history, show, diff, label")
    policy = p.add_subparsers(dest="policy_command", required=True, parser_class=type(p))

    q = policy.add_parser("save", parents=[store], help="validate a policy file and store it as a new version")
    q.add_argument("file")
    q.add_argument("-m", "--message", required=True, help="what changed and why")
    q.add_argument("--label", default=None, help="move this label (e.g. draft, live) to the new version")
    q.add_argument("--author", default=None, help=f"who saves (default: ${AUTHOR_ENV} or your user name)")
    q.add_argument("--base", default=None, metavar="V",
                   help="the version the file was edited from (default: read from the first line "
                        "`coachctx policy show` writes)")

    q = policy.add_parser("history", parents=[store], help="list versions, or the moves of one label")
    q.add_argument("--label", default=None, help="show every move of this label (saves and reverts)")
    q.add_argument("--limit", type=whole_number(1, MAX_HISTORY_LIMIT), default=None,
                   help=f"at most this many rows (1 to {MAX_HISTORY_LIMIT})")

    q = policy.add_parser("show", parents=[store], help="print a version's YAML")
    q.add_argument("version", metavar="V", help="a version number or a label")

    q = policy.add_parser("diff", parents=[store], help="what changed between two policies")
    q.add_argument("a", metavar="V1", help="a version number, a label or a policy file")
    q.add_argument("b", metavar="V2", help="a version number, a label or a policy file")
    q.add_argument("--json", action="store_true")

    q = policy.add_parser("label", parents=[store], help="point a label at a version (revert: an older one)")
    q.add_argument("label")
    q.add_argument("version", metavar="V", help="a version number or another label")
    q.add_argument("--author", default=None)


def _one_line(text: str) -> str:
    """Stored text as one printable line (`store.checks.one_line`, without importing SQLAlchemy)."""
    return printable(" ".join(text.split()))


def cmd_policy(args: argparse.Namespace) -> int:
    from coachctx.tools.store import MissingStoreError, PolicyStore, default_store_url, looks_like_file

    if args.policy_command == "diff" and looks_like_file(args.a) and looks_like_file(args.b):
        return _diff(args, None)  # two files: no store is opened, so none is created
    try:
        # only a save creates the store: a read of a mistyped --store must leave nothing behind
        store = PolicyStore(store_url(args.store), create=args.policy_command == "save")
    except MissingStoreError:
        # only the per-user default may not exist yet without a word: a store named by --store or
        # $COACHCTX_STORE that does not exist is a typo until shown otherwise, as in `labels list`
        url = store_url(args.store) or default_store_url()
        if args.policy_command != "history" or args.label is not None or url != default_store_url({}):
            raise
        print(f"no versions yet in {printable(url)}; save one with `coachctx policy save FILE -m MESSAGE`")
        return 0
    with store:
        return _POLICY[args.policy_command](args, store)


def _save(args: argparse.Namespace, store: Any) -> int:
    text = read_policy_text(args.file)
    base = store.resolve(args.base).number if args.base is not None else None
    version = store.save(text, message=args.message, author=args.author or _default_author(), label=args.label,
                         base=base, source=args.file)
    moved = f"; {args.label} -> {version.number}" if args.label else ""
    parent = f", parent {version.parent}" if version.parent is not None else ""
    print(f"saved version {version.number} (digest {version.digest}{parent}){moved}")
    _say_lint_errors(version.policy())
    return 0


def _say_lint_errors(policy: Policy) -> None:
    """A policy with lint errors is saved, as the playground saves it, but not without a word: each
    rule that can never act as written is named on stderr, as `check-policy` names it."""
    from coachctx.tools.lint import errors, lint_policy

    found = errors(lint_policy(policy))
    if found:
        print(f"warning: the saved policy has {len(found)} lint error(s) (`coachctx check-policy` lists them too):",
              file=sys.stderr)
        for finding in found:
            print(f"  {printable(str(finding))}", file=sys.stderr)


def _history(args: argparse.Namespace, store: Any) -> int:
    if args.label is not None:
        moves = store.label_log(args.label)
        if not moves:
            raise InputError(f"label {shown(args.label)} has never been set; labels: "
                             f"{', '.join(store.labels()) or 'none yet'}")
        for m in moves[: args.limit]:
            v = store.get(m.version)
            was = f" (was {m.previous})" if m.previous is not None else ""
            how = "saved" if m.kind == "save" else "pointed"
            print(f"{m.at:%Y-%m-%d %H:%M}  {args.label} -> {m.version}{was}  {how} by {_one_line(m.author)}  "
                  f"[{v.digest}] {_one_line(v.message)}")
        return 0
    versions = store.history(args.limit)
    if not versions:
        print(f"no versions yet in {store.display_url}; save one with `coachctx policy save FILE -m MESSAGE`")
        return 0
    labels: dict[int, list[str]] = {}
    for name, label in store.labels().items():
        labels.setdefault(label.version, []).append(name)
    for v in versions:
        on = f"  ({', '.join(labels[v.number])})" if v.number in labels else ""
        parent = f"parent {v.parent}" if v.parent is not None else "no parent"
        print(f"{v.number:>4}  {v.created_at:%Y-%m-%d %H:%M}  {_one_line(v.author):<12} {v.digest}  {parent:<10}{on}  "
              f"{_one_line(v.message)}")
    return 0


def _show(args: argparse.Namespace, store: Any) -> int:
    from coachctx.tools.store import export_text

    sys.stdout.write(export_text(store.resolve(args.version), store.labels()))
    return 0


def _diff(args: argparse.Namespace, store: Any) -> int:
    from coachctx.tools.policy_diff import diff_policies, render_diff
    from coachctx.tools.store import resolve_policy

    a, b = resolve_policy(args.a, store), resolve_policy(args.b, store)
    diff = diff_policies(a.policy, b.policy)
    if args.json:
        print_json({"a": a.source, "b": b.source, **diff.to_json()})
    else:
        print(render_diff(diff, a.source, b.source))
    return 0


def _label(args: argparse.Namespace, store: Any) -> int:
    move = store.set_label(args.label, args.version, author=args.author or _default_author())
    if move.previous == move.version:
        print(f"{move.label} already points at version {move.version}; nothing changed")
        return 0
    was = f" (was {move.previous})" if move.previous is not None else ""
    print(f"{move.label} -> {move.version}{was}")
    return 0


_POLICY: Final = {"save": _save, "history": _history, "show": _show, "diff": _diff, "label": _label}


COMMANDS: Final = {"policy": cmd_policy}
