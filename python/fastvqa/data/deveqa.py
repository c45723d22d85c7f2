# SPDX-License-Identifier: Apache-2.0
"""DeVE-QA annotation files (provisional: the official QAs are not released).

Two record layouts are known (docs/papers/deveqa.md §7, docs/anchors/eval.md
§3.1), plus a field mapping for anything else:

- ``"devi"``: the ``QHUni/DeVE-QA`` repository's sample schema,
  ``{qid, video_id, question, options {A..E} (or a list), answer (letter or
  option text), gt_span [s, e] (seconds), duration, video_path, captions
  [{text, span, level}]}``;
- ``"release"``: the field names a third-party loader uses for the released
  files, ``{vid, question, answer (correct option text), distract_answers
  [texts], timestamp [s, e]}``, durations in a separate ``durations.json``.

Files: a JSON list of records, a JSON object ``{qid: record}``, or JSON Lines.
"""

from __future__ import annotations

import math
from contextlib import contextmanager
from itertools import chain
from pathlib import Path
from typing import Any, Iterator, Literal, Mapping, Optional, Union

import numpy as np

from fastvqa.data.answers import INVALID_ANSWER
from fastvqa.data.errors import DataFormatError
from fastvqa.data.io import iter_json_lines, read_json, split_file, stream_json
from fastvqa.data.nextgqa import grounding_spans, is_number, parse_span
from fastvqa.data.record import QARecord

PathLike = Union[str, Path]

#: Canonical field -> file field, per known layout. ``distractors`` only
#: exists in layouts without an ``options`` field.
SCHEMAS: dict[str, dict[str, str]] = {
    "devi": {"qid": "qid", "video_id": "video_id", "question": "question",
             "options": "options", "answer": "answer", "gt_span": "gt_span",
             "duration": "duration", "captions": "captions"},
    "release": {"qid": "qid", "video_id": "vid", "question": "question",
                "answer": "answer", "distractors": "distract_answers",
                "gt_span": "timestamp", "duration": "duration", "captions": "captions"},
}
CANONICAL = ("qid", "video_id", "question", "options", "distractors", "answer", "gt_span",
             "duration", "captions")


def load_deveqa(
    path: PathLike,
    *,
    schema: Literal["auto", "devi", "release"] = "auto",
    fields: Optional[Mapping[str, str]] = None,
    durations: Union[None, PathLike, Mapping[str, Any]] = None,
    split: str = "test",
) -> list[QARecord]:
    """Loads DeVE-QA questions.

    Args:
        path: a JSON list of records, a JSON object ``{qid: record}`` or a
            JSON Lines file (``.jsonl``); or a folder holding the split's file,
            ``<split>.json`` (else ``<split>.jsonl``).
        split: with a folder: which file (ignored for a file).
        schema: ``"devi"``, ``"release"`` or ``"auto"`` (from the first
            record's fields: ``gt_span``/``options`` -> devi,
            ``timestamp``/``distract_answers`` -> release).
        fields: overrides of the layout's field names, canonical -> file field
            (canonical names: ``qid, video_id, question, options, distractors,
            answer, gt_span, duration, captions``), e.g.
            ``{"gt_span": "time", "video_id": "vid"}`` for other layouts.
        durations: video lengths in seconds, ``{video_id: seconds}`` (or
            ``{video_id: {"duration": seconds}}``), or the path of such a JSON
            file; used where a record has no duration.

    Returns:
        One :class:`QARecord` per record, in file order:

        - ``question_id``: the ``qid`` field, else the record's position in the
          file (``"0"``, ``"1"``...); ``key`` is ``"<video_id>_<qid>"``;
        - ``options``: the ``options`` list, or a dict's values in key order
          (A..E); in the release layout, which stores no option order, the
          correct answer and the distractors **sorted as strings** (a
          deterministic order that does not put the answer first);
        - ``answer``: option index. An int is an index; a string equal to an
          option is that option (first match); a single letter is an index
          (A = 0, also a key of an options dict);
        - ``spans``: ``(1, 2)`` seconds from ``[s, e]`` (``[[s, e], ...]`` gives
          K rows); absent or null gives ``(0, 2)`` (no gold span: scores 0);
        - ``duration``: the record's, else from ``durations``, else None;
        - ``extra``: every other field as it was, plus ``captions`` and
          ``event_count`` (number of captions) when the record has captions.

    Raises:
        DataFormatError: bad JSON, missing or mistyped fields, an answer that
            matches no option, a bad span, repeated qids.
        ValueError: an unknown schema or canonical field name.

    >>> import json, tempfile
    >>> rec = {"qid": "q1", "video_id": "v1", "question": "What happens?",
    ...        "options": ["a", "b"], "answer": "B", "gt_span": [2, 5], "duration": 30}
    >>> with tempfile.TemporaryDirectory() as d:
    ...     _ = Path(d, "test.json").write_text(json.dumps([rec]))
    ...     (r,) = load_deveqa(d, schema="devi")
    >>> r.key, r.answer, r.spans, r.duration
    ('v1_q1', 1, array([[2., 5.]]), 30.0)
    """
    path = split_file(path, [f"{split}.json", f"{split}.jsonl"], split=split,
                      what="DeVE-QA annotation file")
    with _read_records(path) as raw:
        head = []  # the records up to the first object, which tells the layout
        for entry in raw:
            head.append(entry)
            if isinstance(entry[1], dict):
                break
        if not head:  # no records: nothing to detect a layout from
            return []
        mapping = _mapping(head[-1][1], schema, fields, path)
        lengths = _read_durations(durations)
        records: list[QARecord] = []
        seen: set[str] = set()
        for index, (fallback_qid, item) in enumerate(chain(head, raw)):
            rec = _record(item, index, fallback_qid, mapping, lengths, path)
            if rec.question_id in seen:
                raise DataFormatError(path, "the same qid appears twice", record=rec.question_id,
                                      field=mapping["qid"])
            seen.add(rec.question_id)
            records.append(rec)
    return records


