"""A Decision's JSON read back by the playground (`playground/recorded.py`): the typed parts it
shows, and a bad trace named by its field instead of shown as guesses."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from coachctx import playground as pg
from coachctx.engine.pipeline import select
from coachctx.engine.policy import load_policy
from coachctx.engine.services import FixtureUpstream, fetch_bundle
from coachctx.errors import TraceError
from coachctx.playground import labels as pl
from coachctx.tools.trace import TraceInputs, make_trace, parse_trace


@pytest.fixture(scope="module")
def decision_json() -> dict[str, Any]:
    bundle = fetch_bundle(FixtureUpstream(), "maya")
    return select(pg.PAIN_QUESTION, bundle, load_policy(), scope="week").to_json()


def broken(decision: dict[str, Any], *path: str | int, value: Any) -> dict[str, Any]:
    out = copy.deepcopy(decision)
    node: Any = out
    for part in path[:-1]:
        node = node[part]
    if value is KeyError:
        del node[path[-1]]
    else:
        node[path[-1]] = value
    return out


class TestDecisionFacts:
    def test_a_decision_reads_back_as_its_typed_records(self, decision_json: dict[str, Any]) -> None:
        bundle = fetch_bundle(FixtureUpstream(), "maya")
        d = select(pg.PAIN_QUESTION, bundle, load_policy(), scope="week")
        assert pg.decision_facts(decision_json) == pg.DecisionFacts(
            question=d.question, athlete=d.athlete, requested_scope=d.scope.requested, intent=d.intent.name,
            source=d.intent.source, digest=d.policy.digest)

    @pytest.mark.parametrize(("path", "value", "message"), [
        (("intent", "source"), "guess", r"^t\.json: decision\.intent\.source: expected one of rules, model, "
                                        r"fallback, got 'guess'$"),
        (("intent",), KeyError, r"^t\.json: decision\.intent: expected an object, got nothing$"),
        (("policy", "digest"), 7, r"^t\.json: decision\.policy\.digest: expected text, got 7$"),
        (("scope", "requested"), None, r"^t\.json: decision\.scope\.requested: expected one of auto, today, "
                                       r"week, months, got nothing$"),
        (("athlete",), ["maya"], r"^t\.json: decision\.athlete: expected text, got a list$"),
    ], ids=["source", "no_intent", "digest", "scope", "athlete"])
    def test_a_bad_field_is_named(self, decision_json: dict[str, Any], path: tuple[str, ...], value: Any,
                                  message: str) -> None:
        with pytest.raises(TraceError, match=message):
            pg.decision_facts(broken(decision_json, *path, value=value), "t.json: decision")

    def test_a_label_of_a_bad_decision_is_refused_not_guessed(self, decision_json: dict[str, Any]) -> None:
        with pytest.raises(TraceError, match=r"^decision\.intent\.name: expected text, got nothing$"):
            pl.label_of_decision(broken(decision_json, "intent", "name", value=KeyError), intents=["injury"],
                                 needs=[], author="ana")


class TestRecordedFragments:
    def test_every_fragment_with_its_status_and_reason_codes(self, decision_json: dict[str, Any]) -> None:
        fragments = pg.recorded_fragments(decision_json)
        assert list(fragments) == [f["name"] for f in decision_json["fragments"]]
        for f in decision_json["fragments"]:
            assert fragments[f["name"]] == pg.RecordedFragment(f["name"], f["status"],
                                                               tuple(r["code"] for r in f["reasons"]))

    @pytest.mark.parametrize(("path", "value", "message"), [
        (("fragments",), {}, r"^decision\.fragments: expected a list, got an object$"),
        (("fragments", 0), "x", r"^decision\.fragments\[0\]: expected an object, got 'x'$"),
        (("fragments", 1, "status"), "kept", r"^decision\.fragments\[1\]\.status: expected one of selected, "
                                             r"withheld, got 'kept'$"),
        (("fragments", 0, "reasons"), None, r"^decision\.fragments\[0\]\.reasons: expected a list, got nothing$"),
    ], ids=["not_a_list", "not_an_object", "status", "reasons"])
    def test_a_bad_fragment_is_named(self, decision_json: dict[str, Any], path: tuple[str | int, ...], value: Any,
                                     message: str) -> None:
        with pytest.raises(TraceError, match=message):
            pg.recorded_fragments(broken(decision_json, *path, value=value))

    def test_the_frame_compares_the_recorded_fragments_with_now(self, decision_json: dict[str, Any]) -> None:
        bundle = fetch_bundle(FixtureUpstream(), "maya")
        now = select(pg.PAIN_QUESTION, bundle, load_policy(), scope="week")
        recorded = pg.recorded_fragments(decision_json)
        assert not pg.trace_fragments_frame(recorded, now)["changed"].any()
        first = now.fragments[0].name
        frame = pg.trace_fragments_frame({k: v for k, v in recorded.items() if k != first}, now)
        assert frame.set_index("fragment").loc[first, ["recorded", "recorded reasons"]].tolist() == ["—", "—"]


class TestTraceInputs:
    def test_a_trace_carries_its_inputs_as_a_record(self) -> None:
        bundle = fetch_bundle(FixtureUpstream(), "maya")
        d = select(pg.PAIN_QUESTION, bundle, load_policy(), scope="week", tier="free")
        trace = parse_trace(json.dumps(make_trace(d, bundle, cost_mode="measured", budget=None)))
        assert trace.asked == TraceInputs(question=pg.PAIN_QUESTION, athlete="maya", scope="week", tier="free",
                                          budget=None, cost_mode="measured")

    def test_inputs_the_trace_does_not_hold_are_none(self) -> None:
        bundle = fetch_bundle(FixtureUpstream(), "maya")
        doc = make_trace(select(pg.PAIN_QUESTION, bundle, load_policy()), bundle, cost_mode="hand", budget=None)
        doc["inputs"] = {"question": pg.PAIN_QUESTION}
        assert parse_trace(json.dumps(doc)).asked == TraceInputs(pg.PAIN_QUESTION, None, None, None, None, None)
