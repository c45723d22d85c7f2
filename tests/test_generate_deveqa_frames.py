# SPDX-License-Identifier: Apache-2.0
"""DeVE-QA's "other time" distractors retrieved with frames outside the
question's segment (docs/papers/deveqa.md §1.2 step 2): a real H.264 video
written here, whose four 3-s segments are solid red, green, blue and yellow,
and an encoder that reads the pixels (a frame is its nearest colour) and the
colour words of a text. Every expected distractor is worked out by hand in
the comments from those colours."""

from __future__ import annotations

import argparse
import json
import re

import numpy as np
import pytest

from fastvqa.errors import CommandError, InputError
from fastvqa.generate.events import deveqa as D
from fastvqa.generate.events.captions import Event
from tests.test_llm_encoders import hf_folder  # noqa: F401  (the fixture: a tiny CLIP model)

av = pytest.importorskip("av")

FPS, SEGMENT, WIDTH, HEIGHT = 5, 3.0, 64, 48
COLOURS = {"red": (220, 40, 40), "green": (40, 180, 40), "blue": (40, 60, 220),
           "yellow": (230, 210, 30), "purple": (150, 60, 190)}
SHOWN = ("red", "green", "blue", "yellow")  # the video's segments, in order
DURATION = SEGMENT * len(SHOWN)

CAPTIONS = [
    "A crowd of people gathers slowly beside the tall red wall today",
    "A young man picks up litter near the old green garden gate",
    "A small girl runs with a kite across the wide blue field",
    "An old fisherman rows a boat over the calm yellow lake water",
]
#: the model's pairs for each caption: the answers are the candidates
PAIRS = [
    [("What does the crowd sit on?", "A wooden bench"),
     ("What hangs on the tall wall?", "The red and green flag")],
    [("What does the young man pick up?", "Picking up litter"),
     ("Where does the young man stand?", "Near the old gate")],
    [("What does the small girl hold?", "The purple hat"),
     ("What flies above the small girl?", "The green kite")],
    [("What does the fisherman carry?", "The blue bucket"),
     ("What does the old fisherman row?", "The yellow boat")],
]

# By hand. A question's candidates are the answers of the video's other
# events, in event then pair order; a text's embedding is the one-hot of the
# colours it names (normalised), a frame's the one-hot of its colour; a
# candidate scores its best cosine with an outside frame: 1 when it names a
# colour shown outside, 1/sqrt(2) for "red and green" when one of the two is
# outside, 0 otherwise.
EXPECTED = {
    # event 0 (red, [0, 3]): outside green, blue, yellow. Candidates: litter 0,
    # gate 0, purple hat 0, green kite 1, blue bucket 1, yellow boat 1: the
    # three ties at 1 keep their order, so the yellow boat is left out.
    0: {"The green kite", "The blue bucket"},
    # event 1 (green, [3, 6]): outside red, blue, yellow. bench 0, flag 0.71,
    # purple hat 0, green kite 0, blue bucket 1, yellow boat 1. The frames
    # inside (green) would have chosen the green kite (1) and the flag (0.71).
    1: {"The blue bucket", "The yellow boat"},
    # event 2 (blue, [6, 9]): outside red, green, yellow. bench 0, flag 0.71,
    # litter 0, gate 0, blue bucket 0, yellow boat 1.
    2: {"The yellow boat", "The red and green flag"},
    # event 3 (yellow, [9, 12]): outside red, green, blue. bench 0, flag 0.71,
    # litter 0, gate 0, purple hat 0, green kite 1.
    3: {"The green kite", "The red and green flag"},
}


def write_colour_video(path, colours=SHOWN, seconds=SEGMENT, fps=FPS):
    """H.264 MP4, ``seconds`` of each solid colour in turn, frame k at k/fps s."""
    with av.open(str(path), mode="w") as out:
        stream = out.add_stream("libx264", rate=fps)
        stream.width, stream.height, stream.pix_fmt = WIDTH, HEIGHT, "yuv420p"
        stream.options = {"crf": "10", "preset": "veryfast"}
        for name in colours:
            for _ in range(int(round(seconds * fps))):
                img = np.empty((HEIGHT, WIDTH, 3), np.uint8)
                img[:] = COLOURS[name]
                for packet in stream.encode(av.VideoFrame.from_ndarray(img, format="rgb24")):
                    out.mux(packet)
        for packet in stream.encode(None):
            out.mux(packet)
    return path