@contextmanager
def _read_records(path: Path) -> Iterator[Iterator[tuple[Optional[str], Any]]]:
    """``(qid from a top-level object's key or None, record)``, one at a time."""
    if path.suffix.lower() == ".jsonl":
        yield ((None, item) for _, item in iter_json_lines(path))
        return
    with stream_json(path) as doc:
        if doc.kind is list:
            yield ((None, item) for _, item in doc)
        elif doc.kind is dict:
            # A key the object repeats keeps its last record at its first
            # place, as json.load gives the official scripts (the stream may
            # give a repeated key twice): the dict is the loaded file itself.
            yield iter(dict(doc).items())
        else:
            raise DataFormatError(doc.path, "expected a list of question records (or "
                                  f"{{qid: record}}), got a {doc.kind.__name__}")


def _mapping(first: Any, schema: str, fields, path: Path) -> dict[str, str]:
    """The field mapping; ``first`` is the file's first record that is an object."""
    if schema == "auto":
        first = first if isinstance(first, dict) else {}
        if "gt_span" in first or "options" in first:
            schema = "devi"
        elif "timestamp" in first or "distract_answers" in first:
            schema = "release"
        elif fields:
            schema = "devi"
        else:
            raise DataFormatError(path, "cannot tell the record layout from the fields "
                                  f"{sorted(first)}; pass schema='devi'|'release' or "
                                  "fields={...}",
                                  record=0)
    if schema not in SCHEMAS:
        raise ValueError(f"load_deveqa: schema must be 'auto', 'devi' or 'release', got {schema!r}")
    mapping = dict(SCHEMAS[schema])
    for canonical, name in (fields or {}).items():
        if canonical not in CANONICAL:
            raise ValueError(f"load_deveqa: unknown canonical field {canonical!r}; "
                             f"expected one of {', '.join(CANONICAL)}")
        mapping[canonical] = str(name)
    mapping["_schema"] = schema
    return mapping


