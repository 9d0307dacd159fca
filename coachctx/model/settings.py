"""The model settings: the one place that reads them, from the environment and, for the
playground, from `.streamlit/secrets.toml` and a key typed on the page.

OPENAI_API_KEY, OPENAI_BASE_URL (any OpenAI-compatible endpoint), COACHCTX_MODEL,
COACHCTX_MODEL_TIMEOUT (the classification's total deadline, seconds) and COACHCTX_REPLY_TIMEOUT
(how long a reply stream may stay silent). Without a key or a base URL no model is configured.
A value of only whitespace is unset. A value that cannot work (a timeout of `nan`, a URL the SDK
cannot use, a key an HTTP header cannot carry) is kept as the settings' `problem`: every use of
the settings raises it as one InputError naming the setting and where it was set.
"""

from __future__ import annotations

import hashlib
import math
import os
import re
import urllib.parse
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from coachctx.errors import InputError
from coachctx.reading import clip, control_character

DEFAULT_MODEL: Final = "gpt-4o-mini"
DEFAULT_TIMEOUT_S: Final = 3.0
MIN_TIMEOUT_S: Final = 0.1
MAX_TIMEOUT_S: Final = 600.0
"""A timeout setting outside [MIN_TIMEOUT_S, MAX_TIMEOUT_S] is refused: below it nothing could
answer, above it a stuck endpoint holds a request for good."""
REPLY_TIMEOUT_S: Final = 60.0
"""How long the endpoint may stay silent while a reply streams (`COACHCTX_REPLY_TIMEOUT`)."""
REPLY_DEADLINE_S: Final = 300.0
"""The longest a whole reply may take, however steadily it trickles in."""
SETTING_KEYS: Final = ("OPENAI_API_KEY", "OPENAI_BASE_URL", "COACHCTX_MODEL", "COACHCTX_MODEL_TIMEOUT",
                       "COACHCTX_REPLY_TIMEOUT")
ENVIRONMENT: Final = "the environment"
SECRETS_FILE: Final = ".streamlit/secrets.toml"
TYPED_KEY: Final = "a key typed in this session"


@dataclass(frozen=True)
class ModelSettings:
    """Where model calls go, read once. `source` says where the key and the base URL came from.

    A refused setting keeps its message in `problem` (and a refused timeout its default; a refused
    key or URL itself, so the settings still count as configured and show where they came from):
    every use — routing or a reply — raises that message (`check`), so a page says what to fix
    instead of calling a misconfigured model."""

    api_key: str | None = field(default=None, repr=False)
    base_url: str | None = None
    model: str = DEFAULT_MODEL
    timeout_s: float = DEFAULT_TIMEOUT_S
    """The classification call's total deadline."""
    reply_timeout_s: float = REPLY_TIMEOUT_S
    """How long a reply stream may send nothing."""
    source: str = ""
    problem: str | None = None

    @property
    def configured(self) -> bool:
        """A key or a base URL is set: there is a model to ask."""
        return self.api_key is not None or self.base_url is not None

    def check(self) -> ModelSettings:
        """These settings, or InputError with the refused setting's message."""
        if self.problem is not None:
            raise InputError(self.problem)
        return self

    @property
    def cache_key(self) -> tuple[str, ...]:
        """Identifies the settings without carrying the key itself (refused settings raise)."""
        self.check()
        key = hashlib.sha256((self.api_key or "").encode("utf-8", "surrogatepass")).hexdigest()[:12]
        return (key, self.base_url or "", self.model, str(self.timeout_s), str(self.reply_timeout_s))


