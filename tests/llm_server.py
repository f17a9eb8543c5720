"""A scripted OpenAI-compatible chat-completions server on 127.0.0.1 for the LLM client tests.

    with ScriptedLLMServer([Answer("hello", prompt_tokens=10), Answer.error(500)]) as server:
        client = openai.OpenAI(base_url=server.base_url, api_key="x")
        ...
        server.requests        # every POST body received, in order (parsed JSON)
        server.authorizations  # the Authorization header of every request

Each ``POST /v1/chat/completions`` consumes the next :class:`Answer` of the script: a reply with
token counts, an HTTP error with an OpenAI-style error body, and/or a delay before answering (to
make a client time out). A request after the script ran out gets HTTP 500 "script exhausted".
``GET /v1/models`` lists the one model. Nothing listens beyond localhost.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

_ERROR_TYPES = {400: "invalid_request_error", 401: "authentication_error", 404: "not_found_error", 429: "rate_limit"}


@dataclass(frozen=True)
class Answer:
    """One scripted response: ``content`` with usage, or an error ``status`` with ``message``; ``delay`` first."""

    content: str | None = None
    status: int = 200
    message: str = ""
    param: str | None = None
    delay: float = 0.0
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    finish_reason: str = "stop"

    @classmethod
    def error(cls, status: int, message: str = "", *, param: str | None = None, delay: float = 0.0) -> Answer:
        """An HTTP error with an OpenAI-shaped ``{"error": {...}}`` body."""
        return cls(status=status, message=message or f"scripted error {status}", param=param, delay=delay)

    @classmethod
    def slow(cls, delay: float, content: str = "too late") -> Answer:
        """A reply sent only after ``delay`` seconds."""
        return cls(content=content, delay=delay)


class ScriptedLLMServer:
    """Threaded HTTP server replaying a script of answers; a context manager (start/stop)."""

    def __init__(self, script: Iterable[Answer | str], model: str = "test-model") -> None:
        self.model = model
        self._script = [a if isinstance(a, Answer) else Answer(content=a) for a in script]
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self.requests: list[dict[str, Any]] = []
        self.raw_requests: list[bytes] = []
        self.authorizations: list[str | None] = []
        self.paths: list[str] = []
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), _handler_for(self))
        self._httpd.daemon_threads = True
        self._httpd.block_on_close = False
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.02}, name="scripted-llm", daemon=True
        )

    @property
    def port(self) -> int:
        """The free port the OS picked."""
        return int(self._httpd.server_address[1])

    @property
    def base_url(self) -> str:
        """What to give the client as ``base_url``."""
        return f"http://127.0.0.1:{self.port}/v1"

    @property
    def completions(self) -> int:
        """How many chat-completion requests arrived (each retry counts)."""
        with self._lock:
            return len(self.requests)

    def add(self, *answers: Answer | str) -> None:
        """Append answers to the script."""
        with self._lock:
            self._script.extend(a if isinstance(a, Answer) else Answer(content=a) for a in answers)

    def start(self) -> ScriptedLLMServer:
        """Serve in a background thread."""
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving; delayed answers still pending are abandoned."""
        self._stop.set()
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(timeout=5)

    def __enter__(self) -> ScriptedLLMServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _next(self, raw: bytes, body: dict[str, Any], authorization: str | None) -> Answer:
        with self._lock:
            self.raw_requests.append(raw)
            self.requests.append(body)
            self.authorizations.append(authorization)
            if self._script:
                return self._script.pop(0)
        return Answer.error(500, "script exhausted")

    def _completion(self, body: dict[str, Any], answer: Answer) -> dict[str, Any]:
        content = answer.content or ""
        prompt = answer.prompt_tokens
        if prompt is None:
            prompt = sum(len(str(m.get("content", "")).split()) for m in body.get("messages", []))
        completion = answer.completion_tokens if answer.completion_tokens is not None else len(content.split())
        return {
            "id": f"chatcmpl-{len(self.requests)}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": body.get("model", self.model),
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": content},
                    "finish_reason": answer.finish_reason,
                }
            ],
            "usage": {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion},
        }


def _handler_for(server: ScriptedLLMServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:
            return

        def _send(self, status: int, payload: dict[str, Any]) -> None:
            data = json.dumps(payload).encode()
            try:
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                if status >= 400:  # the client's retries (the OpenAI SDK's own) wait 1 ms, not seconds
                    self.send_header("retry-after-ms", "1")
                self.end_headers()
                self.wfile.write(data)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client gave up (timed out) first

        def do_GET(self) -> None:
            server.paths.append(self.path)
            if self.path.rstrip("/") == "/v1/models":
                self._send(
                    200,
                    {
                        "object": "list",
                        "data": [{"id": server.model, "object": "model", "created": 0, "owned_by": "tests"}],
                    },
                )
            else:
                self._send(404, {"error": {"message": f"no route {self.path}", "type": "not_found_error"}})

        def do_POST(self) -> None:
            server.paths.append(self.path)
            raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            if self.path.rstrip("/") != "/v1/chat/completions":
                self._send(404, {"error": {"message": f"no route {self.path}", "type": "not_found_error"}})
                return
            try:
                body = json.loads(raw)
            except ValueError:
                self._send(400, {"error": {"message": "body is not JSON", "type": "invalid_request_error"}})
                return
            answer = server._next(raw, body, self.headers.get("Authorization"))
            if answer.delay and server._stop.wait(answer.delay):
                return
            if answer.status != 200:
                error = {
                    "message": answer.message,
                    "type": _ERROR_TYPES.get(answer.status, "server_error"),
                    "param": answer.param,
                    "code": None,
                }
                self._send(answer.status, {"error": error})
                return
            self._send(200, server._completion(body, answer))

    return Handler
