# SPDX-License-Identifier: Apache-2.0
"""Plain-Python references for the WildQA metrics, written from the spec in
``anchors/eval.md`` section 1.2 / 1.6 and ``papers/wildqa.md`` section 2 (not
from fastvqa's code): explicit loops over Python floats, sets of integer
seconds for the paper-era IoU, ``np.float32`` scalars wherever the 2023 code
held float32 tensors, a brute-force search for one-to-one matching, and
hand-rolled n-gram / LCS counting for ROUGE.

Spans are ``(start, end)`` pairs in seconds; a question's spans are a list of
pairs (possibly empty).
"""

from __future__ import annotations

import math
import re
import string
from collections import Counter

import numpy as np

# --------------------------------------------------------------------------
# IoU
# --------------------------------------------------------------------------


def _pairs(spans) -> list[tuple[float, float]]:
    return [(float(s), float(e)) for s, e in (list(x) for x in spans)]


def iou_seconds_set(a, b) -> float:
    """Paper-era IoU: spans become ``set(range(round(s), round(e)))`` with
    Python's half-to-even ``round``; |A & B| / |A | B|, 0 for an empty union."""
    sa = set(range(round(a[0]), round(a[1])))
    sb = set(range(round(b[0]), round(b[1])))
    union = len(sa | sb)
    return 0.0 if union == 0 else len(sa & sb) / union


def iou_continuous(a, b) -> float:
    """Continuous IoU: intersection min(ends) - max(starts); 0 when <= 0, else
    inter / (len_a + len_b - inter)."""
    inter = min(a[1], b[1]) - max(a[0], b[0])
    if inter <= 0:
        return 0.0
    return inter / ((a[1] - a[0]) + (b[1] - b[0]) - inter)


def float32_running_mean(values) -> float:
    """A float32 total each value is added to in turn, over a float32 count."""
    total = np.float32(0.0)
    for v in values:
        total = np.float32(total + np.float32(v))
    return float(np.float32(total / np.float32(len(values)))) if values else math.nan


# --------------------------------------------------------------------------
# IoU-F1, mode "wildqa-2022"
# --------------------------------------------------------------------------


def f1_2022_question(preds, golds, threshold=0.5, n_gold=None) -> float:
    """Per-question paper-era F1. ``n_gold`` overrides #gold (batch padding)."""
    preds, golds = _pairs(preds), _pairs(golds)
    m = len(golds) if n_gold is None else n_gold
    if not preds and m == 0:
        return 1.0
    best = [max((iou_seconds_set(p, g) for g in golds), default=0.0) for p in preds]
    tp = sum(1 for b in best if b >= threshold)
    p = tp / len(preds) if preds else 0.0
    r = tp / m if m else 0.0
    if p == 0 or r == 0:
        return 0.0
    return 2 * p * r / (p + r)


def iou_f1_2022(preds, golds, threshold=0.5, pad_to_batch=None):
    """(per-question F1 list, dataset IoU-F1 in percent)."""
    n = len(preds)
    counts = [len(g) for g in golds]
    if pad_to_batch:
        for b in range(0, n, pad_to_batch):
            top = max(counts[b:b + pad_to_batch])
            for i in range(b, min(b + pad_to_batch, n)):
                counts[i] = top
    per_q = [f1_2022_question(p, g, threshold, counts[i])
             for i, (p, g) in enumerate(zip(preds, golds))]
    return per_q, 100.0 * float32_running_mean(per_q)


# --------------------------------------------------------------------------
# IoU-F1, mode "wildqa-2023"
# --------------------------------------------------------------------------


def _f1_2023_target(preds, target, threshold) -> np.float32:
    thr = np.float32(threshold)
    best = [np.float32(max((iou_continuous(p, g) for g in target), default=0.0)) for p in preds]
    tp = sum(1 for b in best if b >= thr)
    p = min(np.float32(tp) / np.float32(len(preds)), np.float32(1)) if preds else np.float32(0)
    r = min(np.float32(tp) / np.float32(len(target)), np.float32(1)) if target else np.float32(0)
    if p == 0 or r == 0:
        return np.float32(0)
    return np.float32(np.float32(np.float32(2) * p * r) / np.float32(p + r))


def iou_f1_2023(preds, golds, alternatives=None, threshold=0.5):
    """HEAD rules as fed by its ``model.py``: primary gold rounded to integer
    seconds, alternative spans through float32, ``(0, 0)`` spans dropped, max
    over target sets. Returns (per-question F1 list, IoU-F1 percent)."""
    per_q = []
    for i, (p, g) in enumerate(zip(preds, golds)):
        p = _pairs(p)
        primary = [(round(s), round(e)) for s, e in _pairs(g)]
        sets = [[t for t in primary if t != (0, 0)]]
        for alt in (alternatives[i] if alternatives is not None else []):
            a32 = [(float(np.float32(s)), float(np.float32(e))) for s, e in _pairs(alt)]
            sets.append([t for t in a32 if t != (0.0, 0.0)])
        per_q.append(float(max(_f1_2023_target(p, t, threshold) for t in sets)))
    return per_q, 100.0 * float32_running_mean(per_q)


