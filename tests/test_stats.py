# SPDX-License-Identifier: Apache-2.0
"""``fastvqa stats``: the papers' dataset tables from the public files (to the printed
decimals), hand-computed values on small synthetic files, and the command line."""

from __future__ import annotations

import csv
import json
import math

import pytest

from fastvqa.cli import main
from fastvqa.errors import InputError
from fastvqa.stats import Stat, dataset_stats, mean_std, union_length


def _shown(cell, decimals=2):
    """A cell as the paper prints it: 'mean ± std' or an integer."""
    if isinstance(cell, Stat):
        return f"{cell.mean:.{decimals}f} ± {cell.std:.{decimals}f}"
    return cell


# --- helpers, by hand ---------------------------------------------------------------------

def test_mean_std_population_and_sample_by_hand():
    s = mean_std([1, 2, 3, 4])
    # mean 2.5; squared deviations 2.25 + 0.25 + 0.25 + 2.25 = 5
    assert s == Stat(2.5, math.sqrt(5 / 4), 4)
    assert mean_std([1, 2, 3, 4], "sample").std == pytest.approx(math.sqrt(5 / 3), rel=1e-15)
    empty = mean_std([])
    assert empty.n == 0 and math.isnan(empty.mean) and math.isnan(empty.std)
    assert math.isnan(mean_std([7.0], "sample").std) and mean_std([7.0]).std == 0.0
    with pytest.raises(InputError, match="std must be one of"):
        mean_std([1.0], "unbiased")


def test_union_length_by_hand():
    assert union_length([[0, 2], [1, 3], [5, 6]]) == 4.0  # [0, 3] and [5, 6]
    assert union_length([[5, 6], [0, 10]]) == 10.0  # contained, given out of order
    assert union_length([]) == 0.0


# --- WildQA -------------------------------------------------------------------------------

def test_wildqa_published_tables_from_dev_and_test(shared_data):
    s = dataset_stats("wildqa", shared_data / "wildqa")
    # Table 1, exactly.
    assert [tuple(r) for r in s.table("Table 1").rows] == [
        ("Agriculture", 85, 109), ("Geography", 46, 110), ("Human Survival", 95, 309),
        ("Military", 73, 201), ("Natural Disaster", 70, 187), ("Total", 369, 916)]
    # Table 2 as printed.
    paper2 = {"Videos": 369, "Duration (s)": "71.22 ± 26.47", "Questions": 916,
              "Question per video": "2.48 ± 1.38",
              "Question length (#tokens)": "7.09 ± 2.60", "Answer per question": "2.22 ± 0.69",
              "Answer length (#tokens)": "9.08 ± 8.15", "Evidence per answer": "1.18 ± 0.80",
              "Evidence length (s)": "9.64 ± 10.96"}
    for row, printed in paper2.items():
        assert _shown(s.value("Table 2", row)) == printed, row
    paper13 = {"Videos": 369, "Duration (s)": "71.22 ± 26.47", "Questions": 916, "Question per video": "2.48 ± 1.38",
               "Question length (#tokens)": "7.09 ± 2.60",
               "Answer length (#tokens)": "8.62 ± 8.90", "Evidence per answer": "1.53 ± 0.76",
               "Evidence length (s)": "9.09 ± 13.45"}
    for row, printed in paper13.items():
        assert _shown(s.value("Table 13", row)) == printed, row
    paper14 = {"Total answers": 1114, "Answer per question": "1.22 ± 0.69",
               "Answer length (#tokens)": "9.45 ± 7.46", "Evidence per answer": "0.89 ± 0.72",
               "Evidence length (s)": "10.43 ± 5.81"}
    for row, printed in paper14.items():
        assert _shown(s.value("Table 14", row)) == printed, row
    assert s.value("Table 2", "Evidence length (s)").n == 2399
    # The duration is averaged over the 916 questions; once per video it is not
    # the paper's (72.26 ± 26.98).
    assert s.value("Table 2", "Duration (s)").n == 916


