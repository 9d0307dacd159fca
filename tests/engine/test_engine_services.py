"""Upstream services: the fixture athletes' availability reasons, conditions fetched once per city,
and every upstream fault turned into a typed result (fetch_bundle never raises)."""

from __future__ import annotations

from typing import Any

import pytest
from engine_support import PAIN, FaultyUpstream

from coachctx.engine.availability import facts
from coachctx.engine.decision import Withheld
from coachctx.engine.fragments import FRAGMENT_NAMES
from coachctx.engine.pipeline import select
from coachctx.engine.plan import Reason
from coachctx.engine.policy import Policy
from coachctx.engine.services import (
    Bundle,
    ConditionsCache,
    FixtureUpstream,
    Response,
    call_service,
    fetch_bundle,
)
from coachctx.errors import InputError

READINESS = ["readiness_training", "readiness_recovery", "readiness_nutrition", "readiness_injury"]
BASELINES = ["baseline_aerobic", "baseline_mobility", "baseline_strength"]


def _missing(bundle: Bundle) -> dict[str, str]:
    return {name: f.missing.code for name, f in facts(bundle).items() if f.missing is not None}


class TestSampleAthletes:
    def test_the_seven_athletes(self, upstream: FixtureUpstream) -> None:
        assert upstream.athletes() == ["ines", "kenji", "lucia", "maya", "omar", "priya", "tom"]

    @pytest.mark.parametrize("athlete", ["maya", "kenji", "lucia", "priya"])
    def test_healthy_athletes_supply_all_eleven(self, bundles: dict[str, Bundle], athlete: str) -> None:
        assert _missing(bundles[athlete]) == {}
        assert {r.status for r in bundles[athlete].results.values()} == {"ok"}

    def test_omar_readiness_is_unreachable(self, bundles: dict[str, Bundle]) -> None:
        omar = bundles["omar"]
        assert _missing(omar) == dict.fromkeys(READINESS, "unreachable")
        assert omar["readiness"].status == "unreachable"
        assert omar["readiness"].detail == "readiness service timed out (no answer after 2500 ms)"

    def test_ines_baselines_were_never_computed(self, bundles: dict[str, Bundle]) -> None:
        ines = bundles["ines"]
        assert _missing(ines) == dict.fromkeys(BASELINES, "never_computed")
        assert ines["baselines"].detail == "baselines service answered 404: nothing has been computed for ines"

    def test_tom_has_empty_fields(self, bundles: dict[str, Bundle]) -> None:
        found = facts(bundles["tom"])
        assert _missing(bundles["tom"]) == {"readiness_injury": "empty_field", "conditions_today": "empty_field"}
        assert found["readiness_injury"].missing == Reason(
            "empty_field", "readiness payload arrived, but data.injury is empty")
        assert found["conditions_today"].missing == Reason(
            "empty_field", "conditions payload arrived, but data.air_quality is empty")

    @pytest.mark.parametrize(("athlete", "fragment", "code"), [
        ("omar", "readiness_training", "unreachable"),
        ("ines", "baseline_aerobic", "never_computed"),
        ("tom", "readiness_injury", "empty_field"),
    ])
    def test_the_reason_reaches_the_decision(self, policy: Policy, bundles: dict[str, Bundle],
                                             athlete: str, fragment: str, code: str) -> None:
        d = select(PAIN, bundles[athlete], policy)
        f = d.fragment(fragment)
        assert f.status == "withheld"
        assert code in [r.code for r in f.reasons]
        assert Withheld(fragment, code, f.reasons[-1].detail) in d.withheld
        assert d.coverage < 1.0

    def test_language_and_city_come_from_the_account(self, bundles: dict[str, Bundle]) -> None:
        assert {a: (b.city, b.language) for a, b in bundles.items()} == {
            "ines": ("Lisbon", "pt"), "kenji": ("Tokyo", "ja"), "lucia": ("Madrid", "es"), "maya": ("Lisbon", "en"),
            "omar": ("Dubai", "en"), "priya": ("Bengaluru", "en"), "tom": ("London", "en")}

    def test_an_unknown_athlete_is_an_input_error(self, upstream: FixtureUpstream) -> None:
        assert not upstream.has("bob")
        with pytest.raises(InputError, match=r"^unknown athlete 'bob'; sample athletes are: ines, kenji"):
            upstream.call("account", "bob")


