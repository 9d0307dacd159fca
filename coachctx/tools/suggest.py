"""Vocabulary suggestions learned from labelled questions: the rules learn from what they missed
while staying rules a coach can read.

From rows labelled with the intents that would have been right (a coach's label, or a model's,
which counts as weaker evidence), `suggest` proposes policy edits: a new term (a word or a two- or
three-word phrase of the question, in its own script, filed under the row's language) for an
intent, a weight change, or removing a term that routes rows wrong. Each suggestion carries its
evidence, measured with the edit compiled into the matcher: the rows it fixes, the rows it breaks,
the rows it moves from the model to the rules (or back), and the lint findings it would add (every
candidate is first estimated from the rows' scores, and only the most promising are measured).
Nothing that breaks as much as it fixes is suggested. Routing is judged as without a model: a
question the rules are unsure of takes the keyword fallback, the route `select()` takes with no
model. `learn` applies suggestions until none gains, then adds light terms for the words an
intent's rows share, so that the next question is routed too (`make bench`, section 3c).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

from coachctx.engine.collector import collector_paused
from coachctx.engine.policy import Policy
from coachctx.engine.text import Tokens, tokenise
from coachctx.errors import InputError
from coachctx.tools.lint import RULES, lint_policy
from coachctx.tools.suggest_candidates import TermIndex
from coachctx.tools.suggest_evidence import Edit, Suggestion, apply_edits, rank, worth
from coachctx.tools.suggest_log import COACH_WEIGHT, MODEL_WEIGHT, LabelledRow, Origin, read_labelled
from coachctx.tools.suggest_workbench import NEW_WEIGHTS, Workbench

__all__ = ["COACH_WEIGHT", "DEFAULT_MAX", "LEARN_DEFAULTS", "MODEL_WEIGHT", "Edit", "LabelledRow", "LearnSettings",
           "Origin", "Suggestion", "apply_edits", "learn", "read_labelled", "suggest"]

DEFAULT_MAX: Final = 20


EXACT_POOL: Final = 40
"""How many of the best estimates `suggest` measures exactly, at the least."""


@collector_paused()  # as learn: the collector walking what the workbench builds was a third of the time
def suggest(rows: Sequence[LabelledRow], policy: Policy, *, limit: int = DEFAULT_MAX, lint: bool = True,
            min_support: float = 0.0) -> list[Suggestion]:
    """The best edits for these labelled rows, best first: measured gain, then the evidence across
    rows, then fewer breaks, then the edit itself (so the same input always gives the same order).
    `min_support`: a new term must meet this many more rows of its intent than of others (weighted)."""
    if limit < 1:
        raise InputError(f"--max must be at least 1, got {limit}")
    bench = Workbench(rows, policy)
    measured = []
    for c, _ in bench.candidates(min_support)[:max(EXACT_POOL, 3 * limit)]:
        s = bench.measure(c)
        if worth(s):
            measured.append((s, c.support))
    measured.sort(key=lambda sc: rank(*sc))
    best: list[Suggestion] = []
    seen: set[tuple[str, str, str]] = set()
    before = {str(f) for f in lint_policy(policy)} if lint else set()
    for s, _ in measured:
        key = (s.edit.intent, s.edit.language, s.edit.term)
        if key in seen:
            continue
        seen.add(key)
        if lint:
            s = _with_lint(s, policy, before)
            if any(f.endswith(_ERROR_RULES) for f in s.lint):
                continue  # an edit the policy's own lint would refuse is no suggestion
        best.append(s)
        if len(best) == limit:
            break
    return best


_ERROR_RULES: Final = tuple(f"[{code}]" for code, (severity, _) in RULES.items() if severity == "error")


def _with_lint(s: Suggestion, policy: Policy, before: set[str]) -> Suggestion:
    after = [str(f) for f in lint_policy(apply_edits(policy, [s.edit]))]
    return Suggestion(s.edit, s.fixes, s.breaks, s.to_rules, s.from_rules,
                      tuple(f for f in after if f not in before), s.gain)


@dataclass(frozen=True)
class LearnSettings:
    """How `learn` weighs evidence. The defaults were chosen on a split inside the corpus tune half
    (`python -m bench.suggest --choose`), never on the test half."""

    min_support: float = 2.0
    """A term added to fix rows must meet this many more (weighted) rows of its intent than of
    others: one row's word fixes that row and rarely the next question."""
    new_weights: tuple[float, ...] = NEW_WEIGHTS
    """The weights a new term is tried at."""
    removals: bool = True
    """Whether terms that route rows wrong may be removed or reweighted."""
    reinforce: bool = True
    reinforce_weight: float = 0.05
    """The weight of a word added because rows of an intent share it: far below the threshold, so
    it never makes the rules sure, and outweighed by any term that disagrees, but it routes a
    question nothing else matched and breaks a tie. Chosen from 0.5, 0.25, 0.1 and 0.05 (lighter
    recovered more of the gap on every step; 0.5 overfit); checked again when reinforcing words
    stopped having to keep ruled rows ruled: 0.1, 0.05 and 0.02 recover the same, 0.5 less."""
    reinforce_per_row: float | None = None
    """When set, a reinforcing word weighs this much per (weighted) row of support, at most
    `reinforce_weight`: a word many rows share outweighs a word of one row."""
    reinforce_precision: float = 0.6
    """The share of the (weighted) rows a reinforcing word meets that must be labelled with its intent."""
    reinforce_support: float = 1.0
    """A reinforcing word must meet this many more (weighted) rows of its intent than of others."""
    reinforce_keeps_rules: bool = False
    """Whether a reinforcing word must leave every row the rules decide to the rules. When False, a
    word may make such a row unsure (a model call, with a model; the same route without): requiring
    it refused the words an intent's rows share most, beside other intents' terms."""
    everyday_weight: float = 0.01
    """The weight of a function word ("today", "dzisiaj", "σήμερα") the rows of an intent share,
    added in step 2 beside the reinforcing words (0 for none): below every other term, it routes a
    question that matched nothing else ("what should i do today") instead of leaving it to the
    fallback. Chosen on the tune splits: 0.01 at support 2 and precision 0.7 recovered 68.4% of the
    gap against 61.2% without; support 1-2 at precision 0.6-0.7 recovered the same, 5 at 0.9 less
    (64.3%), 3 at 0.8 65.3%."""
    everyday_support: float = 2.0
    """A function word must meet this many more (weighted) rows of its intent than of others."""
    everyday_precision: float = 0.7
    """The share of the (weighted) rows a function word meets that must be labelled with its intent."""