def _read_durations(durations) -> dict[str, float]:
    if durations is None:
        return {}
    src = durations
    where = durations if isinstance(durations, (str, Path)) else "<durations>"
    if isinstance(durations, (str, Path)):
        src = read_json(durations)
    if not isinstance(src, Mapping):
        raise DataFormatError(where, "expected an object {video_id: seconds}")
    out = {}
    for vid, value in src.items():
        if isinstance(value, Mapping):
            value = value.get("duration")
        if not is_number(value) or not math.isfinite(value) or value < 0:
            raise DataFormatError(where, f"expected a number of seconds >= 0, got {value!r}",
                                  record=str(vid), field="duration")
        out[str(vid)] = float(value)
    return out


def _record(item: Any, index: int, fallback_qid, mapping, lengths, path: Path) -> QARecord:
    if not isinstance(item, dict):
        raise DataFormatError(path, f"expected an object, got {type(item).__name__}", record=index)
    f = mapping
    qid = item.get(f["qid"], fallback_qid)
    qid = str(index) if qid is None else str(qid)
    where = qid

    video_id = item.get(f["video_id"])
    if video_id is None or isinstance(video_id, (bool, list, dict)):
        raise DataFormatError(path, f"expected a video id, got {video_id!r}", record=where,
                              field=f["video_id"])
    question = item.get(f["question"], "")
    if not isinstance(question, str):
        raise DataFormatError(path, f"expected text, got {question!r}", record=where,
                              field=f["question"])

    options, answer = _options_and_answer(item, f, path, where)
    spans = _gold_spans(item.get(f["gt_span"]), path, where, f["gt_span"])

    duration = item.get(f["duration"])
    if duration is None:
        duration = lengths.get(str(video_id))
    elif not is_number(duration) or not math.isfinite(duration) or duration < 0:
        raise DataFormatError(path, f"expected a number of seconds >= 0, got {duration!r}",
                              record=where, field=f["duration"])
    used = {f[k] for k in CANONICAL if k in f and k != "captions"}
    extra = {k: v for k, v in item.items() if k not in used}
    captions = item.get(f["captions"])
    if captions is not None:
        if not isinstance(captions, list):
            raise DataFormatError(path, f"expected a list of captions, got {captions!r}",
                                  record=where, field=f["captions"])
        extra["captions"] = captions
        extra["event_count"] = len(captions)
    extra["schema"] = mapping["_schema"]
    return QARecord(video_id=str(video_id), question_id=qid, question=question,
                    options=options, answer=answer, spans=spans,
                    duration=None if duration is None else float(duration), extra=extra)


def _options_and_answer(item, f, path, where) -> tuple[list[str], Optional[int]]:
    letter_keys: Optional[list[str]] = None
    if "options" in f and f["options"] in item:
        raw = item[f["options"]]
        if isinstance(raw, dict):
            letter_keys = sorted(str(k) for k in raw)
            options = [raw[k] for k in sorted(raw, key=str)]
        elif isinstance(raw, list):
            options = raw
        else:
            raise DataFormatError(path, f"expected a list or an object of options, got {raw!r}",
                                  record=where, field=f["options"])
    elif "distractors" in f and f["distractors"] in item:
        raw = item[f["distractors"]]
        answer = item.get(f["answer"])
        if not isinstance(raw, list) or not isinstance(answer, str):
            raise DataFormatError(path, "expected a list of distractor texts and the answer text, "
                                  f"got {raw!r} and {answer!r}", record=where,
                                  field=f["distractors"])
        options = sorted([answer, *raw], key=str)
    else:
        options = []
    for o in options:
        if not isinstance(o, str):
            raise DataFormatError(path, f"options must be text, got {o!r}", record=where,
                                  field=f.get("options", f.get("distractors")))
    if f["answer"] not in item:
        raise DataFormatError(path, "missing", record=where, field=f["answer"])
    raw_answer = item[f["answer"]]
    index = _answer_index(raw_answer, options, letter_keys)
    if index is None:
        raise DataFormatError(path, f"answer {raw_answer!r} matches none of the options {options}",
                              record=where, field=f["answer"])
    return list(options), index


def _answer_index(answer: Any, options: list[str], letter_keys) -> Optional[int]:
    if isinstance(answer, bool):
        return None
    if isinstance(answer, int):
        in_range = answer < len(options) if options else True
        return answer if answer >= 0 and in_range else None
    if not isinstance(answer, str):
        return None
    for i, opt in enumerate(options):
        if opt == answer:
            return i
    if letter_keys is not None and answer in letter_keys:
        return letter_keys.index(answer)
    a = answer.strip()
    if len(a) == 1 and a.isalpha():
        i = ord(a.upper()) - ord("A")
        if not options or i < len(options):
            return i
    return None


