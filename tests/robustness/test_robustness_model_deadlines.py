"""Issue 12: every model call — the classification and the reply stream — has a total deadline that a
server trickling bytes or streaming forever cannot stretch, and what is read and kept of an answer is
capped. Against a local OpenAI-compatible server on 127.0.0.1 (conftest.py's `server`). (How the page
shows a stalled reply belongs to the app's tests.)
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from openai_server import ChatBehaviour, ChatServer
from robustness_support import model_threads

from coachctx.cli import main
from coachctx.engine.pipeline import select
from coachctx.engine.policy import INTENTS, Policy
from coachctx.engine.services import Bundle
from coachctx.errors import CoachctxError
from coachctx.model import (
    MAX_REPLY_BYTES,
    MAX_REPLY_CHARS,
    ModelSettings,
    OpenAIClassifier,
    model_settings,
    stream_reply,
)
from coachctx.model.classifier import MAX_ANSWER_BYTES, MAX_RAW_CHARS
from coachctx.tools.trace import json_text, make_trace, parse_trace, replay

# keyword scores tie (training 2.0, injury 2.0), so the rules are unsure and the model is asked
UNSURE = "Should I train through this pain?"
DEADLINE_S = 0.5
"""The classifier's deadline in these tests. Each slow server below would take well over 10 s
(the pytest-timeout) to finish, with every single read arriving well within the deadline: only
a deadline on the whole call ends them in time."""


@pytest.fixture
def slow(server: ChatServer) -> Iterator[OpenAIClassifier]:
    server.requests.clear()
    yield OpenAIClassifier(api_key="sk-test", base_url=server.base_url, model="test-model", timeout_s=DEADLINE_S)
    server.behaviour = ChatBehaviour()


class TestTotalDeadline:
    @pytest.mark.timeout(10)
    @pytest.mark.parametrize("slowly", [
        ChatBehaviour(trickle_body_s=0.1),   # the answer a byte every 0.1 s: ~30 s for the whole body
        ChatBehaviour(trickle_head_s=0.1),   # the status line and headers a byte every 0.1 s: ~10 s
        ChatBehaviour(trickle_body_s=0.1, content="injury" * 50),
    ], ids=["body_a_byte_at_a_time", "headers_a_byte_at_a_time", "long_body_trickled"])
    def test_a_trickling_server_is_cut_at_the_deadline(self, slowly: ChatBehaviour, server: ChatServer,
                                                       slow: OpenAIClassifier, policy: Policy, maya: Bundle) -> None:
        server.behaviour = slowly
        decision = select(UNSURE, maya, policy, classifier=slow)
        intent = decision.intent
        assert (intent.source, intent.fallback_reason) == ("fallback", "model_timeout")
        assert f"no complete answer within the {DEADLINE_S:g} s deadline" in intent.reason
        assert {"readiness_training", "readiness_injury"} <= set(decision.selected)
        assert model_threads() == []  # the call's loop and its thread are gone

    @pytest.mark.timeout(10)
    def test_a_body_that_never_ends_is_cut_by_size_before_the_deadline(self, server: ChatServer,
                                                                       slow: OpenAIClassifier) -> None:
        server.behaviour = ChatBehaviour(endless_body=True)
        answer = slow(UNSURE, INTENTS)
        assert (answer.raw, answer.timed_out) == (None, False)
        assert answer.error == f"the endpoint's answer is larger than {MAX_ANSWER_BYTES} bytes"

    @pytest.mark.timeout(10)
    def test_a_ten_megabyte_answer_is_refused_and_nothing_of_it_is_kept(
            self, server: ChatServer, slow: OpenAIClassifier, policy: Policy, maya: Bundle) -> None:
        server.behaviour = ChatBehaviour(content="injury " * 1_500_000)
        decision = select(UNSURE, maya, policy, classifier=slow)
        assert decision.intent.fallback_reason == "model_error"
        assert decision.intent.model.raw is None
        assert len(json.dumps(decision.to_json())) < 100_000

    @pytest.mark.timeout(10)
    def test_a_long_answer_under_the_byte_cap_is_clipped_in_the_decision_and_its_trace(
            self, server: ChatServer, slow: OpenAIClassifier, policy: Policy, maya: Bundle) -> None:
        server.behaviour = ChatBehaviour(content="injury " * 20_000)  # 140 kB: read, but not kept whole
        decision = select(UNSURE, maya, policy, classifier=slow)
        raw = decision.intent.model.raw
        assert decision.intent.fallback_reason == "invalid_label"
        assert raw.startswith("injury injury") and raw.endswith(f"[{140_000 - MAX_RAW_CHARS} more characters not kept]")
        assert len(raw) < MAX_RAW_CHARS + 60
        trace = make_trace(decision, maya, cost_mode="hand", budget=None)
        assert len(json_text(trace)) < 100_000
        assert replay(parse_trace(json_text(trace)), policy, policy_source="default").same

    @pytest.mark.timeout(20)
    def test_the_cli_cut_at_the_deadline_from_the_environment(self, server: ChatServer, monkeypatch: pytest.MonkeyPatch,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
        server.behaviour = ChatBehaviour(trickle_body_s=0.1)
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        monkeypatch.setenv("COACHCTX_MODEL_TIMEOUT", str(DEADLINE_S))
        code = main(["explain", UNSURE, "--athlete", "maya", "--json"])
        out, err = capsys.readouterr()
        assert (code, err) == (0, "")
        assert json.loads(out)["intent"]["fallback_reason"] == "model_timeout"


class TestQuestionText:
    @pytest.mark.timeout(10)
    def test_a_lone_surrogate_reaches_the_classifier_as_a_replacement(self, server: ChatServer,
                                                                       slow: OpenAIClassifier) -> None:
        server.behaviour = ChatBehaviour(content="injury")
        answer = slow("Should I train through this pain\udc80?", INTENTS)
        assert (answer.raw, answer.error) == ("injury", None)
        assert server.requests[-1]["body"]["messages"][-1]["content"] == "Should I train through this pain\ufffd?"


def reply_config(server: ChatServer, silence_s: float = 5.0) -> ModelSettings:
    config = model_settings({"OPENAI_BASE_URL": server.base_url, "COACHCTX_REPLY_TIMEOUT": str(silence_s)})
    assert config.configured and config.problem is None
    return config


def stream(config: ModelSettings, deadline_s: float = 1.0) -> tuple[str, str | None]:
    """(what arrived, the error that stopped it or None)."""
    pieces: list[str] = []
    try:
        for piece in stream_reply(config, [{"role": "user", "content": UNSURE}], deadline_s=deadline_s):
            pieces.append(piece)
    except CoachctxError as e:
        return "".join(pieces), str(e)
    return "".join(pieces), None


class TestReplyDeadline:
    @pytest.mark.timeout(10)
    def test_a_chunk_at_a_steady_pace_forever_is_cut_at_the_total_deadline(self, server: ChatServer) -> None:
        server.behaviour = ChatBehaviour(chunk_interval_s=0.2, stream_forever=True)  # never silent for long
        text, error = stream(reply_config(server))
        assert error == "the reply was still streaming after 1 s, so it was stopped"
        assert text.startswith("Keep today easy ")  # what arrived is kept

    @pytest.mark.timeout(10)
    def test_chunks_trickled_a_byte_at_a_time_are_cut_at_the_total_deadline(self, server: ChatServer) -> None:
        server.behaviour = ChatBehaviour(trickle_body_s=0.01)  # a chunk takes ~1.5 s, a byte every 10 ms
        _, error = stream(reply_config(server))
        assert error == "the reply was still streaming after 1 s, so it was stopped"

    @pytest.mark.timeout(10)
    def test_trickled_chunks_under_a_short_silence_limit_count_as_silence(self, server: ChatServer) -> None:
        server.behaviour = ChatBehaviour(trickle_body_s=0.01)
        _, error = stream(reply_config(server, silence_s=0.3), deadline_s=5.0)
        assert error == "the model endpoint sent nothing for 0.3 s (the reply timeout, COACHCTX_REPLY_TIMEOUT)"

    @pytest.mark.timeout(10)
    def test_headers_trickled_a_byte_at_a_time_are_cut(self, server: ChatServer) -> None:
        server.behaviour = ChatBehaviour(trickle_head_s=0.05)
        text, error = stream(reply_config(server, silence_s=0.5), deadline_s=5.0)
        assert text == "" and error is not None and "sent nothing for 0.5 s" in error

    @pytest.mark.timeout(10)
    def test_a_fast_endless_stream_is_cut_at_the_character_cap(self, server: ChatServer) -> None:
        server.behaviour = ChatBehaviour(stream_forever=True, forever_chunk="more " * 200)
        text, error = stream(reply_config(server), deadline_s=8.0)
        assert error == f"the reply passed {MAX_REPLY_CHARS} characters, so it was stopped"
        assert len(text) == MAX_REPLY_CHARS

    @pytest.mark.timeout(10)
    def test_one_enormous_chunk_is_clipped(self, server: ChatServer) -> None:
        server.behaviour = ChatBehaviour(reply_chunks=("x" * 3 * MAX_REPLY_CHARS,))
        text, error = stream(reply_config(server))
        assert (len(text), error) == (MAX_REPLY_CHARS, f"the reply passed {MAX_REPLY_CHARS} characters, so it "
                                                          "was stopped")

    @pytest.mark.timeout(10)
    def test_an_endless_body_without_events_is_cut(self, server: ChatServer) -> None:
        server.behaviour = ChatBehaviour(endless_body=True, content_type="text/event-stream")
        text, error = stream(reply_config(server), deadline_s=5.0)
        assert (text, error) == ("", f"the reply stream passed {MAX_REPLY_BYTES} bytes, so it was stopped")
        assert model_threads() == []

    @pytest.mark.timeout(10)
    def test_a_lone_surrogate_in_the_prompt_reaches_the_endpoint_as_a_replacement(self, server: ChatServer) -> None:
        server.behaviour = ChatBehaviour()
        server.requests.clear()
        pieces = list(stream_reply(reply_config(server), [{"role": "user", "content": "pain \udc80 here"}]))
        assert "".join(pieces).endswith("see a physiotherapist.")
        assert server.requests[-1]["body"]["messages"][0]["content"] == "pain \ufffd here"


    @pytest.mark.timeout(10)
    @pytest.mark.parametrize(("chunks", "text", "error"), [
        (([{"type": "text", "text": "Keep it "}], "easy."), "Keep it easy.", None),
        (("Keep \ud800 it easy.",), "Keep \ufffd it easy.", None),
        (("Keep ", 5), "Keep ", "the endpoint's reply stream is not a chat completion stream (its content is a int "
                                "of no text parts)"),
    ], ids=["a_list_of_text_parts", "a_lone_surrogate", "a_number"])
    def test_a_chunk_in_another_form_is_read_as_the_classifier_reads_it(
            self, server: ChatServer, chunks: tuple[object, ...], text: str, error: str | None) -> None:
        """A list of text parts was yielded as a list and a lone surrogate as is: the page's join and
        its protobuf raised TypeError and UnicodeEncodeError, a traceback (an adversarial pass)."""
        server.behaviour = ChatBehaviour(reply_chunks=chunks)
        assert stream(reply_config(server), deadline_s=5.0) == (text, error)


class TestAnswerShapesAndEncodings:
    """What some OpenAI-compatible servers send instead of a plain text content, and compressed
    answers: read when they can be, a fallback with the reason when not; never a traceback, and
    the byte cap counts what a compressed answer decodes to."""

    @pytest.mark.timeout(10)
    def test_content_as_a_list_of_text_parts_is_read(self, server: ChatServer, slow: OpenAIClassifier,
                                                     policy: Policy, maya: Bundle) -> None:
        server.behaviour = ChatBehaviour(content=[{"type": "text", "text": "inj"}, {"type": "text", "text": "ury"}])
        decision = select(UNSURE, maya, policy, classifier=slow)
        assert (decision.intent.name, decision.intent.source) == ("injury", "model")

    @pytest.mark.timeout(10)
    @pytest.mark.parametrize("content", [{"a": 1}, [{"type": "image_url"}], [1, 2]], ids=["object", "no-text", "numbers"])
    def test_content_of_another_shape_falls_back_saying_so(self, server: ChatServer, slow: OpenAIClassifier,
                                                           policy: Policy, maya: Bundle, content: Any) -> None:
        server.behaviour = ChatBehaviour(content=content)
        decision = select(UNSURE, maya, policy, classifier=slow)
        assert decision.intent.fallback_reason == "model_error"
        assert "is not a chat completion (its content is a" in decision.intent.reason

    @pytest.mark.timeout(10)
    def test_a_gzip_answer_is_read_and_a_gzip_bomb_is_cut_at_the_cap_on_its_decoded_size(
            self, server: ChatServer, slow: OpenAIClassifier) -> None:
        server.behaviour = ChatBehaviour(content_encoding="gzip")
        assert slow(UNSURE, INTENTS).raw == "injury"
        assert server.requests[-1]["headers"]["accept-encoding"] == "identity"
        bomb = b'{"choices": [{"message": {"content": "' + b" " * (40 * MAX_ANSWER_BYTES)  # 10 MB: 10 kB of gzip
        server.behaviour = ChatBehaviour(raw_body=bomb, content_encoding="gzip")
        answer = slow(UNSURE, INTENTS)
        assert answer.error == f"the endpoint's answer is larger than {MAX_ANSWER_BYTES} bytes"

    @pytest.mark.timeout(10)
    def test_an_encoding_that_is_not_read_is_named(self, server: ChatServer, slow: OpenAIClassifier) -> None:
        server.behaviour = ChatBehaviour(content_encoding="br")
        answer = slow(UNSURE, INTENTS)
        assert answer.raw is None and "compressed as 'br', which is not read" in (answer.error or "")
