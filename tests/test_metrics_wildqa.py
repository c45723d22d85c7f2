# SPDX-License-Identifier: Apache-2.0
"""``fastvqa.metrics.iou_f1`` / ``rouge`` / ``normalize_answer`` against hand
computations from ``anchors/eval.md`` 1.2 and ``papers/wildqa.md`` 2.3, the
plain-Python references in ``tests/reference/wildqa.py``, and the paper's
"Common" baseline on the real test split."""

from __future__ import annotations

import json
import math
import sys

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fastvqa.metrics import MetricResult, iou_f1, normalize_answer, rouge
from tests.reference.wildqa import (
    iou_f1_2022,
    iou_f1_2023,
    iou_f1_clean,
    normalize_answer_ref,
    rouge_ref,
)

SETTINGS = settings(max_examples=150, deadline=None,
                    suppress_health_check=[HealthCheck.function_scoped_fixture,
                                           HealthCheck.too_slow])
MODES = ("wildqa-2022", "wildqa-2023", "clean")


def f1_of(pred, gold, mode, threshold=0.5, alternatives=None):
    """Per-question F1 of a single question."""
    alts = None if alternatives is None else [alternatives]
    result = iou_f1([pred], [gold], mode=mode, threshold=threshold, alternatives=alts)
    return float(result.per_question["F1"][0])


# --------------------------------------------------------------------------
# Hand-computed cases: the table of eval.md section 1.2 (threshold 0.5, and
# 0.1 for the 2023 column "HEAD@0.1"), plus the clean mode by hand.
# --------------------------------------------------------------------------

# (pred, gold, 2022, 2023@0.1, 2023@0.5, clean@0.5)
TABLE = [
    ([[2, 5]], [[2, 5]], 1, 1, 1, 1),
    ([[0, 4]], [[2, 6]], 0, 1, 0, 0),  # IoU 1/3
    ([[1, 5]], [[2, 6]], 1, 1, 1, 1),  # IoU 0.6
    # 2022: [1, 3) vs [1, 4) -> 2/3; 2023: gold rounds to [1, 4] -> 1.9/3
    ([[1.2, 3.1]], [[1.4, 3.5]], 1, 1, 1, 1),
    # banker's rounding: 0.5 -> 0 and 2.5 -> 2, so [0, 2) vs [0, 2) -> 1
    ([[0.5, 2.5]], [[0, 2]], 1, 1, 1, 1),
    ([[3, 3]], [[2, 6]], 0, 0, 0, 0),  # zero-length prediction
    ([[2, 6], [2, 6]], [[2, 6]], 4 / 3, 1, 1, 2 / 3),  # the 1.333 quirk; clean matches once
    ([[2, 6]], [[2, 6], [10, 12]], 2 / 3, 2 / 3, 2 / 3, 2 / 3),
    ([], [[2, 6]], 0, 0, 0, 0),
    ([], [], 1, 0, 0, 1),  # empty vs empty
    ([[2, 4]], [[1, 6]], 0, 1, 0, 0),  # nested, IoU 0.4
    ([[0, 2]], [[2, 4]], 0, 0, 0, 0),  # touching
    ([[5, 3]], [[2, 6]], 0, 0, 0, 0),  # reversed prediction: empty
]


@pytest.mark.parametrize("pred, gold, v2022, v2023_01, v2023_05, vclean", TABLE)
def test_eval_md_table(pred, gold, v2022, v2023_01, v2023_05, vclean):
    assert f1_of(pred, gold, "wildqa-2022") == pytest.approx(v2022, abs=1e-15)
    assert f1_of(pred, gold, "wildqa-2023", threshold=0.1) == pytest.approx(v2023_01, abs=1e-7)
    assert f1_of(pred, gold, "wildqa-2023") == pytest.approx(v2023_05, abs=1e-7)
    assert f1_of(pred, gold, "clean") == pytest.approx(vclean, abs=1e-15)


