# SPDX-License-Identifier: Apache-2.0
"""DeVE-QA's caption filter (docs/papers/deveqa.md §2.1) over
ActivityNet-Captions-style files.

The paper keeps captions that are "more than 10 words" with "no pronouns",
from videos whose captions "cover at least 95% of the video", then samples
at random. It leaves open whether coverage is the union or the sum of the
segment lengths (both are offered, union by default) and which pronouns
count (:data:`PRONOUNS`, fastvqa's list: English personal, possessive and
reflexive pronouns; a caption holding one refers to someone another caption
introduced, so it cannot stand alone as an event).

Every caption left out is counted under exactly one reason, the first that
applies in this order: ``empty_span`` (its span, after the loader's repair,
has no length), ``low_coverage`` (its video is covered less than
``min_coverage``), ``too_short``, ``pronoun``, ``subsampled``.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, NamedTuple, Optional, Sequence, Union

import numpy as np

from fastvqa import _checks
from fastvqa.errors import InputError

#: Words that make a caption depend on another (matched whole-word,
#: case-insensitively). fastvqa's list; the paper only says "no pronouns".
PRONOUNS = frozenset("""
i me my mine myself we us our ours ourselves you your yours yourself yourselves
he him his himself she her hers herself it its itself they them their theirs themselves
""".split())

#: Reasons a caption is left out, in the order they are tested.
DROP_REASONS = ("empty_span", "low_coverage", "too_short", "pronoun", "subsampled")

_WORD = re.compile(r"[A-Za-z']+")


class Event(NamedTuple):
    """One timed caption: ``start``/``end`` in seconds on the video's
    timeline (``0 <= start < end <= duration``), ``index`` its position in
    the video's caption list (0-based, as in the file)."""

    video_id: str
    index: int
    text: str
    start: float
    end: float
    duration: float


class DroppedCaption(NamedTuple):
    """A caption the filter left out: ``reason`` (one of :data:`DROP_REASONS`)
    and a readable ``detail``."""

    video_id: str
    index: int
    reason: str
    detail: str


class FilteredCaptions(NamedTuple):
    """The filter's result: ``kept`` events in file order (videos in file
    order, captions by index), ``dropped`` captions in file order, ``counts``
    reason -> number dropped (every reason present, 0 included), ``total``
    captions read and ``coverage`` video id -> its coverage."""

    kept: tuple
    dropped: tuple
    counts: dict
    total: int
    coverage: dict

    def summary(self) -> str:
        """``"kept K of N captions (dropped: too_short 3, pronoun 2 ...)"``."""
        parts = ", ".join(f"{r} {n}" for r, n in self.counts.items() if n)
        return (f"kept {len(self.kept)} of {self.total} captions"
                + (f" (dropped: {parts})" if parts else ""))


def word_count(text: str) -> int:
    """Whitespace-separated words of ``text``."""
    return len(text.split())


def pronouns_in(text: str, pronouns: frozenset = PRONOUNS) -> list:
    """The pronouns of ``text`` (lower-cased, in order, repeats kept)."""
    return [w for w in (m.group(0).lower() for m in _WORD.finditer(text)) if w in pronouns]


def coverage(spans: Any, duration: float, mode: str = "union") -> float:
    """How much of a ``duration``-second video the ``(K, 2)`` spans
    (seconds, ``[start, end]``) cover, as a fraction of ``duration``.

    ``mode="union"``: the length of the union of the spans (overlaps counted
    once; at most 1). ``mode="sum"``: the sum of the span lengths (may exceed
    1). Spans are clipped to ``[0, duration]`` first; K = 0 gives 0.
    """
    mode = _checks.choice(mode, "coverage", "mode", ("union", "sum"))
    duration = _checks.real(duration, "coverage", "duration", finite=True, positive=True)
    a = np.asarray(spans, dtype=np.float64).reshape(-1, 2)
    a = np.clip(a, 0.0, duration)
    a = a[a[:, 1] > a[:, 0]]
    if a.size == 0:
        return 0.0
    if mode == "sum":
        return float((a[:, 1] - a[:, 0]).sum() / duration)
    from fastvqa.ragged import union_length

    return float(union_length(a) / duration)


def events_from_records(records: Sequence[Any]) -> list:
    """:class:`Event` s from :func:`fastvqa.data.load_activitynet_captions`
    records (``question`` = the sentence, ``spans[0]`` its span,
    ``extra["sentence_index"]``), in the records' order."""
    out = []
    for r in records:
        span = np.asarray(r.spans, dtype=np.float64).reshape(-1, 2)
        if span.shape[0] != 1 or r.duration is None:
            raise InputError(f"caption {r.video_id}/{r.question_id}: expected one span and a "
                             "duration")
        index = int(r.extra.get("sentence_index", r.question_id))
        out.append(Event(str(r.video_id), index, r.question, float(span[0, 0]),
                         float(span[0, 1]), float(r.duration)))
    return out


