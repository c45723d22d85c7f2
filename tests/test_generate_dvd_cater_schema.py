# SPDX-License-Identifier: Apache-2.0
"""The DVD generator reads CATER's scene JSON as CATER publishes it (issue 33).

The scene below is written by hand to the layout of CATER's generator
(``render_videos.py`` / ``actions.py``: the scene's ``split``,
``image_index``, ``image_filename``, ``directions`` with all six names,
``objects`` with ``shape``/``size``/``sized``/``material``/``3d_coords``/
``rotation``/``pixel_coords``/``color``/``instance``/``locations`` keyed
``"0" .. "300"``, ``relationships``, ``movements`` keyed by instance with
``[operation, other, start, end]``), and the values the loader must produce
are written out by hand below, never computed by fastvqa.
"""

from __future__ import annotations

import copy
import json
import pickle

import numpy as np
import pytest

from fastvqa.cli import main
from fastvqa.data import load_dvd
from fastvqa.errors import InputError
from fastvqa.generate.dvd import intervals as I
from fastvqa.generate.dvd.scene import Movement, load_cater_scene, scene_from_dict


def _track(*keys):
    """CATER-style ``locations``: every frame 0..300 as a string key, moving
    in straight lines between the hand-written (frame, [x, y, z]) keys and
    standing still before the first and after the last."""
    out = {}
    for f in range(301):
        if f <= keys[0][0]:
            p = keys[0][1]
        elif f >= keys[-1][0]:
            p = keys[-1][1]
        else:
            (f0, p0), (f1, p1) = next((a, b) for a, b in zip(keys, keys[1:]) if a[0] <= f <= b[0])
            t = (f - f0) / (f1 - f0)
            p = [a + t * (b - a) for a, b in zip(p0, p1)]
        out[str(f)] = list(p)
    return out


