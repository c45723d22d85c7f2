# SPDX-License-Identifier: Apache-2.0
"""Grounded video QA metrics (NExT-GQA, DeVE-QA): Acc@QA, Acc@GQA, mIoP,
IoP@t, mIoU, IoU@t, over ragged multi-segment ground truth.

Two named modes (see ``docs/anchors/eval.md`` §2.2, §3.1 and §6):

- ``"nextgqa"`` (default): the official NExT-GQA evaluator
  (``doc-doc/NExT-GQA``, ``code/TempGQA/eval_ground.py``, function
  ``eval_ground``; QA accuracy as in ``eval_next.py``). This is the protocol
  behind the published NExT-GQA and DeVE-QA numbers.
- ``"deveqa-repo"``: the later ``QHUni/DeVE-QA`` repository
  (``method/devi/eval.py`` with ``schema.TimeSpan``), a re-implementation
  whose rules differ (single gold span, true union, missing predictions count
  as zero). Not the protocol of the paper's tables; kept for comparison.

All spans are ``[start, end]`` in seconds with continuous ends.
"""

from __future__ import annotations

import math
from typing import Any, Literal, Optional, Sequence

import numpy as np

from fastvqa import _arrays, _checks, ragged
from fastvqa.data.answers import NO_ANSWER
from fastvqa.errors import InputError, InputTypeError
from fastvqa.metrics._align import align_predictions, records_of
from fastvqa.metrics.base import Metric, _items
from fastvqa.metrics.result import MetricResult

MODES = ("nextgqa", "deveqa-repo")

#: Acc@GQA counts a question when its answer is right and its IoP reaches this.
GQA_IOP = 0.5

_OP = "grounded_qa"


