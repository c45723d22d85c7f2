# SPDX-License-Identifier: Apache-2.0
"""Plain-Python float64 reference for ``fastvqa.metrics.highlight_detection``,
written from the definition of the official QVHighlights ``eval_highlight``
(docs/anchors/eval.md §5.1): loops over queries, annotators and distinct
score thresholds; Python floats and lists only (``math.fsum`` is not used:
the official code averages with ``np.mean``, so means are compared with a
tolerance of a few ulps, per-query values exactly)."""

from __future__ import annotations

LEVELS = {"Fair": 2, "Good": 3, "VeryGood": 4}


def full_video_table(duration, clip_ids, scores, clip_seconds=2.0):
    """``int(duration / 2)`` rows of annotator scores, 0 outside ``clip_ids``."""
    n = int(duration / clip_seconds)
    width = len(scores[0]) if scores else 3
    table = [[0.0] * width for _ in range(n)]
    for c, row in zip(clip_ids, scores):
        table[c] = [float(v) for v in row]
    return table


def ap_ref(labels, scores):
    """The official ``get_ap(y_true, y_predict)`` with interpolation, no 11
    points: the precision-recall curve with one point per distinct score."""
    labels = [int(v) for v in labels]
    if all(v == 0 for v in labels):
        return 0.0
    if all(v == 1 for v in labels):
        return 1.0
    positives = sum(labels)
    # Curve points from the lowest threshold to the highest, then the
    # (precision 1, recall 0) end point.
    points = []
    for t in sorted(set(scores)):
        chosen = [y for y, s in zip(labels, scores) if s >= t]
        tp = sum(chosen)
        points.append([tp / len(chosen), tp / positives])
    points.append([1.0, 0.0])
    for i in range(1, len(points)):
        points[i][0] = max(points[i - 1][0], points[i][0])
    kept = [points[i][0] for i in range(len(points) - 1) if points[i][1] != points[i + 1][1]]
    return sum(kept) / len(kept)


def highlight_ref(preds, tables, levels=LEVELS):
    """``preds``: per query a list of clip scores; ``tables``: per query the
    full-video rows of annotator scores. Returns ``{name: value}`` in percent
    and the per-query ``(ap, hit)`` lists per level."""
    out, per_query = {}, {}
    for name, minimum in levels.items():
        aps, hits = [], []
        for scores, table in zip(preds, tables):
            n = len(table)
            width = len(table[0])
            binary = [[1 if row[a] >= minimum else 0 for a in range(width)] for row in table]
            # Hit@1: the first clip of the highest score.
            best = max(range(len(scores)), key=lambda c: (scores[c], -c))
            hits.append(1.0 if best < n and max(binary[best]) == 1 else 0.0)
            fitted = list(scores[:n]) + [0.0] * max(0, n - len(scores))
            q_aps = [ap_ref([binary[c][a] for c in range(n)], fitted) for a in range(width)]
            aps.append(q_aps)
        flat = [v for q in aps for v in q]
        out[f"HL-min-{name}-mAP"] = 100 * sum(flat) / len(flat)
        out[f"HL-min-{name}-Hit1"] = 100 * sum(hits) / len(hits)
        per_query[name] = ([sum(q) / len(q) for q in aps], hits)
    return out, per_query
