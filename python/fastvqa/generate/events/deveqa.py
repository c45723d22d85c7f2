# SPDX-License-Identifier: Apache-2.0
"""DeVE-QA-style questions from event captions (docs/papers/deveqa.md §1.2,
§2.2), through any language model.

Pipeline (:func:`generate_deveqa`):

1. one prompt per caption (the paper's "n-shot" strategy), the paper's
   Table 10 prompt (:data:`QA_PROMPT`) with its limits: at most 3 pairs, a
   question of at most 22 words, an answer of at most 6;
2. every reply parsed and validated (:func:`parse_qa_reply`); a pair that
   fails is *rejected with a reason code* (:data:`REASONS`), never kept
   silently; a question asked twice about one video is rejected too;
3. the answer is the model's, the span is the source event's ``[start,
   end]`` (seconds), the duration the video's;
4. four distractors by :data:`fastvqa.retrieval.DEVEQA_RECIPE`:
   ``other_time`` = answers generated from the video's *other* events (they
   fit the video at another time). With an image-text ``encoder`` and the
   ``videos`` (the paper's way, §1.2 step 2) they are ranked by frames:
   :data:`OUTSIDE_FRAMES` frames are decoded from outside the question's
   segment (:class:`fastvqa.video.Outside`: evenly over its left and right
   parts, never a frame inside it), each candidate scores its highest
   cosine with one of them (:func:`rank_by_frames`; ties keep the
   candidates' order: events in order, pairs in reply order) and the best
   usable ones are taken (:func:`_top_usable`: those the options would
   accept, so the pool holds exactly the frames' choice); without an
   encoder, or for a video whose file is missing or unreadable or has no
   frame outside the segment, they are drawn at random from the same
   candidates (text only). Each record says which (``other_time_method``:
   ``"frames"`` or ``"text"``; ``"text"`` too where the video has no other
   event, so nothing to rank).
   ``segment_wrong`` = answers of the *other* questions about the same event
   (related to the segment, wrong for this question), ``similar_top10`` =
   answers of the 10 most similar questions by their first three words
   (:class:`fastvqa.retrieval.DistractorMiner`, ``question_key="first3"``);
   a short pool is filled from ``similar_top10`` then from any other answer
   of the set (``any``: fastvqa's fallback; each option's pool is recorded);
5. five options with the correct position balanced over the set
   (:func:`fastvqa.retrieval.build_options`).

Replies are cached on disk (:class:`ResponseCache`, one JSON line per
request, keyed by the sha256 of the request), so a rerun makes no model call.

The output (:meth:`DeVEQASet.records`) is the DeVi sample layout that
:func:`fastvqa.data.load_deveqa` reads (schema ``"devi"``).
"""

from __future__ import annotations

import json
import os
import re
import threading
from collections import Counter
from pathlib import Path
from typing import Any, Callable, NamedTuple, Optional, Sequence, Union

import numpy as np

from fastvqa import _checks
from fastvqa.llm.prompts import Prompt
from fastvqa.errors import InputError
from fastvqa.generate.events.captions import word_count
from fastvqa.parse._text import find_json

#: The paper's limits (Table 10).
MAX_PAIRS = 3
MAX_QUESTION_WORDS = 22
MAX_ANSWER_WORDS = 6
N_OPTIONS = 5
#: answers in the last-resort ``any`` pool (a seeded sample of the set)
_SPARE = 64
#: frames decoded outside a question's segment to rank its ``other_time``
#: candidates (fastvqa's choice: the paper does not give the number)
OUTSIDE_FRAMES = 16

#: Reason codes of rejected model output, with what they mean.
REASONS = {
    "malformed_json": "the reply holds no parseable JSON (nor the paper's 'Q: ... A: ...' lines)",
    "bad_structure": "the JSON is not a list of objects (nor an object holding one)",
    "missing_field": "a required field is missing, empty or not text",
    "over_word_limit": "a text is longer than its word limit",
    "too_many_pairs": "more pairs than the limit (the first ones are kept)",
    "span_outside_video": "a span the reply gives is not within [0, duration]",
    "bad_span": "a span the reply gives is not two numbers start <= end",
    "duplicate_question": "the same question (normalised) was already generated for the video",
    "answer_equals_distractor": "the correct answer equals (normalised) one of the distractors",
    "too_few_distractors": "the pools hold too few usable wrong answers for the options",
    "duplicate_entity": "the reply names the same entity twice",
}


class Rejection(NamedTuple):
    """One piece of model output (or one question) left out.

    ``stage``: where (``"generate"``, ``"options"``, ``"situation"``,
    ``"knowledge"``...); ``reason``: a code of :data:`REASONS`; ``video_id``;
    ``source``: what it was about (caption index, entity); ``detail``: a
    readable explanation; ``response``: the start of the model's reply
    (at most 300 characters; ``""`` when not from a reply)."""

    stage: str
    reason: str
    video_id: str
    source: str
    detail: str
    response: str = ""

    def to_dict(self) -> dict:
        return dict(self._asdict())


def rejection_counts(rejections: Sequence[Rejection]) -> dict:
    """reason -> count, most frequent first (ties by reason)."""
    c = Counter(r.reason for r in rejections)
    return dict(sorted(c.items(), key=lambda kv: (-kv[1], kv[0])))


# ----------------------------------------------------------------- the cache