def test_wildqa_population_std_is_what_reproduces_the_paper(shared_data):
    sample = dataset_stats("wildqa", shared_data / "wildqa", std="sample")
    # Table 13 prints 8.62 ± 8.90: only the population std gives it.
    assert _shown(sample.value("Table 13", "Answer length (#tokens)")) == "8.62 ± 8.91"


def test_wildqa_paper_counted_the_filtered_files(shared_data):
    from fastvqa.data import load_wildqa
    from fastvqa.stats import wildqa_stats

    raw = [r for split in ("raw_dev", "raw_test")
           for r in load_wildqa(shared_data / "wildqa" / f"{split}.json")]
    # Before the 1/4-duration filter Phase-2 spans are longer than the paper's 10.43 s.
    assert _shown(wildqa_stats(raw).value("Table 14", "Evidence length (s)")) == "16.81 ± 18.28"
    filtered = [r for split in ("raw_dev", "raw_test")
                for r in load_wildqa(shared_data / "wildqa" / f"{split}.json",
                                     evidence_filter=True)]
    assert _shown(wildqa_stats(filtered).value("Table 14", "Evidence length (s)")) == \
        "10.43 ± 5.81"
    test_only = dataset_stats("wildqa", shared_data / "wildqa", split="test")
    assert test_only.value("Table 1", "Total") == 261 and test_only.value("Table 1", "Total", 2) \
        == 652


def _wildqa_record(question, answer, video, duration, domain, evidences, alter_answers=(),
                   alter_evidences=()):
    return {"question": question, "answer": answer, "video_id": video, "duration": duration,
            "domain": domain, "evidences": [{str(i): list(e)} for i, e in enumerate(evidences)],
            "alter_answers": list(alter_answers),
            "alter_evidences": [[list(e) for e in group] for group in alter_evidences]}


def test_wildqa_synthetic_by_hand(tmp_path):
    data = [
        _wildqa_record("is it hot", "yes it is", "v1", 60.0, "Geography", [(0, 10), (20, 24)],
                       ["no", "maybe so"], [[(1, 3)]]),
        _wildqa_record("what is there", "a dog", "v1", 60.0, "Geography", [(5, 6)]),
        _wildqa_record("why", "because of rain today", "v2", 100.0, "Military", [],
                       ["rain"], [[(0, 4), (10, 12)]]),
    ]
    path = tmp_path / "mini.json"
    path.write_text(json.dumps(data))
    s = dataset_stats("wildqa", path)
    assert [tuple(r) for r in s.table("Table 1").rows] == [
        ("Geography", 1, 2), ("Military", 1, 1), ("Total", 2, 3)]
    # Questions per video: 2 and 1 -> 1.5 ± 0.5 (population).
    assert s.value("Table 2", "Question per video") == Stat(1.5, 0.5, 2)
    # Durations per question: 60, 60 and 100 -> 220/3 ± sqrt(3200/9)
    # (population: deviations -40/3, -40/3, 80/3).
    d = s.value("Table 2", "Duration (s)")
    assert d.n == 3 and d.mean == pytest.approx(220 / 3, rel=1e-15)
    assert d.std == pytest.approx(math.sqrt(3200 / 9), rel=1e-15)
    # Question tokens 3, 3, 1 -> mean 7/3.
    q = s.value("Table 2", "Question length (#tokens)")
    assert q.mean == pytest.approx(7 / 3, rel=1e-15) and q.n == 3
    # Answers per question 3, 1, 2 -> 2 ± sqrt(2/3).
    a = s.value("Table 2", "Answer per question")
    assert (a.mean, a.n) == (2.0, 3) and a.std == pytest.approx(math.sqrt(2 / 3), rel=1e-15)
    # Evidence per answer: Phase 1 [2, 1, 0]; Phase 2 [1, 0 (no list), 2] -> 6 / 6 = 1.
    assert s.value("Table 2", "Evidence per answer").mean == 1.0
    assert s.value("Table 13", "Evidence per answer").mean == 1.0
    p2 = s.value("Table 14", "Evidence per answer")
    assert (p2.mean, p2.n) == (1.0, 3)
    # Evidence lengths: Phase 1 10, 4, 1; Phase 2 2, 4, 2.
    assert s.value("Table 13", "Evidence length (s)").mean == pytest.approx(5.0, rel=1e-15)
    assert s.value("Table 14", "Evidence length (s)").mean == pytest.approx(8 / 3, rel=1e-15)
    assert s.value("Table 2", "Evidence length (s)").mean == pytest.approx(23 / 6, rel=1e-15)
    # Answer tokens: Phase 1 3, 2, 4; Phase 2 1, 2, 1.
    assert s.value("Table 13", "Answer length (#tokens)").mean == 3.0
    assert s.value("Table 14", "Answer length (#tokens)").mean == pytest.approx(4 / 3, rel=1e-15)
    assert s.value("Table 14", "Total answers") == 3


