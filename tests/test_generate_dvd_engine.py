# SPDX-License-Identifier: Apache-2.0
"""DVD engine: CATER scene graphs, the interval engine and the program
executor (dvd.md §1.2, §2, §3.1, §6.2). Expected values are computed by hand
from the paper's rules on small scripted scenes."""

from __future__ import annotations

import itertools
import json

import numpy as np
import pytest

from fastvqa.errors import InputError
from fastvqa.generate.dvd import executor as X
from fastvqa.generate.dvd import intervals as I
from fastvqa.generate.dvd import scene as S
from fastvqa.generate.dvd.intervals import Event
from fastvqa.generate.dvd.scene import Movement, Scene, SceneObject
from fastvqa.metrics.dialogue import ANSWER_SUBSPACES, DVD_ANSWERS

AXES = {"left": (-1.0, 0.0, 0.0), "right": (1.0, 0.0, 0.0), "front": (0.0, -1.0, 0.0),
        "behind": (0.0, 1.0, 0.0)}


def build(objects, moves, num_frames, directions=AXES):
    """A scene from (size, color, material, shape, (x, y)) objects and
    (obj, action, start, end, dest_xy_or_None, target) moves; positions by
    straight-line interpolation (written here, not taken from the library)."""
    pos = np.zeros((len(objects), num_frames, 3))
    for i, o in enumerate(objects):
        pos[i, :, :2] = o[4]
        pos[i, :, 2] = 0.5
    movements = []
    for obj, action, s, e, dest, target in sorted(moves, key=lambda m: m[2]):
        movements.append(Movement(obj, action, s, e, target))
        if dest is None:
            continue
        p0 = pos[obj, s, :2].copy()
        for f in range(s, e + 1):
            pos[obj, f, :2] = p0 + (np.asarray(dest) - p0) * (f - s) / (e - s)
        pos[obj, e + 1:, :2] = dest
    objs = tuple(SceneObject(i, o[0], o[1], o[2], o[3], pos[i]) for i, o in enumerate(objects))
    return Scene("hand", objs, tuple(movements), num_frames, 24.0, directions)


# Scene 1: the interval boundaries. Groups at frames 20, 40, 45, 49, 60, 71, 81;
# gaps 20, 5, 4, 11, 11, 10 (video end 100).
def scene1():
    return build(
        [("small", "gold", "metal", "spl", (0, 0)), ("medium", "blue", "rubber", "cone", (3, 0)),
         ("large", "red", "metal", "cube", (-3, 0))],
        [(0, "sliding", 20, 40, (1, 0), None), (2, "rotating", 20, 45, None, None),
         (0, "flying", 60, 81, (1, 2), None), (1, "sliding", 49, 71, (3, 1), None)], 100)


def ev(frame, obj, kind, nth=1):
    return Event(frame, obj, kind, nth)


A, B = ev(20, 0, "start_sliding"), ev(20, 2, "start_rotating")
C, D = ev(40, 0, "end_sliding"), ev(45, 2, "end_rotating")
F, G = ev(49, 1, "start_sliding"), ev(60, 0, "start_flying")
H, K = ev(71, 1, "end_sliding"), ev(81, 0, "end_flying")


def test_events_sorted_with_nth():
    assert I.events(scene1()) == (A, B, C, D, F, G, H, K)
    assert I.events(scene1(), cutoff=60) == (A, B, C, D, F, G)
    sc = build([("small", "gold", "metal", "spl", (0, 0))],
               [(0, "sliding", 5, 20, (1, 1), None), (0, "flying", 30, 50, (2, 2), None),
                (0, "sliding", 60, 80, (0, 0), None)], 100)
    assert [(e.kind, e.nth) for e in I.events(sc)] == [
        ("start_sliding", 1), ("end_sliding", 1), ("start_flying", 1), ("end_flying", 1),
        ("start_sliding", 2), ("end_sliding", 2)]
    assert ev(3, 1, "end_flying", 2).to_json() == [1, "end_flying", 2, 3]
    assert Event.from_json([1, "end_flying", 2, 3]) == ev(3, 1, "end_flying", 2)
    with pytest.raises(InputError):
        Event.from_json([1, "end_walking", 2, 3])


def test_atomic_periods_threshold_boundary():
    # 20->40 kept (2 pairs), 40->45, 45->49 too close, 49->60 (11) kept,
    # 60->71 (11) kept, 71->81 (10) dropped; boundaries (None, 20-group), (81, None).
    expected = {(None, A), (None, B), (A, C), (B, C), (F, G), (G, H), (K, None)}
    got = I.atomic_periods(scene1())
    assert set(got) == expected and len(got) == len(expected)
    # order: by start frame (None first), then end frame
    keys = [(-1 if s is None else s.frame, 999 if e is None else e.frame) for s, e in got]
    assert keys == sorted(keys)
    # a larger threshold drops the 11-frame periods; 0 keeps every consecutive pair
    assert set(I.atomic_periods(scene1(), 11)) == {(None, A), (None, B), (A, C), (B, C),
                                                   (K, None)}
    assert (C, D) in I.atomic_periods(scene1(), 0)


def test_compositional_periods_by_hand():
    pairs = {(A, C), (B, C), (A, D), (B, D), (A, F), (B, F), (B, G), (A, H), (B, H), (B, K),
             (C, G), (C, H), (D, G), (D, H), (D, K), (F, G), (F, H), (F, K), (G, H), (G, K)}
    evs = [A, B, C, D, F, G, H, K]
    expected = pairs | {(None, e) for e in evs} | {(e, None) for e in evs} | {(None, None)}
    got = I.compositional_periods(scene1())
    assert set(got) == expected and len(got) == 37
    # the same-object rule: start->start, start->end of another movement, end->end dropped
    assert (A, G) not in got and (A, K) not in got and (C, K) not in got
    assert set(I.atomic_periods(scene1())) <= set(got)


