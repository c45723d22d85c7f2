# SPDX-License-Identifier: Apache-2.0
"""Loader for SOK-Bench question files (csbobby/SOK-Bench).

The released format (README): a dict ``{question_type: [question, ...]}``;
each question holds ``question``, ``answer`` (``direct`` free-text answer,
``choices`` list, ``right_choice`` 0-based index), ``related_objs_acts``,
``related_subgraph`` (knowledge graph: ``background``, ``object``,
``action``, ``obj_interaction``), ``video`` (YouTube id), ``video_path``,
``rationale`` (a string of JSON-like numbered steps) and ``time_slot``
(``[start, end]`` seconds in the source video). The shipped
``data/example_question.json`` is a single question object.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any, Optional

import numpy as np

from fastvqa.data.errors import DataFormatError
from fastvqa.data.io import iter_input_files, merge_records, read_json
from fastvqa.data.record import QARecord

_STEP = re.compile(r'"(\d+)"\s*:\s*"')


def parse_rationale(text: str) -> Optional[dict[str, str]]:
    """Numbered rationale steps ``{"1": "...", "2": "..."}`` from SOK-Bench's
    ``rationale`` string, or None when it has no numbered steps.

    The string is tried as JSON first. The released example is not valid JSON
    (steps quote text with unescaped ``"``), so the fallback cuts the text at
    each ``"<n>": "`` and strips the closing quote, comma and brace of each step.

    >>> parse_rationale('{"1": "He says "hi".", "2": "So he waves."}')
    {'1': 'He says "hi".', '2': 'So he waves.'}
    >>> print(parse_rationale("no numbered steps"))
    None
    """
    try:
        parsed = json.loads(text)
    except (ValueError, TypeError, RecursionError):  # JSONDecodeError is a ValueError
        parsed = None
    if isinstance(parsed, dict):
        return {str(k): v if isinstance(v, str) else json.dumps(v) for k, v in parsed.items()}
    starts = list(_STEP.finditer(text))
    if not starts:
        return None
    steps = {}
    for m, nxt in zip(starts, starts[1:] + [None]):
        body = text[m.end(): nxt.start() if nxt is not None else len(text)].rstrip()
        if nxt is None and body.endswith("}"):
            body = body[:-1].rstrip()
        body = body.rstrip(",").rstrip()
        if body.endswith('"'):
            body = body[:-1]
        steps[m.group(1)] = body
    return steps


class _Bad(Exception):
    def __init__(self, field: str, reason: str):
        super().__init__(reason)
        self.field = field
        self.reason = reason


def _number(value: Any) -> bool:
    return (not isinstance(value, bool) and isinstance(value, (int, float))
            and math.isfinite(value))


def _question_record(q: Any, qtype: Optional[str], question_id: str) -> QARecord:
    if not isinstance(q, dict):
        raise _Bad("<question>", f"expected a question object, got {type(q).__name__}")
    for name in ("question", "video"):
        if name not in q:
            raise _Bad(name, "missing")
        if not isinstance(q[name], str):
            raise _Bad(name, f"expected a string, got {type(q[name]).__name__}")
    answer = q.get("answer")
    if answer is None:
        raise _Bad("answer", "missing")
    if not isinstance(answer, dict):
        raise _Bad("answer", f"expected an object with direct/choices/right_choice, "
                             f"got {type(answer).__name__}")
    choices = answer.get("choices")
    if choices is None:
        raise _Bad("answer.choices", "missing")
    if not isinstance(choices, list) or not choices or not all(isinstance(c, str) for c in choices):
        raise _Bad("answer.choices", f"expected a non-empty list of strings, got {choices!r}")
    if "right_choice" not in answer:
        raise _Bad("answer.right_choice", "missing")
    right = answer["right_choice"]
    if isinstance(right, bool) or not isinstance(right, int):
        raise _Bad("answer.right_choice", f"expected an integer index, got {right!r}")
    if not 0 <= right < len(choices):
        raise _Bad("answer.right_choice",
                   f"index {right} is outside the {len(choices)} choices (0-based)")
    direct = answer.get("direct")
    if direct is not None and not isinstance(direct, str):
        raise _Bad("answer.direct", f"expected a string, got {type(direct).__name__}")

    spans = np.zeros((0, 2), dtype=np.float64)
    slot = q.get("time_slot")
    if slot is not None:
        if not (isinstance(slot, list) and len(slot) == 2 and all(_number(x) for x in slot)):
            raise _Bad("time_slot", f"expected [start, end] in seconds, got {slot!r}")
        if slot[1] < slot[0]:
            raise _Bad("time_slot", f"ends ({slot[1]}) before it starts ({slot[0]})")
        spans = np.array([slot], dtype=np.float64)
    for name, kind, what in (("related_objs_acts", list, "a list"),
                             ("related_subgraph", dict, "an object"),
                             ("video_path", str, "a string"),
                             ("rationale", str, "a string")):
        if q.get(name) is not None and not isinstance(q[name], kind):
            raise _Bad(name, f"expected {what}, got {type(q[name]).__name__}")

    extra = {k: v for k, v in q.items() if k not in ("question", "answer")}
    rationale = q.get("rationale")
    extra.update(
        question_type=qtype,
        direct=direct,
        right_choice=right,
        # Not guaranteed by the format (true in the released example).
        direct_matches_choice=direct is not None and choices[right] == direct,
        n_choices=len(choices),
        rationale_steps=parse_rationale(rationale) if isinstance(rationale, str) else None,
    )
    return QARecord(video_id=q["video"], question_id=question_id, question=q["question"],
                    options=list(choices), answer=right, spans=spans, duration=None, extra=extra)


def load_sokbench(path: str | Path) -> list[QARecord]:
    """Loads a SOK-Bench question file into :class:`QARecord` s.

    Accepted layouts: the released ``{question_type: [question, ...]}`` dict;
    a list of questions; a single question object (``example_question.json``).
    ``path`` may also be a folder: every ``*.json`` file in it (not below),
    in sorted name order, each read as above, with ``question_id``
    ``f"{file_stem}/{id}"`` (ids restart in each file); no file, or a record
    key repeated across files, is an error.

    Records:
        - ``video_id`` = ``video`` (YouTube id);
        - ``question_id`` = ``f"{question_type}_{i}"`` (``i`` = 0-based
          position in that type's list) for the typed layout, ``str(i)`` for a
          list, ``"0"`` for a single question (the format has no question ids);
          ``record.key`` is ``f"{video}_{question_id}"``;
        - ``options`` = ``answer.choices``; ``answer`` = ``answer.right_choice``
          (0-based index);
        - ``spans`` = ``[[start, end]]`` from ``time_slot`` (seconds in the
          source video; empty when absent); ``duration`` None.

    ``extra`` keeps every other field as it was (``related_objs_acts``,
    ``related_subgraph``, ``video_path``, ``rationale``, ``time_slot`` ...)
    plus ``question_type`` (the type key, None without one), ``direct`` (the
    direct answer), ``right_choice``, ``n_choices``,
    ``direct_matches_choice`` (whether ``choices[right_choice] == direct``)
    and ``rationale_steps`` (:func:`parse_rationale`).

    Raises:
        DataFormatError: naming the file, the question (``"<type>[i]"``,
            index, or ``"0"``) and the field: bad JSON, a missing
            ``question``/``video``/``answer.choices``/``answer.right_choice``,
            a wrong type, ``right_choice`` outside the choices, a reversed or
            non-numeric ``time_slot``.

    >>> import json, tempfile
    >>> q = {"question": "Why?", "video": "abc123", "time_slot": [3, 9],
    ...      "answer": {"direct": "to drink", "choices": ["to wash", "to drink"], "right_choice": 1}}
    >>> with tempfile.TemporaryDirectory() as d:
    ...     _ = Path(d, "q.json").write_text(json.dumps({"intent": [q]}))
    ...     (r,) = load_sokbench(Path(d, "q.json"))
    >>> r.key, r.options[r.answer], r.spans, r.extra["question_type"]
    ('abc123_intent_0', 'to drink', array([[3., 9.]]), 'intent')
    """
    files = iter_input_files(path, "*.json", what="SOK-Bench question file")
    if not Path(path).is_dir():
        return _load_file(files[0])
    return merge_records(files, _load_file_prefixed)


def _load_file_prefixed(path: Path) -> list[QARecord]:
    """A file of a folder: question ids start with its name (ids restart in
    each file)."""
    records = _load_file(path)
    for rec in records:
        rec.question_id = f"{path.stem}/{rec.question_id}"
    return records


def _load_file(path: Path) -> list[QARecord]:
    data = read_json(path)

    items: list[tuple[Any, Optional[str], str, Any]] = []  # (question, type, id, where)
    if isinstance(data, dict) and "question" in data and "answer" in data:
        items.append((data, None, "0", "0"))
    elif isinstance(data, dict):
        for qtype, questions in data.items():
            if not isinstance(questions, list):
                raise DataFormatError(path, f"expected a list of questions, got "
                                      f"{type(questions).__name__}", record=qtype)
            items.extend((q, qtype, f"{qtype}_{i}", f"{qtype}[{i}]")
                         for i, q in enumerate(questions))
    elif isinstance(data, list):
        items.extend((q, None, str(i), i) for i, q in enumerate(data))
    else:
        raise DataFormatError(path, "expected {question_type: [questions]}, a list of questions "
                              f"or one question object, got {type(data).__name__}")
    records = []
    for q, qtype, qid, where in items:
        try:
            records.append(_question_record(q, qtype, qid))
        except _Bad as err:
            raise DataFormatError(path, err.reason, record=where, field=err.field) from None
    return records
