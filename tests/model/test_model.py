"""The pain question, without a model and with one: a real OpenAI-compatible HTTP server on
127.0.0.1 driven through the real SDK (`OpenAIClassifier` and `classifier_from_env`)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from engine_support import PAIN
from openai_server import ChatBehaviour, ChatServer

from coachctx.engine.decision import Decision
from coachctx.engine.pipeline import select
from coachctx.engine.policy import INTENTS, Policy
from coachctx.engine.services import Bundle
from coachctx.model import OpenAIClassifier, classifier_from_env
from coachctx.model.settings import DEFAULT_MODEL

CLIENT_TIMEOUT_S = 0.3
READINESS = ("readiness_training", "readiness_injury")


@pytest.fixture(scope="module")
def _server() -> Iterator[ChatServer]:
    with ChatServer().start() as server:
        yield server


@pytest.fixture
def chat(_server: ChatServer) -> ChatServer:
    _server.behaviour = ChatBehaviour()
    _server.requests.clear()
    return _server


def _classifier(chat: ChatServer, timeout_s: float = 5.0) -> OpenAIClassifier:
    return OpenAIClassifier(api_key="test", base_url=chat.base_url, timeout_s=timeout_s)


def _assert_both_readiness_selected(d: Decision) -> None:
    for name in READINESS:
        assert name in d.selected, (name, d.fragment(name).reasons)
    assert {"training", "injury"} <= set(d.intent.contenders)
    assert [w for w in d.warnings if "exclude removed" in w] == []


class TestPainQuestionWithoutModel:
    def test_falls_back_and_keeps_both_readiness_signals(self, policy: Policy, maya: Bundle) -> None:
        assert classifier_from_env() is None  # conftest cleared the environment
        d = select(PAIN, maya, policy, classifier=classifier_from_env())
        assert d.intent.source == "fallback"
        assert d.intent.fallback_reason == "no_model_configured"
        assert d.intent.model is None
        assert d.intent.confident is False
        _assert_both_readiness_selected(d)
        assert d.warnings == ()

    def test_the_softened_excludes_are_recorded(self, policy: Policy, maya: Bundle) -> None:
        d = select(PAIN, maya, policy)
        for name in READINESS:
            assert "kept_despite_exclude" in [r.code for r in d.fragment(name).reasons]
        assert d.fragment("readiness_injury").requested_by == {"injury": "primary"}


class TestOpenAIClassifier:
    def test_a_good_label(self, chat: ChatServer, policy: Policy, maya: Bundle) -> None:
        chat.behaviour = ChatBehaviour(content="injury")
        d = select(PAIN, maya, policy, classifier=_classifier(chat))
        assert (d.intent.name, d.intent.source, d.intent.fallback_reason) == ("injury", "model", None)
        model = d.intent.model
        assert model is not None and (model.label, model.raw) == ("injury", "injury")
        assert (model.latency_ms or 0) > 0
        # training is still a contender, so its readiness stays even though injury excludes it
        assert d.intent.contenders == ("injury", "training")
        _assert_both_readiness_selected(d)
        assert d.selected[0] == "readiness_injury"

    def test_the_server_received_a_chat_completion_request(self, chat: ChatServer) -> None:
        answer = _classifier(chat)(PAIN, INTENTS)
        assert answer.raw == "injury" and answer.error is None
        [request] = chat.requests
        assert request["path"] == "/v1/chat/completions"
        assert request["headers"]["authorization"] == "Bearer test"
        body = request["body"]
        assert body["model"] == DEFAULT_MODEL
        assert [m["role"] for m in body["messages"]] == ["system", "user"]
        assert body["messages"][1]["content"] == PAIN
        for intent in INTENTS:
            assert intent in body["messages"][0]["content"]

    def test_a_garbage_label_falls_back_as_invalid_label(self, chat: ChatServer, policy: Policy,
                                                         maya: Bundle) -> None:
        chat.behaviour = ChatBehaviour(content="banana")
        d = select(PAIN, maya, policy, classifier=_classifier(chat))
        assert (d.intent.source, d.intent.fallback_reason) == ("fallback", "invalid_label")
        assert d.intent.model.raw == "banana"
        assert d.intent.model.label is None
        assert "the model answered 'banana', which is not an intent" in d.intent.reason
        _assert_both_readiness_selected(d)
        assert len(chat.requests) == 1

    def test_a_500_falls_back_as_model_error(self, chat: ChatServer, policy: Policy, maya: Bundle) -> None:
        chat.behaviour = ChatBehaviour(status=500)
        d = select(PAIN, maya, policy, classifier=_classifier(chat))
        assert (d.intent.source, d.intent.fallback_reason) == ("fallback", "model_error")
        assert "the model call failed (HTTP 500)" in d.intent.reason
        assert len(chat.requests) == 1  # max_retries=0: one request, not a retry storm
        _assert_both_readiness_selected(d)
        assert "the model could not route this question (model_error); fell back to training" in d.warnings

    def test_a_timeout_falls_back_as_model_timeout(self, chat: ChatServer, policy: Policy, maya: Bundle) -> None:
        chat.behaviour = ChatBehaviour(content="injury", delay_s=5.0)
        d = select(PAIN, maya, policy, classifier=_classifier(chat, CLIENT_TIMEOUT_S))
        assert (d.intent.source, d.intent.fallback_reason) == ("fallback", "model_timeout")
        assert CLIENT_TIMEOUT_S * 1000 * 0.9 <= d.intent.model.latency_ms < 3000
        assert "the model timed out" in d.intent.reason
        _assert_both_readiness_selected(d)
        assert len(chat.requests) == 1

    def test_a_body_that_is_not_json_is_a_model_error(self, chat: ChatServer, policy: Policy,
                                                      maya: Bundle) -> None:
        chat.behaviour = ChatBehaviour(raw_body=b"<html>bad gateway</html>", content_type="text/html")
        d = select(PAIN, maya, policy, classifier=_classifier(chat))
        assert (d.intent.source, d.intent.fallback_reason) == ("fallback", "model_error")
        _assert_both_readiness_selected(d)

    def test_an_answer_that_is_not_json_is_the_endpoints_problem_not_this_machines(
            self, chat: ChatServer, policy: Policy, maya: Bundle) -> None:
        chat.behaviour = ChatBehaviour(raw_body=b"<html>bad gateway</html>", content_type="text/html")
        d = select(PAIN, maya, policy, classifier=_classifier(chat))
        assert "the endpoint's answer is not a chat completion" in d.intent.reason
        assert "on this machine" not in d.intent.reason

    @pytest.mark.parametrize(("env", "found"), [
        ({"ALL_PROXY": "socks5://user:secret@127.0.0.1:1"}, "ImportError: Using SOCKS proxy"),
        ({"HTTP_PROXY": "bogus://x"}, "ValueError: Unknown scheme for proxy URL"),
    ])
    def test_a_local_network_setting_is_named_not_blamed_on_the_endpoint(
            self, chat: ChatServer, policy: Policy, maya: Bundle, monkeypatch: pytest.MonkeyPatch,
            env: dict[str, str], found: str) -> None:
        # an adversarial pass: each read "the endpoint's answer is not a chat completion (ImportError)"
        for name, value in env.items():
            monkeypatch.setenv(name, value)
        d = select(PAIN, maya, policy, classifier=_classifier(chat))
        assert (d.intent.source, d.intent.fallback_reason) == ("fallback", "model_error")
        assert f"the HTTP client failed on this machine before the endpoint answered ({found}" in d.intent.reason
        assert f"set: {', '.join(env)}" in d.intent.reason and "secret" not in d.intent.reason
        assert chat.requests == []

    def test_truncated_json_is_a_model_error(self, chat: ChatServer, policy: Policy, maya: Bundle) -> None:
        chat.behaviour = ChatBehaviour(raw_body=b'{"choices": [')
        d = select(PAIN, maya, policy, classifier=_classifier(chat))
        assert (d.intent.source, d.intent.fallback_reason) == ("fallback", "model_error")

    @pytest.mark.parametrize("content", ["", None])
    def test_an_empty_answer_is_an_invalid_label(self, chat: ChatServer, policy: Policy, maya: Bundle,
                                                 content: str | None) -> None:
        chat.behaviour = ChatBehaviour(content=content)
        d = select(PAIN, maya, policy, classifier=_classifier(chat))
        assert (d.intent.source, d.intent.fallback_reason) == ("fallback", "invalid_label")
        assert d.intent.model.raw == ""

    def test_a_wordy_but_clear_answer_is_accepted(self, chat: ChatServer, policy: Policy, maya: Bundle) -> None:
        chat.behaviour = ChatBehaviour(content=" Injury.\n")
        d = select(PAIN, maya, policy, classifier=_classifier(chat))
        assert (d.intent.name, d.intent.source) == ("injury", "model")

    def test_a_confident_question_never_reaches_the_server(self, chat: ChatServer, policy: Policy,
                                                           maya: Bundle) -> None:
        d = select("Plan my interval training: tempo workout, race pace, long run", maya, policy,
                   classifier=_classifier(chat))
        assert d.intent.source == "rules"
        assert chat.requests == []

    def test_nothing_listening_is_a_model_error(self, policy: Policy, maya: Bundle) -> None:
        closed = ChatServer()  # bound, never served, then closed: the port refuses connections
        url = closed.base_url
        closed.server_close()
        d = select(PAIN, maya, policy, classifier=OpenAIClassifier(api_key="k", base_url=url, timeout_s=2.0))
        assert (d.intent.source, d.intent.fallback_reason) == ("fallback", "model_error")


class TestClassifierFromEnv:
    def test_base_url_and_key_from_the_environment(self, chat: ChatServer, policy: Policy, maya: Bundle,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
        monkeypatch.setenv("OPENAI_BASE_URL", chat.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "env-key")
        monkeypatch.setenv("COACHCTX_MODEL", "router-small")
        classifier = classifier_from_env()
        assert classifier is not None
        d = select(PAIN, maya, policy, classifier=classifier)
        assert (d.intent.name, d.intent.source) == ("injury", "model")
        [request] = chat.requests
        assert request["body"]["model"] == "router-small"
        assert request["headers"]["authorization"] == "Bearer env-key"
        _assert_both_readiness_selected(d)

    def test_a_base_url_alone_is_enough(self, chat: ChatServer, monkeypatch: pytest.MonkeyPatch) -> None:
        monkeypatch.setenv("OPENAI_BASE_URL", chat.base_url)
        classifier = classifier_from_env()
        assert classifier is not None
        assert classifier(PAIN, INTENTS).raw == "injury"

    def test_the_timeout_comes_from_the_environment(self, chat: ChatServer, policy: Policy, maya: Bundle,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
        chat.behaviour = ChatBehaviour(delay_s=5.0)
        monkeypatch.setenv("OPENAI_BASE_URL", chat.base_url)
        monkeypatch.setenv("COACHCTX_MODEL_TIMEOUT", str(CLIENT_TIMEOUT_S))
        d = select(PAIN, maya, policy, classifier=classifier_from_env())
        assert d.intent.fallback_reason == "model_timeout"

    def test_nothing_configured_means_no_classifier(self) -> None:
        assert classifier_from_env({}) is None
        assert classifier_from_env({"OPENAI_API_KEY": "", "OPENAI_BASE_URL": ""}) is None
        assert classifier_from_env({"OPENAI_API_KEY": "sk-x"}) is not None
