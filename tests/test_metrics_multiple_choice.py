# SPDX-License-Identifier: Apache-2.0
"""Multiple-choice accuracy with SOK-Bench's free-text rule (parse, else BLEU)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from fastvqa.data import QARecord
from fastvqa.metrics import MetricResult, multiple_choice_accuracy
from fastvqa.metrics.multiple_choice import parse_option_index

FOUR = ["w", "x", "y", "z"]


@pytest.mark.parametrize("text, base0, base1", [
    # whole output is a label
    ("2", 2, 1), ("(2)", 2, 1), ("[2]", 2, 1), ("2.", 2, 1), ("2)", 2, 1), (" 0 ", 0, -1),
    ("B", 1, 1), ("(B)", 1, 1), ("B.", 1, 1), ("B)", 1, 1), ("B:", 1, 1), ("(b)", 1, 1),
    # a label leading free text
    ("(C) The soup would lack ...", 2, 2), ("C. The soup", 2, 2), ("3) text", 3, 2),
    ("D: the last one", 3, 3), ("[1] first", 1, 0),
    # an answer phrase anywhere
    ("answer: 2", 2, 1), ("Answer: 1", 1, 0), ("The answer is (C).", 2, 2),
    ("I think the answer is D", 3, 3), ("Option B", 1, 1), ("choice 3.", 3, 2),
    ("the correct option - A, because", 0, 0),
    # an out-of-range integer is still a parsed choice (scored wrong)
    ("7", 7, 6),
    # not labels: free text, words that look like letters, numbers inside text
    ("b", None, None), ("A soup", None, None), ("3.5 cups of broth", None, None),
    ("add 2 cups", None, None), ("choice a lot", None, None), ("a good choice for you", None, None),
    ("The answer is I", None, None), ("E", None, None), ("answers: 2", None, None),
    ("", None, None),
])
def test_parse_option_index_forms(text, base0, base1):
    assert parse_option_index(text, 4) == base0
    assert parse_option_index(text, 4, index_base=1) == base1


def test_integer_outputs_are_zero_based_indices_whatever_the_index_base():
    gold = ([FOUR, FOUR, FOUR], [1, 2, 3])
    r = multiple_choice_accuracy([1, np.int64(2), 0], gold, index_base=1)
    assert r["Acc"] == pytest.approx(200.0 / 3.0)
    assert r.per_question["method"] == ["index", "index", "index"]
    # The same choices written as text follow index_base.
    r = multiple_choice_accuracy(["2", "3", "1"], gold, index_base=1)
    assert r.per_question["prediction"].tolist() == [1, 2, 0]
    assert r["Acc"] == pytest.approx(200.0 / 3.0) and r.info["parsed"] == 3


def test_bleu_fallback_hand_checked():
    # hypothesis "the cat sat on the mat" vs "the cat sat on a mat" (BLEU-4, no
    # smoothing): clipped precisions 5/6, 3/5, 2/4, 1/3, equal lengths (BP = 1),
    # BLEU = (5/6 * 3/5 * 2/4 * 1/3) ** (1/4) = (1/12) ** 0.25; "a dog ran"
    # shares no word with it (BLEU 0).
    options = ["a dog ran", "the cat sat on a mat", "zebra"]
    r = multiple_choice_accuracy(["the cat sat on the mat"], ([options], [1]))
    assert r["Acc"] == 100.0
    assert r.per_question["method"] == ["bleu"]
    assert r.per_question["bleu"][0] == pytest.approx((1.0 / 12.0) ** 0.25, rel=1e-12)
    assert r.info["bleu_fallbacks"] == 1 and r.info["bleu_ties"] == 0
    assert r.info["bleu"]["smoothing"] is None and r.info["bleu"]["weights"] == [0.25] * 4


def test_bleu_smoothing_method1_hand_checked():
    # "the cat sat" vs "the cat ran": p1 = 2/3, p2 = 1/2, p3 = 0/1 and p4 = 0/1
    # (no 4-gram), method1 replaces a zero numerator by 0.1: BLEU =
    # (2/3 * 1/2 * 0.1 * 0.1) ** (1/4) = (1/300) ** 0.25.
    r = multiple_choice_accuracy(["the cat sat"], ([["dog", "the cat ran"]], [1]),
                                 bleu_smoothing="method1")
    assert r.per_question["prediction"][0] == 1
    assert r.per_question["bleu"][0] == pytest.approx((1.0 / 300.0) ** 0.25, rel=1e-12)


def test_bleu_tie_goes_to_the_first_option():
    # No word in common with any option: every BLEU is 0, the first option wins.
    r = multiple_choice_accuracy(["qwerty"], ([["alpha", "beta", "gamma"]], [2]))
    assert r.per_question["prediction"][0] == 0 and r.per_question["bleu_tie"][0]
    assert r["Acc"] == 0.0 and r.info["bleu_ties"] == 1


def test_custom_tokenizer():
    lower = lambda s: s.lower().split()  # noqa: E731
    options = ["THE CAT SAT ON A MAT", "a dog ran"]
    assert multiple_choice_accuracy(["the cat sat on the mat"], ([options], [0]),
                                    tokenize=lower)["Acc"] == 100.0


def test_per_type_and_macro_hand_computed():
    options = [FOUR] * 5
    answers = [0, 1, 2, 3, 0]
    outputs = [0, "B", "(A)", None, "answer: 0"]
    types = ["OCT", "OCT", "APU", "APU", "APU"]
    r = multiple_choice_accuracy(outputs, (options, answers), question_types=types)
    assert isinstance(r, MetricResult)
    assert list(r) == ["Acc", "Acc/type=OCT", "Acc/type=APU", "Acc/macro"]
    assert r["Acc"] == 60.0  # micro: 3 of 5
    assert r["Acc/type=OCT"] == 100.0 and r["Acc/type=APU"] == pytest.approx(100.0 / 3.0)
    assert r["Acc/macro"] == pytest.approx((100.0 + 100.0 / 3.0) / 2.0)
    assert r.info["missing"] == 1 and r.info["parsed"] == 3 and r.info["index_outputs"] == 1
    assert r.per_question["prediction"].tolist() == [0, 1, 0, -1, 0]


def test_records_with_keys_and_types():
    records = [
        QARecord("vid", "t1_0", options=FOUR, answer=2, extra={"question_type": "t1"}),
        QARecord("vid", "t1_1", options=FOUR, answer=0, extra={"question_type": "t1"}),
        QARecord("vid", "t2_0", options=FOUR, answer=3, extra={"question_type": "t2"}),
    ]
    # keys: the question id or the record key; t2_0 missing.
    r = multiple_choice_accuracy({"t1_0": 2, "vid_t1_1": "A", "other": 1}, records)
    assert r["Acc"] == pytest.approx(200.0 / 3.0)
    assert r["Acc/type=t1"] == 100.0 and r["Acc/type=t2"] == 0.0
    assert r.info["unknown_keys"] == 1 and r.info["missing"] == 1
    assert r.per_question["key"] == ["vid_t1_0", "vid_t1_1", "vid_t2_0"]


def test_out_of_range_index_is_wrong_and_counted():
    r = multiple_choice_accuracy([9, "5"], ([FOUR, FOUR], [0, 1]))
    assert r["Acc"] == 0.0 and r.info["out_of_range"] == 2


def test_errors():
    gold = ([FOUR], [1])
    with pytest.raises(TypeError, match="bool"):
        multiple_choice_accuracy([True], gold)
    with pytest.raises(TypeError, match="float"):
        multiple_choice_accuracy([1.0], gold)
    with pytest.raises(ValueError, match="answer must be an option index"):
        multiple_choice_accuracy([1], ([FOUR], [4]))
    with pytest.raises(ValueError, match="index_base must be 0 or 1"):
        multiple_choice_accuracy([1], gold, index_base=2)
    with pytest.raises(ValueError, match="bleu_smoothing"):
        multiple_choice_accuracy(["free text"], gold, bleu_smoothing="method9")
    with pytest.raises(TypeError, match="needs records"):
        multiple_choice_accuracy({"0": 1}, gold)
    with pytest.raises(ValueError, match="2 predictions for 1 records"):
        multiple_choice_accuracy([1, 2], gold)
    with pytest.raises(ValueError, match="2 question types for 1 questions"):
        multiple_choice_accuracy([1], gold, question_types=["a", "b"])
    with pytest.raises(ValueError, match="1 option lists for 2 answers"):
        multiple_choice_accuracy([1, 1], ([FOUR], [1, 2]))


def test_empty():
    r = multiple_choice_accuracy([], ([], []))
    assert math.isnan(r["Acc"]) and r.info["evaluated"] == 0


def test_real_example_direct_answer_picks_the_right_choice(shared_data):
    from fastvqa.data import load_sokbench

    records = load_sokbench(shared_data / "sokbench" / "example_question.json")
    direct = records[0].extra["direct"]
    r = multiple_choice_accuracy([direct], records)
    # The direct answer is choice 3 verbatim: BLEU 1 against it.
    assert r["Acc"] == 100.0 and r.per_question["bleu"][0] == 1.0
    assert multiple_choice_accuracy(["(D)"], records)["Acc"] == 100.0
    assert multiple_choice_accuracy(["The answer is 0"], records)["Acc"] == 0.0
    # A paraphrase of option 2 ("texture ... provided by something").
    r = multiple_choice_accuracy(["the soup would lack the texture provided by the seaweed"],
                                 records)
    assert r.per_question["prediction"][0] == 2 and r.per_question["method"] == ["bleu"]
