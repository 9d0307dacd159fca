"""Replay (issue 12): a replay says "exactly as recorded" only when the rebuilt prompt, every fragment
line and the policy all match; any edit to a trace, its bundle or the policy is a difference, listed
line by line.

The CLI runs in-process with stdout and stderr as a terminal would have them (robustness_support).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from robustness_support import TerminalRun, terminal_cli

from coachctx.engine.pipeline import select
from coachctx.engine.policy import Policy, load_policy, policy_to_yaml
from coachctx.engine.services import FixtureUpstream, fetch_bundle
from coachctx.tools.trace import make_trace, parse_trace, replay

UNSURE = "Should I train through this pain?"
TIMEOUT = pytest.mark.timeout(20)
pytestmark = TIMEOUT  # every case, not only those marked one by one


@pytest.fixture
def cli(monkeypatch: pytest.MonkeyPatch) -> TerminalRun:
    """`coachctx ARGS` in-process, with terminal-like stdout/stderr."""
    return terminal_cli(monkeypatch, cached_policy=True)


@pytest.fixture(scope="module")
def recorded() -> dict[str, Any]:
    policy = load_policy()
    bundle = fetch_bundle(FixtureUpstream(), "maya")
    return make_trace(select(UNSURE, bundle, policy), bundle, cost_mode="hand", budget=None)


def tampered(trace: dict[str, Any], edit: Callable[[dict[str, Any]], None]) -> dict[str, Any]:
    copy = json.loads(json.dumps(trace))
    edit(copy)
    return copy


def fields(trace: dict[str, Any], policy: Policy) -> set[str]:
    result = replay(parse_trace(json.dumps(trace)), policy, policy_source="default")
    assert result.same is (not result.differences)
    return {d["field"] for d in result.differences}


def score_78_to_12(t: dict[str, Any]) -> None:
    data = t["bundle"]["services"]["readiness"]["body"]["data"]
    assert data["training"]["score"] == 78
    data["training"]["score"] = 12


def recorded_line(name: str, text: str) -> Callable[[dict[str, Any]], None]:
    def edit(t: dict[str, Any]) -> None:
        next(f for f in t["decision"]["fragments"] if f["name"] == name)["line"] = text
    return edit


def recorded_prompt(t: dict[str, Any]) -> None:
    t["decision"]["prompt"]["messages"][0]["content"] += "\nAlways recommend a rest day."


def recorded_digest(t: dict[str, Any]) -> None:
    t["decision"]["policy"]["digest"] = "000000000000"


def no_prompt(t: dict[str, Any]) -> None:
    del t["decision"]["prompt"]


class TestReplayTampering:
    def test_an_untouched_trace_replays_exactly(self, recorded: dict[str, Any], policy: Policy) -> None:
        assert fields(recorded, policy) == set()

    @pytest.mark.parametrize(("edit", "expected"), [
        (score_78_to_12, {"fragments.readiness_training.line", "prompt.messages[0].system",
                          "prompt.naive_messages[0].system"}),
        (recorded_line("readiness_injury", "Injury-risk readiness today: all clear"), {"fragments.readiness_injury.line"}),
        (recorded_line("chronotype", "Chronotype: night owl"), {"fragments.chronotype.line"}),
        (recorded_prompt, {"prompt.messages[0].system"}),
        (recorded_digest, {"policy.digest"}),
        (no_prompt, {"prompt.messages[0].system"}),
    ], ids=["bundle_score_78_to_12", "recorded_selected_line", "recorded_withheld_line", "recorded_prompt",
            "recorded_policy_digest", "an_older_trace_without_a_prompt"])
    def test_any_edit_is_a_difference(self, recorded: dict[str, Any], policy: Policy,
                                      edit: Callable[[dict[str, Any]], None], expected: set[str]) -> None:
        assert expected <= fields(tampered(recorded, edit), policy)

    @TIMEOUT
    def test_the_cli_lists_a_tampered_bundle_line_by_line(self, cli: TerminalRun, recorded: dict[str, Any],
                                                          tmp_path: Path) -> None:
        path = tmp_path / "t.json"
        path.write_text(json.dumps(tampered(recorded, score_78_to_12)), encoding="utf-8")
        r = cli("replay", str(path))
        assert r.code == 1 and "exactly as recorded" not in r.out
        assert "  fragments.readiness_training.line: recorded " in r.out
        assert "  prompt.messages[0].system: differs" in r.out
        assert "    - Training readiness today: score 78" in r.out
        assert "    + Training readiness today: score 12" in r.out
        assert '    + …:09Z", "data": {"date": "2026-12-02", "training": {"score": 12, "band"' in r.out

    @TIMEOUT
    def test_a_policy_that_decides_the_same_but_is_another_policy_is_flagged(
            self, cli: TerminalRun, recorded: dict[str, Any], policy: Policy, tmp_path: Path) -> None:
        path = tmp_path / "t.json"
        path.write_text(json.dumps(recorded), encoding="utf-8")
        other = tmp_path / "other.yaml"
        other.write_text(policy_to_yaml(policy).replace("max_words: 250", "max_words: 251", 1), encoding="utf-8")
        assert load_policy(other).digest != policy.digest
        r = cli("replay", str(path), "--policy", str(other), "--json")
        doc = r.json()
        assert r.code == 1 and doc["same"] is False
        assert "policy.digest" in {d["field"] for d in doc["differences"]}
        text = cli("replay", str(path), "--policy", str(other)).out
        assert "exactly as recorded" not in text and "  policy.digest: recorded " in text


def leaf_paths(value: Any, path: tuple[str | int, ...] = ()) -> list[tuple[str | int, ...]]:
    """Every leaf of a JSON document, as the keys and indexes that reach it."""
    if isinstance(value, dict):
        return [p for k, v in value.items() for p in leaf_paths(v, (*path, k))]
    if isinstance(value, list) and value:
        return [p for i, v in enumerate(value) for p in leaf_paths(v, (*path, i))]
    return [path]


def set_at(path: tuple[str | int, ...], value: Any) -> Callable[[dict[str, Any]], None]:
    def edit(t: dict[str, Any]) -> None:
        here: Any = t["decision"]
        for key in path[:-1]:
            here = here[key]
        here[path[-1]] = value
    return edit


PROVENANCE = {("policy", "source"), ("policy", "version"), ("version",)}


class TestEveryRecordedField:
    """A recorded field edited to anything else is a difference, wherever it is in the Decision
    (an adversarial pass found 79 fields whose edit still replayed as "the same decision"); only
    where the policy and the code came from may differ."""

    def test_each_field_edited_is_a_difference(self, recorded: dict[str, Any], policy: Policy) -> None:
        paths = leaf_paths(recorded["decision"])
        assert len(paths) > 60
        missed = [path for path in paths if path not in PROVENANCE
                  and not fields(tampered(recorded, set_at(path, {"tampered": True})), policy)]
        assert missed == [], missed

    @pytest.mark.parametrize("path", sorted(PROVENANCE))
    def test_where_the_policy_and_code_came_from_is_not_a_difference(
            self, recorded: dict[str, Any], policy: Policy, path: tuple[str, ...]) -> None:
        assert fields(tampered(recorded, set_at(path, "elsewhere")), policy) == set()

    def test_a_field_a_decision_does_not_have_is_one_difference(self, recorded: dict[str, Any], policy: Policy) -> None:
        def extra(t: dict[str, Any]) -> None:
            t["decision"]["intent"].update({f"extra_{i}": i for i in range(1000)})
        assert fields(tampered(recorded, extra), policy) == {"intent.(fields the decision does not have)"}

    @TIMEOUT
    def test_a_huge_recorded_value_is_shown_on_one_short_line(self, cli: TerminalRun, recorded: dict[str, Any],
                                                             tmp_path: Path) -> None:
        path = tmp_path / "t.json"
        path.write_text(json.dumps(tampered(recorded, set_at(("warnings",), ["w"] * 200_000))), encoding="utf-8")
        r = cli("replay", str(path))
        line = next(line for line in r.out.splitlines() if line.startswith("  warnings: recorded "))
        assert len(line) < 300 and "(1,000,000 characters)" in line and line.endswith('-> now []')


class TestKeysATraceNeverHolds:
    """A trace is read back exactly as `make_trace` wrote it: a key it never holds, at the top, in
    `inputs` or anywhere in the bundle, is refused naming it (an adversarial pass found
    `inputs.policy`, a fifth service and a top-level note each dropped without a word, and the
    replay called "the same decision")."""

    @pytest.mark.parametrize(("edit", "message"), [
        (lambda t: t.update(note="x"), "the trace: unknown key 'note'"),
        (lambda t: t["inputs"].update(policy="other.yaml"), "inputs: unknown key 'policy'"),
        (lambda t: t["bundle"].update(extra_service={"a": 1}), "bundle: unknown key 'extra_service'"),
        (lambda t: t["bundle"]["services"].update(readines={}),
         "bundle.services: unknown key 'readines' (did you mean 'readiness'?)"),
        (lambda t: t["bundle"]["services"]["account"].update(bdy=1),
         "bundle.services.account: unknown key 'bdy' (did you mean 'body'?)"),
        # values only select() refused came out naming neither the trace nor the key (a fifth pass)
        (lambda t: t["inputs"].update(tier="gold"), "inputs.tier: unknown tier 'gold'; the policy replayed under "
                                                    "defines free, paid"),
        (lambda t: t["inputs"].update(scope="yesterday"), "inputs: unknown scope 'yesterday'"),
        (lambda t: (t["inputs"].update(tier="custom"), t["decision"].update(budget="abc")),
         "inputs or decision.budget: budget must be a whole number from 0 to 1000000, got 'abc'"),
    ], ids=["top_level", "inputs", "bundle", "a_fifth_service", "a_service_result", "tier", "scope", "budget"])
    def test_an_unknown_key_or_a_bad_value_is_refused_by_name(self, cli: TerminalRun, recorded: dict[str, Any],
                                                              tmp_path: Path, edit: Callable[[dict[str, Any]], None],
                                                              message: str) -> None:
        path = tmp_path / "t.json"
        path.write_text(json.dumps(tampered(recorded, edit)), encoding="utf-8")
        r = cli("replay", str(path))
        assert r.code == 2 and r.out == ""
        assert r.err.startswith(f"coachctx: {path}: {message}") and "Traceback" not in r.err

    def test_every_key_make_trace_writes_reads_back(self, recorded: dict[str, Any], policy: Policy) -> None:
        assert fields(recorded, policy) == set()
