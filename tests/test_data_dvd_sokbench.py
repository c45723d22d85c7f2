# SPDX-License-Identifier: Apache-2.0
"""DVD and SOK-Bench loaders: real files, layouts, and malformed-file errors."""

from __future__ import annotations

import copy
import json

import numpy as np
import pytest

from fastvqa.data import DataFormatError, load_dvd, load_sokbench
from fastvqa.data.sokbench import parse_rationale


# --- DVD: real sample dialogue ---------------------------------------------------

def test_dvd_sample_dialogue_labels_match_the_official_notebook(shared_data):
    records = load_dvd(shared_data / "dvd" / "CLEVR_new_000002.json")
    assert len(records) == 10
    assert [r.key for r in records][:2] == ["all_actions-CLEVR_new_000002_0_0",
                                            "all_actions-CLEVR_new_000002_0_1"]
    assert [r.answer for r in records] == ["1", "2", "False", "False", "True", "True", "0", "0",
                                           "0", "flying,rotating"]
    assert records[2].extra["answer_raw"] is False
    # Question type / sub-type / interval type / OR distances, as printed by the
    # official notebooks/explore_data.ipynb for this file (turns 1-10).
    assert [r.extra["question_type_official"] for r in records] == [
        "compare action sequence", "compare action sequence", "compare int", "obj exist",
        "compare int", "compare int", "obj count", "obj count", "obj count", "action query"]
    assert [r.extra["question_subtype_official"] for r in records] == [
        "compare action seq (count)", "compare action seq (count)", "compare int (equal)",
        "obj exist", "compare int (less)", "compare int (more)", "obj count", "obj count",
        "obj count", "action query (all actions)"]
    assert [r.extra["interval_type"] for r in records] == (
        ["compositional"] * 6 + ["atomic_spatial"] * 2 + ["compositional"] * 2)
    assert [r.extra["or_distance"] for r in records] == [0, 0, 2, 0, 4, 3, 2, 0, 8, 5]
    assert [r.extra["or_distance_effective"] for r in records] == [0, 0, -1, 0, -1, 3, 2, 0, -1, 5]
    assert [r.extra["transfer_types"] for r in records] == (
        [[], ["temporal"]] + [[]] * 5 + [["spatial"]] + [[]] * 2)
    assert [r.extra["turn_position"] for r in records] == list(range(1, 11))
    assert records[7].question == "what about to the right of it ?"
    # The turn-3 interval is [None, frame 79] -> [0, 79/24] s; cutoff frame 189.
    np.testing.assert_array_equal(records[2].spans, [[0.0, 79.0 / 24.0]])
    assert records[2].spans.dtype == np.float64 and records[2].extra["period_frames"] == [0.0, 79.0]
    assert records[2].extra["cutoff_frame"] == 189.0 and records[0].extra["cutoff_frame"] == 123.0
    # Raw fields are kept.
    assert records[0].extra["final_all_program"][-1]["type"] == "count_object"
    assert records[6].extra["template_filename"] == "one_hop_6.json"


def test_dvd_folder_skips_metadata(shared_data):
    records = load_dvd(shared_data / "dvd")
    assert len(records) == 10


# --- DVD: synthetic files and errors ----------------------------------------------

def _turn(text="How many <Z> things are there?", answer=2, interval="compositional",
          deps=None, periods=((None, [0, "end_flying", 1, 48]),)):
    return {
        "split": "max2action", "image": "CLEVR_new_000009", "question": "how many things ?",
        "answer": answer, "template_filename": "zero_hop_1.json",
        "template": {"text": [text], "interval_type": interval, "cutoff": None,
                     "used_periods": [list(p) for p in periods], "used_objects": {}},
        "turn_dependencies": deps or {"temporal": "none", "object": "none",
                                      "attribute": "none", "spatial": "none"},
    }


def _write(tmp_path, data, name="dial.json"):
    path = tmp_path / name
    path.write_text(json.dumps(data))
    return path


def test_dvd_synthetic_follow_up_and_open_end(tmp_path):
    follow = _turn(text="what about its color ?", answer="red",
                   deps={"temporal": "none", "object": "none", "attribute": "query_color",
                         "spatial": "none"}, periods=((None, None),))
    first = _turn(text="What size is the <C> thing?", answer="large", interval="none")
    # A follow-up of a follow-up resolves through the chain (the official helper
    # only looks one turn back and would fail here).
    chained = _turn(text="what about before that?", answer="blue")
    path = _write(tmp_path, [[first, follow, chained]])
    records = load_dvd(path, fps=10.0)
    assert [r.extra["question_subtype"] for r in records] == [
        "attribute_query.size", "attribute_query.color", "attribute_query.color"]
    assert [r.extra["question_type"] for r in records] == ["attribute_query"] * 3
    assert records[1].extra["transfer_types"] == ["attribute"]
    # A None end is frame 301 (analysis_utils); 10 fps here.
    np.testing.assert_allclose(records[1].spans, [[0.0, 30.1]])
    assert records[0].key == "max2action-CLEVR_new_000009_0_0"


