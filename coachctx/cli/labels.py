"""`coachctx labels export|import|list|delete`: the store's question labels as JSONL in the corpus
format, listed with their ids, and deleted by id.

A line is one label: the corpus's fields (`question`, `intents`, optional `needs`, `scope`, `lang`)
plus `origin` (coach or model) and where the label came from (`athlete`, `author`, `at`,
`policy_digest`, `route_source`, `routed`). `coachctx suggest` and `coachctx impact` read the
exported file as it is. An import checks every line before it stores any, and names the first
bad one; an export is written whole or not at all.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Final

from coachctx.cli.common import STORE_HELP, store_url
from coachctx.cli.policy import AUTHOR_ENV, _default_author
from coachctx.engine.policy_errors import did_you_mean
from coachctx.errors import InputError
from coachctx.reading import parse_json_line, printable, read_text, shown

MAX_LABELS_BYTES: Final = 64 * 1024 * 1024
FIELDS: Final = ("question", "q", "intents", "needs", "scope", "lang", "origin", "athlete", "author", "at",
                 "policy_digest", "route_source", "routed", "id")
"""`q` is the corpus YAML's name for `question`; a corpus row's `id` is read and not kept."""


def register(sub: Any) -> None:
    p = sub.add_parser("labels", help="question labels in the policy store: export, import, list or delete")
    labels = p.add_subparsers(dest="labels_command", required=True, parser_class=type(p))
    q = labels.add_parser("export", help="write every stored label as JSONL (the corpus format plus origin)")
    q.add_argument("--out", default=None, metavar="FILE", help="write to FILE (whole or not at all) instead of stdout")
    q.add_argument("--force", action="store_true", help="replace the --out file if it exists")
    q.add_argument("--store", default=None, metavar="URL", help=STORE_HELP)
    q = labels.add_parser("import", help="check every line of a JSONL file, then store its labels")
    q.add_argument("file")
    q.add_argument("--author", default=None,
                   help=f"author of lines that name none (default: ${AUTHOR_ENV} or your user name)")
    q.add_argument("--store", default=None, metavar="URL", help=STORE_HELP)
    q = labels.add_parser("list", help="every stored label, one a line, with the id `labels delete` takes")
    q.add_argument("--store", default=None, metavar="URL", help=STORE_HELP)
    q = labels.add_parser("delete", help="delete stored labels by id (see `labels list`)")
    q.add_argument("ids", nargs="+", type=_label_id, metavar="ID")
    q.add_argument("--store", default=None, metavar="URL", help=STORE_HELP)


def _label_id(text: str) -> int:
    if not (text.isascii() and text.isdigit()) or not 0 < int(text) < 2**63:
        raise argparse.ArgumentTypeError(f"a label id is a whole number from 1 (see `coachctx labels list`), "
                                         f"got {shown(text)}")
    return int(text)


def labels_jsonl(labels: Any) -> str:
    """Labels as JSONL text, one line each."""
    return "".join(json.dumps(label.to_json(), ensure_ascii=False) + "\n" for label in labels)


def parse_labels_jsonl(text: str, source: str, *, author: str) -> list[Any]:
    """Every line checked as a label (`QuestionLabel`); `InputError` naming the first bad line."""
    from coachctx.tools.questions import both_spellings
    from coachctx.tools.store import QuestionLabel, StoreError, check_question_label

    out = []
    for line_no, line in enumerate(text.split("\n"), 1):
        if not line.strip():
            continue
        where = f"{source}: line {line_no}"
        obj = parse_json_line(line.removesuffix("\r"), where)
        if not isinstance(obj, Mapping):
            raise InputError(f"{where}: expected a JSON object, got {type(obj).__name__}")
        unknown = [k for k in obj if k not in FIELDS]
        if unknown:
            raise InputError(f"{where}: unknown field {shown(str(unknown[0]))}{did_you_mean(unknown[0], FIELDS)}")
        both = both_spellings(obj, (("question", "q"),))
        if both is not None:
            raise InputError(f"{where}: {both}")
        try:
            label = QuestionLabel(
                question=obj.get("question", obj.get("q")), intents=_listed(obj.get("intents")),
                author=obj.get("author", author), athlete=obj.get("athlete"),
                needs=None if obj.get("needs") is None else _listed(obj["needs"]), scope=obj.get("scope"),
                lang=obj.get("lang"), origin=obj.get("origin", "coach"), created_at=_time(obj.get("at")),
                policy_digest=obj.get("policy_digest"), route_source=obj.get("route_source"),
                routed=obj.get("routed"))
            out.append(check_question_label(label))
        except (StoreError, ValueError) as e:
            raise InputError(f"{where}: {e}") from e
    if not out:
        raise InputError(f"{source}: no labels (one JSON object per line, each with `question` and `intents`)")
    return out


def _listed(value: Any) -> Any:
    """A list, or a corpus CSV cell's "training;injury" / "training injury"."""
    if isinstance(value, str):
        return value.replace(";", " ").replace(",", " ").split()
    return () if value is None else value