class ResponseCache:
    """Model replies on disk, one JSON line per request:
    ``{"key": sha256, "request": {...}, "content": reply}``.

    The key is :func:`fastvqa.llm.client.request_key` of the request
    (the model's name and the messages; for a
    :class:`~fastvqa.llm.ChatCompletionsClient` its exact request body).
    The file is read when opened and appended to (never rewritten), one
    flushed line per new reply, so a killed run keeps the replies it got. A
    line that is no entry (one cut short by a kill) is skipped and counted
    in ``skipped_lines``: its request is simply made again (a newline is
    written first when the file does not end in one). ``path=None``: an
    in-memory cache.
    """

    def __init__(self, path: Union[None, str, Path] = None):
        self.path = None if path is None else Path(path)
        self._entries: dict = {}
        self._lock = threading.Lock()
        self._needs_newline = False
        self.skipped_lines = 0
        if self.path is not None and self.path.exists():
            if self.path.is_dir():
                raise InputError(f"cache {self.path} is a folder; expected a JSON Lines file")
            raw = self.path.read_bytes().decode("utf-8", "replace")
            lines = raw.split("\n")
            for k, line in enumerate(lines):
                if not line.strip():
                    continue
                try:
                    entry = json.loads(line)
                    ok = isinstance(entry, dict) and isinstance(entry.get("key"), str) \
                        and isinstance(entry.get("content"), str)
                except (ValueError, RecursionError):  # a damaged line is skipped, never fatal
                    ok = False
                if not ok:
                    self.skipped_lines += 1
                    continue
                self._entries[entry["key"]] = entry["content"]
            if self.skipped_lines and not self._entries:
                raise InputError(f"cache {self.path} holds no cache entry (is it another "
                                 "file?); give a new or an existing cache file")
            self._needs_newline = bool(raw) and not raw.endswith("\n")

    def __len__(self) -> int:
        return len(self._entries)

    def get(self, key: str) -> Optional[str]:
        """The cached reply for ``key``, or None."""
        return self._entries.get(key)

    def put(self, key: str, request: Any, content: str) -> None:
        """Stores a reply (appended to the file at once)."""
        with self._lock:
            if key in self._entries:
                return
            self._entries[key] = content
            if self.path is None:
                return
            line = json.dumps({"key": key, "request": request, "content": content},
                              ensure_ascii=False, sort_keys=True)
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with open(self.path, "a", encoding="utf-8") as f:
                if self._needs_newline:
                    f.write("\n")
                    self._needs_newline = False
                f.write(line + "\n")
                f.flush()
                os.fsync(f.fileno())


class CachedModel:
    """A language model behind a :class:`ResponseCache`.

    ``llm``: anything :func:`fastvqa.llm.protocols.as_language_model`
    accepts (a ``complete(messages)`` object or a function of the messages).
    ``calls``: replies asked of the model; ``hits``: replies read from the
    cache. ``name``: the model's name (part of every key)."""

    def __init__(self, llm: Any, cache: Optional[ResponseCache] = None):
        from fastvqa.llm.protocols import as_language_model

        self.llm = as_language_model(llm)
        self.cache = cache if cache is not None else ResponseCache(None)
        self.name = str(getattr(self.llm, "name", None) or type(self.llm).__name__)
        self.calls = 0
        self.hits = 0
        self._lock = threading.Lock()

    def request(self, messages: Sequence[dict]) -> dict:
        """What the cache key is computed from."""
        body = getattr(self.llm, "body", None)
        if callable(body):
            return body(messages)
        return {"model": self.name,
                "messages": [{"role": m["role"], "content": m["content"]} for m in messages]}

    def complete(self, messages: Sequence[dict]) -> str:
        from fastvqa.llm.client import request_key

        request = self.request(messages)
        key = request_key(request)
        cached = self.cache.get(key)
        if cached is not None:
            with self._lock:
                self.hits += 1
            return cached
        text = self.llm.complete(messages)
        with self._lock:
            self.calls += 1
        self.cache.put(key, request, text)
        return text


def cached_model(llm: Any, cache: Union[None, str, Path, ResponseCache] = None) -> CachedModel:
    """``llm`` behind a cache (a :class:`CachedModel` is returned as it is
    when no other cache is given)."""
    if isinstance(llm, CachedModel) and cache is None:
        return llm
    if not isinstance(cache, ResponseCache):
        cache = ResponseCache(cache)
    return CachedModel(llm.llm if isinstance(llm, CachedModel) else llm, cache)


# ---------------------------------------------------------------- the prompt