class ColourEncoder:
    """A frame is the one-hot of the palette colour nearest its mean pixel;
    a text the one-hot of the colour words it names (normalised; none: all
    zeros). ``seen``: the colours of the frames of each encode_images call."""

    name = "test-colour/1"

    def __init__(self):
        self.seen = []

    def encode_images(self, images):
        images = np.asarray(images)
        assert images.dtype == np.uint8 and images.ndim == 4 and images.shape[-1] == 3
        ref = np.array(list(COLOURS.values()), dtype=np.float64)
        mean = images.reshape(len(images), -1, 3).astype(np.float64).mean(axis=1)
        nearest = ((mean[:, None, :] - ref[None]) ** 2).sum(-1).argmin(axis=1)
        names = list(COLOURS)
        self.seen.append({names[k] for k in nearest})
        out = np.zeros((len(images), len(COLOURS)), np.float32)
        out[np.arange(len(images)), nearest] = 1.0
        return out

    def encode_texts(self, texts):
        out = np.zeros((len(texts), len(COLOURS)), np.float32)
        for i, text in enumerate(texts):
            words = set(re.findall(r"[a-z]+", text.lower()))
            for k, name in enumerate(COLOURS):
                out[i, k] = float(name in words)
            norm = np.linalg.norm(out[i])
            if norm:
                out[i] /= norm
        return out


def pair_model(messages):
    """The model: PAIRS of the caption it is asked about."""
    desc = re.search(r"Here are the descriptions: (.*?)\n", messages[-1]["content"]).group(1)
    pairs = PAIRS[CAPTIONS.index(desc)]
    return json.dumps([{"question": q, "answer": a} for q, a in pairs])


def colour_events(video_id="v0", spans=None):
    spans = spans or [(k * SEGMENT, (k + 1) * SEGMENT) for k in range(len(CAPTIONS))]
    return [Event(video_id, k, CAPTIONS[k], s, e, DURATION) for k, (s, e) in enumerate(spans)]


def other_time(q):
    return {o for o, src in zip(q["options"].values(), q["option_sources"]) if src == "other_time"}


@pytest.fixture(scope="module")
def video(tmp_path_factory):
    return write_colour_video(tmp_path_factory.mktemp("colour") / "v0.mp4")


# ------------------------------------------------------------------ library


def test_other_time_distractors_match_the_colours_outside_the_segment(video):
    enc = ColourEncoder()
    result = D.generate_deveqa(colour_events(), pair_model, encoder=enc, videos={"v0": video},
                               progress=False)
    assert result.rejections == [] and len(result.questions) == 8
    for q in result.questions:
        assert q["other_time_method"] == "frames"
        assert other_time(q) == EXPECTED[q["event_index"]], q["qid"]
        assert q["option_sources"].count("other_time") == 2
    assert result.frame_fallbacks == ()
    assert "other-time distractors by frames for 8 questions, text only for 0" in \
        result.summary()


def test_frames_inside_the_segment_are_never_encoded(video):
    """One encode_images call per segment (in caption order), each holding
    only the other segments' colours: no frame from inside is ever seen."""
    enc = ColourEncoder()
    D.generate_deveqa(colour_events(), pair_model, encoder=enc, videos={"v0": video},
                      progress=False)
    assert enc.seen == [{"green", "blue", "yellow"}, {"red", "blue", "yellow"},
                        {"red", "green", "yellow"}, {"red", "green", "blue"}]


def test_without_an_encoder_the_text_recipe_draws_from_the_same_candidates(video):
    result = D.generate_deveqa(colour_events(), pair_model, progress=False)
    answers = {k: {a for _, a in pairs} for k, pairs in enumerate(PAIRS)}
    for q in result.questions:
        assert q["other_time_method"] == "text"
        others = set().union(*(answers[k] for k in answers if k != q["event_index"]))
        assert len(other_time(q)) == 2 and other_time(q) <= others
    assert result.frame_fallbacks == () and "other-time" not in result.summary()


def test_a_missing_video_and_a_segment_without_outside_frames_fall_back(video, tmp_path):
    """v1 has no file: its questions are text only. In w, caption 0 spans the
    whole video (no frame outside it): text only; caption 1 ([0, 6]: outside
    blue and yellow) ranks the candidates of caption 0 by frames: bench 0,
    flag 0: a tie, kept in order."""
    w_events = colour_events("w", [(0.0, DURATION), (0.0, 6.0)])
    events = colour_events("v0") + colour_events("v1") + w_events
    result = D.generate_deveqa(events, pair_model, encoder=ColourEncoder(),
                               videos={"v0": video, "w": video}, progress=False)
    method = {q["qid"]: q["other_time_method"] for q in result.questions}
    assert {m for k, m in method.items() if k.startswith("v0_")} == {"frames"}
    assert {m for k, m in method.items() if k.startswith("v1_")} == {"text"}
    assert method["w_e0_q0"] == method["w_e0_q1"] == "text"
    assert method["w_e1_q0"] == method["w_e1_q1"] == "frames"
    by_qid = {q["qid"]: q for q in result.questions}
    assert other_time(by_qid["w_e1_q0"]) == {"A wooden bench", "The red and green flag"}
    assert [vid for vid, _ in result.frame_fallbacks] == ["v1", "w"]
    assert "no video file" in result.frame_fallbacks[0][1]
    assert re.match(r"caption 0: Outside: no frame lies outside", result.frame_fallbacks[1][1])
    assert "(2 videos or events without frames)" in result.summary()


