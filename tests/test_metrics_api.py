# SPDX-License-Identifier: Apache-2.0
"""What every metric shares: the ``fn(preds, target, *, options)`` call, the
result labels (``metric`` = the function's name, ``benchmark`` set only by
evaluation)."""

from __future__ import annotations

import math

import numpy as np
import pytest

import fastvqa.metrics as M
from fastvqa.data import QARecord

# --------------------------------------------------------------------- cases
# One small input per metric, as (function name, preds, target, per-question
# keywords, options). Per-question keywords hold one entry per item (they are
# split with the items when batching); options apply to the whole evaluation.


def _grounded_case():
    preds = np.array([[1.0, 3.0], [np.nan, np.nan], [0.0, 10.0], [4.0, 4.0], [2.0, 9.0],
                      [0.5, 1.5]])
    target = (np.array([[0.0, 2.0], [2.0, 4.0], [0.0, 4.0], [3.0, 5.0], [3.0, 5.0], [2.0, 8.0],
                        [0.0, 1.0]]),
              np.array([0, 2, 3, 3, 5, 6, 7]))
    per_item = {"pred_answers": np.array([1, -1, 2, 0, 3, 1]),
                "gt_answers": np.array([1, 1, 2, 1, 3, 1]),
                "durations": np.array([10.0, 20.0, 30.0, 40.0, 50.0, 60.0]),
                "keys": [f"v{i}_q" for i in range(6)]}
    return "grounded_qa", preds, target, per_item, {}


def _iou_f1_case(mode, **options):
    preds = [[[2, 6]], [], [[0.4, 2.6], [10, 12]], [[1, 3], [1, 3]], [[5, 9]], [[0, 1]]]
    target = [[[2, 6], [10, 12]], [[1, 3]], [[0, 2], [10, 12]], [[1, 3]], [], [[0, 1]]]
    per_item = {}
    if mode != "wildqa-2022":
        per_item["alternatives"] = [[[[2, 5]]], [], [[[0, 3]], [[9, 12]]], [], [[[5, 9]]], []]
    return "iou_f1", preds, target, per_item, {"mode": mode, "thresholds": (0.1, 0.7), **options}


def _rouge_case():
    preds = ["a red cube slides", "the sphere is blue", "two", "it rotates, then stops", ""]
    target = ["the red cube is sliding", ["blue sphere", "a blue ball"], "two objects",
              ["it stops", "rotating"], "nothing"]
    return "rouge", preds, target, {}, {"references_mode": "max"}


def _dvd_record(video, d, t, answer, qtype, subtype, interval, transfer=(), or_eff=0):
    return QARecord(
        video_id=video, question_id=f"{d}_{t}", answer=answer,
        extra={"question_type": qtype, "question_subtype": subtype, "interval_type": interval,
               "transfer_types": list(transfer), "turn_position": t + 1, "dialogue_index": d,
               "turn_index": t, "or_distance": max(or_eff, 0), "or_distance_effective": or_eff},
    )


def _dvd_case():
    # A transfer turn whose previous turn lands in the other batch (v_0_1
    # after v_0_0, v_0_3 after v_0_2) when split 3 + 3.
    records = [
        _dvd_record("v", 0, 0, "1", "object_count", "object_count", "compositional"),
        _dvd_record("v", 0, 1, "2", "object_count", "object_count", "compositional",
                    ["temporal"]),
        _dvd_record("v", 0, 2, "True", "object_exist", "object_exist", "atomic_spatial",
                    or_eff=2),
        _dvd_record("v", 0, 3, "0", "object_count", "object_count", "atomic_spatial",
                    ["spatial"]),
        _dvd_record("v", 1, 0, "red", "attribute_query", "attribute_query.color", "none"),
        _dvd_record("v", 1, 1, "metal", "attribute_query", "attribute_query.material", "none",
                    ["attribute"]),
    ]
    preds = {"v_0_0": "1", "v_0_1": 2, "v_0_2": True, "v_0_3": "1", "v_1_0": "Red",
             "v_1_1": None}
    return "dvd_accuracy", preds, records, {}, {}


