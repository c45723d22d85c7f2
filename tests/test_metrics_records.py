# SPDX-License-Identifier: Apache-2.0
"""The records-level form of the WildQA metrics: the loader's records as
``target`` (predictions in record order, as WildQA's files are)."""

from __future__ import annotations

import numpy as np
import pytest

from fastvqa.data import QARecord
from fastvqa.metrics import iou_f1, rouge
from fastvqa.metrics._align import record_key, records_of


def _records():
    return [QARecord(video_id="a", question_id="0", answer="a red car",
                     spans=np.array([[0.0, 5.0]]), extra={"answers": ["a red car", "red car"]}),
            QARecord(video_id="b", question_id="0", answer="two dogs",
                     spans=np.array([[10.0, 12.0]]), extra={"answers": ["two dogs"]})]


def test_iou_f1_on_records_matches_the_hand_computation():
    # Question a: the one prediction is the gold span (F1 1); question b: the
    # prediction [0, 1] misses [10, 12] (F1 0); the macro mean is 50.
    res = iou_f1([[[0.0, 5.0]], [[0.0, 1.0]]], _records(), mode="clean")
    assert res["IoU-F1"] == pytest.approx(50.0)


def test_rouge_on_records_reads_their_reference_answers():
    preds = ["a red car", "dogs"]
    res = rouge(preds, _records())
    assert res.metrics == rouge(preds, [["a red car", "red car"], ["two dogs"]]).metrics
    assert res["ROUGE-1"] == pytest.approx(100 * (1.0 + 2 * 1 / 1 * 1 / 2 / (1 + 1 / 2)) / 2)


def test_records_of_and_record_key():
    recs = _records()
    assert records_of(recs) == recs and records_of(tuple(recs)) == recs
    assert records_of([]) is None and records_of([np.zeros((1, 2))]) is None
    assert record_key({"a_0": 1}, recs[0]) == "a_0"
    assert record_key({"0": 1}, recs[0]) is None
    assert record_key({"0": 1}, recs[0], by_question_id=True) == "0"