def grounded_qa(
    preds: Any,
    target: Any,
    *,
    pred_answers: Any = None,
    gt_answers: Any = None,
    mode: Literal["nextgqa", "deveqa-repo"] = "nextgqa",
    thresholds: Sequence[float] = (0.3, 0.5),
    durations: Any = None,
    normalized: bool = False,
    keys: Optional[Sequence[str]] = None,
    by_question_id: bool = False,
) -> MetricResult:
    """Grounded QA metrics over N questions with ragged ground truth.

    Args:
        preds: ``(N, 2)`` predicted ``[start, end]`` in seconds (or
            fractions of the video with ``normalized=True``), one row per
            question. A row of two NaNs means "no span prediction for this
            question"; a row with one NaN, or an infinite value, is an error.
        target: the ground-truth spans in seconds (finite values), either

            - a **tuple** ``(gt_spans, gt_offsets)`` in CSR form: ``gt_spans``
              ``(K, 2)``, all questions' spans concatenated row by row, and
              ``gt_offsets`` ``(N + 1,)`` integers: question ``i``'s ground
              truth is ``gt_spans[gt_offsets[i]:gt_offsets[i + 1]]`` (see
              :func:`fastvqa.data.spans_to_csr`); or
            - a **list** of N per-question arrays shaped ``(k_i, 2)``; or
            - a **list of records** (:class:`fastvqa.data.QARecord`, what
              ``load_nextgqa``/``load_deveqa`` and
              :func:`fastvqa.data.load_benchmark` return): the gold spans,
              answers and durations are the records'. ``preds`` (and
              ``pred_answers``) may then be mappings keyed like the official
              prediction files, ``"<video_id>_<qid>"`` (or the question id
              with ``by_question_id=True``, as DeVi's DeVE-QA files),
              matched to the records as the evaluations match them
              (:func:`fastvqa.metrics._align.record_key`); a record without
              a prediction has none (a NaN row, ``NO_ANSWER``), and
              ``keys`` are the records' keys.

            A question may have no gold span (an empty row scores 0).
        pred_answers: ``(N,)`` integers, the predicted option index;
            ``NO_ANSWER`` (-1) means no answer prediction for the question. Any
            other value that differs from the gold one is simply wrong.
        gt_answers: ``(N,)`` non-negative integers, the correct option index.
            Give both answer arrays or neither; without them Acc@QA and Acc@GQA
            are not reported.
        mode: ``"nextgqa"`` or ``"deveqa-repo"`` (rules below).
        thresholds: IoU/IoP thresholds, each in ``[0, 1]``; reported as
            ``"IoP@0.3"``, ``"IoU@0.5"``... (compared with ``>=``).
        durations: ``(N,)`` video lengths in seconds. Needed for
            ``normalized=True``, finite and >= 0 for every question with a
            span prediction (a question without one may have NaN); otherwise
            only kept as the per-question ``"duration"`` column (for
            :func:`slice_by_duration` and plots).
        normalized: predictions are fractions of the video: converted to
            seconds as ``np.round(x * duration, 1)`` per question, as the
            official script does with ``gs=True`` (NumPy rounds ``x * 10`` half
            to even, which differs from Python's ``round`` for values such as
            ``0.038 * 25 = 0.95``: NumPy gives 1.0, Python 0.9).
        keys: ``(N,)`` question keys (``"<video_id>_<qid>"``), kept as the
            per-question ``"key"`` column.

    Returns:
        :class:`MetricResult` with, in the official print order, ``"Acc@QA"``
        and ``"Acc@GQA"`` (only with answers), ``"mIoP"``, ``"IoP@t"`` per
        threshold, ``"mIoU"``, ``"IoU@t"`` per threshold: percentages (0-100)
        at full precision; NaN where the denominator is 0. ``per_question``
        has one entry per input question: ``key`` (if given), ``IoU``, ``IoP``
        (NaN where not evaluated), ``evaluated`` (in the grounding
        denominator), ``qa_evaluated`` (in the Acc@QA denominator) and
        ``correct`` (answer right; both with answers),
        ``duration`` (if given). ``info``: mode, questions, evaluated,
        missing (questions without a span prediction), answered, thresholds.

    Mode ``"nextgqa"`` (official ``eval_ground.py``, ``eval_next.py``):

    - per question, IoU and IoP are the maxima over the gold segments, taken
      independently and starting from 0, with the official per-pair rule of
      :func:`fastvqa.ops.grounding_overlap` (signed intersection over the
      hull; a zero-length prediction has IoU 0 and IoP 1 when the point lies in
      a gold segment, ends included; reversed predictions score 0; no clamping
      to the video);
    - questions without a span prediction are skipped: left out of every
      grounding denominator, not counted as 0;
    - Acc@GQA = answer correct and IoP >= 0.5, over the evaluated questions.
      A question with a span prediction must have an answer prediction (the
      official script stops with a KeyError); otherwise ValueError;
    - Acc@QA is the plain accuracy over the questions with an answer
      prediction (with or without a span).

    Mode ``"deveqa-repo"`` (``QHUni/DeVE-QA`` ``devi/eval.py``):

    - one gold segment per question (a row with more is a ValueError; use
      ``"nextgqa"`` for multi-segment ground truth); a row without one scores
      IoU = IoP = 0;
    - both spans are sanitised first: ``start = max(start, 0)``,
      ``end = max(end, start)`` (a reversed ``[5, 3]`` becomes ``[5, 5]``);
    - textbook overlap: ``inter = max(min(ends) - max(starts), 0)``,
      IoU = inter / (len_p + len_g - inter) (0 when the union is 0), IoP =
      inter / len_p, **0 for a zero-length prediction**;
    - missing span or answer predictions count as 0 / wrong, and every
      denominator is all N questions.

    Raises:
        ValueError: shapes, NaN/infinite values, offsets, thresholds, mode, or
            an evaluated question without an answer (``"nextgqa"``).
        TypeError: non-numeric spans, non-integer answers.

        Both are :class:`fastvqa.errors.InputError` (the type errors also
        ``TypeError``): the caller's data or arguments. Any other exception
        is a fastvqa bug.

    Example:
        >>> import numpy as np
        >>> preds = np.array([[0.0, 4.0], [2.0, 3.0]])
        >>> target = [np.array([[2.0, 6.0]]), np.array([[0.0, 5.0]])]  # one (k_i, 2) per question
        >>> grounded_qa(preds, target, pred_answers=[1, 0], gt_answers=[1, 2])
        MetricResult(grounded_qa: Acc@QA=50, Acc@GQA=50, mIoP=75, IoP@0.3=100, IoP@0.5=100,
                     mIoU=26.67, IoU@0.3=50, IoU@0.5=0)
    """
    _checks.choice(mode, _OP, "mode", MODES)
    records = records_of(target)
    if records is not None:
        preds, target, pred_answers, gt_answers, durations, keys = _from_records(
            preds, records, pred_answers, gt_answers, durations, keys, by_question_id)
    pred = _spans(preds, "preds")
    n = pred.shape[0]
    gt_spans, gt_offsets = _target_csr(target, n)
    gt = _spans(gt_spans, "gt_spans")
    offsets = _offsets(gt_offsets, n, gt.shape[0])
    thresholds = _thresholds(thresholds)
    scan = None
    if mode == "nextgqa" and not normalized:
        scan, answers = _scan(pred, gt, offsets, thresholds, pred_answers, gt_answers, n)
        missing = scan.missing
    else:
        missing = _missing_rows(pred)
        _check_gt_finite(gt)
        answers = _answers(pred_answers, gt_answers, n)
    # Only a question with a span prediction is scaled: one without needs no
    # duration (the official gs=True scales the predictions it reads).
    dur = _durations(durations, n, required=~missing if normalized else None)
    if normalized:
        # Official gs=True conversion: np.round(pred * duration, 1), per question.
        pred = np.round(pred * dur[:, None], 1)
    if keys is not None:
        keys = [str(k) for k in keys]
        if len(keys) != n:
            raise InputError(f"{_OP}: keys has {len(keys)} entries, expected N = {n}")

    if mode == "nextgqa":
        # A "no prediction" row is NaN in, NaN out of the kernel: exactly the
        # per-question value of a skipped question.
        iou, iop = (scan.iou, scan.iop) if scan is not None else \
            _nextgqa_overlap(pred, gt, offsets)
        evaluated = ~missing
    else:
        iou, iop = _deveqa_repo_overlap(pred, gt, offsets, missing, keys)
        evaluated = np.ones(n, dtype=bool)

    per_question: dict[str, Any] = {}
    if keys is not None:
        per_question["key"] = keys
    per_question["IoU"] = iou
    per_question["IoP"] = iop
    per_question["evaluated"] = evaluated
    if answers is not None:
        pa, ga = answers
        if scan is not None:
            answered, correct = scan.answered, scan.correct
        else:
            answered = pa != NO_ANSWER
            correct = answered & (pa == ga)
        if mode == "nextgqa":
            i = scan.unanswered if scan is not None else _first(evaluated & ~answered)
            if i >= 0:
                unanswered = evaluated & ~answered
                who = f"question {i}" + (f" ({keys[i]!r})" if keys is not None else "")
                raise InputError(
                    f"{_OP}: {who} has a span prediction but no answer prediction "
                    f"(pred_answers == {NO_ANSWER}); the official NExT-GQA evaluator needs an "
                    f"answer for every grounded prediction ({np.count_nonzero(unanswered)} such "
                    "questions)"
                )
            qa_denominator = answered
        else:
            qa_denominator = np.ones(n, dtype=bool)  # missing answers count as wrong
        per_question["qa_evaluated"] = qa_denominator
        per_question["correct"] = correct
    if dur is not None:
        per_question["duration"] = dur

    info = {
        "mode": mode,
        "questions": n,
        "evaluated": int(np.count_nonzero(evaluated)),
        "missing": int(np.count_nonzero(missing)),
        "missing_policy": "skipped" if mode == "nextgqa" else "counted as zero",
        "thresholds": list(thresholds),
        "gqa_iop": GQA_IOP,
        "normalized": bool(normalized),
    }
    if answers is not None:
        info["answered"] = scan.n_answered if scan is not None else \
            int(np.count_nonzero(answered))
    metrics = _summarise(per_question, thresholds, _scanned(scan, thresholds))
    return MetricResult("grounded_qa", metrics, per_question, info)