def _multiple_choice_case():
    options = [["salt", "sugar", "flour", "pepper"]] * 3 + [["red", "green", "blue"]] * 3
    answers = [1, 1, 2, 0, 2, 1]
    preds = [1, "(B) sugar", "they add sugar", "A", None, "the answer is 1"]
    return ("multiple_choice_accuracy", preds, (options, answers),
            {"question_types": ["how", "how", "what", "what", "what", "how"]}, {})


def _moment_case():
    preds = {
        "1": [[0.0, 10.0, 0.9], [20.0, 40.0, 0.8], [5.0, 12.0, 0.95]],
        "2": [[30.0, 70.0, 0.5], [0.0, 2.0, 0.6]],
        "3": [[1.0, 2.0, 0.1]],
        "4": [[0.0, 100.0, 0.3], [40.0, 60.0, 0.3], [41.0, 59.0, 0.7]],
        "5": [[2.0, 4.0, 1.0], [2.0, 4.0, 1.0]],
        "6": [[10.0, 20.0, 0.2], [12.0, 18.0, 0.4]],
    }
    target = {"1": [[0.0, 10.0]], "2": [[30.0, 60.0], [62.0, 70.0]], "3": [[1.0, 3.0]],
              "4": [[40.0, 60.0]], "5": [[2.0, 4.0], [6.0, 8.0]], "6": [[11.0, 19.0]]}
    return "moment_retrieval", preds, target, {}, {}


def _recall_case():
    preds = [[[0.0, 5.0], [4.0, 10.0]], [[1.0, 2.0], [0.0, 3.0], [2.5, 3.0]], [[3.0, 9.0]],
             [[0.0, 1.0], [0.0, 1.0], [5.0, 6.0]], [[7.0, 8.0]], [[2.0, 4.0], [2.0, 3.0]]]
    target = [[4.0, 10.0], [0.0, 3.0], [[0.0, 4.0], [6.0, 9.0]], [5.0, 6.0], [0.0, 1.0],
              [2.0, 4.0]]
    return "recall_at_n", preds, target, {}, {"rule": "2dtan"}


CASES = {
    "grounded_qa": _grounded_case,
    "iou_f1-2022": lambda: _iou_f1_case("wildqa-2022", pad_to_batch=4),
    "iou_f1-2023": lambda: _iou_f1_case("wildqa-2023"),
    "iou_f1-clean": lambda: _iou_f1_case("clean"),
    "rouge": _rouge_case,
    "dvd_accuracy": _dvd_case,
    "multiple_choice_accuracy": _multiple_choice_case,
    "moment_retrieval": _moment_case,
    "recall_at_n": _recall_case,
}


def one_shot(case):
    name, preds, target, per_item, options = case
    return getattr(M, name)(preds, target, **per_item, **options)


# -------------------------------------------------------------------- labels


@pytest.mark.parametrize("case", sorted(CASES))
def test_result_label_is_the_function_name_and_no_benchmark(case):
    result = one_shot(CASES[case]())
    name = CASES[case]()[0]
    assert result.metric == name
    assert result.benchmark is None
    assert result.to_dict()["metric"] == name and result.to_dict()["benchmark"] is None
    assert result.format_table().splitlines()[0] == name


def test_benchmark_is_a_separate_field():
    r = M.MetricResult("grounded_qa", {"mIoU": 50.0}, benchmark="nextgqa")
    assert (r.metric, r.benchmark, r.title) == ("grounded_qa", "nextgqa", "nextgqa")
    assert r.to_dict()["benchmark"] == "nextgqa" and r.to_dict()["metric"] == "grounded_qa"
    assert r.format_table().splitlines()[0] == "nextgqa"
    assert not math.isnan(r["mIoU"])