#: The paper's question-generation prompt (Table 10). Its "..." elisions are
#: the paper's; the reply format is fastvqa's (JSON, so replies can be
#: validated field by field).
QA_PROMPT = Prompt(
    name="deveqa_generate",
    system=(
        "You are a good question generator. I need your help in generating question-answer "
        "pairs pertaining to the visual event descriptions. Below are the examples: "
        "\u2022 Given description: An elderly man is playing the piano in front of a crowd. "
        "Good generated Question-Answer (QA) pairs can be: Q: What is the elderly man doing in "
        "front of a crowd? A: Playing the piano. Q: Why is a crowd in front of an elderly man? "
        "A: Watch him playing the piano. Q: How did the elderly man attract the crowd? "
        "A: Playing the piano. \u2022 Given description: A woman walks to the piano and briefly "
        "talks to the elderly man. Good QAs can be: Q: Why did the woman walk to the piano? "
        "A: Talks to the elderly man. Q: What does the woman do before talking to the elderly "
        "man? A: Walk to the piano. Q: What does the woman do after walking to the piano? "
        "A: Talks to the elderly man. Please generate up to {max_pairs} QA pairs for each "
        "description, and limit the generated questions to a maximal {max_question_words} "
        "words while the answers to a maximal {max_answer_words} words. I hope your questions "
        "feature different causal and temporal reasoning keywords such as 'why' and 'how', "
        "'before' and 'after'. Different questions should be diverse and be related to "
        "different aspects of the described events. Also, make sure the answer is correct "
        "according to the description. ... Please label each question in sequence."),
    user=("Here are the descriptions: {description}\n\n"
          "Reply with JSON only: a list of at most {max_pairs} objects "
          '{{"question": "...", "answer": "..."}}, in sequence.'),
    source="DeVE-QA paper (arXiv 2409.04388), Table 10, verbatim (limits as fields)",
    notes=("One description per prompt (the paper's n-shot strategy). The JSON reply format "
           "is fastvqa's; the paper's own 'Q: ... A: ...' lines are accepted too."),
)


def qa_messages(description: str, *, max_pairs: int = MAX_PAIRS,
                max_question_words: int = MAX_QUESTION_WORDS,
                max_answer_words: int = MAX_ANSWER_WORDS) -> list:
    """The two chat messages asking for the QA pairs of one description."""
    limits = dict(max_pairs=max_pairs, max_question_words=max_question_words,
                  max_answer_words=max_answer_words)
    return [{"role": "system", "content": QA_PROMPT.system.format(**limits)},
            {"role": "user", "content": QA_PROMPT.user.format(description=description,
                                                              **limits)}]


# ---------------------------------------------------------------- parsing

class QAPair(NamedTuple):
    """One validated pair from a reply; ``span`` is the reply's own span
    (seconds) when it gave one (it is only checked: the written span is the
    source event's)."""

    question: str
    answer: str
    span: Optional[tuple]


class QAReply(NamedTuple):
    """A parsed reply: the ``pairs`` kept, the ``problems`` (``(reason,
    detail)`` per pair, or for the whole reply) and ``how`` it was read
    (``"json"``, ``"qa_lines"`` or ``""``)."""

    pairs: list
    problems: list
    how: str


# The paper's "Q: ... A: ..." lines. A question marker ("Q:", "Q1.", "2) Q:")
# counts only where it leads its line; an answer marker ("A:", "A2.") ends the
# question wherever it falls, as the first reading of these replies did (a
# lazy regex, now a scan: that regex took time quadratic in a reply of many
# "Q:" lines or of long blank runs, and a reply is untrusted).
_Q_MARKER = re.compile(r"(?:\d+[.)]\s*)?Q\d*\s*[:.]")
_A_MARKER = re.compile(r"A\d*\s*[:.]")
_NOT_SPACE = re.compile(r"\S")


def _question_markers(text: str) -> list:
    """``(run_start, marker_end)`` of each question marker that leads its
    line: ``run_start`` is where the whitespace before it begins (the
    newline ending the previous line with text, or 0 at the start of the
    text), ``marker_end`` is just past its ``:``/``.``. Linear: the
    whitespace between lines and each line's text are scanned once."""
    found, n = [], len(text)
    pos, run_start = 0, 0
    while pos < n:
        m = _NOT_SPACE.search(text, pos)
        if m is None:
            break
        first = m.start()  # the first character of a line with text
        marker = _Q_MARKER.match(text, first)
        if marker is not None:
            found.append((run_start, marker.end()))
        newline = text.find("\n", first)
        if newline < 0:
            break
        run_start, pos = newline, newline + 1
    return found


def _qa_lines(text: str) -> list:
    """``[(question, answer)]`` (stripped) of a reply's ``Q: ... A: ...``
    lines: a question runs from its marker to the first answer marker after
    its first character (one with something after it), an answer to the next
    question marker that leads a line after its first character, or to the
    end. Linear: answer markers are searched for once, front to back."""
    markers = _question_markers(text)
    pairs, k, n = [], 0, len(text)
    found: list = [n + 1, None]  # the last search: from where, and its match

    def answer_marker(at: int):
        """The first answer marker starting at or after ``at`` (searches
        from a later point reuse the last one while it still lies ahead)."""
        if not (found[0] <= at and (found[1] is None or at <= found[1].start())):
            found[:] = [at, _A_MARKER.search(text, at)]
        return found[1]

    while k < len(markers):
        q_from = markers[k][1]
        m = _NOT_SPACE.search(text, q_from)
        q0 = m.start() if m else n
        a = answer_marker(q0 + 1) if q0 < n else None
        if a is not None and a.end() == n:
            a = None  # an answer marker with nothing after it answers nothing
        if a is None and q0 > q_from:  # the question may be the blank before "A:"
            a = _A_MARKER.match(text, q0)
            if a is not None and a.end() == n:
                a = None
        if a is None:
            k += 1  # this question has no answer; a later one may
            continue
        question = text[q_from:a.start()]
        m = _NOT_SPACE.search(text, a.end())
        first = m.start() if m else n
        k += 1
        while k < len(markers) and markers[k][0] <= first:
            k += 1
        end = markers[k][0] if k < len(markers) else n
        pairs.append((question.strip(), text[a.end():end].strip()))
    return pairs


