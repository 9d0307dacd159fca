"""What the page reads once and shares between reruns and sessions: fixtures, parsed policies, decisions, the policy store, question sets."""

from __future__ import annotations

import functools
import hashlib
import math
from pathlib import Path

import streamlit as st

from coachctx import playground as pg
from coachctx.engine.decision import Decision
from coachctx.engine.pipeline import select
from coachctx.engine.policy import DEFAULT_POLICY_PATH, Policy, parse_policy, read_policy_text
from coachctx.engine.services import Bundle, FixtureUpstream, fetch_bundle
from coachctx.model import SETTING_KEYS, ModelSettings, OpenAIClassifier, classifier_for
from coachctx.tools.impact import QuestionSet
from coachctx.tools.lint import Finding, lint_policy
from coachctx.tools.questions import read_questions
from coachctx.tools.store import PolicyStore

CHECKED_IN = "policy/default.yaml"


ROOT = Path(__file__).resolve().parents[3]
"""The repository: the page's icon and the sample log are files beside the package."""
SAMPLE_LOG = ROOT / "sample_logs" / "questions.jsonl"


HISTORY_LIMIT = 500


@st.cache_resource
def upstream() -> FixtureUpstream:
    return FixtureUpstream()


@st.cache_resource(max_entries=32)
def bundle_for(athlete: str) -> Bundle:
    return fetch_bundle(upstream(), athlete)


@st.cache_resource
def athlete_labels() -> dict[str, str]:
    """The athlete picker's entries, read once from the fixtures (the picker asks for every
    athlete's on every run)."""
    return {a: pg.athlete_label(a, bundle_for(a), upstream().describe(a)) for a in upstream().athletes()}


# Keyed by the text itself through functools, not Streamlit's cache: Streamlit hashes a str argument
# afresh on every call (the checked-in policy is 400 KB, read three times a rerun), while a str keeps
# its own hash once computed, so the draft held in session state is found at once.
@functools.lru_cache(maxsize=64)
def policy_from_text(text: str) -> Policy:
    """Parsed once per distinct text in this process (every session shares it); a PolicyError is
    raised (and not cached) for a bad one."""
    return parse_policy(text)


@functools.lru_cache(maxsize=16)
def draft_check(text: str) -> pg.DraftCheck:
    """The draft validated once per distinct text, a bad one too (its problems), so a rerun that
    did not change the draft parses nothing. Parsing uses libyaml's C loader where installed."""
    return pg.check_draft(text, policy_from_text)


@st.cache_resource(max_entries=8)
def routing_classifier(_settings: ModelSettings, cache_key: tuple[str, ...]) -> OpenAIClassifier | None:
    """One classifier per model configuration (`cache_key`), shared by every session."""
    return classifier_for(_settings)


# a Decision is immutable, so every rerun and session may share one: no copy pickled per call, as
# st.cache_data would; the page shows a spinner itself when a model may be asked
@st.cache_resource(max_entries=256, show_spinner=False)
def decide(question: str, athlete: str, scope: str, tier: str, budget: int | None, cost_mode: str,
           _policy: Policy, digest: str, source: str, version: str | None,
           _settings: ModelSettings | None, model_key: tuple[str, ...]) -> Decision:
    """Cached per inputs, policy digest and origin and model configuration, so a model is asked once."""
    classifier = routing_classifier(_settings, model_key) if _settings is not None else None
    return select(question, bundle_for(athlete), _policy, scope=scope, tier=tier, budget=budget,
                  cost_mode=cost_mode, classifier=classifier, policy_source=source,  # type: ignore[arg-type]
                  policy_version=version)


@st.cache_resource(max_entries=4)
def open_store(url: str) -> PolicyStore:
    """One store (connection pool) per URL, shared by every session: saves from any of them,
    or from the CLI, are read back on each rerun."""
    return PolicyStore(url)


@st.cache_resource(max_entries=4)
def sample_questions(path: str, mtime: float) -> QuestionSet:
    return read_questions(path)


@st.cache_resource(max_entries=4)
def uploaded_questions(data: bytes, name: str) -> QuestionSet:
    return pg.parse_question_upload(data, name)


def lint_of(policy: Policy) -> list[Finding]:
    return policy.derived("playground:lint", lint_policy)


def checked_in_text() -> str:
    return read_policy_text(DEFAULT_POLICY_PATH)


def secrets_settings() -> dict[str, str]:
    """Model settings from `.streamlit/secrets.toml`; {} when there is no such file."""
    try:
        found = st.secrets.to_dict()  # one look at the file, not two per setting
        return {k: str(found[k]) for k in SETTING_KEYS if k in found}
    except FileNotFoundError:
        return {}
    except Exception:  # a malformed secrets.toml must not take the page down
        return {}


def upload_cap(limit: int) -> int:
    """Streamlit's own cap (whole MB), set above ours: a file a little over our limit then gets our
    message inline, where the result would be, instead of a red chip explaining only on hover."""
    return 2 * math.ceil(limit / (1024 * 1024))


def text_key(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:10]
