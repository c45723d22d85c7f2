# SPDX-License-Identifier: Apache-2.0
"""Metric errors: the caller's mistake is an InputError, a bug keeps its traceback.

Issue 11: ``cli.main`` prints an error of the :class:`fastvqa.errors.InputError`
family as one line (exit 2); any other exception is a fastvqa bug and must show
its traceback. ``fastvqa eval`` used to wrap every metric call in
``except ValueError`` (sokbench, dvd: also ``TypeError``) and re-raise it as a
user error, so a bug inside a metric came out as a one-line "error" about the
user's file. Now the metrics raise InputError (still a ValueError; the type
checks an :class:`~fastvqa.errors.InputTypeError`, still a
TypeError) for what the caller can fix, and the commands convert only that.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import fastvqa.metrics
from fastvqa.cli import main
from fastvqa.errors import InputError

# ------------------------------------------------------------------ small inputs

GSUB = {"v1": {"duration": 20, "fps": 30.0, "location": {"0": [[0, 10]], "1": [[10, 20]]}}}

DEVEQA = {"qid": "a", "video_id": "v1", "question": "q", "options": ["w", "x", "y", "z", "u"],
          "answer": "A", "gt_span": [0, 10], "duration": 20}

QVH = [{"qid": 1, "query": "a man", "duration": 150, "vid": "v1", "relevant_windows": [[0, 8]]},
       {"qid": 2, "query": "a dog", "duration": 100, "vid": "v2",
        "relevant_windows": [[40, 100]]}]

SOKBENCH = {"counterfactual": [
    {"question": "q0", "video": "vidA", "answer": {"direct": "x", "choices": ["x", "y", "z", "w"],
                                                  "right_choice": 0}},
    {"question": "q1", "video": "vidB", "answer": {"direct": "z", "choices": ["x", "y", "z", "w"],
                                                  "right_choice": 2}}]}


def _dvd_turn(answer):
    return {
        "split": "max2action", "image": "CLEVR_new_000009", "question": "how many things ?",
        "answer": answer, "template_filename": "zero_hop_1.json",
        "template": {"text": ["How many <Z> things are there?"], "interval_type": "none",
                     "cutoff": None, "used_periods": [[None, [0, "end_flying", 1, 48]]],
                     "used_objects": {}},
        "turn_dependencies": {"temporal": "none", "object": "none", "attribute": "none",
                              "spatial": "none"},
    }


def _write(path: Path, data) -> str:
    path.write_text(json.dumps(data))
    return str(path)


def _argv(bench: str, tmp_path: Path) -> list[str]:
    """A valid ``fastvqa eval <bench>`` command line on files written to tmp_path."""
    if bench == "nextgqa":
        gt = tmp_path / "ng"
        gt.mkdir()
        _write(gt / "gsub_test.json", GSUB)
        return ["eval", "nextgqa", "--gt", str(gt),
                "--pred", _write(tmp_path / "pred.json", {"v1_0": [0, 10], "v1_1": [12, 20]})]
    if bench == "qvhighlights":
        gt = tmp_path / "gt.jsonl"
        gt.write_text("".join(json.dumps(r) + "\n" for r in QVH))
        sub = tmp_path / "sub.jsonl"
        sub.write_text(json.dumps({"qid": 1, "pred_relevant_windows": [[0, 8, 1.0]]}) + "\n"
                       + json.dumps({"qid": 2, "pred_relevant_windows": [[0, 10, 1.0]]}) + "\n")
        return ["eval", "qvhighlights", "--gt", str(gt), "--pred", str(sub)]
    if bench == "sokbench":
        return ["eval", "sokbench", "--gt", _write(tmp_path / "sok.json", SOKBENCH),
                "--pred", _write(tmp_path / "pred.json", [0, 1])]
    assert bench == "dvd"
    return ["eval", "dvd", "--gt", _write(tmp_path / "dial.json",
                                          [[_dvd_turn(2), _dvd_turn("True")]]),
            "--pred", _write(tmp_path / "pred.json", ["2", "False"])]


# The metric each command calls, as the command looks it up (the module
# attribute; qvhighlights goes through the lazy ``fastvqa.metrics`` name).
METRIC = {
    "nextgqa": ("fastvqa.metrics.grounding", "grounded_qa"),
    "qvhighlights": ("fastvqa.metrics", "moment_retrieval"),
    "sokbench": ("fastvqa.metrics.multiple_choice", "multiple_choice_accuracy"),
    "dvd": ("fastvqa.metrics.dialogue", "dvd_accuracy"),
}

BENCHES = sorted(METRIC)


def _one_line_error(capsys, argv) -> str:
    capsys.readouterr()
    assert main(argv) == 2
    captured = capsys.readouterr()
    lines = captured.err.strip().splitlines()
    assert captured.out == "" and len(lines) == 1 and " error: " in lines[0], captured.err
    return lines[0]


@pytest.mark.parametrize("bench", BENCHES)
def test_inputs_are_valid(bench, tmp_path, capsys):
    # The files the tests below start from score without a complaint.
    assert main([*_argv(bench, tmp_path), "--json"]) == 0
    assert "metrics" in json.loads(capsys.readouterr().out)


# ----------------------------------------------------- (a) a bug keeps its traceback

@pytest.mark.parametrize("exc", [ValueError, TypeError])
@pytest.mark.parametrize("bench", BENCHES)
def test_a_bug_inside_the_metric_is_not_a_user_error(bench, exc, tmp_path, monkeypatch):
    module, name = METRIC[bench]
    calls = []

    def broken(*args, **kwargs):
        calls.append(name)
        raise exc("boom")

    import importlib

    monkeypatch.setattr(importlib.import_module(module), name, broken, raising=False)
    with pytest.raises(exc, match="boom") as info:
        main(_argv(bench, tmp_path))
    assert calls == [name]
    assert not isinstance(info.value, InputError)


# A helper each metric calls after its checks, where a kernel's or a helper's
# plain ValueError on already validated data would come from.
DEEPER = {
    "nextgqa": ("fastvqa.metrics.grounding", "_scanned"),
    "qvhighlights": ("fastvqa.metrics.moment", "_qvh_core"),
    "sokbench": ("fastvqa.metrics.multiple_choice", "align_predictions"),
    "dvd": ("fastvqa.metrics.dialogue", "_answer_string"),
}


@pytest.mark.parametrize("bench", BENCHES)
def test_a_bug_deeper_down_is_not_a_user_error(bench, tmp_path, monkeypatch):
    import importlib

    module, name = DEEPER[bench]

    def boom(*args, **kwargs):
        raise ValueError("boom")

    monkeypatch.setattr(importlib.import_module(module), name, boom)
    with pytest.raises(ValueError, match="boom") as info:
        main(_argv(bench, tmp_path))
    assert not isinstance(info.value, InputError)


# ------------------------------------------- (b) a user's mistake is still one line

def test_nextgqa_handler_keeps_a_user_mistake_one_line(tmp_path, capsys):
    # `eval deveqa` shares the NExT-GQA scoring path (and its handler):
    # several gold segments under --mode deveqa-repo is the user's data.
    gt = _write(tmp_path / "m.json", [{**DEVEQA, "gt_span": [[0, 1], [2, 3]]}])
    pred = _write(tmp_path / "p.json", {"v1_a": [0, 1]})
    line = _one_line_error(capsys, ["eval", "deveqa", "--gt", gt, "--pred", pred,
                                    "--mode", "deveqa-repo"])
    assert line.startswith("fastvqa eval: error: ")
    assert "one gold span per question, question 0 ('v1_a') has 2" in line


def test_qvhighlights_qid_mismatch_is_one_line(tmp_path, capsys):
    argv = _argv("qvhighlights", tmp_path)
    sub = tmp_path / "sub.jsonl"
    sub.write_text(json.dumps({"qid": 2, "pred_relevant_windows": [[40, 100, 1.0]]}) + "\n")
    line = _one_line_error(capsys, argv)
    assert "sub.jsonl" in line and "field 'qid'" in line and "1 without a prediction" in line


def test_sokbench_wrong_length_list_is_one_line(tmp_path, capsys):
    argv = _argv("sokbench", tmp_path)
    _write(tmp_path / "pred.json", [0, 1, 2])
    line = _one_line_error(capsys, argv)
    assert "pred.json" in line and "3 predictions for 2 records" in line


def test_sokbench_unmatched_keys_are_one_line(tmp_path, capsys):
    argv = _argv("sokbench", tmp_path)
    _write(tmp_path / "pred.json", {"nope": 1})
    line = _one_line_error(capsys, argv)
    assert "pred.json" in line and "no prediction key matches" in line


def test_dvd_wrong_length_list_is_one_line(tmp_path, capsys):
    argv = _argv("dvd", tmp_path)
    _write(tmp_path / "pred.json", ["2"])
    line = _one_line_error(capsys, argv)
    assert "pred.json" in line and "1 predictions for 2 records" in line


# --------------------------------- (c) each metric module: bad data is an InputError

def _grounding_several_segments():
    from fastvqa.metrics import grounded_qa

    grounded_qa([[0.0, 1.0]], ([[0.0, 1.0], [2.0, 3.0]], np.array([0, 2])), mode="deveqa-repo")


def _moment_reversed_window():
    from fastvqa.metrics import moment_retrieval

    moment_retrieval({"1": [[5.0, 1.0, 0.3]]}, {"1": [[0.0, 8.0]]}, strict=True)


def _moment_recall_mismatch():
    from fastvqa.metrics import recall_at_n

    recall_at_n([[[0.0, 1.0]]], [[0.0, 1.0], [2.0, 3.0]])


def _wildqa_lengths():
    from fastvqa.metrics import iou_f1

    iou_f1([[[0.0, 1.0]]], [[[0.0, 1.0]], [[2.0, 3.0]]])


def _wildqa_rouge_mode():
    from fastvqa.metrics import rouge

    rouge(["a"], ["a"], references_mode="best")


def _multiple_choice_answer():
    from fastvqa.metrics import multiple_choice_accuracy

    multiple_choice_accuracy([0], ([["x", "y"]], [2]))


def _dvd_length():
    from fastvqa.data.record import QARecord
    from fastvqa.metrics import dvd_accuracy

    records = [QARecord(video_id="v", question_id="0", question="q", answer="2")]
    dvd_accuracy(["2", "1"], records)


def _result_decimals():
    fastvqa.metrics.MetricResult("x", {"a": 1.0}).format_table(decimals=-1)


def _result_fmt(tmp_path):
    fastvqa.metrics.MetricResult("x", {"a": 1.0}).write_per_question(tmp_path / "p", fmt="xml")


@pytest.mark.parametrize("call, message", [
    (_grounding_several_segments, "one gold span per question"),
    (_moment_reversed_window, "has end < start"),
    (_moment_recall_mismatch, "preds has 1 queries but target has 2"),
    (_wildqa_lengths, "target has 2 entries but preds has 1"),
    (_wildqa_rouge_mode, "references_mode must be 'primary' or 'max'"),
    (_multiple_choice_answer, r"answer must be an option index in \[0, 2\), got 2"),
    (_dvd_length, "2 predictions for 1 records"),
    (_result_decimals, "decimals must be an integer >= 0"),
    (_result_fmt, "fmt must be one of csv, json, jsonl, markdown, got 'xml'"),
])
def test_bad_data_is_an_input_error(call, message, tmp_path):
    args = (tmp_path,) if call is _result_fmt else ()
    with pytest.raises(InputError, match=message) as info:
        call(*args)
    assert isinstance(info.value, ValueError)  # the documented API contract


def _grounding_text_spans():
    from fastvqa.metrics import grounded_qa

    grounded_qa([["a", "b"]], ([[0.0, 1.0]], np.array([0, 1])))


def _moment_mixed_containers():
    from fastvqa.metrics import moment_retrieval

    moment_retrieval({"1": [[0.0, 1.0, 1.0]]}, [[[0.0, 1.0]]])


def _wildqa_string_spans():
    from fastvqa.metrics import iou_f1

    iou_f1(["0-1"], [[[0.0, 1.0]]])


def _multiple_choice_float_output():
    from fastvqa.metrics import multiple_choice_accuracy

    multiple_choice_accuracy([1.0], ([["x", "y"]], [1]))


def _dvd_dict_prediction():
    from fastvqa.data.record import QARecord
    from fastvqa.metrics import dvd_accuracy

    records = [QARecord(video_id="v", question_id="0", question="q", answer="2")]
    dvd_accuracy({"v_0": {"a": 1}}, records)


@pytest.mark.parametrize("call, message", [
    (_grounding_text_spans, "preds must hold numbers"),
    (_moment_mixed_containers, "must both be mappings"),
    (_wildqa_string_spans, r"preds\[0\] must be a list of \[start, end\] spans"),
    (_multiple_choice_float_output, "must be an option index"),
    (_dvd_dict_prediction, "prediction for v_0 must be a string, number or boolean"),
])
def test_wrong_kind_is_an_input_error_and_still_a_type_error(call, message):
    with pytest.raises(TypeError, match=message) as info:
        call()
    assert isinstance(info.value, InputError)


# ------------------- normalized spans: only a predicted question needs a duration

def test_normalized_question_without_prediction_needs_no_duration():
    # The official gs=True scales the predictions it reads; a question without
    # one is skipped, so its missing duration is not an error. Question 1:
    # round(0.1 * 40, 1) = 4, round(0.5 * 40, 1) = 20 -> [4, 20] vs gold [2, 6]:
    # intersection 2, hull 18, prediction length 16.
    from fastvqa.metrics import grounded_qa

    result = grounded_qa([[np.nan, np.nan], [0.1, 0.5]], ([[0.0, 10.0], [2.0, 6.0]],
                         np.array([0, 1, 2])), durations=[np.nan, 40.0], normalized=True)
    assert result["mIoU"] == pytest.approx(100 * 2 / 18, rel=1e-12)
    assert result["mIoP"] == pytest.approx(100 * 2 / 16, rel=1e-12)
    assert result.info["evaluated"] == 1 and result.info["missing"] == 1
    # A question with a prediction still needs a duration.
    with pytest.raises(InputError, match="durations must be finite and >= 0, got nan at "
                                         "question 1"):
        grounded_qa([[0.1, 0.5], [0.1, 0.5]], ([[0.0, 10.0], [2.0, 6.0]], np.array([0, 1, 2])),
                    durations=[20.0, np.nan], normalized=True)


def test_eval_deveqa_normalized_with_an_unpredicted_question_without_duration(tmp_path, capsys):
    gt = _write(tmp_path / "de.json", [
        {k: v for k, v in DEVEQA.items() if k != "duration"},
        {**DEVEQA, "qid": "b", "video_id": "v2", "gt_span": [2, 6], "duration": 40}])
    pred = _write(tmp_path / "p.json", {"v2_b": [0.1, 0.5]})
    capsys.readouterr()
    assert main(["eval", "deveqa", "--gt", gt, "--pred", pred, "--normalized", "--json"]) == 0
    captured = capsys.readouterr()
    metrics = json.loads(captured.out)["metrics"]
    assert metrics["mIoU"] == pytest.approx(100 * 2 / 18, rel=1e-12)
    assert metrics["mIoP"] == pytest.approx(100 * 2 / 16, rel=1e-12)
    assert "1 of 2 questions have no prediction" in captured.err


def test_eval_wildqa_evidence_repeated_threshold_is_one_line(tmp_path, capsys):
    # iou_f1's own check (a threshold given twice) used to escape as a plain
    # ValueError, a traceback for the user's option; it is an InputError now.
    gt = tmp_path / "wq"
    gt.mkdir()
    record = {"answer": "Yes", "alter_answers": [], "evidences": [{"0": [0, 10]}],
              "alter_evidences": [], "duration": 60.0, "domain": "Agriculture",
              "question_type": "Intent"}
    _write(gt / "test.json", [{**record, "question": f"q{i}", "video_id": f"vid{i}"}
                              for i in range(2)])
    pred = _write(tmp_path / "wp.json", [[[0, 10]], [[5, 20]]])
    line = _one_line_error(capsys, ["eval", "wildqa", "evidence", "--gt", str(gt), "--pred", pred,
                                    "--thresholds", "0.3,0.3"])
    assert "0.3" in line


# ---------------------- multiple choice: an index beyond int64 is wrong, not a crash

def test_multiple_choice_huge_index_scores_wrong():
    # A 23-digit number as the output text (or a huge int) is a parsed choice
    # outside the options: wrong, counted out of range; it used to end in an
    # OverflowError when stored in the int64 prediction column.
    from fastvqa.metrics import multiple_choice_accuracy

    gold = ([["x", "y"], ["x", "y"], ["x", "y"]], [0, 1, 1])
    result = multiple_choice_accuracy(["99999999999999999999999", 2 ** 70, "1"], gold)
    assert result["Acc"] == pytest.approx(100 / 3, rel=1e-12)
    assert result.info["out_of_range"] == 2 and result.info["parsed"] == 2
    assert result.per_question["method"] == ["parsed", "index", "parsed"]
    assert result.per_question["prediction"].tolist() == [2 ** 63 - 1, 2 ** 63 - 1, 1]


def test_eval_sokbench_huge_index_in_text(tmp_path, capsys):
    argv = _argv("sokbench", tmp_path)
    _write(tmp_path / "pred.json", ["99999999999999999999999", "answer: 2"])
    capsys.readouterr()
    assert main([*argv, "--json"]) == 0
    got = json.loads(capsys.readouterr().out)
    assert got["metrics"]["Acc"] == 50.0 and got["info"]["out_of_range"] == 1
