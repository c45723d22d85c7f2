# SPDX-License-Identifier: Apache-2.0
"""``fastvqa eval nextgqa|deveqa|sokbench|wildqa evidence --pred-text``.

For each benchmark: a small ground truth in the layout its own tests use, a
responses file with parseable and unparseable responses, and the equivalent
``--pred`` file written by hand (what a person reads in each response, and the
benchmark's rule for a failed parse: FAILED_SPAN / a wrong answer, the BLEU
fallback, no evidence). The scores of both runs must be equal, the failure
counts right. The command line runs in a subprocess, as a user runs it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import fastvqa
from fastvqa.errors import CommandError
from tests.test_eval_nextgqa import DEVEQA as DEVEQA_RECORDS

PACKAGE_ROOT = Path(fastvqa.__file__).resolve().parents[1]


def run_cli(*argv: str, ok: bool = True) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(PACKAGE_ROOT)}
    proc = subprocess.run([sys.executable, "-m", "fastvqa.cli", *map(str, argv)],
                          capture_output=True, text=True, env=env, timeout=120)
    assert (proc.returncode == 0) == ok, proc.stderr[-3000:]
    return proc


def eval_json(*argv) -> dict:
    return json.loads(run_cli("eval", *argv, "--json").stdout)


def write_lines(path: Path, rows: list) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def write_json(path: Path, value) -> Path:
    path.write_text(json.dumps(value))
    return path


# ------------------------------------------------------------------ NExT-GQA

GSUB = {"v1": {"duration": 20, "fps": 30.0,
               "location": {"0": [[0, 10], [20, 22]], "1": [[0, 10]], "2": [[5, 6]]}},
        "v2": {"duration": 40, "fps": 30.0, "location": {"0": [[10, 20]], "1": [[0, 5]]}}}
CSV = ("video_id,frame_count,width,height,question,answer,qid,type,a0,a1,a2,a3,a4\n"
       "v1,600,320,240,q0,b,0,CW,a,b,c,d,e\n"
       "v1,600,320,240,q1,c,1,CH,a,b,c,d,e\n"
       "v1,600,320,240,q2,a,2,TN,a,b,c,d,e\n"
       "v2,1200,320,240,q3,d,0,TC,a,b,c,d,e\n"
       "v2,1200,320,240,q4,e,1,CW,a,b,c,d,e\n")
NEXTGQA_RESPONSES = [
    {"key": "v1_0", "response": "The answer is (B). It happens from 2s to 8s."},
    {"key": "v1_1", "response": "I cannot tell from these frames."},
    {"key": "v1_2", "response": '```json\n{"answer": "A", "start": 5, "end": 6}\n```'},
    {"key": "v2_0", "response": "Answer: A or C. Evidence: 00:00:12 - 00:00:18"},
    # v2_1 has no line: missing, as a missing --pred entry
    {"key": "other_9", "response": "B [0, 1]"},
]
# What the responses say, as the official files: the failed spans are
# FAILED_SPAN, the failed answers an index that is no option.
NEXTGQA_GROUNDING = {"v1_0": [2, 8], "v1_1": [1, 0], "v1_2": [5, 6], "v2_0": [12, 18],
                     "other_9": [0, 1]}
NEXTGQA_QA = {"v1_0": {"prediction": 1, "answer": 1}, "v1_1": {"prediction": -1, "answer": 2},
              "v1_2": {"prediction": 0, "answer": 0}, "v2_0": {"prediction": -1, "answer": 3}}


@pytest.fixture
def nextgqa_files(tmp_path):
    gt = tmp_path / "gt"
    gt.mkdir()
    write_json(gt / "gsub_test.json", GSUB)
    (gt / "test.csv").write_text(CSV)
    return (gt, write_lines(tmp_path / "responses.jsonl", NEXTGQA_RESPONSES),
            write_json(tmp_path / "ground.json", NEXTGQA_GROUNDING),
            write_json(tmp_path / "qa.json", NEXTGQA_QA))


def test_nextgqa_text_equals_the_hand_written_files(nextgqa_files, tmp_path):
    gt, responses, ground, qa = nextgqa_files
    pq = tmp_path / "pq.jsonl"
    text = eval_json("nextgqa", "--gt", gt, "--pred-text", responses, "--per-question", pq)
    files = eval_json("nextgqa", "--gt", gt, "--pred", ground, "--qa", qa)
    assert text["metrics"] == files["metrics"]
    # by hand: IoU .6, 0 (failed span), 1, .6 -> 55; answers right for v1_0, v1_2
    assert text["metrics"]["mIoU"] == pytest.approx(55.0)
    assert (text["metrics"]["Acc@QA"], text["metrics"]["Acc@GQA"]) == (50.0, 50.0)
    for name in ("evaluated", "missing", "unmatched_predictions"):
        assert text["info"][name] == files["info"][name]
    assert (text["info"]["evaluated"], text["info"]["missing"]) == (4, 1)
    parse = text["info"]["parse"]
    assert (parse["responses"], parse["answer_failures"], parse["span_failures"]) == (4, 2, 1)
    assert parse["answer_failure_rate"] == 0.5 and parse["span_failure_rate"] == 0.25
    assert text["info"]["pred_text"] == str(responses) and text["info"]["pred"] is None
    assert text["inputs"]["pred_text"]["path"] == str(responses)
    rows = {r["key"]: r for r in map(json.loads, pq.read_text().splitlines())}
    assert rows["v1_0"]["answer_parse"] == "answer_phrase"
    assert rows["v1_0"]["span_parse"] == "from_to"
    assert rows["v1_1"]["span_parse"] == "failed: no time span found in the response"
    assert rows["v2_0"]["answer_parse"] == "failed: ambiguous: answer_phrase names options A, C"
    assert rows["v2_1"]["answer_parse"] is None


def test_nextgqa_table_shows_the_failures(nextgqa_files):
    gt, responses, _, _ = nextgqa_files
    out = run_cli("eval", "nextgqa", "--gt", gt, "--pred-text", responses).stdout
    assert "parse_failures: answer 2 of 4 (50.0%), span 1 of 4 (25.0%)" in out.splitlines()


def test_pred_and_pred_text_exclude_each_other(nextgqa_files):
    gt, responses, ground, qa = nextgqa_files
    both = run_cli("eval", "nextgqa", "--gt", gt, "--pred", ground, "--pred-text", responses,
                   ok=False)
    assert "not allowed with argument" in both.stderr
    neither = run_cli("eval", "nextgqa", "--gt", gt, ok=False)
    assert "one of the arguments --pred --pred-text is required" in neither.stderr
    with_qa = run_cli("eval", "nextgqa", "--gt", gt, "--pred-text", responses, "--qa", qa,
                      ok=False)
    assert "--qa: with --pred-text the answers come from the responses" in with_qa.stderr
    from fastvqa.evaluation import nextgqa

    with pytest.raises(CommandError, match="exactly one of --pred"):
        nextgqa.evaluate(gt=gt, pred=ground, pred_text=responses)


def test_bad_responses_files_are_one_line_errors(nextgqa_files, tmp_path, capsys):
    from fastvqa.cli import main

    gt = nextgqa_files[0]
    for rows, message in (([{"response": "B"}], "record 'line 1': missing the question's key ('key')"),
                          ([{"key": "v1_0"}], "record 'line 1': field 'response': missing"),
                          ([{"key": "v1_0", "response": 3}],
                           "field 'response': expected a string or null, got int"),
                          ([{"key": "v1_0", "response": "B"}, {"key": "v1_0", "response": "C"}],
                           "record 'v1_0': the same key appears twice"),
                          ([], "holds no responses; nothing to score")):
        bad = write_lines(tmp_path / "bad.jsonl", rows)
        assert main(["eval", "nextgqa", "--gt", str(gt), "--pred-text", str(bad)]) == 2
        err = capsys.readouterr().err
        assert message in err and len(err.splitlines()) == 1


# ------------------------------------------------------------------- DeVE-QA

# the DeVE-QA records of tests/test_eval_nextgqa.py, and one more
DEVEQA = [*DEVEQA_RECORDS,
          {"qid": "d", "video_id": "v2", "question": "q", "options": ["w", "x", "y", "z", "u"],
           "answer": "E", "gt_span": [30, 40], "duration": 80}]
DEVEQA_RESPONSES = [
    {"qid": "a", "response": "(A) w. Evidence: [0, 5]"},
    {"qid": "b", "response": '{"answer": "D", "span": [5, 3]}'},
    {"key": "v2_c", "response": "It is shown in frames 4 to 12."},
    # d: no line
]
# a right, [0, 5]; b wrong, reversed span swapped to [3, 5]; c: no option
# (an answer that is no letter: wrong) and frames / 2 fps = [2, 6]
DEVEQA_PRED = [{"qid": "a", "answer": "A", "span": [0, 5]},
               {"qid": "b", "answer": "D", "span": [3, 5]},
               {"qid": "c", "answer": "?", "span": [2, 6]}]


@pytest.mark.parametrize("mode", ["nextgqa", "deveqa-repo"])
def test_deveqa_text_equals_the_devi_file(tmp_path, mode):
    gt = write_lines(tmp_path / "deveqa.jsonl", DEVEQA)
    responses = write_lines(tmp_path / "responses.jsonl", DEVEQA_RESPONSES)
    pred = write_lines(tmp_path / "pred.jsonl", DEVEQA_PRED)
    text = eval_json("deveqa", "--gt", gt, "--pred-text", responses, "--pred-fps", "2",
                     "--mode", mode)
    files = eval_json("deveqa", "--gt", gt, "--pred", pred, "--mode", mode)
    assert text["metrics"] == files["metrics"]
    assert text["info"]["missing"] == files["info"]["missing"] == 1
    assert text["metrics"]["mIoU"] == pytest.approx(
        (0.5 + 0.2 + 1.0) / (3 if mode == "nextgqa" else 4) * 100)
    parse = text["info"]["parse"]
    assert (parse["responses"], parse["answer_failures"], parse["span_failures"]) == (3, 1, 0)
    # without pred_fps the frame indices do not parse: a zero-overlap span
    from fastvqa.evaluation import nextgqa

    no_fps = nextgqa.evaluate_deveqa(gt=gt, pred_text=responses, mode=mode)
    assert no_fps.info["parse"]["span_failures"] == 1
    assert no_fps["mIoU"] == pytest.approx(
        (0.5 + 0.2) / (3 if mode == "nextgqa" else 4) * 100)


# ------------------------------------------------------------------ SOK-Bench

def _sok_question(choices: list, right: int) -> dict:
    return {"question": "What would happen?", "video": "vid",
            "answer": {"direct": choices[right], "choices": choices, "right_choice": right}}


SOK_CHOICES = ["The soup would taste bland and watery.",
               "The noodles would stick to the pot.",
               "The broth would turn cloudy and bitter.",
               "Nothing would change at all."]
SOKBENCH = {"Counterfactual": [_sok_question(SOK_CHOICES, 2), _sok_question(SOK_CHOICES, 0)],
            "Temporal": [_sok_question(SOK_CHOICES, 1), _sok_question(SOK_CHOICES, 0),
                         _sok_question(SOK_CHOICES, 3)]}
PROSE = "I think the soup would taste really bland afterwards"
SOK_RESPONSES = [
    {"key": "vid_Counterfactual_0", "response": "The answer is 2"},
    {"key": "Counterfactual_1", "response": "I cannot determine the answer."},
    {"key": "vid_Temporal_0", "response": '{"answer": "B"}'},
    {"key": "vid_Temporal_1", "response": PROSE},
    {"key": "vid_Temporal_2", "response": None},
]
# 0-based numbers (--index-base 0, right_choice's); failed parses keep their
# text (SOK-Bench's BLEU fallback), a null stays null (missing: wrong)
SOK_PRED = {"vid_Counterfactual_0": 2, "Counterfactual_1": "I cannot determine the answer.",
            "vid_Temporal_0": 1, "vid_Temporal_1": PROSE, "vid_Temporal_2": None}


def test_sokbench_text_equals_the_hand_written_file(tmp_path):
    gt = write_json(tmp_path / "questions.json", SOKBENCH)
    responses = write_lines(tmp_path / "responses.jsonl", SOK_RESPONSES)
    pred = write_json(tmp_path / "pred.json", SOK_PRED)
    pq_text, pq_files = tmp_path / "text.jsonl", tmp_path / "files.jsonl"
    text = eval_json("sokbench", "--gt", gt, "--pred-text", responses, "--per-question", pq_text)
    files = eval_json("sokbench", "--gt", gt, "--pred", pred, "--per-question", pq_files)
    assert text["metrics"] == files["metrics"]
    rows = [json.loads(x) for x in pq_text.read_text().splitlines()]
    ref = [json.loads(x) for x in pq_files.read_text().splitlines()]
    assert [r["prediction"] for r in rows] == [r["prediction"] for r in ref]
    # by hand: 2 right (index 2), refusal -> BLEU, B right, prose -> BLEU picks
    # "bland" option 0 (right), null wrong
    assert [r["correct"] for r in rows] == [True, False, True, True, False]
    assert [r["method"] for r in rows] == ["index", "bleu", "index", "bleu", "missing"]
    parse = text["info"]["parse"]
    assert (parse["responses"], parse["answer_failures"]) == (5, 3)
    assert rows[1]["answer_parse"] == "failed: the response declines to choose an option"


def test_sokbench_ambiguous_text_goes_to_bleu_not_to_a_label(tmp_path):
    gt = write_json(tmp_path / "questions.json", {"Temporal": [_sok_question(SOK_CHOICES, 3)]})
    responses = write_lines(tmp_path / "responses.jsonl",
                            [{"key": "vid_Temporal_0", "response": "Answer: 0 or 3"}])
    pq = tmp_path / "pq.jsonl"
    eval_json("sokbench", "--gt", gt, "--pred-text", responses, "--per-question", pq)
    row = json.loads(pq.read_text())
    assert row["method"] == "bleu"
    assert row["answer_parse"] == "failed: ambiguous: answer_phrase names options A, D"


# ------------------------------------------------------------- WildQA evidence

def _wildqa_record(i: int, duration: float, span: list) -> dict:
    return {"question": f"q{i}", "answer": "a", "evidences": [{"0": span}], "duration": duration,
            "video_id": f"vid{i}", "alter_answers": ["b"], "alter_evidences": [[span]]}


WILDQA = [_wildqa_record(0, 60.0, [4.0, 12.0]), _wildqa_record(1, 120.0, [30.0, 40.0]),
          _wildqa_record(2, 30.0, [20.0, 30.0])]
WILDQA_RESPONSES = [{"response": "The evidence is at 00:05 - 00:12 and 0:40-0:50."},
                    {"response": "I could not find it."},
                    {"response": "[20, 40]"}]
# all spans of each response; none parsed: no evidence; clamped to the video
WILDQA_PRED = [[[5, 12], [40, 50]], [], [[20, 30]]]


@pytest.mark.parametrize("mode", ["wildqa-2022", "clean"])
def test_wildqa_text_equals_the_hand_written_file(tmp_path, mode):
    gt = write_json(tmp_path / "test.json", WILDQA)
    responses = write_lines(tmp_path / "responses.jsonl", WILDQA_RESPONSES)
    pred = write_json(tmp_path / "pred.json", WILDQA_PRED)
    text = eval_json("wildqa", "evidence", "--gt", gt, "--pred-text", responses, "--mode", mode)
    files = eval_json("wildqa", "evidence", "--gt", gt, "--pred", pred, "--mode", mode)
    assert text["metrics"] == files["metrics"]
    parse = text["info"]["parse"]
    assert (parse["responses"], parse["span_failures"]) == (3, 1)
    assert parse["failure_rule"]["span"].startswith("no evidence")


def test_wildqa_needs_one_line_per_question(tmp_path):
    gt = write_json(tmp_path / "test.json", WILDQA)
    responses = write_lines(tmp_path / "responses.jsonl", WILDQA_RESPONSES[:2])
    err = run_cli("eval", "wildqa", "evidence", "--gt", gt, "--pred-text", responses,
                  ok=False).stderr
    assert "has 2 responses but the ground truth" in err and "has 3 questions" in err


def test_real_nextgqa_responses_equal_the_official_files(shared_data, tmp_path):
    # Every test question of the real NExT-GQA files, answered in prose with
    # a letter and a span in seconds, against the same numbers written as the
    # official submission files (the gold answers from test.csv).
    import random

    from fastvqa.data.nextgqa import load_nextgqa
    from fastvqa.evaluation import nextgqa

    gt = shared_data / "nextgqa"
    rng = random.Random(3)
    responses, ground, qa = [], {}, {}
    for rec in load_nextgqa(gt, split="test"):
        a, b = sorted(min(round(rng.uniform(0, rec.duration), 1), rec.duration)
                      for _ in range(2))
        k = rng.randrange(5)
        responses.append({"key": rec.key, "response": f"After watching, the answer is "
                          f"({'ABCDE'[k]}). The moment is from {a}s to {b}s."})
        ground[rec.key] = [a, b]
        qa[rec.key] = {"prediction": k, "answer": rec.answer}
    text = nextgqa.evaluate(gt=gt, pred_text=write_lines(tmp_path / "r.jsonl", responses))
    files = nextgqa.evaluate(gt=gt, pred=write_json(tmp_path / "g.json", ground),
                             qa=write_json(tmp_path / "qa.json", qa))
    assert text.metrics == files.metrics
    assert text.info["parse"]["answer_failures"] == text.info["parse"]["span_failures"] == 0
    assert text.info["parse"]["responses"] == len(responses) == 5553