def test_periods_with_cutoff_and_empty_video():
    got = I.atomic_periods(scene1(), cutoff=75)   # events <= 75; the video ends at 75
    assert (G, H) in got and (H, None) not in got   # 75 - 71 = 4 frames: too short
    assert all(e is None or e.frame <= 75 for _, e in got)
    still = build([("small", "gold", "metal", "spl", (0, 0))], [], 50)
    assert I.atomic_periods(still) == ((None, None),)
    assert I.compositional_periods(still) == ((None, None),)


def containment_scene(release=True):
    moves = [(1, "flying", 10, 30, (1, 1), 0), (1, "sliding", 40, 60, (2, 2), None),
             (0, "sliding", 40, 60, (2, 2), None)]
    if release:
        moves.append((1, "flying", 70, 90, (-1, -1), None))
    return build([("small", "gold", "metal", "spl", (1, 1)),
                  ("large", "purple", "rubber", "cone", (-2, 0)),
                  ("medium", "red", "metal", "cube", (0, -3))], moves, 120)


def test_containment_periods_and_events():
    assert I.containment_periods(containment_scene()) == (I.Containment(1, 0, 30, 70, True),)
    assert I.containment_periods(containment_scene(False)) == (I.Containment(1, 0, 30, 120, False),)
    evs = I.events(containment_scene())
    assert ev(30, 0, "start_contained") in evs and ev(70, 0, "end_contained") in evs
    assert not any(e.kind == "end_contained" for e in I.events(containment_scene(False)))
    # containment events are never period endpoints
    for p in I.compositional_periods(containment_scene()):
        assert all(e is None or e.action != "contained" for e in p)
    assert I.contained_in(containment_scene(), 0, (0, 40))
    assert not I.contained_in(containment_scene(), 0, (0, 35))   # 5 frames: not > 5


def test_period_frames_length_and_active_parts():
    assert I.period_frames((None, None), 100) == (0, 100)
    assert I.period_frames((None, None), 100, cutoff=80) == (0, 80)
    assert I.period_frames([[0, "start_sliding", 1, 20], None], 100) == (20, 100)
    assert I.period_frames((A, C), 100) == (20, 40)
    assert I.period_frames((5, -1), 100) == (5, 100)
    with pytest.raises(InputError):
        I.period_frames((C, A), 100)
    assert I.period_to_json((A, None)) == [[0, "start_sliding", 1, 20], None]
    assert I.relative_length((ev(20, 0, "x"), ev(60, 0, "y")), 100) == pytest.approx(0.4)
    assert I.relative_length((20, 60), 100, cutoff=80) == pytest.approx(0.5)
    assert I.relative_length((None, None), 301) == 1.0
    assert I.active_parts((20, 60), 100) == (2, 3, 4, 5)
    assert I.active_parts((None, None), 301) == tuple(range(10))
    assert I.active_parts((0, 1), 301) == (0,)
    assert I.active_parts((37, 37), 100, n=5) == (1,)


def test_actions_in_overlap_threshold():
    sc = containment_scene()
    assert I.actions_in(sc, 1, (None, None)) == ("flying", "sliding", "flying")
    assert I.actions_in(sc, 0, (None, None)) == ("sliding",)
    assert I.actions_in(sc, 2, (None, None)) == ()
    assert I.actions_in(sc, 1, (25, 45)) == ()                       # overlaps of exactly 5
    assert I.actions_in(sc, 1, (24, 46)) == ("flying", "sliding")    # 6 and 6
    assert I.actions_in(sc, 1, (24, 46), overlap=6) == ()
    assert I.is_static(sc, 2, (None, None)) and not I.is_static(sc, 1, (0, 11))
    assert I.is_static(sc, 1, (30, 40))    # touching the ends does not count


def spatial_scene():
    return build([("small", "gold", "metal", "spl", (0, 0)),
                  ("small", "red", "metal", "cube", (0.2, 0)),
                  ("small", "red", "metal", "cube", (0.21, 0)),
                  ("small", "red", "metal", "cylinder", (1, 5)),
                  ("small", "red", "rubber", "sphere", (-3, -3))],
                 [(3, "sliding", 10, 30, (-1, 5), None), (4, "sliding", 50, 60, (3, 3), None)],
                 100)


def test_spatial_relation_eps_and_two_endpoints():
    sc = spatial_scene()
    p = (10, 30)
    assert not I.spatial_relation(sc, 0, 1, p, "right")        # dot = 0.2: not > eps
    assert I.spatial_relation(sc, 0, 2, p, "right")            # 0.21 > 0.2
    assert I.spatial_relation(sc, 0, 1, p, "right", eps=0.19)
    assert not I.spatial_relation(sc, 0, 3, p, "right")        # start +1, end -1
    assert not I.spatial_relation(sc, 0, 3, p, "left")         # start -1
    assert I.spatial_relation(sc, 0, 3, p, "behind")           # 5 at both ends
    assert I.spatial_relation(sc, 0, 3, (0, 10), "right")      # static there: start only
    assert I.spatial_relation(sc, 0, 4, p, "front") and I.spatial_relation(sc, 0, 4, p, "left")
    assert not I.spatial_relation(sc, 0, 0, p, "left")
    rng = np.random.default_rng(0)
    assert I.spatial_relation(sc, 0, 2, p, "right", rng=rng)
    with pytest.raises(InputError, match="moves"):
        I.spatial_relation(sc, 3, 0, p, "left")
    with pytest.raises(InputError):
        I.spatial_relation(sc, 0, 1, p, "above")


# ----------------------------------------------------------------------------- executor

