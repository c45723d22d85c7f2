# SPDX-License-Identifier: Apache-2.0
"""A client for the OpenAI chat-completions protocol, standard library only.

``POST {base_url}/chat/completions`` is what vLLM (``vllm serve``), llama.cpp's
``llama-server``, SGLang, Ollama's OpenAI endpoint and the hosted APIs serve;
``base_url`` is the part before ``/chat/completions``, usually ending in
``/v1`` (``http://127.0.0.1:8000/v1``).

What it adds to a bare request:

- **deadlines**: ``timeout`` seconds per attempt in all (a watchdog ends an
  attempt whose reply is not complete by then, however slowly it trickles),
  and optionally ``max_total_seconds`` for all the client's calls together;
- **a body limit** (``max_body_bytes``, default 16 MiB): a larger reply is
  refused, announced or not, never read whole;
- **retries** on transport faults (refused, reset or closed connections,
  malformed status lines or headers, bodies shorter than announced,
  timeouts), HTTP 429 and 5xx, with
  exponential backoff and jitter (``backoff * 2**attempt`` seconds, times a
  random factor in ``[0.5, 1.5)``), or the server's ``Retry-After`` when it
  sends one (capped at :data:`MAX_RETRY_AFTER`); any other 4xx is the
  caller's mistake and fails at once;
- **a concurrency limit** (``max_concurrency`` requests in flight, across
  threads: :meth:`ChatCompletionsClient.map` and any threads of the caller's);
- **a per-call cache** (``cache_dir``): the key is the sha256 of the
  canonical JSON (sorted keys, no spaces, UTF-8) of the exact request body
  (model, messages, temperature, max_tokens and every extra parameter), one
  small JSON file per key, ``<cache_dir>/<key[:2]>/<key>.json``, written
  through a temporary name and moved into place (:func:`fastvqa._outputs.write_new`),
  so a rerun makes no calls and a killed run resumes with the calls it had
  not finished. The URL and the API key are not part of the key: the same
  request to another server serving the same model name is a cache hit;
- **accounting** (:attr:`ChatCompletionsClient.stats`): calls made, cache
  hits, retries and the seconds of each call, for the latency report.

Failures after the retries raise :class:`LanguageModelError`, one line naming
the URL and the status (or the connection error); so does a reply that is
not chat-completions JSON, quoting its start. The first failure for good on
a server fault stops the client's other calls (fail fast).
"""

from __future__ import annotations

import hashlib
import http.client
import json
import math
import random
import socket
import threading
import time
import urllib.parse
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional, Sequence

from fastvqa import _checks
from fastvqa.errors import InputError
from fastvqa.llm._content import checked_content

#: the longest ``Retry-After`` honoured (seconds); a longer one is cut to this.
MAX_RETRY_AFTER = 60.0
#: characters of an error response's body quoted in the error message.
_BODY_QUOTE = 200
#: the default cap on a reply's body (bytes): far above any chat reply, far
#: below what would strain memory.
MAX_BODY_BYTES = 16 * 2**20
#: bytes of an error reply's body read (the rest is ignored).
_ERROR_BODY_LIMIT = 64 * 1024
#: bytes read at a time.
_READ_CHUNK = 64 * 1024


class LanguageModelError(InputError):
    """A chat-completions request failed for good (after the retries, or at
    once for a 4xx): the message names the URL and the HTTP status or the
    connection error. An :class:`~fastvqa.errors.InputError`, so the command
    line prints it as one line: a wrong URL, model name or key is the user's
    to fix."""


@dataclass
class ClientStats:
    """What a client did. ``calls``: HTTP calls that returned a reply;
    ``cache_hits``: replies read from the cache; ``retries``: attempts
    repeated after a retryable failure; ``failures``: calls that failed for
    good; ``seconds``: wall time of each successful call (retries and
    waits included), in completion order; ``prompt_tokens`` and
    ``completion_tokens``: the sums of the replies' ``usage`` counts where
    the server reports them (``tokens_reported``: how many replies did;
    cache hits count nothing)."""

    calls: int = 0
    cache_hits: int = 0
    retries: int = 0
    failures: int = 0
    seconds: list = field(default_factory=list)
    prompt_tokens: int = 0
    completion_tokens: int = 0
    tokens_reported: int = 0

    @property
    def total_seconds(self) -> float:
        return float(sum(self.seconds))


