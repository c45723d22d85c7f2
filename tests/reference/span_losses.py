# SPDX-License-Identifier: Apache-2.0
"""Plain-Python float64 references for ``fastvqa.nn``'s span losses and
Hungarian matcher, written from their specification (the docstrings of
``fastvqa.nn.losses`` and ``fastvqa.nn.matcher``), not from the torch code:
explicit loops over Python floats, and the matcher's optimum by trying every
assignment.

Spans are anything ``np.asarray`` reads as ``(N, 2)``; ``(start, end)`` unless
a name says ``cw`` (``(centre, width)``).
"""

from __future__ import annotations

import itertools
import math

import numpy as np

from tests.reference.temporal_iou import _rows


def giou_ref(a0: float, a1: float, b0: float, b1: float, eps: float = 1e-7) -> float:
    """gIoU of ``[a0, a1]`` and ``[b0, b1]`` with the eps rule: reversed spans
    are empty, the hull is at least 0, and every denominator at least ``eps``."""
    len_a = max(a1 - a0, 0.0)
    len_b = max(b1 - b0, 0.0)
    inter = max(min(a1, b1) - max(a0, b0), 0.0)
    union = len_a + len_b - inter
    hull = max(max(a1, b1) - min(a0, b0), 0.0)
    return inter / max(union, eps) - (hull - union) / max(hull, eps)


def cw_to_se(c: float, w: float) -> tuple[float, float]:
    """``(centre, width)`` -> ``(start, end)``."""
    return c - w / 2.0, c + w / 2.0


def reduce_ref(values: list[float], reduction: str):
    """``"none"``: the list as an array; ``"sum"``; ``"mean"`` (0 when empty)."""
    if reduction == "none":
        return np.asarray(values, dtype=np.float64)
    total = 0.0
    for v in values:
        total += v
    if reduction == "sum":
        return total
    return total / len(values) if values else 0.0


def span_l1_loss_ref(pred_cw, target_cw, reduction: str = "none"):
    """Per span ``|c_p - c_t| + |w_p - w_t|``, then reduced."""
    vals = [abs(pc - tc) + abs(pw - tw)
            for (pc, pw), (tc, tw) in zip(_rows(pred_cw), _rows(target_cw))]
    return reduce_ref(vals, reduction)


def giou_loss_ref(pred, target, reduction: str = "none", eps: float = 1e-7):
    """Per span ``1 - giou(pred[i], target[i])``, then reduced."""
    vals = [1.0 - giou_ref(a0, a1, b0, b1, eps)
            for (a0, a1), (b0, b1) in zip(_rows(pred), _rows(target))]
    return reduce_ref(vals, reduction)


def pairwise_giou_ref(a, b, eps: float = 1e-7) -> np.ndarray:
    """``(N, M)``: ``out[i, j] = giou(a[i], b[j])``."""
    rb = _rows(b)
    return np.array([[giou_ref(a0, a1, b0, b1, eps) for b0, b1 in rb] for a0, a1 in _rows(a)],
                    dtype=np.float64).reshape(-1, len(rb))


def matching_cost_ref(logits, spans_cw, labels, targets_cw, cost_class: float = 1.0,
                      cost_span: float = 1.0, cost_giou: float = 1.0) -> np.ndarray:
    """``(Q, T)`` cost of one video: ``-cost_class * softmax(logits[q])[labels[t]]
    + cost_span * L1_cw(q, t) - cost_giou * giou_se(q, t)``."""
    logits = np.asarray(logits, dtype=np.float64)
    preds, tgts = _rows(spans_cw), _rows(targets_cw)
    labels = [int(x) for x in np.asarray(labels).reshape(-1).tolist()]
    out = np.zeros((len(preds), len(tgts)), dtype=np.float64)
    for q, (pc, pw) in enumerate(preds):
        row = [float(v) for v in logits[q].tolist()]
        top = max(row)
        exps = [math.exp(v - top) for v in row]
        total = sum(exps)
        for t, (tc, tw) in enumerate(tgts):
            prob = exps[labels[t]] / total
            l1 = abs(pc - tc) + abs(pw - tw)
            giou = giou_ref(*cw_to_se(pc, pw), *cw_to_se(tc, tw))
            out[q, t] = -cost_class * prob + cost_span * l1 - cost_giou * giou
    return out


def min_assignment_cost_ref(cost) -> float:
    """Least total cost of matching every target (column) to a distinct query
    (row), ``T <= Q``, by trying every injective assignment; 0 for ``T = 0``."""
    cost = np.asarray(cost, dtype=np.float64)
    n_q, n_t = cost.shape
    if n_t > n_q:
        raise ValueError("the reference needs T <= Q")
    best = 0.0 if n_t == 0 else math.inf
    for queries in itertools.permutations(range(n_q), n_t):
        total = 0.0
        for t, q in enumerate(queries):
            total += float(cost[q, t])
        best = min(best, total)
    return best
