# SPDX-License-Identifier: Apache-2.0
"""``fastvqa stats dvd``: a dialogue set's question-type, sub-type, interval,
topic-transfer and cross-turn relation mix beside DVD's published proportions
(issue 33). Expected values are counted by hand from the released dialogue and
from small hand-written files; the paper cells are copied from dvd.md §1.4,
§2.4, §2.6 and Table 7."""

from __future__ import annotations

import json

import numpy as np
import pytest

from fastvqa.cli import main
from fastvqa.data import load_dvd
from fastvqa.errors import CommandError
from fastvqa.stats import Stat, dataset_stats, dvd_stats

MIX_TABLES = ("Question types", "Question sub-types", "Interval types", "Topic transfers",
              "Temporal relations", "Object references", "Long-term reference distance",
              "Video-update turns per dialogue")


def _column(stats, title, column=1):
    """{row label: cell} of one column of a table."""
    return {row[0]: row[column] for row in stats.table(title).rows}


def _nonzero(stats, title):
    return {label: n for label, n in _column(stats, title).items() if n}


# --- the released dialogue, counted by hand -----------------------------------------------

# CLEVR_new_000002.json: one dialogue of 10 turns. Per turn (0-based), from the
# file's template text, template_filename, interval_type, turn_dependencies,
# question and final_all_program:
#  0 same sequence, "how many" -> compare_action_seq.count; compositional; no deps;
#    20 tokens, 5 nodes
#  1 "what about up until now ?" (same template)          -> compare_action_seq.count;
#    compositional; temporal video_update; 6 tokens, 7 nodes
#  2 "as frequently" -> compare_action_freq.equal; compositional; temporal
#    last_unique_obj_none + object earlier_unique (object 3, original_turn 1:
#    2 - 1 + 1 = 2); 28 tokens, 15 nodes
#  3 "Is there any" -> object_exist; compositional; temporal during; 14 tokens, 9 nodes
#  4 "less frequently" -> compare_action_freq.less; compositional; object earlier_unique
#    (object 3: 4 - 1 + 1 = 4); 19 tokens, 11 nodes
#  5 "more frequently" -> compare_action_freq.more; compositional; object earlier_unique
#    (object 5, original_turn 3: 5 - 3 + 1 = 3); 22 tokens, 15 nodes
#  6 "What number of ... <R>" one_hop atomic -> object_count, atomic_spatial; object
#    earlier_unique (object 9, original_turn 5: 6 - 5 + 1 = 2); 20 tokens, 13 nodes
#  7 "what about to the right of it ?" -> follows turn 6: object_count; one_hop atomic:
#    atomic_spatial; spatial right; 8 tokens, 11 nodes
#  8 "How many ... are there?" -> object_count; compositional; temporal
#    earlier_unique_obj_none (object 3: 8 - 1 + 1 = 8); 22 tokens, 11 nodes
#  9 "What types of actions" -> action_query.all_actions; compositional; object
#    earlier_unique (object 9: 9 - 5 + 1 = 5); 12 tokens, 5 nodes
# No final_all_program holds an "identity" node.

