"""Model faults at routing, through the real OpenAI SDK against a local OpenAI-compatible server
on 127.0.0.1: a timeout, a 500, a body that is not JSON, a label that is not an intent, an empty
answer. Routing falls back with the typed reason and the pipeline still decides.

(A slow stream while the reply is generated belongs to the app's tests.)
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, ClassVar

import pytest

from coachctx.classifier import OpenAIClassifier
from coachctx.decision import ROUTE_CONFIDENCE
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


class FakeModel(BaseHTTPRequestHandler):
    """Answers POST /v1/chat/completions according to the class-level `mode`."""

    mode: ClassVar[str] = "label:injury"
    requests: ClassVar[list[dict[str, Any]]] = []

    def log_message(self, format: str, *args: Any) -> None:  # keep pytest output clean
        pass

    def _send(self, status: int, body: bytes, content_type: str = "application/json") -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        request = json.loads(self.rfile.read(length) or b"{}")
        type(self).requests.append({"path": self.path, "body": request})
        mode = type(self).mode
        try:
            if mode == "stall":
                time.sleep(SERVER_STALL_S)
                self._send(200, json.dumps(completion("injury")).encode())
            elif mode == "500":
                self._send(500, b'{"error": {"message": "upstream exploded", "type": "server_error"}}')
            elif mode == "non_json":
                self._send(200, b"<html><body>gateway says hi</body></html>", "text/html")
            elif mode == "broken_json":
                self._send(200, b'{"choices": [', "application/json")
            elif mode == "no_choices":
                self._send(200, json.dumps({**completion(None), "choices": []}).encode())
            elif mode.startswith("label:"):
                self._send(200, json.dumps(completion(mode.removeprefix("label:"))).encode())
            elif mode == "null_content":
                self._send(200, json.dumps(completion(None)).encode())
            else:
                raise AssertionError(mode)
        except (BrokenPipeError, ConnectionResetError):  # the client gave up first: that is the point
            pass


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), FakeModel)
    httpd.daemon_threads = True
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}/v1"
    finally:
        httpd.shutdown()
        httpd.server_close()


@pytest.fixture
def classifier(server: str) -> Iterator[OpenAIClassifier]:
    FakeModel.requests.clear()
    yield OpenAIClassifier(api_key="sk-test", base_url=server, model="test-model", timeout_s=MODEL_TIMEOUT_S)
    FakeModel.mode = "label:injury"


def ask(mode: str, classifier: OpenAIClassifier, policy: Policy, maya: Bundle) -> Any:
    FakeModel.mode = mode
    return select(UNSURE, maya, policy, classifier=classifier)


class TestModelAnswers:
    def test_the_question_is_one_the_rules_are_unsure_of(self, policy: Policy) -> None:
        decided = route(UNSURE, policy, None)
        assert not decided.confident
        assert decided.fallback_reason == "no_model_configured"

    @pytest.mark.timeout(10)
    def test_a_good_label_is_used(self, classifier: OpenAIClassifier, policy: Policy, maya: Bundle) -> None:
        decision = ask("label:injury", classifier, policy, maya)
        assert decision.intent["source"] == "model"
        assert decision.intent["name"] == "injury"
        assert decision.intent["model"]["label"] == "injury"
        assert decision.intent["fallback_reason"] is None
        assert decision.confidence == round(decision.coverage * ROUTE_CONFIDENCE["model"], 4)
        sent = FakeModel.requests[-1]
        assert sent["path"] == "/v1/chat/completions"
        assert sent["body"]["messages"][-1]["content"] == UNSURE  # the model reads the question as written
        assert all(i in sent["body"]["messages"][0]["content"] for i in INTENTS)

    @pytest.mark.timeout(10)
    @pytest.mark.parametrize("mode", ["label:Injury.", "label: `training`", 'label:{"intent": "injury"}'])
    def test_labels_in_a_little_noise_are_accepted(self, mode: str, classifier: OpenAIClassifier,
                                                  policy: Policy, maya: Bundle) -> None:
        assert ask(mode, classifier, policy, maya).intent["source"] == "model"


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
                                            classifier: OpenAIClassifier, policy: Policy, maya: Bundle) -> None:
        started = time.perf_counter()
        decision = ask(mode, classifier, policy, maya)
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
    def test_a_confident_question_never_calls_the_model(self, classifier: OpenAIClassifier, policy: Policy,
                                                        maya: Bundle) -> None:
        FakeModel.mode = "500"
        decision = select("How much protein per day?", maya, policy, classifier=classifier)
        assert decision.intent["source"] == "rules"
        assert FakeModel.requests == []
