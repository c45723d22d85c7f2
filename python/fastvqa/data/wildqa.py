# SPDX-License-Identifier: Apache-2.0
"""WildQA annotation files (MichiganNLP/In-the-wild-QA, ``wildQA-data``).

``dev.json`` / ``test.json`` (and ``raw_dev.json`` / ``raw_test.json``, the same
records before the long-evidence filter) hold a JSON list with one object per
question; see ``papers/wildqa.md`` section 4.4 and ``anchors/eval.md`` 1.1.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any, Literal, Union

import numpy as np

from fastvqa.data.errors import DataFormatError
from fastvqa.data.io import split_file, stream_json
from fastvqa.data.record import QARecord

#: Fields every record must have, and the type each must hold.
_REQUIRED = {"question": str, "answer": str, "evidences": list, "duration": float,
             "video_id": str}
#: Fields read when present (absent ones default to empty).
_OPTIONAL_LISTS = ("alter_answers", "alter_evidences")
#: Fields mapped onto QARecord attributes; everything else goes to ``extra`` as is.
_MAPPED = ("question", "answer", "duration", "video_id")

#: The long-evidence filter of the release (``filter_long_span.py``): a Phase-2
#: span longer than this fraction of the video is dropped.
LONG_SPAN_FRACTION = 0.25


def load_wildqa(path: Union[str, Path], *,
                split: Literal["test", "dev", "raw_test", "raw_dev"] = "test",
                evidence_filter: bool = False) -> list[QARecord]:
    """Reads a WildQA split file into one :class:`QARecord` per question, in file
    order.

    Args:
        path: ``dev.json``, ``test.json``, ``raw_dev.json`` or ``raw_test.json``
            (or any file of the same format), or the folder holding them
            (``wildQA-data/``, as released), read as ``<path>/<split>.json``.
        split: with a folder: ``"test"``, ``"dev"``, ``"raw_test"`` or
            ``"raw_dev"`` (ignored for a file).
        evidence_filter: apply the release's long-evidence filter
            (``filter_long_span.py``) to the alternative (Phase-2) evidence:
            drop every span with ``end - start > duration / 4`` (strict ``>``)
            and then every annotator list left empty. Phase-1 ``evidences`` are
            never filtered. ``dev.json``/``test.json`` are already filtered
            (filtering them again changes nothing); ``raw_*.json`` with the
            filter give exactly their spans.

    Returns:
        ``QARecord`` per question with ``question_id`` = the record's position
        in the file (WildQA has no question ids; predictions are matched by
        order), ``answer`` = the primary (Phase-1) answer text as stored,
        ``spans`` = the primary evidences as a ``(K, 2)`` float64 array of
        ``[start, end]`` seconds (continuous, not rounded; an end may exceed the
        duration, as in 33 released spans), ``duration`` in seconds, and
        ``extra`` holding every other field of the record unchanged (the
        one-key evidence dicts, ``evidences_in_min``, ``alter_answers``,
        ``alter_evidences`` as stored, ``domain``, ``question_type``, crowd
        metadata, ...) plus:

        - ``"index"``: position in the file;
        - ``"answers"``: ``[answer] + alter_answers`` (the primary first);
        - ``"alter_spans"``: one ``(k, 2)`` float64 array per alternative
          annotator, after the filter when ``evidence_filter`` is set (the
          target sets of IoU-F1's ``alternatives``);
        - ``"alter_spans_by_answer"``: the same aligned with ``alter_answers``
          (filtered lists kept, possibly empty), or ``None`` when the file's
          lists are no longer aligned. The released filter drops emptied lists,
          so in ``dev.json``/``test.json`` 61 and 202 questions lose the
          alignment; ``raw_*.json`` keep it;
        - ``"evidence_filter"``: whether the filter was applied.

    Raises:
        FileNotFoundError: no such file; a folder without ``<split>.json``.
        DataFormatError: invalid JSON, a top level that is not a list, a record
            that is not an object, a missing field, a field of the wrong type, an
            evidence entry that is not a one-key ``{"i": [start, end]}`` object,
            a span that is not two finite numbers with ``0 <= start <= end``, or a
            duration that is not a positive finite number. The message names the
            file, the record index and the field.

    >>> import json, tempfile
    >>> item = {"question": "Why?", "answer": "rain", "evidences": [{"0": [1.0, 4.5]}],
    ...         "duration": 60.0, "video_id": "v1"}
    >>> with tempfile.TemporaryDirectory() as d:
    ...     _ = Path(d, "dev.json").write_text(json.dumps([item]))
    ...     (r,) = load_wildqa(d, split="dev")
    >>> r.key, r.answer, r.spans, r.duration
    ('v1_0', 'rain', array([[1. , 4.5]]), 60.0)
    """
    path = split_file(path, [f"{split}.json"], split=split, what="WildQA split file")
    with stream_json(path) as doc:
        if doc.kind is not list:
            raise DataFormatError(doc.path, "expected a JSON list with one object per question, "
                                            f"got {doc.kind.__name__}")
        return [_record(doc.path, i, item, evidence_filter) for i, item in doc]


def _record(path: Path, i: int, item: Any, evidence_filter: bool) -> QARecord:
    if not isinstance(item, dict):
        raise DataFormatError(path, f"expected an object, got {type(item).__name__}", record=i)
    for name, kind in _REQUIRED.items():
        if name not in item:
            raise DataFormatError(path, "missing", record=i, field=name)
        _check_type(path, i, name, item[name], kind)
    for name in _OPTIONAL_LISTS:
        if name in item:
            _check_type(path, i, name, item[name], list)
    duration = float(item["duration"])
    if not (math.isfinite(duration) and duration > 0):
        raise DataFormatError(path, f"expected a positive number of seconds, got {duration!r}",
                              record=i, field="duration")

    spans = _primary_spans(path, i, item["evidences"])
    alter_answers = item.get("alter_answers", [])
    for j, a in enumerate(alter_answers):
        if not isinstance(a, str):
            raise DataFormatError(path, f"expected a string, got {type(a).__name__}",
                                  record=i, field=f"alter_answers[{j}]")
    alter = [_span_list(path, i, f"alter_evidences[{j}]", ev)
             for j, ev in enumerate(item.get("alter_evidences", []))]
    if evidence_filter:
        limit = LONG_SPAN_FRACTION * duration
        # filter_long_span.py: drop a span when e - s > duration / 4 (computed
        # there as 1/4 * duration, the same float), keep lists aligned here...
        aligned = [a[(a[:, 1] - a[:, 0]) <= limit] for a in alter]
        # ...and, as the release does, drop the annotators left with nothing.
        kept = [a for a in aligned if a.shape[0] > 0]
    else:
        aligned = alter
        kept = alter
    by_answer = aligned if len(alter) == len(alter_answers) else None

    extra = {k: v for k, v in item.items() if k not in _MAPPED}
    extra.update({
        "index": i,
        "answers": [item["answer"], *alter_answers],
        "alter_spans": kept,
        "alter_spans_by_answer": by_answer,
        "evidence_filter": bool(evidence_filter),
    })
    return QARecord(
        video_id=item["video_id"],
        question_id=str(i),
        question=item["question"],
        options=[],
        answer=item["answer"],
        spans=spans,
        duration=duration,
        extra=extra,
    )


def _check_type(path: Path, i: int, name: str, value: Any, kind: type) -> None:
    if kind is float:
        ok = isinstance(value, (int, float)) and not isinstance(value, bool)
        expected = "a number"
    else:
        ok = isinstance(value, kind)
        expected = {str: "a string", list: "a list"}[kind]
    if not ok:
        raise DataFormatError(path, f"expected {expected}, got {type(value).__name__} "
                                    f"{_short(value)}", record=i, field=name)


def _primary_spans(path: Path, i: int, evidences: list) -> np.ndarray:
    """``[{"0": [s, e]}, {"1": [s, e]}, ...]`` -> ``(K, 2)`` float64. The key is
    the running index in the released files; it is not needed (order is kept)."""
    pairs = []
    for j, ev in enumerate(evidences):
        where = f"evidences[{j}]"
        if not isinstance(ev, dict) or len(ev) != 1:
            raise DataFormatError(path, "expected a one-key object {\"<index>\": [start, end]}, "
                                        f"got {_short(ev)}", record=i, field=where)
        (key, value), = ev.items()
        pairs.append(_span(path, i, f"{where}[{key!r}]", value))
    return np.array(pairs, dtype=np.float64).reshape(-1, 2)


def _span_list(path: Path, i: int, where: str, spans: Any) -> np.ndarray:
    if not isinstance(spans, list):
        raise DataFormatError(path, f"expected a list of [start, end] spans, got {_short(spans)}",
                              record=i, field=where)
    pairs = [_span(path, i, f"{where}[{j}]", s) for j, s in enumerate(spans)]
    return np.array(pairs, dtype=np.float64).reshape(-1, 2)


def _span(path: Path, i: int, where: str, value: Any) -> tuple[float, float]:
    if (not isinstance(value, list) or len(value) != 2
            or any(isinstance(v, bool) or not isinstance(v, (int, float)) for v in value)):
        raise DataFormatError(path, f"expected [start, end] in seconds, got {_short(value)}",
                              record=i, field=where)
    s, e = float(value[0]), float(value[1])
    if not (math.isfinite(s) and math.isfinite(e)):
        raise DataFormatError(path, f"span endpoints must be finite, got {value!r}",
                              record=i, field=where)
    if s < 0 or e < s:
        raise DataFormatError(path, f"expected 0 <= start <= end, got {value!r}",
                              record=i, field=where)
    return s, e


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."
