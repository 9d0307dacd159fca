"""Found by the fourth adversarial pass (2026-12-07): an output file replaced without a word (an
empty label export over a full one), and a mistyped athlete id that read as a service outage."""

from __future__ import annotations

from pathlib import Path

import pytest
from robustness_support import TerminalRun, terminal_cli

from coachctx.engine.pipeline import select
from coachctx.engine.policy import Policy
from coachctx.engine.services import FixtureUpstream, fetch_bundle
from coachctx.errors import InputError

pytestmark = pytest.mark.timeout(30)
Run = TerminalRun


@pytest.fixture
def cli(monkeypatch: pytest.MonkeyPatch) -> Run:
    return terminal_cli(monkeypatch, cached_policy=True)


def leftovers(directory: Path, *expected: str) -> list[str]:
    return sorted(p.name for p in directory.iterdir() if p.name not in expected)


def test_a_file_that_is_there_is_kept_unless_force_is_given(cli: Run, tmp_path: Path) -> None:
    """An adversarial pass replaced a full label export with an empty one, and a trace with another."""
    target = tmp_path / "t.json"
    target.write_text("old", encoding="utf-8")
    assert cli("explain", "Should I train through this pain?", "--athlete", "maya", "--trace-out", str(target)).one_line_error() == f"coachctx: {target} exists; pass --force to replace it"
    assert target.read_text(encoding="utf-8") == "old" and leftovers(tmp_path, "t.json") == []
    labels = tmp_path / "labels.jsonl"
    labels.write_text('{"question": "knee hurts", "intents": ["injury"], "needs": ["readiness_injury"]}\n',
                      encoding="utf-8")
    store = str(tmp_path / "s.sqlite")
    assert cli("labels", "import", str(labels), "--store", store, "--author", "ana").code == 0
    r = cli("labels", "export", "--out", str(target), "--store", store)
    assert r.one_line_error() == f"coachctx: {target} exists; pass --force to replace it"
    assert target.read_text(encoding="utf-8") == "old"
    r = cli("labels", "export", "--out", str(target), "--store", store, "--force")
    assert r.code == 0 and "knee hurts" in target.read_text(encoding="utf-8")


@pytest.mark.parametrize(("athlete", "problem"), [
    ("MAYA", "athlete 'MAYA' is not an athlete id"), ("zed", "unknown athlete 'zed'"),
    ("", "athlete '' is not an athlete id"), ("../maya", "athlete '../maya' is not an athlete id"),
])
def test_a_mistyped_athlete_is_refused_not_read_as_an_outage(athlete: str, problem: str) -> None:
    """The library returned four `unreachable` services, and a pain question lost readiness_injury."""
    with pytest.raises(InputError, match=problem.replace("(", r"\(").replace(".", r"\.")):
        fetch_bundle(FixtureUpstream(), athlete)


def test_a_known_athlete_still_decides(policy: Policy) -> None:
    decision = select("my knee hurts", fetch_bundle(FixtureUpstream(), "maya"), policy)
    assert decision.fragment("readiness_injury").status == "selected"


def test_library_calls_with_arguments_of_the_wrong_kind_say_so(policy: Policy) -> None:
    """They raised TypeError or AttributeError, or showed an empty path as "."."""
    from coachctx.engine.policy import load_policy, policy_to_yaml
    from coachctx.engine.routing import score
    from coachctx.errors import CoachctxError

    calls = {
        "FixtureUpstream(None)": (lambda: FixtureUpstream(None), "expected the path of a directory"),  # type: ignore[arg-type]
        "FixtureUpstream('')": (lambda: FixtureUpstream(""), "the path is empty"),
        "score(None, policy)": (lambda: score(None, policy), "question must be text, got NoneType"),  # type: ignore[arg-type]
        "policy_to_yaml(None)": (lambda: policy_to_yaml(None), "policy must be a coachctx Policy"),  # type: ignore[arg-type]
        "load_policy('')": (lambda: load_policy(""), "the path is empty; name a YAML file"),
    }
    for name, (call, problem) in calls.items():
        with pytest.raises(CoachctxError) as raised:
            call()
        assert problem in str(raised.value), (name, str(raised.value))