# ------------------------------------------------------------------- records


def _from_records(preds, records, pred_answers, gt_answers, durations, keys, by_question_id):
    """grounded_qa's array arguments from records and per-record (or keyed)
    predictions."""
    aligned, _ = align_predictions(preds, records, _OP, by_question_id=by_question_id)
    pred = np.full((len(records), 2), np.nan)
    for i, span in enumerate(aligned):
        if span is not None:
            pred[i] = _spans(np.asarray(span, dtype=np.float64).reshape(1, -1), "preds")[0]
    target = [r.spans for r in records]
    if pred_answers is not None:
        answers, _ = align_predictions(pred_answers, records, _OP,
                                       by_question_id=by_question_id)
        pred_answers = [NO_ANSWER if a is None else a for a in answers]
        if gt_answers is None:
            gt_answers = [r.answer for r in records]
    if durations is None and any(r.duration is not None for r in records):
        durations = [math.nan if r.duration is None else r.duration for r in records]
    return pred, target, pred_answers, gt_answers, durations, keys or [r.key for r in records]


# ------------------------------------------------------------------ overlaps


def _scan(pred, gt, offsets, thresholds, pred_answers, gt_answers, n):
    """NExT-GQA mode in seconds: one compiled pass (fastvqa.ops.temporal_iou.
    grounding_scan) takes the overlaps, the "no prediction" rows, the counts,
    the answers and the sums; when it finds an invalid row, the checks of the
    other modes run to raise their own messages, in the same order."""
    from fastvqa.ops.temporal_iou import grounding_scan

    try:
        answers, deferred = _answer_arrays(pred_answers, gt_answers, n), None
    except InputError as err:  # raised after the span errors, as in the other modes
        answers, deferred = None, err
    pa, ga = answers if answers is not None else (None, None)
    scan = grounding_scan(pred, gt, offsets, thresholds, pa, ga, no_answer=NO_ANSWER,
                          gqa_iop=GQA_IOP)
    if scan.bad_pred >= 0:
        _missing_rows(pred)
    if scan.bad_gt >= 0:
        _check_gt_finite(gt)
    if deferred is not None:
        raise deferred
    if scan.bad_gt_answer >= 0:
        _check_gt_answers(ga)
    if scan.bad_pred >= 0 or scan.bad_gt >= 0 or scan.bad_gt_answer >= 0:
        raise AssertionError(f"{_OP}: the compiled scan found an invalid row the checks accept")
    return scan, answers