def module_scene():
    return build(
        [("small", "gold", "metal", "spl", (0, 0)), ("large", "blue", "rubber", "cone", (-2, 0)),
         ("medium", "red", "metal", "cube", (2, 0)), ("small", "red", "rubber", "sphere", (0, 2)),
         ("large", "green", "metal", "cylinder", (0, -2))],
        [(1, "flying", 10, 30, (0, 0), 0), (2, "rotating", 10, 30, None, None),
         (2, "sliding", 40, 60, (3, 0), None), (1, "sliding", 40, 60, (1, 1), None),
         (0, "sliding", 40, 60, (1, 1), None), (3, "sliding", 70, 90, (0, 3), None),
         (1, "flying", 70, 90, (-2, -1), None), (2, "rotating", 95, 110, None, None)], 120)


def N(type_, inputs=(), side=()):
    return {"type": type_, "inputs": list(inputs), "side_inputs": list(side)}


SC = [N("scene")]
FIRST_FLIGHT = [N("scene"), N("filter_shape", [0], ["cone"]), N("unique", [1]),
                N("find_interval", [2], ["first flight"])]
STATE = X.DialogueState(last_objects=(2,), tracked_objects=(3, 1), last_interval=(10, 30),
                        earlier_object=4)

# (program, expected last output, execute kwargs)
CASES = [
    (SC, [0, 1, 2, 3, 4], {}),
    (SC + [N("filter_color", [0], ["red"])], [2, 3], {}),
    (SC + [N("filter_size", [0], ["large"])], [1, 4], {}),
    (SC + [N("filter_material", [0], ["metal"])], [0, 2, 4], {}),
    (SC + [N("filter_shape", [0], ["sphere"])], [3], {}),
    (SC + [N("filter_shape", [0], ["snitch"])], [0], {}),
    (SC + [N("filter_shape", [0], ["sphere"]), N("unique", [1])], 3, {}),
    (SC + [N("filter_color", [0], ["red"]), N("filter_shape", [0], ["sphere"]),
           N("union", [1, 2])], [2, 3], {}),
    (SC + [N("filter_size", [0], ["small"]), N("filter_color", [0], ["red"]),
           N("intersect", [1, 2])], [3], {}),
    (SC + [N("filter_color", [0], ["red"]), N("count", [1])], 2, {}),
    (SC + [N("filter_color", [0], ["red"]), N("count_object", [1])], 2, {}),
    (SC + [N("filter_color", [0], ["gold"]), N("exist", [1])], True, {}),
    (SC + [N("filter_color", [0], ["brown"]), N("exist", [1])], False, {}),
    (SC + [N("filter", [0], ["small", "", "", "thing"])], [0, 3], {}),
    (SC + [N("filter_unique", [0], ["", "", "", "cylinder"])], 4, {}),
    (SC + [N("filter_count", [0], ["", "red", "", ""])], 2, {}),
    (SC + [N("filter_exist", [0], ["<Z>", "<C>", "<M>", "cone"])], True, {}),
    (SC + [N("filter_unique", [0], ["", "red", "", "cube"]), N("query_size", [1])], "medium", {}),
    (SC + [N("filter_unique", [0], ["", "red", "", "cube"]), N("query_color", [1])], "red", {}),
    (SC + [N("filter_unique", [0], ["", "red", "", "cube"]), N("query_material", [1])],
     "metal", {}),
    (SC + [N("filter_unique", [0], ["", "red", "", "cube"]), N("query_shape", [1])], "cube", {}),
    # actions over the whole video: 0 sliding; 1 flying, sliding, flying;
    # 2 rotating, sliding, rotating; 3 sliding; 4 none
    (SC + [N("filter_action", [0], ["sliding"])], [0, 1, 2, 3], {}),
    (SC + [N("filter_actions", [0], ["flying"])], [1], {}),
    (SC + [N("filter_action", [0], ["static"])], [4], {}),
    (SC + [N("filter_action", [0], ["contained"])], [0], {}),
    (SC + [N("filter_action", [0], ["flying,sliding"])], [1], {}),
    (SC + [N("filter_action", [0], ["static"])], [0, 3, 4], {"period": (10, 30)}),
    (SC + [N("filter_shape", [0], ["cone"]), N("unique", [1]),
           N("count_action", [2], ["flying"])], 2, {}),
    (SC + [N("filter_shape", [0], ["cube"]), N("unique", [1]), N("action_count", [2],
                                                               ["rotating"])], 2, {}),
    (SC + [N("filter_shape", [0], ["cone"]), N("unique", [1]), N("count_action", [2])], 3, {}),
    (SC + [N("filter_shape", [0], ["spl"]), N("unique", [1]),
           N("count_action", [2], ["contained"])], 1, {}),
    (SC + [N("filter_shape", [0], ["spl"]), N("unique", [1]), N("query_action", [2])],
     "sliding", {}),
    (SC + [N("filter_shape", [0], ["cone"]), N("unique", [1]), N("query_action_set", [2])],
     "flying,sliding", {}),
    (SC + [N("filter_shape", [0], ["cube"]), N("unique", [1]), N("query_action_seq", [2])],
     ["rotating", "sliding", "rotating"], {}),
    (SC + [N("filter_shape", [0], ["cone"]), N("unique", [1]),
           N("query_action_order", [2], ["second"])], "sliding", {}),
    (SC + [N("filter_shape", [0], ["cube"]), N("unique", [1]),
           N("action_by_order", [2], ["last"])], "rotating", {}),
    (SC + [N("filter_shape", [0], ["cylinder"]), N("unique", [1]),
           N("action_by_order", [2], ["first"])], "no action", {}),
    (SC + [N("filter_shape", [0], ["cone"]), N("unique", [1]),
           N("query_action_seq", [2]), N("query_action_order", [3], ["third"])], "flying", {}),
    (SC + [N("filter_shape", [0], ["cone"]), N("unique", [1]),
           N("query_action_freq", [2], ["twice"])], "flying", {}),
    (SC + [N("filter_shape", [0], ["cube"]), N("unique", [1]),
           N("action_by_freq", [2], ["once"])], "sliding", {}),
    (SC + [N("filter_shape", [0], ["cube"]), N("unique", [1]),
           N("action_by_freq", [2], ["the most"])], "rotating", {}),
    (SC + [N("filter_shape", [0], ["cube"]), N("unique", [1]),
           N("action_by_freq", [2], ["the least"])], "sliding", {}),
    (SC + [N("filter_shape", [0], ["cube"]), N("unique", [1]),
           N("action_by_freq", [2], ["three times"])], "no action", {}),
    (SC + [N("filter_shape", [0], ["cylinder"]), N("unique", [1]),
           N("action_by_freq", [2], ["the most"])], "no action", {}),
    (SC + [N("filter_shape", [0], ["spl"]), N("unique", [1]), N("same_action_set", [2])],
     [3], {}),
    (SC + [N("filter_shape", [0], ["spl"]), N("unique", [1]), N("same_action_seq", [2])],
     [3], {}),
    (SC + [N("filter_shape", [0], ["cylinder"]), N("unique", [1]),
           N("same_action_set", [2])], [], {}),
    # in (10, 30) every object but the cone and the cube is idle
    (SC + [N("filter_shape", [0], ["cylinder"]), N("unique", [1]),
           N("same_action_set", [2])], [0, 3], {"period": (10, 30)}),
    (SC + [N("filter_shape", [0], ["cube"]), N("unique", [1]), N("same_size", [2])], [], {}),
    (SC + [N("filter_shape", [0], ["cone"]), N("unique", [1]), N("same_size", [2])], [4], {}),
    (SC + [N("filter_shape", [0], ["cube"]), N("unique", [1]), N("same_color", [2])], [3], {}),
    (SC + [N("filter_shape", [0], ["spl"]), N("unique", [1]), N("same_material", [2])],
     [2, 4], {}),
    (SC + [N("filter_shape", [0], ["cone"]), N("unique", [1]), N("same_shape", [2])], [], {}),
    # spatial, reference = the static cylinder at (0, -2), interval (10, 30)
    (SC + [N("filter_shape", [0], ["cylinder"]), N("unique", [1]), N("relate", [2], ["behind"])],
     [0, 1, 2, 3], {"period": (10, 30)}),
    (SC + [N("filter_shape", [0], ["cylinder"]), N("unique", [1]),
           N("relate_spatial", [2], ["right"])], [2], {"period": (10, 30)}),
    (SC + [N("filter_shape", [0], ["cylinder"]), N("unique", [1]),
           N("relate_spatial", [2], ["left"])], [], {"period": (10, 30)}),   # cone ends at x=0
    (SC + [N("filter_shape", [0], ["cylinder"]), N("unique", [1]),
           N("relate_filter", [2], ["behind", "", "red", "", ""])], [2, 3], {"period": (10, 30)}),
    (SC + [N("filter_shape", [0], ["cylinder"]), N("unique", [1]),
           N("relate_filter_unique", [2], ["behind", "small", "red", "", ""])], 3,
     {"period": (10, 30)}),
    (SC + [N("filter_shape", [0], ["cylinder"]), N("unique", [1]),
           N("relate_filter_count", [2], ["behind", "", "red", "", ""])], 2, {"period": (10, 30)}),
    (SC + [N("filter_shape", [0], ["cylinder"]), N("unique", [1]),
           N("relate_filter_exist", [2], ["front", "", "", "", ""])], False, {"period": (10, 30)}),
    (SC + [N("filter_shape", [0], ["cylinder"]), N("unique", [1]),
           N("relate_action_filter_count", [2], ["behind", "rotating", "", "", "", ""])], 1,
     {"period": (10, 30)}),
    (SC + [N("filter_shape", [0], ["cylinder"]), N("unique", [1]),
           N("relate_action_filter_exist", [2], ["behind", "sliding", "", "", "", ""])], False,
     {"period": (10, 30)}),
    (SC + [N("action_filter_count", [0], ["sliding", "", "", "", ""])], 4, {}),
    (SC + [N("actions_filter_count", [0], ["sliding", "", "red", "", ""])], 2, {}),
    (SC + [N("action_filter_exist", [0], ["flying", "", "", "", "cube"])], False, {}),
    (SC + [N("actions_filter_exist", [0], ["rotating", "", "", "metal", ""])], True, {}),
    (SC + [N("action_filter_unique", [0], ["flying", "", "", "", ""])], 1, {}),
    # comparisons
    (SC + [N("filter_color", [0], ["red"]), N("count", [1]), N("filter_color", [0], ["gold"]),
           N("count", [3]), N("equal_integer", [2, 4])], False, {}),
    (SC + [N("filter_color", [0], ["red"]), N("count", [1]), N("filter_color", [0], ["gold"]),
           N("count", [3]), N("greater_than", [2, 4])], True, {}),
    (SC + [N("filter_color", [0], ["red"]), N("count", [1]), N("filter_color", [0], ["gold"]),
           N("count", [3]), N("less_than", [2, 4])], False, {}),
    (SC + [N("filter_shape", [0], ["cube"]), N("unique", [1]), N("query_color", [2]),
           N("filter_shape", [0], ["sphere"]), N("unique", [4]), N("query_color", [5]),
           N("equal_color", [3, 6])], True, {}),
    (SC + [N("filter_shape", [0], ["cube"]), N("unique", [1]), N("query_size", [2]),
           N("filter_shape", [0], ["sphere"]), N("unique", [4]), N("query_size", [5]),
           N("equal_size", [3, 6])], False, {}),
    (SC + [N("filter_shape", [0], ["cube"]), N("unique", [1]), N("query_material", [2]),
           N("filter_shape", [0], ["spl"]), N("unique", [4]), N("query_material", [5]),
           N("equal_material", [3, 6])], True, {}),
    (SC + [N("filter_shape", [0], ["cube"]), N("unique", [1]), N("query_shape", [2]),
           N("filter_color", [0], ["red"]), N("filter_material", [4], ["metal"]),
           N("unique", [5]), N("query_shape", [6]), N("equal_shape", [3, 7])], True, {}),
    (SC + [N("filter_shape", [0], ["cube"]), N("unique", [1]), N("filter_color", [0], ["green"]),
           N("unique", [3]), N("equal_object", [2, 4])], False, {}),
    (SC + [N("filter_shape", [0], ["spl"]), N("unique", [1]), N("query_action_set", [2]),
           N("filter_shape", [0], ["sphere"]), N("unique", [4]), N("query_action_set", [5]),
           N("equal_action", [3, 6])], True, {}),
    (SC + [N("filter_shape", [0], ["cone"]), N("unique", [1]), N("query_action_seq", [2]),
           N("filter_shape", [0], ["cube"]), N("unique", [4]), N("query_action_seq", [5]),
           N("equal_action", [3, 6])], False, {}),
    # intervals
    (FIRST_FLIGHT, [10, 30], {}),
    (FIRST_FLIGHT[:3] + [N("find_interval", [2], ["second flight"])], [70, 90], {}),
    (FIRST_FLIGHT[:3] + [N("find_interval", [2], ["last", "flight"])], [70, 90], {}),
    (FIRST_FLIGHT[:3] + [N("find_interval", [2], ["second flight"])], [70, -1], {"cutoff": 80}),
    (FIRST_FLIGHT[:3] + [N("find_interval", [2], ["last flight"])], [10, 30], {"cutoff": 69}),
    (SC + [N("filter_shape", [0], ["sphere"]), N("unique", [1]),
           N("find_interval", [2], ["slide"])], [70, 90], {}),
    (FIRST_FLIGHT + [N("relate_temporal", [3], ["before"])], [0, 10], {}),
    (FIRST_FLIGHT + [N("relate_temporal", [3], ["after"])], [30, -1], {}),
    (FIRST_FLIGHT + [N("relate_temporal", [3], ["during"])], [10, 30], {}),
    (FIRST_FLIGHT + [N("relate_temporal", [3], ["until"])], [0, 30], {}),
    (FIRST_FLIGHT + [N("relate_temporal", [3], ["since"])], [10, -1], {}),
    # a video update keeps the start and runs to the (new) end
    (FIRST_FLIGHT + [N("relate_temporal", [3], ["update"])], [10, -1], {}),
    ([N("track_interval"), N("relate_temporal", [0], ["since"]), N("track_interval"),
      N("union_interval", [1, 2])], [20, -1], {"state": X.DialogueState(last_interval=(20, -1))}),
    (FIRST_FLIGHT + [N("find_interval", [2], ["second flight"]), N("track_interval"),
                     N("union_interval", [3, 5])], [10, 30], {"state": STATE}),
    (FIRST_FLIGHT[:3] + [N("find_interval", [2], ["first slide"]),
                         N("find_interval", [2], ["first flight"]),
                         N("relate_temporal", [4], ["after"]), N("union_interval", [3, 5])],
     [40, 60], {}),
    # the interval input: after the cone's first flight it flies once more and slides once
    (FIRST_FLIGHT + [N("relate_temporal", [3], ["after"]),
                     N("count_action", [2, 4], ["flying"])], 1, {}),
    (FIRST_FLIGHT + [N("relate_temporal", [3], ["before"]), N("scene"),
                     N("filter_action", [5, 4], ["static"])], [0, 1, 2, 3, 4], {}),
    (FIRST_FLIGHT + [N("relate_temporal", [3], ["since"]),
                     N("query_action_set", [2, 4])], "flying,sliding", {}),
    # dialogue modules
    ([N("refer_object", [], ["it"])], 2, {"state": STATE}),
    ([N("refer_object", [], ["them"])], [2, 3],
     {"state": X.DialogueState(last_objects=(2, 3))}),
    ([N("refer_object", [], ["the second one"])], 3,
     {"state": X.DialogueState(last_objects=(2, 3))}),
    ([N("unique_obj_ref", [], "it")], 2, {"state": STATE}),
    ([N("earlier_obj_ref")], 4, {"state": STATE}),
    (SC + [N("track_object", [0]), N("filter_shape", [1], ["cone"]), N("unique", [2])], 1,
     {"state": STATE}),
    ([N("track_object")], [3, 1], {"state": STATE}),
    ([N("track_interval")], [10, 30], {"state": STATE}),
    ([N("refer_interval", [], ["that time"])], [10, 30], {"state": STATE}),
    (SC + [N("identity", [0])], [0, 1, 2, 3, 4], {}),
    ([N("refer_object", [], ["it"]), N("identity", [0]), N("query_color", [1])], "red",
     {"state": STATE}),
]


