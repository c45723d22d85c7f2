# SPDX-License-Identifier: Apache-2.0
"""The demo's scenes as CATER scene graphs (fastvqa.demo.cater), checked by
hand on small scripted scenes, and the DVD-style dialogues generated for
them: answers in DVD's answer space, deterministic per seed, and no crash
(0 dialogues) for a scene the generator cannot use. The end-to-end checks
on a demo folder (scenes/, dialogues.json, ``fastvqa generate dvd``) are in
tests/test_demo.py, on its demo run."""

from __future__ import annotations

import json

import numpy as np
import pytest

from fastvqa.demo import cater, synth
from fastvqa.errors import InputError
from fastvqa.generate.dvd import intervals
from fastvqa.generate.dvd.scene import load_cater_scene, scene_from_dict, scene_to_dict

# DVD's 40 answers, written out from dvd.md (§1.2/§2.2 vocabulary): 0..10,
# True/False, the 8 action-set strings, 9 colours, 2 materials, 5 shapes, 3 sizes.
_ACTION_SETS = ["no action", "flying", "rotating", "sliding", "flying,rotating",
                "flying,sliding", "rotating,sliding", "flying,rotating,sliding"]
ANSWERS = ({str(i) for i in range(11)} | {"True", "False"} | set(_ACTION_SETS)
           | {"blue", "brown", "cyan", "gold", "gray", "green", "purple", "red", "yellow"}
           | {"metal", "rubber"} | {"cone", "cube", "cylinder", "sphere", "spl"}
           | {"large", "medium", "small"})


def _obj(colour, shape, lane, x0, segments):
    return synth.SceneObject(colour, shape, lane, x0, [synth.Segment(*s) for s in segments])


def _scripted():
    """6 s at 10 fps (60 frames). A: red cube, lane 0, x0 = 100 px, slides
    1-3 s at 30 px/s, rotates 4-5.5 s. B: green sphere, lane 2, x0 = 200 px,
    flies 2-4 s. C: blue cone, lane 3, x0 = 60 px, rests throughout."""
    a = _obj("red", "cube", 0, 100.0, [("rest", 0.0, 1.0), ("slide", 1.0, 3.0, 30.0),
                                       ("rest", 3.0, 4.0), ("rotate", 4.0, 5.5),
                                       ("rest", 5.5, 6.0)])
    b = _obj("green", "sphere", 2, 200.0, [("rest", 0.0, 2.0), ("fly", 2.0, 4.0),
                                           ("rest", 4.0, 6.0)])
    c = _obj("blue", "cone", 3, 60.0, [("rest", 0.0, 6.0)])
    return [a, b, c]


@pytest.fixture(scope="module")
def scripted():
    return cater.demo_scene_to_cater("video007", _scripted(), 6.0)


def test_attributes_frames_and_names(scripted):
    s = scripted
    assert s.name == "video007" and s.num_frames == 60 and s.fps == 10.0
    assert [(o.size, o.color, o.material, o.shape) for o in s.objects] == [
        ("medium", "red", "rubber", "cube"), ("medium", "green", "rubber", "sphere"),
        ("medium", "blue", "rubber", "cone")]
    assert [o.instance for o in s.objects] == ["Cube_0", "Sphere_0", "Cone_0"]
    for o in s.objects:
        assert o.positions.shape == (60, 3) and o.positions.dtype == np.float64


def test_movements_are_inclusive_frames(scripted):
    # frame = t * 10: slide 1-3 s -> 10..30, fly 2-4 s -> 20..40, rotate 4-5.5 s -> 40..55;
    # sorted by (start, end, obj, action); rests give nothing.
    got = [(m.obj, m.action, m.start, m.end, m.target) for m in scripted.movements]
    assert got == [(0, "sliding", 10, 30, None), (1, "flying", 20, 40, None),
                   (0, "rotating", 40, 55, None)]


def test_positions_by_hand(scripted):
    """X = (x - 160) / 40, Y = (1.5 - lane) * 1.5, Z = 0.5 + lift / 40."""
    pa, pb, pc = (o.positions for o in scripted.objects)
    np.testing.assert_allclose(pa[0], [-1.5, 2.25, 0.5])      # x = 100, lane 0
    np.testing.assert_allclose(pa[10], [-1.5, 2.25, 0.5])     # the slide's start frame
    np.testing.assert_allclose(pa[20], [-0.75, 2.25, 0.5])    # x = 100 + 30 * 1
    np.testing.assert_allclose(pa[30], [0.0, 2.25, 0.5])      # x = 160: the slide is done
    np.testing.assert_allclose(pa[59], [0.0, 2.25, 0.5])      # rotation keeps the position
    np.testing.assert_allclose(pb[0], [1.0, -0.75, 0.5])      # x = 200, lane 2
    # fly 2-4 s: lift = 22 * min(1, 4u, 4(1-u)), u = (t - 2) / 2
    np.testing.assert_allclose(pb[21], [1.0, -0.75, 0.5 + 22 * 0.2 / 40])   # t = 2.1
    np.testing.assert_allclose(pb[30], [1.0, -0.75, 0.5 + 22 / 40])         # t = 3
    np.testing.assert_allclose(pb[40], [1.0, -0.75, 0.5])                   # landed
    np.testing.assert_allclose(pc, np.tile([-2.5, -2.25, 0.5], (60, 1)))    # x = 60, lane 3


