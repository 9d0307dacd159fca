"""Upstream faults: each of the four services times out, raises, answers an error status, sends a
malformed payload, has no record (404) or sends empty fields. A Decision is always produced,
every fragment the fault takes away carries the right one of the three reasons, and nothing
else is lost: every other fragment is decided exactly as without the fault.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import pytest
from engine_support import Fault, FaultyUpstream

from coachctx.engine.decision import Decision
from coachctx.engine.fragments import FRAGMENTS, SERVICES, ServiceName
from coachctx.engine.pipeline import select
from coachctx.engine.policy import Policy
from coachctx.engine.prompt import CONTEXT_HEADER
from coachctx.engine.services import (
    Bundle,
    ConditionsCache,
    FixtureUpstream,
    Response,
    ServiceTimeout,
    fetch_bundle,
)

# Together these three route to every intent's primaries, so all eleven fragments are requested.
QUESTIONS = (
    "Should I train through this pain?",
    "How do I recover faster between sessions?",
    "What should I eat after intervals?",
)
FAULTS = ("timeout", "exception", "error_status", "malformed_payload", "missing_athlete", "empty_fields")
EXPECTED_CODE = {
    "timeout": "unreachable", "exception": "unreachable", "error_status": "unreachable",
    "malformed_payload": "unreachable", "missing_athlete": "never_computed", "empty_fields": "empty_field",
}
FRAGMENTS_OF: Mapping[str, tuple[str, ...]] = {
    s: tuple(f.name for f in FRAGMENTS if f.service == s) for s in SERVICES}
EMPTY_VALUES = (None, "", [], {})


def _emptied(body: Any, service: ServiceName) -> Any:
    """The body with every fragment field of `service` emptied (None, "", [] or {} in turn);
    everything else, such as the account's preferences, left as it was."""
    body = copy.deepcopy(body)
    paths = [p for f in FRAGMENTS if f.service == service for p in f.fields]
    for i, path in enumerate(paths):
        parent = body["data"]
        *head, leaf = path.split(".")
        for part in head:
            parent = parent[part]
        parent[leaf] = EMPTY_VALUES[i % len(EMPTY_VALUES)]
    return body


def faulty(services: Sequence[ServiceName], fault: str) -> FaultyUpstream:
    """The sample athletes, with these services replaced by one kind of fault."""
    def as_fault(service: ServiceName) -> Fault:
        if fault == "timeout":
            return ServiceTimeout("no answer after 2000 ms")
        if fault == "exception":
            return RuntimeError("connection reset by peer")
        if fault == "error_status":
            return Response(503, {"error": "unavailable"})
        if fault == "malformed_payload":
            return Response(200, "<html><body>502 Bad Gateway</body></html>")
        if fault == "missing_athlete":
            return lambda healthy: Response(404, {"error": "not_found", "message": f"no {service} record"})
        if fault == "empty_fields":
            return lambda healthy: Response(200, _emptied(healthy.body, service))
        raise AssertionError(fault)

    return FaultyUpstream({s: as_fault(s) for s in services})


def lost_fragments(service: str, fault: str) -> dict[str, str]:
    """Fragment -> the reason it must carry. Without a readable account there is no city, so
    conditions cannot be fetched either (unless only the account's fragment fields are empty)."""
    code = EXPECTED_CODE[fault]
    lost = dict.fromkeys(FRAGMENTS_OF[service], code)
    if service == "account" and fault != "empty_fields":
        lost.update(dict.fromkeys(FRAGMENTS_OF["conditions"], "unreachable"))
    return lost


def assert_nothing_else_lost(faulty: Decision, healthy: Decision, lost: Mapping[str, str]) -> None:
    assert faulty.selected == tuple(n for n in healthy.selected if n not in lost)
    for before in healthy.fragments:
        if before.name in lost:
            continue
        after = faulty.fragment(before.name)
        assert (after.status, after.role, after.reasons, after.line) == (
            before.status, before.role, before.reasons, before.line), before.name


def assert_lost_with_reason(decision: Decision, lost: Mapping[str, str]) -> None:
    withheld = {row.fragment: row for row in decision.withheld}
    for name, code in lost.items():
        fragment = decision.fragment(name)
        assert fragment.status == "withheld", name
        assert fragment.line is None, name
        codes = [r.code for r in fragment.reasons]
        assert code in codes, (name, codes)
        # exactly one availability reason, and the right one
        assert [c for c in codes if c in ("unreachable", "never_computed", "empty_field")] == [code]
        if fragment.role != "none":  # requested: the availability reason is what the user is shown
            assert withheld[name].reason == code
            assert withheld[name].detail, name
    context = decision.prompt.messages[0].content.partition(CONTEXT_HEADER)[2].split("\n")[1:]
    assert context == [decision.fragment(name).line for name in decision.selected]