def cater_scene(index=1, cone_colors=("blue", "red")):
    """One CATER video's scene file: the snitch, a medium and a large cone (as
    CATER always starts), a cube, a sphere and a cylinder. The medium cone
    covers the snitch (40-65), slides with it (80-105) and flies off (120-146,
    the snitch's ``_no_op``); the large cone covers the empty medium cone
    (160-188) and slides with it (200-225); the sphere gets a ``_no_op`` that
    ends on the last frame, 300."""
    return {
        "split": "new",
        "image_index": index,
        "image_filename": f"CATER_new_{index:06d}.avi",
        "objects": [
            {"shape": "spl", "size": "small", "sized": 0.3, "material": "metal",
             "3d_coords": [-2.0, 1.0, 0.3], "rotation": 211.4, "pixel_coords": [131, 118, 11.62],
             "color": "gold", "instance": "Spl_0",
             "locations": _track((3, [-2.0, 1.0, 0.3]), (27, [0.0, 1.0, 0.3]),
                                 (80, [0.0, 1.0, 0.3]), (105, [1.5, -1.0, 0.3]))},
            {"shape": "cone", "size": "medium", "sized": 0.5, "material": "rubber",
             "3d_coords": [2.0, 2.0, 0.5], "rotation": 17.9, "pixel_coords": [204, 92, 13.05],
             "color": cone_colors[0], "instance": "Cone_0",
             "locations": _track((40, [2.0, 2.0, 0.5]), (45, [2.0, 2.0, 2.5]),
                                 (60, [0.0, 1.0, 2.5]), (65, [0.0, 1.0, 0.5]),
                                 (80, [0.0, 1.0, 0.5]), (105, [1.5, -1.0, 0.5]),
                                 (120, [1.5, -1.0, 0.5]), (125, [1.5, -1.0, 2.5]),
                                 (141, [-2.5, -2.0, 2.5]), (146, [-2.5, -2.0, 0.5]),
                                 (200, [-2.5, -2.0, 0.5]), (225, [-1.0, -2.5, 0.5]))},
            {"shape": "cone", "size": "large", "sized": 0.75, "material": "metal",
             "3d_coords": [2.5, -2.5, 0.75], "rotation": 300.2, "pixel_coords": [262, 170, 9.87],
             "color": cone_colors[1], "instance": "Cone_1",
             "locations": _track((160, [2.5, -2.5, 0.75]), (165, [2.5, -2.5, 2.75]),
                                 (183, [-2.5, -2.0, 2.75]), (188, [-2.5, -2.0, 0.75]),
                                 (200, [-2.5, -2.0, 0.75]), (225, [-1.0, -2.5, 0.75]))},
            {"shape": "cube", "size": "large", "sized": 0.53, "material": "rubber",
             "3d_coords": [-2.0, -0.5, 0.53], "rotation": 45.0, "pixel_coords": [170, 160, 11.0],
             "color": "purple", "instance": "SmoothCube_v2_0",
             "locations": _track((250, [-2.0, -0.5, 0.53]), (256, [-2.0, -0.5, 2.53]),
                                 (274, [0.5, 2.5, 2.53]), (279, [0.5, 2.5, 0.53]))},
            {"shape": "sphere", "size": "small", "sized": 0.25, "material": "metal",
             "3d_coords": [0.5, -0.5, 0.25], "rotation": 88.0, "pixel_coords": [190, 140, 12.3],
             "color": "cyan", "instance": "Sphere_0",
             "locations": _track((10, [0.5, -0.5, 0.25]), (15, [0.5, -0.5, 2.25]),
                                 (33, [-1.0, 2.5, 2.25]), (38, [-1.0, 2.5, 0.25]))},
            {"shape": "cylinder", "size": "medium", "sized": 0.5, "material": "rubber",
             "3d_coords": [2.5, 0.5, 0.5], "rotation": 130.5, "pixel_coords": [240, 120, 12.1],
             "color": "green", "instance": "SmoothCylinder-Short_0",
             "locations": _track((0, [2.5, 0.5, 0.5]))},
        ],
        "directions": {"behind": [-0.6563, 0.7545, 0.0], "front": [0.6563, -0.7545, -0.0],
                       "left": [-0.7545, -0.6563, 0.0], "right": [0.7545, 0.6563, -0.0],
                       "above": [0.0, 0.0, 1.0], "below": [-0.0, -0.0, -1.0]},
        # CATER's frame-0 relations (object lists per object); the loader ignores them
        "relationships": {"behind": [[1], [], [0, 1], [0, 1], [0, 1], [1]],
                          "front": [[2, 3, 4], [0, 2, 3, 4, 5], [], [2], [2], [2]],
                          "left": [[3], [0, 3, 4], [0, 1, 3, 4, 5], [], [0, 3], [0, 3, 4]],
                          "right": [[1, 2, 4, 5], [2, 5], [], [0, 1, 2, 4, 5], [1, 2, 5], [2]]},
        "movements": {
            "Spl_0": [["_slide", None, 3, 27], ["_slide", None, 80, 105],
                      ["_no_op", None, 120, 146]],
            "Cone_0": [["_contain", "Spl_0", 40, 65], ["_slide", None, 80, 105],
                       ["_pick_place", None, 120, 146], ["_slide", None, 200, 225]],
            "Cone_1": [["_contain", "Cone_0", 160, 188], ["_slide", None, 200, 225]],
            "SmoothCube_v2_0": [["_rotate", None, 5, 30], ["_pick_place", None, 250, 279]],
            "Sphere_0": [["_pick_place", None, 10, 38], ["_no_op", None, 270, 300]],
            "SmoothCylinder-Short_0": [],
        },
    }


#: What the scene above must load as (object index = position in ``objects``).
EXPECTED_OBJECTS = [
    ("small", "gold", "metal", "spl", "Spl_0"),
    ("medium", "blue", "rubber", "cone", "Cone_0"),
    ("large", "red", "metal", "cone", "Cone_1"),
    ("large", "purple", "rubber", "cube", "SmoothCube_v2_0"),
    ("small", "cyan", "metal", "sphere", "Sphere_0"),
    ("medium", "green", "rubber", "cylinder", "SmoothCylinder-Short_0"),
]
EXPECTED_MOVEMENTS = (
    Movement(0, "sliding", 3, 27), Movement(3, "rotating", 5, 30), Movement(4, "flying", 10, 38),
    Movement(1, "flying", 40, 65, target=0), Movement(0, "sliding", 80, 105),
    Movement(1, "sliding", 80, 105), Movement(1, "flying", 120, 146),
    Movement(2, "flying", 160, 188, target=1), Movement(1, "sliding", 200, 225),
    Movement(2, "sliding", 200, 225), Movement(3, "flying", 250, 279),
)


def _write(folder, d, name="CATER_new_000001"):
    path = folder / f"{name}.json"
    path.write_text(json.dumps(d, indent=2))   # CATER dumps with indent=2
    return path


POSITIONS = {(0, 0): [-2.0, 1.0, 0.3], (0, 15): [-1.0, 1.0, 0.3], (0, 300): [1.5, -1.0, 0.3],
             (1, 65): [0.0, 1.0, 0.5], (1, 300): [-1.0, -2.5, 0.5], (2, 0): [2.5, -2.5, 0.75],
             (3, 17): [-2.0, -0.5, 0.53], (4, 38): [-1.0, 2.5, 0.25], (5, 150): [2.5, 0.5, 0.5]}
