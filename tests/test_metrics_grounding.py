# SPDX-License-Identifier: Apache-2.0
"""fastvqa.metrics.grounded_qa and the slicing helpers.

Expected values come from docs/anchors/eval.md (the measured lines of the
official NExT-GQA evaluator and of the DeVE-QA repository), from hand
computation, from the published reference numbers on the real NExT-GQA files
(docs/papers/deveqa.md §3.3) and from the float64 loops in
tests/reference/grounding.py.
"""

from __future__ import annotations

import math
import random
import re

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fastvqa.data import spans_to_csr
from fastvqa.errors import InputError
from fastvqa.metrics import MetricResult, grounded_qa, slice_by_duration, slice_by_event_count
from tests.reference.grounding import acc_qa, devi_eval, eval_ground

NAN2 = [math.nan, math.nan]
ORDER = ["mIoP", "IoP@0.3", "IoP@0.5", "mIoU", "IoU@0.3", "IoU@0.5"]


def run(preds, golds, **kw) -> MetricResult:
    flat, offsets = spans_to_csr(golds)
    return grounded_qa(np.asarray(preds, dtype=np.float64).reshape(-1, 2), (flat, offsets), **kw)


def line(result, with_gqa=True) -> list[float]:
    names = (["Acc@GQA"] if with_gqa else []) + ORDER
    return [result[n] for n in names]


# ------------------------------------------------- eval.md §2.2 measured lines


def test_multiple_gold_segments_measured_line():
    r = run([[19, 23]], [[[0, 10], [20, 22]]], pred_answers=[2], gt_answers=[2])
    assert line(r) == pytest.approx([100.0, 50.0, 100.0, 100.0, 50.0, 100.0, 100.0], abs=1e-12)
    assert r.per_question["IoU"][0] == pytest.approx(0.5)
    assert r.per_question["IoP"][0] == pytest.approx(0.5)


def test_inclusive_threshold_iou():
    r = run([[0, 5]], [[[0, 10]]])
    assert r["mIoU"] == 50.0
    assert r["IoU@0.5"] == 100.0


def test_iop_over_prediction_length():
    r = run([[5, 15]], [[[0, 10]]])
    assert r["mIoP"] == 50.0
    assert r["IoP@0.5"] == 100.0
    assert r["mIoU"] == pytest.approx(100 / 3)
    assert r["IoU@0.5"] == 0.0


def test_missing_prediction_is_skipped():
    r = run([[0, 10], NAN2], [[[0, 10]], [[3, 4]]], pred_answers=[1, -1], gt_answers=[1, 0])
    assert line(r) == [100.0] * 7
    assert r["Acc@QA"] == 100.0
    assert r.info["evaluated"] == 1 and r.info["missing"] == 1
    assert math.isnan(r.per_question["IoU"][1])
    assert list(r.per_question["evaluated"]) == [True, False]


def test_normalized_gs_example():
    r = run([[0.1, 0.3]], [[[3.3, 9.9]]], durations=[33], normalized=True)
    assert r["mIoU"] == 100.0 and r["mIoP"] == 100.0


def test_normalized_uses_numpy_rounding_not_python_round():
    # 0.038 * 25 = 0.95: np.round(., 1) = 1.0 (NumPy rounds x*10 half to even),
    # Python's round(0.95, 1) = 0.9 (0.95 is stored just below .95).
    assert float(np.round(0.038 * 25, 1)) == 1.0 and round(0.038 * 25, 1) == 0.9
    r = run([[0.038, 0.08]], [[[1.0, 2.0]]], durations=[25], normalized=True)
    assert r["mIoU"] == 100.0  # [1.0, 2.0]: exact match
    # With Python's round the span would be [0.9, 2.0]: IoU 1/1.1.
    assert r["mIoU"] != pytest.approx(100 / 1.1)


def test_disjoint_and_reversed_and_point_predictions():
    golds = [[[2, 6]], [[0, 10]], [[2, 6]], [[2, 6]], [[2, 6]], [[4, 4]]]
    preds = [[8, 9], [5, 3], [6, 6], [6.5, 6.5], [2, 2], [3, 5]]
    r = run(preds, golds)
    iou, iop = r.per_question["IoU"], r.per_question["IoP"]
    # disjoint: negative per pair, clamped by the max from 0
    assert iou[0] == 0.0 and iop[0] == 0.0
    # reversed: IoU -0.5 and IoP 0 per pair -> 0
    assert iou[1] == 0.0 and iop[1] == 0.0
    # zero-length prediction: IoU 0, IoP 1 when inside (ends included)
    assert (iou[2], iop[2]) == (0.0, 1.0)
    assert (iou[3], iop[3]) == (0.0, 0.0)
    assert (iou[4], iop[4]) == (0.0, 1.0)
    # zero-length gold span: inter 0 -> 0, 0
    assert (iou[5], iop[5]) == (0.0, 0.0)


