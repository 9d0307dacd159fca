"""Reply generation: the model configuration (environment, secrets, a typed key), the streamed reply, and what a reply is checked for."""

from __future__ import annotations

import os
import re
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

import openai

from coachctx.engine.decision import Decision
from coachctx.engine.text import tokenise
from coachctx.errors import CoachctxError, InputError
from coachctx.model import (
    DEFAULT_MODEL,
    DEFAULT_TIMEOUT_S,
    MAX_ERROR_CHARS,
    MAX_TIMEOUT_S,
    AnswerTooLarge,
    ModelLoop,
    async_client,
    cause,
    check_api_key,
    check_base_url,
    clip,
    model_text,
    parse_seconds,
)

REPLY_TIMEOUT_S: Final = 60.0
"""How long the endpoint may stay silent while a reply streams (`COACHCTX_REPLY_TIMEOUT`)."""


REPLY_DEADLINE_S: Final = 300.0
"""The longest a whole reply may take, however steadily it trickles in."""


MODEL_SETTING_KEYS: Final = ("OPENAI_API_KEY", "OPENAI_BASE_URL", "COACHCTX_MODEL", "COACHCTX_MODEL_TIMEOUT",
                             "COACHCTX_REPLY_TIMEOUT")


@dataclass(frozen=True)
class ModelConfig:
    """Where replies (and unsure routing) go. `source` says where the settings came from.

    A refused setting (COACHCTX_MODEL_TIMEOUT=nan, say) is kept as `problem`: the configuration
    still shows where it came from, and every use of it — routing or a reply — raises that one
    message (InputError), so the page says what to fix instead of calling a misconfigured model."""

    api_key: str | None
    base_url: str | None
    model: str
    source: str
    routing_timeout_s: float = DEFAULT_TIMEOUT_S
    reply_silence_s: float = REPLY_TIMEOUT_S
    problem: str | None = None

    @property
    def timeout_s(self) -> float:
        """The classification call's total deadline."""
        self.check()
        return self.routing_timeout_s

    @property
    def reply_timeout_s(self) -> float:
        """How long a reply stream may send nothing."""
        self.check()
        return self.reply_silence_s

    def check(self) -> None:
        if self.problem is not None:
            raise InputError(self.problem)

    @property
    def cache_key(self) -> tuple[str, ...]:
        """Identifies the configuration without carrying the key itself."""
        import hashlib

        key = hashlib.sha256((self.api_key or "").encode("utf-8", "surrogatepass")).hexdigest()[:12]
        return (key, self.base_url or "", self.model, str(self.timeout_s))


def _seconds(name: str, picked: tuple[str | None, str | None], default: float, maximum: float,
             problems: list[str]) -> float:
    value, where = picked
    try:
        return parse_seconds(name, value, default=default, where=where or "the settings", maximum=maximum)
    except InputError as e:
        problems.append(str(e))
        return default


def resolve_model_config(env: Mapping[str, str] | None = None, secrets: Mapping[str, Any] | None = None,
                         typed_key: str | None = None) -> ModelConfig | None:
    """A key typed for this session wins, then the environment, then `.streamlit/secrets.toml`.
    None when neither a key nor a base URL is configured anywhere. Never raises: a key an HTTP header
    cannot carry, a base URL the SDK cannot use or a timeout that is not a usable number of seconds
    becomes the config's `problem`, checked as the CLI checks it."""
    env = os.environ if env is None else env
    secrets = secrets or {}

    def pick(name: str) -> tuple[str | None, str | None]:
        if env.get(name):
            return env[name], "the environment"
        value = secrets.get(name)
        if value not in (None, ""):
            return str(value), ".streamlit/secrets.toml"
        return None, None

    api_key, key_source = pick("OPENAI_API_KEY")
    if typed_key and typed_key.strip():
        api_key, key_source = typed_key.strip(), "a key typed in this session"
    base_url, url_source = pick("OPENAI_BASE_URL")
    if api_key is None and base_url is None:
        return None
    model, _ = pick("COACHCTX_MODEL")
    sources = list(dict.fromkeys(s for s in (key_source, url_source) if s))
    problems: list[str] = []
    for check, value, where in ((check_api_key, api_key, key_source), (check_base_url, base_url, url_source)):
        try:
            check(value, where or "the settings")
        except InputError as e:
            problems.append(str(e))
    timeout = _seconds("COACHCTX_MODEL_TIMEOUT", pick("COACHCTX_MODEL_TIMEOUT"), DEFAULT_TIMEOUT_S,
                       MAX_TIMEOUT_S, problems)
    silence = _seconds("COACHCTX_REPLY_TIMEOUT", pick("COACHCTX_REPLY_TIMEOUT"), REPLY_TIMEOUT_S,
                       REPLY_DEADLINE_S, problems)
    return ModelConfig(api_key=api_key, base_url=base_url, model=model or DEFAULT_MODEL,
                       source=" and ".join(s.removeprefix("the ") for s in sources), routing_timeout_s=timeout,
                       reply_silence_s=silence, problem="; ".join(problems) or None)


class ReplyError(CoachctxError):
    """The reply could not be generated (or stopped part-way); the message says why, for the page."""


