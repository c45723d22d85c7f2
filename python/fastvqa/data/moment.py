# SPDX-License-Identifier: Apache-2.0
"""Moment-retrieval files: QVHighlights (ground truth and submissions) and
ActivityNet Captions.

Formats (docs/anchors/eval.md §5.1, §5.2):

- QVHighlights ground truth, JSON Lines (``highlight_{train,val}_release.jsonl``,
  ``highlight_test_with_gt.jsonl``): one object per query, ``{"qid": int,
  "query": str, "duration": seconds, "vid": str, "relevant_windows": [[start,
  end], ...] (seconds), "relevant_clip_ids": [...], "saliency_scores":
  [[a, b, c], ...]}``. The test release without answers has no
  ``relevant_windows``.
- QVHighlights submission, JSON Lines (``hl_{val,test}_submission.jsonl``):
  ``{"qid", "query", "vid", "pred_relevant_windows": [[start, end, score],
  ...], "pred_saliency_scores": [...]}``.
- ActivityNet Captions (``train.json``, ``val_1.json``, ``val_2.json``): one
  JSON object ``{video_id: {"duration": seconds, "timestamps": [[start, end],
  ...], "sentences": [str, ...]}}``, one timestamp per sentence.

Both QVHighlights readers also accept a single JSON array of the same objects
(what ``fastvqa baseline qvhighlights ...`` writes).
"""

from __future__ import annotations

import logging
import math
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator, Literal, Optional, Union

import numpy as np

from fastvqa.data.errors import DataFormatError
from fastvqa.data.io import first_char, iter_json_lines, split_file, stream_json
from fastvqa.data.record import QARecord

PathLike = Union[str, Path]

_log = logging.getLogger("fastvqa.data")

ACTIVITYNET_POLICIES = ("repair", "2dtan", "strict")


# ----------------------------------------------------------------------------
# Small readers
# ----------------------------------------------------------------------------


@contextmanager
def _json_objects(path: Path) -> Iterator[Iterator[tuple[str, Any]]]:
    """``(where, object)`` for each record of a JSON Lines file, or of a file
    holding one JSON array, both streamed. ``where`` is ``"line N"`` or
    ``"index N"``."""
    first = first_char(path)
    if not first:
        raise DataFormatError(path, "the file is empty")
    if first == "[":
        with stream_json(path) as doc:
            if doc.kind is not list:  # pragma: no cover (first_char saw "[")
                raise DataFormatError(path, "expected a JSON array of objects or JSON Lines")
            yield ((f"index {i}", obj) for i, obj in doc)
        return
    yield ((f"line {lineno}", obj) for lineno, obj in iter_json_lines(path))


