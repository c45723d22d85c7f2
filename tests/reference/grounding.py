# SPDX-License-Identifier: Apache-2.0
"""Plain-Python float64 references for the grounded QA metrics.

Written from the descriptions in docs/anchors/eval.md (§2.2 NExT-GQA
``eval_ground.py``, §2.4 ``eval_next.py``, §3.1 the DeVE-QA repository's
``devi/eval.py``), not from fastvqa's code: the official evaluator's loop
over dictionaries, one question at a time, with Python floats.
"""

from __future__ import annotations

import math
from typing import Any, Optional

import numpy as np

from tests.reference.temporal_iou import nextgqa_pair_ref


def get_tiou(gt: list, pred: list) -> tuple[float, float]:
    """NExT-GQA per-pair (IoU, IoP): signed intersection over the hull; a
    zero-length prediction has IoU 0 and IoP 1 iff the point is inside the gold
    span (ends included). Only ``[0]`` and ``[-1]`` of each span are read."""
    return nextgqa_pair_ref(float(pred[0]), float(pred[-1]), float(gt[0]), float(gt[-1]))


def eval_ground(gt: dict, pred: dict, pred_qa: Optional[dict] = None,
                gs: bool = False) -> dict[str, Any]:
    """The official aggregation.

    Args:
        gt: ``{video_id: {"duration": d, "location": {qid: [[s, e], ...]}}}``.
        pred: ``{"<vid>_<qid>": [s, e]}``; missing keys are skipped.
        pred_qa: ``{"<vid>_<qid>": {"prediction": k, "answer": k}}`` or None
            (then Acc@GQA is not computed).
        gs: predictions are normalised: ``np.round(pred * duration, 1)``.

    Returns:
        ``{"metrics": {...}, "iou": {key: v}, "iop": {key: v}}`` with the
        metrics ``Acc@GQA`` (with pred_qa), ``mIoP``, ``IoP@0.3``,
        ``IoP@0.5``, ``mIoU``, ``IoU@0.3``, ``IoU@0.5`` (x100 over the count of
        evaluated questions; NaN when none).
    """
    cnt = 0
    sum_iou = sum_iop = 0.0
    c_iop3 = c_iop5 = c_iou3 = c_iou5 = c_gqa = 0
    per_iou: dict[str, float] = {}
    per_iop: dict[str, float] = {}
    for vid, entry in gt.items():
        duration = entry["duration"]
        for qid, segs in entry["location"].items():
            key = f"{vid}_{qid}"
            if key not in pred:
                continue
            cnt += 1
            p = pred[key]
            if gs:
                p = np.round(np.asarray(p, dtype=np.float64) * duration, 1).tolist()
            max_iou = 0.0
            max_iop = 0.0
            for seg in segs:
                iou, iop = get_tiou(seg, p)
                if iou > max_iou:
                    max_iou = iou
                if iop > max_iop:
                    max_iop = iop
            per_iou[key] = max_iou
            per_iop[key] = max_iop
            sum_iou += max_iou
            sum_iop += max_iop
            if max_iop >= 0.3:
                c_iop3 += 1
            if max_iop >= 0.5:
                c_iop5 += 1
                if pred_qa is not None and pred_qa[key]["prediction"] == pred_qa[key]["answer"]:
                    c_gqa += 1
            if max_iou >= 0.3:
                c_iou3 += 1
            if max_iou >= 0.5:
                c_iou5 += 1

    def pct(x: float) -> float:
        return x / cnt * 100 if cnt else math.nan

    metrics = {}
    if pred_qa is not None:
        metrics["Acc@GQA"] = pct(c_gqa)
    metrics.update({"mIoP": pct(sum_iop), "IoP@0.3": pct(c_iop3), "IoP@0.5": pct(c_iop5),
                    "mIoU": pct(sum_iou), "IoU@0.3": pct(c_iou3), "IoU@0.5": pct(c_iou5)})
    return {"metrics": metrics, "iou": per_iou, "iop": per_iop, "count": cnt}


def acc_qa(gt: dict, pred_qa: dict) -> float:
    """``eval_next.py`` accuracy over the grounded questions that have a QA entry."""
    total = correct = 0
    for vid, entry in gt.items():
        for qid in entry["location"]:
            key = f"{vid}_{qid}"
            if key in pred_qa:
                total += 1
                correct += pred_qa[key]["prediction"] == pred_qa[key]["answer"]
    return correct / total * 100 if total else math.nan


# ------------------------------------------------------------ DeVE-QA repo


def _timespan(s: float, e: float) -> tuple[float, float]:
    """DeVi ``TimeSpan``: start clamped to >= 0, end to >= start."""
    s = max(0.0, float(s))
    e = max(s, float(e))
    return s, e


def devi_pair(pred: list, gold: list) -> tuple[float, float]:
    """DeVi (IoU, IoP) for one sanitised pair: textbook union, IoP 0 for a
    zero-length prediction."""
    ps, pe = _timespan(*pred)
    gs, ge = _timespan(*gold)
    inter = max(0.0, min(pe, ge) - max(ps, gs))
    lp, lg = pe - ps, ge - gs
    union = lp + lg - inter
    iou = inter / union if union > 0 else 0.0
    iop = inter / lp if lp > 0 else 0.0
    return iou, iop


def devi_eval(items: list[dict], preds: dict, with_answers: bool = True) -> dict[str, float]:
    """The DeVE-QA repository's rules.

    Args:
        items: ``[{"qid", "answer": int, "gt_span": [s, e] or None}]``.
        preds: ``{qid: {"answer": int or None, "span": [s, e] or None}}``;
            a missing qid, span or answer counts as 0 / wrong.
        with_answers: report Acc@QA and Acc@GQA.
    """
    n = len(items)
    qa = gqa = 0
    s_iop = s_iou = 0.0
    c = {"IoP@0.3": 0, "IoP@0.5": 0, "IoU@0.3": 0, "IoU@0.5": 0}
    for it in items:
        p = preds.get(it["qid"], {})
        span = p.get("span")
        if span is None or it["gt_span"] is None:
            iou = iop = 0.0
        else:
            iou, iop = devi_pair(span, it["gt_span"])
        right = p.get("answer") is not None and p.get("answer") == it["answer"]
        qa += right
        gqa += right and iop >= 0.5
        s_iop += iop
        s_iou += iou
        for t in (0.3, 0.5):
            c[f"IoP@{t}"] += iop >= t
            c[f"IoU@{t}"] += iou >= t

    def pct(x: float) -> float:
        return x / n * 100 if n else math.nan

    out = {}
    if with_answers:
        out["Acc@QA"] = pct(qa)
        out["Acc@GQA"] = pct(gqa)
    out.update({"mIoP": pct(s_iop), "IoP@0.3": pct(c["IoP@0.3"]), "IoP@0.5": pct(c["IoP@0.5"]),
                "mIoU": pct(s_iou), "IoU@0.3": pct(c["IoU@0.3"]), "IoU@0.5": pct(c["IoU@0.5"])})
    return out