def test_hull_denominator_at_exact_half():
    # Official IoU = signed intersection / hull. For these spans the hull gives
    # exactly 0.5 and 0.4999999999999999, the textbook union the opposite side.
    r = run([[3.9, 7.7], [2.3, 8.5]], [[[4.0, 11.3]], [[3.7, 11.9]]])
    # intersection / hull, written out: (min end - max start) / (max end - min start)
    assert list(r.per_question["IoU"]) == [(7.7 - 4.0) / (11.3 - 3.9), (8.5 - 3.7) / (11.9 - 2.3)]
    assert r.per_question["IoU"][0] == 0.5
    assert r.per_question["IoU"][1] < 0.5
    assert r["IoU@0.5"] == 50.0


def test_independent_max_over_segments():
    # IoU is best on the long segment, IoP on the short one inside the prediction.
    r = run([[0, 10]], [[[0, 8], [4, 5]]])
    assert r.per_question["IoU"][0] == pytest.approx(0.8)
    assert r.per_question["IoP"][0] == pytest.approx(0.8)
    r = run([[4, 6]], [[[0, 20], [4.5, 5]]])
    assert r.per_question["IoU"][0] == pytest.approx(0.25)
    assert r.per_question["IoP"][0] == 1.0


def test_acc_gqa_needs_iop_and_answer():
    preds = [[0, 10], [0, 10], [0, 20], [0, 20]]
    golds = [[[0, 10]], [[0, 10]], [[0, 9.9]], [[0, 10]]]
    r = run(preds, golds, pred_answers=[1, 0, 1, 3], gt_answers=[1, 1, 1, 3])
    # IoP: 1, 1, 0.495, 0.5 -> GQA counts q0 and q3
    assert r["Acc@GQA"] == 50.0
    assert r["Acc@QA"] == 75.0
    assert list(r.per_question["correct"]) == [True, False, True, True]


def test_acc_qa_counts_answers_without_spans():
    r = run([[0, 10], NAN2, NAN2], [[[0, 10]], [[0, 1]], [[0, 1]]],
            pred_answers=[1, 2, -1], gt_answers=[1, 0, 0])
    assert r["Acc@QA"] == 50.0  # 2 answered, 1 right
    assert r["Acc@GQA"] == 100.0  # 1 evaluated
    assert r.info["answered"] == 2


def test_thresholds_named_like_the_benchmark():
    r = run([[0, 10]], [[[0, 10]]], thresholds=(0.25, 0.7, 1))
    assert list(r) == ["mIoP", "IoP@0.25", "IoP@0.7", "IoP@1", "mIoU", "IoU@0.25", "IoU@0.7",
                       "IoU@1"]
    assert r["IoU@1"] == 100.0


def test_metric_order_and_keys():
    r = run([[0, 1]], [[[0, 1]]], pred_answers=[0], gt_answers=[0], keys=["v_1"])
    assert list(r) == ["Acc@QA", "Acc@GQA", *ORDER]
    assert r.per_question["key"] == ["v_1"]
    assert r.info["mode"] == "nextgqa"


def test_empty_and_all_missing_give_nan():
    r = grounded_qa(np.zeros((0, 2)), (np.zeros((0, 2)), np.zeros(1, dtype=np.int64)))
    assert all(math.isnan(v) for v in r.values())
    r = run([NAN2], [[[0, 1]]])
    assert all(math.isnan(v) for v in r.values()) and r.info["evaluated"] == 0


def test_empty_gold_row_scores_zero():
    r = run([[0, 1], [0, 1]], [[], [[0, 1]]])
    assert list(r.per_question["IoU"]) == [0.0, 1.0]
    assert r["mIoU"] == 50.0


def test_inputs_not_modified():
    preds = np.array([[0.1, 0.3]])
    flat, offsets = spans_to_csr([[[3.3, 9.9]]])
    before = (preds.copy(), flat.copy(), offsets.copy())
    grounded_qa(preds, (flat, offsets), durations=np.array([33.0]), normalized=True)
    for a, b in zip((preds, flat, offsets), before):
        assert np.array_equal(a, b)


# ------------------------------------------------------------ deveqa-repo


def test_deveqa_repo_example_run():
    # eval.md §3.1: [0,5] vs [0,10] right answer, the other missing.
    r = run([[0, 5], NAN2], [[[0, 10]], [[0, 10]]], pred_answers=[1, -1], gt_answers=[1, 2],
            mode="deveqa-repo")
    assert r["Acc@QA"] == 50.0
    assert r["mIoP"] == 50.0 and r["IoP@0.5"] == 50.0
    assert r["mIoU"] == 25.0 and r["IoU@0.5"] == 50.0
    assert r["Acc@GQA"] == 50.0
    assert r.info["missing"] == 1 and r.info["evaluated"] == 2


