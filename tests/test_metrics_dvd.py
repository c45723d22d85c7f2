# SPDX-License-Identifier: Apache-2.0
"""DVD accuracy and its breakdowns: hand-computed cases, the loop reference, real data."""

from __future__ import annotations

import math
import random

import numpy as np
import pytest

from fastvqa.data import QARecord
from fastvqa.metrics import MetricResult, dvd_accuracy
from fastvqa.metrics.dialogue import ANSWER_SUBSPACES, DVD_ANSWERS, answer_subspace
from tests.reference.dvd import dvd_reference


def _record(video, d, t, answer, qtype, subtype, interval, transfer=(), or_eff=0):
    return QARecord(
        video_id=video, question_id=f"{d}_{t}", answer=answer,
        extra={"question_type": qtype, "question_subtype": subtype, "interval_type": interval,
               "transfer_types": list(transfer), "turn_position": t + 1, "dialogue_index": d,
               "turn_index": t, "or_distance": max(or_eff, 0), "or_distance_effective": or_eff},
    )


def _hand_case():
    records = [
        _record("v", 0, 0, "1", "object_count", "object_count", "compositional"),
        _record("v", 0, 1, "2", "object_count", "object_count", "compositional", ["temporal"]),
        _record("v", 0, 2, "True", "object_exist", "object_exist", "atomic_spatial", or_eff=2),
        _record("v", 0, 3, "0", "object_count", "object_count", "atomic_spatial", ["spatial"]),
        _record("v", 1, 0, "red", "attribute_query", "attribute_query.color", "none"),
        _record("v", 1, 1, "metal", "attribute_query", "attribute_query.material", "none",
                ["attribute"]),
    ]
    # int 2 and bool True compare as str(); "Red" is outside the answer space;
    # None is missing.
    preds = {"v_0_0": "1", "v_0_1": 2, "v_0_2": True, "v_0_3": "1", "v_1_0": "Red", "v_1_1": None}
    return records, preds


def test_hand_computed_accuracy_and_breakdowns():
    records, preds = _hand_case()
    r = dvd_accuracy(preds, records)
    assert isinstance(r, MetricResult) and r.metric == "dvd_accuracy" and r.benchmark is None
    expected = {
        "Acc": 50.0,
        "Acc/type=attribute_query": 0.0,
        "Acc/type=object_count": 200.0 / 3.0,
        "Acc/type=object_exist": 100.0,
        "Acc/subtype=attribute_query.color": 0.0,
        "Acc/subtype=attribute_query.material": 0.0,
        "Acc/subtype=object_count": 200.0 / 3.0,
        "Acc/subtype=object_exist": 100.0,
        "Acc/interval=none": 0.0,
        "Acc/interval=atomic_spatial": 50.0,
        "Acc/interval=compositional": 100.0,
        # attribute: the previous turn (red) is wrong -> no denominator -> NaN
        # (a rate over no turns; the official helper prints 0).
        "Transfer/attribute": math.nan,
        "Transfer/spatial": 0.0,
        "Transfer/temporal": 100.0,
        "Acc/turn=1": 50.0, "Acc/turn=2": 50.0, "Acc/turn=3": 100.0, "Acc/turn=4": 0.0,
        "Acc/or_distance=0": 40.0, "Acc/or_distance=2": 100.0,
    }
    assert list(r) == list(expected)  # paper's row order within each block
    assert dict(r) == pytest.approx(expected, rel=1e-15, abs=0, nan_ok=True)
    assert r.info["counts"]["Transfer/attribute"] == 0
    assert r.info["missing"] == 1 and r.info["out_of_answer_space"] == 1
    assert r.info["transfer"] == {
        "attribute": {"turns": 1, "prior_correct": 0, "correct": 0},
        "spatial": {"turns": 1, "prior_correct": 1, "correct": 0},
        "temporal": {"turns": 1, "prior_correct": 1, "correct": 1},
    }
    assert r.info["counts"]["Acc/type=object_count"] == 3
    pq = r.per_question
    assert pq["prediction"] == ["1", "2", "True", "1", "Red", None]
    assert pq["correct"].tolist() == [True, True, True, False, False, False]
    assert pq["in_answer_space"].tolist() == [True, True, True, True, False, False]
    assert pq["prior_correct"] == [None, True, None, True, None, False]
    assert pq["transfer"] == ["", "temporal", "", "spatial", "", "attribute"]


