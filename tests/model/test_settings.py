"""The model settings: read in one place (`coachctx.model.settings`), from the environment, then
`.streamlit/secrets.toml`, with a key typed on the page winning; a setting that cannot work is one
clear message wherever the settings are used — the CLI, routing on the page, the reply stream."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest
from openai_server import ChatBehaviour, ChatServer
from repo_paths import ROOT

import coachctx
from coachctx.cli import main
from coachctx.errors import InputError
from coachctx.model import SETTING_KEYS, ModelSettings, classifier_for, model_settings, stream_reply
from coachctx.model.settings import DEFAULT_MODEL, DEFAULT_TIMEOUT_S, REPLY_TIMEOUT_S

PACKAGE = Path(coachctx.__file__).parent
SETTINGS_MODULE = PACKAGE / "model" / "settings.py"


def setting_names_named(path: Path) -> list[str]:
    """Each string constant in a file that is exactly a model setting's name, with its line: how
    code reads a setting (`os.environ["OPENAI_API_KEY"]`, `st.secrets.get("COACHCTX_MODEL")`)."""
    return [f"line {node.lineno}: {node.value}" for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
            if isinstance(node, ast.Constant) and node.value in SETTING_KEYS]


@pytest.fixture(scope="module")
def server() -> Iterator[ChatServer]:
    with ChatServer().start() as chat:
        yield chat


class TestOnePlace:
    @pytest.mark.parametrize("path", [*sorted(PACKAGE.rglob("*.py")), ROOT / "app.py"],
                             ids=lambda p: str(p.relative_to(ROOT)))
    def test_only_the_settings_module_names_a_model_setting(self, path: Path) -> None:
        if path == SETTINGS_MODULE:
            assert len(setting_names_named(path)) >= len(SETTING_KEYS)
        else:
            assert setting_names_named(path) == []

    def test_the_check_sees_a_setting_read_elsewhere(self, tmp_path: Path) -> None:
        # the check above must be able to fail: a page reading the key itself is caught
        page = tmp_path / "page.py"
        page.write_text("import os\nkey = os.environ.get('OPENAI_API_KEY')\nhelp = 'set OPENAI_API_KEY first'\n",
                        encoding="utf-8")
        assert setting_names_named(page) == ["line 2: OPENAI_API_KEY"]


class TestModelSettings:
    def test_nothing_set_is_no_model_and_the_defaults(self) -> None:
        settings = model_settings({})
        assert not settings.configured and settings.problem is None
        assert (settings.model, settings.timeout_s, settings.reply_timeout_s) == (
            DEFAULT_MODEL, DEFAULT_TIMEOUT_S, REPLY_TIMEOUT_S)
        assert classifier_for(settings) is None

    def test_the_environment_wins_over_secrets_and_fills_what_it_leaves_unset(self) -> None:
        settings = model_settings({"OPENAI_API_KEY": "sk-env", "COACHCTX_MODEL": "  "},
                                  {"OPENAI_API_KEY": "sk-secret", "OPENAI_BASE_URL": "http://127.0.0.1:1/v1",
                                   "COACHCTX_MODEL": "from-secrets", "COACHCTX_MODEL_TIMEOUT": 2})
        assert (settings.api_key, settings.base_url, settings.model, settings.timeout_s) == (
            "sk-env", "http://127.0.0.1:1/v1", "from-secrets", 2.0)
        assert settings.source == "environment and .streamlit/secrets.toml"

    def test_a_typed_key_wins_and_says_so(self) -> None:
        settings = model_settings({"OPENAI_API_KEY": "sk-env"}, {}, " sk-typed ")
        assert (settings.api_key, settings.source) == ("sk-typed", "a key typed in this session")
        assert model_settings({"OPENAI_API_KEY": "sk-env"}, {}, "   ").api_key == "sk-env"

    def test_the_key_is_never_shown(self) -> None:
        settings = model_settings({"OPENAI_API_KEY": "sk-very-secret"})
        assert "sk-very-secret" not in repr(settings)
        assert "sk-very-secret" not in "".join(settings.cache_key)

    def test_every_refused_setting_is_in_one_line(self) -> None:
        settings = model_settings({"OPENAI_BASE_URL": "ftp://x", "COACHCTX_MODEL_TIMEOUT": "nan"},
                                  {"COACHCTX_REPLY_TIMEOUT": "0"})
        assert settings.configured  # a refused URL is still where the model was meant to be
        assert settings.problem is not None and "\n" not in settings.problem
        assert [part.split(" ")[0] for part in settings.problem.split("; ")] == [
            "OPENAI_BASE_URL='ftp://x'", "COACHCTX_MODEL_TIMEOUT='nan'", "COACHCTX_REPLY_TIMEOUT='0'"]
        with pytest.raises(InputError, match=r"^OPENAI_BASE_URL='ftp://x' \(from the environment\) is not a usable URL"):
            classifier_for(settings)

    @pytest.mark.parametrize("name", ["OPENAI_ORG_ID", "OPENAI_PROJECT_ID"])
    def test_a_header_the_sdk_reads_itself_is_checked_like_the_key(self, name: str) -> None:
        # a newline in OPENAI_ORG_ID failed every call as "Connection error" (an adversarial pass)
        settings = model_settings({"OPENAI_API_KEY": "k", name: "org\nx"})
        with pytest.raises(InputError, match=rf"^{name} \(from the environment\) holds the character U\+000A, which "
                                             r"an HTTP header cannot carry$"):
            classifier_for(settings)
        assert model_settings({"OPENAI_API_KEY": "k", name: "org-123"}).problem is None

    def test_settings_are_a_value_read_once(self) -> None:
        env = {"OPENAI_BASE_URL": "http://127.0.0.1:1/v1", "COACHCTX_REPLY_TIMEOUT": "7"}
        settings = model_settings(env)
        env["COACHCTX_REPLY_TIMEOUT"] = "nan"
        assert settings.reply_timeout_s == 7.0 and settings.problem is None
        assert settings == model_settings({"OPENAI_BASE_URL": "http://127.0.0.1:1/v1", "COACHCTX_REPLY_TIMEOUT": "7"})
        with pytest.raises(AttributeError):
            settings.model = "other"  # type: ignore[misc]


class TestTheCliRefusesBadSettings:
    @pytest.mark.parametrize(("name", "value", "message"), [
        ("OPENAI_BASE_URL", "http://host name/v1", "OPENAI_BASE_URL='http://host name/v1' (from the environment) "
                                                   "is not a usable URL: it holds a space"),
        ("OPENAI_API_KEY", "sk-\u00e9", "OPENAI_API_KEY (from the environment) holds the character U+00E9, which an "
                                      "HTTP header cannot carry (the key is not shown)"),
        ("COACHCTX_REPLY_TIMEOUT", "soon", "COACHCTX_REPLY_TIMEOUT='soon' (from the environment) is not a usable "
                                          "timeout: expected a number of seconds from 0.1 to 300"),
    ], ids=["url", "key", "reply_timeout"])
    def test_one_line_naming_the_setting(self, name: str, value: str, message: str, monkeypatch: pytest.MonkeyPatch,
                                         capsys: pytest.CaptureFixture[str]) -> None:
        monkeypatch.setenv(name, value)
        code = main(["explain", "Should I train through this pain?", "--athlete", "maya"])
        out, err = capsys.readouterr()
        assert (code, out, err) == (2, "", f"coachctx: {message}\n")


class TestTheReplyUsesTheSameSettings:
    @pytest.mark.timeout(10)
    def test_model_key_and_url_from_the_environment_reach_the_endpoint(self, server: ChatServer,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
        server.behaviour = ChatBehaviour()
        server.requests.clear()
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "sk-reply")
        monkeypatch.setenv("COACHCTX_MODEL", "coach-large")
        text = "".join(stream_reply(model_settings(), [{"role": "user", "content": "hi"}]))
        assert text == "".join(ChatBehaviour().reply_chunks)
        [request] = server.requests
        assert request["body"]["model"] == "coach-large" and request["body"]["stream"] is True
        assert request["headers"]["authorization"] == "Bearer sk-reply"

    @pytest.mark.timeout(10)
    def test_refused_settings_send_nothing(self, server: ChatServer) -> None:
        server.requests.clear()
        settings = ModelSettings(base_url=server.base_url, problem="COACHCTX_MODEL_TIMEOUT='x' is refused")
        with pytest.raises(InputError, match=r"^COACHCTX_MODEL_TIMEOUT='x' is refused$"):
            next(stream_reply(settings, [{"role": "user", "content": "hi"}]))
        assert server.requests == []
