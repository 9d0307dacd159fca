"""A compound's part is read in the question's own language (or its family): a Finnish heart-rate
compound is not read through a Norwegian word for "sick". A clinical term's part is read whatever
the language, because a question with pain in it keeps its injury context first."""

from __future__ import annotations

import pytest

from coachctx.engine.pipeline import select
from coachctx.engine.policy import Policy
from coachctx.engine.routing import route
from coachctx.engine.services import Bundle


def _parts(question: str, policy: Policy) -> dict[str, list[str]]:
    matched = route(question, policy, None).scores.matched
    return {label: [t for t, _ in terms if "(part of:" in t] for label, terms in matched.items() if terms}


@pytest.mark.parametrize("question", ["mikä pitäisi olla mun tavoitesyke?", "onko lenkkisyke liian korkea?"])
def test_a_finnish_compound_is_read_through_finnish_parts_only(policy: Policy, question: str) -> None:
    decided = route(question, policy, None)
    assert decided.intent == "training", decided.reason
    assert "recovery" not in _parts(question, policy)  # Norwegian "syk" (sick) is no part of "syke"


def test_parts_of_a_related_language_are_still_read(policy: Policy) -> None:
    # Norwegian, Swedish and Danish are one family: a Swedish part in a Norwegian question is read
    parts = _parts("hvor mye styrketräningspass bør jeg ta denne uken?", policy)
    assert parts.get("training") == ["träningspass (part of: styrketräningspass)"], parts


def test_a_clinical_part_is_read_in_a_question_of_any_language(policy: Policy, bundles: dict[str, Bundle]) -> None:
    decision = select("hei, mulla on knieverletzung, voinko juosta?", bundles["maya"], policy)
    assert decision.clinical.is_clinical
    assert any("Verletzung" in t for t in decision.clinical.terms)
    assert "readiness_injury" in decision.selected
