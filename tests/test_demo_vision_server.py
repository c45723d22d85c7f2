# SPDX-License-Identifier: Apache-2.0
"""The demo's pixel-reading vision model behind a real local server.

One synthetic video with a known scene (:mod:`fastvqa.demo.synth`),
decoded at a sampler's frames, sent as PNG images through
ChatCaptioner / ChatAnswerer + ChatCompletionsClient + serve_chat_model(DemoVisionModel()).
Expected values come from the scene's annotations (its segments), never
from running the model under test."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("av")
pytest.importorskip("PIL")

from fastvqa.demo import synth
from fastvqa.demo.vision_server import DemoVisionModel
from fastvqa.devi.pipeline import parse_answer
from fastvqa.devi.prompts import CAPTION
from fastvqa.llm import ChatAnswerer, ChatCaptioner, ChatCompletionsClient, serve_chat_model

DURATION = 8.0
N_FRAMES = 8


def _scene() -> list:
    """Three objects in their own lanes; every action lasts >= 2.5 s, so
    frames 1 s apart see each of them."""
    S = synth.Segment
    return [
        synth.SceneObject("red", "cube", 0, 60.0, [
            S("rest", 0.0, 2.0), S("slide", 2.0, 5.5, 40.0), S("rest", 5.5, DURATION)]),
        synth.SceneObject("blue", "sphere", 1, 220.0, [
            S("rest", 0.0, 3.0), S("fly", 3.0, 5.5), S("rest", 5.5, DURATION)]),
        synth.SceneObject("yellow", "cone", 3, 120.0, [
            S("rest", 0.0, 1.0), S("rotate", 1.0, 4.0), S("rest", 4.0, DURATION)]),
    ]


@pytest.fixture(scope="module")
def video(tmp_path_factory):
    """``(objects, Frames)``: the scene encoded as the demo encodes its
    videos, decoded at Uniform(8)'s frames."""
    from fastvqa.video import Uniform, read_frames

    objects = _scene()
    path = tmp_path_factory.mktemp("vision") / "scene.mp4"
    synth.encode_video(path, objects, DURATION)
    return objects, read_frames(path, Uniform(N_FRAMES), backend="pyav")


def _client(served):
    return ChatCompletionsClient(served.base_url, "demo-vlm", max_retries=0)


def _overlap(a, b) -> float:
    return max(0.0, min(a[1], b[1]) - max(a[0], b[0]))


def _sentence(caption: str, name: str) -> str:
    """The caption's sentence about ``name`` ("red cube"), '' when none."""
    at = caption.find(f"The {name} ")
    if at < 0:
        return ""
    end = caption.find(". The ", at)  # "0.5 s" holds a dot too
    return caption[at:] if end < 0 else caption[at:end]


def test_the_server_receives_the_decoded_frames_and_the_sampler_times(video):
    _, frames = video
    # Uniform(8) over 80 frames at 10 fps: the middles of 8 equal parts.
    assert frames.indices.tolist() == [5, 15, 25, 35, 45, 55, 65, 75]
    assert np.array_equal(frames.pts_seconds, frames.indices / synth.NATIVE_FPS)
    model = DemoVisionModel()
    with serve_chat_model(model) as served:
        ChatCaptioner(_client(served), CAPTION, format="png").caption(frames.data,
                                                                     frames.pts_seconds)
    (times, images), = model.received
    assert images.shape == frames.data.shape and np.array_equal(images, frames.data)
    assert np.array_equal(times, frames.pts_seconds)


def test_caption_names_what_the_scene_does_in_the_window(video):
    objects, frames = video
    with serve_chat_model(DemoVisionModel()) as served:
        caption = ChatCaptioner(_client(served), CAPTION, format="png").caption(
            frames.data, frames.pts_seconds)
    window = (frames.pts_seconds[0], frames.pts_seconds[-1])
    for obj in objects:
        sentence = _sentence(caption, obj.name)
        assert sentence, (obj.name, caption)
        for seg in obj.segments:
            verb = synth.ACTION_VERBS[seg.action]
            if seg.action != "rest" and _overlap((seg.start, seg.end), window) > 0:
                assert verb in sentence, (obj.name, seg, caption)
        done = {s.action for s in obj.segments}
        for action in set(synth.ACTIONS) - done:
            assert synth.ACTION_VERBS[action] not in sentence, (obj.name, action, caption)