@pytest.mark.parametrize("mutate, field, message", [
    (lambda t: t.pop("answer"), "answer", "missing"),
    (lambda t: t.update(answer=[1]), "answer", "expected a string, integer or boolean"),
    (lambda t: t.update(question=3), "question", "expected a string"),
    (lambda t: t["template"].update(text="oops"), "template.text", "expected a list"),
    (lambda t: t["template"].update(text=[]), "template.text", "non-empty list"),
    (lambda t: t["template"].update(interval_type="long"), "template.interval_type",
     "expected 'none', 'atomic' or 'compositional'"),
    (lambda t: t["turn_dependencies"].pop("spatial"), "turn_dependencies.spatial", "missing"),
    (lambda t: t["template"].update(used_periods=[[[0, "s", 1, 90], [0, "e", 1, 40]]]),
     "template.used_periods", r"ends \(frame 40\) before it starts \(frame 90\)"),
    (lambda t: t["template"].update(used_periods=[[[0, "s", 1, "x"], None]]),
     "template.used_periods", "expected a frame number"),
    (lambda t: t["template"].update(text=["Why is the sky blue?"]), "template.text",
     "no DVD question-type rule matches"),
    (lambda t: (t["turn_dependencies"].update(object="earlier_unique"),
                t["template"].update(earlier_unique_obj=4)),
     "template.earlier_unique_obj", "object 4 is not in template.used_objects"),
])
def test_dvd_malformed_turn_names_file_record_and_field(tmp_path, mutate, field, message):
    turns = [_turn(), _turn()]
    mutate(turns[1])
    path = _write(tmp_path, [turns])
    with pytest.raises(DataFormatError, match=message) as exc:
        load_dvd(path)
    err = exc.value
    assert err.record == "dialogue 0 turn 1" and err.field == field
    assert str(err).startswith(f"dial.json: record 'dialogue 0 turn 1': field '{field}': ")


def test_dvd_follow_up_on_the_first_turn_is_an_error(tmp_path):
    path = _write(tmp_path, [[_turn(text="what about now ?")]])
    with pytest.raises(DataFormatError, match="'what about' follow-up without a previous turn"
                       ) as exc:
        load_dvd(path)
    assert exc.value.record == "dialogue 0 turn 0" and exc.value.field == "template.text"