@pytest.mark.parametrize("k", range(len(CASES)))
def test_module_outputs(k):
    program, expected, kwargs = CASES[k]
    out = X.execute(program, module_scene(), **kwargs)
    assert len(out) == len(program)
    assert out[-1] == expected and type(out[-1]) is type(expected)


def test_every_module_is_exercised_and_signatures():
    used = {n["type"] for program, _, _ in CASES for n in program}
    assert used == set(X.MODULES), set(X.MODULES) - used
    assert set(X._FUNCS) == set(X.MODULES)
    assert len(X.PAPER_MODULES) == 32 and set(X.PAPER_MODULES.values()) <= set(X.MODULES)
    assert len(X.NEW_VIDEO_MODULES) == 13 and len(X.NEW_DIALOGUE_MODULES) == 4
    assert set(X.NEW_VIDEO_MODULES + X.NEW_DIALOGUE_MODULES) <= set(X.PAPER_MODULES)
    assert len(X.METADATA_FUNCTIONS) == 48
    for f in X.METADATA_FUNCTIONS:
        spec = X.MODULES[f["name"]]
        assert tuple(t for t in spec.inputs if t != "Interval?") == tuple(f["inputs"])
        assert spec.side_inputs == tuple(f.get("side_inputs", ())) and spec.output == f["output"]