@pytest.fixture(scope="module")
def healthy(policy: Policy, bundles: dict[str, Bundle]) -> dict[str, Decision]:
    return {q: select(q, bundles["maya"], policy) for q in QUESTIONS}


class TestFaultMatrix:
    def test_the_questions_request_every_fragment(self, healthy: dict[str, Decision]) -> None:
        requested = {f.name for d in healthy.values() for f in d.fragments if f.role != "none"}
        assert requested == {f.name for f in FRAGMENTS}
        assert all(len(d.selected) >= 2 for d in healthy.values())

    @pytest.mark.timeout(10)
    @pytest.mark.parametrize("fault", FAULTS)
    @pytest.mark.parametrize("service", SERVICES)
    def test_fault(self, service: ServiceName, fault: str, policy: Policy, healthy: dict[str, Decision]) -> None:
        bundle = fetch_bundle(faulty([service], fault), "maya")
        lost = lost_fragments(service, fault)
        status = {"missing_athlete": "never_computed", "empty_fields": "ok"}.get(fault, "unreachable")
        assert bundle[service].status == status
        for question in QUESTIONS:
            decision = select(question, bundle, policy)
            assert isinstance(decision, Decision)
            assert len(decision.fragments) == len(FRAGMENTS)
            assert decision.services[service].status == status
            assert_lost_with_reason(decision, lost)
            assert_nothing_else_lost(decision, healthy[question], lost)
            requested_lost = [n for n in lost if decision.fragment(n).role != "none"]
            if requested_lost:
                assert decision.coverage < 1.0
            for name in requested_lost:
                if decision.fragment(name).role == "primary":
                    assert any(w.startswith(f"primary fragment {name} is missing") for w in decision.warnings)

    @pytest.mark.parametrize("fragment", [f for f in FRAGMENTS if len(f.fields) == 1], ids=lambda f: f.name)
    def test_one_empty_field_loses_one_fragment(
        self, fragment: Any, policy: Policy, healthy: dict[str, Decision]
    ) -> None:
        upstream = FixtureUpstream()

        class OneEmpty:
            def call(self, service: ServiceName, key: str) -> Response:
                response = upstream.call(service, key)
                if service == fragment.service:
                    body = copy.deepcopy(response.body)
                    body["data"][fragment.fields[0]] = None
                    return Response(200, body)
                return response

        bundle = fetch_bundle(OneEmpty(), "maya")
        for question in QUESTIONS:
            decision = select(question, bundle, policy)
            lost = {fragment.name: "empty_field"}
            assert_lost_with_reason(decision, lost)
            assert_nothing_else_lost(decision, healthy[question], lost)
            detail = next(r.detail for r in decision.fragment(fragment.name).reasons if r.code == "empty_field")
            assert f"data.{fragment.fields[0]} is empty" in detail

    def test_half_empty_conditions_is_still_whole(self, policy: Policy, bundles: dict[str, Bundle]) -> None:
        """conditions_today needs weather and air quality: tom's London has no air reading."""
        decision = select("Is the pollution too high for a run?", bundles["tom"], policy)
        reasons = decision.fragment("conditions_today").reasons
        assert [r.code for r in reasons if r.code == "empty_field"] == ["empty_field"]
        assert "data.air_quality is empty" in reasons[-1].detail


class TestEverythingDown:
    @pytest.mark.parametrize("fault", FAULTS)
    def test_all_services_faulty_still_decides(self, fault: str, policy: Policy) -> None:
        bundle = fetch_bundle(faulty(SERVICES, fault), "maya")
        decision = select("Should I train through this pain?", bundle, policy)
        assert decision.selected == ()
        assert decision.coverage == 0.0
        assert decision.confidence == 0.0
        assert len(decision.prompt.messages) == 2
        assert CONTEXT_HEADER not in decision.prompt.messages[0].content
        expected = EXPECTED_CODE[fault]
        for row in decision.withheld:
            fragment = decision.fragment(row.fragment)
            if fragment.role != "none":
                service_code = expected if fragment.service != "conditions" or fault == "empty_fields" \
                    else "unreachable"
                assert row.reason == service_code, row