def test_two_copies_of_one_correct_span_score_1333_under_2022():
    result = iou_f1([[[2, 6], [2, 6]]], [[[2, 6]]])  # default mode: wildqa-2022
    assert result.info["mode"] == "wildqa-2022"
    assert result.per_question["precision"][0] == 1.0
    assert result.per_question["recall"][0] == 2.0  # not capped
    assert result["IoU-F1"] == pytest.approx(400 / 3, rel=1e-7)  # float32 total
    assert isinstance(result, MetricResult) and list(result) == ["IoU-F1"]


def test_wildqa_paper_test_vector_scores_half_in_every_mode():
    # papers/wildqa.md 2.3: continuous IoU [[.8261, .2105], [0, .1136]], integer
    # [[.6667, .25], [0, .2]]; either way TP = 1, P = R = 0.5, F1 = 0.5.
    pred, gold = [[1.2, 3.1], [4.5, 6.7]], [[1.2, 3.5], [2.3, 5.0]]
    for mode in MODES:
        assert f1_of(pred, gold, mode) == pytest.approx(0.5, abs=1e-7), mode


def test_2023_max_over_alternative_annotators():
    # eval.md 1.2: main [0, 4] + alternative [10, 14]; prediction [10, 14] -> 1.0
    assert f1_of([[10, 14]], [[0, 4]], "wildqa-2023", alternatives=[[[10, 14]]]) == 1.0
    assert f1_of([[10, 14]], [[0, 4]], "clean", alternatives=[[[10, 14]]]) == 1.0
    result = iou_f1([[[10, 14]]], [[[0, 4]]], mode="wildqa-2023",
                    alternatives=[[[[1, 2]], [[10, 14]]]])
    assert result.per_question["target"][0] == 2  # second alternative won
    # ties go to the first set reaching the maximum
    tied = iou_f1([[[10, 14]], [[10, 14]]], [[[10, 14]], [[0, 4]]], mode="clean",
                  alternatives=[[[[10, 14]]], [[[1, 2]], [[10, 14]], [[10, 14]]]])
    assert tied.per_question["target"].tolist() == [0, 2]
    assert f1_of([[10, 14]], [[0, 4]], "wildqa-2023") == 0.0


def test_2023_drops_zero_gold_spans_even_real_ones():
    # [0.0, 0.4] rounds to (0, 0) and HEAD's model.py removes it with the
    # padding, so one real gold span is left: F1 1. The paper era keeps it as
    # an empty range that still counts in #gold: P = 1, R = 1/2 -> 2/3.
    pred, gold = [[2, 6]], [[0.0, 0.4], [2, 6]]
    assert f1_of(pred, gold, "wildqa-2023") == 1.0
    assert f1_of(pred, gold, "wildqa-2022") == pytest.approx(2 / 3, abs=1e-15)
    assert f1_of(pred, gold, "clean") == pytest.approx(2 / 3, abs=1e-15)


def test_float32_threshold_edge():
    # IoU = (5 - 1e-8) / 10 = 0.499999999 in float64: below 0.5 for "clean",
    # but float32(0.499999999) == 0.5 >= float32(0.5) for "wildqa-2023" (the
    # official code stored IoUs in a float32 tensor). 2022 rounds the
    # prediction to [0, 5): IoU exactly 0.5.
    pred, gold = [[0.0, 5.0 - 1e-8]], [[0.0, 10.0]]
    assert f1_of(pred, gold, "clean") == 0.0
    assert f1_of(pred, gold, "wildqa-2023") == 1.0
    assert f1_of(pred, gold, "wildqa-2022") == 1.0
    # float32(0.1) = torch.linspace(0, 1, 21)[2]: an IoU a hair below 0.1 in
    # float64 rounds onto it.
    pred01 = [[0.0, 1.0 - 1e-9]]
    assert f1_of(pred01, gold, "wildqa-2023", threshold=0.1) == 1.0
    assert f1_of(pred01, gold, "clean", threshold=0.1) == 0.0


