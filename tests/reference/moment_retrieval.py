# SPDX-License-Identifier: Apache-2.0
"""Plain-Python float64 references for ``fastvqa.metrics.moment_retrieval`` and
``recall_at_n``.

Written from docs/anchors/eval.md §5.1 (QVHighlights / Moment-DETR
``standalone_eval``) and §5.2 (2D-TAN ``lib/core/eval.py``), one query and one
window at a time, with Python floats; not from the library's code.

The only NumPy calls are the two whose exact behaviour *is* the specification:
``np.argsort(row)[::-1]`` (the order in which the official AP walks the
ground-truth windows, ties included) and ``np.sum`` of the AP terms.
"""

from __future__ import annotations

import math

import numpy as np

QVH_THRESHOLDS = [float(f"{e:.2f}") for e in np.linspace(0.5, 0.95, 10)]
QVH_BUCKETS = {"short": (0, 10), "middle": (10, 30), "long": (30, 150)}


def union_iou(p: tuple[float, float], g: tuple[float, float]) -> float:
    """Textbook IoU with no zero guard: 0/0 is NaN."""
    inter = max(0.0, min(p[1], g[1]) - max(p[0], g[0]))
    union = (p[1] - p[0]) + (g[1] - g[0]) - inter
    if union == 0.0:
        return math.nan if inter == 0.0 else math.copysign(math.inf, inter)
    return inter / union


def hull_iou(p: tuple[float, float], g: tuple[float, float]) -> float:
    """``max(0, inter) / (max(ends) - min(starts))``, 0 when the hull is 0."""
    inter = max(0.0, min(p[1], g[1]) - max(p[0], g[0]))
    hull = max(p[1], g[1]) - min(p[0], g[0])
    return inter / hull if hull != 0.0 else 0.0


def _argmax(values: list[float]) -> int:
    """np.argmax on a list: the first NaN, else the first maximum."""
    for i, v in enumerate(values):
        if math.isnan(v):
            return i
    best = 0
    for i, v in enumerate(values):
        if v > values[best]:
            best = i
    return best


def r1_iou_ref(preds: list, gts: list) -> tuple[float, int]:
    """(hull IoU of the first predicted window with the chosen GT, chosen index)."""
    first = (float(preds[0][0]), float(preds[0][1]))
    cross = [union_iou(first, (float(g[0]), float(g[1]))) for g in gts]
    j = _argmax(cross)
    return hull_iou(first, (float(gts[j][0]), float(gts[j][1]))), j


def ap_ref(preds: list, gts: list, thresholds=QVH_THRESHOLDS, max_pred_windows=10) -> list[float]:
    """Per-query AP at each threshold (0-1)."""
    kept = list(preds[:max_pred_windows]) if max_pred_windows is not None else list(preds)
    kept = sorted(kept, key=lambda w: -float(w[2]))  # stable
    gts = [(float(g[0]), float(g[1])) for g in gts]
    out = []
    for t in thresholds:
        locked = [False] * len(gts)
        tp, fp = [], []
        for w in kept:
            p = (float(w[0]), float(w[1]))
            ious = [union_iou(p, g) for g in gts]
            order = np.argsort(np.array(ious, dtype=np.float64))[::-1].tolist()
            hit = False
            for j in order:
                if ious[j] < t:
                    break
                if locked[j]:
                    continue
                locked[j] = True
                hit = True
                break
            tp.append(1.0 if hit else 0.0)
            fp.append(0.0 if hit else 1.0)
        tp_c, fp_c = [], []
        a = b = 0.0
        for x, y in zip(tp, fp):
            a += x
            b += y
            tp_c.append(a)
            fp_c.append(b)
        recall = [x / len(gts) for x in tp_c]
        precision = [x / (x + y) for x, y in zip(tp_c, fp_c)]
        mprec = [0.0] + precision + [0.0]
        mrec = [0.0] + recall + [1.0]
        for i in range(len(mprec) - 2, -1, -1):
            mprec[i] = max(mprec[i], mprec[i + 1])
        terms = [(mrec[i] - mrec[i - 1]) * mprec[i]
                 for i in range(1, len(mrec)) if mrec[i] != mrec[i - 1]]
        out.append(float(np.sum(np.array(terms, dtype=np.float64))) if terms else 0.0)
    return out


