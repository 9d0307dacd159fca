"""coachctx: decide what an LLM coaching assistant may see about one athlete, and explain why."""

from coachctx.engine.decision import Decision
from coachctx.engine.fragments import FRAGMENT_NAMES
from coachctx.engine.pipeline import select
from coachctx.engine.policy import INTENTS, Policy, load_policy, parse_policy, policy_to_yaml
from coachctx.engine.routing import ModelAnswer, route, score
from coachctx.engine.services import Bundle, FixtureUpstream, Response, Upstream, fetch_bundle
from coachctx.errors import CoachctxError, InputError, PolicyError, TraceError
from coachctx.model import OpenAIClassifier, classifier_from_env

__all__ = [
    "FRAGMENT_NAMES",
    "INTENTS",
    "Bundle",
    "CoachctxError",
    "Decision",
    "FixtureUpstream",
    "InputError",
    "ModelAnswer",
    "OpenAIClassifier",
    "Policy",
    "PolicyError",
    "Response",
    "TraceError",
    "Upstream",
    "classifier_from_env",
    "fetch_bundle",
    "load_policy",
    "parse_policy",
    "policy_to_yaml",
    "route",
    "score",
    "select",
]