ILL_POSED = [
    (SC + [N("filter_color", [0], ["red"]), N("unique", [1])], {}),
    (SC + [N("filter_shape", [0], ["cone"]), N("unique", [1]),
           N("relate", [2], ["left"])], {"period": (10, 30)}),          # the cone moves
    (SC + [N("filter_shape", [0], ["cube"]), N("unique", [1]),
           N("find_interval", [2], ["rotation"])], {}),                # two rotations
    (FIRST_FLIGHT[:3] + [N("find_interval", [2], ["third flight"])], {}),
    (FIRST_FLIGHT[:3] + [N("find_interval", [2], ["second flight"])], {"cutoff": 60}),
    ([N("refer_object", [], ["it"])], {"state": X.DialogueState(last_objects=(2, 3))}),
    ([N("track_interval")], {}),
    (FIRST_FLIGHT + [N("find_interval", [2], ["second flight"]),
                     N("union_interval", [3, 4])], {}),                # no overlap
    ([N("track_interval"), N("relate_temporal", [0], ["before"])],
     {"state": X.DialogueState(last_interval=(0, 50))}),
    ([N("track_interval"), N("relate_temporal", [0], ["after"])],
     {"state": X.DialogueState(last_interval=(20, -1))}),
]


@pytest.mark.parametrize("k", range(len(ILL_POSED)))
def test_ill_posed_programs_raise_program_error(k):
    program, kwargs = ILL_POSED[k]
    with pytest.raises(X.ProgramError):
        X.execute(program, module_scene(), **kwargs)