def request_key(body: dict) -> str:
    """The cache key of a request body: sha256 hex of its canonical JSON."""
    canonical = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    try:
        raw = canonical.encode("utf-8")
    except UnicodeEncodeError as err:  # "\ud800" from a JSON file: no character at all
        raise InputError(f"the request holds a lone surrogate {canonical[err.start]!r} (an "
                         "escape such as \\ud800 read from a JSON file), which cannot be "
                         "sent; fix the text it came from") from None
    return hashlib.sha256(raw).hexdigest()


class ChatCompletionsClient:
    """A :class:`~fastvqa.llm.protocols.LanguageModel` served over HTTP.

    Args:
        base_url: the server's API root, e.g. ``http://127.0.0.1:8000/v1``;
            requests go to ``{base_url}/chat/completions``.
        model: the ``model`` field of every request (the name the server
            serves, e.g. ``Qwen/Qwen2.5-7B-Instruct`` for vLLM).
        api_key: sent as ``Authorization: Bearer <key>`` when given.
        timeout: seconds one attempt may take in all (connect, send, the
            whole reply), > 0: a server that trickles its reply byte by
            byte is cut off there too.
        max_retries: attempts after the first, >= 0.
        backoff: base of the exponential backoff in seconds, >= 0.
        max_concurrency: requests in flight at once, >= 1.
        cache_dir: the per-call cache folder (made when missing); ``None``: no cache.
        temperature: the ``temperature`` field (0 for reproducible replies).
        max_tokens: the ``max_tokens`` field; ``None`` leaves it out.
        extra_body: more request fields (``top_p``, ``seed``, ``stop``...),
            part of the cache key like every field.
        max_body_bytes: the largest reply body read (bytes, default
            :data:`MAX_BODY_BYTES`); a longer one (announced, or read in
            chunks up to the limit) is refused with :class:`LanguageModelError`.
        max_total_seconds: seconds all the calls of this client may take
            together, counted from its first request (attempts, retries and
            waits); ``None``: no limit. Once passed, calls fail with
            :class:`LanguageModelError` (the replies received are cached: a
            rerun resumes).

    Fail fast: once a call failed for good on a server fault (connection or
    transport errors, 5xx or 429 after the retries, a reply that is not
    chat-completions JSON, too large, the time limit), the server is taken
    as down: calls waiting to retry stop, and calls not yet made raise the
    same error without being attempted. A 4xx other than 429 fails only its
    own call.
    """

    def __init__(self, base_url: str, model: str, *, api_key: Optional[str] = None,
                 timeout: float = 60.0, max_retries: int = 4, backoff: float = 0.5,
                 max_concurrency: int = 4, cache_dir: Any = None, temperature: float = 0.0,
                 max_tokens: Optional[int] = None, extra_body: Optional[dict] = None,
                 max_body_bytes: int = MAX_BODY_BYTES,
                 max_total_seconds: Optional[float] = None):
        op = "ChatCompletionsClient"
        base_url = _checks.string(base_url, op, "base_url")
        if not base_url.startswith(("http://", "https://")):
            raise InputError(f"{op}: base_url must start with http:// or https://, "
                             f"got {base_url!r}")
        self.url = base_url.rstrip("/") + "/chat/completions"
        self.model = _checks.string(model, op, "model")
        self.api_key = api_key
        self.timeout = _checks.real(timeout, op, "timeout", finite=True, positive=True)
        self.max_retries = _checks.integer(max_retries, op, "max_retries", minimum=0)
        self.backoff = _checks.real(backoff, op, "backoff", finite=True, minimum=0)
        self.max_concurrency = _checks.integer(max_concurrency, op, "max_concurrency", minimum=1)
        self.temperature = _checks.real(temperature, op, "temperature", finite=True, minimum=0)
        self.max_tokens = _checks.optional_integer(max_tokens, op, "max_tokens", minimum=1)
        self.extra_body = dict(extra_body or {})
        self.max_body_bytes = _checks.integer(max_body_bytes, op, "max_body_bytes", minimum=1)
        self.max_total_seconds = None if max_total_seconds is None else _checks.real(
            max_total_seconds, op, "max_total_seconds", finite=True, positive=True)
        self.cache_dir = None if cache_dir is None else Path(cache_dir)
        self.name = f"{self.model} @ {base_url}"
        self.stats = ClientStats()
        self._slots = threading.Semaphore(self.max_concurrency)
        self._lock = threading.Lock()
        self._started: Optional[float] = None  # time.monotonic() of the first request
        self._down: Optional[str] = None  # the message of the failure that took it down
        self._down_event = threading.Event()

    def __repr__(self) -> str:
        return f"ChatCompletionsClient({self.url!r}, model={self.model!r})"

    def body(self, messages: Sequence[dict]) -> dict:
        """The exact JSON body sent for ``messages`` (and hashed for the cache).

        A message is ``{"role": str, "content": ...}``; ``content`` is a str or
        a non-empty list of parts, ``{"type": "text", "text": str}`` or
        ``{"type": "image_url", "image_url": {"url": str}}`` (optional
        ``"detail"`` str), sent as given (copied): the cache key covers every
        image's bytes (:mod:`fastvqa.llm.images` makes such parts). Anything
        else raises :class:`~fastvqa.errors.InputError` naming
        ``messages[k].content[j]``, before any request."""
        msgs = []
        for k, m in enumerate(messages):
            if not isinstance(m, dict) or not isinstance(m.get("role"), str) \
                    or "content" not in m:
                raise InputError(f"messages[{k}]: expected {{'role': str, 'content': str or "
                                 f"list of parts}}, got {m!r:.80}")
            msgs.append({"role": m["role"],
                         "content": checked_content(m["content"], f"messages[{k}].content")})
        body = {"model": self.model, "messages": msgs, "temperature": self.temperature,
                **self.extra_body}
        if self.max_tokens is not None:
            body["max_tokens"] = self.max_tokens
        return body

    # The LanguageModel protocol ------------------------------------------------

    def complete(self, messages: Sequence[dict]) -> str:
        """The reply text (``choices[0].message.content``), from the cache when there."""
        body = self.body(messages)
        key = request_key(body)
        cached = self._cache_read(key)
        if cached is not None:
            with self._lock:
                self.stats.cache_hits += 1
            return cached
        self._check_down()
        with self._slots:
            start = time.perf_counter()
            reply = self._post_with_retries(body)
            elapsed = time.perf_counter() - start
        text = self._content(reply)
        self._cache_write(key, body, reply, text)
        usage = reply.get("usage") if isinstance(reply, dict) else None
        prompt, completion = _token_counts(usage)
        with self._lock:
            self.stats.calls += 1
            self.stats.seconds.append(elapsed)
            if prompt is not None:
                self.stats.tokens_reported += 1
                self.stats.prompt_tokens += prompt
                self.stats.completion_tokens += completion
        return text

    __call__ = complete

    def map(self, conversations: Sequence[Sequence[dict]]) -> list:
        """:meth:`complete` for each conversation, ``max_concurrency`` at a
        time; replies in input order. The first failure cancels the calls not
        yet started and is raised once those in flight have ended (their
        replies are cached; a rerun resumes)."""
        conversations = list(conversations)
        if len(conversations) <= 1 or self.max_concurrency == 1:
            return [self.complete(c) for c in conversations]
        pool = ThreadPoolExecutor(max_workers=self.max_concurrency)
        try:
            futures = [pool.submit(self.complete, c) for c in conversations]
            return [f.result() for f in futures]
        finally:
            pool.shutdown(wait=True, cancel_futures=True)

    # HTTP ----------------------------------------------------------------------

    def _post_with_retries(self, body: dict) -> dict:
        """The parsed reply of ``body``: one attempt after another until one
        answers, the retries are spent, the run's time is up or another call
        found the server down; then :class:`LanguageModelError`."""
        data = json.dumps(body, ensure_ascii=False).encode("utf-8")
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        for attempt in range(self.max_retries + 1):
            self._check_down()
            budget = self._budget()
            try:
                status, reason, reply_headers, raw = self._attempt(data, headers, budget)
            except _Oversize as err:
                self._fail(str(err), down=True)  # the same request gets the same reply
            except (http.client.HTTPException, OSError, ValueError) as err:
                # refused, reset, closed mid-reply, a malformed status line, a
                # body shorter than announced, too many headers, timed out
                fault = _transport_fault(err, budget)
                if attempt == self.max_retries:
                    self._fail(f"{fault} (after {attempt + 1} attempts)", down=True)
                wait = None
            else:
                if 200 <= status < 300:
                    return self._parse(raw)
                detail = _error_detail(raw)
                text = f"HTTP {status} {reason}" + (f": {detail}" if detail else "")
                if not (status == 429 or status >= 500):
                    # the request itself is wrong (or redirected): retrying cannot help
                    self._fail(text, down=False)
                if attempt == self.max_retries:
                    self._fail(f"{text} (after {attempt + 1} attempts)", down=True)
                wait = _retry_after(reply_headers.get("Retry-After"))
            if wait is None:
                wait = self.backoff * 2 ** attempt * random.uniform(0.5, 1.5)
            with self._lock:
                self.stats.retries += 1
            # Woken at once when another call finds the server down.
            if self._down_event.wait(min(wait, self._remaining())):
                self._check_down()
        raise AssertionError("unreachable")

    def _remaining(self) -> float:
        """Seconds left of ``max_total_seconds`` (inf without one)."""
        if self.max_total_seconds is None:
            return math.inf
        with self._lock:
            if self._started is None:
                self._started = time.monotonic()
            return self.max_total_seconds - (time.monotonic() - self._started)

    def _budget(self) -> float:
        """Seconds the next attempt may take in all: ``timeout``, cut to what
        is left of the run's ``max_total_seconds`` (none left: a failure)."""
        left = self._remaining()
        if left <= 0:
            self._fail(f"the run's time limit of {self.max_total_seconds:g} s "
                       "(max_total_seconds) has passed", down=True)
        return min(self.timeout, left)

    def _attempt(self, data: bytes, headers: dict, budget: float):
        """One POST, over within ``budget`` seconds in all: a watchdog shuts
        the socket when the time is up, so a server that trickles bytes (each
        read in time, the whole never done) cannot hold the call. Returns
        ``(status, reason, headers, body)``; a 2xx body is read up to
        ``max_body_bytes`` (:class:`_Oversize` beyond), an error body up to
        :data:`_ERROR_BODY_LIMIT` (the rest ignored)."""
        conn, target = self._connection(budget)
        timer, expired = None, threading.Event()
        try:
            conn.connect()  # bounded by the connection's timeout (<= budget)
            timer = threading.Timer(budget, _shut, (conn.sock, expired))
            timer.daemon = True
            timer.start()
            conn.request("POST", target, body=data, headers=headers)
            response = conn.getresponse()
            if 200 <= response.status < 300:
                # No Content-Length and not chunked: the body ends where the
                # connection closes, so a cut reply looks complete; only its
                # JSON can tell.
                by_close = response.length is None and not response.chunked
                raw = _read_capped(response, self.max_body_bytes, self.url)
                if not raw.strip():
                    raise http.client.IncompleteRead(raw)  # no body: a cut reply
                if by_close:
                    try:
                        json.loads(raw)
                    except RecursionError:
                        pass  # complete, and refused as too deep by _parse
                    except ValueError:
                        raise http.client.IncompleteRead(raw) from None
            else:
                try:
                    raw = _read_capped(response, _ERROR_BODY_LIMIT, self.url)
                except _Oversize:
                    raw = b""
                except (http.client.HTTPException, OSError, ValueError):
                    raw = b""  # the status is what counts; a short error body is no worse
            return response.status, response.reason, response.headers, raw
        except (http.client.HTTPException, OSError, ValueError):
            if expired.is_set():  # what the shut socket raised: report the cause
                raise TimeoutError("the attempt's deadline passed") from None
            raise
        finally:
            if timer is not None:
                timer.cancel()
            conn.close()

    def _connection(self, budget: float):
        """``(connection, request target)``: to the server, or to the proxy
        the environment names (``$http_proxy``, ``$https_proxy``,
        ``$no_proxy``), as urllib would use."""
        parts = urllib.parse.urlsplit(self.url)
        target = parts.path + (f"?{parts.query}" if parts.query else "")
        host, port = parts.hostname or "", parts.port
        https = parts.scheme == "https"
        cls = http.client.HTTPSConnection if https else http.client.HTTPConnection
        proxy = None if urllib.request.proxy_bypass(host) else \
            urllib.request.getproxies().get(parts.scheme)
        if proxy:
            p = urllib.parse.urlsplit(proxy if "://" in proxy else "http://" + proxy)
            if https:
                conn = cls(p.hostname, p.port, timeout=budget)
                conn.set_tunnel(host, port)
                return conn, target
            # a plain-HTTP proxy takes the absolute URL
            return http.client.HTTPConnection(p.hostname, p.port, timeout=budget), self.url
        return cls(host, port, timeout=budget), target

    def _parse(self, raw: bytes) -> dict:
        """The JSON of a 2xx reply, checked to be chat-completions JSON
        (a ``choices`` list whose first ``message.content`` is a string)."""
        try:
            reply = json.loads(raw)
        except RecursionError:
            self._fail(f"the reply's JSON is nested too deeply: {_quote(raw)}", down=True)
        except ValueError:  # also bad UTF-8, a number of too many digits
            self._fail(f"the reply is not JSON: {_quote(raw)}", down=True)
        choices = reply.get("choices") if isinstance(reply, dict) else None
        problem = None
        if not isinstance(reply, dict):
            problem = f"the reply is a JSON {type(reply).__name__}, not an object"
        elif "choices" not in reply:
            problem = "the reply has no 'choices'"
        elif not isinstance(choices, list) or not choices:
            problem = "the reply's 'choices' is not a non-empty list"
        else:
            first = choices[0]
            message = first.get("message") if isinstance(first, dict) else None
            content = message.get("content") if isinstance(message, dict) else None
            if not isinstance(content, str):
                problem = "the reply has no string choices[0].message.content"
        if problem is not None:
            self._fail(f"{problem} (is it an OpenAI-compatible chat-completions server?): "
                       f"{_quote(raw)}", down=True)
        return reply

    def _check_down(self) -> None:
        """Fail fast: once a call failed for good on a server fault, the
        calls not yet made are not attempted; they fail with its message."""
        if self._down is not None:
            raise LanguageModelError(self._down)

    def _fail(self, what: str, *, down: bool = False):
        message = f"POST {self.url} failed: {what}"
        with self._lock:
            self.stats.failures += 1
            if down and self._down is None:
                self._down = message
        if down:
            self._down_event.set()
        raise LanguageModelError(message)

    def _content(self, reply: Any) -> str:
        return reply["choices"][0]["message"]["content"]  # checked by _parse

    # The cache -------------------------------------------------------------------

    def _cache_path(self, key: str) -> Path:
        return self.cache_dir / key[:2] / f"{key}.json"

    def _cache_read(self, key: str) -> Optional[str]:
        if self.cache_dir is None:
            return None
        path = self._cache_path(key)
        try:
            entry = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return None
        except (OSError, ValueError, RecursionError) as err:
            why = "JSON nested too deeply" if isinstance(err, RecursionError) else err
            raise InputError(f"cache entry {path} cannot be read ({why}); remove it to make "
                             "the call again") from None
        if not isinstance(entry, dict) or not isinstance(entry.get("content"), str):
            raise InputError(f"cache entry {path} holds no reply; remove it to make the call again")
        return entry["content"]

    def _cache_write(self, key: str, body: dict, reply: Any, text: str) -> None:
        if self.cache_dir is None:
            return
        from fastvqa._outputs import OutputExistsError, write_new

        entry = {"key": key, "request": body, "content": text, "response": reply}
        try:
            write_new(self._cache_path(key), json.dumps(entry, ensure_ascii=False) + "\n",
                      "cache entry")
        except OutputExistsError:
            pass  # another thread made the same call meanwhile: same request, same entry