def test_spatial_relations_by_hand(scripted):
    """Lanes are depth (lower lane = behind), x is left-right: frames 0..9
    nobody moves; A (lane 0, x 100), B (lane 2, x 200), C (lane 3, x 60)."""
    s = scripted
    A, B, C = 0, 1, 2
    early = (0, 9)

    def rel(ref, other, r, period=early):
        return intervals.spatial_relation(s, ref, other, period, r)

    # B relative to C: dX = 1.0 - (-2.5) = 3.5 (right), dY = -0.75 - (-2.25) = 1.5 (behind).
    assert rel(C, B, "right") and rel(C, B, "behind")
    assert not rel(C, B, "left") and not rel(C, B, "front")
    # A relative to B: dX = -2.5 (left), dY = 3.0 (behind); B relative to A: right, front.
    assert rel(B, A, "left") and rel(B, A, "behind")
    assert rel(A, B, "right") and rel(A, B, "front")
    # After A's slide (frames 31..39, B flying, so C is the reference): A at X = 0.
    assert rel(C, A, "right", (31, 39)) and rel(C, A, "behind", (31, 39))
    # During A's slide A moves: as reference it is refused (DVD needs a static one).
    with pytest.raises(InputError):
        rel(A, C, "left", (10, 30))


def test_relation_needs_more_than_eps():
    """Two objects 5 px apart in x (0.125 units <= eps 0.2) are neither left nor
    right of each other; the same lane is neither front nor behind."""
    a = _obj("red", "cube", 1, 100.0, [("rest", 0.0, 5.0)])
    b = _obj("yellow", "cube", 1, 105.0, [("rest", 0.0, 5.0)])
    s = cater.demo_scene_to_cater("v", [a, b], 5.0)
    for r in ("left", "right", "front", "behind"):
        assert not intervals.spatial_relation(s, 0, 1, (0, 49), r)
    c = _obj("purple", "sphere", 1, 109.0, [("rest", 0.0, 5.0)])   # 9 px = 0.225 > 0.2
    s = cater.demo_scene_to_cater("v", [a, c], 5.0)
    assert intervals.spatial_relation(s, 0, 1, (0, 49), "right")


def test_other_fps_and_rounding():
    """At 24 fps a 0.5 s grid stays exact: slide 1-3 s -> frames 24..72 of 144."""
    s = cater.demo_scene_to_cater("v", _scripted(), 6.0, fps=24)
    assert s.num_frames == 144
    assert [(m.obj, m.start, m.end) for m in s.movements] == [(0, 24, 72), (1, 48, 96),
                                                              (0, 96, 132)]
    assert cater.time_to_frame(0.25, 10) == 3 and cater.time_to_frame(0.45, 10) == 5


def test_every_demo_colour_and_shape_is_dvd_vocabulary():
    from fastvqa.generate.dvd.scene import COLORS, SHAPES

    assert set(synth.PALETTE) <= set(COLORS) and set(synth.SHAPES) <= set(SHAPES)


def test_bad_inputs_are_input_errors():
    with pytest.raises(InputError, match="no objects"):
        cater.demo_scene_to_cater("v", [], 5.0)
    with pytest.raises(InputError, match="colour 'orange'"):
        cater.demo_scene_to_cater("v", [_obj("orange", "cube", 0, 50.0, [("rest", 0, 5)])], 5.0)
    with pytest.raises(InputError, match="fps"):
        cater.demo_scene_to_cater("v", _scripted(), 6.0, fps=0)


def test_written_scenes_load_back(tmp_path):
    objects = {"video000": _scripted(), "video001": _scripted()[1:]}
    scenes = cater.write_scenes(tmp_path / "scenes", objects, 6.0)
    assert sorted(p.name for p in (tmp_path / "scenes").iterdir()) == ["video000.json",
                                                                        "video001.json"]
    for scene in scenes:
        back = load_cater_scene(tmp_path / "scenes" / f"{scene.name}.json")
        assert back.name == scene.name and back.num_frames == scene.num_frames
        assert back.fps == 10.0 and dict(back.directions) == dict(scene.directions)
        assert back.movements == scene.movements
        for o, p in zip(scene.objects, back.objects):
            assert o.attributes() == p.attributes() and o.instance == p.instance
            np.testing.assert_array_equal(o.positions, p.positions)
    with pytest.raises(FileExistsError):   # nothing is overwritten
        cater.write_scenes(tmp_path / "scenes", objects, 6.0)