def test_malformed_programs_raise_input_error():
    sc = module_scene()
    for program in ([N("no_such_module")], [N("scene"), N("count", [1])],
                    [N("scene"), N("filter_color", [0], ["pink"])], [{"inputs": []}],
                    FIRST_FLIGHT + [N("count_object", [0, 3])]):
        with pytest.raises(InputError) as info:
            X.execute(program, sc)
        assert not isinstance(info.value, X.ProgramError)


def test_cutoff_truncates_the_video():
    sc = module_scene()
    sphere = SC + [N("filter_shape", [0], ["sphere"]), N("unique", [1])]
    assert X.answer(sphere + [N("query_action_set", [2])], sc, cutoff=60) == "no action"
    assert X.answer(sphere + [N("query_action_set", [2])], sc) == "sliding"
    cone = SC + [N("filter_shape", [0], ["cone"]), N("unique", [1])]
    assert X.execute(cone + [N("count_action", [2], ["flying"])], sc, cutoff=60)[-1] == 1
    # "after" the first flight ends at the cutoff
    assert X.execute(FIRST_FLIGHT + [N("relate_temporal", [3], ["after"]),
                                     N("query_action_set", [2, 4])], sc, cutoff=65)[-1] \
        == "sliding"


def test_with_outputs_layout():
    prog = SC + [N("filter_color", [0], ["red"]), N("count", [1])]
    nodes = X.with_outputs(prog, X.execute(prog, module_scene()))
    assert [n["_output"] for n in nodes] == [[0, 1, 2, 3, 4], [2, 3], 2]
    assert json.loads(json.dumps(nodes)) == nodes and "_output" not in prog[0]


# ----------------------------------------------------------------------------- answers

def test_answer_space_40_and_subspaces():
    assert len(DVD_ANSWERS) == 40 == len(set(DVD_ANSWERS))
    sizes = {"integer": 11, "binary": 2, "action_set": 8, "color": 9, "shape": 5, "size": 3,
             "material": 2}
    groups = {"integer": ANSWER_SUBSPACES["object_count"],
              "binary": ANSWER_SUBSPACES["object_exist"],
              "action_set": ANSWER_SUBSPACES["action_query.all_actions"],
              "color": ANSWER_SUBSPACES["attribute_query.color"],
              "shape": ANSWER_SUBSPACES["attribute_query.shape"],
              "size": ANSWER_SUBSPACES["attribute_query.size"],
              "material": ANSWER_SUBSPACES["attribute_query.material"]}
    assert {k: len(v) for k, v in groups.items()} == sizes
    assert sum(sizes.values()) == 40
    assert set().union(*map(set, groups.values())) == set(DVD_ANSWERS)
    # 2^3 - 1 non-empty action subsets, comma-joined alphabetically, plus "no action"
    subsets = {",".join(sorted(c)) for r in (1, 2, 3)
               for c in itertools.combinations(["sliding", "flying", "rotating"], r)}
    assert set(groups["action_set"]) == subsets | {"no action"}
    assert set(groups["color"]) == set(S.COLORS) and set(groups["shape"]) == set(S.SHAPES)
    assert set(groups["size"]) == set(S.SIZES) and set(groups["material"]) == set(S.MATERIALS)
    assert groups["integer"] == tuple(str(i) for i in range(11))


def test_to_answer():
    assert X.to_answer(True) == "True" and X.to_answer(np.bool_(False)) == "False"
    assert X.to_answer(3) == "3" and X.to_answer(np.int64(10)) == "10"
    assert X.to_answer(["sliding", "flying", "sliding"]) == "flying,sliding"
    assert X.to_answer([]) == "no action" and X.to_answer("no action") == "no action"
    assert X.to_answer("rotating,flying") == "flying,rotating"
    assert X.to_answer("spl") == "spl" and X.to_answer("red") == "red"
    for bad in (11, [1, 2], "pink", 2.5, None):
        with pytest.raises(InputError):
            X.to_answer(bad)


