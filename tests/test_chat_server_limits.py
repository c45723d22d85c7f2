# SPDX-License-Identifier: Apache-2.0
"""The local chat-completions server (fastvqa.llm.serve_chat_model) against
misbehaving clients: oversized, unannounced, malformed, deeply nested and
trickled requests are refused or cut off, never read whole or held forever."""

from __future__ import annotations

import json
import socket
import time
import urllib.parse

import pytest

from fastvqa.llm.serve import serve_chat_model


def _echo(messages):
    return messages[-1]["content"].upper()


def _raw(base_url: str, payload: bytes, *, timeout: float = 10.0) -> bytes:
    """Sends ``payload`` as is and returns everything the server answers
    until it closes (or ``timeout``)."""
    parts = urllib.parse.urlsplit(base_url)
    with socket.create_connection((parts.hostname, parts.port), timeout=timeout) as s:
        s.sendall(payload)
        s.shutdown(socket.SHUT_WR)
        got = b""
        while True:
            chunk = s.recv(65536)
            if not chunk:
                return got
            got += chunk


def _post(headers: dict, body: bytes) -> bytes:
    head = "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\n" + "".join(
        f"{k}: {v}\r\n" for k, v in headers.items()) + "\r\n"
    return head.encode() + body


def _status(reply: bytes) -> int:
    return int(reply.split(b" ", 2)[1])


def test_a_good_request_is_answered():
    body = json.dumps({"model": "m", "messages": [{"role": "user", "content": "hi"}]}).encode()
    with serve_chat_model(_echo) as served:
        reply = _raw(served.base_url, _post({"Content-Length": len(body),
                                             "Connection": "close"}, body))
    assert _status(reply) == 200
    assert json.loads(reply.split(b"\r\n\r\n", 1)[1])["choices"][0]["message"]["content"] == "HI"


def test_an_oversized_request_is_refused_before_it_is_read():
    # 10 GB announced, 5 bytes sent: refused at once from the header alone.
    with serve_chat_model(_echo, max_request_bytes=1024) as served:
        reply = _raw(served.base_url, _post({"Content-Length": 10 * 10**9}, b"{...}"))
        assert served.stats.completions == 0
    assert _status(reply) == 413
    assert b"over this server's limit of 1024 bytes" in reply


@pytest.mark.parametrize("headers, status", [
    ({}, 411),
    ({"Content-Length": "-5"}, 400),
    ({"Content-Length": "12abc"}, 400),
    ({"Content-Length": "9" * 400}, 400),
])
def test_a_missing_or_malformed_length_is_refused(headers, status):
    with serve_chat_model(_echo) as served:
        reply = _raw(served.base_url, _post(headers, b"{}"))
    assert _status(reply) == status


def test_deeply_nested_json_is_a_400_not_a_dropped_connection():
    body = b"[" * 100_000 + b"]" * 100_000
    with serve_chat_model(_echo) as served:
        reply = _raw(served.base_url, _post({"Content-Length": len(body)}, body))
    assert _status(reply) == 400
    assert b"nested too deeply" in reply


def test_a_trickling_client_is_cut_off_at_the_request_deadline():
    """A client that announces 100 bytes and sends one every 0.2 s would
    need 20 s; the server gives up after its 1 s deadline and frees the
    thread (the connection is closed without a reply)."""
    with serve_chat_model(_echo, request_timeout=1.0) as served:
        parts = urllib.parse.urlsplit(served.base_url)
        with socket.create_connection((parts.hostname, parts.port), timeout=10) as s:
            s.sendall(_post({"Content-Length": 100}, b""))
            start = time.monotonic()
            closed = False
            for _ in range(40):  # at most 8 s of trickling
                try:
                    s.sendall(b" ")
                except OSError:  # reset: the server closed the connection
                    closed = True
                    break
                s.settimeout(0.2)
                try:
                    if s.recv(1) == b"":
                        closed = True
                        break
                except socket.timeout:
                    pass
            elapsed = time.monotonic() - start
        assert served.stats.completions == 0
    assert closed, "the server kept reading a trickled request"
    # Cut off after about 1 s, far below the 20 s the request needed.
    assert elapsed < 8


def test_limits_are_checked():
    from fastvqa.errors import InputError

    with pytest.raises((ValueError, InputError), match="max_request_bytes"):
        with serve_chat_model(_echo, max_request_bytes=0):
            pass