def test_a_folder_of_videos_is_searched_like_fastvqa_run(video, tmp_path):
    sub = tmp_path / "videos" / "part1"
    sub.mkdir(parents=True)
    (sub / "v0.mp4").write_bytes(video.read_bytes())
    files = D.video_files(tmp_path / "videos")
    assert files == {"part1/v0": sub / "v0.mp4", "v0": sub / "v0.mp4"}
    result = D.generate_deveqa(colour_events(), pair_model, encoder=ColourEncoder(),
                               videos=tmp_path / "videos", progress=False)
    assert {q["other_time_method"] for q in result.questions} == {"frames"}


def test_an_unreadable_video_falls_back_with_its_reason(tmp_path):
    bad = tmp_path / "v0.mp4"
    bad.write_bytes(b"not a video at all")
    result = D.generate_deveqa(colour_events(), pair_model, encoder=ColourEncoder(),
                               videos={"v0": bad}, progress=False)
    assert {q["other_time_method"] for q in result.questions} == {"text"}
    assert len(result.frame_fallbacks) == 1 and str(bad) in result.frame_fallbacks[0][1]


def test_rank_by_frames_hand_values():
    frames = np.array([[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]])
    texts = np.array([[0.0, 0.0, 1.0], [0.0, 1.0, 0.0], [0.6, 0.0, 0.8], [1.0, 0.0, 0.0]])
    # best cosine with a frame: 0, 1, 0.6, 1 -> the two 1s in order, then 0.6, then 0
    assert D.rank_by_frames(frames, texts).tolist() == [1, 3, 2, 0]
    assert D.rank_by_frames(np.zeros((0, 3)), texts).tolist() == [0, 1, 2, 3]
    with pytest.raises(InputError, match="one D"):
        D.rank_by_frames(frames, np.zeros((2, 4)))


def test_top_usable_skips_what_the_options_would_refuse():
    ranked = ["picking up litter.", "The blue bucket", "the blue bucket", "The yellow boat"]
    # the first equals the answer (normalised), the third the second
    assert D._top_usable(ranked, "Picking up litter", 2, 0.8) == ["The blue bucket",
                                                                  "The yellow boat"]
    assert D._top_usable(ranked, "Picking up litter", 1, 0.8) == ["The blue bucket"]


@pytest.mark.parametrize("kw, message", [
    ({"encoder": ColourEncoder()}, "an encoder needs the videos"),
    ({"videos": {"v0": "v0.mp4"}}, "videos are read only with an encoder"),
    ({"encoder": ColourEncoder(), "videos": {}, "outside_frames": 0}, "outside_frames"),
    ({"encoder": object(), "videos": {}}, "encode_images"),
    ({"encoder": ColourEncoder(), "videos": "/no/such/folder"}, "not a folder"),
])
def test_bad_frame_arguments_are_refused_before_any_model_call(kw, message):
    calls = []

    def lm(messages):
        calls.append(1)
        return pair_model(messages)

    with pytest.raises((InputError, TypeError), match=message) as info:
        D.generate_deveqa(colour_events(), lm, progress=False, **kw)
    assert calls == [] and "\n" not in str(info.value)


def test_an_encoder_of_the_wrong_shape_is_one_line(video):
    class Short(ColourEncoder):
        def encode_images(self, images):
            return super().encode_images(images)[:1]

    with pytest.raises(InputError, match=r"encoder.encode_images: expected \(16, D\)"):
        D.generate_deveqa(colour_events(), pair_model, encoder=Short(), videos={"v0": video},
                          progress=False)


# ---------------------------------------------------------------------- CLI

LM_MODULE = f'''
import json, re
CAPTIONS = {CAPTIONS!r}
PAIRS = {PAIRS!r}
def generate(messages):
    desc = re.search(r"Here are the descriptions: (.*?)\\n", messages[-1]["content"]).group(1)
    return json.dumps([{{"question": q, "answer": a}} for q, a in PAIRS[CAPTIONS.index(desc)]])
'''