TERMINAL_PROGRAMS = [
    [N("scene"), N("filter_size", [0], ["small"]), N("count", [1])],
    [N("scene"), N("filter_action", [0], ["flying"]), N("exist", [1])],
    [N("scene"), N("filter_shape", [0], ["spl"]), N("unique", [1]), N("query_action_set", [2])],
    [N("scene"), N("filter_shape", [0], ["spl"]), N("unique", [1]),
     N("action_by_order", [2], ["second"])],
    [N("scene"), N("filter_shape", [0], ["spl"]), N("unique", [1]),
     N("action_by_freq", [2], ["the most"])],
    [N("scene"), N("filter_shape", [0], ["spl"]), N("unique", [1]),
     N("count_action", [2], ["sliding"])],
    [N("scene"), N("filter_shape", [0], ["spl"]), N("unique", [1]), N("same_action_seq", [2]),
     N("count", [3])],
    [N("scene"), N("filter_shape", [0], ["spl"]), N("unique", [1]), N("same_action_set", [2]),
     N("exist", [3])],
    [N("scene"), N("filter_shape", [0], ["spl"]), N("unique", [1]), N("query_color", [2])],
    [N("scene"), N("filter_shape", [0], ["spl"]), N("unique", [1]), N("query_shape", [2])],
]


def test_answers_always_in_vocabulary_on_synthetic_scenes():
    for seed in range(30):
        sc = S.synthetic_scene(np.random.default_rng(seed))
        periods = I.compositional_periods(sc)
        rng = np.random.default_rng(seed)
        for program in TERMINAL_PROGRAMS:
            period = periods[int(rng.integers(len(periods)))]
            out = X.execute(program, sc, period=period)[-1]
            assert X.to_answer(out) in DVD_ANSWERS


# ----------------------------------------------------------------------------- scenes

CATER_DICT = {
    "image_filename": "CATER_new_000001.avi",
    "objects": [
        {"shape": "spl", "size": "small", "material": "metal", "color": "gold",
         "instance": "Spl_0", "locations": {str(f): [0.0, 0.0, 0.3] for f in range(50)}},
        {"shape": "cone", "size": "large", "material": "rubber", "color": "cyan",
         "instance": "Cone_0",
         "locations": {str(f): [1.0 - min(max(f - 5, 0), 10) / 10, 0.0, 0.7] for f in range(50)}},
        {"shape": "cube", "size": "medium", "material": "metal", "color": "brown",
         "instance": "Cube_0", "locations": {str(f): [-2.0, 1.0, 0.5] for f in range(50)}},
    ],
    "movements": {"Spl_0": [["_no_op", None, 30, 40]],
                  "Cone_0": [["_contain", "Spl_0", 5, 15], ["_pick_place", None, 30, 40]],
                  "Cube_0": [["_rotate", None, 20, 28], ["_slide", None, 41, 45]]},
    "directions": {"left": [-1, 0, 0], "right": [1, 0, 0], "front": [0, -1, 0],
                   "behind": [0, 1, 0], "above": [0, 0, 1], "below": [0, 0, -1]},
}


def test_cater_loader_mapping(tmp_path):
    p = tmp_path / "CATER_new_000001.json"
    p.write_text(json.dumps(CATER_DICT))
    sc = S.load_cater_scene(p)
    assert sc.name == "CATER_new_000001" and sc.num_frames == 50 and sc.fps == 24.0
    assert [o.shape for o in sc.objects] == ["spl", "cone", "cube"]
    assert sc.objects[1].positions.shape == (50, 3) and sc.objects[1].positions.dtype == np.float64
    assert sc.objects[1].positions[10, 0] == pytest.approx(0.5)
    assert sc.movements == (Movement(1, "flying", 5, 15, 0), Movement(2, "rotating", 20, 28),
                            Movement(1, "flying", 30, 40), Movement(2, "sliding", 41, 45))
    assert sc.directions["behind"] == (0.0, 1.0, 0.0) and "above" not in sc.directions
    assert I.containment_periods(sc) == (I.Containment(1, 0, 15, 30, True),)


def test_cater_round_trip():
    sc = S.scene_from_dict(CATER_DICT, "x")
    again = S.scene_from_dict(S.scene_to_dict(sc), "x")
    assert again.movements == sc.movements and again.num_frames == sc.num_frames
    for a, b in zip(sc.objects, again.objects):
        assert a.attributes() == b.attributes() and a.instance == b.instance
        np.testing.assert_array_equal(a.positions, b.positions)
    syn = S.synthetic_scene(np.random.default_rng(5), num_objects=6)
    d = S.scene_to_dict(syn)
    back = S.scene_from_dict(json.loads(json.dumps(d)), syn.name)
    assert back.movements == syn.movements and dict(back.directions) == dict(syn.directions)
    assert all(np.array_equal(a.positions, b.positions) for a, b in zip(syn.objects, back.objects))
    assert S.scene_to_dict(back) == d


@pytest.mark.parametrize("mutate, field", [
    (lambda d: d.pop("objects"), "objects"),
    (lambda d: d["objects"][1].pop("color"), "objects[1].color"),
    (lambda d: d["objects"][2].__setitem__("shape", "pyramid"), "objects[2].shape"),
    (lambda d: d["movements"]["Cube_0"].append(["_jump", None, 1, 2]), "movements['Cube_0'][2]"),
    (lambda d: d["movements"]["Cube_0"].append(["_slide", None, 9, 3]), "movements['Cube_0'][2]"),
    (lambda d: d["movements"].__setitem__("Ghost_0", []), "movements['Ghost_0']"),
    (lambda d: d["objects"][0]["locations"].pop("7"), "objects[0].locations"),
    (lambda d: d.pop("directions"), "directions"),
])
def test_cater_loader_errors_name_file_and_field(tmp_path, mutate, field):
    d = json.loads(json.dumps(CATER_DICT))
    mutate(d)
    p = tmp_path / "bad.json"
    p.write_text(json.dumps(d))
    with pytest.raises(InputError) as info:
        S.load_cater_scene(p)
    msg = str(info.value)
    assert str(p) in msg and field in msg and "\n" not in msg
    p.write_text("{not json")
    with pytest.raises(InputError, match="bad.json"):
        S.load_cater_scene(p)