# --------------------------------------------------------------------------
# IoU-F1, mode "clean"
# --------------------------------------------------------------------------


def _max_one_to_one(ok: list[list[bool]], i: int = 0, used: frozenset = frozenset()) -> int:
    """Brute force: the most pairs (prediction i.., target) with ok[p][g] and
    no target used twice."""
    if i == len(ok):
        return 0
    best = _max_one_to_one(ok, i + 1, used)  # prediction i left unmatched
    for g, good in enumerate(ok[i]):
        if good and g not in used:
            best = max(best, 1 + _max_one_to_one(ok, i + 1, used | {g}))
    return best


def _f1_clean_target(preds, target, threshold) -> float:
    if not preds and not target:
        return 1.0
    ok = [[iou_continuous(p, g) >= threshold for g in target] for p in preds]
    tp = _max_one_to_one(ok)
    p = tp / len(preds) if preds else 0.0
    r = tp / len(target) if target else 0.0
    if p == 0 or r == 0:
        return 0.0
    return 2 * p * r / (p + r)


def iou_f1_clean(preds, golds, alternatives=None, threshold=0.5):
    """Continuous float64 IoU, one-to-one matching, both empty = 1, max over
    target sets, float64 mean. Returns (per-question F1 list, percent)."""
    per_q = []
    for i, (p, g) in enumerate(zip(preds, golds)):
        sets = [_pairs(g)] + [_pairs(a) for a in (alternatives[i] if alternatives else [])]
        per_q.append(max(_f1_clean_target(_pairs(p), t, threshold) for t in sets))
    mean = math.fsum(per_q) / len(per_q) if per_q else math.nan
    return per_q, 100.0 * mean


# --------------------------------------------------------------------------
# Answers
# --------------------------------------------------------------------------


def normalize_answer_ref(s: str) -> str:
    """lower -> delete string.punctuation -> delete whole words a/an/the."""
    s = s.lower()
    s = "".join(ch for ch in s if ch not in string.punctuation)
    return re.sub(r"\b(a|an|the)\b", "", s)


def tokens_ref(s: str) -> list[str]:
    """WildQA normalisation, then the ROUGE tokenizer: runs outside [a-z0-9]
    become spaces, split on whitespace."""
    return re.sub(r"[^a-z0-9]+", " ", normalize_answer_ref(s)).split()


def _f(overlap: int, n_pred: int, n_ref: int) -> float:
    if overlap == 0 or n_pred == 0 or n_ref == 0:
        return 0.0
    p, r = overlap / n_pred, overlap / n_ref
    return 2 * p * r / (p + r)


def rouge_n_ref(pred: str, ref: str, n: int) -> float:
    tp, tr = tokens_ref(pred), tokens_ref(ref)
    gp = Counter(tuple(tp[i:i + n]) for i in range(len(tp) - n + 1))
    gr = Counter(tuple(tr[i:i + n]) for i in range(len(tr) - n + 1))
    overlap = sum(min(c, gr[g]) for g, c in gp.items())
    return _f(overlap, sum(gp.values()), sum(gr.values()))


def rouge_l_ref(pred: str, ref: str) -> float:
    tp, tr = tokens_ref(pred), tokens_ref(ref)
    table = [[0] * (len(tr) + 1) for _ in range(len(tp) + 1)]
    for i, a in enumerate(tp):
        for j, b in enumerate(tr):
            table[i + 1][j + 1] = table[i][j] + 1 if a == b else max(table[i][j + 1],
                                                                    table[i + 1][j])
    return _f(table[-1][-1], len(tp), len(tr))


def rouge_ref(preds, refs, references_mode="primary"):
    """Mean ROUGE-1/2/L F in percent; ``refs[i]`` is a list, first = primary;
    "max" takes the best reference per metric."""
    cols = {"ROUGE-1": [], "ROUGE-2": [], "ROUGE-L": []}
    for pred, ref_list in zip(preds, refs):
        used = ref_list[:1] if references_mode == "primary" else ref_list
        cols["ROUGE-1"].append(max(rouge_n_ref(pred, r, 1) for r in used))
        cols["ROUGE-2"].append(max(rouge_n_ref(pred, r, 2) for r in used))
        cols["ROUGE-L"].append(max(rouge_l_ref(pred, r) for r in used))
    return {k: 100.0 * math.fsum(v) / len(v) for k, v in cols.items()}, cols
