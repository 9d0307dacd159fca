"""Shared fixtures: the checked-in policy, the sample athletes, and a clean model environment."""

from __future__ import annotations

from pathlib import Path

import pytest

from coachctx.policy import Policy, load_policy
from coachctx.services import Bundle, FixtureUpstream, fetch_bundle

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared"
DEV_QUESTIONS = SHARED / "questions" / "dev.yaml"
DECISION_SCHEMA = SHARED / "schemas" / "decision.schema.json"


@pytest.fixture(autouse=True)
def _no_model_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """No test talks to a model unless it sets these itself (against its own local server)."""
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "COACHCTX_MODEL", "COACHCTX_MODEL_TIMEOUT"):
        monkeypatch.delenv(name, raising=False)


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