def test_sequence_predictions_and_official_string_comparison():
    records, _ = _hand_case()
    # A list in record order; "true" and " 1" are not the official strings.
    r = dvd_accuracy(["1", "2", "true", "0", "red", "metal"], records)
    assert r["Acc"] == pytest.approx(500.0 / 6.0)
    assert r.info["out_of_answer_space"] == 1 and r.per_question["correct"][2] == np.False_
    # A float prints as "2.0": outside the answer space, wrong (str(pred) == str(gt)).
    r = dvd_accuracy([1.0, 2.0, None, None, None, None], records)
    assert r["Acc"] == 0.0 and r.info["missing"] == 4 and r.info["out_of_answer_space"] == 2


def test_effective_or_only_switch():
    records, preds = _hand_case()
    records[5].extra.update(or_distance=3, or_distance_effective=-1)
    assert "Acc/or_distance=3" not in dvd_accuracy(preds, records)
    r = dvd_accuracy(preds, records, effective_or_only=False)
    assert r["Acc/or_distance=3"] == 0.0 and r.info["effective_or_only"] is False


def test_transfer_turn_without_previous_record_is_left_out():
    records, preds = _hand_case()
    subset = [records[1]]  # the temporal-transfer turn without its previous turn
    r = dvd_accuracy({"v_0_1": "2"}, subset)
    assert "Transfer/temporal" not in r
    assert r.info["transfer_without_previous_turn"] == 1
    assert r["Acc"] == 100.0


def test_breakdowns_omitted_without_extra_fields():
    records = [QARecord("v", "0_0", answer="1"), QARecord("v", "0_1", answer="True")]
    r = dvd_accuracy({"v_0_0": "1", "v_0_1": "False"}, records)
    assert dict(r) == {"Acc": 50.0}
    assert "question_type" in r.info["breakdowns_omitted"]


def test_random_predictions_match_the_loop_reference():
    rng = random.Random(7)
    types = {"object_count": ["object_count"], "object_exist": ["object_exist"],
             "attribute_query": ["attribute_query.color", "attribute_query.size"],
             "compare_action_freq": ["compare_action_freq.equal", "compare_action_freq.less"]}
    records, turns = [], []
    for video in ("a", "b", "c"):
        for d in range(3):
            for t in range(10):
                qtype = rng.choice(sorted(types))
                sub = rng.choice(types[qtype])
                interval = rng.choice(["none", "atomic_spatial", "atomic_non_spatial",
                                       "compositional"])
                transfer = [] if t == 0 else rng.choice([[], [], ["attribute"], ["spatial"],
                                                         ["temporal"]])
                or_eff = rng.choice([-1, 0, 0, 1, 2, 5])
                answer = rng.choice(ANSWER_SUBSPACES[sub])
                records.append(_record(video, d, t, answer, qtype, sub, interval, transfer,
                                       or_eff))
                turns.append({"answer": answer, "video": video, "dialogue": d, "turn": t,
                              "type": qtype, "subtype": sub, "interval": interval,
                              "transfer": transfer, "or_distance": or_eff})
    rng.shuffle(records)  # order of records must not matter to the transfer lookup
    by_key = {f"{t['video']}_{t['dialogue']}_{t['turn']}": t for t in turns}
    for trial in range(5):
        preds = {}
        for key, t in by_key.items():
            u = rng.random()
            if u < 0.4:
                preds[key] = t["answer"]
            elif u < 0.5:
                preds[key] = None
            elif u < 0.6 and t["answer"] in ("True", "False"):
                preds[key] = t["answer"] == "True"  # a JSON boolean
            else:
                preds[key] = rng.choice(DVD_ANSWERS + ("nonsense",))
        got = dvd_accuracy(preds, records)
        want = dvd_reference(turns, [preds[f"{t['video']}_{t['dialogue']}_{t['turn']}"]
                                     for t in turns])
        assert set(got) == set(want)
        for name, value in want.items():
            assert got[name] == pytest.approx(value, rel=1e-12, abs=1e-12), name