def test_released_dialogue_mix_by_hand(shared_data):
    s = dataset_stats("dvd", shared_data / "dvd" / "CLEVR_new_000002.json")
    assert s.table("Table 1").rows == [("given files", 1, 1, 10, 10)]

    assert _nonzero(s, "Question types") == {
        "action_query": 1, "compare_action_seq": 2, "compare_action_freq": 3,
        "object_count": 3, "object_exist": 1, "Total": 10}
    assert _column(s, "Question types", 2)["compare_action_freq"] == pytest.approx(30.0)
    tokens = _column(s, "Question types", 3)
    assert tokens["compare_action_seq"] == pytest.approx((20 + 6) / 2)
    assert tokens["compare_action_freq"] == pytest.approx((28 + 19 + 22) / 3)
    assert tokens["object_count"] == pytest.approx((20 + 8 + 22) / 3)
    assert tokens["Total"] == pytest.approx(171 / 10)
    size = _column(s, "Question types", 5)
    assert size["compare_action_freq"] == pytest.approx((15 + 11 + 15) / 3)
    assert size["object_count"] == pytest.approx((13 + 11 + 11) / 3)
    assert (size["object_exist"], size["action_query"]) == (9.0, 5.0)
    assert size["Total"] == pytest.approx(102 / 10)
    # The paper's cells, as printed (Table 7; §2.6 "> 17 tokens", "10 reasoning steps").
    assert s.table("Question types").rows[-1][4::2] == ("> 17", "≈ 10")
    assert _column(s, "Question types", 4)["compare_action_freq"] == "19.7"
    assert _column(s, "Question types", 6)["object_exist"] == "11.4"

    assert _nonzero(s, "Question sub-types") == {
        "action_query.all_actions": 1, "compare_action_seq.count": 2,
        "compare_action_freq.equal": 1, "compare_action_freq.less": 1,
        "compare_action_freq.more": 1, "object_count": 3, "object_exist": 1}
    within = _column(s, "Question sub-types", 3)
    assert within["compare_action_freq.less"] == pytest.approx(100 / 3)
    assert within["compare_action_seq.count"] == 100.0 and within["object_count"] is None

    assert _column(s, "Interval types") == {"none": 0, "atomic_non_spatial": 0,
                                             "atomic_spatial": 2, "compositional": 8}
    assert _column(s, "Interval types", 3)["atomic_spatial"] == 100.0

    assert _column(s, "Topic transfers") == {"none": 8, "attribute": 0, "spatial": 1,
                                              "temporal": 1, "any": 2}
    assert _column(s, "Topic transfers", 3)["any"] == Stat(2.0, 0.0, 1)
    assert _column(s, "Temporal relations") == {"none": 9, "before": 0, "after": 0, "during": 1}
    assert _column(s, "Object references") == {"none": 4, "short-term": 0, "long-term": 5,
                                                "short- and long-term": 1}
    assert _column(s, "Long-term reference distance") == {"2": 2, "3": 1, "4": 1, "5": 1,
                                                           "8": 1}
    assert _column(s, "Video-update turns per dialogue") == {"0": 0, "1": 1, "2": 0, "3": 0,
                                                              "> 3": 0}
    assert not any("unclassified" in n for n in s.info["notes"])


# --- a hand-written set -------------------------------------------------------------------

def _turn(question, text, interval, *, filename="zero_hop_1.json", nodes=3, temporal="none",
          obj="none", attribute="none", spatial="none", **template):
    return {"question": question, "answer": 1, "split": "all_actions",
            "image": "CLEVR_new_000007", "template_filename": filename,
            "template": {"text": [text], "interval_type": interval,
                         "used_objects": {"3": {"original_turn": 1}}, **template},
            "turn_dependencies": {"temporal": temporal, "object": obj, "attribute": attribute,
                                  "spatial": spatial},
            "final_all_program": [{"type": "scene"}] * nodes}


def _hand_written():
    first = [
        _turn("what color is the cone ?", "What color is the <S>?", "none", nodes=4),
        {**_turn("what about its material ?", "what about its material ?", "none",
                 attribute="query_material", obj="last_unique"),
         "final_all_program": [{"type": "scene"}, {"type": "identity"}, {"type": "unique"},
                               {"type": "query_material"}]},
        _turn("throughout the whole video , how many times does the aforementioned cone "
              "slide ?", "How many times does the <S> <A>?", "compositional", nodes=7,
              obj="earlier_unique", earlier_unique_obj=3),
        _turn("what about up until now ?", "How many times does the <S> <A>?",
              "compositional", nodes=9, temporal="video_update"),
    ]
    second = [
        _turn("during the cube 's slide , is there any big sphere left of the cone ?",
              "Is there any <Z> <S> <R> the <S2>?", "atomic", filename="one_hop_2.json",
              nodes=11),
        _turn("what about to the right of it ?", "what about to the right of it ?", "atomic",
              filename="one_hop_2.json", nodes=11, spatial="right"),
        _turn("before this slide , what is the cone doing first ?",
              "What is the <o> action of the <S>?", "atomic", nodes=8,
              temporal="prior_sliding_before", obj="earlier_unique", earlier_unique_obj=3),
        _turn("until the end of the aforementioned cube 's slide , does it fly more "
              "frequently than the sphere rotates ?",
              "Does the <S> <A> more frequently than the <S2> <A2>?", "compositional",
              nodes=15, temporal="earlier_unique_obj_none", obj="last_unique",
              temporal_obj_id=3),
        _turn("during this time period , is there any flying cube ?", "Is there any <A> <S>?",
              "compositional", nodes=9, temporal="during"),
    ]
    return [first, second]


# By hand, turn by turn: tokens 6, 5, 14, 6 | 16, 8, 11, 20, 11 (97 in all); program
# nodes 4, 3 (the identity node left out), 7, 9 | 11, 11, 8, 15, 9 (77 in all).