def reply_json(text: str) -> tuple:
    """``(value, error)``: the JSON a reply holds (a fenced block, the whole
    text, or the first ``[...]``/``{...}`` in it), or ``(None, why)``
    (:func:`fastvqa.parse._text.find_json`)."""
    value, error = find_json(text, (list, dict))
    return value, (error or None)


def check_span(value: Any, duration: float) -> tuple:
    """``(span, None)`` for a valid ``[start, end]`` (seconds) inside
    ``[0, duration]``, else ``(None, (reason, detail))``."""
    ok = (isinstance(value, (list, tuple)) and len(value) == 2
          and all(isinstance(v, (int, float)) and not isinstance(v, bool)
                  and np.isfinite(v) for v in value))
    if not ok:
        return None, ("bad_span", f"span {value!r:.60} is not two finite numbers")
    s, e = float(value[0]), float(value[1])
    if s > e:
        return None, ("bad_span", f"span [{s:g}, {e:g}] ends before it starts")
    if s < 0 or e > duration:
        return None, ("span_outside_video", f"span [{s:g}, {e:g}] is not within "
                                            f"[0, {duration:g}]")
    return (s, e), None


def parse_qa_reply(text: str, duration: float, *, max_pairs: int = MAX_PAIRS,
                   max_question_words: int = MAX_QUESTION_WORDS,
                   max_answer_words: int = MAX_ANSWER_WORDS) -> QAReply:
    """The validated QA pairs of one reply.

    Read as JSON first (a list of ``{"question", "answer"}`` objects, or an
    object holding such a list under any key, or one such object; an
    optional ``"span": [start, end]`` in seconds is checked against
    ``[0, duration]``), else as the paper's ``Q: ... A: ...`` lines. Each
    pair failing a check is a problem with its reason: ``missing_field``,
    ``over_word_limit`` (question > ``max_question_words`` or answer >
    ``max_answer_words`` words), ``bad_span``, ``span_outside_video``;
    pairs past ``max_pairs`` are ``too_many_pairs``. A reply with nothing
    to read is one ``malformed_json`` (or ``bad_structure``) problem.
    """
    value, error = reply_json(text)
    how = "json"
    items: Optional[list] = None
    if value is None:
        found = [{"question": q, "answer": a} for q, a in _qa_lines(text)]
        if not found:
            return QAReply([], [("malformed_json", error)], "")
        items, how = found, "qa_lines"
    elif isinstance(value, list):
        items = value
    elif isinstance(value, dict):
        if "question" in value or "answer" in value:
            items = [value]
        else:
            lists = [v for v in value.values() if isinstance(v, list)]
            items = lists[0] if len(lists) == 1 else None
    if items is None:
        return QAReply([], [("bad_structure", f"a JSON {type(value).__name__} holding no "
                                              "list of pairs")], how)
    pairs, problems = [], []
    for k, item in enumerate(items):
        if not isinstance(item, dict):
            problems.append(("bad_structure", f"pair {k + 1} is a {type(item).__name__}, "
                                              "not an object"))
            continue
        q, a = item.get("question", item.get("q")), item.get("answer", item.get("a"))
        missing = [n for n, v in (("question", q), ("answer", a))
                   if not isinstance(v, str) or not v.strip()]
        if missing:
            problems.append(("missing_field", f"pair {k + 1}: no {' and no '.join(missing)}"))
            continue
        q, a = " ".join(q.split()), " ".join(a.split())
        if word_count(q) > max_question_words:
            problems.append(("over_word_limit", f"pair {k + 1}: question of "
                             f"{word_count(q)} words > {max_question_words}"))
            continue
        if word_count(a) > max_answer_words:
            problems.append(("over_word_limit", f"pair {k + 1}: answer of "
                             f"{word_count(a)} words > {max_answer_words}"))
            continue
        span = None
        if item.get("span") is not None:
            span, bad = check_span(item["span"], duration)
            if bad is not None:
                problems.append((bad[0], f"pair {k + 1}: {bad[1]}"))
                continue
        if len(pairs) >= max_pairs:
            problems.append(("too_many_pairs", f"pair {k + 1}: more than {max_pairs} pairs"))
            continue
        pairs.append(QAPair(q, a, span))
    return QAReply(pairs, problems, how)


# ------------------------------------------------------------- the pipeline

class DeVEQASet(NamedTuple):
    """What :func:`generate_deveqa` made.

    ``questions``: one dict per kept question (``qid, video_id, question,
    options {A..E}, answer`` (letter), ``gt_span [s, e]`` (seconds),
    ``duration``, ``captions``, ``source_caption``, ``event_index``,
    ``option_sources``, ``other_time_method``: ``"frames"`` or ``"text"``);
    ``rejections``: every :class:`Rejection`; ``calls`` / ``cache_hits``:
    model calls made / replies from the cache; ``events``: captions
    prompted; ``frame_fallbacks``: with an encoder, ``(video_id, reason)``
    of each video (or event) whose questions fell back to text-only
    ``other_time`` distractors (``()`` without an encoder)."""

    questions: list
    rejections: list
    calls: int
    cache_hits: int
    events: int
    frame_fallbacks: tuple = ()

    def counts(self) -> dict:
        return rejection_counts(self.rejections)

    def summary(self) -> str:
        parts = ", ".join(f"{r} {n}" for r, n in self.counts().items())
        line = (f"{len(self.questions)} questions from {self.events} captions; "
                f"{len(self.rejections)} rejected" + (f" ({parts})" if parts else "")
                + f"; {self.calls} model calls, {self.cache_hits} from the cache")
        framed = sum(q.get("other_time_method") == "frames" for q in self.questions)
        if framed or self.frame_fallbacks:
            line += (f"; other-time distractors by frames for {framed} questions, text "
                     f"only for {len(self.questions) - framed}")
            if self.frame_fallbacks:
                line += f" ({len(self.frame_fallbacks)} videos or events without frames)"
        return line


