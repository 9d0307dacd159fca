"""Model faults at routing, through the real OpenAI SDK against a local OpenAI-compatible server
on 127.0.0.1 (conftest.py's `server`): a timeout, a 500, a body that is not JSON, a label that is not
an intent, an empty answer. Routing falls back with the typed reason and the pipeline still decides.
A timeout setting that is not a usable number of seconds is refused as a setting, in the CLI and on
the page. (Issue 12's total deadline and caps: test_robustness_model_deadlines.py.)
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from openai_server import ChatBehaviour, ChatServer
from repo_paths import ROOT

from coachctx.cli import main
from coachctx.engine.decision import ROUTE_CONFIDENCE, Decision
from coachctx.engine.pipeline import select
from coachctx.engine.policy import INTENTS, Policy
from coachctx.engine.routing import route
from coachctx.engine.services import Bundle
from coachctx.errors import InputError
from coachctx.model import OpenAIClassifier, classifier_from_env, model_settings, stream_reply
from coachctx.model.settings import DEFAULT_TIMEOUT_S, MAX_TIMEOUT_S, MIN_TIMEOUT_S

# keyword scores tie (training 2.0, injury 2.0), so the rules are unsure and the model is asked
UNSURE = "Should I train through this pain?"
MODEL_TIMEOUT_S = 1.0  # generous: a loaded machine must not turn a broken answer into a timeout
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
        # an adversarial pass: each of these was named wrongly (this machine's proxy settings, an empty
        # label, "Connection error." alone), and a redirect to another host re-sent the question there
        "huge_int": ChatBehaviour(raw_body=b'{"choices": [], "usage": {"total_tokens": ' + b"9" * 5000 + b"}}"),
        "error_object": ChatBehaviour(raw_body=b'{"error": {"message": "rate limited, try later"}}'),
        "tool_call": ChatBehaviour(raw_body=json.dumps({**completion(None), "choices": [{
            "index": 0, "finish_reason": "tool_calls", "message": {"role": "assistant", "content": None, "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "route", "arguments": "{}"}}]}}]}).encode()),
        "redirect_elsewhere": ChatBehaviour(status=307, raw_body=b"", headers=(
            ("Location", "http://127.0.0.2:9/v1/chat/completions"),)),
        "redirect_loop": ChatBehaviour(status=307, raw_body=b"", headers=(("Location", "/v1/chat/completions"),)),
    }[mode]


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
        assert decision.intent.source == "model"
        assert decision.intent.name == "injury"
        assert decision.intent.model.label == "injury"
        assert decision.intent.fallback_reason is None
        assert decision.confidence == round(decision.coverage * ROUTE_CONFIDENCE["model"], 4)
        sent = server.requests[-1]
        assert sent["path"] == "/v1/chat/completions"
        assert sent["body"]["messages"][-1]["content"] == UNSURE  # the model reads the question as written
        assert all(i in sent["body"]["messages"][0]["content"] for i in INTENTS)

    @pytest.mark.timeout(10)
    @pytest.mark.parametrize("mode", ["label:Injury.", "label: `training`", 'label:{"intent": "injury"}'])
    def test_labels_in_a_little_noise_are_accepted(self, mode: str, ask: Callable[[str], Decision]) -> None:
        assert ask(mode).intent.source == "model"


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
        ("huge_int", "model_error", "the endpoint's answer is not a chat completion (it holds a number of more "
                                    "than 4,300 digits)"),
        ("error_object", "model_error", "the endpoint answered HTTP 200 with an error: rate limited, try later"),
        ("tool_call", "model_error", "the model answered with a tool call, not text"),
        ("redirect_elsewhere", "model_error", "the endpoint redirected the call to "
                                              "'http://127.0.0.2:9/v1/chat/completions', another host"),
        ("redirect_loop", "model_error", "(TooManyRedirects: Exceeded maximum allowed redirects.)"),
    ], ids=["timeout", "http_500", "non_json", "broken_json", "non_intent_label", "two_labels", "empty_answer",
            "null_content", "no_choices", "huge_int", "error_object", "tool_call", "redirect_elsewhere",
            "redirect_loop"])
    def test_falls_back_with_a_typed_reason(self, mode: str, reason: str, says: str,
                                            ask: Callable[[str], Decision], policy: Policy) -> None:
        started = time.perf_counter()
        decision = ask(mode)
        elapsed = time.perf_counter() - started
        intent = decision.intent
        assert intent.source == "fallback"
        assert intent.fallback_reason == reason
        assert says in intent.reason
        assert intent.reason.endswith(f"so fell back to {intent.name}")
        assert intent.name == route(UNSURE, policy, None).intent  # the keyword fallback
        assert set(intent.contenders) == {"training", "injury"}
        assert f"the model could not route this question ({reason}); fell back to {intent.name}" \
            in decision.warnings
        assert decision.confidence == round(decision.coverage * ROUTE_CONFIDENCE["fallback"], 4)
        # uncertain routing keeps both contenders' primaries: nothing the runner-up needs is lost
        assert {"readiness_training", "readiness_injury"} <= set(decision.selected)
        if reason == "model_timeout":
            assert intent.model.latency_ms < SERVER_STALL_S * 1000
            assert elapsed < SERVER_STALL_S  # the client gave up; it did not wait for the stalled server

    @pytest.mark.timeout(10)
    def test_nothing_listening(self, policy: Policy, maya: Bundle) -> None:
        import socket

        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        dead = OpenAIClassifier(api_key="sk-test", base_url=f"http://127.0.0.1:{port}/v1", timeout_s=MODEL_TIMEOUT_S)
        decision = select(UNSURE, maya, policy, classifier=dead)
        assert decision.intent.fallback_reason in ("model_error", "model_timeout")
        assert decision.intent.source == "fallback"

    @pytest.mark.timeout(10)
    def test_a_confident_question_never_calls_the_model(self, server: ChatServer, classifier: OpenAIClassifier,
                                                        policy: Policy, maya: Bundle) -> None:
        server.behaviour = behaviour("500")
        decision = select("How much protein per day?", maya, policy, classifier=classifier)
        assert decision.intent.source == "rules"
        assert server.requests == []


BAD_TIMEOUTS = ["nan", "NaN", "inf", "-inf", "-1", "0", "0.0", "abc", "3s", "1e9", "601"]


class TestTimeoutSetting:
    @pytest.mark.timeout(10)
    @pytest.mark.parametrize("value", BAD_TIMEOUTS)
    def test_the_cli_refuses_a_bad_model_timeout_as_a_setting(self, value: str, monkeypatch: pytest.MonkeyPatch,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
        monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")  # never reached: refused first
        monkeypatch.setenv("COACHCTX_MODEL_TIMEOUT", value)
        code = main(["explain", UNSURE, "--athlete", "maya"])
        out, err = capsys.readouterr()
        assert (code, out) == (2, "")
        assert err == (f"coachctx: COACHCTX_MODEL_TIMEOUT={value!r} (from the environment) is not a usable "
                       f"timeout: expected a number of seconds from {MIN_TIMEOUT_S:g} to {MAX_TIMEOUT_S:g}\n")

    @pytest.mark.timeout(10)
    @pytest.mark.parametrize("value", ["", "  "])
    def test_an_empty_setting_means_the_default(self, value: str) -> None:
        assert model_settings({"COACHCTX_MODEL_TIMEOUT": value}).timeout_s == DEFAULT_TIMEOUT_S

    @pytest.mark.timeout(10)
    def test_the_setting_is_read_once(self, server: ChatServer, monkeypatch: pytest.MonkeyPatch) -> None:
        server.behaviour = behaviour("label:injury")  # a healthy endpoint, whatever a test before left it
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        monkeypatch.setenv("COACHCTX_MODEL_TIMEOUT", "2.5")
        classifier = classifier_from_env()
        monkeypatch.setenv("COACHCTX_MODEL_TIMEOUT", "nan")  # too late: the classifier has its deadline
        assert classifier is not None and classifier.timeout_s == 2.5
        assert classifier(UNSURE, INTENTS).error is None

    @pytest.mark.timeout(10)
    @pytest.mark.parametrize("value", [math.nan, math.inf, -1.0, 0.0, 1e9])
    def test_the_classifier_refuses_a_bad_deadline(self, value: float) -> None:
        with pytest.raises(InputError, match=r"^the model timeout=.* is not a usable timeout"):
            OpenAIClassifier(api_key="k", base_url=None, timeout_s=value)

    @pytest.mark.timeout(10)
    @pytest.mark.parametrize(("env", "secrets", "refused"), [
        ({"COACHCTX_MODEL_TIMEOUT": "nan"}, {}, "COACHCTX_MODEL_TIMEOUT='nan' (from the environment)"),
        ({}, {"COACHCTX_MODEL_TIMEOUT": -3}, "COACHCTX_MODEL_TIMEOUT='-3' (from .streamlit/secrets.toml)"),
        ({}, {"COACHCTX_REPLY_TIMEOUT": "inf"}, "COACHCTX_REPLY_TIMEOUT='inf' (from .streamlit/secrets.toml)"),
        ({"COACHCTX_REPLY_TIMEOUT": "301"}, {}, "COACHCTX_REPLY_TIMEOUT='301' (from the environment)"),
    ], ids=["env_nan", "secrets_negative", "secrets_reply_inf", "env_reply_too_long"])
    def test_the_playground_keeps_a_refused_setting_and_refuses_every_use(
            self, env: dict[str, str], secrets: dict[str, Any], refused: str, server: ChatServer) -> None:
        server.requests.clear()
        config = model_settings({"OPENAI_BASE_URL": server.base_url, **env}, secrets)
        assert config.configured and config.problem is not None and config.problem.startswith(refused)
        with pytest.raises(InputError, match="is not a usable timeout"):
            config.cache_key  # noqa: B018 — the app computes it before deciding with the model
        with pytest.raises(InputError, match="is not a usable timeout"):
            list(stream_reply(config, [{"role": "user", "content": "hi"}]))
        assert server.requests == []  # nothing was sent to a misconfigured model


    @pytest.mark.timeout(10)
    @pytest.mark.parametrize(("env", "secrets", "refused"), [
        ({"OPENAI_BASE_URL": "ftp://models.example"}, {}, "OPENAI_BASE_URL='ftp://models.example' (from the environment)"),
        ({"OPENAI_BASE_URL": "http://127.0.0.1:99999"}, {}, "OPENAI_BASE_URL='http://127.0.0.1:99999'"),
        ({}, {"OPENAI_BASE_URL": "http://host name"}, "OPENAI_BASE_URL='http://host name' (from .streamlit/secrets"),
        ({"OPENAI_API_KEY": "sk-\u00e9t\u00e9"}, {}, "OPENAI_API_KEY (from the environment) holds the character U+00E9"),
        ({}, {"OPENAI_API_KEY": "sk-a\nb"}, "OPENAI_API_KEY (from .streamlit/secrets.toml) holds the character U+000A"),
    ], ids=["url_scheme", "url_port", "url_space", "env_key_accent", "secrets_key_newline"])
    def test_the_playground_checks_the_url_and_key_as_the_cli_does(
            self, env: dict[str, str], secrets: dict[str, Any], refused: str) -> None:
        config = model_settings(env, secrets)
        assert config.configured and config.problem is not None and config.problem.startswith(refused)
        with pytest.raises(InputError, match="^OPENAI_"):
            config.check()


class TestTimeoutSettingInThePlayground:
    @pytest.mark.timeout(120)
    def test_the_page_names_the_refused_setting_instead_of_calling_the_model(
            self, server: ChatServer, monkeypatch: pytest.MonkeyPatch) -> None:
        from streamlit.testing.v1 import AppTest

        st_caches_cleared()
        server.requests.clear()
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        monkeypatch.setenv("COACHCTX_MODEL_TIMEOUT", "nan")
        at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=60).run()
        assert not at.exception, [e.stack_trace for e in at.exception]
        refusal = "COACHCTX_MODEL_TIMEOUT='nan' (from the environment) is not a usable timeout"
        assert any(refusal in e.value for e in at.error)  # in place of the decision
        at.checkbox(key="use_model").uncheck().run()  # decide without the model: the reply still refuses
        assert at.session_state["decision"]["intent"]["fallback_reason"] == "no_model_configured"
        at.session_state["tab"] = "Prompt & reply"  # only the open tab is built
        at.run()
        at.button(key="generate").click().run()
        assert not at.exception
        assert any(e.value.startswith(f"No reply: {refusal}") for e in at.error)
        assert server.requests == []
        st_caches_cleared()


def st_caches_cleared() -> None:
    import streamlit as st

    st.cache_data.clear()
    st.cache_resource.clear()