def _token_counts(usage: Any) -> tuple:
    """``(prompt_tokens, completion_tokens)`` of a reply's ``usage`` object,
    or ``(None, None)`` where it is missing or not two non-negative ints (a
    server's word, never trusted further)."""
    if not isinstance(usage, dict):
        return None, None
    prompt, completion = usage.get("prompt_tokens"), usage.get("completion_tokens")
    if all(isinstance(v, int) and not isinstance(v, bool) and 0 <= v < 2**53
           for v in (prompt, completion)):
        return prompt, completion
    return None, None


class _Oversize(Exception):
    """A reply body over the limit (not a transport fault: not retried)."""


def _shut(sock, expired: threading.Event) -> None:
    """The watchdog's action: end a socket's reads and writes at once."""
    expired.set()
    try:
        sock.shutdown(socket.SHUT_RDWR)
    except OSError:  # closed already: the attempt ended in time
        pass


def _read_capped(response: http.client.HTTPResponse, limit: int, url: str) -> bytes:
    """The body, read in chunks of :data:`_READ_CHUNK` bytes and refused
    (:class:`_Oversize`) as soon as it passes ``limit`` bytes, or at once
    when its Content-Length announces more."""
    if response.length is not None and response.length > limit:
        raise _Oversize(f"the reply announces {response.length} bytes, over the limit of "
                        f"{limit} (max_body_bytes)")
    chunks, total = [], 0
    while True:
        chunk = response.read(min(_READ_CHUNK, limit + 1 - total))
        if not chunk:
            if response.length:  # read(amt) does not say that a body was cut short
                raise http.client.IncompleteRead(b"".join(chunks), response.length)
            return b"".join(chunks)
        total += len(chunk)
        if total > limit:
            raise _Oversize(f"the reply is longer than the limit of {limit} bytes "
                            "(max_body_bytes)")
        chunks.append(chunk)