def _excerpt(text: str) -> str:
    return text[:300]


def _token_jaccard(a: str, b: str) -> float:
    from fastvqa.retrieval.distractors import normalize_option

    x, y = set(normalize_option(a).split()), set(normalize_option(b).split())
    if not x or not y:
        return 0.0
    return len(x & y) / len(x | y)


def options_problem(answer: str, distractors: Sequence[str]) -> Optional[str]:
    """Why an option set is not valid (the answer equals, normalised, one of
    the distractors, or two distractors are equal), or None."""
    from fastvqa.retrieval.distractors import normalize_option

    a = normalize_option(answer)
    d = [normalize_option(x) for x in distractors]
    if a in d:
        return f"the answer {answer!r} is also a distractor"
    if len(set(d)) != len(d):
        return "two distractors are the same"
    return None


def generate_deveqa(events: Sequence[Any], llm: Any, *, seed: int = 0,
                    cache: Union[None, str, Path, ResponseCache] = None,
                    max_pairs: int = MAX_PAIRS, max_question_words: int = MAX_QUESTION_WORDS,
                    max_answer_words: int = MAX_ANSWER_WORDS, n_options: int = N_OPTIONS,
                    similarity_threshold: float = 0.8,
                    workers: int = 1, progress: Optional[bool] = None,
                    on_event: Optional[Callable[[int], None]] = None,
                    encoder: Any = None, videos: Any = None,
                    outside_frames: int = OUTSIDE_FRAMES) -> DeVEQASet:
    """DeVE-QA-style questions from the ``events``
    (:class:`~fastvqa.generate.events.captions.Event`, e.g. those
    :func:`~fastvqa.generate.events.captions.filter_captions` kept).

    Args:
        events: the captions to prompt, one prompt each, in order.
        llm: a ``complete(messages)`` object or a function of the messages
            (a :class:`~fastvqa.llm.ChatCompletionsClient` for a server).
        seed: seeds the options (pool draws and correct positions); the
            same events, replies and seed give the same set.
        cache: a :class:`ResponseCache`, a JSON Lines path, or None (in memory).
        max_pairs, max_question_words, max_answer_words: the limits put in
            the prompt and enforced on the reply.
        n_options: options per question (2 .. 5).
        similarity_threshold: a candidate whose word overlap (Jaccard of the
            normalised words) with the answer or a chosen option reaches this
            is not used (near-paraphrases of the answer are not wrong).
        workers: model requests in flight at once (threads); replies are
            used in caption order, so the set does not depend on it.
        progress: a bar over the captions (None: on a terminal only).
        on_event: called with the number of captions done after each one.
        encoder: an image-text encoder (anything
            :func:`fastvqa.llm.as_encoder` accepts, e.g.
            :func:`fastvqa.llm.load_encoder`'s) to rank the ``other_time``
            candidates by frames outside each question's segment (module
            doc, step 4); None: text only.
        videos: with ``encoder``: the videos, a folder (:func:`video_files`)
            or a mapping video id -> file. A video it lacks, or whose file
            cannot be decoded, falls back to text only (listed in
            ``frame_fallbacks``).
        outside_frames: frames decoded outside each segment (>= 1).

    Returns:
        :class:`DeVEQASet`. Question order: events in order, pairs in reply
        order; qids ``"<video_id>_e<event>_q<pair>"``.

    >>> lm = lambda messages: '[{"question": "What is done?", "answer": "Cooking"}]'
    >>> from fastvqa.generate.events.captions import Event
    >>> result = generate_deveqa([Event("v", 0, "A man cooks.", 0.0, 5.0, 5.0)], lm)
    >>> [r.reason for r in result.rejections]  # one question: no wrong answer to draw
    ['too_few_distractors']
    """
    from fastvqa.retrieval import DEVEQA_RECIPE

    op = "generate_deveqa"
    seed = _checks.integer(seed, op, "seed", minimum=0)
    max_pairs = _checks.integer(max_pairs, op, "max_pairs", minimum=1)
    n_options = _checks.integer(n_options, op, "n_options", minimum=2)
    if n_options > 1 + DEVEQA_RECIPE.n_distractors:
        raise InputError(f"{op}: n_options must be <= {1 + DEVEQA_RECIPE.n_distractors}")
    frames = _frame_source(encoder, videos, outside_frames, op)  # refused before any call
    model = cached_model(llm, cache)
    events = list(events)
    calls0, hits0 = model.calls, model.hits
    parsed_limits = dict(max_pairs=max_pairs, max_question_words=max_question_words,
                         max_answer_words=max_answer_words)
    rejections: list = []
    generated: list = []  # (event position, pair index, QAPair)
    seen: dict = {}
    workers = _checks.integer(workers, op, "workers", minimum=1)

    def ask(ev) -> str:
        return model.complete(qa_messages(ev.text, max_pairs=max_pairs,
                                          max_question_words=max_question_words,
                                          max_answer_words=max_answer_words))

    pool = None
    if workers > 1 and len(events) > 1:
        from concurrent.futures import ThreadPoolExecutor

        pool = ThreadPoolExecutor(max_workers=workers)
    try:
        # Submitted all at once, collected in order: the replies feed the
        # set in caption order whatever finishes first.
        replies = (pool.map(ask, events) if pool is not None else map(ask, events))
        _collect(events, replies, parsed_limits, rejections, generated, seen, progress,
                 on_event)
    finally:
        if pool is not None:
            pool.shutdown(wait=True, cancel_futures=True)
    return _finish(events, generated, rejections, model, calls0, hits0, seed, n_options,
                   similarity_threshold, frames, progress)


