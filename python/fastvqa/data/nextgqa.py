# SPDX-License-Identifier: Apache-2.0
"""NExT-GQA files: ``<split>.csv`` + ``gsub_<split>.json`` ground truth, and the
official prediction files (a grounding file and a QA file).

Formats (``doc-doc/NExT-GQA``, ``datasets/nextgqa/``; docs/anchors/eval.md §2.1):

- ``gsub_<split>.json``: ``{video_id: {"duration": seconds, "fps": float,
  "location": {qid: [[start, end], ...]}}}`` in seconds (0.1 s precision).
- ``<split>.csv``: ``video_id,frame_count,width,height,question,answer,qid,
  type,a0,...,a4`` where ``answer`` is the correct option's **text**.
- grounding predictions: ``{"<video_id>_<qid>": [start, end]}`` (seconds, or
  fractions of the video for the normalised Gaussian-mask models).
- QA predictions: ``{"<video_id>_<qid>": {"prediction": k, "answer": k_true}}``.
"""

from __future__ import annotations

import csv
import math
from itertools import chain
from operator import itemgetter
from pathlib import Path
from typing import Any, Iterable, Literal, Optional, Sequence, Union

import numpy as np

from fastvqa.data.errors import DataFormatError
from fastvqa.data.io import open_text, stream_json
from fastvqa.data.record import QARecord

PathLike = Union[str, Path]

OPTION_COLUMNS = ("a0", "a1", "a2", "a3", "a4")
_REQUIRED_COLUMNS = ("video_id", "qid", "question", "answer", *OPTION_COLUMNS)
_INT_COLUMNS = ("frame_count", "width", "height")


def load_nextgqa(folder_or_files: Union[PathLike, Sequence[PathLike]],
                 split: Literal["test", "val"] = "test") -> list[QARecord]:
    """Loads the grounded NExT-GQA questions of one split.

    Args:
        folder_or_files: a folder holding ``gsub_<split>.json`` and (optionally)
            ``<split>.csv``; or the path of a gsub JSON alone (grounding-only
            evaluation: no question text, options or answer); or a sequence
            ``(gsub_json, csv)`` of the two files.
        split: ``"test"`` or ``"val"`` (names the files inside a folder).

    Returns:
        One :class:`QARecord` per question of the gsub file, in file order
        (videos, then qids: the official evaluator's order). ``spans`` are the
        gold segments ``(K, 2)`` in seconds (K >= 1 in the released files; an
        empty list loads as K = 0), ``duration`` the gsub ``duration`` (s).
        With the csv: ``question``, ``options`` (a0..a4), ``answer`` = the
        index of the first option equal to the csv's answer text (one test
        question lists "happy" twice; its answer is the first), and ``extra``
        holds ``type``, ``answer_text``, ``frame_count``, ``width``,
        ``height`` (ints); always ``extra["fps"]``. Questions of the csv that
        have no grounding (not in gsub) are left out, as the official scripts
        do.

    Raises:
        DataFormatError: bad JSON/CSV, missing or mistyped fields, bad spans,
            an answer that is none of the options, a grounded question missing
            from the csv, duplicated csv rows.
        FileNotFoundError: a file (or the folder's gsub JSON) does not exist.

    >>> import json, tempfile
    >>> gsub = {"4882821564": {"duration": 30.0, "fps": 30, "location": {"2": [[2.5, 6.0]]}}}
    >>> with tempfile.TemporaryDirectory() as d:
    ...     _ = Path(d, "gsub_val.json").write_text(json.dumps(gsub))
    ...     (r,) = load_nextgqa(d, split="val")
    >>> r.key, r.spans, r.duration, r.options
    ('4882821564_2', array([[2.5, 6. ]]), 30.0, [])
    """
    gsub_path, csv_path = _resolve(folder_or_files, split)
    videos = read_gsub(gsub_path)
    rows = read_questions_csv(csv_path) if csv_path is not None else None
    records = []
    for video_id, video in videos.items():
        for qid, spans in video["location"].items():
            rec = QARecord(video_id=video_id, question_id=qid, spans=spans,
                           duration=video["duration"], extra={"fps": video["fps"]})
            if rows is not None:
                row = rows.get((video_id, qid))
                if row is None:
                    raise DataFormatError(csv_path, f"grounded question {video_id}_{qid} of "
                                          f"{gsub_path.name} has no row in the csv",
                                          record=f"{video_id}_{qid}")
                rec.question = row["question"]
                rec.options = row["options"]
                rec.answer = row["answer"]
                rec.extra.update(row["extra"])
            records.append(rec)
    return records


