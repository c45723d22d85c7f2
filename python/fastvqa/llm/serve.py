# SPDX-License-Identifier: Apache-2.0
"""A real local HTTP server speaking the OpenAI chat-completions schema.

:func:`serve_chat_model` serves any ``fn(messages) -> str`` at
``POST /chat/completions`` (also ``/v1/chat/completions``) on 127.0.0.1, on
an :class:`http.server.ThreadingHTTPServer` in a background thread, for as
long as the ``with`` block runs. It is how ``fastvqa demo --pipeline devi``
and the tests run the DeVi pipeline through
:class:`~fastvqa.llm.ChatCompletionsClient` offline, and a way to put a
Python model behind the same protocol as vLLM or llama.cpp's server.

The replies follow the schema's shape (``id``, ``object``, ``created``,
``model``, ``choices[0].message``, ``finish_reason``, ``usage`` with word
counts standing in for tokens; text parts only). A message's ``content`` is
a str or a list of text and ``image_url`` parts, as
:meth:`~fastvqa.llm.ChatCompletionsClient.body` sends them; ``fn`` gets the
messages as received and decodes ``data:`` image URLs itself
(:func:`fastvqa.llm.images.decode_image_url`). A request that is not a
chat-completions body (parts included) gets 400 with
``{"error": {"message": ...}}``; an exception in ``fn``
gets 500. ``fn`` may also return a :class:`Reply` to send another status,
headers or body (the tests' failing and slow servers).

The server is as careful with its clients as the client is with servers: a
request body over ``max_request_bytes`` is refused with 413 before it is
read, a missing or malformed ``Content-Length`` gets 411/400, JSON nested too
deeply gets 400, and a client that stops sending (or trickles its request)
is cut off after ``request_timeout`` seconds in all.
"""

from __future__ import annotations

import contextlib
import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Callable, Iterator, NamedTuple, Optional

from fastvqa.llm._content import checked_content, text_of

#: the default cap on a request body (bytes): a chat request with a few
#: base64 frames is well under it.
MAX_REQUEST_BYTES = 64 * 2**20
#: the default time a client has to send its whole request (seconds).
REQUEST_TIMEOUT = 30.0
_READ_CHUNK = 64 * 1024


class Reply(NamedTuple):
    """An explicit HTTP reply from a served function: ``status``, optional
    ``headers`` and a JSON-able ``body`` (``None``: an error body naming the status)."""

    status: int
    body: Optional[dict] = None
    headers: Optional[dict] = None


class ServerStats:
    """Server-side counts, thread-safe: ``requests`` (every POST received),
    ``completions`` (200 replies), ``in_flight`` now (received, reply not yet sent) and
    ``max_in_flight`` seen."""

    def __init__(self):
        self._lock = threading.Lock()
        self.requests = self.completions = self.in_flight = self.max_in_flight = 0

    def enter(self) -> int:
        with self._lock:
            self.requests += 1
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
            return self.requests

    def leave(self, ok: bool) -> None:
        with self._lock:
            self.in_flight -= 1
            self.completions += int(ok)


class ServedModel(NamedTuple):
    """What :func:`serve_chat_model` yields: ``base_url`` (for
    :class:`~fastvqa.llm.ChatCompletionsClient`) and the server's ``stats``."""

    base_url: str
    stats: ServerStats


def _chat_body(model: str, text: str, prompt_words: int) -> dict:
    words = len(text.split())
    return {"id": f"chatcmpl-{time.time_ns():x}", "object": "chat.completion",
            "created": int(time.time()), "model": model,
            "choices": [{"index": 0, "finish_reason": "stop",
                         "message": {"role": "assistant", "content": text}}],
            "usage": {"prompt_tokens": prompt_words, "completion_tokens": words,
                      "total_tokens": prompt_words + words}}


class _BadRequest(Exception):
    """A request the server refuses: ``status`` and a one-line message."""

    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status = status


