"""Shared fixtures: the checked-in policy, the sample athletes, and a clean model environment."""

from __future__ import annotations

import pytest
from hypothesis import settings

from coachctx.engine.policy import Policy, load_policy
from coachctx.engine.services import Bundle, FixtureUpstream, fetch_bundle
from coachctx.model import SETTING_KEYS

# The suite draws the same examples on every run, so `make test` (and CI) cannot fail on a draw
# nobody has seen; `make fuzz` draws fresh ones (a failure prints the example and its blob).
settings.register_profile("suite", derandomize=True, database=None, print_blob=True)
settings.register_profile("explore", derandomize=False, print_blob=True)
settings.load_profile("suite")


@pytest.fixture(autouse=True)
def _isolated_env(monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory) -> None:
    """No test talks to a model unless it sets these itself (against its own local server), and
    no test writes the user's policy store (~/.coachctx): each gets a store file of its own."""
    for name in SETTING_KEYS:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("COACHCTX_STORE", str(tmp_path_factory.mktemp("store") / "policies.sqlite"))


@pytest.fixture(scope="session")
def policy() -> Policy:
    return load_policy()


@pytest.fixture(scope="session")
def upstream() -> FixtureUpstream:
    return FixtureUpstream()


@pytest.fixture(scope="session")
def bundles(upstream: FixtureUpstream) -> dict[str, Bundle]:
    return {a: fetch_bundle(upstream, a) for a in upstream.athletes()}


@pytest.fixture
def maya(bundles: dict[str, Bundle]) -> Bundle:
    return bundles["maya"]
