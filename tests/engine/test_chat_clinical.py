"""The chat-style clinical set (corpus/chat_clinical.yaml): messages typed the way athletes chat, in
the 22 policy languages, labelled clinical when they report pain, an injury, an illness or medical
care. Written by a helper session that never saw the policy, its vocabulary or the code, labelled
again by a second one from the messages alone (they agree on every message); only measured (`python -m bench.chat_clinical`), so the floors below say how the vocabulary does where
nobody tuned it.

Measured on 2026-12-07 before any term was added for it: 67.7% of the clinical messages read as
clinical, 81.8% kept `readiness_injury` (a body part often routes the rest to injury), 5.5% of the
everyday ones read as clinical. After that day's clinical-term additions (written by another helper
from the policy and its own knowledge of chat in each language, never shown this set): 77.3%,
88.2%, 5.5% (2.7% once three terms that stem onto English words, "lege" -> leg, were matched only
as written); 80.9%, 88.6%, 2.7% after a second round of 149 terms for the six languages that read
the fewest (ar, ja, pl, tr, vi, no; another helper, also never shown the set); 91.8%, 97.3%, 2.7%
after a third round (2026-12-07, 2,600 terms for illness, medical care and acute injury in chat words,
written by a helper shown neither chat set; 110 of them made exact or dropped where a common word of
another language hit them). Floors there; only ever raised (and the false share only ever lowered).

The second set (corpus/chat_clinical_2.yaml, 20 messages a language, tricky everyday ones) is split
into halves before that third round: the tune half's misses named the classes the helper was asked
for, the test half is only measured: 75.8% read, 92.4% kept, 19.7% everyday read before; 90.9%,
97.0%, 24.2% after (medication and surgery words also meet other people's surgery and caffeine);
97.7% kept once a question the policy cannot read keeps `readiness_injury` (`unread_question`: one
message in Russian written in Latin letters).

The uncovered-languages set (corpus/chat_uncovered.yaml, 16 languages the policy has no terms in) was
written after that rule was built and is only measured: 38.0% of its clinical messages kept
`readiness_injury` without the rule, 91.7% with it; its everyday messages kept it 12.5% of the time
without and 79.7% with it, the rule's cost: a message nobody can read is not known to be painless.
Catalan, Romanian and Tagalog keep the least (67%): most of their words are everyday words of a close
policy language (Spanish, Italian, Indonesian), so the rule applies to only 5, 5 and 7 of their 20
messages (Croatian 10, the other twelve languages 16 to 20)."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest
import yaml

from bench.chat_clinical import (
    CHAT_CLINICAL,
    CHAT_CLINICAL_2,
    CHAT_EVERYDAY,
    CHAT_UNCOVERED,
    ChatClinical,
    measure_chat_clinical,
    messages,
)
from coachctx.engine.policy import LANGUAGES, Policy

MIN_READ_AS_CLINICAL = 0.91
MIN_KEEPS_READINESS_INJURY = 0.97
MAX_EVERYDAY_READ_AS_CLINICAL = 0.03
MAX_HARD_EVERYDAY_READ_AS_CLINICAL = 0.16
"""corpus/chat_everyday.yaml: 14.5% before the added terms, 16.8% after, 15.9% once its false
friends were matched only as written (it is tuning data since). Hospital shifts and figurative pain
are most of it: "hospital" is a clinical term on purpose."""
MIN_KEEPS_PER_LANGUAGE = 0.9
"""No language far behind the rest (Arabic, the lowest, was at 70% when the first floors were set;
five languages at 90% after the third round)."""
SECOND_TEST_HALF_FLOORS = {"read": 0.90, "kept": 0.97}
MAX_SECOND_TEST_HALF_EVERYDAY = 0.25
MIN_UNCOVERED_KEEPS = 0.91
MIN_UNCOVERED_KEEPS_PER_LANGUAGE = 0.66


@pytest.fixture(scope="module")
def measured(policy: Policy) -> ChatClinical:
    return measure_chat_clinical(policy)


def test_the_set_covers_every_spaced_and_unspaced_policy_language() -> None:
    per_language = Counter(m.lang for m in messages())
    assert set(per_language) == set(LANGUAGES)
    assert min(per_language.values()) >= 15
    assert sum(m.clinical for m in messages()) >= 200


@pytest.mark.parametrize("path, labels", [(CHAT_CLINICAL, "chat_clinical_second_labels.yaml"),
                                           (CHAT_CLINICAL_2, "chat_clinical_2_second_labels.yaml"),
                                           (CHAT_UNCOVERED, "chat_uncovered_second_labels.yaml")])
def test_a_second_labeller_gave_every_message_the_same_label(path: Path, labels: str) -> None:
    second = yaml.safe_load((path.parent / "raw" / labels).read_text(encoding="utf-8"))
    by_id = {e["id"]: bool(e["clinical"]) for e in second["labels"]}
    found = messages(path)
    assert [by_id[i] for i in range(len(found))] == [m.clinical for m in found]


def test_the_second_set_is_split_per_language_and_label() -> None:
    found = messages(CHAT_CLINICAL_2)
    assert set(Counter(m.lang for m in found)) == set(LANGUAGES)
    for language in LANGUAGES:
        for clinical in (True, False):
            halves = Counter(m.half for m in found if m.lang == language and m.clinical == clinical)
            assert set(halves) == {"tune", "test"} and abs(halves["tune"] - halves["test"]) <= 1, (language, clinical)


def test_a_clinical_chat_message_is_read_as_clinical(measured: ChatClinical) -> None:
    assert measured.share("read", "clinical") >= MIN_READ_AS_CLINICAL


def test_a_clinical_chat_message_keeps_the_injury_signal(measured: ChatClinical) -> None:
    assert measured.share("kept", "clinical") >= MIN_KEEPS_READINESS_INJURY
    worst = min(measured.counts, key=lambda lang: measured.share("kept", "clinical", lang))
    assert measured.share("kept", "clinical", worst) >= MIN_KEEPS_PER_LANGUAGE, worst


def test_an_everyday_chat_message_is_rarely_read_as_clinical(measured: ChatClinical) -> None:
    assert measured.share("false_clinical", "everyday") <= MAX_EVERYDAY_READ_AS_CLINICAL


def test_the_second_sets_test_half_is_read_as_clinical_and_keeps_the_injury_signal(policy: Policy) -> None:
    second = measure_chat_clinical(policy, CHAT_CLINICAL_2)
    assert second.share("read", "clinical", half="test") >= SECOND_TEST_HALF_FLOORS["read"]
    assert second.share("kept", "clinical", half="test") >= SECOND_TEST_HALF_FLOORS["kept"]
    assert second.share("false_clinical", "everyday", half="test") <= MAX_SECOND_TEST_HALF_EVERYDAY
    assert all(m.half == "tune" for m in second.misses)


def test_a_hard_everyday_message_is_rarely_read_as_clinical(measured: ChatClinical) -> None:
    assert {m.clinical for m in messages(CHAT_EVERYDAY)} == {False}
    assert measured.hard_everyday <= MAX_HARD_EVERYDAY_READ_AS_CLINICAL


def test_the_uncovered_set_is_in_languages_the_policy_has_no_terms_in() -> None:
    per_language = Counter(m.lang for m in messages(CHAT_UNCOVERED))
    assert len(per_language) == 16 and not set(per_language) & set(LANGUAGES)
    assert set(per_language.values()) == {20}


def test_a_clinical_message_in_an_uncovered_language_keeps_the_injury_signal(policy: Policy) -> None:
    uncovered = measure_chat_clinical(policy, CHAT_UNCOVERED)
    assert uncovered.share("kept", "clinical") >= MIN_UNCOVERED_KEEPS
    worst = min(uncovered.counts, key=lambda lang: uncovered.share("kept", "clinical", lang))
    assert uncovered.share("kept", "clinical", worst) >= MIN_UNCOVERED_KEEPS_PER_LANGUAGE, worst