def _first(mask: np.ndarray) -> int:
    """Index of the first True in ``mask``, or -1."""
    return int(np.argmax(mask)) if mask.any() else -1


def _scanned(scan, thresholds) -> Optional[dict]:
    """_summarise's counts and sums from a grounding_scan result (the sums only
    when this NumPy adds in the order the scan reproduces)."""
    if scan is None:
        return None
    from fastvqa.ops.temporal_iou import numpy_order_sums

    k = len(thresholds)
    out: dict = {("IoU", t): int(scan.counts[j]) for j, t in enumerate(thresholds)}
    out.update({("IoP", t): int(scan.counts[k + j]) for j, t in enumerate(thresholds)})
    if numpy_order_sums():
        out["sum", "IoU"], out["sum", "IoP"] = scan.sum_iou, scan.sum_iop
    if scan.answered is not None:
        out.update(correct=scan.n_correct, answered=scan.n_answered, gqa=scan.n_gqa)
    return out



def _nextgqa_overlap(pred: np.ndarray, gt: np.ndarray, offsets: np.ndarray):
    from fastvqa.ops import grounding_overlap

    # The compiled kernel is the official per-pair rule with the independent
    # max-from-0 over each row, in float64 (bit-identical to the Python loop).
    iou, iop = grounding_overlap(pred, gt, offsets)
    return np.asarray(iou, dtype=np.float64), np.asarray(iop, dtype=np.float64)


def _sanitise(spans: np.ndarray) -> np.ndarray:
    """DeVi ``TimeSpan``: start clamped to >= 0, then end to >= start."""
    start = np.maximum(spans[:, 0], 0.0)
    end = np.maximum(spans[:, 1], start)
    return np.stack((start, end), axis=1)


def _deveqa_repo_overlap(pred, gt, offsets, missing, keys):
    from fastvqa.ops import paired_temporal_iou

    n = pred.shape[0]
    counts = np.diff(offsets)
    if (counts > 1).any():
        i = int(np.argmax(counts > 1))
        who = f"question {i}" + (f" ({keys[i]!r})" if keys is not None else "")
        raise InputError(
            f"{_OP}: mode 'deveqa-repo' takes one gold span per question, {who} has "
            f"{int(counts[i])}; use mode='nextgqa' for multi-segment ground truth"
        )
    iou = np.zeros(n, dtype=np.float64)
    iop = np.zeros(n, dtype=np.float64)
    # Missing predictions and questions without a gold span stay 0.
    rows = np.flatnonzero((counts == 1) & ~missing)
    if rows.size:
        p = _sanitise(pred[rows])
        g = _sanitise(gt[offsets[rows]])
        # After sanitising, the kernel's textbook "iou"/"iop" modes are exactly
        # DeVi's rules: inter clamped at 0, union len_p + len_g - inter (0 -> 0),
        # IoP 0 for a zero-length prediction.
        iou[rows] = paired_temporal_iou(p, g, "iou")
        iop[rows] = paired_temporal_iou(p, g, "iop")
    return iou, iop


# --------------------------------------------------------------- aggregation