# --- NExT-GQA -----------------------------------------------------------------------------

def test_nextgqa_test_split_grounding_statistics(shared_data):
    s = dataset_stats("nextgqa", shared_data / "nextgqa")
    assert s.value("Grounding statistics", "Videos") == 990
    assert s.value("Grounding statistics", "Questions") == 5553
    assert s.value("Grounding statistics", "Questions with several segments") == 591
    assert f"{s.value('Grounding statistics', 'Segment length (s)').mean:.2f}" == "6.70"
    assert {int(k): v for k, v in s.table("Segments per question").rows} == {
        1: 4962, 2: 362, 3: 125, 4: 65, 5: 15, 6: 9, 7: 5, 8: 3, 9: 1, 11: 2, 14: 2, 16: 2}
    assert dict(s.table("Question types").rows) == {
        "CW": 2456, "TN": 1356, "TC": 852, "CH": 796, "TP": 93}
    val = dataset_stats("nextgqa", shared_data / "nextgqa", split="val")
    assert val.value("Grounding statistics", "Questions") == 3358


def test_nextgqa_synthetic_by_hand(tmp_path):
    gsub = {"a": {"duration": 20.0, "fps": 30.0, "location": {"1": [[0.0, 5.0]],
                                                               "2": [[2.0, 4.0], [3.0, 8.0]]}},
            "b": {"duration": 40.0, "fps": 30.0, "location": {"7": [[10.0, 30.0]]}}}
    path = tmp_path / "gsub_test.json"
    path.write_text(json.dumps(gsub))
    s = dataset_stats("nextgqa", path)
    g = "Grounding statistics"
    assert (s.value(g, "Videos"), s.value(g, "Questions"), s.value(g, "Segments")) == (2, 3, 4)
    assert s.value(g, "Questions with several segments") == 1
    # Segment lengths 5, 2, 5, 20 -> 8 ± sqrt(((3^2)*2 + 6^2 + 12^2) / 4).
    seg = s.value(g, "Segment length (s)")
    assert seg.mean == 8.0 and seg.std == pytest.approx(math.sqrt(198 / 4), rel=1e-15)
    # Coverage per question: 5, union [2, 8] = 6, 20; ratios 5/20, 6/20, 20/40.
    assert s.value(g, "Question's segment coverage (s)").mean == pytest.approx(31 / 3, rel=1e-15)
    ratio = s.value(g, "Segment / video ratio (per question)")
    assert ratio.mean == pytest.approx((0.25 + 0.3 + 0.5) / 3, rel=1e-15) and ratio.n == 3
    assert s.value(g, "Video duration (s)") == Stat(30.0, 10.0, 2)


# --- DeVE-QA (no public file: synthetic only) ---------------------------------------------

