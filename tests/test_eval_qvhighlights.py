# SPDX-License-Identifier: Apache-2.0
"""``fastvqa eval qvhighlights`` and ``fastvqa baseline qvhighlights ...``
through ``fastvqa.cli.main``, on small ground-truth files written to tmp_path
with hand-computed expected values."""

from __future__ import annotations

import json

import numpy as np
import pytest

from fastvqa.cli import main
from tests.reference.highlight import full_video_table, highlight_ref
from tests.reference.moment_retrieval import qvhighlights_ref

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
    sub.write_text(json.dumps({"qid": 1, "pred_relevant_windows": [[5, 1]]}) + "\n")
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


# --------------------------------------------------------------------------
# Highlight detection and odd windows on one synthetic pair of files
# --------------------------------------------------------------------------

# Windows in every length bucket (the official script fails on an empty
# one). q1 has a reversed window past the end ([152, 150] in 150 s), a
# reversed one inside, one starting before 0; q2's [14, 8] is as long
# (negatively) as its GT [2, 8], so the official union is 0 and IoU 0/0 =
# NaN, a match; q3's [58, 62] runs past its 60 s.
HL_GT = [
    {"qid": 1, "query": "a", "duration": 150, "vid": "v1",
     "relevant_windows": [[140, 150], [0, 10], [50, 90]],
     "relevant_clip_ids": [0, 1, 2, 70, 71, 74],
     "saliency_scores": [[4, 2, 0], [3, 3, 1], [1, 1, 1], [2, 4, 4], [0, 2, 3], [4, 4, 4]]},
    {"qid": 2, "query": "b", "duration": 20, "vid": "v2", "relevant_windows": [[2, 8]],
     "relevant_clip_ids": [1, 2, 3], "saliency_scores": [[1, 2, 3], [4, 4, 4], [2, 0, 2]]},
    {"qid": 3, "query": "c", "duration": 60, "vid": "v3", "relevant_windows": [[20, 40], [42, 44]],
     "relevant_clip_ids": [10, 11, 12, 13, 21],
     "saliency_scores": [[4, 4, 4], [4, 4, 4], [2, 3, 2], [0, 0, 0], [4, 3, 2]]},
]
HL_PRED = [
    {"qid": 1, "pred_relevant_windows": [[152, 150, 0.9], [140, 150, 0.8], [20, 10, 0.95],
                                         [-2, 10, 0.5], [60, 100, 0.5]],
     "pred_saliency_scores": [0.1, 0.9, 0.3, 0.9, 0.2]},
    {"qid": 2, "pred_relevant_windows": [[2, 8, 0.5], [10, 4, 0.7], [14, 8, 0.7]],
     "pred_saliency_scores": [0.0, 0.5, 0.5, 0.2, 0.1, 0.0, 0.0, 0.0, 0.0, 0.0, 0.3, 0.3]},
    {"qid": 3, "pred_relevant_windows": [[21, 41, 0.5], [44, 22, 0.9], [58, 62, 0.1]],
     "pred_saliency_scores": [0.2] * 10 + [0.9, 0.9, 0.1, 0.5] + [0.2] * 7 + [0.7] + [0.2] * 8},
]
# What the official standalone_eval (jayleicn/moment_detr eval_submission)
# printed for these two files, run once by hand; 2 decimals.
OFFICIAL_BRIEF = {
    "MR-full-R1@0.5": 66.67, "MR-full-R1@0.7": 66.67, "MR-full-mAP": 61.35,
    "MR-full-mAP@0.5": 66.85, "MR-full-mAP@0.75": 60.19, "MR-long-mAP": 6.0,
    "MR-middle-mAP": 45.0, "MR-short-mAP": 61.11, "HL-min-Fair-mAP": 60.89,
    "HL-min-Fair-Hit1": 100.0, "HL-min-Good-mAP": 59.27, "HL-min-Good-Hit1": 100.0,
    "HL-min-VeryGood-mAP": 51.85, "HL-min-VeryGood-Hit1": 33.33,
}
OUR_NAME = {"MR-full-R1@0.5": "R1@0.5", "MR-full-R1@0.7": "R1@0.7", "MR-full-mAP": "mAP",
            "MR-full-mAP@0.5": "mAP@0.5", "MR-full-mAP@0.75": "mAP@0.75"}


