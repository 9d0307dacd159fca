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
the fewest (ar, ja, pl, tr, vi, no; another helper, also never shown the set). Floors there; only ever raised (and the false share only ever lowered)."""

from __future__ import annotations

from collections import Counter

import pytest
import yaml

from bench.chat_clinical import (
    CHAT_CLINICAL,
    CHAT_EVERYDAY,
    ChatClinical,
    measure_chat_clinical,
    messages,
)
from coachctx.engine.policy import LANGUAGES, Policy

MIN_READ_AS_CLINICAL = 0.80
MIN_KEEPS_READINESS_INJURY = 0.88
MAX_EVERYDAY_READ_AS_CLINICAL = 0.03
MAX_HARD_EVERYDAY_READ_AS_CLINICAL = 0.16
"""corpus/chat_everyday.yaml: 14.5% before the added terms, 16.8% after, 15.9% once its false
friends were matched only as written (it is tuning data since). Hospital shifts and figurative pain
are most of it: "hospital" is a clinical term on purpose."""
MIN_KEEPS_PER_LANGUAGE = 0.7
"""No language far behind the rest (Arabic, the lowest, was at 70% when the floors were set)."""


@pytest.fixture(scope="module")
def measured(policy: Policy) -> ChatClinical:
    return measure_chat_clinical(policy)


def test_the_set_covers_every_spaced_and_unspaced_policy_language() -> None:
    per_language = Counter(m.lang for m in messages())
    assert set(per_language) == set(LANGUAGES)
    assert min(per_language.values()) >= 15
    assert sum(m.clinical for m in messages()) >= 200


def test_a_second_labeller_gave_every_message_the_same_label() -> None:
    second = yaml.safe_load((CHAT_CLINICAL.parent / "raw" / "chat_clinical_second_labels.yaml").read_text(encoding="utf-8"))
    by_id = {e["id"]: bool(e["clinical"]) for e in second["labels"]}
    assert [by_id[i] for i in range(len(messages()))] == [m.clinical for m in messages()]


def test_a_clinical_chat_message_is_read_as_clinical(measured: ChatClinical) -> None:
    assert measured.share("read", "clinical") >= MIN_READ_AS_CLINICAL


def test_a_clinical_chat_message_keeps_the_injury_signal(measured: ChatClinical) -> None:
    assert measured.share("kept", "clinical") >= MIN_KEEPS_READINESS_INJURY
    worst = min(measured.counts, key=lambda lang: measured.share("kept", "clinical", lang))
    assert measured.share("kept", "clinical", worst) >= MIN_KEEPS_PER_LANGUAGE, worst


def test_an_everyday_chat_message_is_rarely_read_as_clinical(measured: ChatClinical) -> None:
    assert measured.share("false_clinical", "everyday") <= MAX_EVERYDAY_READ_AS_CLINICAL


def test_a_hard_everyday_message_is_rarely_read_as_clinical(measured: ChatClinical) -> None:
    assert {m.clinical for m in messages(CHAT_EVERYDAY)} == {False}
    assert measured.hard_everyday <= MAX_HARD_EVERYDAY_READ_AS_CLINICAL