def _demo_scenes(seed, n=4, duration=20.0):
    rng = np.random.default_rng(seed)
    return [cater.demo_scene_to_cater(f"video{i:03d}", synth.make_scene(rng, duration), duration)
            for i in range(n)]


def test_demo_dialogues_answers_in_vocabulary_and_layout():
    result = cater.demo_dialogues(_demo_scenes(0), seed=0)
    assert len(result.dialogues) == sum(result.per_scene.values()) > 0
    assert set(result.per_scene) == {"video000", "video001", "video002", "video003"}
    for n in result.per_scene.values():
        assert 0 <= n <= cater.DIALOGUES_PER_SCENE
    for dialogue in result.dialogues:
        assert len(dialogue) == 10
        for t, turn in enumerate(dialogue):
            assert str(turn["answer"]) in ANSWERS, turn["question"]
            assert turn["question_index"] == t
            if t > 0:   # the dependency filter: every later turn relates to an earlier one
                assert any(v != "none" for v in turn["turn_dependencies"].values())
    counts = cater.dialogue_counts(result)
    assert counts["dialogues"] == len(result.dialogues)
    assert counts["turns"] == 10 * len(result.dialogues)
    shown = cater.shown_dialogues(result.dialogues, 2)
    assert len(shown) == 2 and all(len(d["turns"]) == 10 for d in shown)
    assert shown[0]["turns"][0]["question"] == result.dialogues[0][0]["question"]


def test_demo_dialogues_are_deterministic_per_seed():
    from fastvqa.generate.dvd import dialogues_to_json

    a = dialogues_to_json(cater.demo_dialogues(_demo_scenes(1), seed=5).dialogues)
    b = dialogues_to_json(cater.demo_dialogues(_demo_scenes(1), seed=5).dialogues)
    c = dialogues_to_json(cater.demo_dialogues(_demo_scenes(1), seed=6).dialogues)
    assert a == b and a != c


def test_unusable_scenes_get_zero_dialogues_not_an_error():
    """One object, or two objects alike (the generator singles out < 2
    objects): the generator skips the scene, recorded as 0 dialogues."""
    a = _obj("red", "cube", 0, 100.0, [("rest", 0.0, 1.0), ("slide", 1.0, 3.0, 30.0),
                                       ("rest", 3.0, 5.0)])
    twin = _obj("red", "cube", 2, 200.0, [("rest", 0.0, 5.0)])
    other = _obj("blue", "cone", 3, 60.0, [("rest", 0.0, 5.0)])
    scenes = [cater.demo_scene_to_cater("alone", [a], 5.0),
              cater.demo_scene_to_cater("twins", [a, twin, other], 5.0),
              cater.demo_scene_to_cater("fine", [a, other], 5.0)]
    result = cater.demo_dialogues(scenes, seed=0)
    assert result.per_scene["alone"] == 0 and result.per_scene["twins"] == 0
    assert result.summary.scenes_skipped == 2
    assert cater.dialogue_counts(result)["scenes_without_dialogues"] == 2 + (
        result.per_scene["fine"] == 0)
    assert {d[0]["image"] for d in result.dialogues} <= {"fine"}


def test_scene_dict_round_trip_keeps_the_demo_fields(scripted):
    d = json.loads(json.dumps(scene_to_dict(scripted)))
    assert d["fps"] == 10.0 and d["image_filename"] == "video007.avi"
    assert d["movements"]["Cube_0"] == [["_slide", None, 10, 30], ["_rotate", None, 40, 55]]
    assert d["movements"]["Sphere_0"] == [["_pick_place", None, 20, 40]]
    assert d["movements"]["Cone_0"] == []
    back = scene_from_dict(d, "video007")
    assert back.movements == scripted.movements


def test_demo_devi_pipeline_writes_scenes_and_dialogues(tmp_path):
    """``--pipeline devi`` writes the same scenes/ and dialogues.json and
    records the counts in its results.json."""
    pytest.importorskip("av")
    pytest.importorskip("sklearn")
    from fastvqa.cli import main

    out = tmp_path / "o"
    assert main(["demo", "--pipeline", "devi", "--videos", "1", "--duration", "5",
                 "--out", str(out), "--no-progress"]) == 0
    assert load_cater_scene(out / "scenes" / "video000.json").num_frames == 50
    dialogues = json.loads((out / "dialogues.json").read_text())
    res = json.loads((out / "results.json").read_text())
    assert res["dialogues"]["dialogues"] == len(dialogues)
    assert res["dialogues"]["per_scene"] == {"video000": len(dialogues)}
    assert "dialogues" in res["timings_s"]