def test_deveqa_ratio_is_the_mean_of_per_question_ratios(tmp_path):
    opts = ["a", "b", "c", "d", "e"]
    data = [
        {"qid": "1", "video_id": "v1", "question": "what does he do first",
         "options": opts, "answer": 0, "gt_span": [0.0, 10.0], "duration": 100.0},
        {"qid": "2", "video_id": "v1", "question": "why", "options": opts, "answer": 1,
         "gt_span": [20.0, 60.0], "duration": 100.0},
        {"qid": "3", "video_id": "v2", "question": "who runs", "options": opts, "answer": 2,
         "gt_span": [5.0, 15.0], "duration": 20.0},
    ]
    path = tmp_path / "deveqa_test.json"
    path.write_text(json.dumps(data))
    s = dataset_stats("deveqa", path)
    t = "Table 1"
    assert s.value(t, "#Videos") == 2 and s.value(t, "#Questions") == 3
    # Words 5, 1, 2.
    assert s.value(t, "Avg. question length (words)").mean == pytest.approx(8 / 3, rel=1e-15)
    # Segments per question 10, 40, 10 -> 20; videos once each: 100, 20 -> 60.
    assert s.value(t, "Segment duration (s)").mean == 20.0
    assert s.value(t, "Video duration (s)") == Stat(60.0, 40.0, 2)
    # Per-question ratios 0.1, 0.4, 0.5 -> 1/3; the ratio of means would be 20/60 too,
    # so check against the per-question mean explicitly with another weighting:
    assert s.value(t, "Ratio (S./V.)").mean == pytest.approx((0.1 + 0.4 + 0.5) / 3, rel=1e-15)
    data[2]["duration"] = 50.0  # ratios 0.1, 0.4, 0.2 -> 0.2333; means 20 / 75 = 0.2667
    path2 = tmp_path / "deveqa_test2.json"
    path2.write_text(json.dumps(data))
    ratio = dataset_stats("deveqa", path2).value(t, "Ratio (S./V.)").mean
    assert ratio == pytest.approx(0.7 / 3, rel=1e-15) and ratio != pytest.approx(20 / 75)


# --- DVD ----------------------------------------------------------------------------------

def test_dvd_table1_counts_on_the_public_dialogue(shared_data):
    s = dataset_stats("dvd", shared_data / "dvd" / "CLEVR_new_000002.json")
    # By hand from the file: one video, one dialogue of 10 turns, 10 distinct questions.
    assert s.table("Table 1").rows == [("given files", 1, 1, 10, 10)]


def _dvd_turn(question, image="CLEVR_new_000001"):
    return {"split": "all_actions", "image": image, "question": question, "answer": 1,
            "template_filename": "zero_hop_1.json",
            "template": {"text": ["How many <Z> things are there?"],
                         "interval_type": "none", "cutoff": None, "used_periods": [None],
                         "used_objects": {}},
            "turn_dependencies": {"temporal": "none", "object": "none", "attribute": "none",
                                  "spatial": "none"}}


def test_dvd_unique_questions_synthetic(tmp_path):
    folder = tmp_path / "all_actions_train_000"
    folder.mkdir()
    (folder / "a.json").write_text(json.dumps([
        [_dvd_turn("how many things ?"), _dvd_turn("how many cubes ?")],
        [_dvd_turn("how many things ?"), _dvd_turn("how many spheres ?")]]))
    (folder / "b.json").write_text(json.dumps([
        [_dvd_turn("how many cubes ?", "CLEVR_new_000002"),
         _dvd_turn("how many things  ?", "CLEVR_new_000002")]]))  # two spaces: distinct
    s = dataset_stats("dvd", folder)
    # 2 videos, 3 dialogues, 6 questions, distinct strings: things, cubes, spheres, things(2sp).
    assert s.table("Table 1").rows == [("given files", 2, 3, 6, 4)]
    assert any("2 turns x3" in n for n in s.info["notes"])


# --- SOK-Bench ----------------------------------------------------------------------------

def test_sokbench_example_question(shared_data):
    s = dataset_stats("sokbench", shared_data / "sokbench" / "example_question.json")
    t = "Dataset statistics"
    assert s.value(t, "Questions") == 1 and s.value(t, "Video clips") == 1
    assert s.value(t, "Options per question") == Stat(4.0, 0.0, 1)
    # Counted by hand: 20 words in the question, 16 in the direct answer, slot [73, 249].
    assert s.value(t, "Question length (words)").mean == 20.0
    assert s.value(t, "Direct answer length (words)").mean == 16.0
    assert s.value(t, "Clip window length (s)").mean == 176.0
    assert s.value(t, "Question types") is None


