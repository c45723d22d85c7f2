# SPDX-License-Identifier: Apache-2.0
"""Evidence selection: IoU-F1 between predicted and gold evidence spans (three
named modes), as WildQA scores it.

The official code is MichiganNLP/In-the-wild-QA (``src/src/metrics.py``). Its
IoU-F1 changed after the paper (commit e46c788, March 2023), so fastvqa names
both versions plus a clean definition; see ``anchors/eval.md`` section 1.2 and
``papers/wildqa.md`` sections 2 and 6.4.

Scale: the WildQA paper prints IoU-F1 as a percentage (Table 4: "Common
10.6"), so the dataset-level value is on the 0-100 scale; per-question values
stay on the 0-1 scale of a single F-measure (so the "wildqa-2022" quirk shows
as 1.333...). Answer ROUGE is in :mod:`fastvqa.metrics.open_answers`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal, Optional

import numpy as np

from fastvqa import _checks, ragged
from fastvqa.errors import InputError, InputTypeError
from fastvqa.metrics._align import one_per_question, records_of
from fastvqa.metrics.base import Metric
from fastvqa.metrics.result import MetricResult, mean_or_nan

IOU_F1_MODES = ("wildqa-2022", "wildqa-2023", "clean")


# --------------------------------------------------------------------------
# Input checks
# --------------------------------------------------------------------------


def _span_rows(name: str, rows: Any, n: Optional[int] = None) -> list[np.ndarray]:
    """``rows`` (one list of ``[start, end]`` pairs per question) -> list of
    ``(k, 2)`` float64 arrays; raises TypeError/ValueError naming the item."""
    if isinstance(rows, (str, bytes)) or not isinstance(rows, (Sequence, np.ndarray)):
        raise InputTypeError(
            f"iou_f1: {name} must be a sequence with one list of [start, end] spans per "
            f"question, got {type(rows).__name__}"
        )
    if n is not None and len(rows) != n:
        raise InputError(
            f"iou_f1: {name} has {len(rows)} entries but preds has {n}; "
            "give one entry per question, in the same order"
        )
    return [_span_array(f"{name}[{i}]", row) for i, row in enumerate(rows)]


def _span_array(where: str, row: Any) -> np.ndarray:
    if isinstance(row, (str, bytes, dict)):
        raise InputTypeError(f"iou_f1: {where} must be a list of [start, end] spans, "
                             f"got {type(row).__name__}")
    try:
        arr = np.asarray(row, dtype=np.float64)
    except (TypeError, ValueError) as err:
        raise InputTypeError(f"iou_f1: {where} must be a list of [start, end] number pairs "
                             f"({err})") from None
    if arr.size == 0:
        return np.zeros((0, 2), dtype=np.float64)
    if arr.ndim != 2 or arr.shape[1] != 2:
        raise InputError(
            f"iou_f1: {where} must have shape (k, 2) (a list of [start, end] spans), "
            f"got shape {arr.shape}"
        )
    if not np.isfinite(arr).all():
        raise InputError(f"iou_f1: {where} holds a NaN or infinite endpoint: {row!r}")
    return arr


# --------------------------------------------------------------------------
# Vectorised core: best IoU per prediction against a ragged set of targets
# --------------------------------------------------------------------------


class _Pairs:
    """Every (prediction, target span) pair of the same instance, with its IoU.

    The IoU is the compiled ``paired_temporal_iou`` kernel in float64:
    ``inter = max(min(ends) - max(starts), 0)``, ``inter / (len_p + len_g -
    inter)``, 0 for an empty union. That is operation for operation the
    official HEAD ``compute_iou`` (which returns 0 when ``inter <= 0``) and, on
    integer endpoints, exactly the paper-era set IoU ``|A & B| / |A | B|`` of
    ``range(start, end)`` sets (integers are exact in float64 and both divide
    once, correctly rounded).
    """

    def __init__(self, preds: list[np.ndarray], golds: list[np.ndarray]):
        from fastvqa.ops import paired_temporal_iou

        self.n = len(preds)
        self.pred, self.p_off = ragged.from_rows(preds, width=2)
        self.gold, self.g_off = ragged.from_rows(golds, width=2)
        self.k = np.diff(self.p_off)
        self.m = np.diff(self.g_off)
        self.inst_of_pred = np.repeat(np.arange(self.n), self.k)
        m_pp = self.m[self.inst_of_pred]  # target spans seen by each prediction
        total = int(m_pp.sum())
        block = np.cumsum(m_pp) - m_pp  # first pair of each prediction
        self.pair_pred = np.repeat(np.arange(self.pred.shape[0]), m_pp)
        self.pair_gold = (np.repeat(self.g_off[:-1][self.inst_of_pred], m_pp)
                          + np.arange(total) - np.repeat(block, m_pp))
        if total:
            self.iou = paired_temporal_iou(self.pred[self.pair_pred], self.gold[self.pair_gold])
        else:
            self.iou = np.zeros(0)
        # best IoU of each prediction over its instance's targets (0 if none)
        self.best = np.zeros(self.pred.shape[0])
        has = m_pp > 0
        if total:
            self.best[has] = np.maximum.reduceat(self.iou, block[has])

    def count_per_instance(self, hit: np.ndarray) -> np.ndarray:
        """Number of predictions flagged in ``hit`` (one flag per prediction)."""
        return np.bincount(self.inst_of_pred, weights=hit, minlength=self.n).astype(np.int64)

    def one_to_one_tp(self, threshold: float) -> np.ndarray:
        """Per instance, the largest number of (prediction, target) pairs with
        IoU >= threshold such that no span is used twice (maximum bipartite
        matching). Instances where no span has two candidates are counted
        vectorised; the rest run a small augmenting-path matching."""
        edge = self.iou >= threshold
        ep, eg = self.pair_pred[edge], self.pair_gold[edge]
        deg_p = np.bincount(ep, minlength=self.pred.shape[0])
        deg_g = np.bincount(eg, minlength=self.gold.shape[0])
        tp = self.count_per_instance((deg_p > 0).astype(np.float64))
        inst_of_gold = np.repeat(np.arange(self.n), self.m)
        conflict = np.zeros(self.n, dtype=bool)
        conflict[self.inst_of_pred[deg_p > 1]] = True
        conflict[inst_of_gold[deg_g > 1]] = True
        # Edges are ordered by prediction, hence by instance: slice, don't scan.
        bounds = np.searchsorted(ep, self.p_off)
        for i in np.flatnonzero(conflict):
            lo, hi = bounds[i], bounds[i + 1]
            adj: list[list[int]] = [[] for _ in range(int(self.k[i]))]
            for p, g in zip((ep[lo:hi] - self.p_off[i]).tolist(),
                            (eg[lo:hi] - self.g_off[i]).tolist()):
                adj[p].append(g)
            tp[i] = _max_matching(adj, int(self.m[i]))
        return tp


def _max_matching(adj: list[list[int]], m: int) -> int:
    """Size of a maximum matching (Kuhn's augmenting paths); ``adj[p]`` lists
    the targets prediction ``p`` may take."""
    owner = [-1] * m

    def augment(p: int, seen: list[bool]) -> bool:
        for g in adj[p]:
            if not seen[g]:
                seen[g] = True
                if owner[g] < 0 or augment(owner[g], seen):
                    owner[g] = p
                    return True
        return False

    return sum(augment(p, [False] * m) for p in range(len(adj)))


# --------------------------------------------------------------------------
# Per-mode F1
# --------------------------------------------------------------------------


def _f1_2022(tp: np.ndarray, k: np.ndarray, m: np.ndarray):
    """Paper-era per-instance F1 in float64, as the Python original: P = TP/k
    and R = TP/m (0 for a zero denominator), NOT capped; F1 = 2PR/(P+R), 0 if P
    or R is 0; 1 when both lists are empty."""
    with np.errstate(divide="ignore", invalid="ignore"):
        p = np.where(k > 0, tp / np.maximum(k, 1), 0.0)
        r = np.where(m > 0, tp / np.maximum(m, 1), 0.0)
        f1 = np.where((p == 0) | (r == 0), 0.0, 2.0 * p * r / (p + r))
    f1 = np.where((k == 0) & (m == 0), 1.0, f1)
    return f1, p, r


def _f1_2023(tp: np.ndarray, k: np.ndarray, m: np.ndarray):
    """HEAD per-instance F1. The official code divides an int64 torch count by
    the list length (giving float32), caps with ``min(., 1)`` and combines in
    float32; no empty/empty special case (both empty gives 0)."""
    one, two = np.float32(1), np.float32(2)
    tp32 = tp.astype(np.float32)
    with np.errstate(divide="ignore", invalid="ignore"):
        p = np.where(k > 0, np.minimum(tp32 / np.maximum(k, 1).astype(np.float32), one),
                     np.float32(0))
        r = np.where(m > 0, np.minimum(tp32 / np.maximum(m, 1).astype(np.float32), one),
                     np.float32(0))
        f1 = np.where((p == 0) | (r == 0), np.float32(0), two * p * r / (p + r))
    return f1.astype(np.float32), p.astype(np.float32), r.astype(np.float32)


def _f1_clean(tp: np.ndarray, k: np.ndarray, m: np.ndarray):
    """Clean per-instance F1 in float64; TP comes from one-to-one matching so P
    and R never exceed 1. Both lists empty counts as full agreement (1)."""
    return _f1_2022(tp, k, m)


def _float32_running_mean(values: np.ndarray) -> float:
    """The official torchmetrics state: a float32 ``total`` that each
    per-question F1 is added to in order, divided by a float32 ``count``.
    ``np.add.accumulate`` is sequential (unlike ``sum``, which is pairwise)."""
    if values.size == 0:
        return float("nan")
    total = np.add.accumulate(values.astype(np.float32), dtype=np.float32)[-1]
    return float(np.float32(total) / np.float32(values.size))


# --------------------------------------------------------------------------
# iou_f1
# --------------------------------------------------------------------------


def iou_f1(
    preds: Sequence[Any],
    target: Sequence[Any],
    *,
    mode: Literal["wildqa-2022", "wildqa-2023", "clean"] = "wildqa-2022",
    threshold: float = 0.5,
    thresholds: Optional[Sequence[float]] = None,
    alternatives: Optional[Sequence[Sequence[Any]]] = None,
    pad_to_batch: Optional[int] = None,
) -> MetricResult:
    """WildQA video-evidence-selection IoU-F1 (macro mean of per-question F1).

    Args:
        preds: N entries, one per question: a list (or ``(k, 2)``
            array) of predicted ``[start, end]`` spans in seconds; ``k`` may be
            0 (no evidence predicted). Reversed spans (end < start) are empty
            and match nothing.
        target: N entries, the primary (Phase-1, field ``evidences``) gold spans
            of each question, ``(m, 2)`` seconds, as the annotation file holds
            them (fastvqa's loader gives them as ``QARecord.spans``); or the N
            records themselves (``load_wildqa``/``load_benchmark``), whose
            ``spans`` are taken (``preds`` in record order, as WildQA's
            prediction files are).
        mode: ``"wildqa-2022"`` (default: the rules that produced the COLING
            2022 tables), ``"wildqa-2023"`` (the repository's rewrite, HEAD) or
            ``"clean"``. See below.
        threshold: a prediction counts as correct when its IoU is ``>=``
            threshold (the paper's text says "more than", the code uses
            ``>=``). 0.5 in the paper. In ``"wildqa-2023"`` the comparison is in
            float32, as the official code did; its training code logged
            ``threshold=0.1`` (``torch.linspace(0, 1, 21)[2]``, equal to
            ``float32(0.1)``).
        thresholds: optional extra thresholds; each adds a metric
            ``"IoU-F1@<t>"`` and a per-question column ``"F1@<t>"``. For HEAD's
            exact grid pass ``torch.linspace(0, 1, 21).tolist()`` (its 0.45 is one
            float32 step below ``float32(0.45)``).
        alternatives: optional, N entries, each a list of other annotators'
            span lists (field ``alter_evidences``: one ``(k_j, 2)`` list per
            annotator). Used by ``"wildqa-2023"`` and ``"clean"``: the question
            scores the maximum F1 over {primary, each alternative}, per
            threshold. ``"wildqa-2022"`` scored the primary set only and rejects
            them.
        pad_to_batch: ``"wildqa-2022"`` only. Reproduces the paper-era batch
            artefact: in each run of ``pad_to_batch`` consecutive questions the
            gold lists were zero-padded with ``(0, 0)`` spans to the longest one
            and the padding counted in #gold (it never matches). The released
            scripts evaluated with batches of 32 (16 for the evidence models).
            ``None`` (default): no padding.

    Returns:
        :class:`MetricResult` ``"iou_f1"`` with ``"IoU-F1"`` = 100 x
        the mean per-question F1 at ``threshold`` (the paper's percent scale;
        ``nan`` when N = 0) and, with ``thresholds``, ``"IoU-F1@<t>"``.
        ``per_question`` columns: ``index``, ``F1`` (0-1, at ``threshold``),
        ``precision``, ``recall``, ``TP``, ``n_pred``, ``n_gold`` (spans of the
        scored target set after the mode's gold processing and padding),
        ``target`` (0 = primary, j = alternative j-1; the first maximum wins
        ties) and ``F1@<t>`` per extra threshold.

    Modes (per question: P = predictions, G = target spans, k = |P|, m = |G|):

    - ``"wildqa-2022"`` (``IouF1`` of the paper era, ``metrics.py`` up to
      530f6eb): both ends of every span are rounded to integer seconds with
      Python's half-to-even ``round`` (0.5 -> 0, 2.5 -> 2) and the span becomes
      the end-exclusive set ``range(round(s), round(e))``; IoU = |A & B| /
      |A | B| (0 for an empty union). Each prediction takes its best IoU over G;
      TP = #{best >= threshold}; P = TP / k, R = TP / m, **not capped** (several
      predictions may match one gold span: two copies of a correct span score
      F1 = 4/3); F1 = 2PR / (P + R), 0 if P or R is 0; **both empty -> 1**. The
      duplicate-prediction pruning of the original (IoU > 1.0) can never fire
      and is omitted. The mean is accumulated as the official float32 running
      total (per-question values are exact float64).
    - ``"wildqa-2023"`` (``IouF1`` from e46c788 on, as ``model.py`` feeds it):
      continuous IoU ``inter / (len_p + len_g - inter)``, 0 when ``inter <= 0``;
      the primary gold is first rounded to integer seconds (half-to-even, as the
      HEAD loader still does) and spans equal to ``(0, 0)`` are dropped (so a
      real ``[0.0, 0.4]`` disappears too); alternative spans are held in float32
      (a float32 tensor in the batch) and ``(0, 0)`` is dropped; predictions are
      used as given. IoU is computed in float64 and stored as float32, compared
      ``>=`` with the threshold cast to float32; P and R are capped at 1 and
      combined in float32; **both empty -> 0**; maximum over target sets; float32
      running mean. Equal to the official number when the whole split is one
      batch; the official per-batch float32 partial sums can move the 7th
      significant digit.
    - ``"clean"``: continuous float64 IoU on the spans as given, one-to-one
      matching (TP = size of a maximum matching between P and G over pairs with
      IoU >= threshold, so P, R <= 1), both empty -> 1, maximum over target sets
      when ``alternatives`` are given, float64 mean. No official script
      computes this; it is the paper's prose definition without the quirks.

    When both lists are empty the per-question ``precision`` and ``recall``
    read 0 whatever the F1 (the official code short-cuts to F1 = 1 or 0).

    Raises:
        TypeError / ValueError: an unknown mode, mismatched lengths, a span
        list not shaped ``(k, 2)``, a NaN or infinite endpoint, a threshold
        outside [0, 1], ``alternatives`` or ``pad_to_batch`` where the mode has
        no use for them; both :class:`fastvqa.errors.InputError`.

    Example:
        >>> preds = [[[0, 4]], [[10, 12], [20, 25]]]  # per question: [start, end] spans
        >>> target = [[[0, 5]], [[10, 12]]]
        >>> r = iou_f1(preds, target, mode="clean")
        >>> r, r.per_question["F1"].round(3).tolist()
        (MetricResult(iou_f1: IoU-F1=83.33), [1.0, 0.667])
    """
    _checks.choice(mode, "iou_f1", "mode", IOU_F1_MODES)
    records = records_of(target)
    if records is not None:
        target = [r.spans for r in records]
    main_t = _checks.unit_interval(threshold, "iou_f1", "threshold")
    extra_t = [_checks.unit_interval(t, "iou_f1", f"thresholds[{i}]")
               for i, t in enumerate(thresholds or ())]
    preds = _span_rows("preds", preds)
    n = len(preds)
    gold_rows = _span_rows("target", target, n)
    if alternatives is not None and mode == "wildqa-2022":
        raise InputError("iou_f1: mode 'wildqa-2022' scores the primary gold only (as the paper "
                         "did); pass alternatives with mode 'wildqa-2023' or 'clean'")
    if pad_to_batch is not None:
        if mode != "wildqa-2022":
            raise InputError("iou_f1: pad_to_batch reproduces a 'wildqa-2022' artefact only")
        if isinstance(pad_to_batch, bool) or not isinstance(pad_to_batch, (int, np.integer)) \
                or pad_to_batch < 1:
            raise InputError("iou_f1: pad_to_batch must be a positive integer, "
                             f"got {pad_to_batch!r}")
    alt_sets = _alternative_sets(alternatives, n)

    # Each question becomes one or more instances (primary, then alternatives).
    targets = _targets_for_mode(mode, gold_rows, alt_sets)
    inst_q = np.repeat(np.arange(n), [len(t) for t in targets])
    if mode == "wildqa-2022":
        # The paper-era IoU rounds both spans of every pair with Python's
        # round(), which is half-to-even like np.rint.
        preds = [np.rint(p) for p in preds]
    inst_preds = [preds[q] for q in inst_q]
    inst_golds = [g for t in targets for g in t]
    pairs = _Pairs(inst_preds, inst_golds)
    k, m = pairs.k, pairs.m.copy()
    if pad_to_batch is not None and n:
        m = _padded_counts(m, int(pad_to_batch))

    def per_instance(t: float):
        if mode == "wildqa-2022":
            tp = pairs.count_per_instance((pairs.best >= t).astype(np.float64))
            return (*_f1_2022(tp, k, m), tp)
        if mode == "wildqa-2023":
            # HEAD's compute_iou ran on Python floats (float64) and its result
            # went into a float32 tensor: round the float64 IoU once, rather
            # than run the kernel in float32 (which rounds every step).
            hit = pairs.best.astype(np.float32) >= np.float32(t)
            tp = pairs.count_per_instance(hit.astype(np.float64))
            return (*_f1_2023(tp, k, m), tp)
        tp = pairs.one_to_one_tp(t)
        return (*_f1_clean(tp, k, m), tp)

    f1, prec, rec, tp = per_instance(main_t)
    pick = _first_max_per_question(f1, inst_q, n)
    q_f1 = f1[pick]
    mean = _float32_running_mean(q_f1) if mode != "clean" else mean_or_nan(q_f1)
    metrics = {"IoU-F1": 100.0 * mean}
    per_question: dict[str, Any] = {
        "index": np.arange(n),
        "F1": q_f1.astype(np.float64),
        "precision": prec[pick].astype(np.float64),
        "recall": rec[pick].astype(np.float64),
        "TP": tp[pick],
        "n_pred": k[pick],
        "n_gold": m[pick],
        "target": pick - np.searchsorted(inst_q, np.arange(n)),
    }
    for t in extra_t:
        name = f"{t:g}"
        if f"IoU-F1@{name}" in metrics:
            raise InputError(f"iou_f1: threshold {t} given twice")
        f1_t = per_instance(t)[0]
        best_t = np.zeros(n, dtype=f1_t.dtype)
        if n:
            best_t = np.maximum.reduceat(f1_t, np.searchsorted(inst_q, np.arange(n)))
        m_t = _float32_running_mean(best_t) if mode != "clean" else mean_or_nan(best_t)
        metrics[f"IoU-F1@{name}"] = 100.0 * m_t
        per_question[f"F1@{name}"] = best_t.astype(np.float64)
    info = {
        "mode": mode,
        "threshold": main_t,
        "thresholds": extra_t,
        "evaluated": n,
        "with_alternatives": alternatives is not None,
        "pad_to_batch": pad_to_batch,
        "scale": "IoU-F1 in percent (0-100); per-question F1 on 0-1",
    }
    return MetricResult("iou_f1", metrics, per_question, info)


def _alternative_sets(alternatives: Any, n: int) -> list[list[np.ndarray]]:
    if alternatives is None:
        return [[] for _ in range(n)]
    one_per_question(alternatives, n, "iou_f1", "alternatives", "list of annotator span lists")
    out = []
    for i, sets in enumerate(alternatives):
        if isinstance(sets, (str, bytes, dict)) or not isinstance(sets, (Sequence, np.ndarray)):
            raise InputTypeError(f"iou_f1: alternatives[{i}] must be a list of span lists, "
                                 f"got {type(sets).__name__}")
        out.append([_span_array(f"alternatives[{i}][{j}]", s) for j, s in enumerate(sets)])
    return out


def _targets_for_mode(mode: str, golds: list[np.ndarray],
                      alts: list[list[np.ndarray]]) -> list[list[np.ndarray]]:
    """Target sets per question, after the gold processing each mode's official
    pipeline applied before the metric saw them."""
    if mode == "wildqa-2022":
        # The paper-era loader rounded the gold (half-to-even) and the IoU rounds
        # every span again; predictions are rounded here too, see _round_preds.
        return [[np.rint(g)] for g in golds]
    if mode == "wildqa-2023":
        out = []
        for g, sets in zip(golds, alts):
            primary = _drop_zero_spans(np.rint(g))
            # alternatives travelled as a float32 tensor, then .tolist()
            others = [_drop_zero_spans(s.astype(np.float32).astype(np.float64)) for s in sets]
            out.append([primary, *others])
        return out
    return [[g, *sets] for g, sets in zip(golds, alts)]


def _drop_zero_spans(spans: np.ndarray) -> np.ndarray:
    """HEAD's ``model.py`` removes every gold span equal to ``[0.0, 0.0]`` (meant
    for the batch padding, it also removes real spans that round to it)."""
    return spans[~((spans[:, 0] == 0) & (spans[:, 1] == 0))]


def _padded_counts(m: np.ndarray, batch: int) -> np.ndarray:
    n = m.shape[0]
    starts = np.arange(0, n, batch)
    batch_max = np.maximum.reduceat(m, starts)
    return np.repeat(batch_max, np.diff(np.append(starts, n)))


def _first_max_per_question(f1: np.ndarray, inst_q: np.ndarray, n: int) -> np.ndarray:
    """Index (into instances) of the first instance with the largest F1 of
    each question; instances are grouped by question, primary first."""
    order = np.lexsort((np.arange(f1.shape[0]), -f1.astype(np.float64), inst_q))
    first = np.searchsorted(inst_q[order], np.arange(n))
    return order[first]


class IoUF1(Metric):
    """:func:`iou_f1` over batches: ``IoUF1(mode=..., threshold=...,
    thresholds=..., pad_to_batch=...)``, then ``update(preds, target,
    alternatives=...)`` per batch; ``compute()`` equals ``iou_f1`` on all
    batches concatenated (``pad_to_batch`` counts questions across batches,
    as the one-shot call does). See :class:`fastvqa.metrics.Metric`.

    Example:
        >>> m = IoUF1(mode="clean")
        >>> m.update([[[0, 4]]], [[[0, 5]]])
        >>> m.update([[[10, 12], [20, 25]]], [[[10, 12]]])
        >>> m.compute()
        MetricResult(iou_f1: IoU-F1=83.33)
    """

    function = "iou_f1"
    per_item = ("alternatives",)


# --------------------------------------------------------------------------
# average_precision (the 2023 rewrite's AveragePrecision)
# --------------------------------------------------------------------------

AP_MODES = ("wildqa-2023", "clean")


def _greedy_tp(iou: np.ndarray, threshold: float) -> np.ndarray:
    """One instance's TP flag per prediction (in prediction order, the
    official "sorted by confidence" order): each prediction takes, among the
    target spans with IoU >= threshold, the highest-IoU one not yet taken (equal
    IoUs: the earlier span); a prediction whose best free span is below the
    threshold, or that finds every qualifying span taken, is a false positive.
    ``iou``: ``(k, m)``, already in the precision compared."""
    k, m = iou.shape
    tp = np.zeros(k, dtype=np.int64)
    taken = np.zeros(m, dtype=bool)
    for p in range(k):
        for g in np.argsort(-iou[p], kind="stable"):
            if iou[p, g] < threshold:
                break
            if not taken[g]:
                taken[g] = True
                tp[p] = 1
                break
    return tp


def _interpolated_ap(tp: np.ndarray, n_pos: int) -> float:
    """VOC / ActivityNet interpolated AP (0-1) of TP flags in ranked order:
    precision made monotone from the right, summed over the recall steps.
    NaN when there is no positive (recall undefined, as the official code's
    division by zero gives); 0 with positives but no prediction."""
    if n_pos == 0:
        return float("nan")
    tp_cum = np.cumsum(tp, dtype=np.float64)
    fp_cum = np.cumsum(1 - tp, dtype=np.float64)
    precision = np.concatenate(([0.0], tp_cum / np.maximum(tp_cum + fp_cum, 1.0), [0.0]))
    recall = np.concatenate(([0.0], tp_cum / n_pos, [1.0]))
    precision = np.maximum.accumulate(precision[::-1])[::-1]
    step = np.flatnonzero(recall[1:] != recall[:-1])
    return float(np.sum((recall[step + 1] - recall[step]) * precision[step + 1]))


def average_precision(
    preds: Sequence[Any],
    target: Sequence[Any],
    *,
    mode: Literal["wildqa-2023", "clean"] = "wildqa-2023",
    threshold: float = 0.5,
    thresholds: Optional[Sequence[float]] = None,
    alternatives: Optional[Sequence[Sequence[Any]]] = None,
    batch_size: Optional[int] = None,
) -> MetricResult:
    """WildQA evidence Average Precision: ``AveragePrecision`` of the 2023
    rewrite of the official ``metrics.py`` (e46c788 on; the paper reports no
    AP), an ActivityNet-style AP over every predicted span of the split.

    Args:
        preds: N entries, each the question's predicted ``[start, end]``
            spans (seconds) **in confidence order** (the official code takes
            the list order as the ranking; spans carry no score).
        target: N primary gold span lists (``evidences``).
        mode: ``"wildqa-2023"``: the gold as the official ``model.py`` fed it
            (primary rounded half-to-even to integer seconds, alternatives in
            float32, spans equal to ``(0, 0)`` dropped: see :func:`iou_f1`)
            and IoU compared in float32; ``"clean"``: spans as given, float64.
        threshold: IoU a match needs (``>=``). The 2023 training code
            computed AP at ``torch.linspace(0, 1, 21)`` and logged index 2
            (0.1): pass ``threshold=0.1`` for that number.
        thresholds: extra thresholds, each reported as ``"AP@<t>"``.
        alternatives: N lists of other annotators' span lists
            (``alter_evidences``); each is a candidate target set.
        batch_size: None (default): the metric's own ``compute()`` over the
            whole split. B: the number the Lightning training loop logged:
            the AP of each run of B consecutive questions (the per-batch
            value of the metric's ``forward``), averaged weighted by batch
            size (a batch without a gold span makes it NaN, as there).

    Per question and threshold, the predictions are matched greedily, in
    list order, against each target set (primary, then each alternative):
    a prediction takes the unmatched target span of highest IoU with
    ``IoU >= threshold`` (equal IoUs: the earlier span; the official
    unstable ``argsort`` leaves that order open) and is a true positive,
    otherwise a false positive. The question keeps the target set with the
    most true positives (a tie: the set with fewer spans; then the earlier
    set), whose span count is added to the positives. The TP/FP flags of
    every question are concatenated in question order (never re-sorted across
    questions: the AP depends on question order) and the AP is the
    interpolated area (VOC style: precision made monotone, summed over recall
    steps). No prediction: no rows (its gold still counts); no gold in any
    set: every prediction is a false positive. No positive at all: NaN.
    Computed in float64 (the official code works in float32, which can move
    the 7th significant digit).

    Returns:
        :class:`MetricResult` ``"average_precision"``: ``"AP"`` = 100 x AP at
        ``threshold`` and ``"AP@<t>"`` per extra threshold; ``per_question``
        ``index``, ``TP``, ``n_pred``, ``n_gold`` (spans of the kept set),
        ``target`` (0 = primary, j = alternative j-1) at ``threshold``.

    Raises:
        InputError (a ValueError; TypeError too for wrong types): as
        :func:`iou_f1`, plus a ``batch_size`` that is not a positive integer.

    Example:
        >>> preds = [[[0, 4]], [[20, 25], [10, 12]]]  # each in confidence order
        >>> average_precision(preds, [[[0, 5]], [[10, 12]]], mode="clean")
        MetricResult(average_precision: AP=83.33)
    """
    _checks.choice(mode, "average_precision", "mode", AP_MODES)
    main_t = _checks.unit_interval(threshold, "average_precision", "threshold")
    extra_t = [_checks.unit_interval(t, "average_precision", f"thresholds[{i}]")
               for i, t in enumerate(thresholds or ())]
    if batch_size is not None and (isinstance(batch_size, bool)
                                   or not isinstance(batch_size, (int, np.integer))
                                   or batch_size < 1):
        raise InputError(f"average_precision: batch_size must be a positive integer, "
                         f"got {batch_size!r}")
    preds = _span_rows("preds", preds)
    n = len(preds)
    targets = _targets_for_mode(mode, _span_rows("target", target, n),
                                _alternative_sets(alternatives, n))
    inst_q = np.repeat(np.arange(n), [len(t) for t in targets])
    pairs = _Pairs([preds[q] for q in inst_q], [g for t in targets for g in t])
    iou = pairs.iou.astype(np.float32) if mode == "wildqa-2023" else pairs.iou
    sizes = pairs.k * pairs.m
    starts = np.concatenate(([0], np.cumsum(sizes)))
    first_inst = np.searchsorted(inst_q, np.arange(n))
    cast = np.float32 if mode == "wildqa-2023" else float

    def per_question(t: float):
        """-> TP flags per question (kept set), kept set index, its size."""
        flags, kept, n_gold = [], np.zeros(n, dtype=np.int64), np.zeros(n, dtype=np.int64)
        for q in range(n):
            best = None
            for j, inst in enumerate(range(first_inst[q], first_inst[q] + len(targets[q]))):
                mat = iou[starts[inst]:starts[inst + 1]].reshape(pairs.k[inst], pairs.m[inst])
                tp = _greedy_tp(mat, cast(t))
                rank = (int(tp.sum()), -int(pairs.m[inst]))
                if best is None or rank > best[0]:
                    best = (rank, j, tp)
            flags.append(best[2])
            kept[q], n_gold[q] = best[1], -best[0][1]
        return flags, kept, n_gold

    def ap(flags: list, n_gold: np.ndarray) -> float:
        if batch_size is None:
            tp = np.concatenate(flags) if flags else np.zeros(0, dtype=np.int64)
            return _interpolated_ap(tp, int(n_gold.sum()))
        total, weight = 0.0, 0
        for lo in range(0, n, int(batch_size)):
            hi = min(lo + int(batch_size), n)
            value = _interpolated_ap(np.concatenate(flags[lo:hi]), int(n_gold[lo:hi].sum()))
            total += value * (hi - lo)
            weight += hi - lo
        return total / weight if weight else float("nan")

    flags, kept, n_gold = per_question(main_t)
    metrics = {"AP": 100.0 * ap(flags, n_gold)}
    for t in extra_t:
        name = f"AP@{t:g}"
        if name in metrics:
            raise InputError(f"average_precision: threshold {t} given twice")
        metrics[name] = 100.0 * ap(*per_question(t)[::2])
    per_q = {
        "index": np.arange(n),
        "TP": np.array([int(f.sum()) for f in flags], dtype=np.int64),
        "n_pred": np.array([len(p) for p in preds], dtype=np.int64),
        "n_gold": n_gold,
        "target": kept,
    }
    info = {
        "mode": mode,
        "threshold": main_t,
        "thresholds": extra_t,
        "evaluated": n,
        "positives": int(n_gold.sum()),
        "predicted_spans": int(sum(len(p) for p in preds)),
        "with_alternatives": alternatives is not None,
        "batch_size": batch_size,
        "ranking": "each question's list order; questions concatenated in order",
        "scale": "AP in percent (0-100)",
    }
    return MetricResult("average_precision", metrics, per_q, info)


class AveragePrecision(Metric):
    """:func:`average_precision` over batches: ``AveragePrecision(mode=...,
    threshold=..., thresholds=..., batch_size=...)``, then ``update(preds,
    target, alternatives=...)`` per batch; ``compute()`` equals
    ``average_precision`` on all batches concatenated. See
    :class:`fastvqa.metrics.Metric`.

    Example:
        >>> m = AveragePrecision(mode="clean")
        >>> m.update([[[0, 4]]], [[[0, 5]]])
        >>> m.update([[[20, 25], [10, 12]]], [[[10, 12]]])
        >>> m.compute()
        MetricResult(average_precision: AP=83.33)
    """

    function = "average_precision"
    per_item = ("alternatives",)


# --------------------------------------------------------------------------
# Human agreement on evidence: leave one annotator out
# --------------------------------------------------------------------------

EMPTY_EVIDENCE = ("skip", "zero")


def human_evidence_agreement(
    primary: Sequence[Any],
    annotators: Sequence[Sequence[Any]],
    *,
    mode: Literal["clean", "wildqa-2023"] = "clean",
    threshold: float = 0.5,
    empty: Literal["skip", "zero"] = "skip",
) -> MetricResult:
    """WildQA's human evidence row (Table 5: "the average IOU-F1 score on the
    annotations from one annotator against the remaining annotators"): each
    Phase-2 annotator's spans scored with :func:`iou_f1` (``mode``
    ``"clean"`` or ``"wildqa-2023"``, ``threshold``) against the target sets
    {Phase-1 spans, every other Phase-2 annotator's non-empty spans}, the
    maximum over them.

    Args:
        primary: N Phase-1 span lists (``QARecord.spans``).
        annotators: N lists, one span list per Phase-2 annotator, aligned
            with the answers (``extra["alter_spans_by_answer"]`` of
            ``raw_*.json``, with the 1/4-duration filter for the release's
            "no evidence" annotators).
        empty: an annotator with no span after the filter: ``"skip"`` (left
            out) or ``"zero"`` (scores 0), the notebook's two variants.

    A question's value is the mean over its scored annotators; the result the
    mean over questions with at least one (others in ``info["skipped"]``).
    The repository's notebook averaged per worker, with its own IoU helper
    (which scores partial overlaps 0): the paper's 18.37 is not reproduced.

    Returns:
        :class:`MetricResult` ``"human_evidence_agreement"`` with ``"IoU-F1"``
        (percent); ``per_question`` ``index``, ``scored``, ``F1`` (NaN when
        none scored).

    Example:
        >>> primary = [[[0, 5]]]               # one question, its Phase-1 span
        >>> annotators = [[[[0, 4]], [[1, 5]], []]]  # three annotators, the last empty
        >>> human_evidence_agreement(primary, annotators, empty="zero")
        MetricResult(human_evidence_agreement: IoU-F1=66.67)
    """
    _checks.choice(mode, "human_evidence_agreement", "mode", ("clean", "wildqa-2023"))
    _checks.choice(empty, "human_evidence_agreement", "empty", EMPTY_EVIDENCE)
    gold = _span_rows("primary", primary)
    n = len(gold)
    one_per_question(annotators, n, "human_evidence_agreement", "annotators",
                     "list of annotator span lists")
    sets = [[_span_array(f"annotators[{q}][{j}]", s) for j, s in enumerate(a)]
            for q, a in enumerate(annotators)]
    preds, golds, others, owner, zeros = [], [], [], [], []
    for q, per_annotator in enumerate(sets):
        for j, spans in enumerate(per_annotator):
            if spans.shape[0] == 0:
                if empty == "zero":
                    zeros.append(q)
                continue
            preds.append(spans)
            golds.append(gold[q])
            others.append([s for i, s in enumerate(per_annotator) if i != j and s.shape[0]])
            owner.append(q)
    f1 = np.zeros(0)
    if preds:
        f1 = iou_f1(preds, golds, mode=mode, threshold=threshold,
                    alternatives=others).per_question["F1"]
    owner_arr = np.asarray(owner + zeros, dtype=np.int64)
    values = np.concatenate([f1, np.zeros(len(zeros))])
    count = np.bincount(owner_arr, minlength=n)
    sums = np.bincount(owner_arr, weights=values, minlength=n)
    kept = count > 0
    per_q = np.full(n, np.nan)
    per_q[kept] = sums[kept] / count[kept]
    info = {
        "mode": mode,
        "threshold": float(threshold),
        "empty": empty,
        "evaluated": int(kept.sum()),
        "skipped": int((~kept).sum()),
        "annotators_scored": int(owner_arr.size),
        "aggregation": "mean over a question's scored annotators, then over questions",
        "scale": "IoU-F1 in percent (0-100); per-question values on 0-1",
    }
    return MetricResult("human_evidence_agreement", {"IoU-F1": 100.0 * mean_or_nan(per_q[kept])},
                        {"index": np.arange(n), "scored": count, "F1": per_q}, info)