def test_answer_space():
    assert len(DVD_ANSWERS) == len(set(DVD_ANSWERS)) == 40
    # 11 integers + 2 binary + 8 action sets + 9 colours + 5 shapes + 3 sizes + 2 materials
    union = set().union(*ANSWER_SUBSPACES.values())
    assert union == set(DVD_ANSWERS)
    sizes = {k: len(v) for k, v in ANSWER_SUBSPACES.items()}
    assert sizes["object_count"] == 11 and sizes["object_exist"] == 2
    assert sizes["action_query.by_order"] == 8 and sizes["attribute_query.color"] == 9
    assert sizes["attribute_query.shape"] == 5 and sizes["attribute_query.size"] == 3
    assert sizes["attribute_query.material"] == 2 and len(ANSWER_SUBSPACES) == 17
    assert len(answer_subspace("attribute_query")) == 19
    assert answer_subspace("compare_action_seq") == tuple(
        a for a in DVD_ANSWERS if a.isdigit() or a in ("False", "True"))
    with pytest.raises(ValueError, match="unknown DVD question type"):
        answer_subspace("object_colour")


def test_errors():
    records, preds = _hand_case()
    with pytest.raises(ValueError, match="5 predictions for 6 records"):
        dvd_accuracy(["1"] * 5, records)
    with pytest.raises(ValueError, match="no prediction key matches"):
        dvd_accuracy({"0_0": "1"}, records)  # question ids alone are not DVD keys
    with pytest.raises(TypeError, match="prediction for v_0_0 must be a string"):
        dvd_accuracy({"v_0_0": ["1"]}, records)
    with pytest.raises(TypeError, match="mapping key -> answer or a sequence"):
        dvd_accuracy("1", records)


def test_table_lists_one_metric_per_line():
    records, preds = _hand_case()
    table = dvd_accuracy(preds, records).format_table(decimals=2)
    lines = table.splitlines()
    assert lines[0] == "dvd_accuracy"
    assert lines[1].split() == ["Acc", "50.00", "(n=6)"]
    assert any(line.split()[:2] == ["Acc/type=object_count", "66.67"] for line in lines)
    assert "missing: 1" in lines and "out_of_answer_space: 1" in lines


def test_empty_records():
    r = dvd_accuracy({}, [])
    assert math.isnan(r["Acc"]) and r.info["evaluated"] == 0


# --- real data ---------------------------------------------------------------

def test_real_dialogue_oracle_and_all_wrong(shared_data):
    from fastvqa.data import load_dvd

    records = load_dvd(shared_data / "dvd" / "CLEVR_new_000002.json")
    oracle = dvd_accuracy({r.key: r.extra["answer_raw"] for r in records}, records)
    assert all(v == 100.0 for v in oracle.values())
    # "spl" (the snitch) answers none of the sample's turns.
    wrong = dvd_accuracy({r.key: "spl" for r in records}, records)
    # Transfers after no correct turn are over nothing: NaN (n=0), not 0.
    assert all(math.isnan(v) if k.startswith("Transfer/") else v == 0.0
               for k, v in wrong.items())
    assert all(wrong.count(k) == 0 for k in wrong if k.startswith("Transfer/"))
    assert wrong.info["transfer"] == {"spatial": {"turns": 1, "prior_correct": 0, "correct": 0},
                                      "temporal": {"turns": 1, "prior_correct": 0, "correct": 0}}
    # Counted by hand from the file's template texts (and the official notebook's printout):
    counts = oracle.info["counts"]
    assert {k.split("=")[1]: v for k, v in counts.items() if k.startswith("Acc/type=")} == {
        "compare_action_seq": 2, "compare_action_freq": 3, "object_exist": 1,
        "object_count": 3, "action_query": 1}
    assert {k.split("=")[1]: v for k, v in counts.items() if k.startswith("Acc/interval=")} == {
        "compositional": 8, "atomic_spatial": 2}
    # Effective long-term references: turns 6, 7, 10 at distances 3, 2, 5; four
    # turns without one (turns 1, 2, 4, 8); turns 3, 5, 9 are not effective.
    assert {k.split("=")[1]: v for k, v in counts.items()
            if k.startswith("Acc/or_distance=")} == {"0": 4, "2": 1, "3": 1, "5": 1}


