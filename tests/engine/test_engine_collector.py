"""A policy's derived values are built with the cyclic garbage collector paused, and it is resumed
after, as it was, whatever happens in the build."""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from typing import Any

import pytest
from engine_support import MINI_VOCABULARY, with_vocabulary

from coachctx.engine.collector import collector_paused
from coachctx.engine.policy import Policy, load_policy
from coachctx.tools import impact
from coachctx.tools.questions import Question
from coachctx.tools.suggest import LabelledRow, learn, suggest
from coachctx.tools.suggest_workbench import Workbench


@pytest.fixture
def collector_on() -> Iterator[None]:
    was = gc.isenabled()
    gc.enable()
    yield
    gc.enable() if was else gc.disable()


def test_a_derived_value_is_built_with_the_collector_paused_and_resumed_after(collector_on: None) -> None:
    policy = load_policy()
    during = policy.derived("test: collector state", lambda _: gc.isenabled())
    assert during is False
    assert gc.isenabled()


def test_a_nested_pause_leaves_the_collector_paused_until_the_outermost_ends(collector_on: None) -> None:
    with collector_paused():
        with collector_paused():
            assert not gc.isenabled()
        assert not gc.isenabled()
    assert gc.isenabled()


def test_a_collector_paused_before_stays_paused(collector_on: None) -> None:
    gc.disable()
    with collector_paused():
        pass
    assert not gc.isenabled()


def test_a_failed_build_resumes_the_collector(collector_on: None) -> None:
    with pytest.raises(ValueError), collector_paused():
        raise ValueError("the build failed")
    assert gc.isenabled()


def test_a_failed_derived_build_frees_the_lock_for_another_thread(collector_on: None) -> None:
    policy = load_policy()

    def fail(_: Policy) -> None:
        raise ValueError("the build failed")

    with pytest.raises(ValueError):
        policy.derived("test: a failed build", fail)
    built = threading.Event()
    other = threading.Thread(target=lambda: policy.derived("test: another build", lambda _: built.set()))
    other.start()
    other.join(timeout=10)
    assert built.is_set() and gc.isenabled()


def test_pauses_in_two_threads_end_once_the_last_ends(collector_on: None) -> None:
    entered, release = threading.Barrier(3), threading.Event()

    def build() -> None:
        with collector_paused():
            entered.wait(10)
            release.wait(10)

    threads = [threading.Thread(target=build) for _ in range(2)]
    for t in threads:
        t.start()
    entered.wait(10)
    assert not gc.isenabled()
    release.set()
    for t in threads:
        t.join(10)
    assert gc.isenabled()


def test_learning_and_suggesting_run_with_the_collector_paused(collector_on: None, policy: Policy,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[bool] = []
    measure = Workbench.measure

    def watched(self: Workbench, candidate: Any) -> Any:
        seen.append(gc.isenabled())
        return measure(self, candidate)

    monkeypatch.setattr(Workbench, "measure", watched)
    thin = with_vocabulary(policy, MINI_VOCABULARY)
    labelled = [LabelledRow(i, q, ("injury",), "en") for i, q in enumerate(
        ["my hamstring is tight after sprints", "hamstring twinge on the hills", "pulled my hamstring"], 1)]
    assert suggest(labelled, thin, limit=3)
    learn(labelled, thin)
    assert seen and not any(seen)
    assert gc.isenabled()


def test_impact_decides_its_chunks_with_the_collector_paused(collector_on: None, policy: Policy,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[bool] = []
    plan_for = impact.plan_for

    def watched(*args: Any, **kwargs: Any) -> Any:
        seen.append(gc.isenabled())
        return plan_for(*args, **kwargs)

    monkeypatch.setattr(impact, "plan_for", watched)
    questions = [Question(row=i, question=q, athlete="maya", tier="paid")
                 for i, q in enumerate(["my knee hurts, can I run?", "what should I eat tonight?"], 1)]
    report = impact.run_impact(questions, policy, policy)
    assert len(report.rows) == 2
    assert seen and not any(seen)
    assert gc.isenabled()