def test_deveqa_repo_rules_differ_from_nextgqa():
    golds = [[[0, 10]], [[0, 4]], [[2, 6]], [[0, 10]]]
    preds = [[5, 3], [-2, 2], [4, 4], [5, 15]]
    d = run(preds, golds, mode="deveqa-repo")
    # reversed [5,3] -> [5,5]: zero length -> IoP 0 (NExT-GQA: IoP 0 as reversed)
    # [-2,2] -> [0,2] vs [0,4]: IoU 0.5, IoP 1 (NExT-GQA: IoU 2/6, IoP 0.5)
    # point [4,4] inside [2,6]: IoP 0 (NExT-GQA: 1)
    # [5,15] vs [0,10]: IoU 5/15, IoP 0.5 (same)
    assert list(d.per_question["IoU"]) == pytest.approx([0, 0.5, 0, 1 / 3])
    assert list(d.per_question["IoP"]) == pytest.approx([0, 1, 0, 0.5])
    n = run(preds, golds)
    assert list(n.per_question["IoU"]) == pytest.approx([0, 1 / 3, 0, 1 / 3])
    assert list(n.per_question["IoP"]) == pytest.approx([0, 0.5, 1, 0.5])


def test_deveqa_repo_no_gold_span_scores_zero_and_multi_segment_refused():
    r = run([[0, 1], [0, 1]], [[], [[0, 1]]], mode="deveqa-repo")
    assert list(r.per_question["IoP"]) == [0.0, 1.0]
    with pytest.raises(ValueError, match="one gold span.*question 0 has 2"):
        run([[0, 1]], [[[0, 1], [2, 3]]], mode="deveqa-repo")


# ------------------------------------------------- property tests vs reference

GRID = st.integers(min_value=-2, max_value=40).map(lambda i: i * 0.5)


@st.composite
def grounded_cases(draw, max_segments=4):
    n = draw(st.integers(min_value=0, max_value=20))
    cases = []
    for _ in range(n):
        k = draw(st.integers(min_value=0, max_value=max_segments))
        golds = []
        for _ in range(k):
            a, b = draw(GRID), draw(GRID)
            golds.append([a, b] if draw(st.integers(0, 9)) else [b, a])  # mostly any order
        missing = draw(st.integers(0, 4)) == 0
        pred = None if missing else [draw(GRID), draw(GRID)]
        gt_answer = draw(st.integers(0, 4))
        pred_answer = draw(st.integers(-1, 4))
        if not missing and pred_answer == -1:
            pred_answer = gt_answer
        cases.append((golds, pred, gt_answer, pred_answer, draw(st.integers(1, 60))))
    return cases


def _to_official(cases, normalized=False):
    gt, pred, qa = {}, {}, {}
    for i, (golds, p, ga, pa, dur) in enumerate(cases):
        vid, qid = f"v{i // 3}", str(i)
        gt.setdefault(vid, {"duration": dur, "location": {}})
        gt[vid]["duration"] = dur
        gt[vid]["location"][qid] = golds
        if p is not None:
            pred[f"{vid}_{qid}"] = p
        if pa != -1:
            qa[f"{vid}_{qid}"] = {"prediction": pa, "answer": ga}
    return gt, pred, qa


def _to_arrays(cases, gt):
    # Durations per video as the official gt dict holds them (the last one wins).
    durations = [gt[f"v{i // 3}"]["duration"] for i in range(len(cases))]
    preds = np.array([p if p is not None else NAN2 for _, p, _, _, _ in cases],
                     dtype=np.float64).reshape(-1, 2)
    flat, offsets = spans_to_csr([g for g, _, _, _, _ in cases])
    pa = np.array([c[3] for c in cases], dtype=np.int64)
    ga = np.array([c[2] for c in cases], dtype=np.int64)
    return preds, flat, offsets, pa, ga, np.array(durations, dtype=np.float64)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(grounded_cases(), st.booleans())
def test_nextgqa_matches_official_loop(cases, normalized):
    if normalized:  # fractions of the video, on a 0.01 grid
        cases = [(g, None if p is None else [x / 20 for x in p], ga, pa, d)
                 for g, p, ga, pa, d in cases]
    gt, pred, qa = _to_official(cases)
    preds, flat, offsets, pa, ga, dur = _to_arrays(cases, gt)
    r = grounded_qa(preds, (flat, offsets), pred_answers=pa, gt_answers=ga, durations=dur,
                    normalized=normalized)
    ref = eval_ground(gt, pred, qa, gs=normalized)
    for name, want in ref["metrics"].items():
        if math.isnan(want):
            assert math.isnan(r[name]), name
        else:
            assert r[name] == pytest.approx(want, rel=1e-12, abs=1e-12), name
    want_qa = acc_qa(gt, qa)
    if math.isnan(want_qa):
        assert math.isnan(r["Acc@QA"])
    else:
        assert r["Acc@QA"] == pytest.approx(want_qa, rel=1e-12)
    # per question: bit-identical to the loop
    for i in range(len(cases)):
        key = f"v{i // 3}_{i}"
        if key in ref["iou"]:
            assert r.per_question["IoU"][i] == ref["iou"][key]
            assert r.per_question["IoP"][i] == ref["iop"][key]
        else:
            assert not r.per_question["evaluated"][i]
    assert r.info["evaluated"] == ref["count"]


