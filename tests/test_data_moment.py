# SPDX-License-Identifier: Apache-2.0
"""Tests for the moment-retrieval loaders in ``fastvqa.data.moment``:
QVHighlights ground truth and submissions, ActivityNet Captions with its
timestamp repairs. Fixture files are written to tmp_path (no real
QVHighlights / ActivityNet files are shipped in ../shared/data)."""

from __future__ import annotations

import json
import logging

import numpy as np
import pytest

from fastvqa.data import DataFormatError, QARecord, load_activitynet_captions, load_qvhighlights
from fastvqa.data.moment import TimestampRepair, load_qvhighlights_submission

# Two lines in the released format (values from highlight_val_release.jsonl's layout).
GT_LINES = [
    {"qid": 7803, "query": "Man in gray top walks from outside to inside.", "duration": 150,
     "vid": "RoripwjYFp8_360.0_510.0", "relevant_clip_ids": [13, 14, 15, 16, 17],
     "saliency_scores": [[4, 4, 2], [3, 4, 2], [2, 2, 3], [2, 2, 2], [0, 1, 3]],
     "relevant_windows": [[26, 36]]},
    {"qid": 7920, "query": "Woman talks to the camera out the window of a car.", "duration": 150,
     "vid": "_6hnl_BrFvs_60.0_210.0", "relevant_clip_ids": [67, 68, 70],
     "saliency_scores": [[3, 4, 2], [2, 4, 2], [2, 2, 1]],
     "relevant_windows": [[134, 138], [140, 150]]},
]


def write_jsonl(path, objs):
    path.write_text("".join(json.dumps(o) + "\n" for o in objs))
    return path


# --------------------------------------------------------------------------
# QVHighlights ground truth
# --------------------------------------------------------------------------


def test_load_qvhighlights_fields(tmp_path):
    recs = load_qvhighlights(write_jsonl(tmp_path / "gt.jsonl", GT_LINES))
    assert len(recs) == 2 and all(isinstance(r, QARecord) for r in recs)
    r = recs[1]
    assert r.video_id == "_6hnl_BrFvs_60.0_210.0"
    assert r.question_id == "7920"
    assert r.key == "_6hnl_BrFvs_60.0_210.0_7920"
    assert r.question == "Woman talks to the camera out the window of a car."
    assert r.duration == 150.0
    assert r.spans.dtype == np.float64
    np.testing.assert_array_equal(r.spans, [[134, 138], [140, 150]])
    # Everything else is kept as it was, qid with its original type.
    assert r.extra == {"qid": 7920, "relevant_clip_ids": [67, 68, 70],
                       "saliency_scores": [[3, 4, 2], [2, 4, 2], [2, 2, 1]]}


def test_load_qvhighlights_json_array_and_blank_lines(tmp_path):
    arr = tmp_path / "gt.json"
    arr.write_text(json.dumps(GT_LINES))
    assert [r.question_id for r in load_qvhighlights(arr)] == ["7803", "7920"]
    blank = tmp_path / "blank.jsonl"
    blank.write_text(json.dumps(GT_LINES[0]) + "\n\n" + json.dumps(GT_LINES[1]) + "\n\n")
    assert len(load_qvhighlights(blank)) == 2


def test_load_qvhighlights_test_release_without_windows(tmp_path):
    line = {k: v for k, v in GT_LINES[0].items()
            if k not in ("relevant_windows", "relevant_clip_ids", "saliency_scores")}
    recs = load_qvhighlights(write_jsonl(tmp_path / "test.jsonl", [line]))
    assert recs[0].spans.shape == (0, 2)


def _gt_with(**changes):
    line = dict(GT_LINES[1])
    for k, v in changes.items():
        if v is _DROP:
            line.pop(k)
        else:
            line[k] = v
    return [GT_LINES[0], line]


_DROP = object()


@pytest.mark.parametrize("lines, match", [
    (_gt_with(query=_DROP), r"line 2 \(qid 7920\)'.*field 'query': missing"),
    (_gt_with(qid=_DROP), r"line 2'.*field 'qid': missing"),
    (_gt_with(qid=1.5), r"field 'qid': expected an integer or a string"),
    (_gt_with(vid=3), r"field 'vid': expected a string"),
    (_gt_with(duration="150"), r"field 'duration': expected a positive number"),
    (_gt_with(duration=-1), r"field 'duration'"),
    (_gt_with(relevant_windows=[[138, 134]]), r"field 'relevant_windows': window 0: end < start"),
    (_gt_with(relevant_windows=[[1, 2, 3]]), r"field 'relevant_windows': window 0: expected"),
    (_gt_with(relevant_windows=[[1, "2"]]), r"field 'relevant_windows'"),
    (_gt_with(relevant_windows=[[1, True]]), r"field 'relevant_windows'"),
    (_gt_with(relevant_windows={"a": 1}), r"field 'relevant_windows': expected a list"),
    (_gt_with(qid=7803), r"line 2'.*field 'qid': qid 7803 already appeared at line 1"),
    ([GT_LINES[0], [1, 2]], r"line 2': expected a JSON object"),
])
def test_load_qvhighlights_errors(tmp_path, lines, match):
    path = write_jsonl(tmp_path / "gt.jsonl", lines)
    with pytest.raises(DataFormatError, match=match) as info:
        load_qvhighlights(path)
    assert str(info.value).startswith("gt.jsonl: ")