def _fmt_threshold(t: float) -> str:
    return f"{t:g}"


def _percent(count: float, total: int) -> float:
    return count / total * 100.0 if total else math.nan


def _summarise(per_question: dict[str, Any], thresholds: Sequence[float],
               scanned: Optional[dict] = None) -> dict[str, float]:
    """Metrics from per-question columns (also used by the slicing helpers).

    IoU/IoP are NaN exactly where a question is not evaluated, and a NaN
    compares False with every threshold, so counts need no mask; sums take
    the evaluated entries only (NumPy's pairwise sum over them). ``scanned``:
    the same counts and sums already taken by grounding_scan (see
    :func:`_scanned`), used instead of counting again.
    """
    scanned = scanned or {}
    evaluated = np.asarray(per_question["evaluated"], dtype=bool)
    iou = np.asarray(per_question["IoU"], dtype=np.float64)
    iop = np.asarray(per_question["IoP"], dtype=np.float64)
    n = int(np.count_nonzero(evaluated))
    metrics: dict[str, float] = {}
    if "correct" in per_question:
        qa_evaluated = np.asarray(per_question["qa_evaluated"], dtype=bool)
        correct = np.asarray(per_question["correct"], dtype=bool)
        # correct implies qa_evaluated (a right answer is an answer), so no mask.
        if "correct" in scanned:
            right, answered, gqa = scanned["correct"], scanned["answered"], scanned["gqa"]
        else:
            right, answered = int(np.count_nonzero(correct)), int(np.count_nonzero(qa_evaluated))
            gqa = int(np.count_nonzero(correct & (iop >= GQA_IOP)))
        metrics["Acc@QA"] = _percent(right, answered)
        metrics["Acc@GQA"] = _percent(gqa, n)
    for name, values in (("IoP", iop), ("IoU", iou)):
        if ("sum", name) in scanned:
            total = scanned["sum", name]
        else:
            total = float(values[evaluated].sum() if n < evaluated.size else values.sum())
        metrics[f"m{name}"] = _percent(total, n)
        for t in thresholds:
            count = scanned[name, t] if (name, t) in scanned else \
                int(np.count_nonzero(values >= t))
            metrics[f"{name}@{_fmt_threshold(t)}"] = _percent(count, n)
    return metrics


# ---------------------------------------------------------------- validation


def _to_numpy(x: Any, name: str) -> np.ndarray:
    if _arrays.is_torch(x):
        x = x.detach().cpu().numpy()
    try:
        return np.asarray(x)
    except (ValueError, TypeError) as err:
        raise InputTypeError(f"{_OP}: {name} is not an array of numbers ({err})") from None


def _spans(x: Any, name: str) -> np.ndarray:
    arr = _to_numpy(x, name)
    if arr.dtype.kind not in "fiu":
        raise InputTypeError(f"{_OP}: {name} must hold numbers, got dtype {arr.dtype}")
    if arr.size == 0 and arr.ndim <= 2:
        arr = arr.reshape(0, 2)
    if arr.ndim != 2 or arr.shape[1] != 2:
        raise InputError(f"{_OP}: {name} must have shape (N, 2), got {arr.shape}")
    return np.ascontiguousarray(arr, dtype=np.float64)


def _target_csr(target: Any, n: int) -> tuple[Any, Any]:
    """``target`` -> ``(gt_spans, gt_offsets)``, not yet validated: a tuple is
    the CSR pair itself; a list (or other sequence) holds one ``(k_i, 2)`` row
    per question, each checked here and joined with
    :func:`fastvqa.data.spans_to_csr`."""
    if isinstance(target, tuple):
        if len(target) != 2:
            raise InputError(f"{_OP}: a tuple target must be the pair (gt_spans, gt_offsets), "
                             f"got {len(target)} items (give per-question rows as a list)")
        return target
    if _arrays.is_torch(target) or isinstance(target, (np.ndarray, str, bytes)) \
            or not isinstance(target, Sequence):
        raise InputTypeError(
            f"{_OP}: target must be the pair (gt_spans, gt_offsets) or a list with one (k, 2) "
            f"array of gold spans per question, got {type(target).__name__}")
    if len(target) != n:
        raise InputError(f"{_OP}: target has {len(target)} rows of gold spans for N = {n} "
                         "predictions (one row per question)")
    from fastvqa.data.record import spans_to_csr

    return spans_to_csr([_spans(row, f"target[{i}]") for i, row in enumerate(target)])