def _cli(tmp_path, *argv):
    from fastvqa.generate.events import cli

    p = argparse.ArgumentParser()
    cli.add_arguments(p)
    args = p.parse_args([str(a) for a in argv])
    return cli.run(args)


@pytest.fixture
def cli_inputs(tmp_path, video):
    caps = tmp_path / "captions.json"
    spans = [[k * SEGMENT, (k + 1) * SEGMENT] for k in range(len(CAPTIONS))]
    doc = {vid: {"duration": DURATION, "timestamps": spans, "sentences": CAPTIONS}
           for vid in ("v0", "v1")}
    caps.write_text(json.dumps(doc), encoding="utf-8")
    (tmp_path / "lm_mod.py").write_text(LM_MODULE, encoding="utf-8")
    videos = tmp_path / "videos"
    videos.mkdir()
    (videos / "v0.mp4").write_bytes(video.read_bytes())  # v1 has no file
    return caps, f"{tmp_path / 'lm_mod.py'}:generate", videos


def test_cli_encoder_ranks_by_frames_and_falls_back_per_video(tmp_path, cli_inputs,
                                                              hf_folder, capsys):  # noqa: F811
    """`--encoder hf:FOLDER --videos DIR`: v0's questions by frames, v1 (no
    file) by text. The expected top two of each v0 question are recomputed
    here from the encoder's embeddings of the frames outside the segment:
    best cosine per candidate, a stable sort in plain Python."""
    from fastvqa.data import load_deveqa
    from fastvqa.llm import HFClipEncoder
    from fastvqa.video import Outside, read_frames

    caps, llm, videos = cli_inputs
    out = tmp_path / "q.json"
    assert _cli(tmp_path, "--captions", caps, "--llm", llm, "--out", out, "--encoder",
                f"hf:{hf_folder}", "--videos", videos, "--no-progress") == 0
    err = capsys.readouterr().err
    assert "other-time distractors by frames for 8 questions, text only for 8 " \
           "(1 videos or events without frames)" in err
    records = json.loads(out.read_text())
    assert len(load_deveqa(out)) == len(records) == 16
    enc = HFClipEncoder(hf_folder, device="cpu")
    answers = [[a for _, a in pairs] for pairs in PAIRS]
    for q in records:
        if q["video_id"] == "v1":
            assert q["other_time_method"] == "text"
            continue
        assert q["other_time_method"] == "frames"
        k = q["event_index"]
        pixels = read_frames(videos / "v0.mp4", Outside(tuple(q["gt_span"]), 16)).data
        f = enc.encode_images(np.asarray(pixels)).astype(np.float64)
        cands = [a for e in range(len(PAIRS)) if e != k for a in answers[e]]
        t = enc.encode_texts(cands).astype(np.float64)
        score = [max(float(np.dot(row, fr)) for fr in f) for row in t]
        order = sorted(range(len(cands)), key=lambda i: -score[i])
        assert other_time(q) == {cands[order[0]], cands[order[1]]}, q["qid"]


def test_cli_without_encoder_is_text_only(tmp_path, cli_inputs, capsys):
    caps, llm, _ = cli_inputs
    out = tmp_path / "q.json"
    assert _cli(tmp_path, "--captions", caps, "--llm", llm, "--out", out, "--no-progress") == 0
    assert {q["other_time_method"] for q in json.loads(out.read_text())} == {"text"}
    assert "other-time" not in capsys.readouterr().err


@pytest.mark.parametrize("extra, error, message", [
    (["--encoder", "hf:/nowhere"], CommandError, "--encoder needs --videos DIR"),
    (["--videos", "VIDEOS"], CommandError, "--videos is read only with --encoder"),
    (["--encoder", "clip:ViT-B-32", "--videos", "VIDEOS"], InputError,
     "open_clip:ARCH@CHECKPOINT"),
    (["--encoder", "hf:/nowhere", "--videos", "NOWHERE"], CommandError,
     "not a folder \\(no such path\\)"),
])
def test_cli_bad_frame_options_are_one_line_before_any_model_call(tmp_path, cli_inputs,
                                                                  extra, error, message):
    caps, llm, videos = cli_inputs
    extra = [str(videos) if a == "VIDEOS" else str(tmp_path / "none") if a == "NOWHERE"
             else a for a in extra]
    out, cache = tmp_path / "q.json", tmp_path / "cache.jsonl"
    with pytest.raises(error, match=message) as info:
        _cli(tmp_path, "--captions", caps, "--llm", llm, "--out", out, "--cache", cache,
             "--no-progress", *extra)
    assert "\n" not in str(info.value)
    assert not out.exists() and not cache.exists()  # no model call was made