def _questions(objects) -> list:
    """One question of each multiple-choice kind, worded as
    :func:`fastvqa.demo.synth.make_questions` words them, with the gold
    option and span read from the segments."""
    red, blue, yellow = objects
    verbs = synth.ACTION_VERBS
    first = next(s for s in yellow.segments if s.action != "rest")
    slide = next(s for s in red.segments if s.action == "slide")
    fly = next(s for s in blue.segments if s.action == "fly")
    objs = ["the red cube", "the yellow cone", "the blue sphere", "the green cube"]
    return [
        (f"What does the {yellow.name} do first?", ["slides", "rotates", "flies"],
         verbs[first.action], (first.start, first.end)),
        (f"What does the {red.name} do between {slide.start:g} s and {slide.end:g} s?",
         ["rests", "flies", "slides", "rotates"], verbs[slide.action], (slide.start, slide.end)),
        (f"Which object {verbs[fly.action]} between {fly.start:g} s and {fly.end:g} s?",
         objs, f"the {blue.name}", (fly.start, fly.end)),
    ]


def test_answers_are_right_and_grounded(video):
    objects, frames = video
    with serve_chat_model(DemoVisionModel()) as served:
        answerer = ChatAnswerer(_client(served), format="png")
        for question, options, gold, gold_span in _questions(objects):
            reply = answerer.answer(frames.data, frames.pts_seconds, question, options)
            parsed = parse_answer(reply, options)
            assert parsed.error == "", (question, reply)
            assert options[parsed.option] == gold, (question, reply)
            assert _overlap(parsed.spans[0], gold_span) > 0, (question, reply, gold_span)


def test_open_questions_get_a_free_text_answer(video):
    objects, frames = video
    question, _, gold, gold_span = _questions(objects)[1]
    with serve_chat_model(DemoVisionModel()) as served:
        reply = ChatAnswerer(_client(served), format="png").answer(
            frames.data, frames.pts_seconds, question, [])
    lines = reply.splitlines()
    assert lines[0] == f"Answer: {gold}", reply
    parsed = parse_answer(reply, [gold])
    assert _overlap(parsed.spans[0], gold_span) > 0, reply


def test_replies_follow_the_pixels(video):
    """Grey frames: no object in the caption, no answer. The same frames in
    reverse order at the same times: the first action moves to the mirrored
    time (the scene played backwards)."""
    objects, frames = video
    grey = np.full_like(frames.data, synth.BACKGROUND[0])
    reverse = frames.data[::-1].copy()
    question, options, gold, (s, e) = _questions(objects)[0]
    model = DemoVisionModel()
    with serve_chat_model(model) as served:
        captioner = ChatCaptioner(_client(served), CAPTION, format="png")
        answerer = ChatAnswerer(_client(served), format="png")
        caption = captioner.caption(frames.data, frames.pts_seconds)
        grey_caption = captioner.caption(grey, frames.pts_seconds)
        reply = answerer.answer(frames.data, frames.pts_seconds, question, options)
        grey_reply = answerer.answer(grey, frames.pts_seconds, question, options)
        reverse_reply = answerer.answer(reverse, frames.pts_seconds, question, options)
    assert grey_caption != caption
    assert not any(_sentence(grey_caption, o.name) for o in objects), grey_caption
    assert grey_reply != reply and parse_answer(grey_reply, options).option == -1
    assert reverse_reply != reply
    parsed = parse_answer(reverse_reply, options)
    assert options[parsed.option] == gold  # rotating is still its first movement...
    mirrored = (DURATION - e, DURATION - s)  # ...at the mirrored time
    assert _overlap(parsed.spans[0], mirrored) > 0, (reverse_reply, mirrored)
    assert np.array_equal(model.received[1][1], grey)