def test_real_dialogue_hand_computed_prediction(shared_data):
    from fastvqa.data import load_dvd

    records = load_dvd(shared_data / "dvd" / "CLEVR_new_000002.json")
    # Answers in the file: 1, 2, False, False, True, True, 0, 0, 0, flying,rotating.
    preds = [1, "1", False, "False", "True", "False", "0", "1", "0", "flying"]
    r = dvd_accuracy(preds, records)
    assert r["Acc"] == 60.0
    assert r["Acc/type=compare_action_freq"] == pytest.approx(200.0 / 3.0)
    assert r["Acc/type=object_count"] == pytest.approx(200.0 / 3.0)
    # Turn 2 (video update) follows a correct turn 1 and is wrong; turn 8
    # (spatial transfer) follows a correct turn 7 and is wrong.
    assert r["Transfer/temporal"] == 0.0 and r["Transfer/spatial"] == 0.0
    assert r.info["transfer"]["temporal"] == {"turns": 1, "prior_correct": 1, "correct": 0}


# --- the opt-in breakdowns: containment, relative length, temporal relation ------------------

def _event(frame):
    return [0, "start_sliding", 1, frame]


def _breakdown_record(t, answer, qtype, *, contained=0, period=(None, None), cutoff=None,
                      localizing=False, temporal="none", tracking=None):
    extra = {"question_type": qtype, "contained_objs": {str(i): {} for i in range(contained)},
             "template": {"used_periods": [None, list(period) if period is not None else None],
                          "cutoff": cutoff},
             "effective_temporal_localizing": localizing,
             "turn_dependencies": {"temporal": temporal}}
    if tracking is not None:
        extra["effective_interval_tracking"] = tracking
    return QARecord(video_id="v", question_id=f"0_{t}", answer=answer, extra=extra)


def _breakdown_case():
    records = [
        # whole video (0..301 of 301 frames): ratio 1.0 -> bin 90-100%
        _breakdown_record(0, "1", "object_count", contained=2),
        # [0, 30] of cutoff 300: ratio 0.1 exactly -> (0, 10%] -> bin 0-10%
        _breakdown_record(1, "2", "object_count", period=(None, _event(30)), cutoff=_event(300),
                          localizing=True, temporal="before", tracking=True),
        # [30, 61] of 300: 31/300 = 0.1033 -> 10-20%; "prior_sliding_after" is after
        _breakdown_record(2, "True", "object_exist", period=(_event(30), _event(61)),
                          cutoff=_event(300), localizing=True, temporal="prior_sliding_after",
                          tracking=True, contained=1),
        # not localizing; "during" but not effective
        _breakdown_record(3, "False", "object_exist", period=(_event(0), _event(150)),
                          cutoff=_event(300), temporal="during", tracking=False),
        # no period: ratio 0 -> bin 0-10%; "2_flying_among_after": after, not effective
        _breakdown_record(4, "red", "attribute_query", period=None, localizing=True,
                          temporal="2_flying_among_after", tracking=False, contained=1),
    ]
    preds = ["1", "0", "True", "False", "red"]
    return records, preds


def test_extra_breakdowns_by_hand():
    records, preds = _breakdown_case()
    plain = dvd_accuracy(preds, records)
    assert not any(k.startswith(("Acc/contained=", "Acc/length=", "Acc/relation="))
                   for k in plain) and "breakdowns_by" not in plain.info  # default unchanged
    r = dvd_accuracy(preds, records, by="all")
    got = {k: v for k, v in r.items() if k not in plain}
    # correct: turns 0, 2, 3, 4; wrong: turn 1.
    assert got == {
        "Acc/contained=0": 50.0, "Acc/contained=1": 100.0, "Acc/contained=2": 100.0,
        # effective lengths only (turns 1, 2, 4): bins 0-10% (turns 1, 4), 10-20% (turn 2)
        "Acc/length=0-10%": 50.0, "Acc/length=10-20%": 100.0,
        # effective relations only: none (turn 0), before (1), after (2); turns 3, 4 dropped
        "Acc/relation=none": 100.0, "Acc/relation=before": 0.0, "Acc/relation=after": 100.0,
        "Acc/type=object_count/relation=none": 100.0,
        "Acc/type=object_count/relation=before": 0.0,
        "Acc/type=object_exist/relation=after": 100.0,
    }
    assert list(got)[:3] == ["Acc/contained=0", "Acc/contained=1", "Acc/contained=2"]
    assert r.info["length"] == {"effective_only": True, "not_effective": 2, "no_video_frames": 0}
    assert r.info["relation"] == {"effective_only": True, "not_effective": 2}
    assert r.count("Acc/length=0-10%") == 2

    every = dvd_accuracy(preds, records, by=["length", "relation"], effective_length_only=False,
                         effective_relation_only=False)
    assert every["Acc/length=90-100%"] == 100.0 and every.count("Acc/length=90-100%") == 1
    assert every["Acc/length=40-50%"] == 100.0  # turn 3: 150 / 300 = 0.5 -> (40, 50 %]
    assert every.count("Acc/length=0-10%") == 2  # turns 1 and 4 (ratio 0)
    assert every["Acc/relation=after"] == 100.0 and every.count("Acc/relation=after") == 2
    assert every["Acc/relation=during"] == 100.0
    assert every["Acc/type=attribute_query/relation=after"] == 100.0
    assert "Acc/contained=0" not in every