def _transport_fault(err: BaseException, budget: float) -> str:
    """One line for a failed attempt: the exception's type and message, or
    the deadline when the watchdog (or a read timeout) ended it."""
    if isinstance(err, (TimeoutError, socket.timeout)):
        return f"timed out (no complete reply within {budget:g} s)"
    text = " ".join(str(err).split())[:_BODY_QUOTE]
    if isinstance(err, http.client.IncompleteRead):
        more = "" if err.expected is None else f", {err.expected} more expected"
        text = f"the connection closed mid-reply ({len(err.partial)} bytes read{more})"
    reason = getattr(err, "reason", None)  # urllib's wrapper, if any
    if isinstance(reason, BaseException):
        err, text = reason, str(reason)
    return f"{type(err).__name__}: {text}" if text else type(err).__name__


def _quote(raw: bytes) -> str:
    """The start of a body, quoted on one line (at most :data:`_BODY_QUOTE` characters)."""
    text = raw[:_BODY_QUOTE].decode("utf-8", "replace")
    more = "..." if len(raw) > _BODY_QUOTE else ""
    return repr(" ".join(text.split())) + more


def _error_detail(raw: bytes) -> str:
    """The server's error message: ``error.message`` of a JSON body, else the text."""
    try:
        parsed = json.loads(raw)
        msg = parsed["error"]["message"] if isinstance(parsed.get("error"), dict) \
            else parsed.get("error", parsed.get("detail", raw.decode("utf-8", "replace")))
    except (ValueError, RecursionError, AttributeError, KeyError, TypeError):
        msg = raw.decode("utf-8", "replace")
    return " ".join(str(msg).split())[:_BODY_QUOTE]


def _retry_after(value: Optional[str]) -> Optional[float]:
    """Seconds from a ``Retry-After`` header (delta-seconds form; an HTTP date
    or garbage is ignored), capped at :data:`MAX_RETRY_AFTER`."""
    if value is None:
        return None
    try:
        seconds = float(value)
    except ValueError:
        return None
    if not seconds >= 0:
        return None
    return min(seconds, MAX_RETRY_AFTER)
