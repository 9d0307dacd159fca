"""`coachctx` command line: the parser and `main`. Each command group lives in its own module
(explain, policy, impact, suggest, labels) and registers its subcommands here. Bad input prints one clear
line on stderr and exits 2."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from typing import Any, Final, NoReturn

from coachctx.cli import explain, impact, labels, policy, suggest
from coachctx.errors import CoachctxError, InputError, PolicyError
from coachctx.reading import printable, shown

EXIT_USAGE = 2


GROUPS = (explain, policy, impact, suggest, labels)
"""The command modules, in the order `coachctx --help` lists their commands."""


class _Parser(argparse.ArgumentParser):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        # no abbreviations: `--trace y.json` must not quietly mean `--trace-out y.json` and write a file
        kwargs.setdefault("allow_abbrev", False)
        super().__init__(*args, **kwargs)

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_USAGE, f"coachctx: {message} (see `coachctx --help`)\n")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="coachctx", description="Decide what an LLM coaching assistant may see, and why.")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    for group in GROUPS:
        group.register(sub)
    return parser


COMMANDS = {name: command for group in GROUPS for name, command in group.COMMANDS.items()}


def _tolerate_unencodable_output() -> None:
    """Text no stream can encode (a lone surrogate in a question, Japanese on a Latin-1
    terminal) is written as backslash escapes instead of raising mid-output."""
    for stream in (sys.stdout, sys.stderr):
        reconfigure = getattr(stream, "reconfigure", None)
        if callable(reconfigure):
            reconfigure(errors="backslashreplace")


NAMED_BY_OPTION: Final = {
    "store": "store (a SQLite file or a database URL)", "trace_out": "file to write the trace to",
    "out": "file to write", "athletes_dir": "directory", "scheduler": "Dask scheduler (tcp://host:8786)",
    "policy": "policy file", "base": "policy file, version or label", "candidate": "policy file, version or label",
    "policy_version": "version or label",
}
"""Options whose value names something: given empty, they are refused rather than read as absent."""


def _check_arguments(args: argparse.Namespace) -> None:
    """Arguments are text: bytes that are not UTF-8 reach Python as lone surrogates. A question
    may hold them (a user's message is decided with each read as U+FFFD, `reading.valid_text`); a
    name, a path or a label may not, since nothing it names could match it."""
    for key, value in vars(args).items():
        if key != "question" and isinstance(value, str) and any("\ud800" <= ch <= "\udfff" for ch in value):
            raise InputError(f"argument {shown(value)} is not valid UTF-8 text")
        if key in NAMED_BY_OPTION and isinstance(value, str) and not value.strip():
            # an unset variable in a script (`--store "$STORE"`): not "no option", which would fall back
            # to the default store or write no trace and still exit 0
            raise InputError(f"argument --{key.replace('_', '-')} is empty; name a {NAMED_BY_OPTION[key]}")


def error_text(e: CoachctxError) -> str:
    """The error as stderr shows it: one line, or one line per problem of a policy with several.
    A path or a value in it may hold a newline or an escape sequence (`check-policy $'a\\nb'`):
    written as escapes, so a line is still one line and nothing reaches the terminal as a command."""
    if isinstance(e, PolicyError) and len(e.problems) > 1:
        return "\n".join(["invalid policy", *(printable(f"{e.source}: {where}: {problem}" if where else
                                                         f"{e.source}: {problem}") for where, problem in e.problems)])
    return printable(str(e))


class _WatchedOutput:
    """Standard output, remembering whether writing it failed: a full disk or /dev/full raises
    an OSError that names no file, and the message should say it was the answer not written."""

    def __init__(self, inner: Any) -> None:
        self.inner, self.failed = inner, False

    def write(self, text: str) -> int:
        try:
            return int(self.inner.write(text))
        except OSError:
            self.failed = True
            raise

    def flush(self) -> None:
        try:
            self.inner.flush()
        except OSError:
            self.failed = True
            raise

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def main(argv: Sequence[str] | None = None) -> int:
    _tolerate_unencodable_output()
    args = build_parser().parse_args(argv)
    if sys.stdout is None:  # started with standard output closed (`coachctx ... >&-`): nowhere to answer
        if sys.stderr is not None:
            print("coachctx: standard output is closed; nothing could be written", file=sys.stderr)
        return EXIT_USAGE
    watched = sys.stdout = _WatchedOutput(sys.stdout)
    try:
        _check_arguments(args)
        code = COMMANDS[args.command](args)
        sys.stdout.flush()  # a closed pipe shows up here, inside the try, not at interpreter exit
        return code
    except CoachctxError as e:
        print(f"coachctx: {error_text(e)}", file=sys.stderr)
        return EXIT_USAGE
    except BrokenPipeError:
        # the reader went away (`coachctx ... | head`): not an error, and nothing left to say
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except OSError as e:
        where = f"{e.filename}: " if e.filename else ""
        if not e.filename and watched.failed:
            where = "cannot write standard output: "  # a full disk, /dev/full: the answer was not written
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # nor retried at exit
        print(f"coachctx: {printable(where + str(e.strerror or e))}", file=sys.stderr)
        return EXIT_USAGE
    except MemoryError:
        print("coachctx: out of memory: the input is more than this machine can hold at once; split it "
              "(a log into files of fewer rows, a long text into shorter ones)", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        return 130
    finally:
        sys.stdout = watched.inner


if __name__ == "__main__":
    sys.exit(main())
