# SPDX-License-Identifier: Apache-2.0
"""``fastvqa.metrics.highlight_detection`` (QVHighlights HL-mAP / HL-Hit1):
hand-computed cases, random inputs against the float64 loop of
tests/reference/highlight.py, and (where scikit-learn is installed) the AP
against sklearn's precision-recall curve, which the official code calls."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fastvqa.metrics import HighlightDetection, clip_saliency, highlight_detection
from fastvqa.metrics.highlight import _average_precision
from tests.reference.highlight import ap_ref, full_video_table, highlight_ref

SETTINGS = settings(max_examples=120, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow])
NAMES = [f"HL-min-{lv}-{m}" for lv in ("Fair", "Good", "VeryGood") for m in ("mAP", "Hit1")]


def close(a, b):
    return math.isclose(a, b, rel_tol=1e-12, abs_tol=1e-12)


# --------------------------------------------------------------------------
# Hand-computed cases
# --------------------------------------------------------------------------


def test_ap_hand_computed():
    # Scores .9 .8 .7 .1, positives at .9 and .7: precision 1 at recall 1/2,
    # 2/3 at recall 1 -> (1 + 2/3) / 2.
    labels = np.array([[1.0, 0.0, 1.0, 0.0]])
    assert _average_precision(labels, np.array([0.9, 0.8, 0.7, 0.1]))[0] == (1 + 2 / 3) / 2
    # A tie is one curve point: scores 1, 1, 0 with labels 1, 0, 1: points
    # (p 1/2, r 1/2) and (p 2/3, r 1); the first is raised to 2/3 -> 2/3.
    assert _average_precision(np.array([[1.0, 0.0, 1.0]]),
                              np.array([1.0, 1.0, 0.0]))[0] == 2 / 3
    # Two positives tied at the top are one point (p 1, r 1): AP 1.
    assert _average_precision(np.array([[1.0, 1.0, 0.0]]), np.array([1.0, 1.0, 0.0]))[0] == 1.0
    # No positive: 0; no negative: 1 (the official special cases).
    assert _average_precision(np.array([[0.0, 0.0], [1.0, 1.0]]), np.array([0.3, 0.2])).tolist() \
        == [0.0, 1.0]


def test_levels_hit_and_map_by_hand():
    # 4 clips x 3 annotators. Fair (>= 2): annotators 0 and 1 mark clip 2,
    # annotator 2 clip 3. Scores .9 .8 .7 .1: AP 1/3, 1/3, 1/4.
    table = np.array([[1, 0, 0], [0, 0, 0], [2, 2, 0], [0, 0, 4]], dtype=float)
    res = highlight_detection([[0.9, 0.8, 0.7, 0.1]], [table])
    assert list(res) == NAMES
    assert close(res["HL-min-Fair-mAP"], 100 * (1 / 3 + 1 / 3 + 1 / 4) / 3)
    assert close(res["HL-min-Good-mAP"], 100 * (0 + 0 + 1 / 4) / 3)
    assert close(res["HL-min-VeryGood-mAP"], 100 * (1 / 4) / 3)
    # The top clip 0 is below 2 for every annotator.
    assert res["HL-min-Fair-Hit1"] == 0.0
    # Top clip 2: Fair and Good hit only if some annotator has >= the level.
    res = highlight_detection([[0.1, 0.2, 0.9, 0.3]], [table])
    assert res["HL-min-Fair-Hit1"] == 100.0 and res["HL-min-Good-Hit1"] == 0.0
    assert res.per_question["top_clip"].tolist() == [2]
    assert res.per_question["Hit1-Fair"].tolist() == [True]


def test_top_clip_ties_past_the_end_and_length_fitting():
    table = np.array([[4, 4, 4], [0, 0, 0]], dtype=float)
    # Ties: np.argmax takes the first maximum (clip 0).
    assert highlight_detection([[1.0, 1.0]], [table])["HL-min-VeryGood-Hit1"] == 100.0
    # The top clip lies past the video's 2 clips: a miss. For AP the scores
    # are cut to 2 clips: [0.5, 0.1] -> AP 1 for every annotator.
    res = highlight_detection([[0.5, 0.1, 0.9]], [table])
    assert res["HL-min-VeryGood-Hit1"] == 0.0 and res["HL-min-VeryGood-mAP"] == 100.0
    assert res.info["predictions_cut"] == 1 and res.info["predictions_padded"] == 0
    # One score for two clips: padded with 0; [0.0] pads to [0.0, 0.0], a tie:
    # one point at precision 1/2, recall 1 -> AP 0.5.
    res = highlight_detection([[0.0]], [table])
    assert res["HL-min-VeryGood-mAP"] == 50.0 and res.info["predictions_padded"] == 1


def test_clip_saliency_builds_the_full_video_table():
    table = clip_saliency(7.0, [0, 2], [[4, 3, 2], [1, 2, 3]])
    # int(7 / 2) = 3 clips; clip 1 is not relevant: zeros.
    assert table.tolist() == [[4, 3, 2], [0, 0, 0], [1, 2, 3]]
    assert table.tolist() == full_video_table(7.0, [0, 2], [[4, 3, 2], [1, 2, 3]])
    with pytest.raises(ValueError, match=r"relevant_clip_ids must lie in \[0, 3\)"):
        clip_saliency(7.0, [3], [[1, 1, 1]])
    with pytest.raises(ValueError, match="relevant_clip_ids must lie"):
        clip_saliency(7.0, [-1], [[1, 1, 1]])
    with pytest.raises(ValueError, match="one row of annotator scores per relevant clip"):
        clip_saliency(7.0, [0, 1], [[1, 1, 1]])
    with pytest.raises(ValueError, match="shorter than one"):
        clip_saliency(1.5, [], [])
    with pytest.raises(ValueError, match="list of integers"):
        clip_saliency(7.0, [0.5], [[1, 1, 1]])


@pytest.mark.parametrize("preds, target, match", [
    ([[]], [np.ones((2, 3))], "non-empty"),
    ([[0.1, math.nan]], [np.ones((2, 3))], "finite"),
    ([[0.1, math.inf]], [np.ones((2, 3))], "finite"),
    ([[[0.1]]], [np.ones((2, 3))], "one per clip"),
    ([["a"]], [np.ones((2, 3))], "list of numbers"),
    ([[0.1]], [[["a", 1, 1]]], "table of numbers"),
    ([[0.1]], [np.ones(3)], r"\(clips, annotators\)"),
    ([[0.1], [0.2]], [np.ones((2, 3)), np.ones((2, 2))], "different numbers of annotators"),
    ({"a": [0.1]}, {"b": np.ones((2, 3))}, "match_number=False"),
    ([[0.1]], [np.ones((2, 3))], None),
])
def test_bad_inputs(preds, target, match):
    if match is None:  # a valid call, for contrast
        highlight_detection(preds, target)
        with pytest.raises(ValueError, match="levels"):
            highlight_detection(preds, target, levels={"Fair": "2"})
        return
    with pytest.raises(ValueError, match=match):
        highlight_detection(preds, target)


def test_mappings_partial_and_stateful_metric():
    t = np.array([[4, 0, 0], [0, 4, 0]], dtype=float)
    preds = {"a": [0.9, 0.1], "b": [0.1, 0.9], "c": [0.5, 0.5]}
    res = highlight_detection(preds, {"a": t, "b": t}, match_number=False)
    assert res.per_question["key"] == ["a", "b"] and res.info["skipped"] == 1
    m = HighlightDetection(match_number=False)
    m.update({"a": preds["a"]}, {"a": t})
    m.update({"b": preds["b"], "c": preds["c"]}, {"b": t})
    assert dict(m.compute()) == dict(res)


# --------------------------------------------------------------------------
# Random inputs against the float64 loop (and sklearn)
# --------------------------------------------------------------------------


@st.composite
def hl_case(draw):
    n_q = draw(st.integers(1, 5))
    preds, tables = [], []
    for _ in range(n_q):
        n_clips = draw(st.integers(1, 14))
        # Few distinct values: many ties in scores and labels.
        table = draw(st.lists(st.lists(st.integers(0, 4), min_size=3, max_size=3),
                              min_size=n_clips, max_size=n_clips))
        n_pred = draw(st.integers(1, 16))
        scores = draw(st.lists(st.sampled_from([0.0, 0.1, 0.25, 0.5, 0.9, 1.0, -0.5]),
                               min_size=n_pred, max_size=n_pred))
        preds.append(scores)
        tables.append([[float(v) for v in row] for row in table])
    return preds, tables


@SETTINGS
@given(case=hl_case())
def test_matches_reference(case):
    preds, tables = case
    res = highlight_detection(preds, [np.array(t) for t in tables])
    ref, per_query = highlight_ref(preds, tables)
    for name in NAMES:
        assert close(res[name], ref[name]), name
    for level, (aps, hits) in per_query.items():
        np.testing.assert_allclose(res.per_question[f"AP-{level}"], aps, rtol=1e-13, atol=1e-15)
        assert res.per_question[f"Hit1-{level}"].tolist() == [h == 1.0 for h in hits]


@SETTINGS
@given(n=st.integers(2, 30), data=st.data())
def test_ap_equals_sklearn_curve(n, data):
    # The official get_ap: sklearn's precision_recall_curve, precision made
    # monotone, mean over the points where recall changes. Same float.
    metrics = pytest.importorskip("sklearn.metrics")
    labels = data.draw(st.lists(st.integers(0, 1), min_size=n, max_size=n))
    scores = data.draw(st.lists(st.sampled_from([0.0, 0.2, 0.4, 0.6, 0.8, 1.0]),
                                min_size=n, max_size=n))
    ours = _average_precision(np.array([labels], dtype=float), np.array(scores))[0]
    assert ours == ap_ref(labels, scores) or close(ours, ap_ref(labels, scores))
    if len(set(labels)) < 2:
        return
    precision, recall, _ = metrics.precision_recall_curve(labels, scores)
    recall = recall.astype(np.float32)
    for i in range(1, len(precision)):
        precision[i] = max(precision[i - 1], precision[i])
    expected = np.mean(precision[np.where(np.diff(recall))])
    assert ours == expected
