"""Pain words disguised the way chat and text generators disguise them (the fourth adversarial
pass): digits for letters beyond the everyday words ("t0rn c4lf"), and accents added to English
words ("my ánkle is sprăined"). Real words of other languages are left as they are."""

from __future__ import annotations

import pytest

from coachctx.engine.pipeline import select
from coachctx.engine.policy import Policy
from coachctx.engine.services import Bundle
from coachctx.engine.text import tokenise


@pytest.mark.parametrize(("question", "read"), [
    ("sh1n spl1nts, intervals ok?", "shin"),
    ("t0rn c4lf, can I race sunday", "calf"),
    ("c0ncuss10n last week, ride today?", "concussion"),
    ("h4mstr1ng str41n yesterday", "hamstring"),
    ("my ánkle is sprăined, long run?", "sprained"),
    ("ḟever since monday, workout?", "fever"),
])
def test_a_disguised_word_is_read_as_the_english_word(question: str, read: str) -> None:
    assert read in tokenise(question).words


@pytest.mark.parametrize(("question", "kept"), [
    ("vo2max 52, good?", "vo2max"), ("h2o or isotonic?", "h2o"), ("kam sa3a lazem anam", "sa3a"),
    ("wag3 fi rijli", "wag3"),  # Arabic chat writes letters as digits
    ("j'ai mal au genou après la course", "après"), ("el tendón me duele", "tendón"),
    ("Visai nėra motyvacijos, kaip priversti save eiti į salę?", "salę"),  # Lithuanian: unread, kept so
    ("při běhu mě bolí koleno, mám pokračovat?", "mám"),
])
def test_numbers_and_words_of_other_languages_are_kept(question: str, kept: str) -> None:
    assert kept in tokenise(question).words


@pytest.mark.parametrize("question", ["t0rn c4lf, can I race sunday", "my ánkle is sprăined, long run?",
                                      "c0ncuss10n last week, ride today?"])
def test_the_injury_readiness_is_kept_on_the_free_tier(question: str, policy: Policy,
                                                       bundles: dict[str, Bundle]) -> None:
    decision = select(question, bundles["maya"], policy, tier="free")
    assert decision.fragment("readiness_injury").status == "selected", decision.fragment("readiness_injury").reasons
