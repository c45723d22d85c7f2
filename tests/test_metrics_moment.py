# SPDX-License-Identifier: Apache-2.0
"""Tests for ``fastvqa.metrics.moment_retrieval`` (QVHighlights R1 / mAP) and
``fastvqa.metrics.recall_at_n`` (R@n,IoU=m): hand-computed cases from
docs/anchors/eval.md §5.1-§5.2, and random inputs against the float64 loops in
``tests/reference/moment_retrieval.py``."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fastvqa.metrics import MetricResult, moment_retrieval, recall_at_n
from tests.reference.moment_retrieval import (
    QVH_THRESHOLDS,
    ap_ref,
    nms_ref,
    qvhighlights_ref,
    r1_iou_ref,
    recall_at_n_ref,
)

QUIET_CHECKS = [HealthCheck.function_scoped_fixture, HealthCheck.too_slow]
SETTINGS = settings(max_examples=120, deadline=None, suppress_health_check=QUIET_CHECKS)


def close(a: float, b: float) -> bool:
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b)
    return math.isclose(a, b, rel_tol=1e-12, abs_tol=1e-12)


# --------------------------------------------------------------------------
# QVHighlights: hand-computed cases
# --------------------------------------------------------------------------


def test_result_names_and_scale():
    res = moment_retrieval({"q": [[0, 10, 1.0]]}, {"q": [[0, 10]]})
    assert isinstance(res, MetricResult)
    assert list(res) == ["R1@0.5", "R1@0.7", "mAP@0.5", "mAP@0.75", "mAP",
                         "MR-short-mAP", "MR-middle-mAP", "MR-long-mAP"]
    # A perfect prediction: 100 on the 0-100 scale; the 10 s window is "short".
    assert all(res[k] == 100.0 for k in ("R1@0.5", "R1@0.7", "mAP@0.5", "mAP@0.75", "mAP",
                                          "MR-short-mAP"))
    assert math.isnan(res["MR-middle-mAP"]) and math.isnan(res["MR-long-mAP"])
    assert res.info["thresholds"] == [0.5, 0.55, 0.6, 0.65, 0.7, 0.75, 0.8, 0.85, 0.9, 0.95]


def test_duplicate_correct_prediction_is_a_false_positive():
    # eval.md §5.1: (match, duplicate, match) gives AP 0.8333. Sorted by score:
    # TP (A), FP (A already taken; B has IoU 0), TP (B). Precision 1, 1/2, 2/3
    # at recall 1/2, 1/2, 1; monotone from the right: 1, 2/3, 2/3.
    # AP = 1/2 * 1 + 1/2 * 2/3 = 5/6 at every threshold.
    gt = {"q": [[0, 10], [20, 30]]}
    pred = {"q": [[0, 10, 0.9], [0, 10, 0.8], [20, 30, 0.7]]}
    res = moment_retrieval(pred, gt)
    for name in ("mAP@0.5", "mAP@0.75", "mAP"):
        assert res[name] == pytest.approx(500 / 6, abs=1e-12)
    assert res["R1@0.5"] == 100.0


@pytest.mark.parametrize("wrong_first, expected", [(True, 200 / 3), (False, 100.0)])
def test_tied_scores_keep_file_order(wrong_first, expected):
    # eval.md §5.1: with tied scores the stable sort keeps file order. Wrong
    # window first: precision 0, 1/2, 2/3 at recall 0, 1/2, 1 -> AP 2/3;
    # wrong window last: AP 1.
    gt = {"q": [[0, 10], [20, 30]]}
    right = [[0, 10, 0.5], [20, 30, 0.5]]
    wrong = [[50, 60, 0.5]]
    pred = {"q": wrong + right if wrong_first else right + wrong}
    assert moment_retrieval(pred, gt)["mAP"] == pytest.approx(expected, abs=1e-12)


def test_three_predictions_by_hand():
    # GT A = [0, 10], B = [20, 30]. File order: junk [40, 50] (score .95),
    # [0, 12] (.9; IoU with A 10/12), [18, 30] (.5; IoU with B 10/12).
    # t <= 0.8: FP, TP, TP -> precision 0, 1/2, 2/3, recall 0, 1/2, 1 ->
    # AP = 1/2 * 2/3 + 1/2 * 2/3 = 2/3. t >= 0.85 (> 0.8333): AP 0.
    # mAP = 7/10 * 2/3. R1 looks at the first window in the file: IoU 0.
    gt = {"q": [[0, 10], [20, 30]]}
    pred = {"q": [[40, 50, 0.95], [0, 12, 0.9], [18, 30, 0.5]]}
    res = moment_retrieval(pred, gt)
    assert res["mAP@0.5"] == pytest.approx(200 / 3, abs=1e-12)
    assert res["mAP@0.75"] == pytest.approx(200 / 3, abs=1e-12)
    assert res["mAP"] == pytest.approx(0.7 * 200 / 3, abs=1e-12)
    assert res.info["mAP_by_threshold"]["0.85"] == 0.0
    assert res["R1@0.5"] == 0.0 and res["R1@0.7"] == 0.0


def test_r1_uses_only_the_first_window():
    # eval.md §5.1: "Only the first window counts for R1"; mAP sorts by score.
    gt = {"q": [[0, 10]]}
    pred = {"q": [[50, 60, 0.1], [0, 10, 0.9]]}
    res = moment_retrieval(pred, gt)
    assert res["R1@0.5"] == 0.0
    assert res["mAP"] == 100.0


def test_r1_hull_and_map_union_differ_at_the_boundary():
    # Prediction [0, 0.1], ground truth [0, 0.2]. Hull (R1): 0.1 / (0.2 - 0) is
    # exactly 0.5. Textbook union (mAP): 0.1 + 0.2 - 0.1 = 0.20000000000000004
    # in float64, so IoU = 0.49999999999999994 < 0.5.
    assert 0.1 / (0.2 - 0.0) == 0.5
    assert 0.1 / ((0.1 - 0.0) + (0.2 - 0.0) - 0.1) < 0.5
    res = moment_retrieval({"q": [[0.0, 0.1, 1.0]]}, {"q": [[0.0, 0.2]]})
    assert res["R1@0.5"] == 100.0
    assert res["mAP@0.5"] == 0.0
    assert res.per_question["IoU"][0] == 0.5


def test_r1_picks_the_gt_window_with_the_highest_iou():
    # Windows: [0, 4] IoU 0 with [10, 20]; [8, 20] IoU 10/12 = 0.833 -> chosen.
    res = moment_retrieval({"q": [[10, 20, 1]]}, {"q": [[0, 4], [8, 20]]})
    assert res.per_question["gt_index"][0] == 1
    assert res.per_question["IoU"][0] == pytest.approx(10 / 12, abs=1e-15)
    assert res["R1@0.7"] == 100.0


def test_first_ten_in_file_order_truncation():
    # eval.md §5.1: ten high-scored junk windows first drive mAP to 0, even though
    # a perfect window with a higher score follows.
    junk = [[100 + 10 * i, 105 + 10 * i, 0.99] for i in range(10)]
    pred = {"q": junk + [[0, 10, 1.0]]}
    gt = {"q": [[0, 10]]}
    assert moment_retrieval(pred, gt)["mAP"] == 0.0
    # Without truncation the perfect window sorts first: precision 1 at recall 1.
    assert moment_retrieval(pred, gt, max_pred_windows=None)["mAP"] == 100.0
    # Truncation to 11 keeps it too.
    assert moment_retrieval(pred, gt, max_pred_windows=11)["mAP"] == 100.0


def test_greedy_matching_walks_tied_ious_in_argsort_order():
    # A = [0, 10], B = [10, 20]; P1 = [0, 20] has IoU exactly 0.5 with both
    # (10 / (20 + 10 - 10)). The official walk is np.argsort([0.5, 0.5])[::-1]
    # = [1, 0]: P1 takes B at t = 0.5, and P2 = [0, 10] then takes A:
    # AP(0.5) = 1. For t >= 0.55 P1 is a FP and P2 a TP: precision 0, 1/2 at
    # recall 0, 1/2 -> AP = 1/4. mAP = (1 + 9 / 4) / 10.
    pred = {"q": [[0, 20, 0.9], [0, 10, 0.8]]}
    gt = {"q": [[0, 10], [10, 20]]}
    assert np.argsort(np.array([0.5, 0.5]))[::-1].tolist() == [1, 0]
    res = moment_retrieval(pred, gt)
    assert res["mAP@0.5"] == 100.0
    assert res["mAP@0.75"] == 25.0
    assert res["mAP"] == pytest.approx(32.5, abs=1e-12)


def test_length_buckets_by_hand():
    # q1: GT [0, 8] (short). q2: GT [0, 20] (middle) and [40, 100] (long).
    # q2's predictions by score: [40, 100] then [0, 20].
    # full: both queries AP 1. short: q1 only -> 100. middle: q2 against [0, 20]
    # only: FP then TP -> AP 1/2. long: q2 against [40, 100]: TP then FP -> 1.
    gt = {"q1": [[0, 8]], "q2": [[0, 20], [40, 100]]}
    pred = {"q1": [[0, 8, 1.0]], "q2": [[40, 100, 0.9], [0, 20, 0.8]]}
    res = moment_retrieval(pred, gt)
    assert res["mAP"] == 100.0
    assert res["MR-short-mAP"] == 100.0
    assert res["MR-middle-mAP"] == 50.0
    assert res["MR-long-mAP"] == 100.0
    buckets = res.info["buckets"]
    assert [buckets[b]["queries"] for b in ("short", "middle", "long")] == [1, 1, 1]
    # middle R1: q2's first window [40, 100] against its only middle GT [0, 20].
    assert buckets["middle"]["R1@0.5"] == 0.0
    assert buckets["long"]["R1@0.5"] == 100.0
    # Without buckets only the five main metrics remain.
    assert list(moment_retrieval(pred, gt, length_buckets=None)) == [
        "R1@0.5", "R1@0.7", "mAP@0.5", "mAP@0.75", "mAP"]


def test_bucket_bounds_are_half_open():
    # (0, 10]: a 10 s window is short, a 10.5 s window is middle.
    gt = {"a": [[0, 10]], "b": [[0, 10.5]]}
    pred = {"a": [[0, 10, 1]], "b": [[0, 10.5, 1]]}
    b = moment_retrieval(pred, gt).info["buckets"]
    assert b["short"]["queries"] == 1 and b["middle"]["queries"] == 1


def test_zero_length_windows_follow_the_official_nan_rule():
    # Textbook IoU of [5, 5] with [5, 5] is 0/0 = NaN in the official code: it
    # is never "< t", so AP counts a match; the R1 hull is 0, so R1 IoU is 0.
    res = moment_retrieval({"q": [[5, 5, 1.0]]}, {"q": [[5, 5]]})
    assert res["mAP"] == 100.0
    assert res["R1@0.5"] == 0.0


def test_keys_are_compared_as_strings_and_in_prediction_order():
    pred = {2: [[0, 10, 1]], 1: [[0, 4, 1]]}
    gt = {"1": [[0, 10]], "2": [[0, 10]]}
    res = moment_retrieval(pred, gt)
    assert res.per_question["key"] == ["2", "1"]
    assert res.per_question["IoU"].tolist() == [1.0, 0.4]
    assert res["R1@0.5"] == 50.0


def test_sequences_are_matched_by_position():
    res = moment_retrieval([[[0, 10, 1]], [[0, 1, 1]]], [[[0, 10]], [[5, 10]]])
    assert res["R1@0.5"] == 50.0
    assert res.per_question["key"] == ["0", "1"]


def test_per_question_columns():
    gt = {"a": [[0, 10], [20, 30]], "b": [[0, 10]]}
    pred = {"a": [[0, 10, 0.9], [0, 10, 0.8], [20, 30, 0.7]], "b": [[0, 5, 1.0]]}
    pq = moment_retrieval(pred, gt).per_question
    assert pq["n_pred"].tolist() == [3, 1]
    assert pq["n_gt"].tolist() == [2, 1]
    assert pq["AP"][0] == pytest.approx(5 / 6, abs=1e-15)
    # b: IoU 0.5 -> AP 1 at t = 0.5 only.
    assert pq["AP@0.5"].tolist() == [pytest.approx(5 / 6), 1.0]
    assert pq["AP"][1] == pytest.approx(0.1, abs=1e-15)


def test_match_number():
    gt = {"a": [[0, 10]], "b": [[0, 10]]}
    pred = {"a": [[0, 10, 1]], "c": [[0, 10, 1]]}
    with pytest.raises(ValueError, match="match_number=False"):
        moment_retrieval(pred, gt)
    res = moment_retrieval(pred, gt, match_number=False)
    assert res.info["evaluated"] == 1 and res.info["missing"] == 1 and res.info["skipped"] == 1
    assert res["mAP"] == 100.0


@pytest.mark.parametrize("pred, gt, exc, match", [
    ({"a": []}, {"a": [[0, 1]]}, ValueError, "no windows"),
    ({"a": [[0, 1, 1]]}, {"a": []}, ValueError, "no windows"),
    ({"a": [[0, 1, 1]]}, {"a": [[1, 0]]}, ValueError, "end < start"),
    ({"a": [[0, float("nan"), 1]]}, {"a": [[0, 1]]}, ValueError, "finite"),
    ({"a": [[0, 1]]}, {"a": [[0, 1]]}, ValueError, r"shape \(n, 3\)"),
    ({"a": [["x", 1, 1]]}, {"a": [[0, 1]]}, TypeError, "windows"),
    ({"a": [[0, 1, 1]]}, [[[0, 1]]], TypeError, "both be mappings"),
    ([[[0, 1, 1]]], [[[0, 1]], [[0, 1]]], ValueError, "1 queries but target has 2"),
    ({1: [[0, 1, 1]], "1": [[0, 1, 1]]}, {"1": [[0, 1]]}, ValueError, "appears twice"),
    ("abc", "abc", TypeError, "mapping or a sequence"),
])
def test_bad_inputs(pred, gt, exc, match):
    with pytest.raises(exc, match=match):
        moment_retrieval(pred, gt)


def test_bad_options():
    ok = ({"a": [[0, 1, 1]]}, {"a": [[0, 1]]})
    with pytest.raises(ValueError, match="max_pred_windows"):
        moment_retrieval(*ok, max_pred_windows=0)
    with pytest.raises(TypeError, match="max_pred_windows"):
        moment_retrieval(*ok, max_pred_windows=2.5)
    with pytest.raises(ValueError, match="length bucket"):
        moment_retrieval(*ok, length_buckets={"x": (10, 5)})
    with pytest.raises(ValueError, match="length bucket"):
        moment_retrieval(*ok, length_buckets={"full": (0, 5)})


def test_inputs_are_not_modified():
    pred = {"a": np.array([[3.0, 4.0, 0.1], [0.0, 1.0, 0.9]])}
    gt = {"a": np.array([[0.0, 1.0]])}
    before = pred["a"].copy()
    moment_retrieval(pred, gt)
    np.testing.assert_array_equal(pred["a"], before)


# --------------------------------------------------------------------------
# QVHighlights: random inputs against the reference loop
# --------------------------------------------------------------------------


@st.composite
def window(draw, scored: bool):
    scale = draw(st.sampled_from([0.1, 0.5, 2.0]))
    start = draw(st.integers(0, 60)) * scale
    end = start + draw(st.integers(0, 60)) * scale
    if not scored:
        return [start, end]
    return [start, end, draw(st.sampled_from([0.0, 0.25, 0.5, 0.75, 1.0]))]


@st.composite
def qvh_case(draw):
    n = draw(st.integers(1, 5))
    gts = {f"q{i}": draw(st.lists(window(False), min_size=1, max_size=7)) for i in range(n)}
    preds = {f"q{i}": draw(st.lists(window(True), min_size=1, max_size=13)) for i in range(n)}
    return preds, gts


@st.composite
def qvh_case_with_reversed(draw):
    """Some predicted windows reversed; some of those exactly as long
    (negatively) as a ground-truth window of their query, where the
    official union is 0 and the IoU 0/0 = NaN."""
    preds, gts = draw(qvh_case())
    for key, windows in preds.items():
        for w in windows:
            kind = draw(st.sampled_from(["keep", "keep", "reverse", "minus_gt"]))
            if kind == "reverse":
                w[0], w[1] = w[1] + draw(st.integers(1, 5)), w[0]
            elif kind == "minus_gt":
                g = draw(st.sampled_from(gts[key]))
                w[1] = w[0] - (g[1] - g[0])
    return preds, gts


@SETTINGS
@given(case=qvh_case(), max_pred=st.sampled_from([10, None, 3]))
def test_qvhighlights_matches_reference(case, max_pred):
    assert_matches_reference(*case, max_pred)


@SETTINGS
@given(case=qvh_case_with_reversed(), max_pred=st.sampled_from([10, None, 3]))
def test_reversed_windows_score_as_the_official_formula(case, max_pred):
    # The reference loop computes the official formulas on the raw numbers
    # (union = len_p + len_g - inter with a negative len_p; 0/0 = NaN).
    preds, gts = case
    assert_matches_reference(preds, gts, max_pred)
    n_rev = sum(w[1] < w[0] for ws in preds.values() for w in ws)
    res = moment_retrieval(preds, gts, max_pred_windows=max_pred)
    assert res.info["reversed_windows"]["windows"] == n_rev
    assert bool(res.info.get("warnings")) == (n_rev > 0)
    if n_rev:
        with pytest.raises(ValueError, match="end < start"):
            moment_retrieval(preds, gts, max_pred_windows=max_pred, strict=True)


def assert_matches_reference(preds, gts, max_pred):
    res = moment_retrieval(preds, gts, max_pred_windows=max_pred)
    ref = qvhighlights_ref(preds, gts, max_pred_windows=max_pred)
    for t in map(str, QVH_THRESHOLDS):
        assert close(res.info["R1"][t], ref["full"]["R1"][t]), t
        assert close(res.info["mAP_by_threshold"][t], ref["full"]["mAP"][t]), t
    assert close(res["mAP"], ref["full"]["average"])
    for name in ("short", "middle", "long"):
        assert close(res[f"MR-{name}-mAP"], ref[name]["average"]), name
        assert res.info["buckets"][name]["queries"] == ref[name]["queries"]
        assert close(res.info["buckets"][name]["R1@0.7"], ref[name]["R1"]["0.7"]), name
    # Per query, the AP at each threshold is the same float as the loop's.
    for i, key in enumerate(res.per_question["key"]):
        aps = ap_ref(preds[key], gts[key], max_pred_windows=max_pred)
        assert res.per_question["AP@0.5"][i] == aps[0]
        assert res.per_question["AP@0.75"][i] == aps[5]
        iou, j = r1_iou_ref(preds[key], gts[key])
        assert res.per_question["IoU"][i] == iou and res.per_question["gt_index"][i] == j


def test_reversed_windows_by_hand():
    # GT [2, 8] (length 6). [10, 4] is reversed: intersection 0, official
    # union (4 - 10) + 6 - 0 = 0 -> 0/0 = NaN, which AP counts as a match
    # (NaN < t is false). [9, 5]: union -4 + 6 = 2, IoU 0: a false positive.
    gt = {"a": [[2, 8]]}
    res = moment_retrieval({"a": [[10, 4, 0.9]]}, gt)
    assert res["mAP"] == 100.0 and res["R1@0.5"] == 0.0  # R1: hull IoU 0
    assert res.per_question["IoU"][0] == 0.0
    res = moment_retrieval({"a": [[9, 5, 0.9], [2, 8, 0.5]]}, gt)
    # FP then TP: precision 1/2 at recall 1 -> AP 0.5 at every threshold.
    assert res["mAP"] == 50.0 and res["R1@0.5"] == 0.0
    assert res.info["reversed_windows"] == {"windows": 1, "queries": 1}
    assert "1 predicted windows (in 1 queries) have end < start" in res.info["warnings"][0]
    assert "strict=True" in res.info["warnings"][0]
    ok = moment_retrieval({"a": [[2, 8, 0.5]]}, gt)
    assert ok.info["reversed_windows"] == {"windows": 0, "queries": 0}
    assert "warnings" not in ok.info
    with pytest.raises(ValueError, match=r"window 0 \[9.0, 5.0\] has end < start"):
        moment_retrieval({"a": [[9, 5, 0.9], [2, 8, 0.5]]}, gt, strict=True)
    # Windows past the video are plain numbers to the metric (no duration).
    assert moment_retrieval({"a": [[2, 200, 1.0]]}, gt)["mAP"] == 0.0


def test_many_recall_steps_sum_like_numpy():
    # Nine GT windows all matched: the AP sums >= 8 terms, where np.sum switches
    # to pairwise summation; the result is the reference's np.sum bit for bit.
    rng = np.random.default_rng(7)
    gts = {f"q{i}": [[3.0 * k + 0.1 * rng.random(), 3.0 * k + 2.0 + 0.1 * rng.random()]
                     for k in range(9)] for i in range(4)}
    preds = {k: [[w[0] + 0.3 * rng.random(), w[1] - 0.3 * rng.random(), float(rng.random())]
                 for w in v] + [[40.0, 41.0, float(rng.random())]] for k, v in gts.items()}
    res = moment_retrieval(preds, gts)
    for i, key in enumerate(res.per_question["key"]):
        aps = ap_ref(preds[key], gts[key])
        assert res.per_question["AP@0.5"][i] == aps[0]
        assert res.per_question["AP@0.75"][i] == aps[5]


# --------------------------------------------------------------------------
# R@n, IoU=m
# --------------------------------------------------------------------------


def test_recall_names_and_mean_iou():
    res = recall_at_n([[[0, 10], [30, 40]]], [[0, 20]])
    assert list(res) == ["R@1,IoU=0.3", "R@1,IoU=0.5", "R@1,IoU=0.7",
                         "R@5,IoU=0.3", "R@5,IoU=0.5", "R@5,IoU=0.7", "mIoU"]
    assert res["mIoU"] == 50.0  # top-1 IoU 10 / 20


def test_strict_rule_flips_recall_at_exactly_half():
    # eval.md §5.2: IoU exactly 0.5 is a hit with '>=' and not with 2D-TAN's '>'.
    pred, gt = [[[0, 10]]], [[0, 20]]
    ge = recall_at_n(pred, gt)
    gt_strict = recall_at_n(pred, gt, strict=True)
    tan = recall_at_n(pred, gt, rule="2dtan")
    assert ge["R@1,IoU=0.5"] == 100.0
    assert gt_strict["R@1,IoU=0.5"] == 0.0 and tan["R@1,IoU=0.5"] == 0.0
    for res in (ge, gt_strict, tan):
        assert res["R@1,IoU=0.3"] == 100.0 and res["R@1,IoU=0.7"] == 0.0
    assert tan.info["nms_threshold"] == 0.5 and tan.info["strict"] is True


def test_nms_changes_the_top_n():
    # GT [10, 20]. Ranked: [0, 10] (IoU 0), [0, 9] (IoU 0; textbook IoU 0.9 with
    # [0, 10] -> suppressed by NMS 0.5), [10, 20] (IoU 1).
    pred, gt = [[[0, 10], [0, 9], [10, 20]]], [[10, 20]]
    assert recall_at_n(pred, gt, n=(2,))["R@2,IoU=0.5"] == 0.0
    assert recall_at_n(pred, gt, n=(2,), nms_threshold=0.5)["R@2,IoU=0.5"] == 100.0
    assert recall_at_n(pred, gt, n=(2,), rule="2dtan")["R@2,IoU=0.5"] == 100.0


def test_nms_keeps_an_overlap_equal_to_the_threshold():
    # [0, 20] overlaps [0, 10] with IoU exactly 10 / 20 = 0.5: kept at NMS 0.5
    # ('<='), so it fills the second rank and [30, 40] is not reached.
    pred, gt = [[[0, 10], [0, 20], [30, 40]]], [[30, 40]]
    assert recall_at_n(pred, gt, n=(2,), nms_threshold=0.5)["R@2,IoU=0.5"] == 0.0
    assert recall_at_n(pred, gt, n=(2,), nms_threshold=0.49)["R@2,IoU=0.5"] == 100.0


def test_recall_multiple_gt_and_sorting():
    # Two GT windows: the prediction's IoU is its best over them.
    assert recall_at_n([[[20, 30]]], [[[0, 10], [20, 30]]])["R@1,IoU=0.7"] == 100.0
    # sort_by_score ranks by the third column (stable), else the list order ranks.
    pred = [[[0, 10, 0.1], [20, 30, 0.9]]]
    gt = [[20, 30]]
    assert recall_at_n(pred, gt, n=(1,))["R@1,IoU=0.5"] == 0.0
    assert recall_at_n(pred, gt, n=(1,), sort_by_score=True)["R@1,IoU=0.5"] == 100.0


def test_recall_mapping_input_and_per_question():
    res = recall_at_n({"a": [[0, 10]], "b": [[0, 4]]}, {"b": [0, 10], "a": [0, 10]}, n=(1,),
                      iou_thresholds=(0.5,))
    assert res["R@1,IoU=0.5"] == 50.0
    assert res.per_question["key"] == ["a", "b"]
    assert res.per_question["R@1,IoU=0.5"].tolist() == [True, False]
    assert res.per_question["IoU"].tolist() == [1.0, 0.4]


@pytest.mark.parametrize("kwargs, match", [
    ({"rule": "nope"}, "unknown rule"),
    ({"rule": "2dtan", "nms_threshold": 0.4}, "sets nms_threshold"),
    ({"rule": "vslnet", "strict": True}, "contradicts"),
    ({"n": (0,)}, "positive integers"),
    ({"n": ()}, "positive integers"),
    ({"iou_thresholds": (1.5,)}, r"\[0, 1\]"),
    ({"nms_threshold": -0.1}, "nms_threshold"),
    ({"sort_by_score": True}, "sort_by_score"),
])
def test_recall_bad_options(kwargs, match):
    with pytest.raises(ValueError, match=match):
        recall_at_n([[[0, 1]]], [[0, 1]], **kwargs)


def test_recall_bad_windows():
    with pytest.raises(ValueError, match="no windows"):
        recall_at_n([[]], [[0, 1]])
    with pytest.raises(ValueError, match="end < start"):
        recall_at_n([[[3, 1]]], [[0, 1]], refuse_reversed=True)
    with pytest.raises(ValueError, match="refuse_reversed"):
        recall_at_n([[[0, 1]]], [[0, 1]], refuse_reversed=1)


def test_recall_reversed_windows_by_hand():
    # 2D-TAN's NMS: [5, 3] (length -2) against [0, 2] (length 2): 0 / (2 - 2)
    # = NaN, not <= 0.5, so [0, 2] is suppressed; against [1, 1.5]:
    # 0 / -1.5 = -0.0 <= 0.5, kept. Ranked after NMS: [5, 3], [1, 1.5].
    # Against the ground truth [1, 1.6]: [5, 3] has IoU 0, [1, 1.5] has
    # 0.5 / 0.6. Were [0, 2] kept second (IoU 0.6 / 2 = 0.3), R@2,IoU=0.7
    # would miss.
    preds = [[[5.0, 3.0], [0.0, 2.0], [1.0, 1.5]]]
    res = recall_at_n(preds, [[1.0, 1.6]], n=(1, 2), iou_thresholds=(0.7,),
                      rule="2dtan")
    assert res["R@1,IoU=0.7"] == 0.0
    assert res["R@2,IoU=0.7"] == 100.0
    assert res["mIoU"] == 0.0
    assert res.info["reversed_windows"] == {"windows": 1, "queries": 1}
    assert "refuse_reversed=True" in res.info["warnings"][0]
    # Without NMS the list is taken as given: [0, 2] is second.
    plain = recall_at_n(preds, [[1.0, 1.6]], n=(2,), iou_thresholds=(0.7,))
    assert plain["R@2,IoU=0.7"] == 0.0
    clean = recall_at_n([[[1.0, 1.5]]], [[1.0, 1.6]])
    assert clean.info["reversed_windows"] == {"windows": 0, "queries": 0}
    assert "warnings" not in clean.info


@st.composite
def reversed_window(draw):
    start = draw(st.integers(0, 6)) * 1.0
    return [start, start + draw(st.sampled_from([-3.0, -2.0, -1.0, 0.0, 1.0, 2.0, 3.0]))]


@SETTINGS
@given(preds=st.lists(st.lists(reversed_window(), min_size=1, max_size=8), min_size=1,
                      max_size=4),
       strict=st.booleans(), nms=st.sampled_from([None, 0.0, 0.5, 1.0]))
def test_recall_with_reversed_windows_matches_the_reference(preds, strict, nms):
    # Reversed windows and lengths that cancel: the definition loop's NaN
    # and -0.0 overlaps decide what 2D-TAN's NMS keeps.
    gts = [[[1.0, 3.0]] for _ in preds]
    res = recall_at_n(preds, gts, n=(1, 2, 5), strict=strict, nms_threshold=nms)
    ref = recall_at_n_ref(preds, gts, ns=(1, 2, 5), strict=strict, nms_threshold=nms)
    for k in ref:
        assert close(res[k], ref[k]), k


@st.composite
def recall_case(draw):
    n = draw(st.integers(1, 6))
    preds = [draw(st.lists(window(False), min_size=1, max_size=12)) for _ in range(n)]
    gts = [draw(st.lists(window(False), min_size=1, max_size=3)) for _ in range(n)]
    return preds, gts


@SETTINGS
@given(case=recall_case(), strict=st.booleans(),
       nms=st.sampled_from([None, 0.3, 0.5, 0.7]),
       ns=st.sampled_from([(1, 5), (1,), (2, 3)]))
def test_recall_matches_reference(case, strict, nms, ns):
    preds, gts = case
    res = recall_at_n(preds, gts, n=ns, strict=strict, nms_threshold=nms)
    ref = recall_at_n_ref(preds, gts, ns=ns, strict=strict, nms_threshold=nms)
    assert list(res) == list(ref)
    for k in ref:
        assert close(res[k], ref[k]), k


@st.composite
def crowded_windows(draw):
    """Few distinct windows on a coarse grid: duplicates, nested and
    zero-length windows (0/0 = NaN overlaps in 2D-TAN's NMS) are common."""
    start = draw(st.integers(0, 4)) * 1.0
    return [start, start + draw(st.sampled_from([0.0, 0.0, 1.0, 2.0, 3.0]))]


@SETTINGS
@given(preds=st.lists(st.lists(crowded_windows(), min_size=1, max_size=10), min_size=1,
                      max_size=4),
       nms=st.sampled_from([0.0, 0.3, 0.5, 1.0]), top=st.integers(1, 6))
def test_nms_matches_the_2dtan_loop_with_many_ties(preds, nms, top):
    # The evaluation's NMS is nms_1d with ties="stable" (input order among
    # the equal scores it is given) plus 2D-TAN's NaN rule for zero-length
    # pairs; the loop reference walks the list exactly as 2D-TAN does.
    from fastvqa import ragged
    from fastvqa.metrics.moment import _nms_ragged

    spans, offsets = ragged.from_rows([np.asarray(p, dtype=np.float64) for p in preds], width=2)
    keep = _nms_ragged(spans, offsets, nms, top)
    for q, windows in enumerate(preds):
        got = spans[offsets[q]:offsets[q + 1]][keep[offsets[q]:offsets[q + 1]]].tolist()
        assert got == nms_ref(windows, nms, top)


def test_recall_accepts_arrays():
    # (Q, K, 2) ranked predictions and (Q, 2) single ground-truth windows.
    res = recall_at_n(np.array([[[0.0, 10.0], [20.0, 30.0]], [[0.0, 1.0], [5.0, 6.0]]]),
                      np.array([[20.0, 30.0], [0.0, 10.0]]), n=(1, 2), iou_thresholds=(0.5,))
    assert res["R@1,IoU=0.5"] == 0.0
    assert res["R@2,IoU=0.5"] == 50.0