@settings(max_examples=150, deadline=None)
@given(grounded_cases(max_segments=1), st.booleans())
def test_deveqa_repo_matches_reference(cases, with_answers):
    items, preds_ref = [], {}
    for i, (golds, p, ga, pa, _) in enumerate(cases):
        items.append({"qid": i, "answer": ga, "gt_span": golds[0] if golds else None})
        preds_ref[i] = {"span": p, "answer": None if pa == -1 else pa}
    preds, flat, offsets, pa, ga, _ = _to_arrays(cases, {f"v{i // 3}": {"duration": 1}
                                                         for i in range(len(cases))})
    kw = {"pred_answers": pa, "gt_answers": ga} if with_answers else {}
    r = grounded_qa(preds, (flat, offsets), mode="deveqa-repo", **kw)
    want = devi_eval(items, preds_ref, with_answers=with_answers)
    assert list(r) == list(want)
    for name, v in want.items():
        if math.isnan(v):
            assert math.isnan(r[name])
        else:
            assert r[name] == pytest.approx(v, rel=1e-12, abs=1e-12), name


@settings(max_examples=60, deadline=None)
@given(grounded_cases())
def test_invariants(cases):
    # deveqa.md §3.2: IoU_i <= IoP_i; Acc@GQA <= min(Acc@QA, IoP@0.5) when
    # every evaluated question is answered and nothing else is.
    cases = [(g, p, ga, (pa if p is not None else -1), d) for g, p, ga, pa, d in cases]
    gt, _, _ = _to_official(cases)
    preds, flat, offsets, pa, ga, _ = _to_arrays(cases, gt)
    r = grounded_qa(preds, (flat, offsets), pred_answers=pa, gt_answers=ga)
    ev = r.per_question["evaluated"]
    assert (r.per_question["IoU"][ev] <= r.per_question["IoP"][ev]).all()
    if ev.any():
        assert r["mIoU"] <= r["mIoP"] + 1e-9
        assert r["Acc@GQA"] <= min(r["Acc@QA"], r["IoP@0.5"]) + 1e-9
        assert r["Acc@GQA"] >= r["Acc@QA"] + r["IoP@0.5"] - 100 - 1e-9


# ------------------------------------------------------------------- errors


@pytest.mark.parametrize("kwargs, exc, match", [
    ({"mode": "devi"}, ValueError, "mode must be one of"),
    ({"thresholds": (0.3, 1.5)}, ValueError, r"\[0, 1\]"),
    ({"thresholds": (0.5, 0.5)}, ValueError, "repeat"),
    ({"thresholds": "0.5"}, TypeError, "sequence"),
    ({"pred_answers": [1]}, ValueError, "both"),
    ({"pred_answers": [1.0], "gt_answers": [1]}, TypeError, "integers"),
    ({"pred_answers": [1, 2], "gt_answers": [1]}, ValueError, r"shape \(N,\)"),
    ({"pred_answers": [1], "gt_answers": [-1]}, ValueError, ">= 0"),
    ({"normalized": True}, ValueError, "needs durations"),
    ({"normalized": True, "durations": [np.nan]}, ValueError, "finite"),
    ({"keys": ["a", "b"]}, ValueError, "keys"),
])
def test_argument_errors(kwargs, exc, match):
    with pytest.raises(exc, match=match):
        run([[0, 1]], [[[0, 1]]], **kwargs)


def test_array_errors():
    flat, offsets = spans_to_csr([[[0, 1]]])
    with pytest.raises(ValueError, match=r"row 0 is not a span or two NaNs: \[0.0, nan\]"):
        grounded_qa([[0, math.nan]], (flat, offsets))
    with pytest.raises(ValueError, match=r"row 0 is not a span or two NaNs: \[0.0, inf\]"):
        grounded_qa([[0, math.inf]], (flat, offsets))
    with pytest.raises(ValueError, match=r"row 1 is infinite: \[-inf, inf\]"):
        grounded_qa([[math.nan, math.nan], [-math.inf, math.inf]], ([[0, 1], [0, 1]], [0, 1, 2]))
    with pytest.raises(ValueError, match=r"shape \(N, 2\)"):
        grounded_qa([[0, 1, 2]], (flat, offsets))
    with pytest.raises(ValueError, match="gt_spans row 0 is not finite"):
        grounded_qa([[0, 1]], ([[0, math.nan]], offsets))
    with pytest.raises(ValueError, match=r"gt_offsets must have shape"):
        grounded_qa([[0, 1]], (flat, [0, 1, 1]))
    with pytest.raises(ValueError, match="end at K"):
        grounded_qa([[0, 1]], (flat, [0, 2]))
    with pytest.raises(TypeError, match="integers"):
        grounded_qa([[0, 1]], (flat, [0.0, 1.0]))
    with pytest.raises(TypeError, match="numbers"):
        grounded_qa([["a", "b"]], (flat, offsets))