class TestCallsNeverRaise:
    @pytest.mark.parametrize("make_error", [
        lambda: TimeoutError(), lambda: ConnectionError("refused"), lambda: OSError("EHOSTUNREACH"),
        lambda: ValueError("bad json"), lambda: KeyError("data"), lambda: RecursionError(),
    ], ids=["timeout", "connection", "oserror", "valueerror", "keyerror", "recursion"])
    def test_any_exception_is_unreachable(self, make_error: Callable[[], Exception], policy: Policy) -> None:
        class Raising:
            def call(self, service: ServiceName, key: str) -> Response:
                raise make_error()

        bundle = fetch_bundle(Raising(), "maya")
        assert {r.status for r in bundle.results.values()} == {"unreachable"}
        assert all(r.detail for r in bundle.results.values())
        assert select("How hard should tonight's session be?", bundle, policy).selected == ()

    @pytest.mark.parametrize("status", [100, 199, 301, 400, 401, 403, 429, 500, 502, 599])
    def test_every_non_2xx_but_404_is_unreachable(self, status: int) -> None:
        class Status:
            def call(self, service: ServiceName, key: str) -> Response:
                return Response(status, None)

        bundle = fetch_bundle(Status(), "maya")
        assert bundle["account"].status == "unreachable"
        assert f"HTTP {status}" in bundle["account"].detail

    @pytest.mark.parametrize("body", [None, [], "ok", 42, {"data": None}, {"data": []}, {"data": "x"}, {"no": "data"}],
                             ids=repr)
    def test_malformed_bodies_are_unreachable(self, body: Any) -> None:
        class Malformed:
            def call(self, service: ServiceName, key: str) -> Response:
                return Response(200, body)

        result = fetch_bundle(Malformed(), "maya")["readiness"]
        assert result.status == "unreachable"
        assert "malformed payload" in result.detail

    def test_odd_shapes_inside_a_field_still_render_one_line(self, policy: Policy) -> None:
        upstream = FixtureUpstream()

        class OddShape:
            def call(self, service: ServiceName, key: str) -> Response:
                response = upstream.call(service, key)
                if service == "account":
                    body = copy.deepcopy(response.body)
                    body["data"]["training_block"] = {"name": ["a", {"b": None}], "week": [1, 2],
                                                      "of_weeks": {"x": 1}, "key_sessions": {"k": [[]]}}
                    return Response(200, body)
                return response

        decision = select("Is my training block too ambitious?", fetch_bundle(OddShape(), "maya"), policy)
        line = decision.fragment("training_block").line
        assert "training_block" in decision.selected
        assert line is not None and "\n" not in line

    def test_a_field_that_cannot_be_rendered_is_unreachable(self, policy: Policy,
                                                             healthy: dict[str, Decision]) -> None:
        """JSON may carry Infinity; a pace of Infinity cannot be rendered: only that fragment is lost."""
        upstream = FixtureUpstream()

        class InfinitePace:
            def call(self, service: ServiceName, key: str) -> Response:
                response = upstream.call(service, key)
                if service == "baselines":
                    body = copy.deepcopy(response.body)
                    body["data"]["aerobic"]["threshold_pace_s_per_km"] = float("inf")
                    return Response(200, body)
                return response

        bundle = fetch_bundle(InfinitePace(), "maya")
        for question in QUESTIONS:
            decision = select(question, bundle, policy)
            lost = {"baseline_aerobic": "unreachable"}
            assert_lost_with_reason(decision, lost)
            assert_nothing_else_lost(decision, healthy[question], lost)
            detail = decision.fragment("baseline_aerobic").reasons[-1].detail
            assert detail == "baselines payload malformed at data.aerobic (OverflowError)"


class TestConditionsCache:
    def test_a_city_fault_is_fetched_once_and_shared(self) -> None:
        upstream = faulty(["conditions"], "timeout")
        cache = ConditionsCache()
        first = fetch_bundle(upstream, "maya", cache)
        second = fetch_bundle(upstream, "ines", cache)  # also Lisbon
        assert upstream.calls.count(("conditions", "Lisbon")) == 1
        assert first["conditions"].status == second["conditions"].status == "unreachable"


class TestSampleAthletes:
    @pytest.mark.parametrize(("athlete", "fragment", "code"), [
        ("omar", "readiness_training", "unreachable"),
        ("ines", "baseline_aerobic", "never_computed"),
        ("tom", "readiness_injury", "empty_field"),
    ])
    def test_fixture_faults(self, athlete: str, fragment: str, code: str, policy: Policy,
                            bundles: dict[str, Bundle]) -> None:
        decision = select("Should I train through this pain?", bundles[athlete], policy)
        assert next(row for row in decision.withheld if row.fragment == fragment).reason == code