def test_hand_written_set_by_hand(tmp_path):
    path = tmp_path / "dialogues.json"
    path.write_text(json.dumps(_hand_written()))
    s = dataset_stats("dvd", path)
    assert s.table("Table 1").rows == [("given files", 1, 2, 9, 9)]
    assert _nonzero(s, "Question types") == {"action_count": 2, "action_query": 1,
                                             "attribute_query": 2, "compare_action_freq": 1,
                                             "object_exist": 3, "Total": 9}
    assert _column(s, "Question types", 2)["object_exist"] == pytest.approx(100 * 3 / 9)
    tokens = _column(s, "Question types", 3)
    assert (tokens["attribute_query"], tokens["action_count"]) == (5.5, 10.0)
    assert tokens["object_exist"] == pytest.approx(35 / 3)
    assert tokens["Total"] == pytest.approx(97 / 9) and np.isnan(tokens["object_count"])
    size = _column(s, "Question types", 5)
    assert (size["attribute_query"], size["action_count"], size["action_query"]) == (3.5, 8, 8)
    assert size["object_exist"] == pytest.approx(31 / 3)
    assert size["Total"] == pytest.approx(77 / 9)

    assert _nonzero(s, "Question sub-types") == {
        "action_count": 2, "action_query.by_order": 1, "attribute_query.color": 1,
        "attribute_query.material": 1, "compare_action_freq.more": 1, "object_exist": 3}
    within = _column(s, "Question sub-types", 3)
    assert within["attribute_query.color"] == 50.0 and within["attribute_query.size"] == 0.0
    assert within["action_query.by_order"] == 100.0 and np.isnan(
        within["compare_action_seq.count"])   # no turn of that type
    assert _column(s, "Question sub-types", 4)["compare_action_freq.more"] == "≈ 4% each"

    assert _column(s, "Interval types") == {"none": 2, "atomic_non_spatial": 1,
                                             "atomic_spatial": 2, "compositional": 4}
    atomic = _column(s, "Interval types", 3)
    assert atomic["atomic_spatial"] == pytest.approx(200 / 3)
    assert atomic["atomic_non_spatial"] == pytest.approx(100 / 3) and atomic["none"] is None
    assert _column(s, "Interval types", 4) == {
        "none": "a small percentage", "atomic_non_spatial": None,
        "atomic_spatial": "the majority of atomic", "compositional": "> 60%"}

    assert _column(s, "Topic transfers") == {"none": 6, "attribute": 1, "spatial": 1,
                                              "temporal": 1, "any": 3}
    per_dialogue = _column(s, "Topic transfers", 3)   # dialogue 1 | dialogue 2
    assert per_dialogue["any"] == Stat(1.5, 0.5, 2)           # 2 | 1
    assert per_dialogue["none"] == Stat(3.0, 1.0, 2)          # 2 | 4
    assert per_dialogue["attribute"] == Stat(0.5, 0.5, 2)     # 1 | 0
    assert _column(s, "Topic transfers", 4)["any"] == "nearly 3 of 10 turns"

    assert _column(s, "Temporal relations") == {"none": 7, "before": 1, "after": 0, "during": 1}
    assert _column(s, "Object references") == {"none": 5, "short-term": 1, "long-term": 2,
                                                "short- and long-term": 1}
    # Distances: 2 - 1 + 1 = 2 (first dialogue), 2 - 1 + 1 = 2 and 3 - 1 + 1 = 3 (second).
    assert _column(s, "Long-term reference distance") == {"2": 2, "3": 1}
    assert _column(s, "Long-term reference distance", 2)["2"] == pytest.approx(200 / 3)
    assert _column(s, "Long-term reference distance", 3)["2"] == "the majority"
    assert _column(s, "Video-update turns per dialogue") == {"0": 1, "1": 1, "2": 0, "3": 0,
                                                              "> 3": 0}
    assert _column(s, "Video-update turns per dialogue", 2)["0"] == 50.0
    assert _column(s, "Video-update turns per dialogue", 3)["0"] == "none (≥ 1 each)"
    assert any("4 turns x1, 5 turns x1" in n for n in s.info["notes"])