def test_length_bins_and_relations_follow_the_official_helpers():
    from fastvqa.metrics.dialogue import length_bin, relative_interval_length, temporal_relation

    # get_period_ratio_bin: 0 -> 0, (0, .1] -> 0, (.1, .2] -> 1, ..., > .9 -> 9
    assert [length_bin(x) for x in (0.0, 0.05, 0.1, 0.1001, 0.2, 0.95, 1.0, 1.7)] == \
        [0, 0, 0, 1, 1, 9, 9, 9]
    # The notebook's printout for the public dialogue's turn 3: 79 / 189.
    template = {"used_periods": [[None, _event(79)]], "cutoff": _event(189)}
    assert relative_interval_length(template) == 79 / 189
    assert relative_interval_length({"used_periods": [[None, None]], "cutoff": None}) == 1.0
    assert math.isnan(relative_interval_length({"used_periods": [None], "cutoff": _event(0)}))
    assert [temporal_relation(v) for v in (
        "none", "before", "after", "during", "video_update", "last_unique_obj_none",
        "earlier_unique_obj_none", "prior_flying_during", "3_rotating_among_before")] == [
        "none", "before", "after", "during", "none", "none", "none", "during", "before"]


def test_extra_breakdown_errors_and_missing_fields():
    records, preds = _breakdown_case()
    with pytest.raises(ValueError, match="unknown breakdown 'size'"):
        dvd_accuracy(preds, records, by=["size"])
    with pytest.raises(TypeError, match="by must be a sequence"):
        dvd_accuracy(preds, records, by=3)
    records[0].extra["template"] = {"used_periods": [[None, ["no frame"]]], "cutoff": None}
    with pytest.raises(ValueError, match="without a frame number"):
        dvd_accuracy(preds, records, by="length", effective_length_only=False)
    bare = [QARecord("v", "0_0", answer="1")]
    r = dvd_accuracy(["1"], bare, by="all")
    assert dict(r) == {"Acc": 100.0}
    assert {"contained_objs", "template", "turn_dependencies"} <= set(r.info["breakdowns_omitted"])


def _breakdown_reference(turns, preds, effective):
    """Float64 loop from dvd.md §4.1 and the official helpers (independent of
    fastvqa): groups by containment count, 10 % length bin, temporal relation."""
    ok = [p is not None and str(p) == str(t["answer"]) for t, p in zip(turns, preds)]
    out = {}

    def put(name, members):
        hits = 0.0
        for i in members:
            hits += 1.0 if ok[i] else 0.0
        out[name] = 100.0 * hits / float(len(members))

    groups = {}
    for i, t in enumerate(turns):
        groups.setdefault(f"Acc/contained={t['contained']}", []).append(i)
        if not effective or t["localizing"]:
            ratio = t["size"] / t["whole"]
            k = 0
            for n in range(10):  # get_period_ratio_bin, as written there
                if ratio == 0:
                    break
                if ratio * 10 > n:
                    k = n
                else:
                    break
            groups.setdefault(f"Acc/length={10 * k}-{10 * k + 10}%", []).append(i)
        rel = t["relation"]
        if rel == "none" or not effective or t["tracking"]:
            groups.setdefault(f"Acc/relation={rel}", []).append(i)
            groups.setdefault(f"Acc/type={t['type']}/relation={rel}", []).append(i)
    for name, members in groups.items():
        put(name, members)
    return out