def _sok_question(video, words, slot):
    return {"video": video, "question": " ".join(["w"] * words),
            "answer": {"direct": "d d", "choices": ["a", "b", "c", "d"], "right_choice": 0},
            "time_slot": list(slot)}


def test_sokbench_typed_layout_by_hand(tmp_path):
    data = {"type one": [_sok_question("x", 4, (0, 10)), _sok_question("y", 6, (5, 25))],
            "type two": [_sok_question("x", 8, (1, 2))]}
    path = tmp_path / "sok.json"
    path.write_text(json.dumps(data))
    s = dataset_stats("sokbench", path)
    t = "Dataset statistics"
    assert (s.value(t, "Questions"), s.value(t, "Video clips"), s.value(t, "Question types")) \
        == (3, 2, 2)
    assert s.value(t, "Question length (words)").mean == 6.0
    assert s.value(t, "Clip window length (s)").mean == pytest.approx(31 / 3, rel=1e-15)
    assert s.table("Questions per type").rows == [("type one", 2), ("type two", 1)]


# --- command line -------------------------------------------------------------------------

def test_cli_prints_and_writes_json_and_markdown(shared_data, tmp_path, capsys):
    out_json, out_md = tmp_path / "s.json", tmp_path / "s.md"
    assert main(["stats", "wildqa", "--gt", str(shared_data / "wildqa"), "--json",
                 str(out_json), "--markdown", str(out_md)]) == 0
    printed = capsys.readouterr().out
    assert "2.48 ± 1.38" in printed and "1.18 ± 0.80" in printed
    doc = json.loads(out_json.read_text())
    table2 = next(t for t in doc["tables"] if t["title"].startswith("Table 2"))
    row = dict((r[0], r[1]) for r in table2["rows"])
    assert row["Questions"] == 916 and row["Answer per question"]["n"] == 916
    md = out_md.read_text()
    assert "### Table 13: Phase 1 statistics" in md and "| Answer length (#tokens)" in md
    # Never over an existing file: refused before any work, the file untouched.
    before = out_json.read_text()
    assert main(["stats", "wildqa", "--gt", str(shared_data / "wildqa"), "--json",
                 str(out_json)]) == 2
    assert "exists" in capsys.readouterr().err and out_json.read_text() == before


def test_cli_errors_are_one_line(tmp_path, capsys):
    assert main(["stats", "dvd", "--gt", str(tmp_path / "missing.json")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("fastvqa stats: error:") and len(err.strip().splitlines()) == 1
    empty = tmp_path / "empty.json"
    empty.write_text("[]")
    assert main(["stats", "wildqa", "--gt", str(empty)]) == 2
    assert "no wildqa questions" in capsys.readouterr().err
    assert main(["stats", "sokbench", "--gt", str(empty), "--split", "test"]) == 2
    assert "--split applies to" in capsys.readouterr().err
    assert main(["stats", "wildqa", "--gt", str(empty), "--split", "test"]) == 2
    assert "--split picks a file of a wildqa folder" in capsys.readouterr().err
    assert main(["stats", "wildqa", "--gt", str(tmp_path), "--split", "dev"]) == 2
    assert "no dev.json in this folder" in capsys.readouterr().err
    with pytest.raises(InputError, match="unknown benchmark"):
        dataset_stats("msrvtt", empty)
    with pytest.raises(SystemExit):
        main(["stats", "msrvtt", "--gt", str(empty)])


def test_markdown_and_plain_format_rows(tmp_path):
    path = tmp_path / "gsub_test.json"
    path.write_text(json.dumps({"a": {"duration": 10.0, "fps": 1.0,
                                      "location": {"1": [[0.0, 5.0]]}}}))
    s = dataset_stats("nextgqa", path)
    plain = s.format("plain", decimals=1)
    assert "0.5 ± 0.0" in plain  # the ratio 5/10
    md = s.format("markdown")
    rows = [r for r in csv.reader(md.splitlines(), delimiter="|") if len(r) > 2]
    assert any(r[1].strip() == "Segment length (s)" and r[2].strip() == "5.00 ± 0.00"
               for r in rows)
    with pytest.raises(InputError, match="fmt must be one of"):
        s.format("html")