def load_events(path: Union[str, Path]) -> list:
    """Every caption of an ActivityNet-Captions-style JSON file as an
    :class:`Event` (timestamps repaired as the loader's ``"repair"`` policy
    does: swapped when reversed, clipped into the video)."""
    from fastvqa.data import load_activitynet_captions

    events = events_from_records(load_activitynet_captions(path, policy="repair"))
    for ev in events:
        for what, text in (("video id", ev.video_id), ("caption", ev.text)):
            if _has_lone_surrogate(text):
                raise InputError(f"{path}: video {ev.video_id!r:.80} caption {ev.index}: the "
                                 f"{what} holds a lone surrogate escape (such as \\ud800), "
                                 "which is not a character and cannot be sent or written; "
                                 "fix or remove it")
    return events


def _has_lone_surrogate(text: str) -> bool:
    """``text`` holds a code point U+D800..U+DFFF (JSON lets ``"\\ud800"``
    through; UTF-8 cannot encode it)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def filter_captions(events: Sequence[Event], *, min_words: int = 11,
                    pronouns: Optional[frozenset] = PRONOUNS, min_coverage: float = 0.95,
                    coverage_mode: str = "union", max_captions: Optional[int] = None,
                    seed: int = 0) -> FilteredCaptions:
    """DeVE-QA's caption filter.

    Args:
        events: every caption of the source (:func:`load_events`).
        min_words: a caption needs at least this many words (default 11: the
            paper's "more than 10 words").
        pronouns: a caption holding any of these words is left out
            (:data:`PRONOUNS`; None or empty: no pronoun rule).
        min_coverage: a video's captions (all of them, before the other
            rules) must cover at least this fraction of it (the paper: 0.95;
            0 keeps every video).
        coverage_mode: ``"union"`` or ``"sum"`` (:func:`coverage`).
        max_captions: keep at most this many of the captions that pass,
            drawn uniformly without replacement (seeded by ``seed``), kept
            in file order; None keeps all.
        seed: seeds the subsampling (``numpy.random.default_rng``).

    Returns:
        :class:`FilteredCaptions`; each left-out caption carries the first
        reason (in :data:`DROP_REASONS` order) that applies.
    """
    op = "filter_captions"
    min_words = _checks.integer(min_words, op, "min_words", minimum=0)
    min_coverage = _checks.real(min_coverage, op, "min_coverage", finite=True, minimum=0)
    coverage_mode = _checks.choice(coverage_mode, op, "coverage_mode", ("union", "sum"))
    max_captions = _checks.optional_integer(max_captions, op, "max_captions", minimum=0)
    seed = _checks.integer(seed, op, "seed", minimum=0)
    pronouns = frozenset(pronouns or ())
    events = list(events)
    spans_of: dict = {}
    durations: dict = {}
    for e in events:
        spans_of.setdefault(e.video_id, []).append((e.start, e.end))
        durations[e.video_id] = e.duration
    cover = {v: coverage(s, durations[v], coverage_mode) for v, s in spans_of.items()}
    passed, dropped = [], []
    for pos, e in enumerate(events):
        reason = detail = None
        found = pronouns_in(e.text, pronouns) if pronouns else []
        if not e.end > e.start:
            reason, detail = "empty_span", f"span [{e.start:g}, {e.end:g}] has no length"
        elif cover[e.video_id] < min_coverage:
            reason, detail = ("low_coverage", f"the video's captions cover "
                              f"{cover[e.video_id]:.3f} ({coverage_mode}) < {min_coverage:g}")
        elif word_count(e.text) < min_words:
            reason, detail = "too_short", f"{word_count(e.text)} words < {min_words}"
        elif found:
            reason, detail = "pronoun", f"pronoun(s) {', '.join(dict.fromkeys(found))}"
        if reason is None:
            passed.append(pos)
        else:
            dropped.append((pos, DroppedCaption(e.video_id, e.index, reason, detail)))
    if max_captions is not None and len(passed) > max_captions:
        rng = np.random.default_rng(seed)
        chosen = set(int(i) for i in rng.choice(len(passed), size=max_captions, replace=False))
        for j, pos in enumerate(passed):
            if j not in chosen:
                e = events[pos]
                dropped.append((pos, DroppedCaption(e.video_id, e.index, "subsampled",
                                                    f"not among the {max_captions} sampled")))
        passed = [pos for j, pos in enumerate(passed) if j in chosen]
    dropped.sort(key=lambda t: t[0])
    counts = {r: 0 for r in DROP_REASONS}
    for _, d in dropped:
        counts[d.reason] += 1
    return FilteredCaptions(tuple(events[p] for p in passed), tuple(d for _, d in dropped),
                            counts, len(events), cover)