def test_synthetic_scene_obeys_cater_rules():
    rank = {"small": 0, "medium": 1, "large": 2}
    contains = 0
    for seed in range(150):
        sc = S.synthetic_scene(np.random.default_rng(seed))
        assert 3 <= len(sc.objects) <= 6 and sc.num_frames == 301
        o0 = sc.objects[0]
        assert (o0.shape, o0.color, o0.size, o0.material) == ("spl", "gold", "small", "metal")
        assert [o.shape for o in sc.objects[1:3]] == ["cone", "cone"]
        for o in sc.objects:
            assert o.positions.shape == (301, 3)
            moves = [m for m in sc.movements if m.obj == o.index]
            for a, b in zip(moves, moves[1:]):
                assert b.start > a.end                      # never overlapping
            moving = np.zeros(301, bool)
            for m in moves:
                assert 0 <= m.start < m.end <= 300
                if o.shape in ("sphere", "cone"):
                    assert m.action != "rotating"
                if m.target is not None:
                    contains += 1
                    t = sc.objects[m.target]
                    assert o.shape == "cone" and m.action == "flying"
                    assert t.shape in ("cone", "sphere", "spl") and rank[t.size] < rank[o.size]
                p = o.positions[m.start:m.end + 1]
                if m.action == "rotating":
                    assert np.all(p == p[0])
                else:   # a straight ground-plane line, from the start point to the end point
                    d = p[-1, :2] - p[0, :2]
                    rel = p[:, :2] - p[0, :2]
                    assert np.allclose(rel[:, 0] * d[1] - rel[:, 1] * d[0], 0, atol=1e-9)
                    along = rel @ d
                    assert np.all(np.diff(along) >= -1e-9)
                    if m.action == "sliding":
                        assert np.all(p[:, 2] == p[0, 2])
                moving[m.start + 1:m.end + 1] = True
            still = ~moving
            still[0] = False
            assert np.all(o.positions[still] == o.positions[np.flatnonzero(still) - 1])
        for c in I.containment_periods(sc):
            cov = sc.objects[c.container].positions[c.start:min(c.end, 300) + 1, :2]
            inside = sc.objects[c.obj].positions[c.start:min(c.end, 300) + 1, :2]
            np.testing.assert_allclose(cov, inside)
            for m in sc.movements_of(c.obj):       # it moves only with its cone
                if m.end > c.start and m.start < c.end:
                    assert m.action == "sliding" and any(
                        k.start == m.start and k.end == m.end and k.action == "sliding"
                        for k in sc.movements_of(c.container))
    assert contains > 0


def test_scene_validates_its_parts():
    sc = scene1()
    with pytest.raises(InputError, match="positions"):
        Scene("x", (SceneObject(0, "small", "red", "metal", "cube", np.zeros((5, 3))),), (), 6)
    with pytest.raises(InputError, match="movement"):
        Scene("x", sc.objects, (Movement(0, "jumping", 1, 2),), sc.num_frames)
    with pytest.raises(InputError, match="movement"):
        Scene("x", sc.objects, (Movement(0, "sliding", 90, 100),), sc.num_frames)
    with pytest.raises(InputError, match="index"):
        Scene("x", sc.objects[1:], (), sc.num_frames)


def test_synthetic_scene_deterministic_and_checked():
    a = S.synthetic_scene(np.random.default_rng(7), num_objects=(4, 8), num_frames=200)
    b = S.synthetic_scene(np.random.default_rng(7), num_objects=(4, 8), num_frames=200)
    assert S.scene_to_dict(a) == S.scene_to_dict(b) and a.name == b.name
    assert a.num_frames == 200 and 4 <= len(a.objects) <= 8
    with pytest.raises(InputError):
        S.synthetic_scene(np.random.default_rng(0), num_objects=(5, 2))
    with pytest.raises(InputError):
        S.synthetic_scene(0)


# ----------------------------------------------------------------------------- released file

SCENE_FREE = {"count_object", "count", "exist", "equal_integer", "less_than", "greater_than",
              "unique", "relate_temporal", "identity"}


def test_released_programs_reproduce_scene_free_outputs(shared_data):
    meta = json.loads((shared_data / "dvd" / "metadata.json").read_text())
    assert list(X.METADATA_FUNCTIONS) == meta["functions"]
    assert {f["name"] for f in meta["functions"]} <= set(X.MODULES)
    dialogues = json.loads((shared_data / "dvd" / "CLEVR_new_000002.json").read_text())
    checked = 0
    for turn in dialogues[0]:
        for key in ("final_all_program", "program"):
            prog = turn[key]
            assert {n["type"] for n in prog} <= set(X.MODULES)
            for node in prog:
                ins = [prog[k]["_output"] for k in node["inputs"]]
                if node["type"] in SCENE_FREE:
                    out = X.run_module(node["type"], ins, node.get("side_inputs") or [])
                elif node["type"] in ("track_object", "track_interval", "refer_object"):
                    out = node["_output"]
                    state = X.DialogueState(
                        last_objects=tuple(out) if isinstance(out, list) else (out,),
                        tracked_objects=tuple(out) if isinstance(out, list) else (),
                        last_interval=tuple(out) if node["type"] == "track_interval" else None)
                    side = node.get("side_inputs")
                    out = X.run_module(node["type"], [], [side] if isinstance(side, str)
                                       else side or [], state=state)
                else:
                    continue
                assert out == node["_output"], (key, node)
                checked += 1
        answer = turn["answer"]
        assert str(answer) in DVD_ANSWERS
        assert X.to_answer(turn["final_all_program"][-1]["_output"]) == str(answer)
    assert checked >= 50