EXPECTED = {
    "frames": (301, 24.0),
    "objects": EXPECTED_OBJECTS,
    "movements": EXPECTED_MOVEMENTS,
    "shapes": [(301, 3)] * 6,
    "positions": POSITIONS,
    "directions": {"behind": (-0.6563, 0.7545, 0.0), "front": (0.6563, -0.7545, -0.0),
                   "left": (-0.7545, -0.6563, 0.0), "right": (0.7545, 0.6563, -0.0)},
    # DVD's rule (update_scene.py): covered from the end of the _contain
    # flight to the start of the cone's next _pick_place, else to the end
    "containment": (I.Containment(1, 0, 65, 120, True), I.Containment(2, 1, 188, 301, False)),
}


def _read_back(sc) -> dict:
    """What a scene holds, in :data:`EXPECTED`'s layout (positions to 1e-12)."""
    return {
        "frames": (sc.num_frames, sc.fps),
        "objects": [(o.size, o.color, o.material, o.shape, o.instance) for o in sc.objects],
        "movements": sc.movements,
        "shapes": [o.positions.shape for o in sc.objects],
        "positions": {(i, f): np.round(sc.objects[i].positions[f], 12).tolist()
                      for (i, f) in POSITIONS},
        "directions": dict(sc.directions),
        "containment": I.containment_periods(sc),
    }


def test_cater_scene_file_loads_as_written(tmp_path):
    sc = load_cater_scene(_write(tmp_path, cater_scene()))
    assert sc.name == "CATER_new_000001"
    assert _read_back(sc) == EXPECTED


def test_dvd_preprocessed_scene_reads_the_same():
    # the keys DVD's update_scene.py adds before pickling (values as it makes them)
    d = cater_scene()
    d["obj_id_to_idx"] = {o["instance"]: i for i, o in enumerate(d["objects"])}
    d["_filter_options"] = {(None, "gold", None, None): {0}, (None, None, None, "spl"): {0}}
    d["_object_identifiers"] = [None] * 6
    d["contained_events"] = {0: [(65, 120)], 1: [(188, 300)], 2: [], 3: [], 4: [], 5: []}
    d["has_contain"] = True
    d["events"] = [(0, "start_sliding", 1, 3), (0, "end_sliding", 1, 27)]
    d["periods"] = [(None, (0, "start_sliding", 1, 3))]
    d["all_periods"] = [(None, None)]
    d["relationships"] = {0: {"left": [[3]] * 6}}
    d["_action_list"] = {0: {"during": [[]] * 6, "excluding": [[]] * 6}}
    assert _read_back(scene_from_dict(d, "CATER_new_000001")) == EXPECTED


def test_unknown_fields_are_ignored(tmp_path):
    d = cater_scene()
    d["camera"] = {"location": [7.4, -6.5, 5.3], "jitter": 0.5}
    d["info"] = {"version": "1.0", "license": "CC"}
    d["objects"][0]["velocity"] = "fast"
    d["objects"][2]["mask"] = None
    d["directions"]["up"] = "not a vector"
    d["movements"]["Cone_1"][1] = ["_slide", "ignored", 200, 225]   # only _contain reads `other`
    assert _read_back(load_cater_scene(_write(tmp_path, d))) == EXPECTED