def model_settings(env: Mapping[str, str] | None = None, secrets: Mapping[str, Any] | None = None,
                   typed_key: str | None = None) -> ModelSettings:
    """The settings from `env` (the process environment when None), then `secrets` for what the
    environment leaves unset; a key typed for this session wins over both. Never raises: see
    `ModelSettings.problem`."""
    environment = os.environ if env is None else env
    sources = (ENVIRONMENT, environment), (SECRETS_FILE, secrets or {})

    def pick(name: str) -> tuple[str | None, str]:
        for where, values in sources:
            value = values.get(name)
            text = value if isinstance(value, str) or value is None else str(value)
            if text is not None and text.strip():
                return text.strip(), where
        return None, ENVIRONMENT

    typed = typed_key.strip() if typed_key is not None else ""
    key = (typed, TYPED_KEY) if typed else pick("OPENAI_API_KEY")
    url = pick("OPENAI_BASE_URL")
    problems: list[str] = []

    def checked(picked: tuple[str | None, str], check: Callable[[str | None, str], Any], default: Any = None) -> Any:
        try:
            return check(*picked)
        except InputError as e:
            problems.append(str(e))
            return default

    for name in SDK_HEADER_SETTINGS:  # the SDK reads these itself and sends them as headers
        value = environment.get(name)
        if isinstance(value, str) and value and not _HEADER_SAFE.fullmatch(value):
            bad = next(ch for ch in value if not _HEADER_SAFE.fullmatch(ch))
            problems.append(f"{name} (from {ENVIRONMENT}) holds the character U+{ord(bad):04X}, which an HTTP header "
                            "cannot carry")
    return ModelSettings(
        api_key=checked(key, check_api_key, key[0]), base_url=checked(url, check_base_url, url[0]),
        model=pick("COACHCTX_MODEL")[0] or DEFAULT_MODEL,
        timeout_s=checked(pick("COACHCTX_MODEL_TIMEOUT"),
                          _seconds("COACHCTX_MODEL_TIMEOUT", DEFAULT_TIMEOUT_S, MAX_TIMEOUT_S), DEFAULT_TIMEOUT_S),
        reply_timeout_s=checked(pick("COACHCTX_REPLY_TIMEOUT"),
                                _seconds("COACHCTX_REPLY_TIMEOUT", REPLY_TIMEOUT_S, REPLY_DEADLINE_S), REPLY_TIMEOUT_S),
        source=" and ".join(dict.fromkeys(where.removeprefix("the ") for value, where in (key, url) if value)),
        problem="; ".join(problems) or None)


def _seconds(name: str, default: float, maximum: float) -> Callable[[str | None, str], float]:
    return lambda value, where: parse_seconds(name, value, default=default, where=where, maximum=maximum)


def parse_seconds(name: str, value: str | float | None, *, default: float, where: str = ENVIRONMENT,
                  maximum: float = MAX_TIMEOUT_S) -> float:
    """A timeout setting in seconds: `default` when unset, else a finite number in
    [MIN_TIMEOUT_S, maximum]. Anything else raises InputError naming the setting and where it was set."""
    if value is None or (isinstance(value, str) and not value.strip()):
        return default
    try:
        # text must be plain ASCII decimals: float() would also take `1_0` and Arabic-Indic digits
        seconds = (math.nan if isinstance(value, bool) or (isinstance(value, str) and not _SECONDS.fullmatch(value))
                   else float(value))
    except (TypeError, ValueError):
        seconds = math.nan
    if not math.isfinite(seconds) or not MIN_TIMEOUT_S <= seconds <= maximum:
        raise InputError(f"{name}={_shown(value)} (from {where}) is not a usable timeout: expected a number of "
                         f"seconds from {MIN_TIMEOUT_S:g} to {maximum:g}")
    return seconds


_SECONDS = re.compile(r"\s*(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]{1,3})?\s*")
_HEADER_SAFE = re.compile(r"[\x21-\x7e]+")
"""What an API key may hold: it travels in an HTTP header, where a newline or a non-ASCII
character would fail every call deep inside the client, reported as a connection error."""


def check_base_url(value: str | None, where: str = ENVIRONMENT) -> str | None:
    """OPENAI_BASE_URL as the SDK can use it: http(s), a host, a valid port. InputError otherwise,
    as a setting: the endpoint was never asked, so its failure would be the wrong story."""
    if value is None:
        return None
    problem = None
    if control_character(value) is not None or any(ch.isspace() for ch in value):
        bad = control_character(value)
        problem = f"it holds the character {bad}" if bad is not None else "it holds a space"
    else:
        try:
            parts = urllib.parse.urlsplit(value)
            parts.port  # noqa: B018  # raises ValueError for a port out of range or not a number
        except ValueError as e:
            problem = str(e)
        else:
            if parts.scheme not in ("http", "https") or not parts.hostname:
                problem = "expected http:// or https:// and a host"
    if problem is not None:
        raise InputError(f"OPENAI_BASE_URL={_shown(value)} (from {where}) is not a usable URL: {problem}")
    return value


SDK_HEADER_SETTINGS: Final = ("OPENAI_ORG_ID", "OPENAI_PROJECT_ID")
"""Read by the OpenAI SDK from the environment and sent as headers: a newline in one failed every
call as "Connection error" (an adversarial pass); refused as a setting instead."""


def check_api_key(value: str | None, where: str = ENVIRONMENT) -> str | None:
    """OPENAI_API_KEY as an HTTP header can carry it; the key itself is never shown."""
    if value is not None and not _HEADER_SAFE.fullmatch(value):
        bad = next(ch for ch in value if not _HEADER_SAFE.fullmatch(ch))
        raise InputError(f"OPENAI_API_KEY (from {where}) holds the character U+{ord(bad):04X}, which an HTTP "
                         "header cannot carry (the key is not shown)")
    return value


def _shown(value: object) -> str:
    text = value if isinstance(value, str) else repr(value)
    return repr(clip(text, 40))