def _gold_spans(value: Any, path, where, field) -> np.ndarray:
    if value is None:
        return np.zeros((0, 2), dtype=np.float64)
    if isinstance(value, list) and value and all(isinstance(v, (list, tuple)) for v in value):
        rows = [parse_span(v, path, where, f"{field}[{j}]") for j, v in enumerate(value)]
    elif isinstance(value, list) and not value:
        rows = []
    else:
        rows = [parse_span(value, path, where, field)]
    return np.array(rows, dtype=np.float64).reshape(-1, 2)


# ----------------------------------------------------------- prediction files


def read_deveqa_predictions(path: PathLike) -> tuple[dict[str, Optional[tuple[float, float]]],
                                                      dict[str, int]]:
    """DeVE-QA predictions, in either of two formats.

    - the DeVi repository's JSON Lines (or a JSON list) of
      ``{"qid": ..., "answer": "B", "span": [s, e], ...}`` records (``key``
      may replace ``qid``; ``span`` and ``answer`` may be absent or null).
      As in ``devi/eval.py`` an answer string keeps only its first character,
      read as an option letter (A = 0); a first character that is no letter
      gives ``INVALID_ANSWER`` (answered, never correct). An int is an index.
    - the NExT-GQA grounding file ``{"<video_id>_<qid>": [start, end]}``
      (answers then come from a separate QA file).

    Returns:
        ``(spans, answers)``: ``{id: (start, end) or None}`` and ``{id: int}``,
        ``id`` being the record's ``qid`` (or ``key``) or the grounding file's key.

    >>> import tempfile
    >>> with tempfile.TemporaryDirectory() as d:
    ...     p = Path(d, "preds.jsonl")
    ...     _ = p.write_text('{"qid": "q1", "answer": "B", "span": [2, 4]}\\n')
    ...     print(read_deveqa_predictions(p))
    ({'q1': (2.0, 4.0)}, {'q1': 1})
    """
    path = Path(path)
    if path.suffix.lower() == ".jsonl":
        # Streamed: one line at a time, never the whole file.
        return _prediction_records(enumerate(item for _, item in iter_json_lines(path)), path)
    with stream_json(path) as doc:  # streamed too: entry by entry
        if doc.kind is dict:
            return grounding_spans(doc.batches(), doc.path), {}
        if doc.kind is not list:
            raise DataFormatError(doc.path, "expected JSON Lines / a list of {qid, answer, span} "
                                  "records, or an object {key: [start, end]}")
        return _prediction_records(doc, doc.path)


def _prediction_records(items, path: Path) -> tuple[dict[str, Optional[tuple[float, float]]],
                                                     dict[str, int]]:
    spans: dict[str, Optional[tuple[float, float]]] = {}
    answers: dict[str, int] = {}
    for index, item in items:
        if not isinstance(item, dict):
            raise DataFormatError(path, f"expected an object, got {type(item).__name__}",
                                  record=index)
        ident = item.get("qid", item.get("key"))
        if ident is None or isinstance(ident, (bool, list, dict)):
            raise DataFormatError(path, "missing (the question id)", record=index, field="qid")
        ident = str(ident)
        if ident in spans:
            raise DataFormatError(path, "the same qid appears twice", record=ident, field="qid")
        span = item.get("span")
        spans[ident] = None if span is None else parse_span(span, path, ident, "span")
        answer = item.get("answer")
        if answer is None:
            continue
        if isinstance(answer, bool) or not isinstance(answer, (int, str)):
            raise DataFormatError(path, f"expected an option letter or index, got {answer!r}",
                                  record=ident, field="answer")
        if isinstance(answer, int):
            answers[ident] = answer if answer >= 0 else INVALID_ANSWER
        else:
            first = answer.strip()[:1].upper()
            answers[ident] = (ord(first) - ord("A")) if "A" <= first <= "Z" else INVALID_ANSWER
    return spans, answers
