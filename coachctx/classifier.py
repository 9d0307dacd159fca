"""The one model call: a small classification prompt through the official OpenAI SDK.

Configured from the environment: OPENAI_API_KEY, OPENAI_BASE_URL (any OpenAI-compatible
endpoint), COACHCTX_MODEL, COACHCTX_MODEL_TIMEOUT (seconds). Without a key or a base URL
there is no classifier and routing records `fallback` / `no_model_configured`.
"""

from __future__ import annotations

import os
import time
from collections.abc import Mapping, Sequence
from typing import Final

import openai

from coachctx.routing import ModelAnswer

DEFAULT_MODEL: Final = "gpt-4o-mini"
DEFAULT_TIMEOUT_S: Final = 3.0
SYSTEM_PROMPT: Final = (
    "You route an athlete's question to exactly one intent of a coaching assistant. "
    "Answer with the intent name only, one word, lower case, from this list: {intents}. "
    "training = sessions, pace, plans, racing; injury = pain, injuries, rehab; recovery = rest, sleep, "
    "fatigue, soreness; nutrition = food, fuelling, hydration; conditions = weather, heat, air quality, pollen; "
    "general = anything else."
)


class OpenAIClassifier:
    """Classifier over the chat-completions API. Never raises: failures become a ModelAnswer
    with `error` set (and `timed_out` for timeouts)."""

    def __init__(self, *, api_key: str | None, base_url: str | None, model: str = DEFAULT_MODEL,
                 timeout_s: float = DEFAULT_TIMEOUT_S) -> None:
        self.model = model
        self.base_url = base_url
        self.client = openai.OpenAI(api_key=api_key or "not-needed", base_url=base_url, timeout=timeout_s,
                                    max_retries=0)

    def __call__(self, question: str, intents: Sequence[str]) -> ModelAnswer:
        started = time.perf_counter()
        try:
            response = self.client.chat.completions.create(
                model=self.model,
                messages=[{"role": "system", "content": SYSTEM_PROMPT.format(intents=", ".join(intents))},
                          {"role": "user", "content": question}],
                temperature=0,
                max_tokens=5,
            )
            raw = response.choices[0].message.content if response.choices else None
            return ModelAnswer(raw=raw if raw is not None else "", latency_ms=_ms(started))
        except openai.APITimeoutError as e:
            return ModelAnswer(raw=None, latency_ms=_ms(started), error=f"timeout: {e}", timed_out=True)
        except openai.APIStatusError as e:
            return ModelAnswer(raw=None, latency_ms=_ms(started), error=f"HTTP {e.status_code}")
        except openai.APIError as e:
            return ModelAnswer(raw=None, latency_ms=_ms(started), error=f"{type(e).__name__}: {e}")
        except Exception as e:  # an answer the SDK cannot read as a chat completion (HTML, plain text)
            return ModelAnswer(raw=None, latency_ms=_ms(started),
                               error=f"the endpoint's answer is not a chat completion ({type(e).__name__})")


def _ms(started: float) -> float:
    return (time.perf_counter() - started) * 1000


def model_settings(env: Mapping[str, str] | None = None) -> dict[str, str | float | None]:
    env = os.environ if env is None else env
    try:
        timeout = float(env.get("COACHCTX_MODEL_TIMEOUT", DEFAULT_TIMEOUT_S))
    except ValueError:
        timeout = DEFAULT_TIMEOUT_S
    return {"api_key": env.get("OPENAI_API_KEY") or None, "base_url": env.get("OPENAI_BASE_URL") or None,
            "model": env.get("COACHCTX_MODEL") or DEFAULT_MODEL, "timeout_s": timeout}


def classifier_from_env(env: Mapping[str, str] | None = None) -> OpenAIClassifier | None:
    """A classifier when a key or a base URL is configured, else None (routing falls back)."""
    s = model_settings(env)
    if s["api_key"] is None and s["base_url"] is None:
        return None
    return OpenAIClassifier(api_key=s["api_key"], base_url=s["base_url"],  # type: ignore[arg-type]
                            model=str(s["model"]), timeout_s=float(s["timeout_s"]))  # type: ignore[arg-type]
