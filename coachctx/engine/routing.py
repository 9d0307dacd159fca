"""Routing: score intents with the policy's weighted vocabulary (found by `matching/`), then
decide whether the rules are sure enough or the model must be asked.

`score` is a pure function of the question. `route` makes the one decision: rules, model or fallback.
"""

from __future__ import annotations

import math
import re
import time
import unicodedata
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Final, Literal

from coachctx.engine.matching import TermMatcher, vocabulary_in
from coachctx.engine.policy import INTENTS, Policy
from coachctx.engine.text import Tokens, tokenise
from coachctx.errors import InputError
from coachctx.reading import clip, valid_text

RouteSource = Literal["rules", "model", "fallback"]
FallbackReason = Literal["no_model_configured", "model_error", "model_timeout", "invalid_label", "no_match"]


@dataclass(frozen=True)
class Scores:
    scores: Mapping[str, float]
    matched: Mapping[str, tuple[tuple[str, float], ...]]
    scripts: tuple[str, ...]

    _ranked: tuple[tuple[str, float], ...] = field(init=False, compare=False, repr=False)

    def __post_init__(self) -> None:
        # ranked once: routing, contenders, evidence and the audit all read it
        order = {name: i for i, name in enumerate(self.scores)}
        object.__setattr__(self, "_ranked", tuple(sorted(self.scores.items(), key=lambda kv: (-kv[1], order[kv[0]]))))

    def ranked(self) -> list[tuple[str, float]]:
        """Intents by score, highest first; ties keep the policy's intent order."""
        return list(self._ranked)

    @property
    def top(self) -> tuple[str | None, float]:
        name, value = self._ranked[0]
        return (name if value > 0 else None), value

    @property
    def runner_up(self) -> tuple[str | None, float]:
        if len(self._ranked) < 2:
            return None, 0.0
        name, value = self._ranked[1]
        return (name if value > 0 else None), value

    @property
    def nothing_matched(self) -> bool:
        return all(v <= 0 for v in self.scores.values())


def score(question: str | Tokens, policy: Policy, matcher: TermMatcher | None = None) -> Scores:
    """The intents' keyword scores; `matcher` stands in for the policy's own vocabulary (a
    suggested edit is scored with the table it would make)."""
    if not isinstance(question, str | Tokens):
        raise InputError(f"question must be text, got {type(question).__name__}")
    tokens = question if isinstance(question, Tokens) else tokenise(question)
    found = matcher.find(tokens) if matcher is not None else vocabulary_in(tokens, policy)
    scores = {name: 0.0 for name in INTENTS}
    matched: dict[str, list[tuple[str, float]]] = {name: [] for name in INTENTS}
    for entry in found:
        scores[entry.label] = round(scores[entry.label] + entry.weight, 6)
        matched[entry.label].append((entry.term, entry.weight))
    return Scores(scores=scores, matched={k: tuple(v) for k, v in matched.items()}, scripts=tokens.scripts)


# --- the model, injected ---------------------------------------------------------------------


@dataclass(frozen=True)
class ModelAnswer:
    """What the classifier said. `label` is None when it failed; `error` says why."""

    raw: str | None
    latency_ms: float
    error: str | None = None
    timed_out: bool = False


MAX_ANSWER_CHARS: Final = 2_000
"""The most of a classifier's raw answer or error a Decision keeps (`OpenAIClassifier` keeps less)."""


