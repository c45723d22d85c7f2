# SPDX-License-Identifier: Apache-2.0
"""The chat-completions client against misbehaving servers: real sockets on
127.0.0.1, one server started and stopped per test, each speaking raw bytes
so that it can break HTTP in the ways real servers and proxies do. Limits are
small (deadlines under a second, a 64 KiB body cap) so every test is quick;
the assertions are on what the client reports and on how many connections
the server saw, never on wall-clock time."""

from __future__ import annotations

import json
import socket
import threading
import time

import pytest

from fastvqa.llm import ChatCompletionsClient, LanguageModelError

HI = [{"role": "user", "content": "hi"}]
CAP = 64 * 1024
#: the longest any server handler runs (seconds): bounds every loop below.
HANDLER_LIMIT = 5.0


def chat_json(content: str) -> bytes:
    return json.dumps({"choices": [{"index": 0, "message": {"role": "assistant",
                                                            "content": content}}]}).encode()


def http_reply(body: bytes, status: str = "200 OK", extra: str = "") -> bytes:
    return (f"HTTP/1.1 {status}\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(body)}\r\n{extra}Connection: close\r\n\r\n").encode() + body


class RawServer:
    """Accepts connections on 127.0.0.1; for each, reads one request (headers
    and Content-Length body) and calls ``handler(conn, index, request_body,
    stop)`` in a thread. ``connections`` counts them; ``bodies`` keeps each
    request body. Used as a context manager: stopped and joined on exit."""

    def __init__(self, handler):
        self.handler = handler
        self.stop = threading.Event()
        self.connections = 0
        self.bodies: list = []
        self._lock = threading.Lock()
        self._threads: list = []
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.sock.settimeout(0.05)
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}/v1"

    def __enter__(self):
        self._accept_thread = threading.Thread(target=self._accept, daemon=True)
        self._accept_thread.start()
        return self

    def __exit__(self, *exc):
        self.stop.set()
        self._accept_thread.join(HANDLER_LIMIT)
        for t in list(self._threads):
            t.join(HANDLER_LIMIT)
        self.sock.close()

    def _accept(self):
        while not self.stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except (socket.timeout, OSError):
                continue
            with self._lock:
                index = self.connections
                self.connections += 1
            t = threading.Thread(target=self._serve, args=(conn, index), daemon=True)
            self._threads.append(t)
            t.start()

    def _serve(self, conn, index):
        try:
            conn.settimeout(HANDLER_LIMIT)
            data = b""
            while b"\r\n\r\n" not in data and len(data) < 1 << 20:
                chunk = conn.recv(65536)
                if not chunk:
                    return
                data += chunk
            head, _, body = data.partition(b"\r\n\r\n")
            length = 0
            for line in head.split(b"\r\n")[1:]:
                name, _, value = line.partition(b":")
                if name.strip().lower() == b"content-length":
                    length = int(value)
            while len(body) < length:
                chunk = conn.recv(65536)
                if not chunk:
                    return
                body += chunk
            with self._lock:
                self.bodies.append(body)
            self.handler(conn, index, body, self.stop)
        except OSError:
            pass  # the client gave up: that is what several tests provoke
        finally:
            conn.close()


def client(url, **kw):
    kw.setdefault("timeout", 1.0)
    kw.setdefault("max_retries", 1)
    kw.setdefault("backoff", 0.0)
    kw.setdefault("max_body_bytes", CAP)
    return ChatCompletionsClient(url, "m", **kw)


def failing(srv, **kw):
    """The LanguageModelError of one call, checked to be one line naming the server."""
    with pytest.raises(LanguageModelError) as err:
        client(srv.url, **kw).complete(HI)
    text = str(err.value)
    assert "\n" not in text
    assert text.startswith(f"POST {srv.url}/chat/completions failed: "), text
    return text


def sleep_until_stopped(stop):
    stop.wait(HANDLER_LIMIT)


# Deadlines -----------------------------------------------------------------------------------

@pytest.mark.parametrize("where", ["headers", "body"])
def test_a_trickling_server_is_cut_off_at_the_attempt_deadline(where):
    """One byte every 20 ms: each read arrives well inside any read timeout,
    the whole reply would take 100 s; the 0.3 s attempt deadline ends it."""
    def trickle(conn, index, body, stop):
        head = b"HTTP/1.1 200 OK\r\n"
        if where == "body":
            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 5000\r\n\r\n")
            head = b""
        for k in range(5000):
            if stop.is_set():
                return
            conn.sendall(head[k:k + 1] if k < len(head) else b"X")
            time.sleep(0.02)

    with RawServer(trickle) as srv:
        text = failing(srv, timeout=0.3)
        assert "timed out (no complete reply within 0.3 s) (after 2 attempts)" in text
        assert srv.connections == 2


