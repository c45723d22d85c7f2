# SPDX-License-Identifier: Apache-2.0
"""DVD (video-grounded dialogue) accuracy with the paper's breakdowns.

DVD (Le et al., ACL 2021) is turn-level retrieval over a fixed set of 40
answers; the metric is exact-match accuracy. The official repository has no
evaluation script: ``dvd_codebase/data/analysis_utils.py`` counts a turn
correct when ``str(pred) == str(gt)`` and holds the per-type and
transferability helpers this module reproduces.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any, Optional

import numpy as np

from fastvqa.errors import InputError, InputTypeError
from fastvqa.metrics.result import MetricResult

#: The 40 answers, in the order of the official ``get_vocabulary`` (strings,
#: sorted as strings; action sets comma-joined alphabetically; ``"spl"`` is the
#: snitch). The class index of an answer is its position here.
DVD_ANSWERS: tuple[str, ...] = (
    "0", "1", "10", "2", "3", "4", "5", "6", "7", "8", "9", "False", "True", "blue", "brown",
    "cone", "cube", "cyan", "cylinder", "flying", "flying,rotating", "flying,rotating,sliding",
    "flying,sliding", "gold", "gray", "green", "large", "medium", "metal", "no action", "purple",
    "red", "rotating", "rotating,sliding", "rubber", "sliding", "small", "sphere", "spl", "yellow",
)
_ANSWER_SET = frozenset(DVD_ANSWERS)

_INTEGERS = tuple(str(i) for i in range(11))
_BINARY = ("False", "True")
_ACTION_SETS = ("no action", "flying", "rotating", "sliding", "flying,rotating", "flying,sliding",
                "rotating,sliding", "flying,rotating,sliding")
_COLORS = ("blue", "brown", "cyan", "gold", "gray", "green", "purple", "red", "yellow")
_MATERIALS = ("metal", "rubber")
_SHAPES = ("cone", "cube", "cylinder", "sphere", "spl")
_SIZES = ("large", "medium", "small")

#: The answer sub-space of each question sub-type (dvd.md §3.2, derived from the
#: paper's data types; the paper's Q-type (Random) accuracies match 1/size:
#: integers 9.1 % ~ 1/11, action sets 12.7 % ~ 1/8, colours 11.0 % ~ 1/9, ...).
#: By-order action queries draw from the 8 action-set strings, as the paper's
#: 12.7 % for that sub-type implies.
ANSWER_SUBSPACES: dict[str, tuple[str, ...]] = {
    "action_count": _INTEGERS,
    "action_query.all_actions": _ACTION_SETS,
    "action_query.by_order": _ACTION_SETS,
    "action_query.by_frequency": _ACTION_SETS,
    "attribute_query.color": _COLORS,
    "attribute_query.material": _MATERIALS,
    "attribute_query.shape": _SHAPES,
    "attribute_query.size": _SIZES,
    "compare_action_seq.count": _INTEGERS,
    "compare_action_seq.exist": _BINARY,
    "compare_action_set.count": _INTEGERS,
    "compare_action_set.exist": _BINARY,
    "compare_action_freq.equal": _BINARY,
    "compare_action_freq.less": _BINARY,
    "compare_action_freq.more": _BINARY,
    "object_count": _INTEGERS,
    "object_exist": _BINARY,
}

# Display order: the paper's Table 2 / Table 8 rows.
_TYPE_ORDER = ("action_count", "action_query", "attribute_query", "compare_action_seq",
               "compare_action_set", "compare_action_freq", "object_count", "object_exist")
_SUBTYPE_ORDER = tuple(ANSWER_SUBSPACES)
_INTERVAL_ORDER = ("none", "atomic_non_spatial", "atomic_spatial", "compositional")
_TRANSFER_ORDER = ("attribute", "spatial", "temporal")


def answer_subspace(group: str) -> tuple[str, ...]:
    """The answers a question type or sub-type can have: a sub-type's
    ``ANSWER_SUBSPACES`` entry, or for a type the union of its sub-types' (in
    ``DVD_ANSWERS`` order)."""
    if group in ANSWER_SUBSPACES:
        return ANSWER_SUBSPACES[group]
    members = {a for sub, space in ANSWER_SUBSPACES.items()
               if sub.split(".")[0] == group for a in space}
    if not members:
        raise InputError(f"answer_subspace: unknown DVD question type or sub-type {group!r}")
    return tuple(a for a in DVD_ANSWERS if a in members)


class BreakdownResult(MetricResult):
    """A :class:`MetricResult` whose readable table lists one metric per line
    with its item count (``info["counts"]``): a result with dozens of
    breakdown entries does not fit a two-row table. Used by the DVD and
    multiple-choice metrics."""

    def _plain_table(self, decimals: int) -> str:
        width = max((len(n) for n in self.metrics), default=0)
        lines = [self.benchmark]
        if isinstance(decimals, bool) or not isinstance(decimals, int) or decimals < 0:
            raise InputError(f"format_table: decimals must be an integer >= 0, got {decimals!r}")
        for name, value in self.metrics.items():
            count = self.count(name)
            if math.isnan(value):  # a group over nothing: never a number
                shown = "n/a (n=0)" if count == 0 else "n/a"
                lines.append(f"{name:<{width}}  {shown:>{decimals + 5}}"
                             + (f"  (n={count})" if count else ""))
                continue
            shown = f"{value:.{decimals}f}"
            lines.append(f"{name:<{width}}  {shown:>{decimals + 5}}"
                         + (f"  (n={count})" if count is not None else ""))
        for key in ("mode", "evaluated", "missing"):
            if key in self.info:
                lines.append(f"{key}: {self.info[key]}")
        # Counts that qualify the numbers, shown only when they are not zero.
        for key in ("out_of_answer_space", "unknown_keys", "bleu_fallbacks", "bleu_ties",
                    "out_of_range"):
            if self.info.get(key):
                lines.append(f"{key}: {self.info[key]}")
        return "\n".join(lines)


def _answer_string(value: Any, where: str) -> Optional[str]:
    """A prediction -> the string the official code compares (``str(pred)``);
    None stays None (no prediction)."""
    if value is None:
        return None
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, (str, int, bool, float)):
        return str(value)
    raise InputTypeError(f"dvd_accuracy: prediction for {where} must be a string, number or "
                         f"boolean (compared as str(value)), got {type(value).__name__}")


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
            for k in ((r.key, r.question_id) if by_question_id else (r.key,)):
                if k in predictions:
                    out.append(predictions[k])
                    matched.add(k)
                    break
            else:
                out.append(None)
        if keys and not matched:
            example = next(iter(keys))
            raise InputError(f"{fn}: no prediction key matches a ground-truth record (e.g. "
                             f"{example!r}; records are keyed like {records[0].key!r})"
                             if records else f"{fn}: predictions given but no records")
        return out, {"unknown_keys": len(keys - matched)}
    if isinstance(predictions, (str, bytes)) or not isinstance(predictions, (Sequence, np.ndarray)):
        raise InputTypeError(f"{fn}: predictions must be a mapping key -> answer or a sequence in "
                             f"record order, got {type(predictions).__name__}")
    if len(predictions) != len(records):
        raise InputError(f"{fn}: {len(predictions)} predictions for {len(records)} records "
                         "(a sequence must hold one prediction per record, in record order)")
    return list(predictions), {"unknown_keys": 0}


def _group_accuracy(correct: np.ndarray, labels: Sequence, order: Sequence
                    ) -> list[tuple[str, float, int]]:
    """(label, accuracy %, count) per label present (labels compared as
    strings), labels in ``order`` first, then any others in sorted order."""
    if len(labels) == 0:
        return []
    uniq, inverse = np.unique(np.array([str(x) for x in labels]), return_inverse=True)
    hits = np.bincount(inverse, weights=correct.astype(np.float64), minlength=len(uniq))
    totals = np.bincount(inverse, minlength=len(uniq))
    where = {str(label): i for i, label in enumerate(uniq.tolist())}
    ordered = [str(x) for x in order if str(x) in where]
    ordered += sorted(set(where) - set(ordered))
    return [(label, 100.0 * float(hits[where[label]]) / float(totals[where[label]]),
             int(totals[where[label]])) for label in ordered]


def dvd_accuracy(predictions: Any, records: Sequence, *, effective_or_only: bool = True
                 ) -> MetricResult:
    """Exact-match accuracy over DVD's 40 answers, with the paper's breakdowns.

    Args:
        predictions: a mapping ``record.key`` -> answer (question ids alone
            repeat across videos, so they are not accepted), or a sequence with
            one answer per record in record order.
            An answer is compared as the official code does, ``str(pred) ==
            str(gt)``: ``1`` and ``"1"`` match, ``True`` and ``"True"`` match;
            strings are case-sensitive and not normalised (``"true"`` and
            ``"rotating,flying"`` are outside the answer space). None, or a
            record absent from the mapping, is a missing prediction.
        records: :class:`QARecord` list from :func:`fastvqa.data.load_dvd`
            (answers as strings; the breakdowns read ``record.extra``).
        effective_or_only: for the object-reference-distance breakdown, leave
            out references that could be resolved from the video alone, as
            the paper does (Fig. 9; the notebook's ``effective_or_only``).

    Returns:
        A :class:`MetricResult` (benchmark ``"dvd"``), percentages 0-100:

        - ``"Acc"``: accuracy over all records. Missing predictions and
          predictions outside the 40-answer space count as wrong (counted in
          ``info["missing"]`` / ``info["out_of_answer_space"]``).
        - ``"Acc/type=<t>"`` for the 8 question types (``action_count``,
          ``action_query``, ``attribute_query``, ``compare_action_seq``,
          ``compare_action_set``, ``compare_action_freq``, ``object_count``,
          ``object_exist``; Table 2 top).
        - ``"Acc/subtype=<t>.<s>"`` for the 17 sub-types (Table 8), e.g.
          ``"Acc/subtype=attribute_query.color"``; types without sub-types
          appear under their type name (``"Acc/subtype=object_count"``).
        - ``"Acc/interval=<i>"``: ``none``, ``atomic_non_spatial``,
          ``atomic_spatial``, ``compositional`` (Table 2 centre).
        - ``"Transfer/<t>"`` for ``attribute``, ``spatial``, ``temporal``
          (Table 2 bottom): over the turns carrying that topic transfer whose
          previous turn (same dialogue) was answered correctly, the accuracy
          on the transfer turn (dvd.md §4.1;
          ``analysis_utils.get_transfer_accuracies``). When no previous turn
          was answered correctly the value is NaN (a rate over no turns; the
          official helper prints 0 there), with count 0, shown ``n/a (n=0)``;
          ``info["transfer"]`` gives the counts. A transfer turn whose previous
          turn is not among ``records`` is left out (counted).
        - ``"Acc/turn=<n>"``: by turn position 1-10 (Fig. 9 left).
        - ``"Acc/or_distance=<d>"``: by long-term object-reference turn
          distance (0 = no long-term reference; Fig. 9 right).

        A breakdown appears only for groups present in ``records``; it is left
        out (and named in ``info["breakdowns_omitted"]``) when some record
        lacks the ``extra`` field it needs. ``per_question`` columns: ``key``,
        ``prediction`` (string or None), ``answer``, ``correct``,
        ``in_answer_space``, ``question_type``, ``question_subtype``,
        ``interval_type``, ``turn``, ``transfer`` (comma-joined),
        ``prior_correct`` (None where not a counted transfer turn),
        ``or_distance``. ``info["counts"]`` maps each metric to its number of
        items (transfer: the number of correctly answered previous turns).

    Raises:
        TypeError / ValueError: predictions of the wrong kind or length, or a
            mapping none of whose keys names a record; both
            :class:`fastvqa.errors.InputError`.
    """
    records = list(records)
    raw, align_info = align_predictions(predictions, records, "dvd_accuracy")
    preds = [_answer_string(p, r.key) for p, r in zip(raw, records)]
    answers = [str(r.answer) for r in records]
    n = len(records)
    correct = np.array([p is not None and p == a for p, a in zip(preds, answers)], dtype=bool)
    in_space = np.array([p in _ANSWER_SET for p in preds], dtype=bool)
    missing = sum(p is None for p in preds)

    metrics: dict[str, float] = {"Acc": 100.0 * float(correct.mean()) if n else math.nan}
    counts: dict[str, int] = {"Acc": n}
    omitted: list[str] = []

    def extra_column(field: str) -> Optional[list]:
        if n and all(field in r.extra for r in records):
            return [r.extra[field] for r in records]
        omitted.append(field)
        return None

    def add_groups(prefix: str, labels: Optional[list], order: Sequence,
                   keep: Optional[np.ndarray] = None) -> None:
        if labels is None:
            return
        idx = np.arange(n) if keep is None else np.flatnonzero(keep)
        for label, acc, count in _group_accuracy(correct[idx], [labels[i] for i in idx], order):
            metrics[f"{prefix}{label}"] = acc
            counts[f"{prefix}{label}"] = count

    qtypes = extra_column("question_type")
    subtypes = extra_column("question_subtype")
    intervals = extra_column("interval_type")
    add_groups("Acc/type=", qtypes, _TYPE_ORDER)
    add_groups("Acc/subtype=", subtypes, _SUBTYPE_ORDER)
    add_groups("Acc/interval=", intervals, _INTERVAL_ORDER)

    # Transferability: conditional accuracy given a correct previous turn.
    transfers = extra_column("transfer_types")
    prior_correct: list[Optional[bool]] = [None] * n
    transfer_info: dict[str, dict[str, int]] = {}
    without_prior = 0
    if transfers is not None and not all("dialogue_index" in r.extra and "turn_index" in r.extra
                                         for r in records):
        omitted.append("dialogue_index/turn_index")
        transfers = None
    if transfers is not None:
        position = {(r.video_id, r.extra["dialogue_index"], r.extra["turn_index"]): i
                    for i, r in enumerate(records)}
        carrier = np.array([bool(kinds) for kinds in transfers], dtype=bool)
        prev = np.full(n, -1, dtype=np.int64)
        for i in np.flatnonzero(carrier):
            r = records[i]
            prev[i] = position.get((r.video_id, r.extra["dialogue_index"],
                                    r.extra["turn_index"] - 1), -1)
        without_prior = int((carrier & (prev < 0)).sum())
        counted = carrier & (prev >= 0)
        prev_ok = np.zeros(n, dtype=bool)
        prev_ok[counted] = correct[prev[counted]]
        for i in np.flatnonzero(counted):
            prior_correct[i] = bool(prev_ok[i])
        for kind in _TRANSFER_ORDER:
            has = counted & np.array([kind in kinds for kinds in transfers], dtype=bool)
            if not has.any():
                continue
            den = int((has & prev_ok).sum())
            num = int((has & prev_ok & correct).sum())
            # The official helper returns 0 when no previous turn was correct;
            # a rate over no turns is not a number: NaN, shown n/a (n=0).
            metrics[f"Transfer/{kind}"] = 100.0 * num / den if den else math.nan
            counts[f"Transfer/{kind}"] = den
            transfer_info[kind] = {"turns": int(has.sum()), "prior_correct": den, "correct": num}

    turns_col = extra_column("turn_position")
    add_groups("Acc/turn=", turns_col, range(1, 1000))
    or_field = "or_distance_effective" if effective_or_only else "or_distance"
    or_col = extra_column(or_field)
    add_groups("Acc/or_distance=", or_col, range(0, 1000),
               keep=None if or_col is None else np.asarray(or_col) >= 0)

    per_question = {
        "key": [r.key for r in records],
        "prediction": preds,
        "answer": answers,
        "correct": correct,
        "in_answer_space": in_space,
        "question_type": qtypes if qtypes is not None else [None] * n,
        "question_subtype": subtypes if subtypes is not None else [None] * n,
        "interval_type": intervals if intervals is not None else [None] * n,
        "turn": turns_col if turns_col is not None else [None] * n,
        "transfer": [",".join(t) for t in transfers] if transfers is not None else [""] * n,
        "prior_correct": prior_correct,
        "or_distance": or_col if or_col is not None else [None] * n,
    }
    info = {
        "evaluated": n,
        "missing": missing,
        "out_of_answer_space": int(sum(p is not None and not s for p, s in zip(preds, in_space))),
        "unknown_keys": align_info["unknown_keys"],
        "gt_outside_answer_space": int(sum(a not in _ANSWER_SET for a in answers)),
        "transfer": transfer_info,
        "transfer_without_previous_turn": without_prior,
        "effective_or_only": effective_or_only,
        "breakdowns_omitted": sorted(set(omitted)),
        "counts": counts,
        "rule": "exact match str(pred) == str(gt) over the 40 DVD answers "
                "(dvd_codebase/data/analysis_utils.py)",
    }
    return BreakdownResult("dvd", metrics, per_question, info)
