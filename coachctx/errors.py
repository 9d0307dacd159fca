"""One root for every error coachctx raises on purpose.

The CLI and the app catch `CoachctxError` and show its message; anything else is a bug.
"""

from __future__ import annotations


class CoachctxError(Exception):
    """Root of coachctx's own errors: the message is meant for a person."""


class InputError(CoachctxError):
    """A caller passed something unusable: empty question, unknown scope, tier or athlete."""


class PolicyError(CoachctxError):
    """A policy file could not be read or is invalid.

    `problems` holds one `(path, message)` per finding, so an editor can show each one
    where it is; `source` names the file (or "<draft>" for text that has no file yet).
    """

    def __init__(self, source: str, problems: list[tuple[str, str]]) -> None:
        self.source = source
        self.problems = problems
        lines = [f"{source}: {path}: {message}" if path else f"{source}: {message}" for path, message in problems]
        super().__init__("invalid policy\n" + "\n".join(lines) if len(lines) > 1 else "invalid policy " + lines[0])


class TraceError(CoachctxError):
    """A decision trace file could not be read or does not have the expected shape."""