def test_dvd_malformed_files(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text("[[{")
    with pytest.raises(DataFormatError, match=r"bad\.json: not valid JSON"):
        load_dvd(bad)
    with pytest.raises(DataFormatError, match="expected a list of dialogues, got dict"):
        load_dvd(_write(tmp_path, {"a": 1}, "obj.json"))
    with pytest.raises(DataFormatError, match="record 'dialogue 0': expected a dialogue"):
        load_dvd(_write(tmp_path, [_turn()], "flat.json"))
    with pytest.raises(FileNotFoundError):
        load_dvd(tmp_path / "absent.json")
    with pytest.raises(ValueError, match="fps must be a positive number"):
        load_dvd(bad, fps=0)


def test_dvd_folder_duplicate_keys_and_empty_folder(tmp_path):
    folder = tmp_path / "dials"
    folder.mkdir()
    with pytest.raises(FileNotFoundError, match="no dialogue file"):
        load_dvd(folder)
    _write(folder, [[_turn()]], "a.json")
    _write(folder, [[_turn()]], "b.json")
    with pytest.raises(DataFormatError, match="duplicate record key"):
        load_dvd(folder)


def test_dvd_input_is_not_modified(tmp_path):
    data = [[_turn(), _turn()]]
    before = copy.deepcopy(data)
    path = _write(tmp_path, data)
    text = path.read_text()
    load_dvd(path)
    assert path.read_text() == text and data == before


# --- SOK-Bench ------------------------------------------------------------------

def test_sokbench_example(shared_data):
    records = load_sokbench(shared_data / "sokbench" / "example_question.json")
    assert len(records) == 1
    r = records[0]
    assert r.video_id == "Nlo-leQLQqs" and r.question_id == "0" and r.key == "Nlo-leQLQqs_0"
    assert r.question.startswith("If the person did not use the ingredient")
    assert len(r.options) == 4 and r.answer == 3
    assert r.options[3] == r.extra["direct"] and r.extra["direct_matches_choice"] is True
    np.testing.assert_array_equal(r.spans, [[73.0, 249.0]])
    assert r.extra["question_type"] is None
    assert r.extra["related_objs_acts"][3] == "dashi"
    assert set(r.extra["related_subgraph"]) == {"background", "object", "action",
                                                "obj_interaction"}
    assert r.extra["video_path"] == "YouCook2/raw_videos/training/316/Nlo-leQLQqs.mp4"
    # The rationale is not valid JSON (unescaped quotes); 7 numbered steps.
    steps = r.extra["rationale_steps"]
    assert list(steps) == [str(i) for i in range(1, 8)]
    assert steps["2"] == ("Recall the cooking steps from the video: Step 1 (from 73 sec to "
                          "124 sec): add dashi and chopped daikon radish to a pot.")
    assert steps["7"].endswith('"The soup would lack the savory and rich taste that something '
                               'broth brings to the dish."')


def _question(video="vid1", right=1, slot=(3, 9.5)):
    return {"question": "why?", "video": video,
            "answer": {"direct": "b", "choices": ["a", "b", "c", "d"], "right_choice": right},
            "time_slot": list(slot), "rationale": '{"1": "look", "2": "think"}'}


def test_sokbench_typed_and_list_layouts(tmp_path):
    typed = _write(tmp_path, {"OCT": [_question(), _question("vid2", 0)],
                              "APU": [_question("vid3", 3)]}, "typed.json")
    records = load_sokbench(typed)
    assert [r.question_id for r in records] == ["OCT_0", "OCT_1", "APU_0"]
    assert [r.extra["question_type"] for r in records] == ["OCT", "OCT", "APU"]
    assert [r.answer for r in records] == [1, 0, 3]
    assert [r.extra["direct_matches_choice"] for r in records] == [True, False, False]
    assert records[0].extra["rationale_steps"] == {"1": "look", "2": "think"}
    np.testing.assert_array_equal(records[0].spans, [[3.0, 9.5]])
    listed = load_sokbench(_write(tmp_path, [_question(), _question()], "list.json"))
    assert [r.question_id for r in listed] == ["0", "1"]
    no_slot = _question()
    del no_slot["time_slot"]
    assert load_sokbench(_write(tmp_path, no_slot, "one.json"))[0].spans.shape == (0, 2)


@pytest.mark.parametrize("mutate, field, message", [
    (lambda q: q.pop("question"), "question", "missing"),
    (lambda q: q.update(video=7), "video", "expected a string"),
    (lambda q: q.pop("answer"), "answer", "missing"),
    (lambda q: q["answer"].pop("choices"), "answer.choices", "missing"),
    (lambda q: q["answer"].update(choices=[]), "answer.choices", "non-empty list of strings"),
    (lambda q: q["answer"].pop("right_choice"), "answer.right_choice", "missing"),
    (lambda q: q["answer"].update(right_choice=4), "answer.right_choice",
     "index 4 is outside the 4 choices"),
    (lambda q: q["answer"].update(right_choice=True), "answer.right_choice",
     "expected an integer index"),
    (lambda q: q["answer"].update(direct=["b"]), "answer.direct", "expected a string"),
    (lambda q: q.update(time_slot=[9, 3]), "time_slot", "ends \\(3\\) before it starts \\(9\\)"),
    (lambda q: q.update(time_slot=["0:03", 9]), "time_slot", "expected \\[start, end\\]"),
    (lambda q: q.update(related_subgraph=[]), "related_subgraph", "expected an object"),
])
def test_sokbench_malformed_question(tmp_path, mutate, field, message):
    q = _question()
    mutate(q)
    path = _write(tmp_path, {"OCT": [_question(), q]}, "sok.json")
    with pytest.raises(DataFormatError, match=message) as exc:
        load_sokbench(path)
    assert exc.value.record == "OCT[1]" and exc.value.field == field
    assert str(exc.value).startswith(f"sok.json: record 'OCT[1]': field '{field}'")


def test_sokbench_malformed_files(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text('{"OCT": [')
    with pytest.raises(DataFormatError, match="bad.json: not valid JSON"):
        load_sokbench(bad)
    with pytest.raises(DataFormatError, match="record 'OCT': expected a list of questions"):
        load_sokbench(_write(tmp_path, {"OCT": {"question": "?"}}, "t.json"))
    with pytest.raises(DataFormatError, match="got int"):
        load_sokbench(_write(tmp_path, 3, "n.json"))
    with pytest.raises(DataFormatError, match="record 0: field '<question>'"):
        load_sokbench(_write(tmp_path, ["q"], "l.json"))


def test_parse_rationale():
    assert parse_rationale('{"1": "a", "2": {"x": 1}}') == {"1": "a", "2": '{"x": 1}'}
    assert parse_rationale('{ "1": "say "hi"", "2": "end" }') == {"1": 'say "hi"', "2": "end"}
    assert parse_rationale("just prose") is None
