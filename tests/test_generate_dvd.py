# SPDX-License-Identifier: Apache-2.0
"""DVD dialogue generator: templates, dialogue rules, output layout, CLI
(dvd.md §1.4, §3.2-§3.5, §6.2). Expected values come from the paper's rules
written out here (sub-spaces, chance levels, the balancing rule by hand),
never from the generator itself."""

from __future__ import annotations

import argparse
import json
import math
from collections import Counter

import numpy as np
import pytest

from fastvqa.data import load_dvd
from fastvqa.data.dvd import (QUESTION_SUBTYPES, QUESTION_TYPES, official_question_subtype,
                              official_question_type)
from fastvqa.errors import InputError
from fastvqa.generate.dvd import templates as T
from fastvqa.generate.dvd.dialogue import (REJECTION_REASONS, AnswerBalancer, DialogueGenerator,
                                           Fact,
                                           dialogues_to_json, generate_dialogues, is_redundant,
                                           passes_dependency_filter, shard_scenes,
                                           write_dialogues)
from fastvqa.generate.dvd.executor import execute, to_answer
from fastvqa.generate.dvd.history import turn_state
from fastvqa.generate.dvd.intervals import Event, period_frames
from fastvqa.generate.dvd.scene import scene_to_dict, synthetic_scene
from fastvqa.metrics.dialogue import DVD_ANSWERS

# The answer sub-spaces, from the paper's data types (dvd.md §1.2, §3.2).
INTS = tuple(str(i) for i in range(11))
BINARY = ("False", "True")
ACTION_SETS = ("no action", "flying", "rotating", "sliding", "flying,rotating", "flying,sliding",
               "rotating,sliding", "flying,rotating,sliding")
SPACES = {
    "action_count": INTS, "object_count": INTS, "compare_action_seq.count": INTS,
    "compare_action_set.count": INTS,
    "object_exist": BINARY, "compare_action_seq.exist": BINARY,
    "compare_action_set.exist": BINARY, "compare_action_freq.equal": BINARY,
    "compare_action_freq.less": BINARY, "compare_action_freq.more": BINARY,
    "action_query.all_actions": ACTION_SETS, "action_query.by_order": ACTION_SETS,
    "action_query.by_frequency": ACTION_SETS,
    "attribute_query.color": ("blue", "brown", "cyan", "gold", "gray", "green", "purple", "red",
                              "yellow"),
    "attribute_query.shape": ("cone", "cube", "cylinder", "sphere", "spl"),
    "attribute_query.size": ("large", "medium", "small"),
    "attribute_query.material": ("metal", "rubber"),
}
TYPES = ("action_count", "action_query", "attribute_query", "compare_action_seq",
         "compare_action_set", "compare_action_freq", "object_count", "object_exist")


def _scenes(n, base=0):
    return [synthetic_scene(np.random.default_rng(1000 + base + i), name=f"scene_{base + i:04d}")
            for i in range(n)]


@pytest.fixture(scope="module")
def generated(tmp_path_factory):
    scenes = _scenes(12)
    result = generate_dialogues(scenes, seed=7, dialogues_per_scene=4)
    path = tmp_path_factory.mktemp("dvd") / "dialogues.json"
    write_dialogues(result.dialogues, path)
    return scenes, result, path


def _classify(text, prior):
    return (QUESTION_TYPES.get(official_question_type(text, prior[0])),
            QUESTION_SUBTYPES.get(official_question_subtype(text, prior[1])))


# ----------------------------------------------------------------------------- templates

