"""Model faults at routing, through the real OpenAI SDK against a local OpenAI-compatible server
on 127.0.0.1: a timeout, a 500, a body that is not JSON, a label that is not an intent, an empty
answer. Routing falls back with the typed reason and the pipeline still decides.

(A slow stream while the reply is generated belongs to the app's tests.)
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from openai_server import ChatBehaviour, ChatServer

from coachctx.classifier import OpenAIClassifier
from coachctx.decision import ROUTE_CONFIDENCE, Decision
from coachctx.pipeline import select
from coachctx.policy import INTENTS, Policy
from coachctx.routing import route
from coachctx.services import Bundle

# keyword scores tie (training 2.0, injury 2.0), so the rules are unsure and the model is asked
UNSURE = "Should I train through this pain?"
MODEL_TIMEOUT_S = 0.3
SERVER_STALL_S = 3.0


def completion(content: str | None) -> dict[str, Any]:
    return {
        "id": "chatcmpl-test", "object": "chat.completion", "created": 0, "model": "test-model",
        "choices": [{"index": 0, "finish_reason": "stop",
                     "message": {"role": "assistant", "content": content}}],
        "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
    }


def behaviour(mode: str) -> ChatBehaviour:
    """The server's behaviour for a test's mode name."""
    if mode.startswith("label:"):
        return ChatBehaviour(content=mode.removeprefix("label:"))
    return {
        "stall": ChatBehaviour(delay_s=SERVER_STALL_S),
        "500": ChatBehaviour(status=500),
        "non_json": ChatBehaviour(raw_body=b"<html><body>gateway says hi</body></html>", content_type="text/html"),
        "broken_json": ChatBehaviour(raw_body=b'{"choices": ['),
        "no_choices": ChatBehaviour(raw_body=json.dumps({**completion(None), "choices": []}).encode()),
        "null_content": ChatBehaviour(content=None),
    }[mode]


@pytest.fixture(scope="module")
def server() -> Iterator[ChatServer]:
    chat = ChatServer().start()
    try:
        yield chat
    finally:
        chat.stop()


@pytest.fixture
def classifier(server: ChatServer) -> Iterator[OpenAIClassifier]:
    server.requests.clear()
    server.behaviour = behaviour("label:injury")
    yield OpenAIClassifier(api_key="sk-test", base_url=server.base_url, model="test-model",
                           timeout_s=MODEL_TIMEOUT_S)


@pytest.fixture
def ask(server: ChatServer, classifier: OpenAIClassifier, policy: Policy,
        maya: Bundle) -> Callable[[str], Decision]:
    def decide(mode: str) -> Decision:
        server.behaviour = behaviour(mode)
        return select(UNSURE, maya, policy, classifier=classifier)

    return decide


class TestModelAnswers:
    def test_the_question_is_one_the_rules_are_unsure_of(self, policy: Policy) -> None:
        decided = route(UNSURE, policy, None)
        assert not decided.confident
        assert decided.fallback_reason == "no_model_configured"

    @pytest.mark.timeout(10)
    def test_a_good_label_is_used(self, ask: Callable[[str], Decision], server: ChatServer) -> None:
        decision = ask("label:injury")
        assert decision.intent["source"] == "model"
        assert decision.intent["name"] == "injury"
        assert decision.intent["model"]["label"] == "injury"
        assert decision.intent["fallback_reason"] is None
        assert decision.confidence == round(decision.coverage * ROUTE_CONFIDENCE["model"], 4)
        sent = server.requests[-1]
        assert sent["path"] == "/v1/chat/completions"
        assert sent["body"]["messages"][-1]["content"] == UNSURE  # the model reads the question as written
        assert all(i in sent["body"]["messages"][0]["content"] for i in INTENTS)

    @pytest.mark.timeout(10)
    @pytest.mark.parametrize("mode", ["label:Injury.", "label: `training`", 'label:{"intent": "injury"}'])
    def test_labels_in_a_little_noise_are_accepted(self, mode: str, ask: Callable[[str], Decision]) -> None:
        assert ask(mode).intent["source"] == "model"


class TestModelFaults:
    @pytest.mark.timeout(10)
    @pytest.mark.parametrize(("mode", "reason", "says"), [
        ("stall", "model_timeout", "the model timed out"),
        ("500", "model_error", "the model call failed (HTTP 500)"),
        ("non_json", "model_error", "the model call failed"),
        ("broken_json", "model_error", "the model call failed"),
        ("label:banana", "invalid_label", "the model answered 'banana', which is not an intent"),
        ("label:training or injury", "invalid_label", "which is not an intent"),
        ("label:", "invalid_label", "the model answered '', which is not an intent"),
        ("null_content", "invalid_label", "which is not an intent"),
        ("no_choices", "invalid_label", "which is not an intent"),
    ], ids=["timeout", "http_500", "non_json", "broken_json", "non_intent_label", "two_labels", "empty_answer",
            "null_content", "no_choices"])
    def test_falls_back_with_a_typed_reason(self, mode: str, reason: str, says: str,
                                            ask: Callable[[str], Decision], policy: Policy) -> None:
        started = time.perf_counter()
        decision = ask(mode)
        elapsed = time.perf_counter() - started
        intent = decision.intent
        assert intent["source"] == "fallback"
        assert intent["fallback_reason"] == reason
        assert says in intent["reason"]
        assert intent["reason"].endswith(f"so fell back to {intent['name']}")
        assert intent["name"] == route(UNSURE, policy, None).intent  # the keyword fallback
        assert set(intent["contenders"]) == {"training", "injury"}
        assert f"the model could not route this question ({reason}); fell back to {intent['name']}" \
            in decision.warnings
        assert decision.confidence == round(decision.coverage * ROUTE_CONFIDENCE["fallback"], 4)
        # uncertain routing keeps both contenders' primaries: nothing the runner-up needs is lost
        assert {"readiness_training", "readiness_injury"} <= set(decision.selected)
        if reason == "model_timeout":
            assert intent["model"]["latency_ms"] < SERVER_STALL_S * 1000
            assert elapsed < SERVER_STALL_S  # the client gave up; it did not wait for the stalled server

    @pytest.mark.timeout(10)
    def test_nothing_listening(self, policy: Policy, maya: Bundle) -> None:
        import socket

        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        dead = OpenAIClassifier(api_key="sk-test", base_url=f"http://127.0.0.1:{port}/v1", timeout_s=MODEL_TIMEOUT_S)
        decision = select(UNSURE, maya, policy, classifier=dead)
        assert decision.intent["fallback_reason"] in ("model_error", "model_timeout")
        assert decision.intent["source"] == "fallback"

    @pytest.mark.timeout(10)
    def test_a_confident_question_never_calls_the_model(self, server: ChatServer, classifier: OpenAIClassifier,
                                                        policy: Policy, maya: Bundle) -> None:
        server.behaviour = behaviour("500")
        decision = select("How much protein per day?", maya, policy, classifier=classifier)
        assert decision.intent["source"] == "rules"
        assert server.requests == []