def _evaluate(preds: dict, gts: dict, max_pred_windows) -> dict:
    keys = list(preds)
    r1 = {}
    for t in QVH_THRESHOLDS:
        hits = [1.0 if r1_iou_ref(preds[k], gts[k])[0] >= t else 0.0 for k in keys]
        r1[str(t)] = sum(hits) / len(hits) * 100 if hits else math.nan
    aps = [ap_ref(preds[k], gts[k], max_pred_windows=max_pred_windows) for k in keys]
    mean_ap = {}
    for i, t in enumerate(QVH_THRESHOLDS):
        col = [a[i] for a in aps]
        mean_ap[str(t)] = sum(col) / len(col) if col else math.nan
    avg = sum(mean_ap.values()) / len(mean_ap) * 100 if keys else math.nan
    return {"R1": r1, "mAP": {k: v * 100 for k, v in mean_ap.items()}, "average": avg,
            "queries": len(keys)}


def qvhighlights_ref(preds: dict, gts: dict, max_pred_windows=10) -> dict:
    """``{"full": ..., "short": ..., "middle": ..., "long": ...}``, each with
    R1 and mAP per threshold (percent), ``average`` and ``queries``."""
    out = {"full": _evaluate(preds, gts, max_pred_windows)}
    for name, (lo, hi) in QVH_BUCKETS.items():
        b_gts = {}
        for k, ws in gts.items():
            kept = [w for w in ws if lo < float(w[1]) - float(w[0]) <= hi]
            if kept:
                b_gts[k] = kept
        b_preds = {k: v for k, v in preds.items() if k in b_gts}
        out[name] = _evaluate(b_preds, b_gts, max_pred_windows)
    return out


def nms_ref(windows: list, threshold: float, top_k: int) -> list:
    """2D-TAN's greedy NMS on a ranked list (textbook IoU, keep if <= threshold;
    a NaN overlap is not <= threshold, so it is dropped)."""
    order = list(range(len(windows)))
    keep = []
    while order:
        i = order[0]
        keep.append(i)
        if len(keep) == top_k:
            break
        rest = []
        for j in order[1:]:
            ovr = union_iou((float(windows[i][0]), float(windows[i][1])),
                            (float(windows[j][0]), float(windows[j][1])))
            if ovr <= threshold:
                rest.append(j)
        order = rest
    return [windows[i] for i in keep]


def recall_at_n_ref(preds: list, gts: list, ns=(1, 5), ms=(0.3, 0.5, 0.7),
                    strict=False, nms_threshold=None) -> dict:
    """R@n,IoU=m (percent) and mIoU (percent, top-1) over aligned query lists.
    ``gts[q]`` is a list of windows; a prediction's IoU is its max over them."""
    hits = {(n, m): [] for n in ns for m in ms}
    top1 = []
    for p, g in zip(preds, gts):
        ranked = nms_ref(p, nms_threshold, max(ns)) if nms_threshold is not None else list(p)
        ious = [max(hull_iou((float(w[0]), float(w[1])), (float(x[0]), float(x[1]))) for x in g)
                for w in ranked]
        top1.append(ious[0])
        for n in ns:
            for m in ms:
                ok = [(v > m) if strict else (v >= m) for v in ious[:n]]
                hits[(n, m)].append(1.0 if any(ok) else 0.0)
    out = {f"R@{n},IoU={m:g}": sum(h) / len(h) * 100 for (n, m), h in hits.items()}
    out["mIoU"] = sum(top1) / len(top1) * 100
    return out