def test_2023_alternative_spans_pass_through_float32():
    # float32(10.0000004) == 10.0, so against the float32 alternative [0, 10]
    # the prediction [0, 5] has IoU 0.5 exactly. In float64 the IoU is
    # 0.49999998, whose float32 value is still below 0.5 (clean: no match).
    pred, primary, alt = [[0, 5]], [[20, 30]], [[[0, 10.0000004]]]
    assert f1_of(pred, primary, "wildqa-2023", alternatives=alt) == 1.0
    assert f1_of(pred, primary, "clean", alternatives=alt) == 0.0


def test_pad_to_batch_counts_paper_era_padding():
    # Batch of 2: gold lists padded to 3 spans; question 0 then has R = 1/3.
    preds = [[[2, 6]], []]
    golds = [[[2, 6]], [[1, 2], [3, 4], [5, 6]]]
    plain = iou_f1(preds, golds)
    padded = iou_f1(preds, golds, pad_to_batch=2)
    assert plain.per_question["F1"].tolist() == [1.0, 0.0]
    assert padded.per_question["F1"][0] == pytest.approx(0.5, abs=1e-15)  # 2(1)(1/3)/(4/3)
    assert padded.per_question["n_gold"].tolist() == [3, 3]
    assert padded["IoU-F1"] == pytest.approx(25.0, abs=1e-12)
    assert iou_f1(preds, golds, pad_to_batch=1).per_question["F1"].tolist() == [1.0, 0.0]


def test_thresholds_add_named_metrics_and_columns():
    preds, golds = [[[0, 4]], [[1, 5]]], [[[2, 6]], [[2, 6]]]  # IoU 1/3 and 0.6
    result = iou_f1(preds, golds, mode="clean", thresholds=[0.1, 0.5, 0.7])
    assert list(result) == ["IoU-F1", "IoU-F1@0.1", "IoU-F1@0.5", "IoU-F1@0.7"]
    assert result["IoU-F1@0.1"] == 100.0
    assert result["IoU-F1@0.5"] == result["IoU-F1"] == 50.0
    assert result["IoU-F1@0.7"] == 0.0
    assert result.per_question["F1@0.1"].tolist() == [1.0, 1.0]


def test_mean_is_percent_and_empty_input_is_nan():
    result = iou_f1([[[2, 6]], [[20, 30]]], [[[2, 6]], [[2, 6]]], mode="clean")
    assert result["IoU-F1"] == 50.0
    empty = iou_f1([], [], mode="clean")
    assert math.isnan(empty["IoU-F1"]) and empty.info["evaluated"] == 0


def test_inputs_are_not_modified():
    preds = [np.array([[1.4, 2.6]])]
    golds = [np.array([[0.5, 2.5]])]
    iou_f1(preds, golds)
    iou_f1(preds, golds, mode="wildqa-2023")
    assert preds[0].tolist() == [[1.4, 2.6]] and golds[0].tolist() == [[0.5, 2.5]]


# --------------------------------------------------------------------------
# Random inputs against the float64 (and float32 where official) references
# --------------------------------------------------------------------------

# Endpoints on a quarter-second grid hit the half-to-even rounding and exact
# IoU ties; free floats cover the rest.
endpoint = st.one_of(st.integers(0, 48).map(lambda q: q / 4),
                     st.floats(0, 12, allow_nan=False, width=64))
span = st.tuples(endpoint, endpoint).map(
    lambda t: list(t) if t[0] <= t[1] else [t[1], t[0]])
maybe_reversed = st.tuples(endpoint, endpoint).map(list)
pred_list = st.lists(st.one_of(span, maybe_reversed), max_size=4)
gold_list = st.lists(span, max_size=4)
threshold = st.sampled_from([0.0, 0.1, 0.25, 1 / 3, 0.5, 0.6, 0.75, 1.0])