def _offsets(x: Any, n: int, k: int) -> np.ndarray:
    return ragged.check_offsets(_to_numpy(x, "gt_offsets"), k, rows=n, op=_OP,
                                name="gt_offsets")


def _missing_rows(pred: np.ndarray) -> np.ndarray:
    """Rows that are two NaNs ("no prediction"); one NaN or an infinity is an error.

    ``pred`` is C-contiguous ``(N, 2)`` float64. Only flat element-wise
    passes and counts run on valid input (a reduction along the length-2 axis,
    or boolean indexing, is several times slower); rows are located only to
    report an error."""
    n = pred.shape[0]
    if math.isfinite(np.add.reduce(pred.reshape(-1))):  # no NaN, no infinity
        return np.zeros(n, dtype=bool)
    finite = np.isfinite(pred)
    # Each row's two "finite" flags read as one uint16: 0 <=> neither is finite.
    pair = finite.view(np.uint16).reshape(n)
    missing = pair == 0
    n_missing = int(np.count_nonzero(missing))
    if np.count_nonzero(finite) + 2 * n_missing != 2 * n:
        i = int(np.argmax((pair != 0x0101) & ~missing))
        raise InputError(f"{_OP}: preds row {i} is not a span or two NaNs: "
                         f"{pred[i].tolist()} (use two NaNs for 'no prediction')")
    if np.count_nonzero(np.isnan(pred)) != 2 * n_missing:
        i = int(np.argmax(np.isinf(pred).any(axis=1)))
        raise InputError(f"{_OP}: preds row {i} is infinite: {pred[i].tolist()}")
    return missing


def _check_gt_finite(gt: np.ndarray) -> None:
    # One summing pass decides the common case; the exact check runs only when
    # the sum is not finite (a NaN/infinity, or an overflow of huge values).
    if gt.size == 0 or math.isfinite(np.add.reduce(gt.reshape(-1))):
        return
    bad = ~np.isfinite(gt).all(axis=1)
    if bad.any():
        i = int(np.argmax(bad))
        raise InputError(f"{_OP}: gt_spans row {i} is not finite: {gt[i].tolist()}")


def _thresholds(ts: Sequence[float]) -> tuple[float, ...]:
    if isinstance(ts, (str, bytes)) or not hasattr(ts, "__iter__"):
        raise InputTypeError(f"{_OP}: thresholds must be a sequence of numbers, got {ts!r}")
    out = []
    for t in ts:
        out.append(_checks.unit_interval(t, _OP, "thresholds"))
    if len({_fmt_threshold(t) for t in out}) != len(out):
        raise InputError(f"{_OP}: thresholds repeat: {out}")
    return tuple(out)


def _int_vector(x: Any, name: str, n: int) -> np.ndarray:
    arr = _to_numpy(x, name)
    if arr.dtype.kind not in "iu":
        raise InputTypeError(f"{_OP}: {name} must be integers (use {NO_ANSWER} for a missing "
                             f"answer, not NaN), got dtype {arr.dtype}")
    if arr.shape != (n,):
        raise InputError(f"{_OP}: {name} must have shape (N,) = ({n},), got {arr.shape}")
    return arr.astype(np.int64, copy=False)


def _answers(pred_answers: Any, gt_answers: Any, n: int):
    answers = _answer_arrays(pred_answers, gt_answers, n)
    if answers is not None:
        _check_gt_answers(answers[1])
    return answers


def _answer_arrays(pred_answers: Any, gt_answers: Any, n: int):
    """Both answer arrays as (N,) int64, or None; types and shapes only."""
    if pred_answers is None and gt_answers is None:
        return None
    if pred_answers is None or gt_answers is None:
        raise InputError(f"{_OP}: give both pred_answers and gt_answers, or neither")
    return _int_vector(pred_answers, "pred_answers", n), _int_vector(gt_answers, "gt_answers", n)


def _check_gt_answers(ga: np.ndarray) -> None:
    if (ga < 0).any():
        i = int(np.argmax(ga < 0))
        raise InputError(f"{_OP}: gt_answers must be >= 0, got {int(ga[i])} at question {i}")


