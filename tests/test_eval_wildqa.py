# SPDX-License-Identifier: Apache-2.0
"""``fastvqa baseline wildqa ...`` -> ``fastvqa eval wildqa evidence|qa``
round trips through ``fastvqa.cli.main`` on the real files, checked against the
paper's numbers and the plain-Python references."""

from __future__ import annotations

import json

import pytest

from fastvqa.cli import main
from tests.reference.wildqa import iou_f1_2022, iou_f1_2023, rouge_ref


@pytest.fixture
def gt(shared_data):
    return shared_data / "wildqa"


def run_json(capsys, *argv):
    assert main(list(argv)) == 0
    out = capsys.readouterr().out
    return json.loads(out)


def baseline(capsys, *argv):
    assert main(["baseline", *argv]) == 0
    capsys.readouterr()


def raw_test(gt):
    with open(gt / "test.json") as f:
        return json.load(f)


def test_common_baseline_round_trip(gt, tmp_path, capsys):
    out = tmp_path / "common.json"
    baseline(capsys, "wildqa", "qa", "common", "--gt", str(gt / "test.json"), "--out", str(out))
    preds = json.loads(out.read_text())
    assert preds == ["Yes"] * 652  # the most common dev answer
    result = run_json(capsys, "eval", "wildqa", "qa", "--pred", str(out), "--gt", str(gt), "--json")
    metrics = result["metrics"]
    # Table 4, "Common": 10.6 / 0.0 / 10.6.
    assert [round(metrics[k], 1) for k in ("ROUGE-1", "ROUGE-2", "ROUGE-L")] == [10.6, 0.0, 10.6]
    assert result["benchmark"] == "wildqa qa" and result["info"]["references"] == "primary"
    best = run_json(capsys, "eval", "wildqa", "qa", "--pred", str(out), "--gt", str(gt), "--json",
                    "--references", "max")["metrics"]
    assert round(best["ROUGE-1"], 1) == 12.0


def test_random_answer_baseline_is_seeded_and_near_the_paper(gt, tmp_path, capsys):
    paths = [tmp_path / f"r{i}.json" for i in range(3)]
    for path, seed in zip(paths, ("42", "42", "7")):
        baseline(capsys, "wildqa", "qa", "random", "--gt", str(gt / "test.json"),
                 "--out", str(path), "--seed", seed)
    a, b, c = (json.loads(p.read_text()) for p in paths)
    assert a == b and a != c and len(a) == 652
    dev_answers = {q["answer"] for q in json.loads((gt / "dev.json").read_text())}
    assert set(a) <= dev_answers
    metrics = run_json(capsys, "eval", "wildqa", "qa", "--pred", str(paths[0]), "--gt",
                       str(gt / "test.json"), "--json")["metrics"]
    refs = [[q["answer"]] for q in raw_test(gt)]
    expected, _ = rouge_ref(a, refs)
    assert metrics["ROUGE-1"] == pytest.approx(expected["ROUGE-1"], rel=1e-12)
    assert metrics["ROUGE-L"] == pytest.approx(expected["ROUGE-L"], rel=1e-12)
    # Table 4, "Random": 5.0 ± 0.2 / 0.5 ± 0.1 / 4.9 ± 0.2 over 3 runs; one
    # seeded run stays within a few standard deviations.
    assert 3.5 < metrics["ROUGE-1"] < 6.5 and metrics["ROUGE-2"] < 1.5
    # Averaged over six seeds (one seed's std is about 0.42 for ROUGE-1).
    from fastvqa.metrics import rouge

    r1 = []
    for seed in range(6):
        path = tmp_path / f"seed{seed}.json"
        baseline(capsys, "wildqa", "qa", "random", "--gt", str(gt / "test.json"),
                 "--out", str(path), "--seed", str(seed))
        r1.append(rouge(json.loads(path.read_text()), refs)["ROUGE-1"])
    assert 5.0 - 0.7 < sum(r1) / len(r1) < 5.0 + 0.7


