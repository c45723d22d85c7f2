# SPDX-License-Identifier: Apache-2.0
"""``fastvqa eval nextgqa|deveqa`` and ``fastvqa baseline nextgqa|deveqa``
through ``fastvqa.cli.main``.

Expected numbers: the published reference values on the real NExT-GQA files
(docs/papers/deveqa.md §3.3, docs/anchors/eval.md §2.2) and hand computation
for the small synthetic files.
"""

from __future__ import annotations

import json
import random

import pytest

from fastvqa.cli import main

ORDER = ["mIoP", "IoP@0.3", "IoP@0.5", "mIoU", "IoU@0.3", "IoU@0.5"]
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def cli_json(capsys, *argv) -> dict:
    assert main(["eval", *argv, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def cli_error(capsys, *argv) -> str:
    assert main(list(argv)) == 2
    return capsys.readouterr().err


def rounded(metrics, names=ORDER, decimals=2):
    return [round(metrics[n], decimals) for n in names]


# ---------------------------------------------------------------- real files


def test_real_full_video_and_centre_half_baselines(shared_data, tmp_path, capsys):
    gt = str(shared_data / "nextgqa")
    for name, want in (("full-video", [21.14, 20.57, 8.68, 21.14, 20.57, 8.68]),
                       ("centre-half", [22.85, 28.18, 14.78, 18.90, 25.18, 11.99])):
        out = tmp_path / f"{name}.json"
        assert main(["baseline", "nextgqa", name, "--gt", gt, "--out", str(out)]) == 0
        capsys.readouterr()
        preds = json.loads(out.read_text())
        assert len(preds) == 5553
        got = cli_json(capsys, "nextgqa", "--gt", gt, "--pred", str(out))
        assert rounded(got["metrics"]) == want
        assert got["info"]["evaluated"] == 5553 and got["info"]["missing"] == 0


def test_real_golden_random_line_through_files(shared_data, tmp_path, capsys):
    # eval.md §2.2 recipe, written as the official submission files.
    gsub = json.loads((shared_data / "nextgqa" / "gsub_test.json").read_text())
    rng = random.Random(0)
    ground, qa = {}, {}
    for vid, entry in gsub.items():
        for qid in entry["location"]:
            a = round(rng.uniform(0, entry["duration"]), 1)
            b = round(rng.uniform(0, entry["duration"]), 1)
            ground[f"{vid}_{qid}"] = sorted([a, b])
            qa[f"{vid}_{qid}"] = {"answer": rng.randrange(5), "prediction": rng.randrange(5)}
    (tmp_path / "ground.json").write_text(json.dumps(ground))
    (tmp_path / "qa.json").write_text(json.dumps(qa))
    argv = ["nextgqa", "--gt", str(shared_data / "nextgqa"), "--pred",
            str(tmp_path / "ground.json"), "--qa", str(tmp_path / "qa.json")]
    got = cli_json(capsys, *argv)
    line = " ".join(f"{got['metrics'][n]:.1f}" for n in ["Acc@GQA", *ORDER])
    assert line == "3.9 22.7 27.4 18.1 14.2 18.9 8.0"
    # the QA file's own "answer" is the gold one (the official rule), even
    # where it disagrees with test.csv
    assert got["info"]["qa_answers_differing_from_gt"] > 4000
    # the readable table: one decimal by default, same values
    assert main(["eval", *argv]) == 0
    table = capsys.readouterr().out.splitlines()
    assert table[1].split() == ["Acc@QA", "Acc@GQA", *ORDER]
    assert table[2].split()[1:] == line.split()


def test_real_random_baselines_round_trip(shared_data, tmp_path, capsys):
    gt = str(shared_data / "nextgqa")
    files = {}
    for name, seed in (("random-span", 0), ("random-span", 1), ("random-answer", 0)):
        out = tmp_path / f"{name}-{seed}.json"
        assert main(["baseline", "nextgqa", name, "--gt", gt, "--out", str(out),
                     "--seed", str(seed)]) == 0
        files[(name, seed)] = out
    capsys.readouterr()
    span0 = json.loads(files[("random-span", 0)].read_text())
    assert span0 != json.loads(files[("random-span", 1)].read_text())
    assert all(s <= e for s, e in span0.values())
    qa = json.loads(files[("random-answer", 0)].read_text())
    assert set(qa) == set(span0) and {v["prediction"] for v in qa.values()} == set(range(5))
    got = cli_json(capsys, "nextgqa", "--gt", gt, "--pred", str(files[("random-span", 0)]),
                   "--qa", str(files[("random-answer", 0)]))
    assert got["info"]["qa_answers_differing_from_gt"] == 0  # answers from test.csv
    assert 15 < got["metrics"]["Acc@QA"] < 25
    # same seed, same file
    again = tmp_path / "again.json"
    assert main(["baseline", "nextgqa", "random-span", "--gt", gt, "--out", str(again)]) == 0
    assert json.loads(again.read_text()) == span0


def test_real_normalized_full_video(shared_data, tmp_path, capsys):
    gsub = json.loads((shared_data / "nextgqa" / "gsub_test.json").read_text())
    pred = {f"{v}_{q}": [0, 1] for v, e in gsub.items() for q in e["location"]}
    (tmp_path / "n.json").write_text(json.dumps(pred))
    got = cli_json(capsys, "nextgqa", "--gt", str(shared_data / "nextgqa"), "--pred",
                   str(tmp_path / "n.json"), "--normalized")
    assert rounded(got["metrics"]) == [21.14, 20.57, 8.68, 21.14, 20.57, 8.68]
    assert got["info"]["normalized"] is True


# -------------------------------------------------------------- synthetic files

GSUB = {"v1": {"duration": 20, "fps": 30.0,
               "location": {"0": [[0, 10], [20, 22]], "1": [[0, 10]], "2": [[5, 6]]}}}
CSV = ("video_id,frame_count,width,height,question,answer,qid,type,a0,a1,a2,a3,a4\n"
       "v1,600,320,240,q0,b,0,CW,a,b,c,d,e\n"
       "v1,600,320,240,q1,c,1,CH,a,b,c,d,e\n"
       "v1,600,320,240,q2,a,2,TN,a,b,c,d,e\n")


@pytest.fixture
def folder(tmp_path):
    gt = tmp_path / "gt"
    gt.mkdir()
    (gt / "gsub_test.json").write_text(json.dumps(GSUB))
    (gt / "test.csv").write_text(CSV)
    return gt


def _files(tmp_path, pred, qa=None):
    (tmp_path / "pred.json").write_text(json.dumps(pred))
    argv = ["--pred", str(tmp_path / "pred.json")]
    if qa is not None:
        (tmp_path / "qa.json").write_text(json.dumps(qa))
        argv += ["--qa", str(tmp_path / "qa.json")]
    return argv


def test_hand_case_with_skipped_question(folder, tmp_path, capsys):
    # q0: [19,23] vs [[0,10],[20,22]] -> IoU .5 IoP .5, answer right (measured line)
    # q1: [5,15] vs [0,10] -> IoU 1/3, IoP .5, answer wrong; q2: no span -> skipped
    argv = _files(tmp_path, {"v1_0": [19, 23], "v1_1": [5, 15], "other_9": [0, 1]},
                  {"v1_0": {"prediction": 1, "answer": 1}, "v1_1": {"prediction": 0, "answer": 2},
                   "v1_2": {"prediction": 0, "answer": 0}})
    got = cli_json(capsys, "nextgqa", "--gt", str(folder), *argv)
    m = got["metrics"]
    assert m["Acc@QA"] == pytest.approx(200 / 3)
    assert m["Acc@GQA"] == 50.0
    assert (m["mIoP"], m["IoP@0.5"], m["IoU@0.3"], m["IoU@0.5"]) == (50.0, 100.0, 100.0, 50.0)
    assert m["mIoU"] == pytest.approx((0.5 + 1 / 3) / 2 * 100)
    assert got["info"]["evaluated"] == 2 and got["info"]["missing"] == 1
    assert got["info"]["unmatched_predictions"] == 1


def test_odd_spans_scored_as_official_with_warning_and_strict(folder, tmp_path, capsys):
    # q0: reversed [10, 0] -> IoU = IoP = 0 (official signed intersection);
    # q1: [0, 25] runs past the 20 s video, scored raw: IoU 10/25, IoP 10/25;
    # q2: [5, 6] exact. mIoU = (0 + 0.4 + 1) / 3.
    argv = _files(tmp_path, {"v1_0": [10, 0], "v1_1": [0, 25], "v1_2": [5, 6]})
    got = cli_json(capsys, "nextgqa", "--gt", str(folder), *argv)
    assert got["metrics"]["mIoU"] == pytest.approx(140 / 3)
    assert got["metrics"]["mIoP"] == pytest.approx(140 / 3)
    assert got["info"]["odd_spans"] == {"reversed": 1, "outside_video": 1, "items": 2}
    warnings = got["info"]["warnings"]
    assert any("1 predicted span has end < start; they score IoU = IoP = 0" in w
               for w in warnings)
    assert any("1 predicted span reaches outside [0, duration]" in w for w in warnings)
    err = cli_error(capsys, "eval", "nextgqa", "--gt", str(folder), *argv, "--strict")
    assert len(err.strip().splitlines()) == 1
    assert "'v1_0'" in err and "[10.0, 0.0] has end < start" in err
    # Under the DeVE-QA repository's rules the reversed span becomes [10, 10]:
    # zero length, IoP 0 there; the warning says so.
    dev = tmp_path / "dev.json"
    dev.write_text(json.dumps([{"qid": "a", "video_id": "v", "duration": 20,
                                "question": "q", "options": ["x", "y"], "answer": 0,
                                "span": [2, 8]}]))
    pred = tmp_path / "devpred.json"
    pred.write_text(json.dumps({"a": [8, 2]}))
    got = cli_json(capsys, "deveqa", "--gt", str(dev), "--pred", str(pred),
                   "--mode", "deveqa-repo")
    assert got["metrics"]["mIoU"] == 0.0
    assert any("made [start, start]" in w for w in got["info"]["warnings"])
    # Clean spans: no warning, and --strict passes.
    argv = _files(tmp_path, {"v1_0": [0, 10], "v1_1": [0, 10], "v1_2": [5, 6]})
    got = cli_json(capsys, "nextgqa", "--gt", str(folder), *argv, "--strict")
    assert got["info"]["odd_spans"]["items"] == 0 and "warnings" not in got["info"]


def test_per_question_file_and_refusal_to_overwrite(folder, tmp_path, capsys):
    argv = ["eval", "nextgqa", "--gt", str(folder),
            *_files(tmp_path, {"v1_0": [19, 23], "v1_2": [5, 5]})]
    out = tmp_path / "pq.jsonl"
    assert main([*argv, "--per-question", str(out)]) == 0
    rows = [json.loads(x) for x in out.read_text().splitlines()]
    assert [r["key"] for r in rows] == ["v1_0", "v1_1", "v1_2"]
    assert rows[0]["IoU"] == 0.5 and rows[0]["evaluated"] is True
    assert rows[1]["IoU"] is None and rows[1]["evaluated"] is False  # skipped
    assert rows[2]["IoP"] == 1.0 and rows[2]["duration"] == 20.0  # point inside [5, 6]
    before = out.read_text()
    capsys.readouterr()
    err = cli_error(capsys, *argv, "--per-question", str(out))
    assert "exists; refusing to overwrite" in err and out.read_text() == before
    csv_out = tmp_path / "pq.csv"
    assert main([*argv, "--per-question", str(csv_out)]) == 0
    assert csv_out.read_text().splitlines()[0] == \
        "key,IoU,IoP,evaluated,duration,prediction,ground_truth,question_type"


def test_plots(folder, tmp_path, capsys):
    argv = ["eval", "nextgqa", "--gt", str(folder),
            *_files(tmp_path, {"v1_0": [19, 23], "v1_1": [5, 15]},
                    {"v1_0": {"prediction": 1, "answer": 1},
                     "v1_1": {"prediction": 1, "answer": 2}})]
    summary, timeline = tmp_path / "s.png", tmp_path / "t.png"
    assert main([*argv, "--plot", str(summary), "--length-bins", "0,10,30"]) == 0
    assert main([*argv, "--plot", str(timeline), "--plot-video", "v1"]) == 0
    for png in (summary, timeline):
        assert png.read_bytes()[:8] == PNG_MAGIC and png.stat().st_size > 5000
    capsys.readouterr()
    assert "refusing to overwrite" in cli_error(capsys, *argv, "--plot", str(summary))
    assert "--plot-video needs --plot" in cli_error(capsys, *argv, "--plot-video", "v1")
    assert "no video 'v9'" in cli_error(capsys, *argv, "--plot", str(tmp_path / "x.png"),
                                        "--plot-video", "v9")
    assert "--length-bins" in cli_error(capsys, *argv, "--length-bins", "60,0")


def test_errors_name_file_record_and_field(folder, tmp_path, capsys):
    gt = ["eval", "nextgqa", "--gt", str(folder)]
    # a QA file missing a grounded key that has a span prediction
    err = cli_error(capsys, *gt, *_files(tmp_path, {"v1_0": [1, 2], "v1_1": [1, 2]},
                                         {"v1_0": {"prediction": 1, "answer": 1}}))
    assert "qa.json: record 'v1_1': no answer prediction" in err
    (tmp_path / "bad.json").write_text('{"v1_0": [1, 2]')
    err = cli_error(capsys, *gt, "--pred", str(tmp_path / "bad.json"))
    assert "bad.json: not valid JSON" in err and "line 1" in err
    (tmp_path / "bad.json").write_text('{"v1_0": [1, "x"]}')
    err = cli_error(capsys, *gt, "--pred", str(tmp_path / "bad.json"))
    assert "bad.json: record 'v1_0': field 'span': expected numbers" in err
    (tmp_path / "p.json").write_text("{}")
    err = cli_error(capsys, "eval", "nextgqa", "--gt", str(tmp_path), "--pred",
                    str(tmp_path / "p.json"))
    assert "holds no gsub_test.json" in err
    err = cli_error(capsys, *gt, "--pred", str(tmp_path / "missing.json"))
    assert "missing.json" in err
    (folder / "gsub_val.json").write_text('{"v1": {"location": {}}}')
    err = cli_error(capsys, *gt, "--split", "val", "--pred", str(tmp_path / "p.json"))
    assert "gsub_val.json: record 'v1': field 'duration': missing" in err


def test_gsub_alone_and_random_answer_needs_csv(folder, tmp_path, capsys):
    gsub = str(folder / "gsub_test.json")
    got = cli_json(capsys, "nextgqa", "--gt", gsub, *_files(tmp_path, {"v1_1": [0, 10]}))
    assert got["metrics"]["mIoU"] == 100.0 and "Acc@QA" not in got["metrics"]
    # QA entries need a gold answer when there is no csv
    argv = _files(tmp_path, {"v1_1": [0, 10]}, {"v1_1": {"prediction": 2}})
    assert "record 'v1_1': field 'answer': no gold answer" in cli_error(
        capsys, "eval", "nextgqa", "--gt", gsub, *argv)
    # ... and with the csv the answer comes from there
    got = cli_json(capsys, "nextgqa", "--gt", str(folder), *argv)
    assert got["metrics"]["Acc@QA"] == 100.0
    err = cli_error(capsys, "baseline", "nextgqa", "random-answer", "--gt", gsub, "--out",
                    str(tmp_path / "ra.json"))
    assert "random-answer" in err and not (tmp_path / "ra.json").exists()


def test_baseline_refuses_to_overwrite(folder, tmp_path, capsys):
    out = tmp_path / "fv.json"
    out.write_text("keep")
    err = cli_error(capsys, "baseline", "nextgqa", "full-video", "--gt", str(folder), "--out",
                    str(out))
    assert "refusing to overwrite" in err and out.read_text() == "keep"


# ----------------------------------------------------------------------- deveqa

DEVEQA = [
    {"qid": "a", "video_id": "v1", "question": "q", "options": ["w", "x", "y", "z", "u"],
     "answer": "A", "gt_span": [0, 10], "duration": 40},
    {"qid": "b", "video_id": "v1", "question": "q", "options": ["w", "x", "y", "z", "u"],
     "answer": "C", "gt_span": [0, 10], "duration": 40},
    {"qid": "c", "video_id": "v2", "question": "q", "options": ["w", "x", "y", "z", "u"],
     "answer": "B", "gt_span": [2, 6], "duration": 80},
]


@pytest.fixture
def deveqa_files(tmp_path):
    gt = tmp_path / "deveqa.jsonl"
    gt.write_text("\n".join(json.dumps(r) for r in DEVEQA))
    # DeVi predictions: a right + [0,5]; b wrong + reversed [5,3]; c missing
    pred = tmp_path / "pred.jsonl"
    pred.write_text('{"qid": "a", "answer": "A", "span": [0, 5]}\n'
                    '{"qid": "b", "answer": "D. z", "span": [5, 3]}\n')
    return gt, pred


def test_deveqa_both_modes(deveqa_files, capsys):
    gt, pred = deveqa_files
    nx = cli_json(capsys, "deveqa", "--gt", str(gt), "--pred", str(pred))
    repo = cli_json(capsys, "deveqa", "--gt", str(gt), "--pred", str(pred),
                    "--mode", "deveqa-repo")
    # NExT-GQA rules: c skipped; a IoU .5 IoP 1; b reversed: 0, 0
    assert nx["info"]["mode"] == "nextgqa" and nx["info"]["evaluated"] == 2
    assert (nx["metrics"]["Acc@QA"], nx["metrics"]["Acc@GQA"]) == (50.0, 50.0)
    assert (nx["metrics"]["mIoU"], nx["metrics"]["mIoP"]) == (25.0, 50.0)
    # repository rules: c counts as 0 and wrong; denominators are 3
    assert repo["info"]["evaluated"] == 3 and repo["info"]["missing"] == 1
    assert repo["metrics"]["Acc@QA"] == pytest.approx(100 / 3)
    assert repo["metrics"]["mIoU"] == pytest.approx(50 / 3)
    assert repo["metrics"]["mIoP"] == pytest.approx(100 / 3)
    assert repo["metrics"]["Acc@GQA"] == pytest.approx(100 / 3)


def test_deveqa_baselines_round_trip(deveqa_files, tmp_path, capsys):
    gt, _ = deveqa_files
    for name in ("full-video", "centre-half", "random-span", "random-answer"):
        assert main(["baseline", "deveqa", name, "--gt", str(gt), "--out",
                     str(tmp_path / f"{name}.json")]) == 0
    got = cli_json(capsys, "deveqa", "--gt", str(gt), "--pred", str(tmp_path / "full-video.json"),
                   "--qa", str(tmp_path / "random-answer.json"), "--mode", "deveqa-repo")
    # full video: IoP = IoU = |g| / T = 10/40, 10/40, 4/80
    assert got["metrics"]["mIoU"] == pytest.approx((0.25 + 0.25 + 0.05) / 3 * 100)
    assert got["metrics"]["mIoP"] == pytest.approx((0.25 + 0.25 + 0.05) / 3 * 100)
    assert got["info"]["qa_answers_differing_from_gt"] == 0
    centre = json.loads((tmp_path / "centre-half.json").read_text())
    assert centre == {"v1_a": [10.0, 30.0], "v1_b": [10.0, 30.0], "v2_c": [20.0, 60.0]}


def test_deveqa_missing_duration_is_reported(tmp_path, capsys):
    gt = tmp_path / "d.json"
    gt.write_text(json.dumps([{k: v for k, v in DEVEQA[0].items() if k != "duration"}]))
    err = cli_error(capsys, "baseline", "deveqa", "full-video", "--gt", str(gt), "--out",
                    str(tmp_path / "o.json"))
    assert "d.json: record 'v1_a': field 'duration': no video duration" in err
    (tmp_path / "dur.json").write_text('{"v1": 12}')
    assert main(["baseline", "deveqa", "full-video", "--gt", str(gt), "--durations",
                 str(tmp_path / "dur.json"), "--out", str(tmp_path / "o.json")]) == 0
    assert json.loads((tmp_path / "o.json").read_text()) == {"v1_a": [0.0, 12.0]}


def test_deveqa_repo_mode_refuses_several_gold_segments(tmp_path, capsys):
    gt = tmp_path / "m.json"
    gt.write_text(json.dumps([{**DEVEQA[0], "gt_span": [[0, 1], [2, 3]]}]))
    (tmp_path / "p.json").write_text('{"v1_a": [0, 1]}')
    argv = ["eval", "deveqa", "--gt", str(gt), "--pred", str(tmp_path / "p.json")]
    err = cli_error(capsys, *argv, "--mode", "deveqa-repo")
    assert "one gold span per question, question 0 ('v1_a') has 2" in err
    got = cli_json(capsys, *argv[1:])  # the NExT-GQA rules take the max over both
    assert got["metrics"]["mIoU"] == 100.0


def test_negative_qa_prediction_is_a_wrong_answer(folder, tmp_path, capsys):
    argv = _files(tmp_path, {"v1_1": [0, 10]}, {"v1_1": {"prediction": -1, "answer": 2},
                                                "v1_2": {"prediction": 0, "answer": 0}})
    got = cli_json(capsys, "nextgqa", "--gt", str(folder), *argv)
    assert got["metrics"]["Acc@QA"] == 50.0 and got["metrics"]["Acc@GQA"] == 0.0