def _time(value: Any) -> datetime | None:
    """An ISO time; one without an offset is UTC (`check_question_label` converts the rest)."""
    if value is None:
        return None
    if isinstance(value, str):
        try:
            parsed = datetime.fromisoformat(value)
        except ValueError:
            parsed = None
        if parsed is not None:
            return parsed if parsed.tzinfo is not None else parsed.replace(tzinfo=UTC)
    raise ValueError(f"at: {shown(value)} is not an ISO time such as 2026-12-04T14:30:00+00:00 "
                     "(without an offset it is taken as UTC)")


def cmd_labels(args: argparse.Namespace) -> int:
    from coachctx.tools.store import PolicyStore
    from coachctx.tools.trace import write_text_atomic

    if args.labels_command in ("list", "delete"):
        return _list_or_delete(args)
    if args.labels_command == "export":
        with PolicyStore(store_url(args.store), create=False) as store:
            labels = store.question_labels()
        text = labels_jsonl(labels)
        if args.out is None:
            sys.stdout.write(text)
        else:
            write_text_atomic(args.out, text, replace=args.force)
            print(f"wrote {len(labels)} label(s) to {printable(args.out)}", file=sys.stderr)
        return 0
    path = Path(args.file)
    text = read_text(path, MAX_LABELS_BYTES, expected="a JSONL file of labels", strip_bom=True)
    labels = parse_labels_jsonl(text, str(path), author=args.author or _default_author())
    with PolicyStore(store_url(args.store)) as store:
        before = {label.id for label in store.question_labels()}
        # counted from what this import stored, not from the table's size: another import at the same time adds too
        ids = [label.id for label in store.add_question_labels(labels)]
    distinct = set(ids)
    added, already, repeated = len(distinct - before), len(distinct & before), len(ids) - len(distinct)
    print(f"imported {added} label(s) from {printable(args.file)} into {store.display_url}"
          + (f"; {already} {'was' if already == 1 else 'were'} stored already" if already else "")
          + (f"; {repeated} repeated an earlier line of the file" if repeated else ""))
    return 0


def _list_or_delete(args: argparse.Namespace) -> int:
    from coachctx.tools.store import PolicyStore

    with PolicyStore(store_url(args.store), create=False) as store:
        if args.labels_command == "list":
            found = store.question_labels()
            if not found:  # an empty store printed nothing at all (an adversarial pass)
                print(f"no question labels in {store.display_url}; add some with `coachctx labels import FILE`",
                      file=sys.stderr)
            for label in found:
                at = label.created_at.strftime("%Y-%m-%d %H:%M") if label.created_at is not None else "-"
                print(f"{label.id}\t{at}\t{printable(label.author)}\t{label.origin}\t{'/'.join(label.intents)}\t"
                      f"{printable(label.question)}")
            return 0
        known = {label.id for label in store.question_labels()}
        missing = [n for n in args.ids if n not in known]
        if missing:  # nothing deleted: a mistyped id must not leave half the list done
            raise InputError(f"no label {missing[0]} in {store.display_url}; nothing deleted "
                             "(`coachctx labels list` shows the ids)")
        for n in dict.fromkeys(args.ids):
            store.delete_question_label(n)
        print(f"deleted {len(set(args.ids))} label(s) from {store.display_url}")
    return 0


COMMANDS: Final = {"labels": cmd_labels}