def _write(tmp_path, name, records):
    path = tmp_path / name
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def test_highlights_and_odd_windows_match_the_references(tmp_path, capsys):
    gt = _write(tmp_path, "gt.jsonl", HL_GT)
    sub = _write(tmp_path, "sub.jsonl", HL_PRED)
    assert main(["eval", "qvhighlights", "--pred", str(sub), "--gt", str(gt), "--json"]) == 0
    captured = capsys.readouterr()
    res = json.loads(captured.out)
    m = res["metrics"]
    # Highlights: the float64 loop reference on the same data.
    tables = [full_video_table(g["duration"], g["relevant_clip_ids"], g["saliency_scores"])
              for g in HL_GT]
    ref, _ = highlight_ref([p["pred_saliency_scores"] for p in HL_PRED], tables)
    for name, value in ref.items():
        assert m[name] == pytest.approx(value, rel=1e-12, abs=1e-12), name
    # Moment retrieval with the odd windows: the raw-number reference loop.
    mr = qvhighlights_ref({str(p["qid"]): p["pred_relevant_windows"] for p in HL_PRED},
                          {str(g["qid"]): g["relevant_windows"] for g in HL_GT})
    assert m["mAP"] == pytest.approx(mr["full"]["average"], rel=1e-12)
    assert m["R1@0.5"] == pytest.approx(mr["full"]["R1"]["0.5"], rel=1e-12)
    for bucket in ("short", "middle", "long"):
        assert m[f"MR-{bucket}-mAP"] == pytest.approx(mr[bucket]["average"], rel=1e-12)
    # And both agree with the official script's printed numbers.
    for name, value in OFFICIAL_BRIEF.items():
        assert round(m[OUR_NAME.get(name, name)], 2) == value, name
    # The odd windows are counted and reported.
    assert res["info"]["odd_spans"] == {"reversed": 5, "outside_video": 3, "items": 3}
    assert "5 predicted windows (in 3 queries) have end < start" in captured.err
    assert "--strict refuses them" in captured.err
    assert "3 predicted spans reach outside [0, duration]" in captured.err
    assert res["info"]["highlight"]["evaluated"] == 3


def test_highlight_per_question_columns(tmp_path, capsys):
    gt = _write(tmp_path, "gt.jsonl", HL_GT)
    sub = _write(tmp_path, "sub.jsonl", HL_PRED)
    pq = tmp_path / "pq.jsonl"
    assert main(["eval", "qvhighlights", "--pred", str(sub), "--gt", str(gt),
                 "--per-question", str(pq)]) == 0
    capsys.readouterr()
    rows = [json.loads(line) for line in pq.read_text().splitlines()]
    # q1: 75 clips, top clip 1 (the first 0.9); q3: top clip 10.
    assert [r["n_clips"] for r in rows] == [75, 10, 30]
    assert [r["top_clip"] for r in rows] == [1, 1, 10]
    # q1's clip 1 has scores [3, 3, 1]: a Fair and Good hit, not VeryGood.
    assert rows[0]["HL-Hit1-Good"] is True and rows[0]["HL-Hit1-VeryGood"] is False
    assert all(0.0 <= r["HL-AP-Fair"] <= 1.0 for r in rows)