@st.composite
def problems(draw, with_alternatives=False):
    n = draw(st.integers(0, 7))
    preds = [draw(pred_list) for _ in range(n)]
    golds = [draw(gold_list) for _ in range(n)]
    alts = None
    if with_alternatives:
        alts = [draw(st.lists(st.lists(span, min_size=1, max_size=3), max_size=2))
                for _ in range(n)]
    return preds, golds, alts, draw(threshold)


def assert_matches_reference(result, per_q, mean):
    np.testing.assert_array_equal(result.per_question["F1"], np.array(per_q, dtype=np.float64))
    if math.isnan(mean):
        assert math.isnan(result["IoU-F1"])
    else:
        assert result["IoU-F1"] == pytest.approx(mean, rel=1e-12, abs=1e-12)


@SETTINGS
@given(problems(), st.sampled_from([None, 1, 2, 3]))
def test_2022_matches_reference(problem, pad):
    preds, golds, _, t = problem
    result = iou_f1(preds, golds, mode="wildqa-2022", threshold=t, pad_to_batch=pad)
    assert_matches_reference(result, *iou_f1_2022(preds, golds, t, pad))


@SETTINGS
@given(problems(with_alternatives=True))
def test_2023_matches_reference(problem):
    preds, golds, alts, t = problem
    result = iou_f1(preds, golds, mode="wildqa-2023", threshold=t, alternatives=alts)
    assert_matches_reference(result, *iou_f1_2023(preds, golds, alts, t))


@SETTINGS
@given(problems(with_alternatives=True), st.booleans())
def test_clean_matches_reference(problem, use_alts):
    preds, golds, alts, t = problem
    alts = alts if use_alts else None
    result = iou_f1(preds, golds, mode="clean", threshold=t, alternatives=alts)
    assert_matches_reference(result, *iou_f1_clean(preds, golds, alts, t))


@SETTINGS
@given(problems(), st.lists(threshold, min_size=1, max_size=3, unique=True))
def test_extra_thresholds_equal_separate_runs(problem, extra):
    preds, golds, _, t = problem
    for mode in MODES:
        result = iou_f1(preds, golds, mode=mode, threshold=t, thresholds=extra)
        for u in extra:
            alone = iou_f1(preds, golds, mode=mode, threshold=u)
            np.testing.assert_array_equal(result.per_question[f"F1@{u:g}"],
                                          alone.per_question["F1"])
            assert (result[f"IoU-F1@{u:g}"] == alone["IoU-F1"]
                    or math.isnan(alone["IoU-F1"]))


# --------------------------------------------------------------------------
# Errors
# --------------------------------------------------------------------------


@pytest.mark.parametrize("kwargs, exc, match", [
    ({"mode": "paper"}, ValueError, "mode must be one of"),
    ({"threshold": 1.5}, ValueError, "threshold must lie in"),
    ({"threshold": "0.5"}, TypeError, "threshold must be a real number"),
    ({"thresholds": [0.5, -0.1]}, ValueError, r"thresholds\[1\]"),
    ({"thresholds": [0.5, 0.5]}, ValueError, "given twice"),
    ({"alternatives": [[]]}, ValueError, "primary gold only"),
    ({"mode": "clean", "pad_to_batch": 32}, ValueError, "pad_to_batch"),
    ({"pad_to_batch": 0}, ValueError, "positive integer"),
    ({"mode": "clean", "alternatives": [[], []]}, ValueError, "alternatives has 2 entries"),
    ({"mode": "clean", "alternatives": [[[[1, 2, 3]]]]}, ValueError,
     r"alternatives\[0\]\[0\] must have shape"),
])
def test_bad_arguments(kwargs, exc, match):
    with pytest.raises(exc, match=match):
        iou_f1([[[1, 2]]], [[[1, 2]]], **kwargs)


