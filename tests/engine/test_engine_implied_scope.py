"""A question with no time word takes the horizon its intent implies (`scopes.<s>.implied_by`): a
question about the weather is about today's. A scope's own terms always win, the Decision names
the words that implied it, and a policy without the setting keeps its digest and its YAML."""

from __future__ import annotations

from typing import Any

import pytest

from coachctx.engine.pipeline import select
from coachctx.engine.policy import Policy, policy_to_yaml, validate_policy
from coachctx.engine.services import Bundle
from coachctx.errors import PolicyError
from coachctx.tools.impact import run_impact
from coachctx.tools.questions import Question

WEATHER = ["es hace demasiado calor para correr?", "空气质量怎么样？"]


def _without_implied(policy: Policy) -> Policy:
    data: dict[str, Any] = policy.model_dump(mode="json")
    for scope in data["scopes"].values():
        scope["implied_by"] = []
    return validate_policy(data)


@pytest.mark.parametrize("question", WEATHER)
def test_a_weather_question_with_no_time_word_is_about_today(policy: Policy, bundles: dict[str, Bundle],
                                                             question: str) -> None:
    decision = select(question, bundles["maya"], policy)
    assert decision.intent.name == "conditions"
    assert decision.scope.effective == "today"
    assert decision.scope.inferred_from and all("(a conditions question)" in w for w in decision.scope.inferred_from)


def test_a_time_word_wins_over_the_implied_horizon(policy: Policy, bundles: dict[str, Bundle]) -> None:
    decision = select("will it rain this weekend?", bundles["maya"], policy)
    assert decision.intent.name == "conditions"
    assert (decision.scope.effective, decision.scope.inferred_from) == ("week", ("weekend",))


def test_other_intents_and_a_policy_without_the_setting_infer_nothing(policy: Policy,
                                                                       bundles: dict[str, Bundle]) -> None:
    assert select("how do i get faster at 5k?", bundles["maya"], policy).scope.effective is None
    plain = _without_implied(policy)
    assert select(WEATHER[0], bundles["maya"], plain).scope.effective is None
    # a policy written before the setting existed keeps its digest and its YAML
    assert "implied_by" not in policy_to_yaml(plain)
    assert "implied_by" in policy_to_yaml(policy)
    assert plain.digest != policy.digest


def test_an_asked_scope_is_kept(policy: Policy, bundles: dict[str, Bundle]) -> None:
    decision = select(WEATHER[0], bundles["maya"], policy, scope="months")
    assert decision.scope.effective == "months" and decision.scope.inferred_from is None


def test_impact_infers_the_same_horizon_and_tells_the_two_policies_apart(policy: Policy) -> None:
    questions = [Question(row=i, question=q, athlete="maya", tier="paid") for i, q in enumerate(WEATHER, 1)]
    report = run_impact(questions, _without_implied(policy), policy)
    for row in report.rows:
        assert row.base.scope is None and row.candidate.scope == "today"


@pytest.mark.parametrize(("change", "problem"), [
    ({"week": ["conditions"]}, "'conditions' is in the implied_by of two scopes"),
    ({"week": ["weather"]}, "scopes.week.implied_by[0]: unknown intent 'weather'"),
    ({"week": ["training", "training"]}, "scopes.week.implied_by: lists 'training' twice"),
])
def test_a_bad_implied_by_is_refused_and_named(policy: Policy, change: dict[str, list[str]], problem: str) -> None:
    data: dict[str, Any] = policy.model_dump(mode="json")
    for scope, intents in change.items():
        data["scopes"][scope]["implied_by"] = intents
    with pytest.raises(PolicyError, match=problem.replace("[", r"\[").replace("]", r"\]")):
        validate_policy(data)
