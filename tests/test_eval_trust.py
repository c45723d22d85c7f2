# SPDX-License-Identifier: Apache-2.0
"""``fastvqa eval`` / ``fastvqa baseline`` at first contact (issue 11): no
silent NaN or 0 score, no traceback for bad input, no partial or overwritten
output, every baseline's output read back by the matching ``eval``.

Expected values are hand computations on the small files below.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from fastvqa.cli import main

# ------------------------------------------------------------------ fixtures

GSUB = {"v1": {"duration": 20, "fps": 30.0,
               "location": {"0": [[0, 10]], "1": [[10, 20]]}},
        "v2": {"duration": 40, "fps": 30.0, "location": {"0": [[0, 40]]}}}
CSV = ("video_id,frame_count,width,height,question,answer,qid,type,a0,a1,a2,a3,a4\n"
       "v1,600,320,240,q0,b,0,CW,a,b,c,d,e\n"
       "v1,600,320,240,q1,c,1,CH,a,b,c,d,e\n"
       "v2,600,320,240,q2,a,0,TN,a,b,c,d,e\n")

DEVEQA = [
    {"qid": "a", "video_id": "v1", "question": "q", "options": ["w", "x", "y", "z", "u"],
     "answer": "A", "gt_span": [0, 10], "duration": 20},
    {"qid": "b", "video_id": "v2", "question": "q", "options": ["w", "x", "y", "z", "u"],
     "answer": "B", "gt_span": [2, 6], "duration": 40},
]


def _wildqa_record(question, answer, spans, duration=60.0, domain="Agriculture"):
    return {"question": question, "answer": answer, "alter_answers": [],
            "evidences": [{str(i): s} for i, s in enumerate(spans)],
            "alter_evidences": [], "duration": duration, "video_id": f"vid-{question}",
            "domain": domain, "question_type": "Intent"}


SOKBENCH = {"counterfactual": [
    {"question": "q0", "video": "vidA", "answer": {"direct": "x", "choices": ["x", "y", "z", "w"],
                                                  "right_choice": 0}},
    {"question": "q1", "video": "vidB", "answer": {"direct": "z", "choices": ["x", "y", "z", "w"],
                                                  "right_choice": 2}}]}

QVH = [{"qid": 1, "query": "a man", "duration": 150, "vid": "v1", "relevant_windows": [[0, 8]]},
       {"qid": 2, "query": "a dog", "duration": 100, "vid": "v2",
        "relevant_windows": [[40, 100]]}]


@pytest.fixture
def files(tmp_path):
    """One small ground truth per benchmark, by benchmark name."""
    ng = tmp_path / "nextgqa"
    ng.mkdir()
    (ng / "gsub_test.json").write_text(json.dumps(GSUB))
    (ng / "test.csv").write_text(CSV)
    de = tmp_path / "deveqa.json"
    de.write_text(json.dumps(DEVEQA))
    wq = tmp_path / "wildqa"
    wq.mkdir()
    (wq / "test.json").write_text(json.dumps([
        _wildqa_record("q0", "Yes", [[0, 10]]), _wildqa_record("q1", "A tractor.", [[5, 20]])]))
    (wq / "dev.json").write_text(json.dumps([
        _wildqa_record("d0", "Yes", [[0, 5]]), _wildqa_record("d1", "Yes", [[1, 2]]),
        _wildqa_record("d2", "No", [[3, 4]])]))
    sok = tmp_path / "sokbench"
    sok.mkdir()
    (sok / "questions.json").write_text(json.dumps(SOKBENCH))
    qvh = tmp_path / "qvh.jsonl"
    qvh.write_text("".join(json.dumps(r) + "\n" for r in QVH))
    return {"nextgqa": ng, "deveqa": de, "wildqa": wq, "sokbench": sok, "qvhighlights": qvh,
            "tmp": tmp_path}


def write(path: Path, data) -> str:
    path.write_text(json.dumps(data))
    return str(path)


def error(capsys, *argv) -> str:
    """Runs the command; it must fail with exit 2 and exactly one stderr line."""
    capsys.readouterr()
    assert main(list(argv)) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1 and " error: " in lines[0], captured.err
    return lines[0]


def ok_json(capsys, *argv) -> tuple[dict, str]:
    capsys.readouterr()
    assert main([*argv, "--json"]) == 0
    captured = capsys.readouterr()
    return json.loads(captured.out), captured.err


# --------------------------------------------------------- no silent score

def test_predictions_matching_no_key_are_an_error(files, capsys):
    tmp = files["tmp"]
    # test-split keys against --split val: gsub_val.json has other videos.
    (files["nextgqa"] / "gsub_val.json").write_text(json.dumps(
        {"w9": {"duration": 10, "fps": 30.0, "location": {"0": [[0, 1]]}}}))
    pred = write(tmp / "p.json", {"v1_0": [0, 10], "v1_1": [10, 20]})
    line = error(capsys, "eval", "nextgqa", "--gt", str(files["nextgqa"]), "--pred", pred,
                 "--split", "val")
    assert "no prediction key matches" in line and "'v1_0'" in line and "w9_0" in line
    assert "--split" in line
    line = error(capsys, "eval", "deveqa", "--gt", str(files["deveqa"]),
                 "--pred", write(tmp / "d.json", {"zz_a": [0, 1]}))
    assert "no prediction key matches" in line
    # qa answers that match nothing (deveqa-repo mode would score them all wrong)
    line = error(capsys, "eval", "deveqa", "--gt", str(files["deveqa"]), "--mode", "deveqa-repo",
                 "--pred", write(tmp / "d2.json", {"v1_a": [0, 1]}),
                 "--qa", write(tmp / "qa.json", {"nope": {"prediction": 0}}))
    assert "no answer key matches" in line
    # entries that match but carry no span: nothing to score
    jl = tmp / "d.jsonl"
    jl.write_text('{"qid": "a", "answer": "A"}\n')
    assert "no ground-truth question has a span" in error(
        capsys, "eval", "deveqa", "--gt", str(files["deveqa"]), "--pred", str(jl))
    line = error(capsys, "eval", "sokbench", "--gt", str(files["sokbench"]),
                 "--pred", write(tmp / "s.json", {"nope": 1}))
    assert "no prediction key matches" in line
    qvh_sub = tmp / "sub.jsonl"
    qvh_sub.write_text(json.dumps({"qid": 99, "pred_relevant_windows": [[0, 1, 1]]}) + "\n")
    line = error(capsys, "eval", "qvhighlights", "--gt", str(files["qvhighlights"]),
                 "--pred", str(qvh_sub), "--partial")
    assert "no prediction qid matches" in line


def test_all_null_predictions_are_an_error(files, capsys):
    line = error(capsys, "eval", "sokbench", "--gt", str(files["sokbench"]), "--pred",
                 write(files["tmp"] / "p.json", [None, None]))
    assert "none of the 2 questions has a prediction" in line


@pytest.mark.parametrize("pred", [{}, []])
def test_empty_predictions_are_an_error(files, capsys, pred):
    tmp = files["tmp"]
    path = write(tmp / "p.json", pred)
    if isinstance(pred, dict):
        assert "holds no predictions" in error(capsys, "eval", "nextgqa",
                                               "--gt", str(files["nextgqa"]), "--pred", path)
    assert "holds no predictions" in error(capsys, "eval", "sokbench",
                                           "--gt", str(files["sokbench"]), "--pred", path)


def test_normalized_values_above_one_name_the_first_key(files, capsys):
    pred = write(files["tmp"] / "p.json", {"v1_0": [0.1, 0.5], "v1_1": [3, 12.5],
                                           "v2_0": [40, 50]})
    line = error(capsys, "eval", "nextgqa", "--gt", str(files["nextgqa"]), "--pred", pred,
                 "--normalized")
    assert "record 'v1_1'" in line and "3.0 is above 1" in line and "--normalized" in line


def test_partial_coverage_keeps_the_official_score_and_says_so(files, capsys):
    # v1_0: [0, 10] on [0, 10] -> IoU 1; v1_1 and v2_0 missing -> skipped (official).
    pred = write(files["tmp"] / "p.json", {"v1_0": [0, 10]})
    got, err = ok_json(capsys, "eval", "nextgqa", "--gt", str(files["nextgqa"]), "--pred", pred)
    assert got["metrics"]["mIoU"] == 100.0 and got["info"]["evaluated"] == 1
    assert "warning: 2 of 3 questions have no prediction" in err
    assert "official eval_ground.py skips them" in err
    assert got["info"]["warnings"] == [err.split("warning: ", 1)[1].strip()]
    # deveqa-repo counts them as zero, and says that instead
    _, err = ok_json(capsys, "eval", "deveqa", "--gt", str(files["deveqa"]), "--mode",
                     "deveqa-repo", "--pred", write(files["tmp"] / "d.json", {"v1_a": [0, 10]}))
    assert "1 of 2 questions have no prediction" in err and "count as zero" in err
    # SOK-Bench: missing = wrong; Acc over both questions = 50
    got, err = ok_json(capsys, "eval", "sokbench", "--gt", str(files["sokbench"]), "--pred",
                       write(files["tmp"] / "s.json", {"vidA_questions/counterfactual_0": 0}))
    assert got["metrics"]["Acc"] == 50.0
    assert "1 of 2 questions have no prediction" in err and "wrong" in err
    # a full file: no warning (spans in seconds: all within [0, 1] would be
    # warned about as fractions given without --normalized)
    _, err = ok_json(capsys, "eval", "nextgqa", "--gt", str(files["nextgqa"]), "--pred",
                     write(files["tmp"] / "f.json",
                           {"v1_0": [0, 10], "v1_1": [0, 10], "v2_0": [0, 10]}))
    assert "warning" not in err


@pytest.mark.parametrize("bench, gt", [
    ("nextgqa", {}), ("deveqa", []), ("wildqa qa", []), ("sokbench", {}), ("dvd", []),
])
def test_empty_ground_truth_is_an_error(tmp_path, capsys, bench, gt):
    gt_path = tmp_path / "gt.json"
    gt_path.write_text(json.dumps(gt))
    pred = write(tmp_path / "p.json", [] if bench == "wildqa qa" else {"x": [0, 1]})
    line = error(capsys, "eval", *bench.split(), "--gt", str(gt_path), "--pred", pred)
    assert "holds no" in line and "nothing to score" in line
    baseline = {"nextgqa": "full-video", "deveqa": "full-video", "wildqa qa": "common",
                "sokbench": "random-answer", "dvd": "answer-prior"}[bench]
    out = tmp_path / "out.json"
    line = error(capsys, "baseline", *bench.split(), baseline, "--gt", str(gt_path), "--out", str(out))
    assert "nothing to score" in line and not out.exists()


def test_empty_qvhighlights_ground_truth(tmp_path, capsys):
    gt = tmp_path / "gt.json"
    gt.write_text("[]")
    sub = tmp_path / "sub.jsonl"
    sub.write_text(json.dumps({"qid": 1, "pred_relevant_windows": [[0, 1, 1]]}) + "\n")
    assert "nothing to score" in error(capsys, "eval", "qvhighlights", "--gt", str(gt),
                                       "--pred", str(sub))


def _transfer_records():
    """Two dialogues of two turns; turn 1 carries an attribute transfer.
    Predictions get both turn-0 answers wrong: no correct previous turn."""
    from fastvqa.data.record import QARecord

    recs = []
    for d in range(2):
        for t in range(2):
            recs.append(QARecord(video_id="v", question_id=f"{d}_{t}", answer="1", extra={
                "question_type": "object_count", "question_subtype": "object_count",
                "interval_type": "none", "transfer_types": ["attribute"] if t else [],
                "dialogue_index": d, "turn_index": t, "turn_position": t + 1,
                "or_distance_effective": 0}))
    return recs


def test_empty_breakdown_group_is_na_not_zero(tmp_path):
    from fastvqa.metrics.dialogue import dvd_accuracy

    records = _transfer_records()
    result = dvd_accuracy({"v_0_0": "2", "v_0_1": "1", "v_1_0": "2", "v_1_1": "1"}, records)
    assert result["Acc"] == 50.0
    assert result.count("Transfer/attribute") == 0
    import math

    assert math.isnan(result["Transfer/attribute"])  # was 0.0
    table = result.format_table()
    line = next(x for x in table.splitlines() if x.startswith("Transfer/attribute"))
    assert "n/a (n=0)" in line and "0.0" not in line
    doc = result.to_dict()
    assert doc["metrics"]["Transfer/attribute"] is None
    assert doc["info"]["counts"]["Transfer/attribute"] == 0


def test_empty_group_in_the_plot_is_labelled(tmp_path, monkeypatch):
    pytest.importorskip("matplotlib")
    from matplotlib.figure import Figure

    from fastvqa.evaluation.plots import plot_accuracy_bars

    texts = []
    real_save = Figure.savefig

    def spy(self, *args, **kwargs):
        texts.extend(t.get_text() for ax in self.axes for t in ax.texts)
        return real_save(self, *args, **kwargs)

    monkeypatch.setattr(Figure, "savefig", spy)
    plot_accuracy_bars(["Acc", "Transfer/attribute"], [50.0, float("nan")], tmp_path / "p.png",
                       title="t", counts=[4, 0])
    assert texts == ["n/a (n=0)"]


def test_format_table_na():
    from fastvqa.metrics.result import MetricResult

    r = MetricResult("x", {"a": float("nan"), "b": 1.25}, info={"counts": {"a": 0, "b": 3}})
    assert r.format_table(decimals=1).splitlines()[2].split() == ["n/a", "(n=0)", "1.2"]
    with pytest.raises(ValueError, match="decimals"):
        r.format_table(decimals=-1)


# ------------------------------------------------------------------- files

def _nextgqa_argv(files, pred=None):
    pred = pred or {"v1_0": [0, 10], "v1_1": [10, 20], "v2_0": [0, 20]}
    return ["eval", "nextgqa", "--gt", str(files["nextgqa"]),
            "--pred", write(files["tmp"] / "pred.json", pred)]


def test_failed_run_leaves_no_partial_output(files, capsys):
    tmp = files["tmp"]
    pq, png = tmp / "out" / "pq.jsonl", tmp / "p.png"
    argv = _nextgqa_argv(files)
    before = sorted(os.listdir(tmp))
    line = error(capsys, *argv, "--per-question", str(pq), "--plot", str(png),
                 "--plot-video", "NOPE")
    assert "no video 'NOPE'" in line
    assert not pq.exists() and not png.exists() and not pq.parent.exists()
    assert sorted(os.listdir(tmp)) == before


def test_plot_failure_after_scoring_removes_everything(files, capsys, monkeypatch):
    pytest.importorskip("matplotlib")
    from fastvqa.data.errors import DataFormatError
    from fastvqa.evaluation import plots

    def boom(*args, **kwargs):
        raise DataFormatError("x", "drawing failed")

    monkeypatch.setattr(plots, "plot_grounding_summary", boom)
    tmp = files["tmp"]
    argv = _nextgqa_argv(files)
    before = sorted(os.listdir(tmp))
    error(capsys, *argv, "--per-question", str(tmp / "pq.csv"),
          "--plot", str(tmp / "p.png"))
    assert sorted(os.listdir(tmp)) == before  # no pq.csv, no temporary file


def test_outputs_are_written_whole_under_the_exact_name(files, capsys):
    pytest.importorskip("matplotlib")
    tmp = files["tmp"]
    # the plot without a suffix, the rows in upper case: nothing is appended or changed
    pq, png = tmp / "pq.JSONL", tmp / "plot"
    capsys.readouterr()
    assert main([*_nextgqa_argv(files), "--per-question", str(pq), "--plot", str(png)]) == 0
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and not Path(f"{png}.png").exists()
    assert [json.loads(x)["key"] for x in pq.read_text().splitlines()] == ["v1_0", "v1_1", "v2_0"]
    assert not [p for p in os.listdir(tmp) if p.endswith(".part")]


def test_same_path_for_two_outputs_is_refused(files, capsys):
    tmp = files["tmp"]
    line = error(capsys, *_nextgqa_argv(files), "--per-question", str(tmp / "x.png"),
                 "--plot", str(tmp / "." / "x.png"))
    assert "name the same file" in line and not (tmp / "x.png").exists()


def test_decimals_must_be_at_least_zero(files, capsys):
    with pytest.raises(SystemExit) as exc:
        main([*_nextgqa_argv(files), "--decimals", "-1"])
    assert exc.value.code == 2
    assert "--decimals: expected an integer >= 0" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main([*_nextgqa_argv(files), "--decimals", "1000000000"])
    assert "--decimals: expected an integer in [0, 20]" in capsys.readouterr().err


@pytest.mark.parametrize("content, needle", [
    ("[" * 100_000 + "]" * 100_000, "nested too deeply"),
    ('{"v1_0": [0, 1' + "0" * 400 + "]}", "too large"),
    ('{"v1_0": [0, 1' + "0" * 5000 + "]}", "too large"),
    ('{"v1_0": [0, 1e400]}', "finite"),
])
def test_hostile_json_is_a_one_line_error(files, capsys, content, needle):
    pred = files["tmp"] / "hostile.json"
    pred.write_text(content)
    line = error(capsys, "eval", "nextgqa", "--gt", str(files["nextgqa"]), "--pred", str(pred))
    assert "hostile.json" in line and needle in line


def test_huge_integer_in_every_loader(tmp_path, capsys):
    from fastvqa.data import (DataFormatError, load_deveqa, load_dvd, load_qvhighlights,
                              load_sokbench, load_wildqa)

    big = "9" * 30
    cases = [
        (load_wildqa, f'[{{"duration": {big}}}]'),
        (load_sokbench, f'{{"question": "q", "answer": {{"right_choice": {big}}}}}'),
        (load_dvd, f"[[{{\"answer\": {big}}}]]"),
        (load_deveqa, f'[{{"duration": {big}}}]'),
        (load_qvhighlights, f'{{"qid": {big}}}\n'),
    ]
    for i, (loader, text) in enumerate(cases):
        path = tmp_path / f"f{i}.json{'l' if loader is load_qvhighlights else ''}"
        path.write_text(text)
        with pytest.raises(DataFormatError, match="too large"):
            loader(path)


def test_non_regular_file_is_refused(files, capsys):
    if not os.path.exists("/dev/zero"):
        pytest.skip("no /dev/zero here")
    for bench, gt in (("nextgqa", files["nextgqa"]), ("qvhighlights", files["qvhighlights"]),
                      ("sokbench", files["sokbench"])):
        line = error(capsys, "eval", bench, "--gt", str(gt), "--pred", "/dev/zero")
        assert "/dev/zero" in line or "zero: not a regular file" in line
        assert "not a regular file" in line
    fifo = files["tmp"] / "fifo.jsonl"
    os.mkfifo(fifo)
    assert "not a regular file" in error(capsys, "eval", "deveqa", "--gt", str(files["deveqa"]),
                                         "--pred", str(fifo))


def test_a_bug_keeps_its_traceback(files, monkeypatch):
    from fastvqa.evaluation import BENCHMARKS, load_all

    load_all()

    def buggy(*, gt, pred):
        raise ValueError("an internal mistake")

    monkeypatch.setattr(BENCHMARKS["nextgqa"], "evaluate", buggy)
    with pytest.raises(ValueError, match="internal mistake"):
        main(_nextgqa_argv(files))


@pytest.mark.parametrize("argv", [
    ["eval", "sokbench", "--pred", "{pred}"],
    ["eval", "qvhighlights", "--pred", "{pred}"],
    ["eval", "deveqa", "--pred", "{pred}"],
    ["baseline", "qvhighlights", "full-video", "--out", "{out}"],
    ["baseline", "deveqa", "full-video", "--out", "{out}"],
])
def test_folder_where_a_file_is_expected_is_one_line(tmp_path, capsys, argv):
    folder = tmp_path / "folder"
    folder.mkdir()
    pred = write(tmp_path / "p.json", {"x": 1})
    argv = [a.format(pred=pred, out=tmp_path / "o.json") for a in argv]
    line = error(capsys, *argv, "--gt", str(folder))
    assert "folder" in line or "holds no" in line
    assert "Errno" not in line


def test_sokbench_folder_works_for_eval_and_baseline(files, capsys):
    sok = files["sokbench"]
    out = files["tmp"] / "rand.json"
    assert main(["baseline", "sokbench", "random-answer", "--gt", str(sok),
                 "--out", str(out)]) == 0
    preds = json.loads(out.read_text())
    assert list(preds) == ["vidA_questions/counterfactual_0", "vidB_questions/counterfactual_1"]
    got, _ = ok_json(capsys, "eval", "sokbench", "--gt", str(sok), "--pred",
                     write(files["tmp"] / "p.json", {"vidA_questions/counterfactual_0": 0,
                                                     "vidB_questions/counterfactual_1": 1}))
    assert got["metrics"]["Acc"] == 50.0 and got["info"]["evaluated"] == 2


def test_wildqa_train_folder(files, capsys):
    out = files["tmp"] / "common.json"
    assert main(["baseline", "wildqa", "qa", "common", "--gt", str(files["wildqa"]),
                 "--train", str(files["wildqa"]), "--out", str(out)]) == 0
    assert json.loads(out.read_text()) == ["Yes", "Yes"]


def test_plot_video_is_checked_before_the_table(files, capsys):
    capsys.readouterr()
    assert main([*_nextgqa_argv(files), "--plot", str(files["tmp"] / "p.png"),
                 "--plot-video", "123"]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and "no video '123'" in captured.err


def test_baseline_out_is_staged(files, capsys, monkeypatch):
    import fastvqa.cli as cli

    out = files["tmp"] / "deep" / "b.json"

    def boom(obj, f):
        f.write("{")
        raise OSError("disk full")

    monkeypatch.setattr(cli.json, "dump", boom)
    with pytest.raises(OSError, match="disk full"):
        main(["baseline", "nextgqa", "full-video", "--gt", str(files["nextgqa"]),
              "--out", str(out)])
    assert not out.parent.exists()


# ----------------------------------------------------------- round trips

BASELINES = [
    ("nextgqa", "full-video", []), ("nextgqa", "centre-half", []),
    ("nextgqa", "random-span", []), ("nextgqa", "random-answer", []),
    ("deveqa", "full-video", []), ("deveqa", "centre-half", []),
    ("deveqa", "random-span", []), ("deveqa", "random-answer", []),
    ("wildqa qa", "common", []), ("wildqa qa", "random", []),
    ("wildqa evidence", "random", []),
    ("sokbench", "random-answer", []),
    ("qvhighlights", "full-video", []), ("qvhighlights", "centre-half", []),
    ("qvhighlights", "random", []),
]


def _gt_for(files, bench):
    return str(files["wildqa" if bench.startswith("wildqa") else bench])


def _round_trip(files, capsys, bench, name, extra, gt):
    out = files["tmp"] / f"{bench.replace(' ', '-')}-{name}.json"
    capsys.readouterr()
    assert main(["baseline", *bench.split(), name, "--gt", gt, "--out", str(out), *extra]) == 0
    argv = ["eval", *bench.split(), "--gt", gt]
    if name == "random-answer" and bench in ("nextgqa", "deveqa"):
        # a QA file: grounded with the full video, answers from the baseline
        spans = files["tmp"] / f"{bench}-spans.json"
        assert main(["baseline", bench, "full-video", "--gt", gt, "--out", str(spans)]) == 0
        argv += ["--pred", str(spans), "--qa", str(out)]
    else:
        argv += ["--pred", str(out)]
    got, err = ok_json(capsys, *argv)
    assert "warning" not in err  # the baseline covers every question
    return got


@pytest.mark.parametrize("bench, name, extra", BASELINES)
def test_every_baseline_output_is_read_back_by_eval(files, capsys, bench, name, extra):
    got = _round_trip(files, capsys, bench, name, extra, _gt_for(files, bench))
    n = {"nextgqa": 3, "deveqa": 2, "wildqa qa": 2, "wildqa evidence": 2, "sokbench": 2,
         "qvhighlights": 2}[bench]
    assert got["info"]["evaluated"] == n
    if (bench, name) == ("nextgqa", "full-video"):
        # [0, 20] vs [0, 10]: IoU .5; vs [10, 20]: .5; [0, 40] vs [0, 40]: 1
        assert got["metrics"]["mIoU"] == pytest.approx(100 * 2 / 3)
    if (bench, name) == ("wildqa qa", "common"):  # "Yes" vs "Yes" and vs "A tractor."
        assert got["metrics"]["ROUGE-1"] == pytest.approx(50.0)


def test_wildqa_closest_baseline_round_trip(files, capsys):
    pytest.importorskip("sentence_transformers")
    pytest.importorskip("faiss")
    try:
        got = _round_trip(files, capsys, "wildqa qa", "closest", [], str(files["wildqa"]))
    except OSError as err:  # the packaged model is not installed here
        pytest.skip(f"sentence encoder unavailable: {err}")
    assert got["info"]["evaluated"] == 2


DVD_BASELINES = [("answer-prior", []), ("qtype-random", []), ("qtype-frequent", []),
                 ("qtype-random", ["--answer-set", "observed"]),
                 ("q-retrieval", ["--train", "{train}"])]


@pytest.mark.parametrize("name, extra", DVD_BASELINES)
def test_dvd_baselines_read_back(shared_data, files, capsys, name, extra):
    pytest.importorskip("sklearn")
    gt = str(shared_data / "dvd" / "CLEVR_new_000002.json")
    # q-retrieval refuses --train that is --gt; a copy reads back the same.
    train = files["tmp"] / "dvd_train.json"
    train.write_text(Path(gt).read_text())
    got = _round_trip(files, capsys, "dvd", name, [e.format(train=train) for e in extra], gt)
    turns = sum(len(d) for d in json.loads(Path(gt).read_text()))
    assert got["info"]["evaluated"] == turns and got["info"]["missing"] == 0


def test_real_sokbench_and_nextgqa_baselines_read_back(shared_data, files, capsys):
    got = _round_trip(files, capsys, "sokbench", "random-answer", [],
                      str(shared_data / "sokbench" / "example_question.json"))
    assert got["info"]["evaluated"] == 1 and got["info"]["unknown_keys"] == 0
    got = _round_trip(files, capsys, "nextgqa", "full-video", [], str(shared_data / "nextgqa"))
    assert round(got["metrics"]["mIoU"], 2) == 21.14  # the published reference value


@pytest.mark.parametrize("entry, needle", [
    ("[true, 2]", "expected numbers"), ('["1.5", 2]', "expected numbers"),
    ("[1, 2, 3]", "expected a span"), ("[1, NaN]", "finite"), ("null", "expected a span"),
])
def test_grounding_fast_path_still_names_the_bad_entry(tmp_path, entry, needle):
    from fastvqa.data import DataFormatError
    from fastvqa.data.nextgqa import read_grounding_predictions

    good = ", ".join(f'"v_{i}": [{i}, {i + 0.5}]' for i in range(50))
    path = tmp_path / "g.json"
    path.write_text("{" + good + f', "bad_7": {entry}, "v_99": [1, 2]}}')
    with pytest.raises(DataFormatError, match=rf"g\.json: record 'bad_7': field 'span': .*{needle}"):
        read_grounding_predictions(path)
    path.write_text("{" + good + "}")
    spans = read_grounding_predictions(path)
    assert spans["v_3"] == (3.0, 3.5) and len(spans) == 50


def test_baseline_option_errors_are_one_line(files, capsys):
    with pytest.raises(SystemExit) as exc:
        main(["baseline", "sokbench", "random-answer", "--gt", str(files["sokbench"]),
              "--out", str(files["tmp"] / "o.json"), "--seed", "-1"])
    assert exc.value.code == 2 and "--seed: expected an integer >= 0" in capsys.readouterr().err
    line = error(capsys, "baseline", "wildqa", "qa", "closest", "--gt", str(files["wildqa"]),
                 "--out", str(files["tmp"] / "o.json"), "--model", str(files["tmp"] / "nope"))
    assert "no such model folder" in line and not (files["tmp"] / "o.json").exists()


def test_wildqa_closest_model_not_on_disk_is_refused_first(files, capsys):
    """A model name that is neither packaged nor in the local cache would
    need the network: one line naming --model, before the files are read."""
    pytest.importorskip("sentence_transformers")
    capsys.readouterr()
    assert main(["baseline", "wildqa", "qa", "closest", "--gt", str(files["tmp"] / "absent"),
                 "--model", "no-such-org-xyz/no-such-model", "--out",
                 str(files["tmp"] / "closest.json")]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "--model" in err
    assert not (files["tmp"] / "closest.json").exists()