def test_load_qvhighlights_bad_json_and_files(tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps(GT_LINES[0]) + "\n{\"qid\": 1,\n")
    with pytest.raises(DataFormatError, match=r"bad.jsonl: record 'line 2': not valid JSON"):
        load_qvhighlights(bad)
    nan = tmp_path / "nan.jsonl"
    nan.write_text(json.dumps(GT_LINES[0]).replace("[[26, 36]]", "[[26, NaN]]") + "\n")
    with pytest.raises(DataFormatError, match="finite"):
        load_qvhighlights(nan)
    empty = tmp_path / "empty.jsonl"
    empty.write_text("\n")
    with pytest.raises(DataFormatError, match="empty"):
        load_qvhighlights(empty)
    arr = tmp_path / "arr.json"
    arr.write_text("[{\"qid\": 1},")
    with pytest.raises(DataFormatError, match="not valid JSON"):
        load_qvhighlights(arr)
    with pytest.raises(FileNotFoundError):
        load_qvhighlights(tmp_path / "missing.jsonl")
    # A folder is read as released (highlight_<split>_release.jsonl in it);
    # one without that file is named, not an IsADirectoryError (issue 29).
    with pytest.raises(FileNotFoundError, match="highlight_val_release.jsonl"):
        load_qvhighlights(tmp_path)


# --------------------------------------------------------------------------
# QVHighlights submissions
# --------------------------------------------------------------------------


def test_load_submission_keeps_file_order(tmp_path):
    lines = [
        {"qid": 7920, "query": "q", "vid": "v", "pred_relevant_windows": [[2, 4, 0.1], [0, 2, 0.9]],
         "pred_saliency_scores": [0.1, 0.2]},
        {"qid": 7803, "pred_relevant_windows": [[26.0, 36.0, 0.5]]},
    ]
    sub = load_qvhighlights_submission(write_jsonl(tmp_path / "sub.jsonl", lines))
    assert list(sub) == ["7920", "7803"]
    np.testing.assert_array_equal(sub["7920"], [[2, 4, 0.1], [0, 2, 0.9]])
    assert sub["7803"].shape == (1, 3) and sub["7803"].dtype == np.float64


@pytest.mark.parametrize("windows, match", [
    ([], "no windows"),
    ([[0, 1]], r"window 0: expected \[start, end, score\]"),
    ([[0, 1, None]], "window 0"),
    ([[5, 1, 0.3]], "end < start"),
    ("0 1 0.3", "expected a list"),
])
def test_load_submission_errors(tmp_path, windows, match):
    path = write_jsonl(tmp_path / "sub.jsonl", [{"qid": 1, "pred_relevant_windows": windows}])
    with pytest.raises(DataFormatError, match=rf"sub.jsonl: record 'line 1 \(qid 1\)': "
                                              rf"field 'pred_relevant_windows': .*{match}"):
        load_qvhighlights_submission(path)


def test_load_submission_missing_field_and_duplicates(tmp_path):
    path = write_jsonl(tmp_path / "sub.jsonl", [{"qid": 1}])
    with pytest.raises(DataFormatError, match="field 'pred_relevant_windows': missing"):
        load_qvhighlights_submission(path)
    dup = [{"qid": 1, "pred_relevant_windows": [[0, 1, 1]]},
           {"qid": "1", "pred_relevant_windows": [[0, 1, 1]]}]
    with pytest.raises(DataFormatError, match="already appeared at line 1"):
        load_qvhighlights_submission(write_jsonl(tmp_path / "dup.jsonl", dup))


# --------------------------------------------------------------------------
# ActivityNet Captions
# --------------------------------------------------------------------------

ANET = {
    "v_QOlSCBRmfWY": {
        "duration": 82.73,
        "timestamps": [[0.83, 19.86], [17.37, 60.81], [56.26, 79.42]],
        "sentences": ["A young woman is seen standing in a room and leads into her dancing.",
                      " The girl dances around the room while the camera captures her movements.",
                      " She continues dancing around the room and ends by laying on the floor."],
    },
    "v_bad": {
        "duration": 50.0,
        "timestamps": [[30.0, 10.0], [-2.0, 5.0], [40.0, 55.5], [60.0, 70.0], [7.0, 7.0]],
        "sentences": ["reversed", "negative start", "end after the video",
                      "wholly after the video", "zero length"],
    },
}


def write_anet(tmp_path, data=ANET, name="val_1.json"):
    path = tmp_path / name
    path.write_text(json.dumps(data))
    return path


