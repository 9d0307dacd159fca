"""The `policy` and `impact` subcommands, and `--policy-version` for explain and replay.

`cli.py` calls `register`, `add_policy_version_args` and `policy_from_store`, and routes
`COMMANDS` here. The store, impact and diff modules are imported inside the commands, so
`coachctx explain` does not pay for SQLAlchemy.
"""

from __future__ import annotations

import argparse
import dataclasses
import getpass
import os
import re
import sys
from collections.abc import Callable
from typing import Any, Final

from coachctx.errors import InputError
from coachctx.policy import Policy, read_policy_text
from coachctx.reading import printable

AUTHOR_ENV: Final = "COACHCTX_AUTHOR"
MAX_HISTORY_LIMIT: Final = 1_000_000
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


def shown(text: str) -> str:
    """An argument quoted on one printable line, however long or strange it is."""
    text = printable(text)
    return f"'{text if len(text) <= 40 else text[:37] + '...'}'"


def add_policy_version_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--policy-version", default=None, metavar="V|LABEL",
                   help="take the policy from the store: a version number or a label such as live")
    p.add_argument("--store", default=None, metavar="URL", help=STORE_HELP)


def _store_url(value: str | None) -> str | None:
    """A plain path given to --store means a SQLite file, as $COACHCTX_STORE does."""
    from coachctx.store import default_store_url

    if value is None:
        return None
    return default_store_url({"COACHCTX_STORE": value})


def policy_from_store(ref: str, store: str | None) -> tuple[Policy, str, str]:
    """(policy, source, version) for `--policy-version`: the Decision records the version."""
    from coachctx.store import looks_like_file, resolve_policy

    if not ref.strip() or looks_like_file(ref):
        raise InputError(f"--policy-version takes a version number or a label, got {ref!r} "
                         "(for a file, use --policy)")
    loaded = resolve_policy(ref, _store_url(store))
    return loaded.policy, loaded.source, str(loaded.version)


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

    p = sub.add_parser("impact", help="run a question set through two policies and report what changes")
    p.add_argument("questions", help="YAML like shared/questions/dev.yaml, or a JSONL/CSV log")
    p.add_argument("--base", required=True, metavar="A", help="a version number, a label or a policy file")
    p.add_argument("--candidate", required=True, metavar="B", help="a version number, a label or a policy file")
    p.add_argument("--json", action="store_true")
    p.add_argument("--changed-only", action="store_true", help="list only the questions whose decision changed")
    p.add_argument("--athlete", default=None, help="athlete for rows that name none (default: maya)")
    p.add_argument("--costs", default="hand", choices=("hand", "measured"))
    p.add_argument("--athletes-dir", default=None, help=argparse.SUPPRESS)
    p.add_argument("--store", default=None, metavar="URL", help=STORE_HELP)
    p.add_argument("--jobs", type=int, default=1, metavar="N",
                   help="decide in N worker processes on this machine (default 1)")
    p.add_argument("--engine", default="local", choices=("local", "dask"),
                   help="dask: decide a partitioned JSONL or Parquet log (a file, directory or glob) on a Dask "
                        "cluster; needs pip install 'coachctx[dask]'")
    p.add_argument("--scheduler", default=None, metavar="ADDRESS",
                   help="the Dask scheduler's address (tcp://host:8786) for --engine dask; "
                        "without it Dask runs local processes")


# --- policy ------------------------------------------------------------------------------------


def _one_line(text: str) -> str:
    """Stored text as one printable line (`store._one_line`, without importing SQLAlchemy)."""
    return printable(" ".join(text.split()))


def cmd_policy(args: argparse.Namespace) -> int:
    from coachctx.store import MissingStoreError, PolicyStore, default_store_url, looks_like_file

    if args.policy_command == "diff" and looks_like_file(args.a) and looks_like_file(args.b):
        return _diff(args, None)  # two files: no store is opened, so none is created
    try:
        # only a save creates the store: a read of a mistyped --store must leave nothing behind
        store = PolicyStore(_store_url(args.store), create=args.policy_command == "save")
    except MissingStoreError:
        if args.policy_command != "history" or args.label is not None:
            raise
        print(f"no versions yet in {printable(_store_url(args.store) or default_store_url())}; save one with "
              "`coachctx policy save FILE -m MESSAGE`")
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
    return 0


