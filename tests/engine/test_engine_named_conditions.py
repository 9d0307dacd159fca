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
    assert_keeps_the_injury_readiness(question, policy, maya)


def assert_keeps_the_injury_readiness(question: str, policy: Policy, maya: Bundle) -> None:
    decision = select(question, maya, policy)
    assert decision.clinical.is_clinical and "readiness_injury" in decision.selected, question


# A fifth adversarial pass (2026-12-08): being ill said plainly, and an injury said as a state or as
# what the athlete cannot do, beside a training word, lost the injury readiness in English and in
# several other languages; the slang sense of the bare words ("sick", French "malade", Polish "chory",
# German "krank": great) stays everyday, so only the statements are clinical terms.
@pytest.mark.parametrize("question", [
    "I'm sick, should I train?", "i am ill, run today?", "I'm unwell, should I run?", "got a bug, should I run?",
    "came down with something, train?", "I have the chills, run?", "my arm is broken, can I run?",
    "my leg's broken, swim?", "I can barely walk, run tomorrow?", "I crashed, ride tomorrow?",
    "estou doente, posso treinar hoje?", "tôi bị cảm, chạy được không?", "体調が悪い、練習していい？",
    "у меня температура, можно тренироваться?", "je suis malade, je peux courir ?", "bin krank, darf ich laufen?",
    "jestem chory, mogę biegać?", "감기 걸렸어, 오늘 운동해도 돼?", "몸이 안 좋아요, 오늘 달리기 해도 돼?"])
def test_being_ill_or_hurt_said_plainly_keeps_the_injury_readiness(question: str, policy: Policy,
                                                                   maya: Bundle) -> None:
    assert_keeps_the_injury_readiness(question, policy, maya)


@pytest.mark.parametrize("question", ["that session was sick 🔥", "séance de gainage de malade aujourd'hui 🔥",
                                      "trening był chory 🔥 kiedy znowu podbiegi?", "krasses Training, einfach krank"])
def test_the_slang_sense_of_sick_is_not_clinical(question: str, policy: Policy, maya: Bundle) -> None:
    assert not select(question, maya, policy).clinical.is_clinical
