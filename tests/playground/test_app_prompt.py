"""The Prompt & reply tab under AppTest: a reply streams from a local OpenAI-compatible server, a
stalled stream keeps what came, and the referral check reads the policy's terms."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest
from app_support import decision, draft_with, new_app, open_tab, started
from openai_server import ChatBehaviour, ChatServer

from coachctx import playground as pg
from coachctx.engine.pipeline import select
from coachctx.engine.policy import Policy, parse_policy
from coachctx.engine.services import FixtureUpstream, fetch_bundle
from coachctx.model import model_settings

REPLY_CHUNKS = ("Keep today easy ", "and skip the intervals. ", "If the pain persists, see a physiotherapist.")


@pytest.fixture
def fake_openai() -> Iterator[ChatServer]:
    server = ChatServer().start()
    server.behaviour = ChatBehaviour(content="injury", reply_chunks=REPLY_CHUNKS)
    try:
        yield server
    finally:
        server.stop()


class TestReply:
    def test_without_a_key_the_button_explains_what_to_configure(self) -> None:
        at = started("Prompt & reply")
        button = at.button(key="generate")
        assert button.disabled
        assert "OPENAI_API_KEY" in (button.help or "")
        assert any("OPENAI_API_KEY" in i.value and "secrets.toml" in i.value for i in at.info)
        assert "reply" not in at.session_state

    def test_reply_streams_from_an_openai_compatible_server(self, fake_openai: ChatServer,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
        monkeypatch.setenv("OPENAI_BASE_URL", fake_openai.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
        monkeypatch.setenv("COACHCTX_MODEL", "coach-model")
        at = started("Prompt & reply")
        d = decision(at)
        assert d["intent"]["source"] == "model" and d["intent"]["name"] == "injury"
        at.button(key="generate").click().run()
        assert not at.exception
        reply = at.session_state["reply"]["text"]
        assert reply == "".join(REPLY_CHUNKS)
        streamed = [r["body"] for r in fake_openai.requests if r["body"].get("stream")]
        assert len(streamed) == 1 and streamed[0]["messages"] == d["prompt"]["messages"]
        # routing and the reply read one set of settings: the same model, key and endpoint
        assert {r["body"]["model"] for r in fake_openai.requests} == {"coach-model"}
        assert {r["headers"]["authorization"] for r in fake_openai.requests} == {"Bearer sk-test"}
        words = next(m for m in at.metric if m.label == "Words")
        assert words.value == f"{pg.count_words(reply)} / {d['max_words']}"
        assert any("ends with a referral" in s.value for s in at.success)

    def test_a_policy_without_referral_terms_says_the_referral_is_not_checked(
            self, fake_openai: ChatServer, monkeypatch: pytest.MonkeyPatch) -> None:
        monkeypatch.setenv("OPENAI_BASE_URL", fake_openai.base_url)
        at = new_app()
        at.session_state["policy_yaml"] = draft_with(lambda d: d.pop("referral_terms"))
        at.run()
        assert decision(at)["clinical"]["is_clinical"]
        open_tab(at, "Prompt & reply").button(key="generate").click().run()
        assert not at.exception
        assert at.session_state["reply"]["text"].endswith("see a physiotherapist.")
        assert any("the policy lists no referral terms" in w.value for w in at.warning)
        assert not any("referral" in s.value for s in at.success)

    def test_reply_settings_from_secrets_toml(self, fake_openai: ChatServer) -> None:
        at = new_app()
        at.secrets["OPENAI_BASE_URL"] = fake_openai.base_url
        at.run()
        assert not at.exception
        open_tab(at, "Prompt & reply").button(key="generate").click().run()
        assert at.session_state["reply"]["text"] == "".join(REPLY_CHUNKS)
        assert any("secrets.toml" in c.value for c in at.caption)

    def test_a_failing_endpoint_is_reported_not_raised(self, monkeypatch: pytest.MonkeyPatch) -> None:
        at = new_app()
        at.session_state["typed_api_key"] = "sk-test"
        monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")  # nothing listens on port 9
        at.run()
        assert not at.exception
        assert decision(at)["intent"]["source"] == "fallback"
        open_tab(at, "Prompt & reply").button(key="generate").click().run()
        assert not at.exception
        assert any("No reply" in e.value for e in at.error)


STALL_CHUNKS = ("Keep today easy ", "and skip the intervals. ")
REPLY_TIMEOUT_S = 1


@pytest.fixture
def stalling_openai(monkeypatch: pytest.MonkeyPatch) -> Iterator[ChatServer]:
    """Answers classification at once, but a streamed reply sends two chunks and then goes
    silent for longer than the page's reply timeout, holding the connection open."""
    server = ChatServer().start()
    server.behaviour = ChatBehaviour(content="injury", reply_chunks=STALL_CHUNKS,
                                     stall_after_chunks_s=20 * REPLY_TIMEOUT_S)
    monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.setenv("COACHCTX_REPLY_TIMEOUT", str(REPLY_TIMEOUT_S))
    try:
        yield server
    finally:
        server.stop()