def _collect(events, replies, limits, rejections, generated, seen, progress, on_event):
    """Parses and checks each reply (in caption order), filling ``rejections``
    and ``generated`` (``(event position, pair index, QAPair)``)."""
    from fastvqa._progress import Progress
    from fastvqa.retrieval.duplicates import normalize_question

    with Progress(len(events), progress is not False, desc="generating questions",
                  unit="caption", force=progress is True) as bar:
        for pos, (ev, reply) in enumerate(zip(events, replies)):
            parsed = parse_qa_reply(reply, ev.duration, **limits)
            for reason, detail in parsed.problems:
                rejections.append(Rejection("generate", reason, ev.video_id, str(ev.index),
                                            detail, _excerpt(reply)))
            for k, pair in enumerate(parsed.pairs):
                norm = normalize_question(pair.question)
                first = seen.get((ev.video_id, norm))
                if first is not None:
                    rejections.append(Rejection("generate", "duplicate_question", ev.video_id,
                                                str(ev.index), f"{pair.question!r} was already "
                                                f"asked about caption {first}",
                                                _excerpt(reply)))
                    continue
                seen[(ev.video_id, norm)] = ev.index
                generated.append((pos, k, pair))
            bar.update(1)
            if on_event is not None:
                on_event(pos + 1)


def _finish(events, generated, rejections, model, calls0, hits0, seed, n_options,
            similarity_threshold, frames=None, progress=None) -> DeVEQASet:
    """Distractors, options and the records of the kept pairs."""
    from fastvqa.retrieval import DEVEQA_RECIPE, DistractorMiner, build_options
    from fastvqa.retrieval.options import Recipe

    questions: list = []
    fallbacks: list = []
    if generated:
        qs = [p.question for _, _, p in generated]
        ans = [p.answer for _, _, p in generated]
        miner = DistractorMiner(qs, ans, encoder="tfidf", question_key="first3",
                                n_neighbours=10)
        similar = miner.mine(qs, ans, k=10, exclude_ids=list(range(len(qs))), progress=False)
        by_video: dict = {}
        for j, (pos, _, _) in enumerate(generated):
            by_video.setdefault(events[pos].video_id, []).append(j)
        # The last-resort pool: a seeded sample of the set's answers (bounded,
        # so that a large set does not make N x N pools).
        spare = np.random.default_rng(seed).permutation(len(generated))[:_SPARE]
        other_time = [[ans[m] for m in by_video[events[pos].video_id] if generated[m][0] != pos]
                      for pos, _, _ in generated]
        ranked = [None] * len(generated)
        if frames is not None:
            ranked = _rank_other_time(frames, events, generated, other_time, fallbacks, progress)
        # the frames' best usable candidates only: build_options draws a pool in random order
        n_other = min(dict(DEVEQA_RECIPE.steps)["other_time"], n_options - 1)
        pools = []
        for j, (pos, _, _) in enumerate(generated):
            ev = events[pos]
            mates = by_video[ev.video_id]
            pools.append({
                "other_time": (other_time[j] if ranked[j] is None else
                               _top_usable(ranked[j], ans[j], n_other, similarity_threshold)),
                "segment_wrong": [ans[m] for m in mates if generated[m][0] == pos and m != j],
                "similar_top10": similar[j],
                "any": [ans[m] for m in spare if events[generated[m][0]].video_id
                        != ev.video_id],
            })
        recipe = Recipe(DEVEQA_RECIPE.steps, fallback=("similar_top10", "any"))
        built = build_options(ans, pools, recipe, n_options=n_options, seed=seed,
                              similarity=_token_jaccard,
                              similarity_threshold=similarity_threshold, on_short="skip")
        for j in built.skipped:
            pos, _, pair = generated[j]
            ev = events[pos]
            rejections.append(Rejection("options", "too_few_distractors", ev.video_id,
                                        str(ev.index), f"{pair.question!r}: fewer than "
                                        f"{n_options - 1} usable wrong answers"))
        captions_of: dict = {}
        for ev in events:
            captions_of.setdefault(ev.video_id, []).append(
                {"text": ev.text, "span": [ev.start, ev.end], "level": "event"})
        letters = "ABCDEFGHIJ"
        for row, j in enumerate(built.items):
            pos, k, pair = generated[int(j)]
            ev = events[pos]
            opts, a = built.options[row], int(built.answer[row])
            problem = options_problem(opts[a], [o for i, o in enumerate(opts) if i != a])
            if problem is not None:
                rejections.append(Rejection("options", "answer_equals_distractor", ev.video_id,
                                            str(ev.index), f"{pair.question!r}: {problem}"))
                continue
            questions.append({
                "qid": f"{ev.video_id}_e{ev.index}_q{k}",
                "video_id": ev.video_id,
                "question": pair.question,
                "options": {letters[i]: o for i, o in enumerate(opts)},
                "answer": letters[a],
                "gt_span": [ev.start, ev.end],
                "duration": ev.duration,
                "captions": captions_of[ev.video_id],
                "source_caption": ev.text,
                "event_index": ev.index,
                "option_sources": built.sources[row],
                "other_time_method": "text" if ranked[int(j)] is None else "frames",
            })
    return DeVEQASet(questions, rejections, model.calls - calls0, model.hits - hits0,
                     len(events), tuple(fallbacks))


