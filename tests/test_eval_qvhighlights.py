# SPDX-License-Identifier: Apache-2.0
"""``fastvqa eval qvhighlights`` and ``fastvqa baseline qvhighlights ...``
through ``fastvqa.cli.main``, on small ground-truth files written to tmp_path
with hand-computed expected values."""

from __future__ import annotations

import json

import pytest

from fastvqa.cli import main

# q1: GT [0, 8] and [20, 40] in a 150 s video; q2: GT [40, 100] in a 100 s video.
GT = [
    {"qid": 1, "query": "a man", "duration": 150, "vid": "v1",
     "relevant_windows": [[0, 8], [20, 40]], "relevant_clip_ids": [0, 1, 2, 3, 10],
     "saliency_scores": [[1, 2, 3]] * 5},
    {"qid": 2, "query": "a dog", "duration": 100, "vid": "v2", "relevant_windows": [[40, 100]]},
]


@pytest.fixture
def gt_file(tmp_path):
    path = tmp_path / "gt.jsonl"
    path.write_text("".join(json.dumps(g) + "\n" for g in GT))
    return path


def run_json(capsys, *argv):
    assert main(["eval", "qvhighlights", *argv, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_full_video_baseline_round_trip(tmp_path, gt_file, capsys):
    out = tmp_path / "fv.json"
    assert main(["baseline", "qvhighlights", "full-video", "--gt", str(gt_file),
                 "--out", str(out)]) == 0
    capsys.readouterr()
    sub = json.loads(out.read_text())
    assert sub == [
        {"qid": 1, "query": "a man", "vid": "v1", "pred_relevant_windows": [[0.0, 150.0, 1.0]]},
        {"qid": 2, "query": "a dog", "vid": "v2", "pred_relevant_windows": [[0.0, 100.0, 1.0]]},
    ]
    res = run_json(capsys, "--pred", str(out), "--gt", str(gt_file))
    m = res["metrics"]
    # q1: [0, 150] has IoU 8/150 and 20/150 -> R1 IoU 0.133, AP 0 everywhere.
    # q2: [0, 100] vs [40, 100]: IoU 0.6 -> R1@0.5 hit, R1@0.7 miss; AP 1 at
    # t = 0.5, 0.55, 0.6 -> 0.3. mAP = (0 + 0.3) / 2.
    assert res["benchmark"] == "qvhighlights"
    assert m["R1@0.5"] == 50.0 and m["R1@0.7"] == 0.0
    assert m["mAP@0.5"] == 50.0 and m["mAP@0.75"] == 0.0
    assert m["mAP"] == pytest.approx(15.0, abs=1e-12)
    # Buckets: short = q1 vs [0, 8]; middle = q1 vs [20, 40]; long = q2: 0.3.
    assert m["MR-short-mAP"] == 0.0 and m["MR-middle-mAP"] == 0.0
    assert m["MR-long-mAP"] == pytest.approx(30.0, abs=1e-12)
    assert res["info"]["evaluated"] == 2


def test_jsonl_submission_table_per_question_and_plot(tmp_path, gt_file, capsys):
    sub = tmp_path / "sub.jsonl"
    sub.write_text(
        json.dumps({"qid": 2, "pred_relevant_windows": [[40, 100, 0.9], [0, 10, 0.8]]}) + "\n"
        + json.dumps({"qid": 1, "pred_relevant_windows": [[20, 40, 0.3], [0, 8, 0.7]]}) + "\n")
    pq = tmp_path / "pq.jsonl"
    png = tmp_path / "plot.png"
    assert main(["eval", "qvhighlights", "--pred", str(sub), "--gt", str(gt_file),
                 "--per-question", str(pq), "--plot", str(png), "--decimals", "2"]) == 0
    out = capsys.readouterr().out
    # Every window is exact: R1 100; q2's second window is a FP after a TP
    # (AP 1), q1's two windows match both GT windows (AP 1).
    assert "qvhighlights" in out and "100.00" in out
    rows = [json.loads(line) for line in pq.read_text().splitlines()]
    assert [r["key"] for r in rows] == ["2", "1"]
    assert [r["IoU"] for r in rows] == [1.0, 1.0]
    assert [r["AP"] for r in rows] == [1.0, 1.0]
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    # Nothing is overwritten.
    assert main(["eval", "qvhighlights", "--pred", str(sub), "--gt", str(gt_file),
                 "--per-question", str(pq)]) == 2
    assert "refusing to overwrite" in capsys.readouterr().err


def test_max_pred_windows_option(tmp_path, gt_file, capsys):
    # Two junk windows before the right one: with N = 2 the right one is cut.
    sub = tmp_path / "sub.json"
    sub.write_text(json.dumps([
        {"qid": 1, "pred_relevant_windows": [[100, 110, 0.9], [120, 130, 0.9], [20, 40, 1.0]]},
        {"qid": 2, "pred_relevant_windows": [[40, 100, 1.0]]},
    ]))
    args = ["--pred", str(sub), "--gt", str(gt_file)]
    # q1 keeps all: TP first (AP 1/2: one of two GT windows); q2: AP 1.
    assert run_json(capsys, *args)["metrics"]["mAP"] == pytest.approx(75.0, abs=1e-12)
    assert run_json(capsys, *args, "--max-pred-windows", "2")["metrics"]["mAP"] == 50.0
    assert run_json(capsys, *args, "--max-pred-windows", "0")["metrics"]["mAP"] == pytest.approx(
        75.0, abs=1e-12)


def test_qid_mismatch_and_partial(tmp_path, gt_file, capsys):
    sub = tmp_path / "sub.jsonl"
    sub.write_text(json.dumps({"qid": 2, "pred_relevant_windows": [[40, 100, 1.0]]}) + "\n")
    args = ["eval", "qvhighlights", "--pred", str(sub), "--gt", str(gt_file)]
    assert main(args) == 2
    err = capsys.readouterr().err
    assert "sub.jsonl" in err and "qid" in err and "1 without a prediction" in err
    res = run_json(capsys, "--pred", str(sub), "--gt", str(gt_file), "--partial")
    assert res["metrics"]["mAP"] == 100.0
    assert res["info"]["evaluated"] == 1 and res["info"]["missing"] == 1


def test_malformed_files_give_one_line_errors(tmp_path, gt_file, capsys):
    sub = tmp_path / "sub.jsonl"
    sub.write_text(json.dumps({"qid": 1, "pred_relevant_windows": [[5, 1, 0.3]]}) + "\n")
    assert main(["eval", "qvhighlights", "--pred", str(sub), "--gt", str(gt_file)]) == 2
    err = capsys.readouterr().err
    assert "sub.jsonl: record 'line 1 (qid 1)': field 'pred_relevant_windows'" in err
    bad_gt = tmp_path / "bad_gt.jsonl"
    bad_gt.write_text(json.dumps({"qid": 1, "vid": "v", "duration": 10}) + "\n")
    assert main(["eval", "qvhighlights", "--pred", str(sub), "--gt", str(bad_gt)]) == 2
    err = capsys.readouterr().err
    assert "bad_gt.jsonl: record 'line 1 (qid 1)': field 'query': missing" in err
    no_windows = tmp_path / "test_release.jsonl"
    no_windows.write_text(json.dumps({"qid": 1, "query": "q", "vid": "v", "duration": 10}) + "\n")
    ok_sub = tmp_path / "ok.jsonl"
    ok_sub.write_text(json.dumps({"qid": 1, "pred_relevant_windows": [[0, 1, 1.0]]}) + "\n")
    assert main(["eval", "qvhighlights", "--pred", str(ok_sub), "--gt", str(no_windows)]) == 2
    assert "no relevant_windows" in capsys.readouterr().err
    assert main(["eval", "qvhighlights", "--pred", str(tmp_path / "none.jsonl"),
                 "--gt", str(gt_file)]) == 2
    assert "does not exist" in capsys.readouterr().err


def test_bad_option_value(gt_file, capsys):
    with pytest.raises(SystemExit):
        main(["eval", "qvhighlights", "--pred", "x", "--gt", str(gt_file),
              "--max-pred-windows", "-1"])
    assert "expected an integer >= 0" in capsys.readouterr().err


def test_centre_half_and_random_baselines(tmp_path, gt_file, capsys):
    centre = tmp_path / "centre.json"
    assert main(["baseline", "qvhighlights", "centre-half", "--gt", str(gt_file),
                 "--out", str(centre)]) == 0
    windows = [d["pred_relevant_windows"] for d in json.loads(centre.read_text())]
    assert windows == [[[37.5, 112.5, 1.0]], [[25.0, 75.0, 1.0]]]
    outs = []
    for name, seed in (("r1.json", "3"), ("r2.json", "3"), ("r3.json", "4")):
        path = tmp_path / name
        assert main(["baseline", "qvhighlights", "random", "--gt", str(gt_file),
                     "--out", str(path), "--seed", seed]) == 0
        outs.append(json.loads(path.read_text()))
    assert outs[0] == outs[1] and outs[0] != outs[2]
    for d, g in zip(outs[0], GT):
        s, e, score = d["pred_relevant_windows"][0]
        assert 0.0 <= s <= e <= g["duration"] and score == 1.0
    capsys.readouterr()
    res = run_json(capsys, "--pred", str(tmp_path / "r1.json"), "--gt", str(gt_file))
    assert 0.0 <= res["metrics"]["mAP"] <= 100.0
    # The baseline refuses to overwrite its output.
    assert main(["baseline", "qvhighlights", "random", "--gt", str(gt_file),
                 "--out", str(tmp_path / "r1.json")]) == 2