MAX_REPLY_CHARS: Final = 20_000
"""The most of a reply kept: far beyond any intent's `max_words`, far below what fills a page."""


MAX_REPLY_BYTES: Final = 8 * 1024 * 1024
"""The most read of one reply stream (chunk framing included)."""


def stream_reply(config: ModelConfig, messages: Sequence[Mapping[str, str]], *,
                 deadline_s: float = REPLY_DEADLINE_S) -> Iterator[str]:
    """Stream a reply to the Decision's prompt through the OpenAI SDK, piece by piece, and stop
    it — raising ReplyError after the pieces that did arrive, so a caller can keep those — when
    the endpoint sends nothing for the reply timeout, when the whole reply outlasts `deadline_s`
    (however steadily it trickles in), when it passes MAX_REPLY_CHARS, or when the call fails.
    A refused setting raises InputError before anything is sent."""
    silence = config.reply_timeout_s
    started = time.monotonic()

    by_deadline = False  # which bound the step that timed out was given: the deadline or the silence

    def wait() -> float:
        nonlocal by_deadline
        left = deadline_s - (time.monotonic() - started)
        by_deadline = left <= silence
        return min(silence, left)

    kept = 0
    with ModelLoop() as loop:
        client = async_client(api_key=config.api_key, base_url=config.base_url, timeout_s=min(silence, deadline_s),
                              max_bytes=MAX_REPLY_BYTES)
        stream: Any = None
        try:
            payload: Any = [{k: model_text(v) for k, v in m.items()} for m in messages]
            stream = loop.within(client.chat.completions.create(
                model=config.model, messages=payload, stream=True, temperature=0.3), wait())
            pieces = aiter(stream)
            while True:
                chunk = loop.next_within(pieces, wait())
                if chunk is None:
                    return
                text = chunk.choices[0].delta.content if chunk.choices else None
                if not text:
                    continue
                if kept + len(text) > MAX_REPLY_CHARS:
                    yield text[:MAX_REPLY_CHARS - kept]
                    raise ReplyError(f"the reply passed {MAX_REPLY_CHARS} characters, so it was stopped")
                kept += len(text)
                yield text
        except (TimeoutError, openai.APITimeoutError) as e:
            if by_deadline:
                raise ReplyError(f"the reply was still streaming after {deadline_s:g} s, so it was stopped") from e
            raise ReplyError(f"the model endpoint sent nothing for {silence:g} s (the reply timeout, "
                             "COACHCTX_REPLY_TIMEOUT)") from e
        except openai.APIStatusError as e:
            raise ReplyError(f"the model endpoint answered HTTP {e.status_code}: {clip(e.message, 200)}") from e
        except Exception as e:  # the SDK wraps transport errors mid-stream too (connection, a reply too large)
            too_large = cause(e, AnswerTooLarge)
            if too_large is not None:
                raise ReplyError(f"the reply stream passed {MAX_REPLY_BYTES} bytes, so it was stopped") from e
            if isinstance(e, CoachctxError):
                raise
            raise ReplyError(clip(f"the model call failed: {type(e).__name__}: {e}", MAX_ERROR_CHARS)) from e
        finally:
            # stopped early or not: give the connection back, within a bounded wait
            if stream is not None:
                loop.close_quietly(stream)
            loop.close_quietly(client)


def count_words(text: str) -> int:
    """Words as the engine tokenises them; each Han/Kana character counts as one word."""
    tokens = tokenise(text)
    return len(tokens.words) + len(tokens.unspaced.replace(" ", ""))


REFERRAL_TERMS: Final = (
    "physiotherapist", "physio", "physical therapist", "doctor", "physician", "medical professional",
    "sports medicine", "healthcare professional", "health professional", "gp",
    "fisioterapeuta", "médico", "medico", "profesional de la salud", "physiotherapeut", "arzt", "ärztin",
    "médecin", "kinésithérapeute", "kiné", "fisioterapista", "dottore", "врач", "физиотерапевт",
    "医師", "医者", "理学療法士", "専門家", "医生", "物理治疗师", "의사", "물리치료사",
)


_SENTENCE_END = re.compile(r"(?<=[.!?。！？])\s*")


def referral_line(text: str) -> str | None:
    """The closing sentence that refers the athlete to a professional, if one of the last two
    sentences does."""
    sentences = [s.strip() for s in _SENTENCE_END.split(text.strip()) if s.strip()]
    for sentence in reversed(sentences[-2:]):
        folded = sentence.casefold()
        for term in REFERRAL_TERMS:
            if re.search(rf"(?<!\w){re.escape(term)}", folded) if term.isascii() else term in folded:
                return sentence
    return None


@dataclass(frozen=True)
class ReplyReport:
    words: int
    max_words: int
    clinical: bool
    clinical_terms: tuple[str, ...]
    referral: str | None

    @property
    def within_limit(self) -> bool:
        return self.words <= self.max_words


def reply_report(text: str, d: Decision) -> ReplyReport:
    return ReplyReport(words=count_words(text), max_words=d.max_words,
                       clinical=d.clinical.is_clinical,
                       clinical_terms=d.clinical.terms, referral=referral_line(text))
