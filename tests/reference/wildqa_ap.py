# SPDX-License-Identifier: Apache-2.0
"""Float64 loop reference for WildQA's 2023 Average Precision, written from
the definition in anchors/eval.md section 1.3 (plain Python, no fastvqa)."""

from __future__ import annotations

import math

import numpy as np


def iou(a, b) -> float:
    inter = min(a[1], b[1]) - max(a[0], b[0])
    if inter <= 0:
        return 0.0
    return inter / ((a[1] - a[0]) + (b[1] - b[0]) - inter)


def gold_2023(primary, alternatives):
    """The target sets the 2023 model.py fed the metric: primary rounded
    half-to-even (Python round), alternatives through float32, [0, 0] dropped."""
    sets = [[[float(round(s)), float(round(e))] for s, e in primary]]
    for alt in alternatives:
        sets.append([[float(np.float32(s)), float(np.float32(e))] for s, e in alt])
    return [[span for span in t if span != [0.0, 0.0]] for t in sets]


def match(preds, golds, threshold, float32=False):
    """TP flags of preds (in order), greedy: highest-IoU free gold >= threshold."""
    taken = set()
    flags = []
    for p in preds:
        scores = [iou(p, g) for g in golds]
        if float32:
            scores = [float(np.float32(x)) for x in scores]
            threshold_c = float(np.float32(threshold))
        else:
            threshold_c = threshold
        order = sorted(range(len(golds)), key=lambda g: (-scores[g], g))
        hit = 0
        for g in order:
            if scores[g] < threshold_c:
                break
            if g not in taken:
                taken.add(g)
                hit = 1
                break
        flags.append(hit)
    return flags


def voc_ap(flags, n_pos) -> float:
    if n_pos == 0:
        return math.nan
    tp = fp = 0
    precision, recall = [], []
    for f in flags:
        tp += f
        fp += 1 - f
        precision.append(tp / (tp + fp))
        recall.append(tp / n_pos)
    mp = [0.0] + precision + [0.0]
    mr = [0.0] + recall + [1.0]
    for i in range(len(mp) - 2, -1, -1):
        mp[i] = max(mp[i], mp[i + 1])
    return sum((mr[i + 1] - mr[i]) * mp[i + 1] for i in range(len(mr) - 1) if mr[i + 1] != mr[i])


def average_precision(preds, target_sets, threshold, float32=False, batch_size=None):
    """preds[q]: spans; target_sets[q]: list of span lists (primary first).
    Returns AP on 0-1."""
    rows, pos = [], []
    for p, sets in zip(preds, target_sets):
        best = None
        for t in sets:
            flags = match(p, t, threshold, float32)
            key = (sum(flags), -len(t))
            if best is None or key > best[0]:
                best = (key, flags, len(t))
        rows.append(best[1])
        pos.append(best[2])
    if batch_size is None:
        return voc_ap([f for r in rows for f in r], sum(pos))
    total = 0.0
    for lo in range(0, len(rows), batch_size):
        hi = min(lo + batch_size, len(rows))
        total += voc_ap([f for r in rows[lo:hi] for f in r], sum(pos[lo:hi])) * (hi - lo)
    return total / len(rows)