def test_grounded_question_without_answer_is_an_error():
    with pytest.raises(ValueError,
                       match=r"question 0 \('v_1'\) has a span prediction but no answer"):
        run([[0, 1]], [[[0, 1]]], pred_answers=[-1], gt_answers=[0], keys=["v_1"])
    # the DeVE-QA repository counts it as wrong instead
    r = run([[0, 1]], [[[0, 1]]], pred_answers=[-1], gt_answers=[0], mode="deveqa-repo")
    assert r["Acc@QA"] == 0.0 and r["Acc@GQA"] == 0.0


# ------------------------------------------------------------------ slicing


def _slice_case():
    preds = [[0, 10], [0, 10], [0, 10], NAN2, [0, 5]]
    golds = [[[0, 10]], [[0, 5]], [[20, 30]], [[0, 1]], [[0, 10]]]
    r = run(preds, golds, pred_answers=[1, 1, 1, 2, 0], gt_answers=[1, 0, 1, 2, 0],
            durations=[30, 60, 90, 100, 200])
    return r


def test_slice_by_duration_hand_values():
    bins = slice_by_duration(_slice_case(), edges=(0, 60, 120, math.inf))
    assert list(bins) == ["[0, 60)", "[60, 120)", "[120, inf)"]
    a, b, c = bins.values()
    # [0, 60): q0 only (IoU 1, right)
    assert (a["mIoU"], a["Acc@GQA"], a["Acc@QA"]) == (100.0, 100.0, 100.0)
    # [60, 120): q1 (IoU .5, IoP .5, wrong), q2 (0, right), q3 skipped, answered right
    assert b["mIoU"] == 25.0 and b["mIoP"] == 25.0 and b["IoP@0.5"] == 50.0
    assert b["Acc@GQA"] == 0.0
    assert b["Acc@QA"] == pytest.approx(200 / 3)
    assert b.info["evaluated"] == 2 and b.info["questions"] == 3
    # [120, inf): q4 IoU .5 IoP 1 right
    assert (c["mIoU"], c["mIoP"], c["Acc@GQA"]) == (50.0, 100.0, 100.0)


def test_slice_edges_closed_side():
    r = _slice_case()
    left = slice_by_duration(r, edges=(30, 60, 90))
    right = slice_by_duration(r, edges=(30, 60, 90), closed="right")
    assert [v.info["questions"] for v in left.values()] == [1, 1]  # 30 | 60
    assert [v.info["questions"] for v in right.values()] == [1, 1]  # 60 | 90
    assert list(right) == ["(30, 60]", "(60, 90]"]
    assert right["(30, 60]"]["mIoU"] == 50.0  # q1
    assert math.isnan(slice_by_duration(r, edges=(1000, 2000))["[1000, 2000)"]["mIoU"])


def test_slice_by_event_count_matches_direct_evaluation():
    rng = np.random.default_rng(3)
    n = 200
    golds = [np.sort(rng.uniform(0, 50, (rng.integers(1, 4), 2)), axis=1) for _ in range(n)]
    preds = np.sort(rng.uniform(0, 50, (n, 2)), axis=1)
    preds[rng.random(n) < 0.1] = np.nan
    pa = rng.integers(0, 5, n)
    ga = rng.integers(0, 5, n)
    counts = rng.integers(1, 6, n)
    whole = run(preds, golds, pred_answers=pa, gt_answers=ga)
    bins = slice_by_event_count(whole, counts, labels=["single", "double", "dense"])
    assert list(bins) == ["single", "double", "dense"]
    for sel, label in ((counts == 1, "single"), (counts == 2, "double"), (counts >= 3, "dense")):
        idx = np.flatnonzero(sel)
        direct = run(preds[idx], [golds[i] for i in idx], pred_answers=pa[idx],
                     gt_answers=ga[idx])
        for name in direct:
            assert bins[label][name] == pytest.approx(direct[name], rel=1e-12), (label, name)


def test_slice_errors():
    r = _slice_case()
    with pytest.raises(ValueError, match="increasing"):
        slice_by_duration(r, edges=(60, 0))
    with pytest.raises(ValueError, match="closed"):
        slice_by_duration(r, edges=(0, 60), closed="both")
    with pytest.raises(ValueError, match="one per question"):
        slice_by_event_count(r, [1, 2])
    no_duration = run([[0, 1]], [[[0, 1]]])
    with pytest.raises(ValueError, match="no 'duration' column"):
        slice_by_duration(no_duration)


# ---------------------------------------------------------------- real data


def _official_inputs(shared_data):
    from fastvqa.data import load_nextgqa

    records = load_nextgqa(shared_data / "nextgqa", split="test")
    flat, offsets = spans_to_csr([r.spans for r in records])
    dur = np.array([r.duration for r in records])
    return records, flat, offsets, dur


