"""The adversarial pass over the entry points the earlier hardening missed (issue 12), continued:
what the library and the model settings are handed. Arguments of the wrong type or kind are refused
by name in one line; a setting that is not usable is refused as a setting; valid values next to
them show the fix refuses nothing it should take.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from robustness_support import PAIN, POLICY, Result, TerminalRun, terminal_cli

from coachctx.engine.pipeline import select
from coachctx.engine.policy import load_policy, parse_policy
from coachctx.engine.routing import ModelAnswer
from coachctx.engine.services import FixtureUpstream, fetch_bundle
from coachctx.errors import InputError, PolicyError, TraceError
from coachctx.model import model_settings
from coachctx.tools.questions import parse_questions, read_questions
from coachctx.tools.suggest import read_labelled
from coachctx.tools.trace import json_text, make_trace, parse_trace, read_trace

pytestmark = pytest.mark.timeout(20)
UNSURE = "Should I train through this pain?"  # the rules are unsure: the classifier is asked


@pytest.fixture
def cli(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> TerminalRun:
    """`coachctx ARGS` in-process, run in tmp_path, with terminal-like streams in `encoding`."""
    return terminal_cli(monkeypatch, cwd=tmp_path)


# --- model settings -------------------------------------------------------------------------------


class TestModelSettings:
    @pytest.mark.parametrize(("env", "message"), [
        ({"OPENAI_BASE_URL": "http://[::1"}, "OPENAI_BASE_URL='http://[::1' (from the environment) is not a usable "
                                             "URL: Invalid IPv6 URL"),
        ({"OPENAI_BASE_URL": "http://127.0.0.1:99999/v1"}, "is not a usable URL: Port out of range 0-65535"),
        ({"OPENAI_BASE_URL": "ftp://127.0.0.1/"}, "is not a usable URL: expected http:// or https:// and a host"),
        ({"OPENAI_BASE_URL": "localhost:8000"}, "is not a usable URL: expected http:// or https:// and a host"),
        ({"OPENAI_BASE_URL": "not a url"}, "is not a usable URL: it holds a space"),
        ({"OPENAI_BASE_URL": "http://127.0.0.1:1/\x1b[2J"}, "is not a usable URL: it holds the character U+001B"),
        ({"OPENAI_API_KEY": "sk-secret\nX-Injected: 1"}, "OPENAI_API_KEY (from the environment) holds the character "
                                                         "U+000A, which an HTTP header cannot carry (the key is not "
                                                         "shown)"),
        ({"OPENAI_API_KEY": "sk-clé"}, "holds the character U+00E9"),
        ({"OPENAI_BASE_URL": "http://127.0.0.1:1/", "COACHCTX_MODEL_TIMEOUT": "1_0"}, "COACHCTX_MODEL_TIMEOUT='1_0'"),
        ({"OPENAI_BASE_URL": "http://127.0.0.1:1/", "COACHCTX_MODEL_TIMEOUT": "\u0663"},
         "COACHCTX_MODEL_TIMEOUT='\u0663'"),
    ], ids=["bad-ipv6", "port-out-of-range", "ftp", "no-scheme", "space", "escape", "key-newline", "key-non-ascii",
            "timeout-underscore", "timeout-arabic-indic"])
    def test_refused_as_a_setting_before_any_work(self, cli: Callable[..., Result], monkeypatch: pytest.MonkeyPatch,
                                                  env: dict[str, str], message: str) -> None:
        for name, value in env.items():
            monkeypatch.setenv(name, value)
        line = cli("explain", PAIN, "--athlete", "maya").one_line_error()
        assert message in line
        assert "secret" not in line and "clé" not in line

    def test_settings_of_only_whitespace_are_unset(self) -> None:
        s = model_settings({"OPENAI_API_KEY": " ", "OPENAI_BASE_URL": "\t", "COACHCTX_MODEL": " "})
        assert (s.api_key, s.base_url, s.model, s.configured) == (None, None, "gpt-4o-mini", False)

    @pytest.mark.parametrize("value", ["2", "2.5", ".5", " 3 ", "1e1", "600"])
    def test_plain_decimals_are_still_taken(self, value: str) -> None:
        assert model_settings({"COACHCTX_MODEL_TIMEOUT": value}).timeout_s == float(value)

    def test_a_valid_url_and_key_are_kept(self) -> None:
        s = model_settings({"OPENAI_BASE_URL": "https://llm.example.org:8443/v1", "OPENAI_API_KEY": "sk-abc_123"})
        assert (s.base_url, s.api_key, s.problem) == ("https://llm.example.org:8443/v1", "sk-abc_123", None)


# --- the library: arguments of the wrong type ------------------------------------------------------


class TestLibraryArguments:
    @pytest.mark.parametrize("path", [None, 3, b"/etc/passwd"], ids=["none", "int", "bytes"])
    def test_a_path_that_is_not_a_path_is_one_line(self, path: Any) -> None:
        kind = type(path).__name__
        if path is not None:  # None is the default policy
            with pytest.raises(PolicyError, match=rf"^invalid policy <{kind}>: expected the path of a YAML file, "):
                load_policy(path)
        with pytest.raises(TraceError, match=rf"^<{kind}>: expected the path of a trace JSON file, got "):
            read_trace(path)
        with pytest.raises(InputError, match=rf"^<{kind}>: expected the path of a question set file, got "):
            read_questions(path)
        with pytest.raises(InputError, match=rf"^<{kind}>: expected the path of a labelled log, got "):
            read_labelled(path)

    def test_fetch_bundle_with_its_arguments_swapped_is_refused(self) -> None:
        # they read as four unreachable services (an adversarial pass)
        from coachctx.engine.services import FixtureUpstream, fetch_bundle

        with pytest.raises(InputError, match=r"^upstream must be an Upstream \(FixtureUpstream, or anything with "
                                             r"call\(service, key\)\), got str$"):
            fetch_bundle("maya", FixtureUpstream())  # type: ignore[arg-type]
        with pytest.raises(InputError, match=r"^athlete must be an athlete id \(text\), got int$"):
            fetch_bundle(FixtureUpstream(), 7)  # type: ignore[arg-type]

    @pytest.mark.parametrize("text", [None, 5, ["a"]], ids=["none", "int", "list"])
    def test_text_that_is_not_text_is_one_line(self, text: Any) -> None:
        kind = type(text).__name__
        with pytest.raises(PolicyError, match=rf"^invalid policy <draft>: expected the policy's YAML text, got {kind}$"):
            parse_policy(text)
        with pytest.raises(TraceError, match=rf"^<trace>: expected the trace's JSON text, got {kind}$"):
            parse_trace(text)
        with pytest.raises(InputError, match=rf"^<questions>: expected the question set's text, got {kind}$"):
            parse_questions(text, "jsonl")

    def test_policy_bytes_are_read_as_strict_utf8(self) -> None:
        assert parse_policy(Path(POLICY).read_bytes()) == load_policy()
        with pytest.raises(PolicyError, match=r"^invalid policy <draft>: line 1, column 3: not UTF-8 text \(byte 2\)$"):
            parse_policy(b"a:\xff")

    def test_a_trace_with_a_byte_order_mark_reads(self, cli: Callable[..., Result], tmp_path: Path) -> None:
        assert cli("explain", PAIN, "--athlete", "maya", "--trace-out", "t.json").code == 0
        data = (tmp_path / "t.json").read_bytes()
        (tmp_path / "t.json").write_bytes(b"\xef\xbb\xbf" + data)
        assert parse_trace(b"\xef\xbb\xbf" + data).inputs["question"] == PAIN
        assert parse_trace("\ufeff" + data.decode("utf-8")).inputs["question"] == PAIN
        r = cli("replay", "t.json")
        assert r.code == 0 and "exactly as recorded" in r.out


class TestLibraryArgumentsOfTheWrongKind:
    """`select()` refuses arguments of the wrong kind by name, and a classifier that breaks its
    contract (answers something other than a ModelAnswer) is a model error, not a crash."""

    @pytest.mark.timeout(20)
    @pytest.mark.parametrize(("which", "message"), [
        ("bundle", r"^bundle must be a coachctx Bundle \(fetch_bundle\), got NoneType$"),
        ("policy", r"^policy must be a coachctx Policy \(load_policy\), got dict$"),
        ("tier", r"^tier must be text, got list$"),
        ("scope", r"^scope must be text, got dict$"),
    ])
    def test_wrong_kinds_are_refused_by_name(self, which: str, message: str) -> None:
        from coachctx.engine.pipeline import select
        from coachctx.engine.services import FixtureUpstream, fetch_bundle

        args: dict[str, Any] = {"bundle": fetch_bundle(FixtureUpstream(), "maya"), "policy": load_policy()}
        extra: dict[str, Any] = {}
        if which == "bundle":
            args["bundle"] = None
        elif which == "policy":
            args["policy"] = {}
        else:
            extra[which] = ["paid"] if which == "tier" else {}
        with pytest.raises(InputError, match=message):
            select("knee pain", args["bundle"], args["policy"], **extra)

    @pytest.mark.timeout(20)
    @pytest.mark.parametrize(("option", "value", "message"), [
        ("policy_source", None, r"^policy_source must be text, got NoneType$"),
        ("policy_version", 5, r"^policy_version must be text or None, got int$"),
        ("recorded_route", "injury", r"^recorded_route must be a Route \(from a trace\) or None, got str$"),
        ("soften_excludes", "no", r"^soften_excludes must be True or False, got 'no'$"),
        ("count_naive", 1, r"^count_naive must be True or False, got 1$"),
        ("classifier", "x", r"^classifier must be callable \(question -> label\) or None, got str$"),
    ])
    def test_options_of_the_wrong_kind_are_refused_by_name(self, option: str, value: Any, message: str) -> None:
        # an adversarial pass, 2026-12-07: "unhashable type: 'slice'", an AttributeError, "no" read as true
        from coachctx.engine.pipeline import select
        from coachctx.engine.services import FixtureUpstream, fetch_bundle

        with pytest.raises(InputError, match=message):
            select("knee pain", fetch_bundle(FixtureUpstream(), "maya"), load_policy(), **{option: value})

    @pytest.mark.timeout(20)
    @pytest.mark.parametrize("answer", ["injury", None, 3])
    def test_a_classifier_answering_the_wrong_kind_is_a_model_error(self, answer: Any) -> None:
        from coachctx.engine.pipeline import select
        from coachctx.engine.services import FixtureUpstream, fetch_bundle

        d = select("hm, not sure", fetch_bundle(FixtureUpstream(), "maya"), load_policy(),
                   classifier=lambda q, intents: answer)
        assert d.intent.source == "fallback" and d.intent.fallback_reason == "model_error"
        assert "not a ModelAnswer" in d.intent.reason


# --- a classifier of the caller's own -------------------------------------------------------------


class TestACustomClassifiersAnswer:
    """`select()` took a ModelAnswer's fields as they came: a number or bytes as the answer, a latency
    of text, raised; a NaN latency put NaN in the JSON; a 10 MB answer or error was kept whole, a trace
    over the 5 MB replay reads (an adversarial pass). Each is now a Decision that holds what it can."""

    @pytest.mark.parametrize(("answer", "source", "error"), [
        (ModelAnswer(raw=5, latency_ms=3.0), "fallback", "the classifier answered a int, not text"),  # type: ignore[arg-type]
        (ModelAnswer(raw=b"injury", latency_ms=3.0), "fallback", "the classifier answered a bytes, not text"),  # type: ignore[arg-type]
        (ModelAnswer(raw="injury", latency_ms="1"), "model", None),  # type: ignore[arg-type]
        (ModelAnswer(raw="injury", latency_ms=math.nan), "model", None),
        (ModelAnswer(raw=None, latency_ms=1.0, error=7), "fallback", "the classifier's error is a int, not text"),  # type: ignore[arg-type]
    ], ids=["raw_int", "raw_bytes", "latency_text", "latency_nan", "error_int"])
    def test_a_field_of_the_wrong_kind_is_no_crash(self, answer: ModelAnswer, source: str, error: str | None) -> None:
        decision = select(UNSURE, fetch_bundle(FixtureUpstream(), "maya"), load_policy(),
                          classifier=lambda q, intents: answer)
        assert decision.intent.source == source
        assert error is None or error in decision.intent.reason
        latency = decision.to_json()["intent"]["model"]["latency_ms"]
        assert math.isfinite(latency) and latency >= 0
        json.loads(json.dumps(decision.to_json(), allow_nan=False))

    @pytest.mark.parametrize("field", ["raw", "error"])
    def test_a_huge_answer_or_error_is_clipped(self, field: str) -> None:
        huge = "injury " * 1_500_000
        answer = ModelAnswer(raw=huge, latency_ms=1.0) if field == "raw" else \
            ModelAnswer(raw=None, latency_ms=1.0, error=huge)
        bundle = fetch_bundle(FixtureUpstream(), "maya")
        decision = select(UNSURE, bundle, load_policy(), classifier=lambda q, intents: answer)
        trace = json_text(make_trace(decision, bundle, cost_mode="hand", budget=None))
        assert len(trace) < 50_000 and "more characters not kept]" in trace
        assert parse_trace(trace).asked.question == UNSURE