def _resolve(src: Any, split: str) -> tuple[Path, Optional[Path]]:
    if split not in ("test", "val"):
        raise ValueError(f"load_nextgqa: split must be 'test' or 'val', got {split!r}")
    if isinstance(src, (str, Path)):
        path = Path(src)
        if path.is_dir():
            gsub = path / f"gsub_{split}.json"
            if not gsub.is_file():
                raise FileNotFoundError(f"{path} holds no gsub_{split}.json "
                                        f"(the NExT-GQA {split} grounding file)")
            csv_path = path / f"{split}.csv"
            return gsub, (csv_path if csv_path.is_file() else None)
        if not path.exists():
            raise FileNotFoundError(f"{path} does not exist")
        if path.suffix.lower() == ".csv":
            # The csv holds the questions only; the grounding is gsub_<split>.json.
            raise DataFormatError(path, f"is the question csv; the NExT-GQA ground truth is "
                                  f"gsub_{split}.json: pass the folder holding both, or "
                                  f"gsub_{split}.json alone")
        return path, None
    files = [Path(p) for p in src]
    if len(files) != 2:
        raise ValueError("load_nextgqa: give a folder, a gsub JSON, or (gsub_json, csv)")
    for f in files:
        if not f.is_file():
            raise FileNotFoundError(f"{f} does not exist")
    return files[0], files[1]


# -------------------------------------------------------------- JSON helpers


def is_number(x: Any) -> bool:
    """A JSON number (bool is not one).

    >>> is_number(3), is_number(2.5), is_number(True), is_number("3")
    (True, True, False, False)
    """
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def parse_span(value: Any, path: PathLike, record: Any, field: str) -> tuple[float, float]:
    """``[start, end]``: exactly two finite numbers (reversed or zero-length
    spans are allowed; their scores follow the evaluation's rules).

    >>> parse_span([1, 2.5], "preds.json", "v1_2", "span")
    (1.0, 2.5)
    >>> parse_span([1], "preds.json", "v1_2", "span")
    Traceback (most recent call last):
    ...
    fastvqa.data.errors.DataFormatError: preds.json: record 'v1_2': field 'span': expected ...
    """
    if not isinstance(value, (list, tuple)) or len(value) != 2:
        raise DataFormatError(path, f"expected a span [start, end], got {value!r}",
                              record=record, field=field)
    out = []
    for x in value:
        if not is_number(x):
            raise DataFormatError(path, f"expected numbers in [start, end], got {value!r}",
                                  record=record, field=field)
        x = float(x)
        if not math.isfinite(x):
            raise DataFormatError(path, f"span endpoints must be finite, got {value!r}",
                                  record=record, field=field)
        out.append(x)
    return out[0], out[1]


# ----------------------------------------------------------------- gsub JSON


def read_gsub(path: PathLike) -> dict[str, dict[str, Any]]:
    """Validated ``gsub_<split>.json``: ``{video_id: {"duration": float,
    "fps": float or None, "location": {qid: (K, 2) float64 array}}}`` in file
    order.

    >>> import json, tempfile
    >>> gsub = {"4882821564": {"duration": 30.0, "fps": 30, "location": {"2": [[2.5, 6.0]]}}}
    >>> with tempfile.TemporaryDirectory() as d:
    ...     _ = Path(d, "gsub_val.json").write_text(json.dumps(gsub))
    ...     print(read_gsub(Path(d, "gsub_val.json")))
    {'4882821564': {'duration': 30.0, 'fps': 30.0, 'location': {'2': array([[2.5, 6. ]])}}}
    """
    with stream_json(path) as doc:
        if doc.kind is not dict:
            raise DataFormatError(doc.path, "expected a JSON object {video_id: {duration, fps, "
                                  f"location}}}}, got a {doc.kind.__name__}")
        return _gsub_videos(doc, doc.path)


def _gsub_videos(entries: Iterable[tuple[str, Any]], path: Path) -> dict[str, dict[str, Any]]:
    videos: dict[str, dict[str, Any]] = {}
    for video_id, entry in entries:
        if not isinstance(entry, dict):
            raise DataFormatError(path, f"expected an object, got {type(entry).__name__}",
                                  record=video_id)
        if "duration" not in entry:
            raise DataFormatError(path, "missing (the video length in seconds)",
                                  record=video_id, field="duration")
        duration = entry["duration"]
        if not is_number(duration) or not math.isfinite(duration) or duration < 0:
            raise DataFormatError(path, f"expected a number of seconds >= 0, got {duration!r}",
                                  record=video_id, field="duration")
        fps = entry.get("fps")
        if fps is not None and (not is_number(fps) or not math.isfinite(fps)):
            raise DataFormatError(path, f"expected a number, got {fps!r}",
                                  record=video_id, field="fps")
        location = entry.get("location")
        if not isinstance(location, dict):
            got = "nothing" if location is None else f"a {type(location).__name__}"
            raise DataFormatError(path, "expected an object {qid: [[start, end], ...]}, got "
                                  + got,
                                  record=video_id, field="location")
        spans_by_qid = {}
        for qid, segs in location.items():
            field = f"location.{qid}"
            if not isinstance(segs, list):
                raise DataFormatError(path, f"expected a list of [start, end] spans, got {segs!r}",
                                      record=video_id, field=field)
            spans = [parse_span(s, path, video_id, f"{field}[{j}]") for j, s in enumerate(segs)]
            spans_by_qid[str(qid)] = np.array(spans, dtype=np.float64).reshape(-1, 2)
        videos[str(video_id)] = {"duration": float(duration),
                                 "fps": None if fps is None else float(fps),
                                 "location": spans_by_qid}
    return videos


