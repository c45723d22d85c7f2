# SPDX-License-Identifier: Apache-2.0
"""Predictions keyed by record (or in record order) -> one entry per record,
and the check that a per-question argument has one entry per question:
shared by the metrics."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Optional, Sequence

import numpy as np

from fastvqa.errors import InputError, InputTypeError


def records_of(target: Any) -> Optional[list]:
    """``target`` as a list when it is a non-empty sequence of
    :class:`fastvqa.data.QARecord` (a metric's records-level form), else None."""
    from fastvqa.data.record import QARecord

    if isinstance(target, (list, tuple)) and target and isinstance(target[0], QARecord):
        return list(target)
    return None


def record_key(table: Mapping, record: Any, by_question_id: bool = False) -> Optional[str]:
    """The key under which ``record`` appears in ``table`` (a mapping of
    predictions): its ``record.key`` (``"<video_id>_<question_id>"``), else,
    with ``by_question_id`` (files keyed by question id alone, as DeVi's
    DeVE-QA outputs), its ``question_id``; None when neither is a key. The
    one matching rule of the metrics and the evaluations.

    >>> from fastvqa.data import QARecord
    >>> r = QARecord(video_id="v1", question_id="3")
    >>> record_key({"v1_3": 0.5}, r), record_key({"3": 0.5}, r), record_key({"3": 0.5}, r, True)
    ('v1_3', None, '3')
    """
    if record.key in table:
        return record.key
    if by_question_id and record.question_id in table:
        return record.question_id
    return None


def align_predictions(predictions: Any, records: Sequence, fn: str, *,
                      by_question_id: bool = False) -> tuple[list, dict]:
    """Predictions (a mapping keyed by ``record.key``, or also by
    ``record.question_id`` when ``by_question_id``, or a sequence in record
    order) -> one entry per record (None: missing), plus counts
    ``{"unknown_keys": n}``. Raises :class:`fastvqa.errors.InputError` (a
    ValueError) for a sequence of the wrong length or a non-empty mapping none
    of whose keys names a record, and one that is also a TypeError for
    predictions that are neither."""
    if isinstance(predictions, Mapping):
        keys = {str(k) for k in predictions}
        out, matched = [], set()
        for r in records:
            k = record_key(predictions, r, by_question_id)
            out.append(None if k is None else predictions[k])
            if k is not None:
                matched.add(k)
        if keys and not matched:
            example = next(iter(keys))
            raise InputError(f"{fn}: no prediction key matches a ground-truth record (e.g. "
                             f"{example!r}; records are keyed like {records[0].key!r})"
                             if records else f"{fn}: predictions given but no records")
        return out, {"unknown_keys": len(keys - matched)}
    if isinstance(predictions, (str, bytes)) or not isinstance(predictions, (Sequence, np.ndarray)):
        raise InputTypeError(f"{fn}: preds must be a mapping key -> answer or a sequence in "
                             f"record order, got {type(predictions).__name__}")
    if len(predictions) != len(records):
        raise InputError(f"{fn}: {len(predictions)} predictions for {len(records)} records "
                         "(a sequence must hold one prediction per record, in record order)")
    return list(predictions), {"unknown_keys": 0}


def one_per_question(value: Any, n: int, op: str, name: str, what: str) -> Sequence:
    """``value`` when it is a sequence (not a string or bytes) of ``n``
    entries, one per question of ``preds``; else :class:`InputTypeError` (not
    a sequence; ``what`` says what each entry is) or :class:`InputError`
    (another length), each one line naming ``op`` and ``name``."""
    if isinstance(value, (str, bytes)) or not isinstance(value, (Sequence, np.ndarray)):
        raise InputTypeError(f"{op}: {name} must be a sequence with one {what} per "
                             f"question, got {type(value).__name__}")
    if len(value) != n:
        raise InputError(f"{op}: {name} has {len(value)} entries but preds has {n}; give "
                         "one entry per question, in the same order")
    return value
