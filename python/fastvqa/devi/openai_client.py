# SPDX-License-Identifier: Apache-2.0
"""A client for the OpenAI chat-completions protocol, standard library only.

``POST {base_url}/chat/completions`` is what vLLM (``vllm serve``), llama.cpp's
``llama-server``, SGLang, Ollama's OpenAI endpoint and the hosted APIs serve;
``base_url`` is the part before ``/chat/completions``, usually ending in
``/v1`` (``http://127.0.0.1:8000/v1``).

What it adds to a bare request:

- **timeouts** (``timeout`` seconds per attempt);
- **retries** on connection errors and timeouts, HTTP 429 and 5xx, with
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
the URL and the status (or the connection error).
"""

from __future__ import annotations

import hashlib
import json
import random
import threading
import time
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional, Sequence

from fastvqa import _checks
from fastvqa.errors import InputError

#: the longest ``Retry-After`` honoured (seconds); a longer one is cut to this.
MAX_RETRY_AFTER = 60.0
#: characters of an error response's body quoted in the error message.
_BODY_QUOTE = 200


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
    waits included), in completion order."""

    calls: int = 0
    cache_hits: int = 0
    retries: int = 0
    failures: int = 0
    seconds: list = field(default_factory=list)

    @property
    def total_seconds(self) -> float:
        return float(sum(self.seconds))


def request_key(body: dict) -> str:
    """The cache key of a request body: sha256 hex of its canonical JSON."""
    canonical = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


class ChatCompletionsClient:
    """A :class:`~fastvqa.devi.protocols.LanguageModel` served over HTTP.

    Args:
        base_url: the server's API root, e.g. ``http://127.0.0.1:8000/v1``;
            requests go to ``{base_url}/chat/completions``.
        model: the ``model`` field of every request (the name the server
            serves, e.g. ``Qwen/Qwen2.5-7B-Instruct`` for vLLM).
        api_key: sent as ``Authorization: Bearer <key>`` when given.
        timeout: seconds per attempt (connect and read), > 0.
        max_retries: attempts after the first, >= 0.
        backoff: base of the exponential backoff in seconds, >= 0.
        max_concurrency: requests in flight at once, >= 1.
        cache_dir: the per-call cache folder (made when missing); ``None``: no cache.
        temperature: the ``temperature`` field (0 for reproducible replies).
        max_tokens: the ``max_tokens`` field; ``None`` leaves it out.
        extra_body: more request fields (``top_p``, ``seed``, ``stop``...),
            part of the cache key like every field.
    """

    def __init__(self, base_url: str, model: str, *, api_key: Optional[str] = None,
                 timeout: float = 60.0, max_retries: int = 4, backoff: float = 0.5,
                 max_concurrency: int = 4, cache_dir: Any = None, temperature: float = 0.0,
                 max_tokens: Optional[int] = None, extra_body: Optional[dict] = None):
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
        self.cache_dir = None if cache_dir is None else Path(cache_dir)
        self.name = f"{self.model} @ {base_url}"
        self.stats = ClientStats()
        self._slots = threading.Semaphore(self.max_concurrency)
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"ChatCompletionsClient({self.url!r}, model={self.model!r})"

    def body(self, messages: Sequence[dict]) -> dict:
        """The exact JSON body sent for ``messages`` (and hashed for the cache)."""
        msgs = []
        for k, m in enumerate(messages):
            if not isinstance(m, dict) or not isinstance(m.get("role"), str) \
                    or not isinstance(m.get("content"), str):
                raise InputError(f"messages[{k}]: expected {{'role': str, 'content': str}}, "
                                 f"got {m!r:.80}")
            msgs.append({"role": m["role"], "content": m["content"]})
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
        with self._slots:
            start = time.perf_counter()
            reply = self._post_with_retries(body)
            elapsed = time.perf_counter() - start
        text = self._content(reply)
        self._cache_write(key, body, reply, text)
        with self._lock:
            self.stats.calls += 1
            self.stats.seconds.append(elapsed)
        return text

    __call__ = complete

    def map(self, conversations: Sequence[Sequence[dict]]) -> list:
        """:meth:`complete` for each conversation, ``max_concurrency`` at a
        time; replies in input order. The first failure is raised once the
        calls already started have finished (their replies are cached)."""
        conversations = list(conversations)
        if len(conversations) <= 1 or self.max_concurrency == 1:
            return [self.complete(c) for c in conversations]
        with ThreadPoolExecutor(max_workers=self.max_concurrency) as pool:
            futures = [pool.submit(self.complete, c) for c in conversations]
            return [f.result() for f in futures]

    # HTTP ----------------------------------------------------------------------

    def _post_with_retries(self, body: dict) -> dict:
        data = json.dumps(body, ensure_ascii=False).encode("utf-8")
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        for attempt in range(self.max_retries + 1):
            request = urllib.request.Request(self.url, data=data, headers=headers, method="POST")
            try:
                with urllib.request.urlopen(request, timeout=self.timeout) as response:
                    raw = response.read()
                try:
                    return json.loads(raw)
                except ValueError:
                    self._fail(f"the reply is not JSON: {raw[:_BODY_QUOTE]!r}")
            except urllib.error.HTTPError as err:
                detail = _error_body(err)
                status = f"HTTP {err.code} {err.reason}" + (f": {detail}" if detail else "")
                if not (err.code == 429 or err.code >= 500):
                    self._fail(status)  # the request itself is wrong: retrying cannot help
                if attempt == self.max_retries:
                    self._fail(f"{status} (after {attempt + 1} attempts)")
                wait = _retry_after(err.headers.get("Retry-After"))
            except (urllib.error.URLError, OSError) as err:  # refused, reset, timed out
                reason = getattr(err, "reason", err)
                if attempt == self.max_retries:
                    self._fail(f"{type(reason).__name__}: {reason} (after {attempt + 1} attempts)")
                wait = None
            if wait is None:
                wait = self.backoff * 2 ** attempt * random.uniform(0.5, 1.5)
            with self._lock:
                self.stats.retries += 1
            time.sleep(wait)
        raise AssertionError("unreachable")

    def _fail(self, what: str):
        with self._lock:
            self.stats.failures += 1
        raise LanguageModelError(f"POST {self.url} failed: {what}")

    def _content(self, reply: Any) -> str:
        try:
            content = reply["choices"][0]["message"]["content"]
        except (KeyError, IndexError, TypeError):
            content = None
        if not isinstance(content, str):
            raise LanguageModelError(f"POST {self.url}: the reply has no "
                                     f"choices[0].message.content: {json.dumps(reply)[:_BODY_QUOTE]}")
        return content

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
        except (OSError, ValueError) as err:
            raise InputError(f"cache entry {path} cannot be read ({err}); remove it to make "
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


def _error_body(err: urllib.error.HTTPError) -> str:
    """The server's error message: ``error.message`` of a JSON body, else the text."""
    try:
        raw = err.read()
    except OSError:
        return ""
    try:
        parsed = json.loads(raw)
        msg = parsed["error"]["message"] if isinstance(parsed.get("error"), dict) \
            else parsed.get("error", parsed.get("detail", raw.decode("utf-8", "replace")))
    except (ValueError, AttributeError, KeyError, TypeError):
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