# ----------------------------------------------------------------------- CSV


def read_questions_csv(path: PathLike) -> dict[tuple[str, str], dict[str, Any]]:
    """``<split>.csv`` rows keyed by ``(video_id, qid)``: question, options,
    answer (option index), extra (type, answer_text, frame_count, width, height).

    >>> import tempfile
    >>> text = "video_id,qid,question,answer,a0,a1,a2,a3,a4\\nv1,2,why?,to eat,a,to eat,c,d,e\\n"
    >>> with tempfile.TemporaryDirectory() as d:
    ...     _ = Path(d, "val.csv").write_text(text)
    ...     row = read_questions_csv(Path(d, "val.csv"))[("v1", "2")]
    >>> row["question"], row["answer"], row["extra"]
    ('why?', 1, {'answer_text': 'to eat'})
    """
    path = Path(path)
    try:
        with open_text(path, encoding="utf-8-sig") as f:
            reader = csv.DictReader(f)
            header = reader.fieldnames or []
            for col in _REQUIRED_COLUMNS:
                if col not in header:
                    raise DataFormatError(path, f"missing column (header: {','.join(header)})",
                                          field=col)
            rows: dict[tuple[str, str], dict[str, Any]] = {}
            for line_no, row in enumerate(reader, start=2):
                key = (row["video_id"], row["qid"])
                record = f"line {line_no} ({key[0]}_{key[1]})"
                if None in row or any(v is None for v in row.values()):
                    raise DataFormatError(path, f"expected {len(header)} columns",
                                          record=record)
                if key in rows:
                    raise DataFormatError(path, "the same (video_id, qid) appears twice",
                                          record=record, field="qid")
                rows[key] = _parse_row(row, path, record)
    except UnicodeDecodeError as err:
        raise DataFormatError(path, f"not UTF-8 text ({err})") from None
    except csv.Error as err:
        raise DataFormatError(path, f"malformed CSV: {err}") from None
    return rows


def _parse_row(row: dict[str, str], path: Path, record: str) -> dict[str, Any]:
    options = [row[c] for c in OPTION_COLUMNS]
    answer_text = row["answer"]
    answer = answer_index(answer_text, options)
    if answer is None:
        raise DataFormatError(path, f"answer {answer_text!r} is none of the options {options}",
                              record=record, field="answer")
    extra: dict[str, Any] = {"answer_text": answer_text}
    if "type" in row:
        extra["type"] = row["type"]
    for col in _INT_COLUMNS:
        if col in row:
            try:
                extra[col] = int(row[col])
            except ValueError:
                raise DataFormatError(path, f"expected an integer, got {row[col]!r}",
                                      record=record, field=col) from None
    known = {*_REQUIRED_COLUMNS, "type", *_INT_COLUMNS}
    extra.update({k: v for k, v in row.items() if k not in known})
    return {"question": row["question"], "options": options, "answer": answer, "extra": extra}


def answer_index(answer: str, options: Sequence[str]) -> Optional[int]:
    """Index of the first option equal to ``answer`` (exact, then ignoring
    surrounding spaces); an integer string within range is taken as an index
    (NExT-QA's original csvs store the index). None when nothing matches.

    >>> answer_index(" b ", ["a", "b"]), answer_index("1", ["a", "b"]), answer_index("c", ["a"])
    (1, 1, None)
    """
    for i, opt in enumerate(options):
        if opt == answer:
            return i
    stripped = answer.strip()
    for i, opt in enumerate(options):
        if opt.strip() == stripped:
            return i
    if stripped.isdigit() and int(stripped) < len(options):
        return int(stripped)
    return None


# ----------------------------------------------------------- prediction files