def sound_answer(answer: object, measured_ms: float) -> ModelAnswer:
    """A classifier's answer as a Decision can hold it, whatever a classifier of the caller's own
    returned: a ModelAnswer (anything else is an error naming its type), text or None where text
    is expected (a number or bytes as the answer is an error, not a crash), a finite latency (else
    the one measured), lone surrogates read as U+FFFD and the answer and error clipped (a 10 MB
    answer made a trace replay refuses)."""
    if not isinstance(answer, ModelAnswer):
        return ModelAnswer(raw=None, latency_ms=measured_ms,
                           error=f"the classifier returned {type(answer).__name__}, not a ModelAnswer")
    raw, error, latency = answer.raw, answer.error, answer.latency_ms
    if error is not None and not isinstance(error, str):
        error = f"the classifier's error is a {type(error).__name__}, not text"
    if raw is not None and not isinstance(raw, str):
        raw, error = None, error or f"the classifier answered a {type(raw).__name__}, not text"
    finite = isinstance(latency, int | float) and not isinstance(latency, bool) and math.isfinite(latency)
    # a lone surrogate (a JSON "\udc80" escape) read as U+FFFD, as a trace writes it: else the
    # reason quoting the answer is recorded one way and replayed another
    return ModelAnswer(raw=None if raw is None else clip(valid_text(raw), MAX_ANSWER_CHARS),
                       latency_ms=float(latency) if finite and latency >= 0 else measured_ms,
                       error=None if error is None else clip(valid_text(error), MAX_ANSWER_CHARS),
                       timed_out=answer.timed_out is True)


Classifier = Callable[[str, Sequence[str]], ModelAnswer]
"""Given the question and the allowed intent names, ask a model for one label. Must not raise."""


_INVISIBLE: Final = re.compile("[\u200b-\u200d\u2060\ufeff\u00ad]")
"""Zero-width space, joiners, word joiner, byte order mark, soft hyphen."""


def clean_label(raw: str | None, allowed: Sequence[str]) -> str | None:
    """The intent named by a model's raw answer, or None if it names none (or several)."""
    if not isinstance(raw, str):  # None, or whatever an endpoint sent that is not text
        return None
    # read as questions are read: full-width letters ("ｉｎｊｕｒｙ") as letters, no invisible characters
    raw = _INVISIBLE.sub("", unicodedata.normalize("NFKC", raw))
    text = raw.strip().strip("`'\".:;!* \n").casefold()
    if text.startswith("{"):
        import json

        try:
            obj = json.loads(raw)
        except ValueError:
            return None
        text = str(obj.get("intent", "")).strip().casefold() if isinstance(obj, dict) else ""
    text = text.removeprefix("intent:").strip()
    return text if text in allowed else None


@dataclass(frozen=True)
class Route:
    """The routing decision, with everything needed to explain it."""

    intent: str
    source: RouteSource
    scores: Scores
    top: str | None
    runner_up: str | None
    confident: bool
    contenders: tuple[str, ...]
    reason: str
    fallback_reason: FallbackReason | None = None
    model_label: str | None = None
    model_raw: str | None = None
    model_latency_ms: float | None = None
    matched_nothing: bool = False
    scripts: tuple[str, ...] = field(default=())

    @property
    def unmatched(self) -> bool:
        """No term matched and no model answered: the question sees the policy's unmatched set."""
        return self.matched_nothing and self.source == "fallback"

    @property
    def guessed(self) -> str | None:
        """The model's label of a question no term matched: a guess (`lookup`'s `unmatched_question`)."""
        return self.intent if self.matched_nothing and self.source == "model" else None


def is_confident(top: float, runner_up: float, threshold: float, margin: float) -> bool:
    # `top > 0` stays even though threshold is 1.0 by default: lowering the threshold must
    # never hand the fast path to a question that matched nothing.
    return top > 0 and top >= threshold and top - runner_up >= margin


def contenders_of(scores: Scores, margin: float) -> list[str]:
    """Intents scoring above zero and within `margin` of the top score, best first."""
    _, top = scores.top
    return [name for name, value in scores.ranked() if value > 0 and top - value <= margin + 1e-9]


ROUTE_MEMO_LIMIT: Final = 4096
"""Routes memoised per policy (questions that matched the same terms); emptied when this full."""


def route(question: str | Tokens, policy: Policy, classifier: Classifier | None) -> Route:
    if classifier is not None:
        return _route(question, policy, classifier)
    # without a model the route is a function of the terms found and the scripts seen: questions
    # that match alike share one (immutable) Route
    tokens = question if isinstance(question, Tokens) else tokenise(question)
    key = (vocabulary_in(tokens, policy), tokens.scripts)
    memo: dict[object, Route] = policy.derived("routes", lambda _: {})
    found = memo.get(key)
    if found is None:
        if len(memo) >= ROUTE_MEMO_LIMIT:
            memo.clear()
        found = memo[key] = _route(tokens, policy, None)
    return found