class TestConditionsPerCity:
    def test_lisbon_is_fetched_once_for_maya_and_ines(self) -> None:
        upstream = FixtureUpstream()
        cache = ConditionsCache()
        maya = fetch_bundle(upstream, "maya", cache)
        ines = fetch_bundle(upstream, "ines", cache)
        assert upstream.calls.count(("conditions", "Lisbon")) == 1
        assert [c for c in upstream.calls if c[0] == "conditions"] == [("conditions", "Lisbon")]
        assert maya["conditions"] is ines["conditions"]
        assert facts(maya)["conditions_today"].line == facts(ines)["conditions_today"].line

    def test_every_city_once_for_all_athletes(self) -> None:
        upstream = FixtureUpstream()
        cache = ConditionsCache()
        for athlete in upstream.athletes():
            fetch_bundle(upstream, athlete, cache)
        cities = [key for service, key in upstream.calls if service == "conditions"]
        assert sorted(cities) == sorted(set(cities)) == ["Bengaluru", "Dubai", "Lisbon", "London", "Madrid", "Tokyo"]
        assert len(upstream.calls) == 3 * 7 + 6

    def test_without_a_cache_each_bundle_fetches_its_own(self) -> None:
        upstream = FixtureUpstream()
        fetch_bundle(upstream, "maya")
        fetch_bundle(upstream, "ines")
        assert upstream.calls.count(("conditions", "Lisbon")) == 2

    def test_an_unreachable_account_means_no_city_and_no_conditions_call(self) -> None:
        upstream = FaultyUpstream({"account": TimeoutError("after 2000 ms")})
        bundle = fetch_bundle(upstream, "maya")
        assert bundle.city is None and bundle.language is None
        assert ("conditions", "Lisbon") not in upstream.calls
        assert bundle["conditions"].status == "unreachable"
        assert bundle["conditions"].detail == ("conditions not fetched: the city is unknown "
                                               "(account service timed out (after 2000 ms))")


FAULTS: list[tuple[str, BaseException | Response, str, str]] = [
    ("timeout", TimeoutError("no answer after 900 ms"), "unreachable",
     "readiness service timed out (no answer after 900 ms)"),
    ("connection", ConnectionError("connection refused"), "unreachable",
     "readiness service connection failed (connection refused)"),
    ("bare connection", ConnectionResetError(), "unreachable", "readiness service connection failed"),
    ("exception", KeyError("boom"), "unreachable", "readiness service call raised KeyError: 'boom'"),
    ("http 500", Response(500, {"error": "internal"}), "unreachable", "readiness service answered HTTP 500"),
    ("http 503", Response(503, None), "unreachable", "readiness service answered HTTP 503"),
    ("http 302", Response(302, None), "unreachable", "readiness service answered HTTP 302"),
    ("http 404", Response(404, {"error": "not_found"}), "never_computed",
     "readiness service answered 404: nothing has been computed for maya"),
    ("body not a dict", Response(200, ["not", "a", "dict"]), "unreachable",
     "readiness service sent a malformed payload (list)"),
    ("body is text", Response(200, "<html>"), "unreachable", "readiness service sent a malformed payload (str)"),
    ("no data", Response(200, {"meta": {}}), "unreachable",
     "readiness service sent a malformed payload (an object without a 'data' object)"),
    ("data not a dict", Response(200, {"data": [1, 2]}), "unreachable",
     "readiness service sent a malformed payload (an object without a 'data' object)"),
]


