"""Helpers for the engine tests: a faulty upstream, a local OpenAI-compatible server, stub
classifiers and policies derived from the default one."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import yaml
from repo_paths import DEV_QUESTIONS

from coachctx.engine.fragments import ServiceName
from coachctx.engine.plan import Plan
from coachctx.engine.policy import Policy, validate_policy
from coachctx.engine.routing import ModelAnswer
from coachctx.engine.services import FixtureUpstream, Response

PAIN = "Should I train through this pain?"
TRAINING_PRIMARY = ["readiness_training", "baseline_aerobic", "training_block"]
INJURY_PRIMARY = ["readiness_injury", "baseline_mobility", "baseline_strength"]


def dev_rows() -> list[dict[str, Any]]:
    rows = yaml.safe_load(DEV_QUESTIONS.read_text(encoding="utf-8"))["questions"]
    assert rows, f"{DEV_QUESTIONS} has no questions"
    return list(rows)


def codes(plan: Plan, name: str) -> list[str]:
    """The reason codes a plan records for one fragment, in order."""
    return list(plan[name].codes)


# --- upstreams -------------------------------------------------------------------------------


Fault = BaseException | Response | Callable[[Response], Response]


class FaultyUpstream:
    """The sample fixtures, except that the listed services misbehave. A fault is an exception
    (raised), a Response (returned as is), or a function of the healthy Response (returning
    the altered one, e.g. with fields emptied)."""

    def __init__(self, faults: Mapping[str, Fault], base: FixtureUpstream | None = None) -> None:
        self.faults = dict(faults)
        self.base = base if base is not None else FixtureUpstream()
        self.calls: list[tuple[str, str]] = []

    def call(self, service: ServiceName, key: str) -> Response:
        self.calls.append((service, key))
        fault = self.faults.get(service)
        if isinstance(fault, BaseException):
            raise fault
        if isinstance(fault, Response):
            return fault
        if fault is not None:
            return fault(self.base.call(service, key))
        return self.base.call(service, key)


# --- classifiers -----------------------------------------------------------------------------


@dataclass
class StubClassifier:
    """Answers with a fixed raw label and records what it was asked."""

    raw: str | None
    error: str | None = None
    timed_out: bool = False
    asked: list[tuple[str, tuple[str, ...]]] = field(default_factory=list)

    def __call__(self, question: str, intents: Sequence[str]) -> ModelAnswer:
        self.asked.append((question, tuple(intents)))
        return ModelAnswer(raw=self.raw, latency_ms=12.5, error=self.error, timed_out=self.timed_out)


# --- policies --------------------------------------------------------------------------------


def derive_policy(policy: Policy, change: Callable[[dict[str, Any]], None]) -> Policy:
    """A validated copy of `policy` after `change` edits its plain-data form."""
    data = policy.model_dump(mode="json")
    change(data)
    return validate_policy(data, "<derived>")


def with_vocabulary(policy: Policy, vocabulary: Mapping[str, Mapping[str, Mapping[str, float]]]) -> Policy:
    """The default intents, scopes and tiers with a vocabulary written by the test, so routing tests do
    not move when the coaches retune the checked-in terms."""

    def change(data: dict[str, Any]) -> None:
        data["vocabulary"] = {name: {lang: dict(terms) for lang, terms in by_lang.items()}
                              for name, by_lang in vocabulary.items()}

    return derive_policy(policy, change)


MINI_VOCABULARY: dict[str, dict[str, dict[str, float]]] = {
    "training": {"en": {"train": 1.0, "interval": 1.0, "race": 1.0, "long run": 1.0, "session": 0.5},
                 "es": {"entrenar": 1.0, "correr": 0.5}, "de": {"training": 1.0, "laufen": 0.5},
                 "fr": {"entraînement": 1.0, "courir": 0.5}, "pt": {"treino": 1.0, "treinar": 1.0},
                 "it": {"allenamento": 1.0}, "ru": {"тренировка": 1.0}, "ja": {"走": 0.5, "練習": 1.0},
                 "zh": {"训练": 1.0, "跑步": 0.5}, "ko": {"훈련": 1.0}},
    "injury": {"en": {"pain": 1.0, "injury": 1.5, "sore tendon": 1.0}, "es": {"dolor": 1.0, "rodilla": 1.0},
               "de": {"schmerz": 1.0}, "fr": {"douleur": 1.0}, "pt": {"dor": 1.0, "joelho": 1.0},
               "it": {"dolore": 1.0}, "ru": {"боль": 1.0}, "ja": {"痛": 1.0, "足首": 1.0},
               "zh": {"疼": 1.0}, "ko": {"무릎": 1.0, "아프": 1.0}},
    "recovery": {"en": {"sleep": 1.5, "recovery": 1.5, "tired": 1.0}, "es": {"recuperación": 1.5},
                 "de": {"erholung": 1.5}, "fr": {"fatigué": 1.0, "repos": 1.0}, "pt": {"recuperação": 1.5},
                 "it": {"recupero": 1.5}, "ru": {"восстановление": 1.5}, "ja": {"回復": 1.5},
                 "zh": {"恢复": 1.5, "休息": 1.0}, "ko": {"회복": 1.5}},
    "nutrition": {"en": {"eat": 1.5, "protein": 1.5}, "de": {"essen": 1.5}, "ru": {"съесть": 1.5}},
    "conditions": {"en": {"heat": 1.5, "air quality": 1.5}},
    "general": {"en": {"thanks": 1.5}},
}