def _is_number(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def _field(path: Path, obj: Any, where: str, name: str) -> Any:
    if not isinstance(obj, dict):
        raise DataFormatError(path, f"expected a JSON object, got {type(obj).__name__}",
                              record=where)
    if name not in obj:
        raise DataFormatError(path, "missing", record=where, field=name)
    return obj[name]


def _qid(path: Path, obj: dict, where: str) -> Union[int, str]:
    qid = _field(path, obj, where, "qid")
    if isinstance(qid, bool) or not isinstance(qid, (int, str)):
        raise DataFormatError(path, f"expected an integer or a string, got {qid!r}",
                              record=where, field="qid")
    return qid


def _text(path: Path, obj: dict, where: str, name: str) -> str:
    value = _field(path, obj, where, name)
    if not isinstance(value, str):
        raise DataFormatError(path, f"expected a string, got {value!r}", record=where, field=name)
    return value


def _windows(path: Path, value: Any, where: str, name: str, width: int,
             allow_empty: bool, allow_reversed: bool = False) -> np.ndarray:
    """A list of ``[start, end]`` (``width`` 2) or ``[start, end, score]``
    (``width`` 3) windows as a ``(n, width)`` float64 array; finite numbers,
    ``start <= end`` unless ``allow_reversed``."""
    shape = "[start, end]" if width == 2 else "[start, end, score]"
    if not isinstance(value, list):
        raise DataFormatError(path, f"expected a list of {shape} windows, got {value!r}",
                              record=where, field=name)
    if not value and not allow_empty:
        raise DataFormatError(path, "no windows (the evaluation needs at least one)",
                              record=where, field=name)
    for i, w in enumerate(value):
        if (not isinstance(w, list) or len(w) != width
                or not all(_is_number(v) and math.isfinite(v) for v in w)):
            raise DataFormatError(path, f"window {i}: expected {shape} with finite numbers, "
                                  f"got {w!r}", record=where, field=name)
        if w[1] < w[0] and not allow_reversed:
            raise DataFormatError(path, f"window {i}: end < start in {w!r}", record=where,
                                  field=name)
    return np.asarray(value, dtype=np.float64).reshape(-1, width)


# ----------------------------------------------------------------------------
# QVHighlights
# ----------------------------------------------------------------------------


def load_qvhighlights(path: PathLike, *, split: str = "val") -> list[QARecord]:
    """Loads a QVHighlights ground-truth JSON Lines file.

    ``path`` is the file, or the folder holding it as released (``data/``):
    ``highlight_<split>_release.jsonl`` (else ``<split>.jsonl``) in it, with
    ``split`` ``"train"``, ``"val"`` or ``"test"`` (ignored for a file).

    Returns:
        One :class:`QARecord` per line, in file order: ``video_id`` = ``vid``,
        ``question_id`` = ``str(qid)``, ``question`` = ``query``, ``spans`` =
        ``relevant_windows`` as ``(K, 2)`` seconds (continuous ends; K = 0
        where the field is absent, as in the answer-less test release),
        ``duration`` = ``duration`` (seconds). ``extra`` keeps every other
        field as it was: ``qid`` (its original int/str type),
        ``relevant_clip_ids``, ``saliency_scores``, and anything else.

    Raises:
        DataFormatError: invalid JSON, a line that is not an object, missing
            ``qid``/``query``/``vid``/``duration``, wrong types, windows that
            are not ``[start, end]`` finite numbers with start <= end, a
            duplicated qid. The message names the file, the line and field.
        FileNotFoundError: the file does not exist; a folder without the
            split's file.

    >>> import json, tempfile
    >>> line = {"qid": 7, "query": "a dog runs", "duration": 150, "vid": "abc_60_210",
    ...         "relevant_windows": [[10, 24]]}
    >>> with tempfile.TemporaryDirectory() as d:
    ...     _ = Path(d, "val.jsonl").write_text(json.dumps(line) + "\\n")
    ...     (r,) = load_qvhighlights(d, split="val")
    >>> r.key, r.question, r.spans, r.duration
    ('abc_60_210_7', 'a dog runs', array([[10., 24.]]), 150.0)
    """
    path = split_file(path, [f"highlight_{split}_release.jsonl", f"{split}.jsonl"],
                      split=split, what="QVHighlights annotation file")
    records: list[QARecord] = []
    seen: dict[str, str] = {}
    with _json_objects(path) as objects:
        for where, obj in objects:
            qid = _qid(path, obj, where)
            where_q = f"{where} (qid {qid!r})"
            key = str(qid)
            if key in seen:
                raise DataFormatError(path, f"qid {qid!r} already appeared at {seen[key]}",
                                      record=where, field="qid")
            seen[key] = where
            query = _text(path, obj, where_q, "query")
            vid = _text(path, obj, where_q, "vid")
            duration = _field(path, obj, where_q, "duration")
            if not _is_number(duration) or not math.isfinite(duration) or duration <= 0:
                raise DataFormatError(path, "expected a positive number of seconds, got "
                                      f"{duration!r}", record=where_q, field="duration")
            if "relevant_windows" in obj:
                spans = _windows(path, obj["relevant_windows"], where_q, "relevant_windows", 2,
                                 allow_empty=True)
            else:
                spans = np.zeros((0, 2), dtype=np.float64)
            extra = {k: v for k, v in obj.items()
                     if k not in ("query", "vid", "duration", "relevant_windows")}
            records.append(QARecord(video_id=vid, question_id=key, question=query, spans=spans,
                                    duration=float(duration), extra=extra))
    return records


def load_qvhighlights_submission(path: PathLike, *, allow_reversed: bool = False
                                 ) -> dict[str, np.ndarray]:
    """Reads a QVHighlights submission (``pred_relevant_windows``).

    ``allow_reversed`` keeps windows with end < start (the official
    evaluation scores them on the raw numbers) instead of refusing the file.

    Returns:
        ``{str(qid): (n, 3) float64 [start, end, score] windows}`` in file
        order, windows in file order (the official evaluation truncates to
        the first 10 *before* sorting by score and takes the first for R1,
        so the order is kept exactly). Other fields (``pred_saliency_scores``,
        ``vid``, ``query``) are not read. Feeds
        :func:`fastvqa.metrics.moment_retrieval`.

    Raises:
        DataFormatError: invalid JSON, missing ``qid`` or
            ``pred_relevant_windows``, an empty window list (the official R1
            fails on it), windows that are not three finite numbers with
            start <= end, a duplicated qid.
        FileNotFoundError: the file does not exist.

    >>> import json, tempfile
    >>> line = {"qid": 7, "pred_relevant_windows": [[8, 20, 0.9], [30, 40, 0.5]]}
    >>> with tempfile.TemporaryDirectory() as d:
    ...     _ = Path(d, "sub.jsonl").write_text(json.dumps(line) + "\\n")
    ...     print(load_qvhighlights_submission(Path(d, "sub.jsonl")))
    {'7': array([[ 8. , 20. ,  0.9],
           [30. , 40. ,  0.5]])}
    """
    path = Path(path)
    out: dict[str, np.ndarray] = {}
    seen: dict[str, str] = {}
    with _json_objects(path) as objects:
        for where, obj in objects:
            qid = _qid(path, obj, where)
            key = str(qid)
            if key in seen:
                raise DataFormatError(path, f"qid {qid!r} already appeared at {seen[key]}",
                                      record=where, field="qid")
            seen[key] = where
            windows = _field(path, obj, f"{where} (qid {qid!r})", "pred_relevant_windows")
            out[key] = _windows(path, windows, f"{where} (qid {qid!r})", "pred_relevant_windows", 3,
                                allow_empty=False, allow_reversed=allow_reversed)
    return out


def load_qvhighlights_saliency(path: PathLike) -> dict[str, np.ndarray]:
    """The ``pred_saliency_scores`` of a QVHighlights submission: ``{str(qid):
    (n,) float64}`` (one score per 2-s clip) for the entries that have the
    field, in file order; ``{}`` when none has it. Feeds
    :func:`fastvqa.metrics.highlight_detection`.

    Raises:
        DataFormatError: invalid JSON, a missing ``qid``, scores that are not
            a non-empty list of finite numbers.
        FileNotFoundError: the file does not exist.

    >>> import json, tempfile
    >>> lines = [{"qid": 7, "pred_saliency_scores": [0.1, 0.7]}, {"qid": 8}]
    >>> with tempfile.TemporaryDirectory() as d:
    ...     _ = Path(d, "sub.jsonl").write_text("\\n".join(map(json.dumps, lines)))
    ...     print(load_qvhighlights_saliency(Path(d, "sub.jsonl")))
    {'7': array([0.1, 0.7])}
    """
    path = Path(path)
    out: dict[str, np.ndarray] = {}
    with _json_objects(path) as objects:
        for where, obj in objects:
            qid = _qid(path, obj, where)
            if "pred_saliency_scores" not in obj:
                continue
            scores = obj["pred_saliency_scores"]
            if (not isinstance(scores, list) or not scores
                    or not all(_is_number(v) and math.isfinite(v) for v in scores)):
                raise DataFormatError(path, "expected a non-empty list of finite numbers (one "
                                      "per 2-s clip)", record=f"{where} (qid {qid!r})",
                                      field="pred_saliency_scores")
            out[str(qid)] = np.asarray(scores, dtype=np.float64)
    return out


# ----------------------------------------------------------------------------
# ActivityNet Captions
# ----------------------------------------------------------------------------


@dataclass(frozen=True)
class TimestampRepair:
    """One change :func:`load_activitynet_captions` made to a timestamp.

    Attributes:
        video_id: the video key.
        index: the sentence's index within the video.
        action: ``"swapped"``, ``"clipped_start"``, ``"clipped_end"`` or
            ``"dropped"``.
        before: the timestamp as the file has it.
        after: the timestamp kept (None when dropped).
        reason: a readable explanation.

    >>> r = TimestampRepair("v_x", 1, "clipped_end", (18.0, 25.0), (18.0, 20.0),
    ...                     "end 25 > duration 20: set to duration")
    >>> r.action, r.after
    ('clipped_end', (18.0, 20.0))
    """

    video_id: str
    index: int
    action: str
    before: tuple[float, float]
    after: Optional[tuple[float, float]]
    reason: str


class RepairedRecords(list):
    """A ``list[QARecord]`` that also carries ``repairs``: the
    :class:`TimestampRepair` entries made while loading, in file order.

    >>> records = RepairedRecords([QARecord("v_x", "0")])
    >>> len(records), records.repairs
    (1, [])
    """

    def __init__(self, records=(), repairs=()):
        super().__init__(records)
        self.repairs: list[TimestampRepair] = list(repairs)


def _repair(video_id: str, index: int, s: float, e: float, duration: float, policy: str
            ) -> tuple[Optional[tuple[float, float]], list[TimestampRepair]]:
    """Applies ``policy`` to one timestamp; returns the kept span (or None)
    and the repairs made."""
    before = (s, e)
    notes: list[tuple[str, str]] = []
    if policy == "repair":
        if s > e:
            s, e = e, s
            notes.append(("swapped", "start > end: swapped"))
        if s < 0.0:
            notes.append(("clipped_start", f"start {s:g} < 0: set to 0"))
            s = 0.0
        if s > duration:
            notes.append(("clipped_start", f"start {s:g} > duration {duration:g}: set to duration"))
            s = duration
        if e < 0.0:
            notes.append(("clipped_end", f"end {e:g} < 0: set to 0"))
            e = 0.0
        if e > duration:
            notes.append(("clipped_end", f"end {e:g} > duration {duration:g}: set to duration"))
            e = duration
        kept: Optional[tuple[float, float]] = (s, e)
    else:  # "2dtan": clip to [0, duration], drop what is then empty or reversed
        if s < 0.0:
            notes.append(("clipped_start", f"start {s:g} < 0: set to 0"))
            s = 0.0
        if e > duration:
            notes.append(("clipped_end", f"end {e:g} > duration {duration:g}: set to duration"))
            e = duration
        kept = (s, e)
        if not s < e:
            notes.append(("dropped", f"start {s:g} >= end {e:g} after clipping: dropped"))
            kept = None
    repairs = [TimestampRepair(video_id, index, action, before,
                               kept if action != "dropped" else None, reason)
               for action, reason in notes]
    return kept, repairs


def load_activitynet_captions(path: PathLike, *,
                              policy: Literal["repair", "2dtan", "strict"] = "repair",
                              split: str = "val_1") -> RepairedRecords:
    """Loads an ActivityNet Captions JSON file, one record per sentence.

    Args:
        path: ``train.json``, ``val_1.json`` or ``val_2.json`` (any file of
            the format ``{video_id: {"duration", "timestamps", "sentences"}}``),
            or the folder holding them as released, read as
            ``<path>/<split>.json`` (``split``: ``"train"``, ``"val_1"`` or
            ``"val_2"``; ignored for a file).
        policy: what to do with timestamps outside ``0 <= start <= end <=
            duration`` (the released files have some):

            - ``"repair"`` (default): swap start and end when start > end,
              then clip both into ``[0, duration]``. Every sentence is kept;
              a span may become zero-length (e.g. one lying wholly after the
              end of the video).
            - ``"2dtan"``: 2D-TAN's loader: clip start up to 0 and end down to
              the duration, and drop the sentence when start >= end after
              that (reversed and zero-length annotations are dropped, not
              swapped).
            - ``"strict"``: raise :class:`DataFormatError` on the first such
              timestamp.

            Every change is reported: in ``records.repairs`` (a list of
            :class:`TimestampRepair` with the video id, sentence index, action,
            the timestamps before and after, and the reason), in
            ``record.extra["repairs"]`` (the reasons, for the kept records),
            and as one warning on the ``fastvqa.data`` logger with the counts.

    Returns:
        :class:`RepairedRecords` (a ``list[QARecord]``), videos in file order
        and sentences in order: ``video_id`` = the key, ``question_id`` =
        ``str(sentence index)``, ``question`` = the sentence with surrounding
        whitespace stripped (the files start most sentences with a space),
        ``spans`` = ``[[start, end]]`` (seconds, continuous), ``duration``.
        ``extra``: ``sentence_index``, ``timestamp`` (as in the file),
        ``repairs``, plus any other per-video fields of the file.

    Raises:
        DataFormatError: invalid JSON, a top level that is not an object, a
            video without ``duration``/``timestamps``/``sentences``, a
            non-positive or non-finite duration, a timestamp that is not two
            finite numbers, a sentence that is not a string, different numbers
            of timestamps and sentences; with ``policy="strict"``, any
            timestamp outside ``[0, duration]`` or reversed.
        ValueError: an unknown policy.
        FileNotFoundError: the file does not exist; a folder without
            ``<split>.json``.

    >>> import json, tempfile
    >>> video = {"duration": 20.0, "timestamps": [[2, 5], [18, 25]],
    ...          "sentences": [" A man walks.", " He sits."]}
    >>> with tempfile.TemporaryDirectory() as d:
    ...     _ = Path(d, "val_1.json").write_text(json.dumps({"v_x": video}))
    ...     records = load_activitynet_captions(d, policy="repair")
    >>> [(r.question, r.spans.tolist()) for r in records], records.repairs[0].action
    ([('A man walks.', [[2.0, 5.0]]), ('He sits.', [[18.0, 20.0]])], 'clipped_end')
    """
    if policy not in ACTIVITYNET_POLICIES:
        raise ValueError(f"load_activitynet_captions: unknown policy {policy!r}; expected one of "
                         f"{', '.join(ACTIVITYNET_POLICIES)}")
    path = split_file(path, [f"{split}.json"], split=split,
                      what="ActivityNet Captions file")
    with stream_json(path) as doc:
        if doc.kind is not dict:
            raise DataFormatError(path, f"expected a JSON object {{video_id: {{...}}}} at the "
                                  f"top, got {doc.kind.__name__}")
        # A repeated video id keeps its last entry at its first place, as
        # json.load does (the stream may give a repeated key twice).
        records = _activitynet_records(dict(doc).items(), path, policy)
    if records.repairs:
        by_action: dict[str, int] = {}
        for r in records.repairs:
            by_action[r.action] = by_action.get(r.action, 0) + 1
        summary = ", ".join(f"{n} {a}" for a, n in sorted(by_action.items()))
        _log.warning("%s: %d timestamp repair(s) under policy %r (%s); see records.repairs",
                     path.name, len(records.repairs), policy, summary)
    return records


def _activitynet_records(videos, path: Path, policy: str) -> "RepairedRecords":
    records = RepairedRecords()
    for video_id, video in videos:
        duration = _field(path, video, video_id, "duration")
        if not _is_number(duration) or not math.isfinite(duration) or duration <= 0:
            raise DataFormatError(path, f"expected a positive number of seconds, got {duration!r}",
                                  record=video_id, field="duration")
        duration = float(duration)
        stamps = _field(path, video, video_id, "timestamps")
        sentences = _field(path, video, video_id, "sentences")
        if not isinstance(stamps, list):
            raise DataFormatError(path, f"expected a list of [start, end], got {stamps!r}",
                                  record=video_id, field="timestamps")
        if not isinstance(sentences, list):
            raise DataFormatError(path, f"expected a list of strings, got {sentences!r}",
                                  record=video_id, field="sentences")
        if len(stamps) != len(sentences):
            raise DataFormatError(path, f"{len(stamps)} timestamps but {len(sentences)} sentences",
                                  record=video_id, field="timestamps")
        others = {k: v for k, v in video.items()
                  if k not in ("duration", "timestamps", "sentences")}
        for i, (stamp, sentence) in enumerate(zip(stamps, sentences)):
            if (not isinstance(stamp, list) or len(stamp) != 2
                    or not all(_is_number(v) and math.isfinite(v) for v in stamp)):
                raise DataFormatError(path, f"timestamp {i}: expected [start, end] with finite "
                                      f"numbers, got {stamp!r}", record=video_id,
                                      field="timestamps")
            if not isinstance(sentence, str):
                raise DataFormatError(path, f"sentence {i}: expected a string, got {sentence!r}",
                                      record=video_id, field="sentences")
            s, e = float(stamp[0]), float(stamp[1])
            if policy == "strict":
                if not 0.0 <= s <= e <= duration:
                    raise DataFormatError(path, f"timestamp {i} {stamp!r} is not within "
                                          f"0 <= start <= end <= duration ({duration:g})",
                                          record=video_id, field="timestamps")
                kept, repairs = (s, e), []
            else:
                kept, repairs = _repair(video_id, i, s, e, duration, policy)
            records.repairs.extend(repairs)
            if kept is None:
                continue
            extra = {"sentence_index": i, "timestamp": list(stamp),
                     "repairs": [r.reason for r in repairs], **others}
            records.append(QARecord(video_id=video_id, question_id=str(i),
                                    question=sentence.strip(),
                                    spans=np.array([kept], dtype=np.float64),
                                    duration=duration, extra=extra))
    return records