def test_extra_breakdowns_match_the_loop_reference():
    rng = random.Random(11)
    dependency = {"none": ["none", "video_update", "last_unique_obj_none"],
                  "before": ["before", "prior_sliding_before", "1_flying_among_before"],
                  "after": ["after", "prior_rotating_after"], "during": ["during"]}
    records, turns = [], []
    for t in range(300):
        qtype = rng.choice(["object_count", "object_exist", "action_query"])
        relation = rng.choice(sorted(dependency))
        start = rng.choice([None, rng.randrange(0, 150)])
        end = rng.choice([None, rng.randrange(150, 301)])
        cutoff = rng.choice([None, rng.randrange(200, 301)])
        empty = rng.random() < 0.1
        contained = rng.choice([0, 0, 1, 2, 3])
        localizing, tracking = rng.random() < 0.5, rng.random() < 0.5
        answer = rng.choice(["0", "1", "True", "False", "flying"])
        period = None if empty else ((None if start is None else _event(start)),
                                     (None if end is None else _event(end)))
        records.append(_breakdown_record(t, answer, qtype, contained=contained, period=period,
                                         cutoff=None if cutoff is None else _event(cutoff),
                                         localizing=localizing,
                                         temporal=rng.choice(dependency[relation]),
                                         tracking=tracking))
        size = 0.0 if empty else float((301 if end is None else end) - (start or 0))
        turns.append({"answer": answer, "type": qtype, "relation": relation,
                      "contained": contained, "localizing": localizing, "tracking": tracking,
                      "size": size, "whole": float(301 if cutoff is None else cutoff)})
    for trial in range(3):
        preds = [t["answer"] if rng.random() < 0.5 else rng.choice(DVD_ANSWERS) for t in turns]
        for effective in (True, False):
            got = dvd_accuracy(preds, records, by="all", effective_length_only=effective,
                               effective_relation_only=effective)
            want = _breakdown_reference(turns, preds, effective)
            extra = {k: v for k, v in got.items()
                     if k.startswith(("Acc/contained=", "Acc/length=", "Acc/relation="))
                     or "/relation=" in k}
            assert set(extra) == set(want)
            for name, value in want.items():
                assert extra[name] == pytest.approx(value, rel=1e-12, abs=1e-12), name


def test_extra_breakdowns_on_the_public_dialogue(shared_data):
    from fastvqa.data import load_dvd

    records = load_dvd(shared_data / "dvd" / "CLEVR_new_000002.json")
    preds = [1, "1", False, "False", "True", "False", "0", "1", "0", "flying"]  # 1,3,4,5,7,9 right
    r = dvd_accuracy(preds, records, by="all", effective_length_only=False,
                     effective_relation_only=False)
    # The notebook's printout: contained objects 0,0,1,1,0,1,0,0,0,0; relative sizes
    # 1.0, 1.0, .418, .418, 1.0, .603, .0106, .0106, .206, 1.0.
    assert (r["Acc/contained=1"], r.count("Acc/contained=1")) == (pytest.approx(200 / 3), 3)
    assert {k: r.count(k) for k in r if k.startswith("Acc/length=")} == {
        "Acc/length=0-10%": 2, "Acc/length=20-30%": 1, "Acc/length=40-50%": 2,
        "Acc/length=60-70%": 1, "Acc/length=90-100%": 4}
    assert r["Acc/length=90-100%"] == 50.0  # turns 1, 2, 5, 10: 1 and 5 right
    # Turn 4 is the only temporal relation ("during"); the others have none.
    assert r.count("Acc/relation=during") == 1 and r.count("Acc/relation=none") == 9
    paper = dvd_accuracy(preds, records, by="all")
    # Only turns 7 and 8 (atomic) need the interval; "during" is never effective.
    assert {k: paper.count(k) for k in paper if k.startswith("Acc/length=")} == {
        "Acc/length=0-10%": 2}
    assert "Acc/relation=during" not in paper


def test_extra_breakdown_per_question_columns():
    records, preds = _breakdown_case()
    r = dvd_accuracy(preds, records, by="all")
    pq = r.per_question
    assert pq["contained"] == [2, 0, 1, 0, 1]
    assert np.isnan(pq["relative_length"][[0, 3]]).all()  # not localizing: not counted
    assert pq["relative_length"][[1, 2, 4]].tolist() == [30 / 300, 31 / 300, 0.0]
    assert pq["relation"] == ["none", "before", "after", None, None]
    assert "contained" not in dvd_accuracy(preds, records).per_question