# ------------------------------------------ other-time distractors by frames

class _FrameSource(NamedTuple):
    """What ranks the ``other_time`` candidates: the encoder, video id ->
    file, frames per segment."""

    encoder: Any
    paths: dict
    n: int


def _frame_source(encoder: Any, videos: Any, n: Any, op: str) -> Optional[_FrameSource]:
    """The checked ``encoder`` / ``videos`` / ``outside_frames`` of
    :func:`generate_deveqa` (None without an encoder)."""
    if encoder is None:
        if videos is not None:
            raise InputError(f"{op}: videos are read only with an encoder (they rank the "
                             "other-time distractors by frames); give encoder= too")
        return None
    if videos is None:
        raise InputError(f"{op}: an encoder needs the videos to decode frames from (a folder "
                         "or a mapping video id -> file)")
    from fastvqa.llm.protocols import as_encoder

    n = _checks.integer(n, op, "outside_frames", minimum=1)
    return _FrameSource(as_encoder(encoder), video_files(videos), n)


def video_files(videos: Any) -> dict:
    """Video id -> file (:class:`~pathlib.Path`).

    ``videos``: a folder, searched recursively for video files
    (:func:`fastvqa.extract.engine.discover`: a file's id is its path below
    the folder without the suffix, and its bare name without the suffix too
    when no other file has that name, as ``fastvqa run`` finds videos), or
    a mapping video id -> path (taken as given: a missing file is found
    missing when it is used). A folder without video files, or a path that
    is no folder, is an :class:`~fastvqa.errors.InputError`.

    >>> {k: v.name for k, v in video_files({"v_a": "/data/v_a.mp4"}).items()}
    {'v_a': 'v_a.mp4'}
    """
    from collections.abc import Mapping

    if isinstance(videos, Mapping):
        return {str(k): Path(v) for k, v in videos.items()}
    if not isinstance(videos, (str, os.PathLike)) or not Path(videos).is_dir():
        raise InputError(f"videos {videos!r:.80}: not a folder; give the videos' folder or a "
                         "mapping video id -> file")
    from fastvqa.extract.engine import video_paths

    return {vid: Path(path) for vid, path in video_paths(videos).items()}


def rank_by_frames(frame_embeddings: Any, text_embeddings: Any) -> np.ndarray:
    """The order of ``M`` candidate texts, best first, by frames.

    ``frame_embeddings``: ``(N, D)``, ``text_embeddings``: ``(M, D)``, rows
    of norm 1 (an encoder's, :class:`fastvqa.llm.protocols.ImageTextEncoder`),
    so a dot product is a cosine. A candidate's score is its highest cosine
    with one of the frames (it fits *some* moment they show), computed in
    float64; equal scores keep the candidates' order (a stable sort), so the
    result never depends on anything but the inputs. ``N = 0``: every score
    is equal (the input order). Returns ``(M,)`` int64 indices.

    >>> f = np.array([[1.0, 0.0], [0.0, 1.0]])
    >>> t = np.array([[0.0, 1.0], [0.6, 0.8], [1.0, 0.0], [0.8, 0.6]])
    >>> rank_by_frames(f, t).tolist()
    [0, 2, 1, 3]
    """
    f = np.asarray(frame_embeddings, dtype=np.float64)
    t = np.asarray(text_embeddings, dtype=np.float64)
    if f.ndim != 2 or t.ndim != 2 or f.shape[1] != t.shape[1]:
        raise InputError(f"rank_by_frames: expected (N, D) frame and (M, D) text embeddings "
                         f"of one D, got shapes {f.shape} and {t.shape}")
    if len(f) == 0:
        return np.arange(len(t), dtype=np.int64)
    scores = (t @ f.T).max(axis=1)
    return np.argsort(-scores, kind="stable").astype(np.int64)


def _top_usable(ranked: Sequence[str], correct: str, k: int, threshold: float) -> list:
    """The first ``k`` of ``ranked`` that :func:`fastvqa.retrieval.build_options`
    would use as the first wrong options (not equal, normalised, to the
    answer or to one taken, and less similar than ``threshold``), so that
    the pool holds exactly the frames' choice."""
    from fastvqa.retrieval.distractors import normalize_option

    taken, norms, out = [correct], {normalize_option(correct)}, []
    for cand in ranked:
        if len(out) == k:
            break
        norm = normalize_option(cand)
        if norm in norms or any(_token_jaccard(cand, t) >= threshold for t in taken):
            continue
        out.append(cand)
        taken.append(cand)
        norms.add(norm)
    return out