def test_random_evidence_baseline_round_trip(gt, tmp_path, capsys):
    out = tmp_path / "spans.json"
    baseline(capsys, "wildqa", "evidence", "random", "--gt", str(gt / "test.json"),
             "--out", str(out), "--seed", "42")
    preds = json.loads(out.read_text())
    questions = raw_test(gt)
    assert len(preds) == len(questions)
    for spans, q in zip(preds, questions):
        assert len(spans) == 5  # span_prediction_count
        assert all(0 <= s <= e <= q["duration"] for s, e in spans)
    golds = [[v for ev in q["evidences"] for v in ev.values()] for q in questions]
    alternatives = [q["alter_evidences"] for q in questions]

    result = run_json(capsys, "eval", "wildqa", "evidence", "--pred", str(out), "--gt",
                      str(gt / "test.json"), "--json")
    assert result["info"]["mode"] == "wildqa-2022"
    _, expected = iou_f1_2022(preds, golds)
    assert result["metrics"]["IoU-F1"] == pytest.approx(expected, rel=1e-12)

    padded = run_json(capsys, "eval", "wildqa", "evidence", "--pred", str(out), "--gt",
                      str(gt / "test.json"), "--json", "--pad-to-batch", "32")
    _, expected_padded = iou_f1_2022(preds, golds, pad_to_batch=32)
    assert padded["metrics"]["IoU-F1"] == pytest.approx(expected_padded, rel=1e-12)
    assert padded["metrics"]["IoU-F1"] < result["metrics"]["IoU-F1"]

    head = run_json(capsys, "eval", "wildqa", "evidence", "--pred", str(out), "--gt", str(gt),
                    "--json", "--mode", "wildqa-2023", "--threshold", "0.1",
                    "--thresholds", "0.5")
    _, expected_01 = iou_f1_2023(preds, golds, alternatives, threshold=0.1)
    _, expected_05 = iou_f1_2023(preds, golds, alternatives, threshold=0.5)
    assert head["metrics"]["IoU-F1"] == pytest.approx(expected_01, rel=1e-12)
    assert head["metrics"]["IoU-F1@0.5"] == pytest.approx(expected_05, rel=1e-12)

    # the raw file with the filter gives the same alternatives, so the same score
    raw = run_json(capsys, "eval", "wildqa", "evidence", "--pred", str(out), "--gt", str(gt),
                   "--split", "raw_test", "--evidence-filter", "--json", "--mode",
                   "wildqa-2023", "--threshold", "0.1")
    assert raw["metrics"]["IoU-F1"] == head["metrics"]["IoU-F1"]


def test_oracle_scores_100_under_clean(gt, tmp_path, capsys):
    pred = tmp_path / "oracle.json"
    golds = [[v for ev in q["evidences"] for v in ev.values()] for q in raw_test(gt)]
    pred.write_text(json.dumps(golds))
    clean = run_json(capsys, "eval", "wildqa", "evidence", "--pred", str(pred), "--gt",
                     str(gt / "test.json"), "--json", "--mode", "clean")
    assert clean["metrics"]["IoU-F1"] == 100.0
    # 2022 rounds to whole seconds: the spans that round to an empty range can
    # never match, so even the oracle stays below 100.
    paper = run_json(capsys, "eval", "wildqa", "evidence", "--pred", str(pred), "--gt",
                     str(gt / "test.json"), "--json")
    _, expected = iou_f1_2022(golds, golds)
    assert paper["metrics"]["IoU-F1"] == pytest.approx(expected, rel=1e-12)
    assert paper["metrics"]["IoU-F1"] < 100.0


def test_table_per_question_and_plot(gt, tmp_path, capsys):
    pred = tmp_path / "spans.json"
    pred.write_text(json.dumps([[[0, 10]]] * 264))
    per_q, png = tmp_path / "pq.csv", tmp_path / "ev.png"
    assert main(["eval", "wildqa", "evidence", "--pred", str(pred), "--gt", str(gt), "--split",
                 "dev", "--per-question", str(per_q), "--plot", str(png)]) == 0
    out = capsys.readouterr().out
    assert "IoU-F1" in out and "wildqa-2022" in out
    lines = per_q.read_text().splitlines()
    assert len(lines) == 265 and lines[0].startswith("index,F1,")
    assert "key" in lines[0] and "duration" in lines[0]
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"

    answers, qa_png = tmp_path / "answers.json", tmp_path / "qa.png"
    answers.write_text(json.dumps(["yes"] * 264))
    assert main(["eval", "wildqa", "qa", "--pred", str(answers), "--gt", str(gt / "dev.json"),
                 "--plot", str(qa_png)]) == 0
    assert qa_png.read_bytes()[:4] == b"\x89PNG"