def test_templates_cover_the_papers_types_and_rows():
    assert len(T.TEMPLATES) == 26
    assert len({t.name for t in T.TEMPLATES}) == 26
    assert {t.question_type for t in T.TEMPLATES} == set(TYPES)
    assert {t.question_subtype for t in T.TEMPLATES} == set(SPACES)   # the 17 sub-types
    rows = {(t.question_subtype, t.interval_label) for t in T.TEMPLATES}
    # Table 6's rows (dvd.md §3.2), by sub-type and interval type
    table6 = {
        ("compare_action_freq.more", "compositional"), ("compare_action_freq.equal", "compositional"),
        ("compare_action_freq.less", "compositional"), ("compare_action_seq.count", "compositional"),
        ("compare_action_seq.exist", "compositional"), ("compare_action_set.count", "compositional"),
        ("compare_action_set.exist", "compositional"),
        ("action_query.by_frequency", "compositional"), ("action_query.by_order", "compositional"),
        ("action_query.all_actions", "compositional"),
        ("action_query.all_actions", "atomic_non_spatial"),
        ("action_query.all_actions", "atomic_spatial"),
        ("attribute_query.size", "none"), ("attribute_query.color", "none"),
        ("attribute_query.material", "none"), ("attribute_query.shape", "none"),
        ("action_count", "compositional"), ("object_count", "compositional"),
        ("object_count", "atomic_spatial"), ("object_count", "atomic_non_spatial"),
        ("object_count", "none"), ("object_exist", "compositional"),
        ("object_exist", "atomic_spatial"), ("object_exist", "atomic_non_spatial")}
    assert table6 <= rows and len(table6) == 24
    for t in T.TEMPLATES:   # the loader reads "spatial" from the file name
        assert ("one_hop" in t.filename) == t.spatial


@pytest.mark.parametrize("template", T.TEMPLATES, ids=lambda t: t.name)
def test_every_template_text_classifies_as_its_type(template):
    for text in template.texts:
        assert _classify(text, (None, None)) == (template.question_type,
                                                  template.question_subtype), text


def test_transfer_texts_classify():
    for attr in T.ATTRIBUTES:
        text = T.ATTRIBUTE_TRANSFER_TEXTS[0].format(attr=attr)
        assert _classify(text, ("attr query", "attr query (color)")) == \
            ("attribute_query", f"attribute_query.{attr}")
    prior = ("obj count", "obj count")
    # the analysis reads a spatial transfer's first template text ("what about
    # ..."); the "how about" variant is only ever a question's wording
    for text in T.SPATIAL_TRANSFER_TEXTS[:1] + T.TEMPORAL_TRANSFER_TEXTS:
        assert _classify(text, prior) == ("object_count", "object_count")
    assert _classify(T.SPATIAL_TRANSFER_TEXTS[1], prior) == (None, None)


def test_expand_program_by_hand():
    template = T.TEMPLATES_BY_NAME["one_hop_object_count"]
    values = {"<Z>": "", "<C>": "red", "<M>": "", "<S>": "cube", "<R>": "left",
              "<Z2>": "small", "<C2>": "", "<M2>": "metal", "<S2>": ""}
    got = T.expand_program(template.program, values)
    assert got == [
        {"type": "scene", "inputs": []},
        {"type": "filter_color", "inputs": [0], "side_inputs": ["red"]},
        {"type": "filter_shape", "inputs": [1], "side_inputs": ["cube"]},
        {"type": "unique", "inputs": [2]},
        {"type": "relate_spatial", "inputs": [3], "side_inputs": ["left"]},
        {"type": "filter_size", "inputs": [4], "side_inputs": ["small"]},
        {"type": "filter_material", "inputs": [5], "side_inputs": ["metal"]},
        {"type": "count_object", "inputs": [6]},
    ]


# ----------------------------------------------------------------------------- rules by hand

def test_balancer_rules_by_hand():
    b = AnswerBalancer()
    space = ("a", "b", "c", "d", "e")
    assert b.accepts("t", "a", space)               # all counts 0
    b.commit({"t": Counter({"a": 1})})
    assert not b.accepts("t", "a", space)           # 1 > 1.1 * 0
    assert b.accepts("t", "b", space)
    b.commit({"t": Counter({"a": 29, "b": 28})})    # a 30, b 28, others 0: median 0
    # 30 <= 1.1 * 28 = 30.8, but 30 > 5 * max(0, 5) = 25
    assert not b.accepts("t", "a", space)
    assert not b.accepts("t", "b", space)           # 28 > 25 too
    assert b.accepts("t", "c", space)
    assert b.accepts("other", "a", space)           # counts are per template
    # pending counts of the dialogue being built add to the committed ones
    b2 = AnswerBalancer()
    assert not b2.accepts("t", "a", space, {"t": Counter({"a": 1})})
    b.reset()
    assert b.accepts("t", "a", space)