def test_the_run_time_limit_bounds_retries():
    """A server that always says 503 with Retry-After 0.05 s and a client
    allowed 1000 retries: max_total_seconds=0.4 ends the run long before."""
    def busy(conn, index, body, stop):
        conn.sendall(http_reply(b'{"error": {"message": "busy"}}', "503 Service Unavailable",
                                "Retry-After: 0.05\r\n"))

    with RawServer(busy) as srv:
        text = failing(srv, max_retries=1000, max_total_seconds=0.4)
        assert "time limit of 0.4 s (max_total_seconds) has passed" in text
        assert 1 <= srv.connections < 100


# Body limit ----------------------------------------------------------------------------------

def test_an_announced_oversize_body_is_refused_before_reading():
    def huge(conn, index, body, stop):
        conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 2147483648\r\n\r\n{\"choices\": ")
        sleep_until_stopped(stop)

    with RawServer(huge) as srv:
        text = failing(srv, max_retries=3)
        assert "announces 2147483648 bytes, over the limit of 65536 (max_body_bytes)" in text
        assert srv.connections == 1  # the same request would get the same reply


def test_a_chunked_body_is_cut_at_the_limit():
    """Chunks of 16 KiB, 4 MiB in all if nobody stopped it: refused after 64 KiB."""
    def chunked(conn, index, body, stop):
        conn.sendall(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n")
        piece = b" " * 16384
        for _ in range(256):
            if stop.is_set():
                return
            conn.sendall(b"4000\r\n" + piece + b"\r\n")

    with RawServer(chunked) as srv:
        text = failing(srv)
        assert "longer than the limit of 65536 bytes (max_body_bytes)" in text
        assert srv.connections == 1


# Transport faults are retried, then one line -----------------------------------------------

@pytest.mark.parametrize("reply, expected", [
    (b"HTP/1.1 2000 OK\r\n\r\n", "BadStatusLine"),
    (b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n{\"choices\"",
     "the connection closed mid-reply (10 bytes read, 90 more expected)"),
    (b"HTTP/1.1 200 OK\r\n" + b"".join(b"X-H%d: v\r\n" % k for k in range(101)) + b"\r\n{}",
     "got more than 100 headers"),
    (b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n", "closed mid-reply"),
    (b"HTTP/1.1 200 OK\r\n\r\n{\"choices\": [{\"mess", "closed mid-reply"),
    (b"HTTP/1.1 2", "BadStatusLine"),
    (b"", "RemoteDisconnected"),
], ids=["malformed-status", "short-body", "101-headers", "closed-in-headers",
        "closed-in-body", "closed-in-status", "closed-at-once"])
def test_transport_faults_are_retried_then_one_line(reply, expected):
    def broken(conn, index, body, stop):
        conn.sendall(reply)

    with RawServer(broken) as srv:
        text = failing(srv, max_retries=2)
        assert expected in text and text.endswith("(after 3 attempts)"), text
        assert srv.connections == 3


def test_a_500_with_a_short_body_is_retried_as_a_500():
    def short_500(conn, index, body, stop):
        conn.sendall(b"HTTP/1.1 500 Internal Server Error\r\nContent-Length: 100\r\n\r\n{\"err")

    with RawServer(short_500) as srv:
        text = failing(srv, max_retries=2)
        assert "HTTP 500 Internal Server Error" in text and text.endswith("(after 3 attempts)")
        assert srv.connections == 3


# Replies that are not chat-completions JSON: one clear line, not retried ----------------------

@pytest.mark.parametrize("body, expected", [
    (b"[" * 30000 + b"]" * 30000, "nested too deeply: '[[[["),
    (b"<html>Bad Gateway</html>", "is not JSON: '<html>Bad Gateway</html>'"),
    (b"\xff\xfe{}", "is not JSON"),
    (b"{}", "has no 'choices'"),
    (b'{"choices": {"0": 1}}', "'choices' is not a non-empty list"),
    (b'{"choices": []}', "'choices' is not a non-empty list"),
    (b'{"choices": [{"message": {"content": 5}}]}', "no string choices[0].message.content"),
    (b'{"choices": ["x"]}', "no string choices[0].message.content"),
    (b"[1, 2]", "a JSON list, not an object"),
    (b'{"n": 1' + b"0" * 5000 + b"}", "is not JSON"),
])
def test_a_reply_that_is_not_the_schema_is_one_clear_line(body, expected):
    def wrong(conn, index, req, stop):
        conn.sendall(http_reply(body))

    with RawServer(wrong) as srv:
        text = failing(srv, max_retries=3)
        assert expected in text, text
        assert len(text) < 600
        assert srv.connections == 1


# Retries work; fail fast; nothing received is lost --------------------------------------------

def test_a_recovering_server_answers_on_the_third_attempt():
    def recovering(conn, index, body, stop):
        if index == 0:
            return  # closed without a word
        if index == 1:
            conn.sendall(http_reply(b"{}", "503 Service Unavailable"))
            return
        conn.sendall(http_reply(chat_json("fine")))

    with RawServer(recovering) as srv:
        c = client(srv.url, max_retries=4)
        assert c.complete(HI) == "fine"
        assert srv.connections == 3
    assert (c.stats.calls, c.stats.retries, c.stats.failures) == (1, 2, 0)


def test_a_hung_server_fails_fast_across_many_questions(tmp_path):
    """12 questions, 2 at a time, 2 attempts each: without fail-fast the
    server sees 24 connections; once the first call has failed for good the
    others stop, so at most the 2 in flight ever tried (4 connections)."""
    def hung(conn, index, body, stop):
        sleep_until_stopped(stop)

    with RawServer(hung) as srv:
        c = client(srv.url, timeout=0.2, max_concurrency=2, cache_dir=tmp_path)
        with pytest.raises(LanguageModelError, match="timed out"):
            c.map([[{"role": "user", "content": f"q{k}"}] for k in range(12)])
        assert srv.connections <= 4
        # A later call is refused at once, with the cause.
        with pytest.raises(LanguageModelError, match="timed out"):
            c.complete([{"role": "user", "content": "another"}])
        assert srv.connections <= 4


def test_replies_received_before_the_failure_are_kept_and_a_rerun_resumes(tmp_path):
    """The server answers 3 requests, then resets every connection: the run
    fails, the 3 replies are in the cache, and a rerun against a healthy
    server asks only for the 3 missing ones."""
    convs = [[{"role": "user", "content": f"q{k}"}] for k in range(6)]

    def answers_three(conn, index, body, stop):
        if index < 3:
            content = json.loads(body)["messages"][0]["content"]
            conn.sendall(http_reply(chat_json("re " + content)))

    with RawServer(answers_three) as srv:
        c = client(srv.url, max_concurrency=1, cache_dir=tmp_path)
        with pytest.raises(LanguageModelError, match="RemoteDisconnected"):
            c.map(convs)
    assert len(list(tmp_path.rglob("*.json"))) == 3

    def healthy(conn, index, body, stop):
        content = json.loads(body)["messages"][0]["content"]
        conn.sendall(http_reply(chat_json("re " + content)))

    with RawServer(healthy) as srv:
        c = client(srv.url, max_concurrency=2, cache_dir=tmp_path)
        assert c.map(convs) == [f"re q{k}" for k in range(6)]
        assert srv.connections == 3
        assert sorted(json.loads(b)["messages"][0]["content"] for b in srv.bodies) == \
            ["q3", "q4", "q5"]
    assert c.stats.cache_hits == 3


def test_a_4xx_fails_its_call_only():
    """A 400 is about the request (too long a prompt, say): the next call still goes out."""
    def picky(conn, index, body, stop):
        if b"bad" in body:
            conn.sendall(http_reply(b'{"error": {"message": "too long"}}', "400 Bad Request"))
        else:
            conn.sendall(http_reply(chat_json("ok")))

    with RawServer(picky) as srv:
        c = client(srv.url)
        with pytest.raises(LanguageModelError, match="HTTP 400 Bad Request: too long"):
            c.complete([{"role": "user", "content": "bad"}])
        assert c.complete(HI) == "ok"
        assert srv.connections == 2


def test_limits_are_checked():
    with pytest.raises(Exception, match="max_body_bytes"):
        ChatCompletionsClient("http://127.0.0.1:1/v1", "m", max_body_bytes=0)
    with pytest.raises(Exception, match="max_total_seconds"):
        ChatCompletionsClient("http://127.0.0.1:1/v1", "m", max_total_seconds=float("nan"))