def read_grounding_predictions(path: PathLike) -> dict[str, tuple[float, float]]:
    """The official grounding file ``{"<video_id>_<qid>": [start, end]}``, read
    entry by entry (:func:`fastvqa.data.io.stream_json`): ``{key: (start,
    end)}`` floats, nothing else of the file kept.

    Spans must be two finite numbers (the official script reads ``[0]`` and
    ``[-1]`` of any list; fastvqa asks for exactly two so a malformed entry is
    an error, not a silently different number).

    >>> import tempfile
    >>> with tempfile.TemporaryDirectory() as d:
    ...     _ = Path(d, "grounding.json").write_text('{"4882821564_2": [2.0, 5.5]}')
    ...     print(read_grounding_predictions(Path(d, "grounding.json")))
    {'4882821564_2': (2.0, 5.5)}
    """
    with stream_json(path) as doc:
        if doc.kind is not dict:
            raise DataFormatError(doc.path, _GROUNDING_LAYOUT + f", got a {doc.kind.__name__}")
        return grounding_spans(doc.batches(), doc.path)


_GROUNDING_LAYOUT = 'expected a JSON object {"<video_id>_<qid>": [start, end]}'


def grounding_spans(runs: Iterable[dict], path: PathLike) -> dict[str, tuple[float, float]]:
    """``{key: (start, end)}`` from a grounding file's entries in runs
    (:meth:`fastvqa.data.io.JsonStream.batches`), each run checked as it
    comes (the first bad entry is an error naming its key; a repeated key
    keeps its last span, as ``json.load``).

    >>> grounding_spans([{"v1_2": [0, 2]}, {"v1_3": [1.5, 3]}], "grounding.json")
    {'v1_2': (0, 2), 'v1_3': (1.5, 3)}
    """
    out: dict[str, tuple[float, float]] = {}
    for run in runs:
        values = run.values()
        # Fast path, C-level passes: every value a list of two JSON numbers
        # (int or float; bool is neither type), all finite. Anything else
        # takes the per-entry check, which names the first bad entry.
        if (set(map(type, values)) <= _LIST and set(map(len, values)) <= _TWO
                and set(map(type, map(itemgetter(0), values))) <= _NUMBERS
                and set(map(type, map(itemgetter(1), values))) <= _NUMBERS
                and np.isfinite(np.fromiter(chain.from_iterable(values), dtype=np.float64,
                                            count=2 * len(run))).all()):
            out.update(zip(run.keys(), map(tuple, values)))
            continue
        for key, v in run.items():
            out[key] = parse_span(v, path, key, "span")  # raises on a bad entry
    return out


_LIST = frozenset((list,))
_TWO = frozenset((2,))
_NUMBERS = frozenset((int, float))


def parse_int(value: Any, path: PathLike, record: str, field: str) -> int:
    """An integer (or an integral float such as 2.0); bools and text are errors.

    >>> parse_int(2.0, "qa.json", "v1_2", "prediction")
    2
    """
    if isinstance(value, bool) or not is_number(value) or \
            (isinstance(value, float) and not value.is_integer()):
        raise DataFormatError(path, f"expected an integer option index, got {value!r}",
                              record=record, field=field)
    return int(value)


def read_qa_predictions(path: PathLike) -> dict[str, dict[str, Optional[int]]]:
    """The official QA file ``{"<video_id>_<qid>": {"prediction": k, "answer": k_true}}``.

    Returns ``{key: {"prediction": int, "answer": int or None}}``; ``answer``
    may be left out of an entry (fastvqa then takes the ground truth's).

    >>> import tempfile
    >>> with tempfile.TemporaryDirectory() as d:
    ...     p = Path(d, "qa.json")
    ...     _ = p.write_text('{"v1_2": {"prediction": 1, "answer": 1}, "v1_3": {"prediction": 2}}')
    ...     print(read_qa_predictions(p))
    {'v1_2': {'prediction': 1, 'answer': 1}, 'v1_3': {'prediction': 2, 'answer': None}}
    """
    with stream_json(path) as doc:
        if doc.kind is not dict:
            raise DataFormatError(doc.path, 'expected a JSON object {"<video_id>_<qid>": '
                                  '{"prediction": k, "answer": k_true}}, got a '
                                  f"{doc.kind.__name__}")
        return _qa_entries(doc, doc.path)


def _qa_entries(entries: Iterable[tuple[str, Any]],
                path: Path) -> dict[str, dict[str, Optional[int]]]:
    out: dict[str, dict[str, Optional[int]]] = {}
    for key, entry in entries:
        if not isinstance(entry, dict):
            raise DataFormatError(path, f'expected {{"prediction": k, "answer": k_true}}, got '
                                  f"{entry!r}", record=key)
        if "prediction" not in entry:
            raise DataFormatError(path, "missing", record=key, field="prediction")
        pred = parse_int(entry["prediction"], path, key, "prediction")
        answer = entry.get("answer")
        if answer is not None:
            answer = parse_int(answer, path, key, "answer")
            if answer < 0:
                raise DataFormatError(path, f"expected an option index >= 0, got {answer}",
                                      record=key, field="answer")
        out[key] = {"prediction": pred, "answer": answer}
    return out
