"""`coachctx suggest LOG`: vocabulary edits learned from labelled questions, with their evidence."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any, Final

from coachctx.cli.common import add_policy_version_args, policy_for, print_json
from coachctx.errors import InputError
from coachctx.reading import printable, shown

if TYPE_CHECKING:
    from coachctx.tools.suggest_log import LabelledRow

MAX_SUGGESTIONS: Final = 200
DEFAULT_MAX_WORDS: Final = 100_000
"""The words of distinct questions `suggest` learns from unless `--max-words` says more: learning
costs about 0.25 ms and 12 kB a word on this machine (a 2.7 MB log of 20,000 random questions, 279,000
words, took 68 s and 3.3 GB and said nothing first; an adversarial pass). The corpus ten times over, 3,331
distinct questions, is about 37,000."""
MAX_CONFLICTS_SHOWN: Final = 5
"""How many questions with conflicting labels the text output lists, and how many rows of each."""


def _count(text: str) -> int:
    if not text.isascii() or not text.isdigit() or len(text) > 3 or not 1 <= int(text) <= MAX_SUGGESTIONS:
        raise argparse.ArgumentTypeError(f"expected a whole number from 1 to {MAX_SUGGESTIONS}, got {shown(text)}")
    return int(text)


def _words(text: str) -> int:
    if not text.isascii() or not text.isdigit() or len(text) > 9 or int(text) < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number of words, 1 or more, got {shown(text)}")
    return int(text)


def register(sub: Any) -> None:
    p = sub.add_parser("suggest", help="propose vocabulary edits from labelled questions, with their evidence")
    p.add_argument("log", help="labelled rows: YAML like the corpus, JSONL or CSV with `question` and `intents` "
                               "(optional `lang`, `origin: coach|model`), or `explain --json` / trace lines, "
                               "whose model routes count as model labels")
    p.add_argument("--policy", default=None, help="the policy to improve (default: policy/default.yaml)")
    add_policy_version_args(p)
    p.add_argument("--json", action="store_true")
    p.add_argument("--max", type=_count, default=20, metavar="N", help=f"at most N suggestions (1 to {MAX_SUGGESTIONS})")
    p.add_argument("--max-words", type=_words, default=DEFAULT_MAX_WORDS, metavar="N",
                   help=f"learn from a log whose distinct questions hold at most N words (default {DEFAULT_MAX_WORDS:,}; "
                        "each costs about 12 kB and 0.25 ms)")


def cmd_suggest(args: argparse.Namespace) -> int:
    from coachctx.tools.suggest import read_labelled, suggest
    from coachctx.tools.suggest_candidates import learning_words
    from coachctx.tools.suggest_log import conflicting_labels

    policy, source, _ = policy_for(args)
    rows = read_labelled(args.log)
    words = learning_words(rows)
    if words > args.max_words:
        distinct = len({r.question for r in rows})
        raise InputError(f"{printable(args.log)}: its {distinct:,} distinct questions hold {words:,} words, more than "
                         f"the {args.max_words:,} suggest learns from unless told (about {words * 12 / 1e6:.1f} GB and "
                         f"{words * 0.25 / 1000:.0f} s); pass --max-words {words} to learn from all of it, or "
                         "split the log")
    found = suggest(rows, policy, limit=args.max)
    conflicts = conflicting_labels(rows)
    by_row = {r.row: r for r in rows}
    if args.json:
        print_json({"policy": source, "rows": len(rows), "suggestions": [s.to_json(by_row) for s in found],
                    "conflicts": [[{"row": r.row, "intents": list(r.intents), "origin": r.origin} for r in group]
                                  for group in conflicts]})
        return 0
    print(f"{len(found)} suggestion(s) for {printable(source)} from {len(rows)} labelled row(s) in {printable(args.log)} "
          "(measured without a model; gain = rows fixed - rows broken + 0.1 x rows moved to the rules; "
          "a model's label counts half)")
    _print_conflicts(conflicts)
    for rank, s in enumerate(found, 1):
        print(f"\n#{rank} {s.edit.describe()}  gain {s.gain:g}")
        for what, numbers in (("fixes", s.fixes), ("breaks", s.breaks), ("moves to the rules", s.to_rules),
                              ("moves to the model", s.from_rules)):
            if numbers:
                shown = "; ".join(f"row {n} {by_row[n].question[:60]!r} ({'/'.join(by_row[n].intents)})"
                                  for n in numbers[:3])
                more = f" and {len(numbers) - 3} more" if len(numbers) > 3 else ""
                print(f"   {what} {len(numbers)}: {shown}{more}")
        for finding in s.lint:
            print(f"   lint: {finding}")
    if not found:
        print("nothing to suggest: no edit fixes more rows than it breaks")
    return 0


def _print_conflicts(conflicts: list[tuple[LabelledRow, ...]]) -> None:
    """The questions labelled one way in some rows and another in others: no edit satisfies both."""
    from coachctx.tools.suggest_log import describe_conflict

    if not conflicts:
        return
    print(f"{len(conflicts)} question(s) labelled differently in different rows (no edit can route a question "
          "both ways: settle the labels):")
    for group in conflicts[:MAX_CONFLICTS_SHOWN]:
        print(f"   {shown(group[0].question, 60)}: {describe_conflict(group, MAX_CONFLICTS_SHOWN)}")
    if len(conflicts) > MAX_CONFLICTS_SHOWN:
        print(f"   and {len(conflicts) - MAX_CONFLICTS_SHOWN} more question(s) (--json lists them all)")


COMMANDS: Final = {"suggest": cmd_suggest}