def _durations(x: Any, n: int, required: Optional[np.ndarray]) -> Optional[np.ndarray]:
    """``(N,)`` float64 durations, or None; ``required`` (a mask, or None when
    they are optional) marks the questions that need a finite one >= 0."""
    if x is None:
        if required is not None:
            raise InputError(f"{_OP}: normalized=True needs durations (seconds, one per question)")
        return None
    arr = _to_numpy(x, "durations")
    if arr.dtype.kind not in "fiu":
        raise InputTypeError(f"{_OP}: durations must be numbers, got dtype {arr.dtype}")
    if arr.shape != (n,):
        raise InputError(f"{_OP}: durations must have shape (N,) = ({n},), got {arr.shape}")
    arr = arr.astype(np.float64)
    if required is None:
        return arr
    bad = required & ~(np.isfinite(arr) & (arr >= 0))
    if bad.any():
        i = int(np.argmax(bad))
        raise InputError(f"{_OP}: durations must be finite and >= 0, got {arr[i]} at question {i}")
    return arr


# ------------------------------------------------------------------- slicing


def slice_by_duration(
    result: MetricResult,
    durations: Any = None,
    edges: Sequence[float] = (0.0, 60.0, 120.0, math.inf),
    *,
    closed: Literal["left", "right"] = "left",
    labels: Optional[Sequence[str]] = None,
) -> dict[str, MetricResult]:
    """Metrics per video-length bin, recomputed from ``result.per_question``.

    Args:
        result: a :func:`grounded_qa` result (its per-question columns are used,
            with its mode's denominators).
        durations: ``(N,)`` seconds, one per per-question row; default: the
            result's ``"duration"`` column. NaN durations fall in no bin.
        edges: increasing bin edges in seconds, e.g. DeVE-QA Table 8's
            ``(0, 60, 120, inf)`` (the paper does not say which side is closed).
        closed: ``"left"`` (bins ``[a, b)``) or ``"right"`` (``(a, b]``).
        labels: names for the bins; default ``"[0, 60)"``-style.

    Returns:
        ``{label: MetricResult}`` in bin order; each has the same metric names,
        NaN where a bin has no evaluated question, and ``info["bin"]``.

    Example:
        >>> import numpy as np
        >>> r = grounded_qa(np.array([[0.0, 4.0], [2.0, 3.0]]),
        ...                 [np.array([[2.0, 6.0]]), np.array([[0.0, 5.0]])], durations=[30, 90])
        >>> {label: part["mIoP"] for label, part in slice_by_duration(r).items()}
        {'[0, 60)': 50.0, '[60, 120)': 100.0, '[120, inf)': nan}
    """
    if durations is None:
        if "duration" not in result.per_question:
            raise InputError("slice_by_duration: the result has no 'duration' column; "
                             "pass durations (seconds, one per question)")
        durations = result.per_question["duration"]
    return _slice(result, durations, edges, closed, labels, "slice_by_duration", "duration")


def slice_by_event_count(
    result: MetricResult,
    counts: Any,
    edges: Sequence[float] = (1, 2, 3, math.inf),
    *,
    closed: Literal["left", "right"] = "left",
    labels: Optional[Sequence[str]] = None,
) -> dict[str, MetricResult]:
    """Metrics per number-of-events bin (DeVE-QA Table 7: single, double,
    dense), recomputed from ``result.per_question``.

    Args:
        result: a :func:`grounded_qa` result.
        counts: ``(N,)`` events per question's video (e.g. the number of
            captions); NaN falls in no bin.
        edges: increasing bin edges; the default ``(1, 2, 3, inf)`` with
            ``closed="left"`` gives 1, 2 and >= 3 events. (The DeVE-QA repo
            instead splits "single" = <= 2 captions vs "dense": edges
            ``(0, 2, inf)`` with ``closed="right"``.)
        closed: ``"left"`` (``[a, b)``) or ``"right"`` (``(a, b]``).
        labels: names for the bins; default ``"[1, 2)"``-style.

    Returns:
        ``{label: MetricResult}`` in bin order, as :func:`slice_by_duration`.

    Example:
        >>> import numpy as np
        >>> r = grounded_qa(np.array([[0.0, 4.0], [2.0, 3.0]]),
        ...                 [np.array([[2.0, 6.0]]), np.array([[0.0, 5.0]])])
        >>> {label: part["mIoP"] for label, part in slice_by_event_count(r, [1, 5]).items()}
        {'[1, 2)': 50.0, '[2, 3)': nan, '[3, inf)': 100.0}
    """
    return _slice(result, counts, edges, closed, labels, "slice_by_event_count", "events")