@pytest.mark.parametrize("preds, golds, exc, match", [
    ([[[1, 2]]], [], ValueError, "target has 0 entries but preds has 1"),
    ([[1, 2]], [[[1, 2]]], ValueError, r"preds\[0\] must have shape \(k, 2\)"),
    ([[[1, 2, 3]]], [[[1, 2]]], ValueError, r"preds\[0\] must have shape"),
    ([[[1, float("nan")]]], [[[1, 2]]], ValueError, r"preds\[0\] holds a NaN"),
    ([[[1, 2]]], [[[0, float("inf")]]], ValueError, r"target\[0\] holds a NaN or infinite"),
    ([[["a", "b"]]], [[[1, 2]]], TypeError, r"preds\[0\] must be a list of \[start"),
    ("spans", [], TypeError, "preds must be a sequence"),
    ([{"0": [1, 2]}], [[[1, 2]]], TypeError, r"preds\[0\] must be a list"),
])
def test_bad_spans(preds, golds, exc, match):
    with pytest.raises(exc, match=match):
        iou_f1(preds, golds)


# --------------------------------------------------------------------------
# Answer normalisation and ROUGE
# --------------------------------------------------------------------------


@pytest.mark.parametrize("text, expected", [
    ("The U.S. Army's tanks!", " us armys tanks"),  # lower, strip punctuation, articles
    ("A man, an apple and the dog.", " man  apple and  dog"),
    ("Theatre another", "theatre another"),  # whole words only
    ("Yes", "yes"),
    ("", ""),
])
def test_normalize_answer(text, expected):
    assert normalize_answer(text) == expected
    assert normalize_answer_ref(text) == expected


def test_normalize_answer_rejects_non_strings():
    with pytest.raises(TypeError, match="expected a string"):
        normalize_answer(3)


def test_rouge_hand_computed():
    # pred -> [cat, sat, on, mat]; ref -> [cat, is, on, mat].
    # R1: 3 common of 4 and 4 -> F = 0.75. R2: {cat sat, sat on, on mat} vs
    # {cat is, is on, on mat}: 1 common of 3 and 3 -> 1/3. RL: LCS cat-on-mat = 3 -> 0.75.
    result = rouge(["The cat sat on the mat."], ["A cat is on the mat"])
    assert result["ROUGE-1"] == pytest.approx(75.0, abs=1e-12)
    assert result["ROUGE-2"] == pytest.approx(100 / 3, abs=1e-12)
    assert result["ROUGE-L"] == pytest.approx(75.0, abs=1e-12)
    assert result.per_question["ROUGE-2"][0] == pytest.approx(1 / 3, abs=1e-15)


def test_rouge_primary_versus_max():
    # "yes" vs the primary "No." scores 0; vs "Yes, it is." -> [yes, it, is]:
    # P = 1, R = 1/3 -> F = 0.5 for ROUGE-1 and ROUGE-L; no bigram in "yes".
    preds, refs = ["Yes"], [["No.", "Yes, it is."]]
    primary = rouge(preds, refs)
    best = rouge(preds, refs, references_mode="max")
    assert dict(primary) == {"ROUGE-1": 0.0, "ROUGE-2": 0.0, "ROUGE-L": 0.0}
    assert best["ROUGE-1"] == pytest.approx(50.0) and best["ROUGE-L"] == pytest.approx(50.0)
    assert best["ROUGE-2"] == 0.0
    assert primary.info["references"] == "primary"


def test_rouge_max_is_per_metric():
    # ref 1 wins ROUGE-1 (3 shared words out of order), ref 2 wins ROUGE-2/L.
    preds = ["red big ball here"]
    refs = [["ball big red", "red big dog"]]
    result = rouge(preds, refs, references_mode="max")
    expected, _ = rouge_ref(preds, refs, "max")
    for key, value in expected.items():
        assert result[key] == pytest.approx(value, abs=1e-12)
    assert result["ROUGE-1"] == pytest.approx(100 * 2 * (3 / 4) * 1 / (3 / 4 + 1))