def test_strict_refuses_odd_windows_with_one_line(tmp_path, capsys):
    gt = _write(tmp_path, "gt.jsonl", HL_GT)
    sub = _write(tmp_path, "sub.jsonl", HL_PRED)
    assert main(["eval", "qvhighlights", "--pred", str(sub), "--gt", str(gt), "--strict"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1
    assert "sub.jsonl" in err and "qid 1" in err and "[152.0, 150.0, 0.9] has end < start" in err
    assert "--strict refuses it" in err
    # Only past the end (not reversed): refused too, naming the video length.
    only_past = [dict(p, pred_relevant_windows=[w for w in p["pred_relevant_windows"]
                                                if w[0] <= w[1]]) for p in HL_PRED]
    sub2 = _write(tmp_path, "sub2.jsonl", only_past)
    assert main(["eval", "qvhighlights", "--pred", str(sub2), "--gt", str(gt), "--strict"]) == 2
    assert "reaches outside the video [0, 150] s" in capsys.readouterr().err
    # Clean windows pass --strict, with no warning.
    clean = [dict(p, pred_relevant_windows=[w for w in p["pred_relevant_windows"]
                                            if 0 <= w[0] <= w[1] <= g["duration"]])
             for p, g in zip(HL_PRED, HL_GT)]
    sub3 = _write(tmp_path, "sub3.jsonl", clean)
    assert main(["eval", "qvhighlights", "--pred", str(sub3), "--gt", str(gt), "--strict",
                 "--json"]) == 0
    captured = capsys.readouterr()
    assert "warning" not in captured.err
    assert json.loads(captured.out)["info"]["odd_spans"]["reversed"] == 0


def test_python_entry_strict_and_no_saliency(tmp_path):
    from fastvqa.data import DataFormatError
    from fastvqa.evaluation.qvhighlights import evaluate

    gt = _write(tmp_path, "gt.jsonl", HL_GT)
    sub = _write(tmp_path, "sub.jsonl", HL_PRED)
    with pytest.raises(DataFormatError, match="end < start"):
        evaluate(gt=gt, pred=sub, strict=True)
    # Without pred_saliency_scores there are no HL metrics.
    bare = _write(tmp_path, "bare.jsonl", [{k: v for k, v in p.items()
                                            if k != "pred_saliency_scores"} for p in HL_PRED])
    res = evaluate(gt=gt, pred=bare)
    assert not any(name.startswith("HL-") for name in res)
    assert np.isfinite(res["mAP"])


def test_highlight_input_errors(tmp_path, gt_file, capsys):
    # The module's GT: q2 has no saliency annotations.
    sub = _write(tmp_path, "sub.jsonl", [
        {"qid": 1, "pred_relevant_windows": [[0, 8, 1.0]], "pred_saliency_scores": [0.5]},
        {"qid": 2, "pred_relevant_windows": [[40, 100, 1.0]], "pred_saliency_scores": [0.5]}])
    assert main(["eval", "qvhighlights", "--pred", str(sub), "--gt", str(gt_file)]) == 2
    err = capsys.readouterr().err
    assert "gt.jsonl" in err and "qid 2" in err and "relevant_clip_ids" in err
    bad = _write(tmp_path, "bad.jsonl", [
        {"qid": 1, "pred_relevant_windows": [[0, 8, 1.0]], "pred_saliency_scores": ["x"]}])
    assert main(["eval", "qvhighlights", "--pred", str(bad), "--gt", str(gt_file),
                 "--partial"]) == 2
    assert "field 'pred_saliency_scores'" in capsys.readouterr().err
    # Saliency for some queries only: refused, unless --partial.
    gt = _write(tmp_path, "hl_gt.jsonl", HL_GT)
    some = _write(tmp_path, "some.jsonl", [HL_PRED[0]] + [
        {k: v for k, v in p.items() if k != "pred_saliency_scores"} for p in HL_PRED[1:]])
    assert main(["eval", "qvhighlights", "--pred", str(some), "--gt", str(gt)]) == 2
    assert "2 ground-truth queries have none (e.g. qid 2)" in capsys.readouterr().err
    res = run_json(capsys, "--pred", str(some), "--gt", str(gt), "--partial")
    assert res["info"]["highlight"]["evaluated"] == 1 and res["info"]["evaluated"] == 3