def _history(args: argparse.Namespace, store: Any) -> int:
    if args.label is not None:
        moves = store.label_log(args.label)
        if not moves:
            raise InputError(f"label {args.label!r} has never been set; labels: "
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
    from coachctx.store import export_text

    sys.stdout.write(export_text(store.resolve(args.version), store.labels()))
    return 0


def _diff(args: argparse.Namespace, store: Any) -> int:
    from coachctx.cli import print_json
    from coachctx.policy_diff import diff_policies, render_diff
    from coachctx.store import resolve_policy

    a, b = resolve_policy(args.a, store), resolve_policy(args.b, store)
    diff = diff_policies(a.policy, b.policy)
    if args.json:
        print_json({"a": a.source, "b": b.source, **diff.to_json()})
    else:
        print(render_diff(diff, a.source, b.source))
    return 0


def _label(args: argparse.Namespace, store: Any) -> int:
    move = store.set_label(args.label, args.version, author=args.author or _default_author())
    was = f" (was {move.previous})" if move.previous is not None else ""
    print(f"{move.label} -> {move.version}{was}")
    return 0


_POLICY: Final = {"save": _save, "history": _history, "show": _show, "diff": _diff, "label": _label}


# --- impact ------------------------------------------------------------------------------------


def cmd_impact(args: argparse.Namespace) -> int:
    # print_json: a Latin-1 terminal gets all-ASCII JSON, not backslash escapes JSON cannot read
    from coachctx.cli import print_json
    from coachctx.impact import DEFAULT_ATHLETE, read_questions, render_impact, run_impact
    from coachctx.services import FixtureUpstream
    from coachctx.store import PolicyStore, looks_like_file, resolve_policy

    if args.jobs < 1:
        raise InputError(f"--jobs must be 1 or more, got {args.jobs}")
    if args.scheduler is not None and args.engine != "dask":
        raise InputError("--scheduler is for --engine dask")
    if args.engine == "dask" and args.jobs != 1:
        raise InputError("--jobs is for the local engine; a Dask cluster has its own workers")
    upstream = FixtureUpstream(args.athletes_dir) if args.athletes_dir else FixtureUpstream()
    if args.athlete is not None:  # checked before any work: rows naming no athlete would all be skipped
        upstream.check(args.athlete)
    questions = read_questions(args.questions) if args.engine == "local" else None
    store = None
    if not (looks_like_file(args.base) and looks_like_file(args.candidate)):
        store = PolicyStore(_store_url(args.store), create=False)
    try:
        base = resolve_policy(args.base, store)
        candidate = resolve_policy(args.candidate, store)
    finally:
        if store is not None:
            store.close()
    # the names are paths as typed, shown in the report's first line: one printable line each
    base_name, candidate_name = printable(base.source), printable(candidate.source)
    if questions is None:
        from coachctx.impact_dask import run_impact_dask

        report = run_impact_dask(args.questions, base.policy, candidate.policy, scheduler=args.scheduler,
                                 base_name=base_name, candidate_name=candidate_name, upstream=upstream,
                                 default_athlete=args.athlete or DEFAULT_ATHLETE, cost_mode=args.costs,
                                 changed_only=args.changed_only)
    else:
        questions = dataclasses.replace(questions, source=printable(questions.source))
        report = run_impact(questions, base.policy, candidate.policy, base_name=base_name,
                            candidate_name=candidate_name, upstream=upstream,
                            default_athlete=args.athlete or DEFAULT_ATHLETE, cost_mode=args.costs, jobs=args.jobs)
    if args.json:
        print_json(report.to_json(changed_only=args.changed_only))
    else:
        print(render_impact(report, changed_only=args.changed_only))
    return 0


COMMANDS: Final = {"policy": cmd_policy, "impact": cmd_impact}
