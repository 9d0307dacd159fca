"""One local OpenAI-compatible server for every test that talks to a model: POST
/v1/chat/completions on 127.0.0.1 (a free port, a daemon thread), answering as its `behaviour`
says. Tests drive the real OpenAI SDK against it; nothing leaves the machine.

Besides answering, failing and stalling, it can misbehave slowly: trickle the status line and
headers or the body a byte at a time, send a reply's chunks a second apart, or stream (or send a
body) that never ends. Every such loop stops when the client hangs up or the server stops."""

from __future__ import annotations

import gzip
import json
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class ChatBehaviour:
    """What the server does with the next requests: answer `content`, fail with `status`, wait
    `delay_s` first, or send `raw_body` as is."""

    content: Any = "injury"
    """The message's content: text, or what a server might send instead (a list of parts, an object)."""
    content_encoding: str | None = None
    """Send the body compressed so, with that Content-Encoding (gzip is compressed; any other name
    is only announced)."""
    status: int = 200
    delay_s: float = 0.0
    raw_body: bytes | None = None
    content_type: str = "application/json"
    headers: tuple[tuple[str, str], ...] = ()
    """More response headers (a redirect's Location)."""
    reply_chunks: tuple[Any, ...] = ("Keep today easy ", "and skip the intervals. ",
                                     "If the pain persists, see a physiotherapist.")
    """What a `stream: true` request (reply generation) receives, one SSE chunk each: a delta's
    content, text or what some servers send instead (a list of parts)."""
    stall_after_chunks_s: float = 0.0
    """After the chunks, go silent this long (holding the connection) before `[DONE]`."""
    chunk_interval_s: float = 0.0
    """Wait this long before each streamed chunk (a chunk a second: 1.0)."""
    stream_forever: bool = False
    """After `reply_chunks`, keep sending `forever_chunk` (every `chunk_interval_s`) and never `[DONE]`."""
    forever_chunk: str = "and more "
    trickle_body_s: float = 0.0
    """Send an answer's body (or each streamed chunk) one byte every this many seconds."""
    trickle_head_s: float = 0.0
    """Send the status line and headers themselves one byte every this many seconds."""
    endless_body: bool = False
    """Announce a huge Content-Length and send filler bytes as fast as the client reads, never finishing."""


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
        if body.get("stream") and b.status == 200 and b.raw_body is None and not b.endless_body:
            self._stream(b, body)
            return
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
        self._send(b.status, out, b.content_type, b)

    def _wait(self, seconds: float) -> bool:
        """Sleep, unless the server is stopping (then False: stop sending)."""
        return not (seconds and self.server.release.wait(seconds)) and not self.server.release.is_set()

    def _stream(self, b: ChatBehaviour, body: dict[str, Any]) -> None:
        try:
            self._write(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n",
                        b.trickle_head_s)
            self.close_connection = True
            for piece in self._pieces(b):
                if not self._wait(b.chunk_interval_s):
                    return
                chunk = {"id": "chatcmpl-stream", "object": "chat.completion.chunk", "created": 0,
                         "model": body.get("model", "?"),
                         "choices": [{"index": 0, "delta": {"content": piece}, "finish_reason": None}]}
                self._write(f"data: {json.dumps(chunk)}\n\n".encode(), b.trickle_body_s)
            if b.stall_after_chunks_s:
                self.server.release.wait(b.stall_after_chunks_s)
            self.wfile.write(b"data: [DONE]\n\n")
            self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client stopped reading: that is what a stall test wants

    @staticmethod
    def _pieces(b: ChatBehaviour) -> Iterator[str]:
        yield from b.reply_chunks
        while b.stream_forever:
            yield b.forever_chunk

    def _send(self, status: int, out: bytes, content_type: str, b: ChatBehaviour | None = None) -> None:
        b = b or ChatBehaviour()
        try:
            if b.endless_body:
                out = b'{"choices": [{"message": {"content": "'
            encoding = ""
            if b.content_encoding is not None:
                out = gzip.compress(out) if b.content_encoding == "gzip" else out
                encoding = f"Content-Encoding: {b.content_encoding}\r\n"
            length = 1 << 40 if b.endless_body else len(out)
            more = "".join(f"{name}: {value}\r\n" for name, value in b.headers)
            head = (f"HTTP/1.1 {status} {HTTPStatus(status).phrase}\r\nContent-Type: {content_type}\r\n"
                    f"{encoding}{more}Content-Length: {length}\r\nConnection: close\r\n\r\n").encode()
            self._write(head, b.trickle_head_s)
            self._write(out, b.trickle_body_s)
            while b.endless_body and not self.server.release.is_set():
                self.wfile.write(b"x" * 65536)
        except (BrokenPipeError, ConnectionResetError):
            pass
        self.close_connection = True

    def _write(self, data: bytes, per_byte_s: float) -> None:
        if not per_byte_s:
            self.wfile.write(data)
            return
        for i in range(len(data)):
            if not self._wait(per_byte_s):
                return
            self.wfile.write(data[i:i + 1])
            self.wfile.flush()


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

    def __exit__(self, *exc_info: object) -> None:
        """`with ChatServer().start() as server:` stops it at the end, as `stop()` does."""
        self.stop()

    def handle_error(self, request: Any, client_address: Any) -> None:
        return  # a client that timed out closes its socket; that is the point of the test