def test_rouge_stemmer_option():
    # Normalised: [roads, were, paving] vs [road, is, paved]; stemmed: road,
    # were, pave vs road, is, pave -> 2 of 3 each -> 2/3. Unstemmed: 0.
    preds, refs = ["roads were paving"], ["the road is paved"]
    assert rouge(preds, refs)["ROUGE-1"] == 0.0
    assert rouge(preds, refs, use_stemmer=True)["ROUGE-1"] == pytest.approx(200 / 3)


def test_rouge_empty_after_normalisation_scores_zero():
    result = rouge(["a"], ["the"])  # both normalise to nothing
    assert dict(result) == {"ROUGE-1": 0.0, "ROUGE-2": 0.0, "ROUGE-L": 0.0}
    assert math.isnan(rouge([], [])["ROUGE-1"])


def test_rouge_names_the_missing_package(monkeypatch):
    monkeypatch.setitem(sys.modules, "rouge_score", None)  # import now fails
    with pytest.raises(ImportError, match=r"pip install 'fastvqa\[eval\]'"):
        rouge(["x"], ["x"])


words = st.sampled_from(["the", "a", "An", "dog", "Dog's", "runs", "U.S.", "yes", "no",
                         "café", "x-ray", "2", "it's", "big", "(big)", "the-end", "  "])
sentences = st.lists(words, max_size=8).map(" ".join)


@settings(max_examples=80, deadline=None)
@given(st.lists(st.tuples(sentences, st.lists(sentences, min_size=1, max_size=3)),
                max_size=5),
       st.sampled_from(["primary", "max"]))
def test_rouge_matches_reference(items, mode):
    preds = [p for p, _ in items]
    refs = [r for _, r in items]
    result = rouge(preds, refs, references_mode=mode)
    if not items:
        assert math.isnan(result["ROUGE-L"])
        return
    expected, cols = rouge_ref(preds, refs, mode)
    for key, value in expected.items():
        assert result[key] == pytest.approx(value, rel=1e-12, abs=1e-12)
        np.testing.assert_allclose(result.per_question[key], cols[key], rtol=0, atol=1e-15)


@pytest.mark.parametrize("preds, refs, kwargs, exc, match", [
    (["x"], ["x"], {"references_mode": "all"}, ValueError, "references_mode"),
    (["x"], ["x", "y"], {}, ValueError, "target has 2 entries but preds has 1"),
    ([3], ["x"], {}, TypeError, r"preds\[0\] must be a string"),
    (["x"], [[]], {}, ValueError, r"target\[0\] must be a string or a non-empty list"),
    (["x"], [["x", None]], {}, TypeError, r"target\[0\]\[1\] must be a string"),
    ("x", ["x"], {}, TypeError, "preds must be a list of strings"),
])
def test_rouge_bad_arguments(preds, refs, kwargs, exc, match):
    with pytest.raises(exc, match=match):
        rouge(preds, refs, **kwargs)


# --------------------------------------------------------------------------
# Real data: the paper's "Common" baseline (always "Yes") on the test split
# --------------------------------------------------------------------------


def test_common_baseline_reproduces_table_4(shared_data):
    with open(shared_data / "wildqa" / "test.json") as f:
        test = json.load(f)
    refs = [[q["answer"], *q["alter_answers"]] for q in test]
    primary = rouge(["Yes"] * len(test), refs)
    # Table 4, "Common": 10.6 / 0.0 / 10.6 (primary reference only).
    assert [round(primary[k], 1) for k in ("ROUGE-1", "ROUGE-2", "ROUGE-L")] == [10.6, 0.0, 10.6]
    # wildqa.md 1.1: the same against the max over all answers is 12.0 / 0.0 / 12.0.
    best = rouge(["Yes"] * len(test), refs, references_mode="max")
    assert [round(best[k], 1) for k in ("ROUGE-1", "ROUGE-2", "ROUGE-L")] == [12.0, 0.0, 12.0]
    expected, _ = rouge_ref(["Yes"] * len(test), refs, "primary")
    assert primary["ROUGE-1"] == pytest.approx(expected["ROUGE-1"], rel=1e-12)