def _outside_embeddings(source: _FrameSource, spans: dict, fallbacks: list,
                        progress: Optional[bool]) -> dict:
    """``(video_id, start, end)`` -> ``(n, D)`` embeddings of the frames
    outside that segment, for ``spans`` (video id -> ``{(start, end):
    caption index}``); what cannot be decoded is listed in ``fallbacks``."""
    from fastvqa._progress import Progress

    out: dict = {}
    with Progress(len(spans), progress is not False, desc="frames outside the segments",
                  unit="video", force=progress is True) as bar:
        for vid, segments in spans.items():
            _embed_video(source, vid, segments, out, fallbacks)
            bar.update(1)
    return out


def _embed_video(source: _FrameSource, vid: str, segments: dict, out: dict,
                 fallbacks: list) -> None:
    """One video's part of :func:`_outside_embeddings`: one decoder, one
    read and one ``encode_images`` call per segment."""
    from fastvqa.llm.protocols import embeddings
    from fastvqa.video import Outside, VideoDecoder
    from fastvqa.video.errors import VideoError

    path = source.paths.get(vid)
    if path is None or not path.is_file():
        fallbacks.append((vid, "no video file for it in the videos" if path is None
                          else f"{path}: no such file"))
        return
    try:
        decoder = VideoDecoder(path)
    except VideoError as err:
        fallbacks.append((vid, str(err)))
        return
    with decoder:
        for (start, end), index in segments.items():
            try:  # no frame outside (a caption spanning the video), or a bad frame
                pixels = np.asarray(decoder.read(Outside((start, end), source.n)).data)
            except InputError as err:
                fallbacks.append((vid, f"caption {index}: {err}"))
                continue
            out[(vid, start, end)] = embeddings(source.encoder.encode_images(pixels),
                                                len(pixels), "encoder.encode_images")


def _rank_other_time(source: _FrameSource, events, generated, other_time: list,
                     fallbacks: list, progress: Optional[bool]) -> list:
    """Per generated pair: its ``other_time`` candidates ranked by the frames
    outside its segment (:func:`rank_by_frames`), or None (text only: no
    candidate to rank, or no frames)."""
    from fastvqa.llm.protocols import embeddings

    spans: dict = {}
    for j, (pos, _, _) in enumerate(generated):
        ev = events[pos]
        if other_time[j]:
            spans.setdefault(ev.video_id, {}).setdefault((ev.start, ev.end), ev.index)
    frames = _outside_embeddings(source, spans, fallbacks, progress)
    keys = [(events[pos].video_id, events[pos].start, events[pos].end)
            for pos, _, _ in generated]
    framed = [j for j, key in enumerate(keys) if key in frames and other_time[j]]
    texts = list(dict.fromkeys(c for j in framed for c in other_time[j]))
    rows = {t: i for i, t in enumerate(texts)}
    emb = (embeddings(source.encoder.encode_texts(texts), len(texts), "encoder.encode_texts")
           if texts else np.zeros((0, 0), np.float32))
    ranked: list = [None] * len(generated)
    for j in framed:
        cands = other_time[j]
        order = rank_by_frames(frames[keys[j]], emb[[rows[c] for c in cands]])
        ranked[j] = [cands[k] for k in order]
    return ranked


def frame_retrieval_options(encoder: Optional[str], videos: Any) -> dict:
    """:func:`generate_deveqa`'s ``encoder`` and ``videos`` from ``fastvqa
    generate events``' ``--encoder SPEC`` (:func:`fastvqa.llm.load_encoder`'s
    grammar, as ``fastvqa run devi --encoder``: ``open_clip:ARCH@CHECKPOINT``,
    ``open_clip:ARCH``, ``hf:FOLDER``) and ``--videos DIR``: ``{}`` when
    neither is given; a :class:`~fastvqa.errors.CommandError` when one comes
    without the other or DIR is not a folder. The encoder is loaded here,
    before any model call.

    >>> frame_retrieval_options(None, None)
    {}
    """
    from fastvqa.errors import CommandError

    if encoder is None and videos is None:
        return {}
    if encoder is None:
        raise CommandError("--videos is read only with --encoder SPEC (the frames rank the "
                           "other-time distractors); give --encoder too, or leave --videos out")
    if videos is None:
        raise CommandError("--encoder needs --videos DIR, the videos to decode frames from")
    if not Path(videos).is_dir():
        raise CommandError(f"--videos {videos}: not a folder"
                           + ("" if Path(videos).exists() else " (no such path)"))
    from fastvqa.llm.encoders import load_encoder

    return {"encoder": load_encoder(encoder), "videos": video_files(videos)}


def write_records(records: Sequence[dict], path: Union[str, Path], what: str = "--out", *,
                  jsonl: Optional[bool] = None) -> Path:
    """Writes ``records`` as JSON Lines (``jsonl``; None: when the name ends
    in ``.jsonl``) or one JSON list, as a new file (never overwriting:
    :func:`fastvqa._outputs.write_new`)."""
    from fastvqa._outputs import write_new

    path = Path(path)
    if jsonl is None:
        jsonl = path.suffix.lower() == ".jsonl"
    if jsonl:
        text = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records)
    else:
        text = json.dumps(list(records), ensure_ascii=False, indent=1) + "\n"
    return write_new(path, text, what)
