"""`run_impact`'s arguments, checked as `select()` checks its own."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from coachctx.engine.pipeline import COST_MODES
from coachctx.engine.policy import Policy
from coachctx.engine.services import ATHLETE_ID
from coachctx.errors import InputError
from coachctx.reading import shown
from coachctx.tools.questions import Question, QuestionSet

MAX_JOBS: Final = 256


def check_arguments(questions: object, base: object, candidate: object, *, base_name: object,
                     candidate_name: object, upstream: object, default_athlete: object, cost_mode: object,
                     progress: object, jobs: object, changed_only: object) -> None:
    """`run_impact`'s arguments as `select()` checks its own: InputError naming the one of the wrong
    kind, before any work (an adversarial pass: tracebacks, `changed_only="no"` read as true)."""
    rows = questions.questions if isinstance(questions, QuestionSet) else questions
    if isinstance(rows, str | bytes) or not isinstance(rows, Sequence) or \
            not all(isinstance(q, Question) for q in rows):
        raise InputError(f"questions: expected a QuestionSet or a sequence of Question (parse_questions, "
                         f"read_questions), got {type(questions).__name__}")
    for name, value in (("base", base), ("candidate", candidate)):
        if not isinstance(value, Policy):
            raise InputError(f"{name}: expected a Policy (load_policy, parse_policy), got {type(value).__name__}")
    for name, value in (("base_name", base_name), ("candidate_name", candidate_name)):
        if not isinstance(value, str) or not 0 < len(value) <= 1_000:
            raise InputError(f"{name}: expected a name of 1 to 1,000 characters, got {shown(value)}")
    if upstream is not None and not callable(getattr(upstream, "call", None)):
        raise InputError(f"upstream: expected an Upstream (FixtureUpstream), got {type(upstream).__name__}")
    if not isinstance(default_athlete, str) or not ATHLETE_ID.match(default_athlete):
        raise InputError(f"default_athlete: {shown(default_athlete)} is not an athlete id")
    if cost_mode not in COST_MODES:
        raise InputError(f"cost_mode: unknown cost mode {shown(cost_mode)}; use hand or measured")
    if progress is not None and not callable(progress):
        raise InputError(f"progress: expected a function of (done, total), got {type(progress).__name__}")
    if isinstance(jobs, bool) or not isinstance(jobs, int) or not 1 <= jobs <= MAX_JOBS:
        raise InputError(f"jobs must be a whole number from 1 to {MAX_JOBS}, got {jobs!r}")
    if not isinstance(changed_only, bool):
        raise InputError(f"changed_only: expected True or False, got {shown(changed_only)}")
