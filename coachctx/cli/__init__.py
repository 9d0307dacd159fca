"""The `coachctx` command line: `main` is the console script's entry point."""

from coachctx.cli.entry import build_parser, main

__all__ = ["build_parser", "main"]