class TestSlowReplyStream:
    def test_a_stalled_stream_keeps_the_partial_reply_and_the_page_stays_usable(self, stalling_openai: ChatServer) -> None:
        at = started("Prompt & reply")
        assert decision(at)["intent"]["source"] == "model"
        started_at = time.monotonic()
        at.button(key="generate").click().run()
        assert time.monotonic() - started_at < 15, "the stall was not cut off by the reply timeout"
        assert not at.exception, [e.stack_trace for e in at.exception]
        partial = "".join(STALL_CHUNKS)
        reply = at.session_state["reply"]
        assert reply["text"] == partial
        assert f"sent nothing for {REPLY_TIMEOUT_S} s" in reply["error"]
        stopped = [e.value for e in at.error if "stopped part-way" in e.value]
        assert stopped and f"after {pg.count_words(partial)} words" in stopped[0]

        at.run()  # a rerun shows the same partial reply and message, and nothing raises
        assert not at.exception
        assert any(m.value == partial.strip() for m in at.markdown)
        assert any("stopped part-way" in e.value for e in at.error)
        at.text_input(key="question").input("How much protein per day?").run()
        assert not at.exception
        assert decision(at)["question"] == "How much protein per day?"
        assert not any("stopped part-way" in e.value for e in at.error)  # the partial reply was for the other prompt


class TestReplyHelpers:
    """The reply's checks and the model settings, called directly."""

    def test_referral_and_word_count(self, policy: Policy) -> None:
        assert pg.referral_line("Rest. If it persists, see a physiotherapist.", policy) == \
            "If it persists, see a physiotherapist."
        assert pg.referral_line("See a doctor first. Then rest. Then eat.", policy) is None
        assert pg.referral_line("Ruhe dich aus. Geh bitte zum Arzt.", policy) == "Geh bitte zum Arzt."
        assert pg.referral_line("痛みが続くなら医師に相談してください。", policy) == "痛みが続くなら医師に相談してください。"
        assert pg.count_words("one two three") == 3
        assert pg.count_words("足首が痛い") == 5

    def test_the_referral_terms_are_the_policy_s(self, policy: Policy) -> None:
        own = parse_policy(draft_with(lambda d: d.update(referral_terms={"de": ["Hausärztin"], "en": ["coach"]})))
        assert pg.referral_line("Rest. Ask your HAUSÄRZTIN.", own) == "Ask your HAUSÄRZTIN."
        assert pg.referral_line("Rest. Your coaches know best.", own) == "Your coaches know best."
        assert pg.referral_line("Rest. If it persists, see a physiotherapist.", own) is None
        assert pg.referral_line("Rest. Talk to your headcoach.", own) is None  # a term starts a word
        none = parse_policy(draft_with(lambda d: d.pop("referral_terms")))
        d = select("My knee hurts, can I run?", fetch_bundle(FixtureUpstream(), "maya"), none)
        report = pg.reply_report("Rest. See a physiotherapist.", d, none)
        assert report.clinical and (report.referral, report.referral_checked) == (None, False)
        assert pg.reply_report("Rest. See a physiotherapist.", d, policy).referral == "See a physiotherapist."

    def test_model_settings_prefer_the_typed_key_then_env_then_secrets(self) -> None:
        assert not model_settings({}, {}, None).configured
        from_secrets = model_settings({}, {"OPENAI_API_KEY": "s"}, None)
        assert from_secrets.configured and from_secrets.source == ".streamlit/secrets.toml"
        env = model_settings({"OPENAI_API_KEY": "e"}, {"OPENAI_API_KEY": "s"}, None)
        assert env.api_key == "e" and env.source == "environment"
        typed = model_settings({"OPENAI_API_KEY": "e"}, {}, "t")
        assert typed.api_key == "t" and typed.source == "a key typed in this session"