def test_activitynet_clean_video(tmp_path):
    recs = load_activitynet_captions(write_anet(tmp_path, {"v_QOlSCBRmfWY": ANET["v_QOlSCBRmfWY"]}))
    assert isinstance(recs, list) and len(recs) == 3 and recs.repairs == []
    r = recs[1]
    assert (r.video_id, r.question_id, r.duration) == ("v_QOlSCBRmfWY", "1", 82.73)
    # The leading space of the released sentences is stripped.
    assert r.question == "The girl dances around the room while the camera captures her movements."
    np.testing.assert_array_equal(r.spans, [[17.37, 60.81]])
    assert r.extra == {"sentence_index": 1, "timestamp": [17.37, 60.81], "repairs": []}


def test_activitynet_repairs_are_applied_and_reported(tmp_path, caplog):
    with caplog.at_level(logging.WARNING, logger="fastvqa.data"):
        recs = load_activitynet_captions(write_anet(tmp_path))
    bad = [r for r in recs if r.video_id == "v_bad"]
    assert len(bad) == 5  # "repair" keeps every sentence
    spans = [r.spans[0].tolist() for r in bad]
    assert spans == [[10.0, 30.0], [0.0, 5.0], [40.0, 50.0], [50.0, 50.0], [7.0, 7.0]]
    report = [(r.video_id, r.index, r.action) for r in recs.repairs]
    assert report == [
        ("v_bad", 0, "swapped"),
        ("v_bad", 1, "clipped_start"),
        ("v_bad", 2, "clipped_end"),
        ("v_bad", 3, "clipped_start"),
        ("v_bad", 3, "clipped_end"),
    ]
    assert recs.repairs[0] == TimestampRepair("v_bad", 0, "swapped", (30.0, 10.0), (10.0, 30.0),
                                              "start > end: swapped")
    assert bad[2].extra["repairs"] == ["end 55.5 > duration 50: set to duration"]
    assert bad[2].extra["timestamp"] == [40.0, 55.5]  # the file's value is kept
    assert "5 timestamp repair(s)" in caplog.text and "val_1.json" in caplog.text


def test_activitynet_2dtan_policy_clips_and_drops(tmp_path):
    recs = load_activitynet_captions(write_anet(tmp_path), policy="2dtan")
    kept = {r.question_id: r.spans[0].tolist() for r in recs if r.video_id == "v_bad"}
    # reversed, wholly after the video and zero-length are dropped.
    assert kept == {"1": [0.0, 5.0], "2": [40.0, 50.0]}
    dropped = [(r.index, r.after) for r in recs.repairs if r.action == "dropped"]
    assert dropped == [(0, None), (3, None), (4, None)]


def test_activitynet_strict_policy(tmp_path):
    with pytest.raises(DataFormatError,
                       match=r"val_1.json: record 'v_bad': field 'timestamps': timestamp 0"):
        load_activitynet_captions(write_anet(tmp_path), policy="strict")
    clean = load_activitynet_captions(write_anet(tmp_path, {"v": ANET["v_QOlSCBRmfWY"]}, "c.json"),
                                      policy="strict")
    assert len(clean) == 3


@pytest.mark.parametrize("video, match", [
    ({"timestamps": [], "sentences": []}, "field 'duration': missing"),
    ({"duration": 0, "timestamps": [], "sentences": []}, "field 'duration': expected a positive"),
    ({"duration": 10, "timestamps": [[0, 1]], "sentences": []},
     "field 'timestamps': 1 timestamps but 0 sentences"),
    ({"duration": 10, "timestamps": [[0, "1"]], "sentences": ["s"]},
     "field 'timestamps': timestamp 0"),
    ({"duration": 10, "timestamps": [[0]], "sentences": ["s"]}, "field 'timestamps': timestamp 0"),
    ({"duration": 10, "timestamps": [[0, 1]], "sentences": [3]}, "field 'sentences': sentence 0"),
    ({"duration": 10, "timestamps": "0-1", "sentences": ["s"]},
     "field 'timestamps': expected a list"),
    ({"duration": 10, "timestamps": [[0, 1]], "sentences": "s"},
     "field 'sentences': expected a list"),
    ([1, 2], "expected a JSON object"),
])
def test_activitynet_malformed(tmp_path, video, match):
    path = write_anet(tmp_path, {"v_x": video})
    with pytest.raises(DataFormatError, match=rf"val_1.json: record 'v_x': {match}"):
        load_activitynet_captions(path)


def test_activitynet_bad_file_and_policy(tmp_path):
    top = tmp_path / "list.json"
    top.write_text("[1, 2]")
    with pytest.raises(DataFormatError, match="at the top"):
        load_activitynet_captions(top)
    broken = tmp_path / "broken.json"
    broken.write_text("{\"v\": ")
    with pytest.raises(DataFormatError, match="not valid JSON"):
        load_activitynet_captions(broken)
    with pytest.raises(ValueError, match="unknown policy"):
        load_activitynet_captions(write_anet(tmp_path), policy="fix")