def test_length_mismatch_names_both_counts(gt, tmp_path, capsys):
    pred = tmp_path / "short.json"
    pred.write_text(json.dumps([[]] * 10))
    assert main(["eval", "wildqa", "evidence", "--pred", str(pred), "--gt",
                 str(gt / "test.json")]) == 2
    err = capsys.readouterr().err
    assert "short.json" in err and "10 predictions" in err and "652 questions" in err
    answers = tmp_path / "answers.json"
    answers.write_text(json.dumps(["Yes"] * 652))
    assert main(["eval", "wildqa", "qa", "--pred", str(answers), "--gt", str(gt / "dev.json")]) == 2
    err = capsys.readouterr().err
    assert "652 predictions" in err and "264 questions" in err


@pytest.mark.parametrize("bench, content, message", [
    ("wildqa evidence", "{\"a\": 1}", "expected a JSON list"),
    ("wildqa evidence", "[[[0, 1]], [[2]]]", "record 1: field '[0]': expected [start, end]"),
    ("wildqa evidence", "[[[0, 1]], [0, 1]]",
     "record 1: expected a list of [start, end] spans, got the single"),
    ("wildqa evidence", "[[[0, 1]], [[NaN, 1]]]", "finite"),
    ("wildqa evidence", "[[", "not valid JSON"),
    ("wildqa qa", "[\"yes\", 3]", "record 1: expected an answer string"),
])
def test_bad_prediction_files(tmp_path, capsys, bench, content, message):
    gt = tmp_path / "test.json"
    q = {"question": "q", "answer": "yes", "evidences": [{"0": [0.0, 1.0]}], "duration": 10.0,
         "video_id": "v"}
    gt.write_text(json.dumps([q, q]))
    pred = tmp_path / "bad.json"
    pred.write_text(content)
    assert main(["eval", *bench.split(), "--pred", str(pred), "--gt", str(gt)]) == 2
    err = capsys.readouterr().err
    assert "bad.json" in err and message in err


def test_option_errors(gt, tmp_path, capsys):
    pred = tmp_path / "p.json"
    pred.write_text(json.dumps([[]] * 652))
    assert main(["eval", "wildqa", "evidence", "--pred", str(pred), "--gt", str(gt),
                 "--mode", "clean", "--pad-to-batch", "32"]) == 2
    assert "--pad-to-batch" in capsys.readouterr().err
    assert main(["eval", "wildqa", "evidence", "--pred", str(pred), "--gt", str(gt),
                 "--split", "nope"]) == 2
    assert "nope.json does not exist" in capsys.readouterr().err
    with pytest.raises(SystemExit):  # argparse rejects a threshold outside [0, 1]
        main(["eval", "wildqa", "evidence", "--pred", str(pred), "--gt", str(gt),
              "--threshold", "2"])
    capsys.readouterr()
    lone = tmp_path / "alone" / "test.json"  # no dev.json beside it
    lone.parent.mkdir()
    lone.write_text((gt / "test.json").read_text())
    out = tmp_path / "c.json"
    assert main(["baseline", "wildqa", "qa", "common", "--gt", str(lone), "--out", str(out)]) == 2
    assert "dev.json" in capsys.readouterr().err  # no training split beside the file


def test_odd_evidence_spans_scored_as_official_with_warning_and_strict(tmp_path, capsys):
    # Two questions, gold [0, 4] in a 10 s video. q0 predicts [4, 0]
    # (reversed: empty, matches nothing: F1 0) and [0, 4] (a match: P 1/2,
    # R 1, F1 2/3); q1 predicts [0, 12], past the end, scored raw: IoU
    # 4/12 < 0.5, F1 0. IoU-F1 = mean(2/3, 0) = 1/3 (clean mode).
    gt = tmp_path / "test.json"
    q = {"question": "q", "answer": "yes", "evidences": [{"0": [0.0, 4.0]}], "duration": 10.0,
         "video_id": "v"}
    gt.write_text(json.dumps([q, q]))
    pred = tmp_path / "pred.json"
    pred.write_text(json.dumps([[[4, 0], [0, 4]], [[0, 12]]]))
    argv = ["eval", "wildqa", "evidence", "--pred", str(pred), "--gt", str(gt), "--mode",
            "clean"]
    got = run_json(capsys, *argv, "--json")
    assert got["metrics"]["IoU-F1"] == pytest.approx(100 / 3)
    assert got["info"]["odd_spans"] == {"reversed": 1, "outside_video": 1, "items": 2}
    assert any("end < start; they are empty and match nothing" in w
               for w in got["info"]["warnings"])
    assert main([*argv, "--strict"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1
    assert "pred.json" in err and "record 0" in err and "[4.0, 0.0] has end < start" in err