def _rounded(result, decimals):
    return [round(result[n], decimals) for n in ORDER]


def test_real_full_video_centre_half_and_oracle(shared_data):
    _, flat, offsets, dur = _official_inputs(shared_data)
    full = grounded_qa(np.stack([np.zeros_like(dur), dur], axis=1), (flat, offsets))
    assert _rounded(full, 2) == [21.14, 20.57, 8.68, 21.14, 20.57, 8.68]
    centre = grounded_qa(np.stack([0.25 * dur, 0.75 * dur], axis=1), (flat, offsets))
    assert _rounded(centre, 2) == [22.85, 28.18, 14.78, 18.90, 25.18, 11.99]
    oracle = grounded_qa(flat[offsets[:-1]], (flat, offsets))
    assert _rounded(oracle, 2) == [100.0] * 6
    assert full.info["evaluated"] == 5553


def test_real_golden_random_line(shared_data):
    # eval.md §2.2 recipe: random.Random(0), gsub file order, two
    # round(uniform(0, duration), 1) sorted, then answer and prediction draws.
    records, flat, offsets, _ = _official_inputs(shared_data)
    rng = random.Random(0)
    preds, pa, ga = [], [], []
    for rec in records:
        a = round(rng.uniform(0, rec.duration), 1)
        b = round(rng.uniform(0, rec.duration), 1)
        preds.append(sorted([a, b]))
        ga.append(rng.randrange(5))
        pa.append(rng.randrange(5))
    r = grounded_qa(np.array(preds), (flat, offsets), pred_answers=np.array(pa),
                    gt_answers=np.array(ga))
    got = " ".join(f"{v:.1f}" for v in line(r))
    assert got == "3.9 22.7 27.4 18.1 14.2 18.9 8.0"


def test_real_slices_partition_the_questions(shared_data):
    _, flat, offsets, dur = _official_inputs(shared_data)
    full = grounded_qa(np.stack([np.zeros_like(dur), dur], axis=1), (flat, offsets),
                       durations=dur)
    bins = slice_by_duration(full, edges=(0, 30, 60, 90, math.inf))
    assert [b.info["evaluated"] for b in bins.values()] == [2288, 2041, 820, 404]
    # The bins' means, weighted by their sizes, give back the whole mean.
    total = sum(b["mIoU"] * b.info["evaluated"] for b in bins.values()) / 5553
    assert total == pytest.approx(full["mIoU"], rel=1e-12)


def test_target_as_per_question_rows_equals_the_csr_pair():
    # The same gold spans given as a list of (k_i, 2) rows and as the
    # (gt_spans, gt_offsets) pair score identically; hand values: question 0
    # [1, 3] vs {[0, 2], [2, 4]}: IoU max(1/3, 1/3); question 1 [5, 6] vs no gold: 0.
    rows = [np.array([[0.0, 2.0], [2.0, 4.0]]), np.zeros((0, 2))]
    pred = np.array([[1.0, 3.0], [5.0, 6.0]])
    a = grounded_qa(pred, rows)
    b = grounded_qa(pred, (np.array([[0.0, 2.0], [2.0, 4.0]]), np.array([0, 2, 2])))
    assert a.metrics == b.metrics
    assert a["mIoU"] == pytest.approx(100 * (1 / 3) / 2, rel=1e-15)
    np.testing.assert_array_equal(a.per_question["IoU"], b.per_question["IoU"])


def test_target_errors_name_the_argument():
    pred = np.array([[1.0, 3.0]])
    with pytest.raises(ValueError, match="target has 2 rows of gold spans for N = 1"):
        grounded_qa(pred, [[[0, 1]], [[0, 1]]])
    with pytest.raises(ValueError, match=r"target\[0\] must have shape \(N, 2\)"):
        grounded_qa(pred, [[0, 1, 2]])
    with pytest.raises(ValueError, match=r"a tuple target must be the pair"):
        grounded_qa(pred, (np.zeros((1, 2)), np.array([0, 1]), None))
    with pytest.raises(TypeError, match="target must be the pair"):
        grounded_qa(pred, np.zeros((1, 2)))


# ------------------------------------- the compiled single pass (NExT-GQA mode)
#
# grounded_qa in NExT-GQA mode (seconds) runs one compiled pass
# (fastvqa.ops.temporal_iou.grounding_scan). Expected values here are the
# metric written out in NumPy from the public grounding_overlap op: counts
# with >=, means as NumPy's sum over the evaluated questions (the official
# np.mean's order), Acc@QA over answered questions.


def _numpy_metrics(pred, gt, offsets, pa, ga, thresholds):
    from fastvqa.ops import grounding_overlap

    iou, iop = grounding_overlap(pred, gt, offsets)
    ev = ~np.isnan(pred[:, 0])
    n = int(ev.sum())
    answered = pa != -1
    correct = answered & (pa == ga)
    out = {"Acc@QA": correct.sum() / answered.sum() * 100,
           "Acc@GQA": (correct & (iop >= 0.5)).sum() / n * 100}
    for name, v in (("IoP", iop), ("IoU", iou)):
        out[f"m{name}"] = float(v[ev].sum()) / n * 100
        for t in thresholds:
            out[f"{name}@{t:g}"] = (v >= t).sum() / n * 100
    return out, iou, iop


