"""coachctx: decide what an LLM coaching assistant may see about one athlete, and explain why."""

from coachctx.classifier import OpenAIClassifier, classifier_from_env
from coachctx.decision import Decision
from coachctx.errors import CoachctxError, InputError, PolicyError, TraceError
from coachctx.fragments import FRAGMENT_NAMES
from coachctx.pipeline import select
from coachctx.policy import INTENTS, Policy, load_policy, parse_policy, policy_to_yaml
from coachctx.routing import ModelAnswer, route, score
from coachctx.services import Bundle, FixtureUpstream, Response, Upstream, fetch_bundle

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