def _route(question: str | Tokens, policy: Policy, classifier: Classifier | None) -> Route:
    scores = score(question, policy)
    threshold, margin = policy.routing.confident_threshold, policy.routing.margin
    top, top_score = scores.top
    runner, runner_score = scores.runner_up
    confident = is_confident(top_score, runner_score, threshold, margin)
    common = dict(scores=scores, top=top, runner_up=runner, confident=confident,
                  matched_nothing=scores.nothing_matched, scripts=scores.scripts)
    if confident and top is not None:
        lead = f"leads {runner} {runner_score:g}" if runner else "leads every other intent (0)"
        return Route(intent=top, source="rules", contenders=(top,),
                     reason=f"rules: {top} scored {top_score:g} >= threshold {threshold:g} and {lead} "
                            f"by {top_score - runner_score:g} >= margin {margin:g}", **common)  # type: ignore[arg-type]
    why_unsure = _why_unsure(top, top_score, runner, runner_score, threshold, margin, scores)
    keyword_contenders = contenders_of(scores, margin)
    fallback_intent = top if top is not None else "general"
    if classifier is None:
        return Route(intent=fallback_intent, source="fallback", fallback_reason="no_model_configured",
                     contenders=tuple(keyword_contenders or [fallback_intent]),
                     reason=_fallback_reason(why_unsure, "no model configured (set OPENAI_API_KEY or "
                                             "OPENAI_BASE_URL)", fallback_intent, top, policy),
                     **common)  # type: ignore[arg-type]
    started = time.perf_counter()
    try:
        answer = classifier(question.raw if isinstance(question, Tokens) else question, INTENTS)
    except Exception as e:  # the classifier contract says it must not raise; stay safe anyway
        answer = ModelAnswer(raw=None, latency_ms=(time.perf_counter() - started) * 1000, error=repr(e))
    answer = sound_answer(answer, (time.perf_counter() - started) * 1000)
    label = clean_label(answer.raw, INTENTS) if answer.error is None else None
    model = dict(model_raw=answer.raw, model_latency_ms=round(answer.latency_ms, 1), model_label=label)
    if label is None:
        kind: FallbackReason = ("model_timeout" if answer.timed_out else
                                "model_error" if answer.error is not None else "invalid_label")
        what = (f"the model timed out ({answer.error})" if answer.timed_out else
                f"the model call failed ({answer.error})" if answer.error is not None else
                f"the model answered {_short(answer.raw)}, which is not an intent")
        return Route(intent=fallback_intent, source="fallback", fallback_reason=kind,
                     contenders=tuple(keyword_contenders or [fallback_intent]),
                     reason=_fallback_reason(why_unsure, what, fallback_intent, top, policy),
                     **common, **model)  # type: ignore[arg-type]
    contenders = [label] + [c for c in keyword_contenders if c != label]
    return Route(intent=label, source="model", contenders=tuple(contenders),
                 reason=f"{why_unsure}; the model chose {label} in {answer.latency_ms:.0f} ms",
                 **common, **model)  # type: ignore[arg-type]


def _fallback_reason(why_unsure: str, what: str, intent: str, top: str | None, policy: Policy) -> str:
    if top is None and policy.unmatched is not None:
        return f"{why_unsure}; {what}, so the question sees the policy's unmatched set"
    return f"{why_unsure}; {what}, so fell back to {intent}"


def _why_unsure(top: str | None, top_score: float, runner: str | None, runner_score: float,
                threshold: float, margin: float, scores: Scores) -> str:
    if top is None:
        seen = ", ".join(scores.scripts) or "none"
        return f"no term matched (scripts seen: {seen})"
    if top_score < threshold:
        return f"rules unsure: {top} scored {top_score:g} < threshold {threshold:g}"
    return (f"rules unsure: {top} {top_score:g} leads {runner} {runner_score:g} by "
            f"{top_score - runner_score:g} < margin {margin:g}")


def _short(text: str | None) -> str:
    if text is None:
        return "nothing"
    text = " ".join(text.split())
    return repr(text if len(text) <= 40 else text[:37] + "...")
