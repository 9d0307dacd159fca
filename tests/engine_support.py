"""Helpers for the engine tests: a faulty upstream, a local OpenAI-compatible server, stub
classifiers and policies derived from the default one."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import yaml
from conftest import DEV_QUESTIONS

from coachctx.fragments import ServiceName
from coachctx.policy import Policy, validate_policy
from coachctx.routing import ModelAnswer
from coachctx.services import FixtureUpstream, Response

PAIN = "Should I train through this pain?"


def dev_rows() -> list[dict[str, Any]]:
    rows = yaml.safe_load(DEV_QUESTIONS.read_text(encoding="utf-8"))["questions"]
    assert rows, f"{DEV_QUESTIONS} has no questions"
    return list(rows)


# --- upstreams -------------------------------------------------------------------------------


class FaultyUpstream:
    """The sample fixtures, except that the listed services misbehave. A fault is an exception
    (raised) or a Response (returned as is)."""

    def __init__(self, faults: Mapping[str, BaseException | Response], base: FixtureUpstream | None = None) -> None:
        self.faults = dict(faults)
        self.base = base if base is not None else FixtureUpstream()
        self.calls: list[tuple[str, str]] = []

    def call(self, service: ServiceName, key: str) -> Response:
        self.calls.append((service, key))
        fault = self.faults.get(service)
        if isinstance(fault, BaseException):
            raise fault
        if isinstance(fault, Response):
            return fault
        return self.base.call(service, key)


# --- classifiers -----------------------------------------------------------------------------


@dataclass
class StubClassifier:
    """Answers with a fixed raw label and records what it was asked."""

    raw: str | None
    error: str | None = None
    timed_out: bool = False
    asked: list[tuple[str, tuple[str, ...]]] = field(default_factory=list)

    def __call__(self, question: str, intents: Sequence[str]) -> ModelAnswer:
        self.asked.append((question, tuple(intents)))
        return ModelAnswer(raw=self.raw, latency_ms=12.5, error=self.error, timed_out=self.timed_out)


# --- policies --------------------------------------------------------------------------------


def derive_policy(policy: Policy, change: Callable[[dict[str, Any]], None]) -> Policy:
    """A validated copy of `policy` after `change` edits its plain-data form."""
    data = policy.model_dump(mode="json")
    change(data)
    return validate_policy(data, "<derived>")


def with_vocabulary(policy: Policy, vocabulary: Mapping[str, Mapping[str, Mapping[str, float]]]) -> Policy:
    """The default intents, scopes and tiers with a vocabulary written by the test, so routing tests do
    not move when the coaches retune the checked-in terms."""

    def change(data: dict[str, Any]) -> None:
        data["vocabulary"] = {name: {lang: dict(terms) for lang, terms in by_lang.items()}
                              for name, by_lang in vocabulary.items()}

    return derive_policy(policy, change)


MINI_VOCABULARY: dict[str, dict[str, dict[str, float]]] = {
    "training": {"en": {"train": 1.0, "interval": 1.0, "race": 1.0, "long run": 1.0, "session": 0.5},
                 "es": {"entrenar": 1.0, "correr": 0.5}, "de": {"training": 1.0, "laufen": 0.5},
                 "fr": {"entraînement": 1.0, "courir": 0.5}, "pt": {"treino": 1.0, "treinar": 1.0},
                 "it": {"allenamento": 1.0}, "ru": {"тренировка": 1.0}, "ja": {"走": 0.5, "練習": 1.0},
                 "zh": {"训练": 1.0, "跑步": 0.5}, "ko": {"훈련": 1.0}},
    "injury": {"en": {"pain": 1.0, "injury": 1.5, "sore tendon": 1.0}, "es": {"dolor": 1.0, "rodilla": 1.0},
               "de": {"schmerz": 1.0}, "fr": {"douleur": 1.0}, "pt": {"dor": 1.0, "joelho": 1.0},
               "it": {"dolore": 1.0}, "ru": {"боль": 1.0}, "ja": {"痛": 1.0, "足首": 1.0},
               "zh": {"疼": 1.0}, "ko": {"무릎": 1.0, "아프": 1.0}},
    "recovery": {"en": {"sleep": 1.5, "recovery": 1.5, "tired": 1.0}, "es": {"recuperación": 1.5},
                 "de": {"erholung": 1.5}, "fr": {"fatigué": 1.0, "repos": 1.0}, "pt": {"recuperação": 1.5},
                 "it": {"recupero": 1.5}, "ru": {"восстановление": 1.5}, "ja": {"回復": 1.5},
                 "zh": {"恢复": 1.5, "休息": 1.0}, "ko": {"회복": 1.5}},
    "nutrition": {"en": {"eat": 1.5, "protein": 1.5}, "de": {"essen": 1.5}, "ru": {"съесть": 1.5}},
    "conditions": {"en": {"heat": 1.5, "air quality": 1.5}},
    "general": {"en": {"thanks": 1.5}},
}


# --- a local OpenAI-compatible server --------------------------------------------------------


@dataclass
class ChatBehaviour:
    """What the server does with the next requests: answer `content`, fail with `status`, wait
    `delay_s` first, or send `raw_body` as is."""

    content: str | None = "injury"
    status: int = 200
    delay_s: float = 0.0
    raw_body: bytes | None = None
    content_type: str = "application/json"


class _ChatHandler(BaseHTTPRequestHandler):
    server: ChatServer

    def log_message(self, format: str, *args: Any) -> None:
        return

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length)
        try:
            body = json.loads(raw)
        except ValueError:
            body = {"unparsed": raw.decode("utf-8", "replace")}
        self.server.requests.append({"path": self.path, "headers": {k.lower(): v for k, v in self.headers.items()}, "body": body})
        b = self.server.behaviour
        if b.delay_s and self.server.release.wait(b.delay_s):
            return  # the test is over; the client gave up long ago
        if b.raw_body is not None:
            out = b.raw_body
        elif b.status != 200:
            out = json.dumps({"error": {"message": "simulated failure", "type": "server_error"}}).encode()
        elif self.path.rstrip("/") != "/v1/chat/completions":
            self._send(404, json.dumps({"error": {"message": f"no route {self.path}"}}).encode(), "application/json")
            return
        else:
            out = json.dumps({
                "id": "chatcmpl-test", "object": "chat.completion", "created": 1_764_000_000,
                "model": body.get("model", "?"),
                "choices": [{"index": 0, "finish_reason": "stop",
                             "message": {"role": "assistant", "content": b.content}}],
                "usage": {"prompt_tokens": 50, "completion_tokens": 1, "total_tokens": 51},
            }).encode()
        self._send(b.status, out, b.content_type)

    def _send(self, status: int, out: bytes, content_type: str) -> None:
        try:
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(out)))
            self.end_headers()
            self.wfile.write(out)
        except (BrokenPipeError, ConnectionResetError):
            pass


class ChatServer(ThreadingHTTPServer):
    """POST /v1/chat/completions on 127.0.0.1, a free port, in a daemon thread."""

    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _ChatHandler)
        self.requests: list[dict[str, Any]] = []
        self.behaviour = ChatBehaviour()
        self.release = threading.Event()
        self._thread = threading.Thread(target=self.serve_forever, name="fake-openai", daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/v1"

    def start(self) -> ChatServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self.release.set()
        self.shutdown()
        self.server_close()
        self._thread.join(timeout=5)

    def handle_error(self, request: Any, client_address: Any) -> None:
        return  # a client that timed out closes its socket; that is the point of the test