def _random_questions(rng, n):
    k = rng.integers(0, 4, n)  # some questions without a gold span
    offsets = np.concatenate([[0], np.cumsum(k)]).astype(np.int64)
    start = np.round(rng.uniform(0, 100, offsets[-1]), 1)
    gt = np.stack([start, start + np.round(rng.uniform(0, 30, offsets[-1]), 1)], axis=1)
    a, b = np.round(rng.uniform(0, 120, n), 1), np.round(rng.uniform(0, 120, n), 1)
    pred = np.stack([np.minimum(a, b), np.maximum(a, b)], axis=1)
    odd = rng.random(n)
    pred[odd < 0.03, 1] = pred[odd < 0.03, 0]  # points
    pred[(odd >= 0.03) & (odd < 0.05)] = pred[(odd >= 0.03) & (odd < 0.05)][:, ::-1]
    pred[odd > 0.93] = np.nan  # no prediction
    ga = rng.integers(0, 5, n)
    pa = rng.integers(0, 5, n)
    pa[(odd > 0.93) & (rng.random(n) < 0.5)] = -1  # no answer where there is no span
    return pred, gt, offsets, pa, ga


@pytest.mark.parametrize("seed,n", [(0, 1), (1, 7), (2, 300), (3, 20_011)])
def test_scan_matches_the_metric_written_in_numpy(seed, n):
    import fastvqa

    pred, gt, offsets, pa, ga = _random_questions(np.random.default_rng(seed), n)
    pred[0], pa[0] = [1.0, 2.0], ga[0]  # at least one evaluated and answered question
    thresholds = (0.1, 0.3, 0.5, 0.7)
    want, iou, iop = _numpy_metrics(pred, gt, offsets, pa, ga, thresholds)
    before = fastvqa.get_num_threads()
    try:
        for threads in (1, 2, 3):
            fastvqa.set_num_threads(threads)
            r = grounded_qa(pred, (gt, offsets), pred_answers=pa, gt_answers=ga,
                            thresholds=thresholds)
            assert r.metrics == want  # exact: same counts, same summation order
            assert np.array_equal(r.per_question["IoU"], iou, equal_nan=True)
            assert np.array_equal(r.per_question["IoP"], iop, equal_nan=True)
            assert r.per_question["correct"].tolist() == ((pa != -1) & (pa == ga)).tolist()
            assert r.per_question["qa_evaluated"].tolist() == (pa != -1).tolist()
            assert r.info["missing"] == int(np.isnan(pred[:, 0]).sum())
            assert r.info["answered"] == int((pa != -1).sum())
    finally:
        fastvqa.set_num_threads(before)


def test_scan_sums_fall_back_to_numpy_when_its_order_differs(monkeypatch):
    import importlib

    # (fastvqa.ops.temporal_iou is also the name of a function in fastvqa.ops)
    tiou = importlib.import_module("fastvqa.ops.temporal_iou")
    pred, gt, offsets, pa, ga = _random_questions(np.random.default_rng(5), 5000)
    fast = grounded_qa(pred, (gt, offsets), pred_answers=pa, gt_answers=ga)
    monkeypatch.setattr(tiou, "numpy_order_sums", lambda: False)
    slow = grounded_qa(pred, (gt, offsets), pred_answers=pa, gt_answers=ga)
    assert fast.metrics == slow.metrics


@pytest.mark.parametrize("n", [*range(0, 20), 127, 128, 129, 136, 1000, 8192, 8193, 100_003])
def test_pairwise_sum_is_numpys(n):
    from fastvqa._ext import _C

    rng = np.random.default_rng(n)
    x = rng.standard_normal(n) * 10.0 ** rng.integers(-4, 5, n)
    skip = rng.random(n) < 0.2
    assert _C._pairwise_sum(x, None) == np.add.reduce(x)
    assert _C._pairwise_sum(x, skip) == x[~skip].sum()
    # and not a plain left-to-right sum (which the check could not tell apart)
    if n >= 1000:
        seq = 0.0
        for v in x.tolist():
            seq += v
        assert seq != np.add.reduce(x)