def test_redundancy_hand_case():
    scope = (("sliding", None, None), ((0, 1, "start_flying", 1), None), 120)
    red = Fact("count", scope, frozenset({("color", "red")}), "1")
    candidate = Fact("count", scope, frozenset({("color", "red"), ("material", "rubber")}), "0")
    assert is_redundant(candidate, [red])                        # the paper's example
    assert is_redundant(candidate, [red._replace(answer="0")])
    assert not is_redundant(candidate, [red._replace(answer="2")])
    assert not is_redundant(candidate, [red._replace(scope=(("flying", None, None),) + scope[1:])])
    assert not is_redundant(red, [candidate])                    # a coarser filter is new
    # an attribute the dialogue object state already holds
    assert is_redundant(None, [], asked="color", obj=3, known={3: {"<C>": "red"}})
    assert not is_redundant(None, [], asked="size", obj=3, known={3: {"<C>": "red"}})
    assert is_redundant(None, [], question_key=("q", 1), earlier_keys=[("q", 1)])


def test_dependency_filter_on_crafted_dialogues():
    def turn(temporal="none", obj="none", attr="none", spatial="none"):
        return {"turn_dependencies": {"temporal": temporal, "object": obj, "attribute": attr,
                                      "spatial": spatial}}

    good = [turn()] + [turn(temporal="during")] * 4 + [turn(obj="earlier_unique")] \
        + [turn(attr="color"), turn(spatial="left"), turn(temporal="video_update"),
           turn(temporal="last_unique_obj_none")]
    assert passes_dependency_filter(good)
    bad = list(good)
    bad[5] = turn()
    assert not passes_dependency_filter(bad)


def test_generator_rejects_dialogues_without_relations():
    gen = DialogueGenerator(seed=0, dialogues_per_scene=2, p_relation=0.0, p_reference=0.0,
                            p_dependent=0.0, p_extend=0.0, p_attribute=0.0, p_spatial=0.0,
                            max_attempts=5)
    result = gen.generate(_scenes(2), progress=False)
    assert result.dialogues == []
    assert result.summary.rejections["dependency_filter"] == 10
    assert set(result.summary.rejections) == set(REJECTION_REASONS)


def test_shard_ranges_partition_in_block_units():
    for n_scenes in (0, 1, 7, 250, 251, 1000):
        for n in (1, 2, 3, 5):
            for block in (1, 2, 250):
                parts = [shard_scenes(n_scenes, (i, n), block) for i in range(n)]
                assert [x for p in parts for x in p] == list(range(n_scenes))
                for p in parts:
                    assert len(p) == 0 or p.start % block == 0


def test_cutoff_sampling_spacing():
    scene = _scenes(1)[0]
    gen = DialogueGenerator(seed=0)
    rng = np.random.default_rng(0)
    for prev in (None, 60, 120):
        for _ in range(20):
            ev = gen.sample_cutoff(scene, rng, prev)
            if ev is None:
                continue
            assert ev.frame - (prev or 0) > 50 and scene.num_frames - 1 - ev.frame > 50
            assert ev.action != "contained"
    assert gen.sample_cutoff(scene, rng, scene.num_frames - 60) is None


# ----------------------------------------------------------------------------- generated set

def test_answers_in_vocabulary_and_subspace(generated):
    _, result, path = generated
    records = load_dvd(path)
    assert len(records) == result.summary.turns == 10 * len(result.dialogues) > 0
    for r in records:
        assert r.answer in DVD_ANSWERS
        assert r.answer in SPACES[r.extra["question_subtype"]], (r.question, r.answer)


def test_generated_turns_classify_as_their_templates(generated):
    _, _, path = generated
    for r in load_dvd(path):
        template = T.TEMPLATES_BY_NAME[r.extra["template_filename"][:-len(".json")]]
        assert r.extra["question_type"] == template.question_type, r.question
        assert r.extra["question_subtype"] == template.question_subtype, r.question
        assert r.extra["interval_type"] == template.interval_label, r.question