@pytest.mark.parametrize("mutate, field", [
    (lambda d: d.__setitem__("objects", {"Spl_0": {}}), "objects"),
    (lambda d: d["objects"][2].__setitem__("size", 0.75), "objects[2].size"),
    (lambda d: d["objects"][2].__setitem__("shape", "Cone"), None),        # case is forgiven
    (lambda d: d["objects"][4].__setitem__("instance", 4), "objects[4].instance"),
    (lambda d: d["objects"][1].__setitem__("locations", "0..300"), "objects[1].locations"),
    (lambda d: d["objects"][1]["locations"].__setitem__("1.5", [0, 0, 0]), "objects[1].locations"),
    (lambda d: d["objects"][3]["locations"].__setitem__("7", [1, 2]), "objects[3].locations[7]"),
    (lambda d: d.__setitem__("movements", [["_slide", None, 1, 2]]), "movements"),
    (lambda d: d["movements"]["Cone_0"][0].__setitem__(2, "40"), "movements['Cone_0'][0].start"),
    (lambda d: d["movements"]["Cone_0"][1].__setitem__(3, 10.5), "movements['Cone_0'][1].end"),
    (lambda d: d["movements"]["Sphere_0"][0].__setitem__(0, ["_pick_place"]),
     "movements['Sphere_0'][0]"),
    (lambda d: d["movements"]["Cone_1"][0].__setitem__(1, ["Cone_0"]), "movements['Cone_1'][0]"),
    (lambda d: d["movements"]["Cone_1"][0].__setitem__(1, "Cone_1"), "movements['Cone_1'][0]"),
    (lambda d: d["movements"]["SmoothCube_v2_0"].__setitem__(0, ["_contain", "Spl_0", 5, 30]),
     "movements['SmoothCube_v2_0'][0]"),
    (lambda d: d["movements"]["Sphere_0"].append(["_slide", None, 290, 301]),
     "movements['Sphere_0'][2]"),
    (lambda d: d["directions"].__setitem__("left", "left"), "directions.left"),
    (lambda d: d.__setitem__("directions", [[1, 0, 0]]), "directions"),
])
def test_wrong_typed_field_is_one_line_naming_it(tmp_path, mutate, field):
    d = copy.deepcopy(cater_scene())
    mutate(d)
    path = _write(tmp_path, d)
    if field is None:
        assert load_cater_scene(path).objects[2].shape == "cone"
        return
    with pytest.raises(InputError) as info:
        load_cater_scene(path)
    msg = str(info.value)
    assert msg.startswith(f"{path}: {field}: ") and "\n" not in msg


def test_last_frame_is_300(tmp_path):
    d = cater_scene()
    d["movements"]["SmoothCylinder-Short_0"] = [["_rotate", None, 280, 300]]
    sc = load_cater_scene(_write(tmp_path, d))
    assert sc.movements[-1] == Movement(5, "rotating", 280, 300)
    d["movements"]["SmoothCylinder-Short_0"] = [["_rotate", None, 280, 301]]
    with pytest.raises(InputError, match=r"280\.\.301 are not inside 0\.\.300"):
        load_cater_scene(_write(tmp_path, d))


def test_combined_file_and_dvd_pickle_are_refused_in_one_line(tmp_path):
    combined = tmp_path / "CATER_new_scenes.json"
    combined.write_text(json.dumps({"info": {"split": "new"}, "scenes": [cater_scene()]}))
    with pytest.raises(InputError, match="combined scenes file") as info:
        load_cater_scene(combined)
    assert "\n" not in str(info.value)
    pkl = tmp_path / "CATER_new_000001.pkl"
    pkl.write_bytes(pickle.dumps(cater_scene(), protocol=4))
    with pytest.raises(InputError, match="a pickle, not JSON") as info:
        load_cater_scene(pkl)
    assert "\n" not in str(info.value)


def test_cli_generates_dvd_dialogues_from_cater_scene_files(tmp_path, capsys):
    folder = tmp_path / "scenes"
    folder.mkdir()
    colors = {1: ("blue", "red"), 2: ("yellow", "brown"), 3: ("gray", "green")}
    for i, cones in colors.items():
        _write(folder, cater_scene(i, cones), f"CATER_new_{i:06d}")
    out = tmp_path / "dialogues.json"
    assert main(["generate", "dvd", "--scenes", str(folder), "--out", str(out), "--seed", "3",
                 "--dialogues-per-scene", "2", "--no-progress"]) == 0
    records = load_dvd(out)
    assert len(records) == 3 * 2 * 10
    assert sorted({r.video_id for r in records}) == [
        "all_actions-CATER_new_000001", "all_actions-CATER_new_000002",
        "all_actions-CATER_new_000003"]
    raw = json.loads(out.read_text())
    assert {t["image_filename"] for dialogue in raw for t in dialogue} == {
        "CATER_new_000001.avi", "CATER_new_000002.avi", "CATER_new_000003.avi"}
    for r in records:      # every interval lies inside the 301-frame video (12.54 s at 24 fps)
        for start, end in r.spans:
            assert 0 <= start <= end <= 301 / 24

    broken = tmp_path / "broken"
    broken.mkdir()
    d = cater_scene()
    d["movements"]["Cone_0"][0][2] = "40"
    path = _write(broken, d)
    capsys.readouterr()
    assert main(["generate", "dvd", "--scenes", str(broken), "--out",
                 str(tmp_path / "none.json"), "--no-progress"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and str(path) in err and "movements['Cone_0'][0].start" in err
    assert not (tmp_path / "none.json").exists()