def test_scan_reports_errors_in_the_checks_order():
    from fastvqa.errors import InputError

    pred = np.array([[0.0, 1.0], [np.nan, 2.0], [1.0, 2.0]])
    gt = np.array([[0.0, 1.0], [np.inf, 2.0], [0.0, 1.0]])
    off = np.array([0, 1, 2, 3])
    with pytest.raises(InputError, match="preds row 1 is not a span or two NaNs"):
        grounded_qa(pred, (gt, off), pred_answers=np.zeros(2, np.int64), gt_answers=[0, 1, 2])
    pred[1] = [1.0, 2.0]
    with pytest.raises(InputError, match=r"gt_spans row 1 is not finite"):
        grounded_qa(pred, (gt, off), pred_answers=np.zeros(2, np.int64), gt_answers=[0, 1, 2])
    gt[1] = [0.0, 2.0]
    with pytest.raises(InputError, match=r"pred_answers must have shape \(N,\) = \(3,\)"):
        grounded_qa(pred, (gt, off), pred_answers=np.zeros(2, np.int64), gt_answers=[0, 1, -2])
    with pytest.raises(InputError, match="gt_answers must be >= 0, got -2 at question 2"):
        grounded_qa(pred, (gt, off), pred_answers=[0, 1, -1], gt_answers=[0, 1, -2])
    with pytest.raises(InputError, match=r"question 2 has a span prediction but no answer .*"
                                         r"\(1 such questions\)"):
        grounded_qa(pred, (gt, off), pred_answers=[0, 1, -1], gt_answers=[0, 1, 2])


# ------------------------------------------------------------- records entry


def _records():
    from fastvqa.data import QARecord

    return [QARecord(video_id="v1", question_id="0", answer=1, spans=np.array([[2.0, 6.0]])),
            QARecord(video_id="v1", question_id="1", answer=2, spans=np.array([[0.0, 5.0]])),
            QARecord(video_id="v2", question_id="0", answer=0, spans=np.array([[1.0, 2.0]]))]


def test_records_with_keyed_predictions_match_the_hand_computation():
    # [0, 4] vs [2, 6]: inter 2, hull 6 -> IoU 1/3, IoP 2/4; [2, 3] vs [0, 5]:
    # IoU 1/5, IoP 1; v2_0 has no prediction: skipped, and no answer.
    res = grounded_qa({"v1_0": [0.0, 4.0], "v1_1": [2.0, 3.0]}, _records(),
                      pred_answers={"v1_0": 1, "v1_1": 0})
    assert res["mIoU"] == pytest.approx(100 * (1 / 3 + 1 / 5) / 2)
    assert res["mIoP"] == pytest.approx(100 * (0.5 + 1.0) / 2)
    assert res["Acc@QA"] == pytest.approx(50.0) and res["Acc@GQA"] == pytest.approx(50.0)
    assert res.per_question["key"] == ["v1_0", "v1_1", "v2_0"]
    assert res.info["evaluated"] == 2 and res.info["missing"] == 1


def test_records_keyed_by_question_id_and_in_record_order():
    recs = _records()[:2]
    by_key = grounded_qa({"v1_0": [0.0, 4.0], "v1_1": [2.0, 3.0]}, recs)
    by_qid = grounded_qa({"0": [0.0, 4.0], "1": [2.0, 3.0]}, recs, by_question_id=True)
    in_order = grounded_qa([[0.0, 4.0], [2.0, 3.0]], recs)
    assert by_key.metrics == by_qid.metrics == in_order.metrics
    with pytest.raises(InputError, match="no prediction key matches"):
        grounded_qa({"0": [0.0, 4.0]}, recs)  # question ids without by_question_id


@pytest.mark.parametrize("offsets, message", [
    ([1, 2, 3], "must start at 0, got 1"),
    ([0, 3, 2], "must be non-decreasing, got 3 then 2"),
    ([0, 2, 2], "must end at the number of ground-truth spans (3), got 2"),
    ([0, -5, 3], "must be non-decreasing, got 0 then -5"),
    ([0, 1, 99], "must end at the number of ground-truth spans (3), got 99"),
])
def test_scan_reads_the_offsets_in_place_and_rejects_bad_ones(offsets, message):
    """The compiled pass reads the caller's offsets without a checked copy;
    an offset out of order or range never addresses gt, and the call raises
    the offsets' own error (the metric's Python check is bypassed here)."""
    from fastvqa import _C

    pred = np.array([[0.0, 5.0], [1.0, 2.0]])
    gt = np.array([[0.0, 10.0], [2.0, 3.0], [4.0, 6.0]])
    with pytest.raises(ValueError, match=re.escape(message)):
        _C._grounding_scan(pred, gt, np.array(offsets, dtype=np.int64), np.array([0.5]),
                           None, None, -1, 0.5)


def test_scan_reads_strided_offsets():
    from fastvqa.ops.temporal_iou import grounding_scan

    pred = np.array([[0.0, 5.0], [1.0, 2.0]])
    gt = np.array([[0.0, 10.0], [2.0, 3.0], [4.0, 6.0]])
    spaced = np.array([0, -7, 1, -7, 3], dtype=np.int64)[::2]  # [0, 1, 3], stride 2
    s = grounding_scan(pred, gt, spaced, [0.5])
    # row 0: [0, 5] vs [0, 10] -> 0.5; row 1: [1, 2] vs [2, 3] (touching) and [4, 6]
    assert s.iou.tolist() == [0.5, 0.0] and s.iop.tolist() == [1.0, 0.0]