def test_every_kept_dialogue_passes_the_dependency_filter(generated):
    _, result, _ = generated
    for dialogue in result.dialogues:
        assert len(dialogue) == 10
        for turn in dialogue[1:]:
            assert any(v != "none" for v in turn["turn_dependencies"].values())


def test_answers_reexecute_from_the_written_program(generated):
    # the body program over the turn's interval, its references resolved
    # through the history written before it (an "among them" turn's body
    # names the sampled object, which only its last_object_program finds)
    scenes, result, _ = generated
    by_name = {s.name: s for s in scenes}
    for dialogue in result.dialogues:
        for t, turn in enumerate(dialogue):
            if turn["last_object_program"]:
                continue
            scene = by_name[turn["image"]]
            tpl = turn["template"]
            period = tpl["used_periods"][-1]
            if period is not None:
                period = tuple(None if e is None else Event.from_json(e) for e in period)
            cutoff = None if tpl["cutoff"] is None else tpl["cutoff"][-1]
            program = [{k: v for k, v in n.items() if k != "_output"} for n in turn["program"]]
            out = execute(program, scene, period=period, cutoff=cutoff,
                          state=turn_state(dialogue, t, scene.num_frames))
            assert to_answer(out[-1]) == str(turn["answer"])
            assert out == [n["_output"] for n in turn["program"]]


def test_cutoff_is_monotone_and_stops_at_the_end(generated):
    scenes, result, _ = generated
    frames = {s.name: s.num_frames for s in scenes}
    for dialogue in result.dialogues:
        cut = [t["template"]["cutoff"] for t in dialogue]
        for i in range(1, len(dialogue)):
            if dialogue[i]["turn_dependencies"]["temporal"] == "video_update":
                assert cut[i - 1] is not None          # never updated once at the end
                assert cut[i] is None or cut[i][-1] - cut[i - 1][-1] > 50
            else:
                assert cut[i] == cut[i - 1]
        for t, c in zip(dialogue, cut):
            end = frames[t["image"]] if c is None else c[-1]
            if c is not None:
                assert frames[t["image"]] - 1 - c[-1] > 50
            period = t["template"]["used_periods"][-1]
            if period is not None:
                s, e = period_frames(period, frames[t["image"]])
                assert 0 <= s < e <= end


def test_balancing_holds_per_template(generated):
    # committed counts obey the rule at every accept, so at the end the most
    # frequent answer of a template is at most 1.1 x the second + 1
    _, result, _ = generated
    counts: dict = {}
    for dialogue in result.dialogues:
        for turn in dialogue:
            counts.setdefault(turn["template_filename"], Counter())[str(turn["answer"])] += 1
    for name, c in counts.items():
        values = sorted(c.values()) if len(c) > 1 else [0] + sorted(c.values())
        assert values[-1] <= 1.1 * values[-2] + 1, (name, c)


def test_object_state_and_references(generated):
    _, result, _ = generated
    for dialogue in result.dialogues:
        for i, turn in enumerate(dialogue):
            used = turn["template"]["used_objects"]
            if turn["turn_dependencies"]["object"] == "earlier_unique":
                entry = used[str(turn["template"]["earlier_unique_obj"])]
                assert i - entry["original_turn"] + 1 >= 2    # long range: 2+ turns back
            for entry in used.values():
                assert 1 <= entry["original_turn"] <= i


def test_load_and_evaluate_with_every_breakdown(generated, tmp_path):
    from fastvqa.evaluation.dvd import evaluate

    _, result, path = generated
    records = load_dvd(path)
    pred = tmp_path / "pred.json"
    pred.write_text(json.dumps({r.key: r.answer for r in records}))
    m = evaluate(gt=path, pred=pred, by="all", all_relations=True)
    names = set(m.keys()) if hasattr(m, "keys") else set(m)
    assert m["Acc"] == 100.0
    assert {f"Acc/type={t}" for t in TYPES} <= names
    assert {f"Acc/subtype={s}" for s in SPACES} <= names
    assert {f"Acc/interval={i}" for i in ("none", "atomic_non_spatial", "atomic_spatial",
                                          "compositional")} <= names
    assert {f"Transfer/{k}" for k in ("attribute", "spatial", "temporal")} <= names
    assert {f"Acc/turn={k}" for k in range(1, 11)} <= names
    assert {f"Acc/relation={k}" for k in ("none", "before", "after", "during")} <= names
    assert any(n.startswith("Acc/or_distance=") and n != "Acc/or_distance=0" for n in names)
    assert any(n.startswith("Acc/length=") for n in names)
    assert any(n.startswith("Acc/contained=") for n in names)