def _handler(fn: Callable, stats: ServerStats, max_request_bytes: int, request_timeout: float):
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        # Per socket read; _read_body adds the deadline for the whole body.
        timeout = request_timeout

        def log_message(self, *args):  # quiet: the tests and the demo print their own
            pass

        def _send(self, status: int, body: dict, headers: Optional[dict] = None) -> None:
            raw = json.dumps(body).encode("utf-8")
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(raw)))
            for k, v in (headers or {}).items():
                self.send_header(k, str(v))
            self.end_headers()
            # Out of flight before the client can hold the reply: counted after
            # the write, a client's next request (its concurrency slot freed
            # by this reply) could arrive first and be seen as one too many.
            self._leave(status == 200)
            self.wfile.write(raw)

        def _leave(self, ok: bool) -> None:
            if not self._left:
                self._left = True
                stats.leave(ok)

        def _read_body(self) -> bytes:
            """The request body, refused (:class:`_BadRequest`) when its
            length is missing, malformed or over the cap, and cut off when
            it has not all arrived within ``request_timeout`` seconds."""
            length = self.headers.get("Content-Length")
            if length is None:
                raise _BadRequest(411, "a chat-completions request needs a Content-Length")
            length = length.strip()
            if not length.isdigit() or len(length) > 19:
                raise _BadRequest(400, f"Content-Length {length[:40]!r} is not a byte count")
            n = int(length)
            if n > max_request_bytes:
                raise _BadRequest(413, f"the request body of {n} bytes is over this server's "
                                       f"limit of {max_request_bytes} bytes")
            deadline = time.monotonic() + request_timeout
            chunks, got = [], 0
            while got < n:
                if time.monotonic() > deadline:
                    raise TimeoutError("the request body did not arrive in time")
                chunk = self.rfile.read1(min(_READ_CHUNK, n - got))
                if not chunk:
                    raise ConnectionResetError("the client closed the connection mid-request")
                chunks.append(chunk)
                got += len(chunk)
            return b"".join(chunks)

        def do_POST(self):
            stats.enter()
            self._left = False
            try:
                if self.path.rstrip("/") not in ("/chat/completions", "/v1/chat/completions"):
                    self._send(404, {"error": {"message": f"no route {self.path}"}})
                    return
                try:
                    body = json.loads(self._read_body())
                    messages = body["messages"]
                    if not isinstance(messages, list) or not all(
                            isinstance(m, dict) and "content" in m for m in messages):
                        raise ValueError("messages must be a list of {role, content}")
                    # Content parts checked (InputError, a ValueError: 400); fn
                    # gets the messages as received.
                    texts = [text_of(checked_content(m["content"], f"messages[{k}].content"))
                             for k, m in enumerate(messages)]
                except _BadRequest as err:
                    self.close_connection = True  # the unread body must not be taken as a request
                    self._send(err.status, {"error": {"message": str(err),
                                                      "type": "invalid_request_error"}})
                    return
                except RecursionError:
                    self._send(400, {"error": {"message": "bad request: JSON nested too deeply",
                                               "type": "invalid_request_error"}})
                    return
                except (ValueError, KeyError, TypeError) as err:
                    self._send(400, {"error": {"message": f"bad request: {err}",
                                               "type": "invalid_request_error"}})
                    return
                try:
                    out = fn(messages)
                except Exception as err:  # the model's failure is the server's 500
                    self._send(500, {"error": {"message": f"{type(err).__name__}: {err}"}})
                    return
                if isinstance(out, Reply):
                    self._send(out.status, out.body if out.body is not None else
                               {"error": {"message": f"status {out.status}"}}, out.headers)
                    return
                words = sum(len(t.split()) for t in texts)  # text parts only
                self._send(200, _chat_body(str(body.get("model", "")), str(out), words))
            except (OSError, TimeoutError):  # the client gave up, or was too slow: no reply
                self.close_connection = True
            finally:
                self._leave(False)  # no reply written (an error before _send)

    return Handler


@contextlib.contextmanager
def serve_chat_model(fn: Callable, host: str = "127.0.0.1", port: int = 0, *,
                     max_request_bytes: int = MAX_REQUEST_BYTES,
                     request_timeout: float = REQUEST_TIMEOUT) -> Iterator[ServedModel]:
    """Serve ``fn(messages) -> str`` (or :class:`Reply`) over HTTP while the block runs.

    ``port=0`` takes a free port. ``max_request_bytes``: the largest request
    body read (413 beyond); ``request_timeout``: seconds a client has to send
    its whole request. Yields :class:`ServedModel`
    ``(base_url, stats)``; ``base_url`` is ``http://host:port/v1``. The
    server is shut down and its socket closed when the block ends, also on
    an error."""
    from fastvqa import _checks

    op = "serve_chat_model"
    max_request_bytes = _checks.integer(max_request_bytes, op, "max_request_bytes", minimum=1)
    request_timeout = _checks.real(request_timeout, op, "request_timeout", finite=True,
                                   positive=True)
    stats = ServerStats()
    server = ThreadingHTTPServer((host, port),
                                 _handler(fn, stats, max_request_bytes, request_timeout))
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05},
                              name="fastvqa-chat-server", daemon=True)
    thread.start()
    try:
        yield ServedModel(f"http://{host}:{server.server_address[1]}/v1", stats)
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)
