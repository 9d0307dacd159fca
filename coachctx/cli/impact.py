"""`coachctx impact QUESTIONS --base A --candidate B`: what a policy change does to a question set,
on this machine (`--jobs N`) or a Dask cluster (`--engine dask`)."""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys
import time
from typing import Any, Final, TextIO

from coachctx.cli.common import STORE_HELP, print_json_rows, store_url
from coachctx.errors import InputError
from coachctx.reading import printable


def register(sub: Any) -> None:
    p = sub.add_parser("impact", help="run a question set through two policies and report what changes")
    p.add_argument("questions", help="YAML like tests/data/questions/dev.yaml, or a JSONL/CSV log")
    p.add_argument("--base", required=True, metavar="A", help="a version number, a label or a policy file")
    p.add_argument("--candidate", required=True, metavar="B", help="a version number, a label or a policy file")
    p.add_argument("--json", action="store_true")
    p.add_argument("--changed-only", action="store_true", help="list only the questions whose decision changed")
    p.add_argument("--athlete", default=None, help="athlete for rows that name none (default: maya)")
    p.add_argument("--costs", default="hand", choices=("hand", "measured"))
    p.add_argument("--athletes-dir", default=None, help=argparse.SUPPRESS)
    p.add_argument("--store", default=None, metavar="URL", help=STORE_HELP)
    p.add_argument("--jobs", type=int, default=1, metavar="N",
                   help="decide in N worker processes on this machine (default 1; at most its cores)")
    p.add_argument("--engine", default="local", choices=("local", "dask"),
                   help="dask: decide a partitioned JSONL or Parquet log (a file, directory or glob) on a Dask "
                        "cluster; needs pip install 'coachctx[dask]'")
    p.add_argument("--scheduler", default=None, metavar="ADDRESS",
                   help="the Dask scheduler's address (tcp://host:8786) for --engine dask; "
                        "without it Dask runs local processes")


def cmd_impact(args: argparse.Namespace) -> int:
    from coachctx.engine.services import FixtureUpstream
    from coachctx.tools.impact import DEFAULT_ATHLETE, run_impact
    from coachctx.tools.impact_report import render_impact
    from coachctx.tools.questions import read_questions
    from coachctx.tools.store import PolicyStore, looks_like_file, resolve_policy

    if args.jobs < 1:
        raise InputError(f"--jobs must be 1 or more, got {args.jobs}")
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    if args.jobs > cores:  # each worker holds both compiled policies: more than the cores only costs memory
        raise InputError(f"--jobs {args.jobs} is more than the {cores} core(s) this process may use; "
                         f"at most --jobs {cores} (or --engine dask for a cluster)")
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
        store = PolicyStore(store_url(args.store), create=False)
    try:
        base = resolve_policy(args.base, store)
        candidate = resolve_policy(args.candidate, store)
    finally:
        if store is not None:
            store.close()
    # the names are paths as typed, shown in the report's first line: one printable line each
    base_name, candidate_name = printable(base.source), printable(candidate.source)
    if questions is None:
        from coachctx.tools.impact_dask import run_impact_dask

        report = run_impact_dask(args.questions, base.policy, candidate.policy, scheduler=args.scheduler,
                                 base_name=base_name, candidate_name=candidate_name, upstream=upstream,
                                 default_athlete=args.athlete or DEFAULT_ATHLETE, cost_mode=args.costs,
                                 changed_only=args.changed_only)
    else:
        questions = dataclasses.replace(questions, source=printable(questions.source))
        with Progress(sys.stderr) as progress:
            report = run_impact(questions, base.policy, candidate.policy, base_name=base_name,
                                candidate_name=candidate_name, upstream=upstream,
                                default_athlete=args.athlete or DEFAULT_ATHLETE, cost_mode=args.costs,
                                jobs=args.jobs, progress=progress, changed_only=args.changed_only)
    if args.json:
        print_json_rows(report.json_head(), "rows", report.json_rows(changed_only=args.changed_only))
    else:
        print(render_impact(report, changed_only=args.changed_only))
    return 0


class Progress:
    """How far a long run is, on stderr (the report goes to stdout): on a terminal one line
    rewritten at most once a second; elsewhere (a log file, CI) a line at each tenth, once the run
    has taken `QUIET_SECONDS`. A run shorter than that prints nothing."""

    QUIET_SECONDS: Final = 5.0

    def __init__(self, out: TextIO, clock: Any = time.monotonic) -> None:
        self.out, self.clock = out, clock
        self.started = clock()
        self.terminal = out.isatty()
        self.shown_at, self.tenth, self.drawn = self.started, 0, False

    def __call__(self, done: int, total: int) -> None:
        now = self.clock()
        took = now - self.started
        if took < self.QUIET_SECONDS or not total:
            return
        tenth = 10 * done // total
        if self.terminal and (now - self.shown_at >= 1.0 or done == total):
            self.out.write(f"\r{self._line(done, total, took)}\x1b[K")
            self.drawn = True
        elif not self.terminal and tenth > self.tenth:
            self.out.write(self._line(done, total, took) + "\n")
        else:
            return
        self.shown_at, self.tenth = now, tenth
        self.out.flush()

    @staticmethod
    def _line(done: int, total: int, took: float) -> str:
        left = "" if done in (0, total) else f", about {_duration(took * (total - done) / done)} left"
        return f"impact: {done:,} of {total:,} questions decided ({100 * done // total}%) in {_duration(took)}{left}"

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, *exc: object) -> None:
        if self.drawn:
            self.out.write("\n")
            self.out.flush()


def _duration(seconds: float) -> str:
    whole = int(seconds)
    return f"{whole // 60} min {whole % 60} s" if whole >= 60 else f"{whole} s"


COMMANDS: Final = {"impact": cmd_impact}