def test_qtype_random_baseline_lands_at_analytic_chance(generated):
    # a seeded uniform draw over each sub-type's space: accuracy 1/|space|
    # in expectation whatever the answer distribution; 200 draws per turn
    _, _, path = generated
    records = load_dvd(path)
    rng = np.random.default_rng(123)
    draws = 200
    hits: Counter = Counter()
    trials: Counter = Counter()
    for r in records:
        sub = r.extra["question_subtype"]
        space = SPACES[sub]
        picks = rng.integers(len(space), size=draws)
        key = len(space)
        hits[key] += int(sum(space[k] == r.answer for k in picks))
        trials[key] += draws
    assert set(trials) == {2, 3, 5, 8, 9, 11}
    for size, n in trials.items():
        p = 1.0 / size
        sigma = math.sqrt(p * (1 - p) / n)
        assert abs(hits[size] / n - p) <= 4 * sigma, (size, hits[size] / n)


def test_same_seed_same_bytes_and_shards_union():
    scenes = _scenes(6, base=50)
    opts = dict(dialogues_per_scene=2, balance_reset=2)
    a = dialogues_to_json(generate_dialogues(scenes, seed=3, **opts).dialogues)
    b = dialogues_to_json(generate_dialogues(list(reversed(scenes)), seed=3, **opts).dialogues)
    c = dialogues_to_json(generate_dialogues(scenes, seed=4, **opts).dialogues)
    assert a == b and a != c
    parts = [generate_dialogues(scenes, seed=3, shard=(i, 3), **opts).dialogues for i in range(3)]
    assert all(parts)
    assert dialogues_to_json([d for p in parts for d in p]) == a
    with pytest.raises(InputError):
        generate_dialogues(scenes, seed=3, shard=(3, 3))


def test_layout_matches_the_release(generated, shared_data):
    released = json.loads((shared_data / "dvd" / "CLEVR_new_000002.json").read_text())
    _, result, _ = generated
    ours = result.dialogues[0][1]
    assert set(released[0][1]) <= set(ours)
    assert {"text", "interval_type", "cutoff", "used_periods", "used_objects"} <= \
        set(ours["template"])


# ----------------------------------------------------------------------------- CLI

def test_cli_writes_refuses_overwrite_and_reports(tmp_path, capsys):
    from fastvqa.generate.dvd import cli

    folder = tmp_path / "scenes"
    folder.mkdir()
    for s in _scenes(3, base=80):
        (folder / f"{s.name}.json").write_text(json.dumps(scene_to_dict(s)))
    parser = argparse.ArgumentParser()
    cli.add_arguments(parser)
    out = tmp_path / "out.json"
    args = parser.parse_args(["--scenes", str(folder), "--out", str(out), "--seed", "1",
                              "--dialogues-per-scene", "2", "--no-progress"])
    assert cli.run(args) == 0
    text = capsys.readouterr().out
    assert "dialogues" in text and "rejected" in text
    assert len(load_dvd(out)) == 3 * 2 * 10
    before = out.read_bytes()
    with pytest.raises(FileExistsError):
        cli.run(args)
    assert out.read_bytes() == before
    bad = parser.parse_args(["--scenes", str(tmp_path / "nope"), "--out", str(tmp_path / "x.json"),
                             "--seed", "1"])
    with pytest.raises(InputError, match="no such folder"):
        cli.run(bad)
    (folder / "broken.json").write_text("{not json")
    broken = parser.parse_args(["--scenes", str(folder), "--out", str(tmp_path / "y.json"),
                                "--seed", "1"])
    with pytest.raises(InputError):
        cli.run(broken)
    assert not (tmp_path / "y.json").exists()
    with pytest.raises(SystemExit):
        parser.parse_args(["--scenes", "d", "--out", "o", "--seed", "1", "--shard", "3/2"])