LEARN_DEFAULTS: Final = LearnSettings()


@collector_paused()  # learning makes no garbage in cycles; the collector walking it took half the time
def learn(rows: Sequence[LabelledRow], policy: Policy, *, max_edits: int = 10_000, max_rounds: int = 100,
          settings: LearnSettings = LEARN_DEFAULTS) -> tuple[Policy, list[Edit]]:
    """What a coach accepting every suggestion would get, and then some. Three steps:

    1. fix: apply the best suggestions round after round, each measured against the policy as it
       then is, until none gains. A round takes every edit, best first, that meets no row an edit
       taken before it in the round meets, so its edits do not change each other's evidence;
    2. reinforce: every word or phrase the rows of one intent share (`settings.reinforce_precision`
       of the rows it meets, and `settings.reinforce_support` more rows of the intent than of
       others) and that breaks no row, at `settings.reinforce_weight`: the rows do not need it,
       the next question may; and every function word they share (`settings.everyday_*`) that
       breaks no row, at `settings.everyday_weight`, for a question that matches nothing else;
    3. fix again what step 2 disturbed.
    """
    tokens = [tokenise(r.question) for r in rows]
    index = TermIndex(tokens)
    policy, applied = _fix(rows, policy, tokens, index, settings, max_edits, max_rounds)
    if settings.reinforce and len(applied) < max_edits:
        bench = Workbench(rows, policy, tokens, index)
        chosen = bench.reinforcements(settings.reinforce_support, settings.reinforce_precision,
                                      settings.reinforce_weight, settings.reinforce_per_row,
                                      settings.reinforce_keeps_rules)[:max_edits - len(applied)]
        if settings.everyday_weight:
            bench = Workbench(rows, apply_edits(policy, chosen), tokens, index)
            chosen += bench.everyday(settings.everyday_support, settings.everyday_precision,
                                     settings.everyday_weight)[:max_edits - len(applied) - len(chosen)]
        policy = apply_edits(policy, chosen)
        policy, fixed = _fix(rows, policy, tokens, index, settings, max_edits - len(applied) - len(chosen),
                             max_rounds)
        applied += chosen + fixed
    return policy, applied


def _fix(rows: Sequence[LabelledRow], policy: Policy, tokens: Sequence[Tokens], index: TermIndex,
         settings: LearnSettings, max_edits: int, max_rounds: int) -> tuple[Policy, list[Edit]]:
    applied: list[Edit] = []
    for _ in range(max_rounds if max_edits > 0 else 0):
        bench = Workbench(rows, policy, tokens, index)
        used: set[int] = set()
        chosen: list[Edit] = []
        for c, _ in bench.candidates(settings.min_support, settings.new_weights, settings.removals):
            if used.intersection(c.touched) or any(e.term == c.edit.term for e in chosen):
                continue
            s = bench.measure(c)
            if worth(s):
                chosen.append(c.edit)
                used.update(c.touched)
                if len(applied) + len(chosen) == max_edits:
                    break
        if not chosen:
            break
        policy = apply_edits(policy, chosen)
        applied.extend(chosen)
        if len(applied) >= max_edits:
            break
    return policy, applied

