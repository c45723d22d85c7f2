# SPDX-License-Identifier: Apache-2.0
"""Video dialogue QA: exact-match accuracy over a closed answer set (DVD), with
the paper's breakdowns.

DVD (Le et al., ACL 2021) is turn-level retrieval over a fixed set of 40
answers; the metric is exact-match accuracy. The official repository has no
evaluation script: ``dvd_codebase/data/analysis_utils.py`` counts a turn
correct when ``str(pred) == str(gt)`` and holds the per-type and
transferability helpers this module reproduces.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any, Literal, Optional, Union

import numpy as np

from fastvqa.errors import InputError, InputTypeError
from fastvqa.metrics._align import align_predictions
from fastvqa.metrics.base import Metric
from fastvqa.metrics.result import BreakdownResult, MetricResult

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
#: Cross-turn temporal relations (Fig. 8 shows none / before / after).
TEMPORAL_RELATIONS = ("none", "before", "after", "during")

#: The opt-in breakdowns of :func:`dvd_accuracy` (``by=``), the paper's Fig. 7
#: and Fig. 8: number of contained objects, relative interval length, and
#: cross-turn temporal relation (overall and per question type).
EXTRA_BREAKDOWNS = ("contained", "length", "relation")
#: A name :func:`dvd_accuracy`'s ``by`` takes: one of ``EXTRA_BREAKDOWNS``, or ``"all"``.
_Breakdown = Literal["contained", "length", "relation", "all"]

#: The frame an open interval end (``None``) stands for, as the official
#: ``analysis_utils.get_start_end_time`` (CATER videos have 301 frames).
VIDEO_FRAMES = 301


def answer_subspace(group: str) -> tuple[str, ...]:
    """The answers a question type or sub-type can have: a sub-type's
    ``ANSWER_SUBSPACES`` entry, or for a type the union of its sub-types' (in
    ``DVD_ANSWERS`` order).

    Example:
        >>> answer_subspace("attribute_query.size"), answer_subspace("compare_action_freq")
        (('large', 'medium', 'small'), ('False', 'True'))
    """
    if group in ANSWER_SUBSPACES:
        return ANSWER_SUBSPACES[group]
    members = {a for sub, space in ANSWER_SUBSPACES.items()
               if sub.split(".")[0] == group for a in space}
    if not members:
        raise InputError(f"answer_subspace: unknown DVD question type or sub-type {group!r}")
    return tuple(a for a in DVD_ANSWERS if a in members)


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


def temporal_relation(dependency: str) -> str:
    """The cross-turn temporal relation a ``turn_dependencies["temporal"]``
    value carries: ``"before"``, ``"after"`` or ``"during"`` for ``"before"``,
    ``"prior_sliding_after"``, ``"2_flying_among_during"`` ... (the notebook's
    list of values: the relation is the last ``_`` part), else ``"none"``
    (``"none"``, ``"video_update"``, ``"last_unique_obj_none"``,
    ``"earlier_unique_obj_none"``: no relation to the previous interval).

    Example:
        >>> temporal_relation("prior_sliding_after"), temporal_relation("video_update")
        ('after', 'none')
    """
    last = dependency.rsplit("_", 1)[-1]
    return last if last in TEMPORAL_RELATIONS[1:] else "none"


def _period_frames(period: Any, field: str) -> tuple[float, float]:
    """A period ``[start_event, end_event]`` -> (start, end) frames, a
    ``None`` start being frame 0 and a ``None`` end ``VIDEO_FRAMES``
    (``analysis_utils.get_start_end_time``)."""
    if not isinstance(period, (list, tuple)) or len(period) != 2:
        raise InputError(f"dvd_accuracy: {field} must be [start_event, end_event], "
                         f"got {period!r}")
    ends = []
    for event, default in zip(period, (0.0, float(VIDEO_FRAMES))):
        if event is None:
            ends.append(default)
            continue
        frame = event[-1] if isinstance(event, (list, tuple)) and event else None
        if isinstance(frame, bool) or not isinstance(frame, (int, float)) \
                or not math.isfinite(frame):
            raise InputError(f"dvd_accuracy: {field} holds an event without a frame number "
                             f"as its last item: {event!r}")
        ends.append(float(frame))
    return ends[0], ends[1]


def relative_interval_length(template: Any) -> float:
    """The turn's interval length as a fraction of its video input, as the
    official notebook's ``get_interval_relative_size``: frames of
    ``template["used_periods"][-1]`` (0 for a ``None`` period) over frames of
    ``(None, template["cutoff"])`` (the video up to the cutoff; 301 frames
    when the cutoff is ``None``). NaN when the video input has no frames.

    Example:
        >>> # an interval from the start to an event at frame 150.5, no cutoff (301 frames)
        >>> relative_interval_length({"used_periods": [[None, ["obj", "slide", 150.5]]],
        ...                           "cutoff": None})
        0.5
    """
    if not isinstance(template, Mapping) or not isinstance(template.get("used_periods"), list) \
            or not template["used_periods"]:
        raise InputError("dvd_accuracy: the relative interval length needs "
                         "extra['template'] with a non-empty 'used_periods' list")
    period = template["used_periods"][-1]
    size = 0.0
    if period is not None:
        start, end = _period_frames(period, "template.used_periods[-1]")
        size = end - start
    whole_start, whole_end = _period_frames([None, template.get("cutoff")], "template.cutoff")
    whole = whole_end - whole_start
    return size / whole if whole > 0 else math.nan


def length_bin(ratio: float) -> int:
    """The official ``get_period_ratio_bin``: 0 for a ratio of 0, else the
    number of ``n`` in 1..9 with ``ratio * 10 > n`` (so (0, 0.1] -> 0,
    (0.1, 0.2] -> 1, ..., above 0.9 -> 9, ends inclusive on the right).

    Example:
        >>> [length_bin(r) for r in (0.0, 0.1, 0.15, 0.95)]
        [0, 0, 1, 9]
    """
    return sum(1 for n in range(1, 10) if ratio * 10 > n)


def _length_label(k: int) -> str:
    return f"{10 * k}-{10 * (k + 1)}%"


def _check_by(by: Any) -> tuple[str, ...]:
    if isinstance(by, str):
        by = (by,)
    try:
        names = tuple(by)
    except TypeError:
        raise InputTypeError(f"dvd_accuracy: by must be a sequence of names from "
                             f"{', '.join(EXTRA_BREAKDOWNS)} (or 'all'), got {by!r}") from None
    if "all" in names:
        return EXTRA_BREAKDOWNS
    unknown = [n for n in names if n not in EXTRA_BREAKDOWNS]
    if unknown:
        raise InputError(f"dvd_accuracy: unknown breakdown {unknown[0]!r} in by; choose from "
                         f"{', '.join(EXTRA_BREAKDOWNS)} or 'all'")
    return tuple(n for n in EXTRA_BREAKDOWNS if n in names)


def dvd_accuracy(preds: Any, target: Sequence, *, effective_or_only: bool = True,
                 by: Union[_Breakdown, Sequence[_Breakdown]] = (),
                 effective_length_only: bool = True,
                 effective_relation_only: bool = True) -> MetricResult:
    """Exact-match accuracy over DVD's 40 answers, with the paper's breakdowns.

    Args:
        preds: a mapping ``record.key`` -> answer (question ids alone
            repeat across videos, so they are not accepted), or a sequence with
            one answer per record in record order.
            An answer is compared as the official code does, ``str(pred) ==
            str(gt)``: ``1`` and ``"1"`` match, ``True`` and ``"True"`` match;
            strings are case-sensitive and not normalised (``"true"`` and
            ``"rotating,flying"`` are outside the answer space). None, or a
            record absent from the mapping, is a missing prediction.
        target: the :class:`QARecord` list from :func:`fastvqa.data.load_dvd`
            (answers as strings; the breakdowns read ``record.extra``).
        effective_or_only: for the object-reference-distance breakdown, leave
            out references that could be resolved from the video alone, as
            the paper does (Fig. 9; the notebook's ``effective_or_only``).
        by: extra breakdowns, off by default (names from
            ``EXTRA_BREAKDOWNS``, or ``"all"``): ``"contained"``,
            ``"length"``, ``"relation"`` (see Returns).
        effective_length_only: for ``"length"``, only turns that cannot be
            answered from the whole video (``effective_temporal_localizing``
            true), as the paper's Fig. 7 right removes the others.
        effective_relation_only: for ``"relation"``, keep a turn with a
            before/after/during relation only when its answer over the
            previous turn's interval differs (``effective_interval_tracking``
            true): the paper's Fig. 8 removes turns whose "visual context is
            the same in both intervals". Turns without a relation are all kept.

    Returns:
        A :class:`MetricResult` (metric ``"dvd_accuracy"``), percentages 0-100:

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
          turn is not among ``target`` is left out (counted).
        - ``"Acc/turn=<n>"``: by turn position 1-10 (Fig. 9 left).
        - ``"Acc/or_distance=<d>"``: by long-term object-reference turn
          distance (0 = no long-term reference; Fig. 9 right).

        With ``by`` (in this order, after the rows above):

        - ``"Acc/contained=<n>"``: by the number of objects the question's
          program mentions that are contained during its interval
          (``len(extra["contained_objs"])``, the generator's
          ``has_contained_obj``; Fig. 7 left);
        - ``"Acc/length=<lo>-<hi>%"``: by relative interval length in 10 %
          bins (:func:`relative_interval_length` binned by
          :func:`length_bin`: ``"0-10%"`` holds (0, 10 %] and 0,
          ``"90-100%"`` everything above 90 %; Fig. 7 right);
        - ``"Acc/relation=<r>"`` and ``"Acc/type=<t>/relation=<r>"``: by
          cross-turn temporal relation (:func:`temporal_relation`:
          ``none``, ``before``, ``after``, ``during``), overall and per
          question type (Fig. 8).

        The paper gives these only as figures, without numbers; the bins and
        filters are the official code's. They add ``per_question`` columns
        ``contained``, ``relative_length`` (NaN where not counted) and
        ``relation`` (None where not counted).

        A breakdown appears only for groups present in ``target``; it is left
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

    Example:
        >>> from fastvqa.data import QARecord
        >>> records = [QARecord("v1", "0", answer="2", extra={"question_type": "object_count"}),
        ...            QARecord("v1", "1", answer="red",
        ...                     extra={"question_type": "attribute_query"})]
        >>> dvd_accuracy({"v1_0": 2, "v1_1": "blue"}, records)  # keyed by record.key
        BreakdownResult(dvd_accuracy: Acc=50, Acc/type=attribute_query=0,
                        Acc/type=object_count=100)
    """
    records = list(target)
    raw, align_info = align_predictions(preds, records, "dvd_accuracy")
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
    extra_info, extra_columns = _add_extra_breakdowns(
        _check_by(by), records, qtypes, extra_column, add_groups,
        effective_length_only=effective_length_only,
        effective_relation_only=effective_relation_only)

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
        **extra_columns,
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
        **extra_info,
        "breakdowns_omitted": sorted(set(omitted)),
        "counts": counts,
        "rule": "exact match str(pred) == str(gt) over the 40 DVD answers "
                "(dvd_codebase/data/analysis_utils.py)",
    }
    return BreakdownResult("dvd_accuracy", metrics, per_question, info)


def _add_extra_breakdowns(by: tuple[str, ...], records: list, qtypes: Optional[list],
                          extra_column, add_groups, *, effective_length_only: bool,
                          effective_relation_only: bool) -> tuple[dict, dict]:
    """The ``by`` breakdowns of :func:`dvd_accuracy`, added through its
    ``add_groups``/``extra_column``; returns their ``info`` entries and
    per-question columns (``contained``, ``relative_length`` (NaN where not
    counted), ``relation``)."""
    info: dict[str, Any] = {}
    columns: dict[str, Any] = {}
    n = len(records)
    if "contained" in by:
        contained = extra_column("contained_objs")
        if contained is not None:
            if not all(isinstance(c, Mapping) for c in contained):
                raise InputError("dvd_accuracy: extra['contained_objs'] must be an object "
                                 "{object_id: {...}} for every record")
            columns["contained"] = [len(c) for c in contained]
            add_groups("Acc/contained=", columns["contained"], range(0, 1000))
    if "length" in by:
        templates = extra_column("template")
        flags = extra_column("effective_temporal_localizing") if effective_length_only \
            else [True] * n
        if templates is not None and flags is not None:
            ratios = np.array([relative_interval_length(t) for t in templates], dtype=np.float64)
            keep = np.array([bool(f) for f in flags], dtype=bool) & ~np.isnan(ratios)
            bins = [_length_label(length_bin(r)) if k else None for r, k in zip(ratios, keep)]
            add_groups("Acc/length=", bins, [_length_label(k) for k in range(10)], keep=keep)
            columns["relative_length"] = np.where(keep, ratios, np.nan)
            info["length"] = {"effective_only": effective_length_only,
                              "not_effective": int(sum(not bool(f) for f in flags)),
                              "no_video_frames": int(np.isnan(ratios).sum())}
    if "relation" in by:
        deps = extra_column("turn_dependencies")
        if deps is not None:
            if not all(isinstance(d, Mapping) and isinstance(d.get("temporal"), str)
                       for d in deps):
                raise InputError("dvd_accuracy: the relation breakdown needs "
                                 "extra['turn_dependencies']['temporal'] (a string) for every "
                                 "record")
            relations = [temporal_relation(d["temporal"]) for d in deps]
            # A turn relating to the previous interval counts only when that
            # interval gives another answer (the generator's
            # is_effective_interval_tracking); turn 1 has no flag and no relation.
            keep = np.array([rel == "none" or not effective_relation_only
                             or bool(r.extra.get("effective_interval_tracking"))
                             for rel, r in zip(relations, records)], dtype=bool)
            add_groups("Acc/relation=", relations, TEMPORAL_RELATIONS, keep=keep)
            columns["relation"] = [rel if k else None for rel, k in zip(relations, keep)]
            if qtypes is not None:
                for qtype in _TYPE_ORDER + tuple(sorted(set(map(str, qtypes)) - set(_TYPE_ORDER))):
                    of_type = keep & np.array([str(q) == qtype for q in qtypes], dtype=bool)
                    if of_type.any():
                        add_groups(f"Acc/type={qtype}/relation=", relations, TEMPORAL_RELATIONS,
                                   keep=of_type)
            info["relation"] = {"effective_only": effective_relation_only,
                                "not_effective": int((~keep).sum())}
    if by:
        info["breakdowns_by"] = list(by)
    return info, columns


class DVDAccuracy(Metric):
    """:func:`dvd_accuracy` over batches: ``DVDAccuracy(effective_or_only=...)``,
    then ``update(preds, target)`` per batch (``preds`` a mapping keyed by
    ``record.key`` or a sequence in the batch's record order, the same kind in
    every batch; ``target`` the batch's records). ``compute()`` equals
    ``dvd_accuracy`` on all batches concatenated, so a transfer turn whose
    previous turn came in another batch is still counted. See
    :class:`fastvqa.metrics.Metric`.

    Example:
        >>> from fastvqa.data import QARecord
        >>> m = DVDAccuracy()
        >>> m.update(["2"], [QARecord("v1", "0", answer="2")])
        >>> m.update(["blue"], [QARecord("v1", "1", answer="red")])
        >>> m.compute()["Acc"]
        50.0
    """

    function = "dvd_accuracy"
