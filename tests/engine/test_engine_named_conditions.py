"""A medical condition or an injury named in passing ("can I run with a broken toe?", "... with AFib?")
keeps `readiness_injury`: found by an adversarial pass on 2026-12-07, when about twenty such questions
routed to training by the rules and training's exclude withheld the injury readiness. The policy now
has clinical terms for named conditions (heart, metabolic, infections, bites and stings, pregnancy,
"broken"/"bad" with a body part); these are regressions for that class, in the three phrasings the
pass used, not a measurement (that is corpus/chat_clinical*.yaml)."""

from __future__ import annotations

import pytest

from coachctx.engine.pipeline import select
from coachctx.engine.policy import Policy
from coachctx.engine.services import Bundle

CONDITIONS = ("a broken toe", "a bad back", "a cold", "a virus", "a kidney stone", "a bee sting", "a pacemaker",
              "diabetes", "a heart murmur", "AFib", "arrhythmia", "mono", "lyme disease", "an ingrown toenail",
              "covid", "stitches", "a cast on my arm", "bronchitis")
PHRASINGS = ("can I run with {}?", "Is it ok to do my long run with {}", "can I race on sunday with {}")


@pytest.mark.parametrize("condition", CONDITIONS)
def test_a_named_condition_keeps_the_injury_readiness(condition: str, policy: Policy, maya: Bundle) -> None:
    for phrasing in PHRASINGS:
        decision = select(phrasing.format(condition), maya, policy)
        assert decision.clinical.is_clinical, phrasing.format(condition)
        assert "readiness_injury" in decision.selected, phrasing.format(condition)


@pytest.mark.parametrize("question", ["I'm broken after that session, easy day tomorrow?",
                                      "is a cold morning run better than an evening one?",
                                      "what's a bad weather plan for my long run?"])
def test_the_everyday_sense_of_the_same_words_is_not_clinical(question: str, policy: Policy, maya: Bundle) -> None:
    assert not select(question, maya, policy).clinical.is_clinical


@pytest.mark.parametrize("question", ["¿puedo correr la maratón con diabetes?", "Darf ich mit einem Herzschrittmacher "
                                      "Marathon laufen?", "je suis enceinte, je peux courir?", "можно бегать с диабетом?",
                                      "糖尿病でもマラソン走れる？", "당뇨병 있는데 마라톤 해도 돼요?", "koşabilir miyim, hamileyim"])
def test_a_named_condition_in_another_language_keeps_the_injury_readiness(question: str, policy: Policy,
                                                                           maya: Bundle) -> None:
    decision = select(question, maya, policy)
    assert decision.clinical.is_clinical and "readiness_injury" in decision.selected