def test_unclassified_turns_are_counted_and_noted(tmp_path):
    path = tmp_path / "dialogues.json"
    path.write_text(json.dumps(_hand_written()))
    records = load_dvd(path)
    for r in records[:2]:   # labels a loader other than load_dvd did not give
        r.extra.pop("question_subtype")
    s = dvd_stats(records)
    assert _column(s, "Question sub-types")["(unclassified)"] == 2
    assert "(unclassified)" not in _column(s, "Question types")   # their type is kept
    assert any(n.startswith("2 turns have no official question type or sub-type")
               and "official analysis code would fail" in n for n in s.info["notes"])


def test_a_file_the_official_rules_cannot_classify_is_refused_with_the_count(tmp_path,
                                                                              capsys):
    dialogues = _hand_written()
    dialogues[0][1]["template"]["text"] = ["Describe the <S>."]       # no rule matches
    dialogues[0][2]["template"]["text"] = ["what about the cube ?"]   # follows it: none
    dialogues[1][3]["template"]["text"] = ["Does the <S> <A> frequently?"]  # no comparison
    (tmp_path / "a.json").write_text(json.dumps(dialogues))
    (tmp_path / "b.json").write_text(json.dumps(_hand_written()[:1]))
    with pytest.raises(CommandError, match=r"^3 turns \(in 1 of the files\) .* cannot "
                                           r"classify \(first: a.json dialogue 0 turn 1: "
                                           r"'Describe the <S>.'\)"):
        dataset_stats("dvd", tmp_path)
    assert main(["stats", "dvd", "--gt", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "official analysis code would fail" in err


# --- a generated set ----------------------------------------------------------------------

@pytest.fixture(scope="module")
def generated_file(tmp_path_factory):
    from fastvqa.generate.dvd.dialogue import generate_dialogues, write_dialogues
    from fastvqa.generate.dvd.scene import synthetic_scene

    scenes = [synthetic_scene(np.random.default_rng(3000 + i), name=f"scene_{i:04d}")
              for i in range(6)]
    result = generate_dialogues(scenes, seed=11, dialogues_per_scene=3)
    path = tmp_path_factory.mktemp("dvd_mix") / "dialogues.json"
    write_dialogues(result.dialogues, path)
    return path, sum(len(d) for d in result.dialogues), len(result.dialogues)


def test_generated_set_mix_adds_up(generated_file):
    path, turns, dialogues = generated_file
    s = dataset_stats("dvd", path)
    assert s.value("Table 1", "given files", 3) == turns > 0
    for title in ("Question types", "Question sub-types", "Interval types",
                  "Temporal relations", "Object references", "Video-update turns per dialogue"):
        rows = [r for r in s.table(title).rows if r[0] != "Total"]
        assert sum(r[1] for r in rows) == (dialogues if title.startswith("Video") else turns)
        assert sum(r[2] for r in rows) == pytest.approx(100.0), title
    distance = s.table("Long-term reference distance").rows
    if distance:
        assert sum(r[2] for r in distance) == pytest.approx(100.0)
    shares = _column(s, "Topic transfers", 2)
    assert shares["none"] + shares["any"] == pytest.approx(100.0)
    assert s.table("Question types").rows[-1][:3] == ("Total", turns, 100.0)
    assert not any("unclassified" in n for n in s.info["notes"])


# --- the command line ---------------------------------------------------------------------

def test_cli_prints_the_mix_tables_with_the_paper_column(generated_file, tmp_path, capsys):
    path = generated_file[0]
    assert main(["stats", "dvd", "--gt", str(path)]) == 0
    out = capsys.readouterr().out
    for title in MIX_TABLES:
        assert f"\n{title}\n" in out
    for cell in ("paper tokens", "paper program size", "> 60%", "≈ 4% each",
                 "nearly 3 of 10 turns", "none (≥ 1 each)", "the majority of atomic"):
        assert cell in out
    assert main(["stats", "dvd", "--gt", str(path), "--table-format", "markdown"]) == 0
    md = capsys.readouterr().out
    assert "### Interval types" in md and "| compositional" in md and "> 60%" in md
    out_json = tmp_path / "mix.json"
    assert main(["stats", "dvd", "--gt", str(path), "--json", "--out", str(out_json)]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert json.loads(out_json.read_text()) == doc
    intervals = next(t for t in doc["tables"] if t["title"] == "Interval types")
    assert intervals["header"] == ["Interval type", "turns", "% of turns", "% of atomic", "paper"]
    assert intervals["rows"][3][0] == "compositional" and intervals["rows"][3][4] == "> 60%"
    assert intervals["rows"][1][4] is None   # the paper gives no atomic non-spatial share