def _slice(result, values, edges, closed, labels, op, what) -> dict[str, MetricResult]:
    if not isinstance(result, MetricResult) or "evaluated" not in result.per_question:
        raise InputTypeError(f"{op}: result must be a grounded_qa MetricResult with "
                             "per-question values")
    if closed not in ("left", "right"):
        raise InputError(f"{op}: closed must be 'left' or 'right', got {closed!r}")
    edges_arr = np.asarray(edges, dtype=np.float64)
    if edges_arr.ndim != 1 or edges_arr.size < 2 or np.isnan(edges_arr).any() \
            or (np.diff(edges_arr) <= 0).any():
        raise InputError(f"{op}: edges must be at least two strictly increasing numbers, "
                         f"got {list(edges)}")
    n_bins = edges_arr.size - 1
    if labels is None:
        labels = [_bin_label(edges_arr[i], edges_arr[i + 1], closed) for i in range(n_bins)]
    labels = [str(x) for x in labels]
    if len(labels) != n_bins or len(set(labels)) != n_bins:
        raise InputError(f"{op}: need {n_bins} distinct labels, got {labels}")
    n = len(result.per_question["evaluated"])
    vals = _to_numpy(values, what)
    if vals.dtype.kind not in "fiu" or vals.shape != (n,):
        raise InputError(f"{op}: {what} must be {n} numbers (one per question), "
                         f"got dtype {vals.dtype} shape {vals.shape}")
    vals = vals.astype(np.float64)
    side = "right" if closed == "left" else "left"
    bins = np.searchsorted(edges_arr, vals, side=side) - 1
    bins[np.isnan(vals)] = -1
    thresholds = tuple(result.info.get("thresholds", (0.3, 0.5)))
    out: dict[str, MetricResult] = {}
    for b, label in enumerate(labels):
        sel = np.flatnonzero(bins == b)
        pq = {k: ([v[i] for i in sel] if isinstance(v, list) else np.asarray(v)[sel])
              for k, v in result.per_question.items()}
        info = {
            "mode": result.info.get("mode"),
            "bin": label,
            "questions": int(sel.size),
            "evaluated": int(np.count_nonzero(pq["evaluated"])),
            "thresholds": list(thresholds),
        }
        out[label] = MetricResult(result.metric, _summarise(pq, thresholds), pq, info,
                                  benchmark=result.benchmark)
    return out


def _bin_label(lo: float, hi: float, closed: str) -> str:
    left, right = ("[", ")") if closed == "left" else ("(", "]")
    return f"{left}{lo:g}, {hi:g}{right}"


class GroundedQA(Metric):
    """:func:`grounded_qa` over batches: ``GroundedQA(mode=..., thresholds=...,
    normalized=...)``, then ``update(preds, target, pred_answers=...,
    gt_answers=..., durations=..., keys=...)`` per batch (each batch's
    ``target`` as the function takes it: the ``(gt_spans, gt_offsets)`` pair
    of that batch or its list of ``(k_i, 2)`` rows). Each batch is checked
    when it is added; ``compute()`` equals ``grounded_qa`` on all batches
    concatenated. See :class:`fastvqa.metrics.Metric`.

    Example:
        >>> import numpy as np
        >>> m = GroundedQA(thresholds=(0.5,))
        >>> m.update(np.array([[0.0, 4.0]]), [np.array([[2.0, 6.0]])])
        >>> m.update(np.array([[2.0, 3.0]]), [np.array([[0.0, 5.0]])])
        >>> m.compute()
        MetricResult(grounded_qa: mIoP=75, IoP@0.5=100, mIoU=26.67, IoU@0.5=0)
    """

    function = "grounded_qa"
    per_item = ("pred_answers", "gt_answers", "durations", "keys")

    def _batch(self, preds: Any, target: Any, per_item: dict[str, Any]) -> dict[str, Any]:
        pred = _spans(preds, "preds")
        n = pred.shape[0]
        gt_spans, gt_offsets = _target_csr(target, n)
        gt = _spans(gt_spans, "gt_spans")
        out: dict[str, Any] = {"preds": pred.copy(),
                               "target": (gt.copy(), _offsets(gt_offsets, n, gt.shape[0]).copy())}
        out.update({k: _items(v, k, self) for k, v in per_item.items()})
        return out

    def _join(self, name: str, values: list[Any]) -> Any:
        if name != "target":
            return super()._join(name, values)
        # The batches' rows, one after another: offsets from all their row counts.
        counts = np.concatenate([np.diff(offsets) for _, offsets in values])
        return (np.concatenate([spans for spans, _ in values], axis=0),
                ragged.offsets_from_counts(counts))