class TestFetchBundleFaults:
    @pytest.mark.parametrize(("fault", "status", "detail"), [f[1:] for f in FAULTS], ids=[f[0] for f in FAULTS])
    def test_a_fault_becomes_a_typed_result(self, fault: Any, status: str, detail: str) -> None:
        bundle = fetch_bundle(FaultyUpstream({"readiness": fault}), "maya")
        result = bundle["readiness"]
        assert (result.status, result.detail) == (status, detail)
        assert result.data == {}
        assert {bundle[s].status for s in ("account", "baselines", "conditions")} == {"ok"}
        assert _missing(bundle) == dict.fromkeys(READINESS, status)

    @pytest.mark.parametrize(("fault", "status", "detail"), [f[1:] for f in FAULTS], ids=[f[0] for f in FAULTS])
    def test_select_goes_on(self, policy: Policy, fault: Any, status: str, detail: str) -> None:
        bundle = fetch_bundle(FaultyUpstream({"readiness": fault}), "maya")
        d = select(PAIN, bundle, policy)
        assert "readiness_injury" not in d.selected
        assert Reason(status, detail) in d.fragment("readiness_injury").reasons

    def test_every_service_down_at_once(self, policy: Policy) -> None:
        upstream = FaultyUpstream(dict.fromkeys(("account", "baselines", "readiness", "conditions"),
                                                RuntimeError("datacentre on fire")))
        bundle = fetch_bundle(upstream, "maya")
        assert {r.status for r in bundle.results.values()} == {"unreachable"}
        d = select(PAIN, bundle, policy)
        assert d.selected == ()
        assert d.coverage == 0.0 and d.confidence == 0.0
        assert len(d.withheld) == len(FRAGMENT_NAMES)

    def test_a_payload_of_the_wrong_shape_inside_data_is_not_a_crash(self, policy: Policy) -> None:
        weird = Response(200, {"data": {"training": ["odd"], "recovery": 7, "nutrition": {"score": None},
                                        "injury": {}}})
        bundle = fetch_bundle(FaultyUpstream({"readiness": weird}), "maya")
        found = facts(bundle)
        assert found["readiness_injury"].missing is not None
        assert found["readiness_injury"].missing.code == "empty_field"
        assert found["readiness_recovery"].line is not None
        assert select(PAIN, bundle, policy).question == PAIN

    def test_call_service_records_the_latency_of_a_fault(self) -> None:
        result = call_service(FaultyUpstream({"baselines": OSError("reset")}), "baselines", "maya")
        assert result.status == "unreachable"
        assert result.latency_ms is not None and result.latency_ms >= 0

    def test_a_snapshot_round_trips(self, bundles: dict[str, Bundle]) -> None:
        for bundle in bundles.values():
            assert Bundle.from_snapshot(bundle.to_snapshot()) == bundle

    @pytest.mark.parametrize(("snapshot", "message"), [
        ({"services": 5}, r"^bundle\.services: expected a mapping of the four services$"),
        ({"services": {"account": {}}}, r"^bundle\.services: missing baselines, readiness, conditions$"),
        ({"services": dict.fromkeys(("account", "baselines", "readiness", "conditions"), 5)},
         r"^bundle\.services\.account: expected an object, got int$"),
        ({"services": dict.fromkeys(("account", "baselines", "readiness", "conditions"), {"status": "meh"})},
         r"^bundle\.services\.account\.status: 'meh' is not ok/unreachable/never_computed$"),
        ({"language": ["en"], "services": dict.fromkeys(("account", "baselines", "readiness", "conditions"),
                                                        {"status": "ok"})},
         r"^bundle\.language: expected text or null, got list$"),
    ])
    def test_a_malformed_snapshot_is_a_value_error(self, snapshot: dict[str, Any], message: str) -> None:
        with pytest.raises(ValueError, match=message):
            Bundle.from_snapshot(snapshot)
