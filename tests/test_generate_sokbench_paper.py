# SPDX-License-Identifier: Apache-2.0
"""fastvqa's SOK-Bench builder against the paper (docs/papers/sokbench.md
§2.1-§2.4), through a real local chat-completions server.

The served model, :class:`World`, reads what it is sent. Keyframes: it finds
the objects by their pixels (the demo's colour labels and shape measure,
:mod:`fastvqa.demo.pipeline`) and reports their colour as the attribute and
their left-to-right order as spatial relations. Text prompts: it answers
general knowledge, situated knowledge (naming how many earlier answers it
was shown) and question writing from the request's words. Expected values
come from the scene the test draws (a red cube left of a blue sphere left of
a yellow cone), the paper's prompt words, and :class:`World`'s rules applied
by hand; never from the code under test.
"""

from __future__ import annotations

import json
import re
import threading

import numpy as np
import pytest

pytest.importorskip("av")
pytest.importorskip("PIL")

from fastvqa.demo import synth
from fastvqa.demo.pipeline import SUBSAMPLE, colour_labels, shape_of
from fastvqa.demo.vision_server import frame_times
from fastvqa.generate.events import captions as C
from fastvqa.generate.events import deveqa as D
from fastvqa.generate.events import sokbench as S
from fastvqa.llm import ChatCompletionsClient, serve_chat_model
from fastvqa.llm.images import message_images, message_text

#: The paper's attribute prompt (§3.2), for "tofu".
PAPER_ATTRIBUTE = ("Please describe the tofu in the image in terms of size, shape, color, and "
                   "texture in one short sentence within 10 words.")
#: The paper's situated-knowledge goal and format (Fig. 4).
PAPER_GOAL = "What would happen if the person did not use {}?"
PAPER_FORMAT = "Format: The answer should be short and within 20 words."
SHAPE_WORDS = {"cube": "square block", "sphere": "round ball", "cone": "pointed triangle"}

#: A code word per entity: the World's knowledge replies use it, so every
#: entity's answers differ and none names an object.
CODES = {"cube": "amber", "water": "birch", "salt": "cedar", "sphere": "dune", "cone": "ember",
         "hose": "fern", "seed": "grove", "rake": "heath",
         "put the cube in water": "iris", "add salt to the sphere": "jade",
         "set the cube beside the sphere": "kelp", "pour water over the salt": "lime",
         "fill the hose": "moss", "plant a seed with the rake": "nut",
         "soak the seed with the hose": "oak"}
SITUATED = {"what_if_no_obj": "The result would lose its {} touch",
            "contribution": "give the {} touch", "interaction": "Together they make the {} blend",
            "purpose": "To bring the {} stage", "what_if_no_act": "The {} stage would be missing",
            "possibility": "Do the {} stage another way"}
GOALS = {"what_if_no_obj": r"What would happen if the person did not use (.+)\?",
         "contribution": r"What does (.+) contribute to the result in this video\?",
         "interaction": r"What do (.+) and (.+) do together in this video\?",
         "purpose": r"What is the purpose of the step '(.+)'\?",
         "what_if_no_act": r"What would happen if the person skipped the step '(.+)'\?",
         "possibility": r"In what other way could the person have done the step '(.+)'\?"}

DURATION = 8.0
KITCHEN = [(0, 2, "put the cube in water"), (2, 4, "add salt to the sphere"),
           (4, 6, "set the cube beside the sphere"), (6, 8, "pour water over the salt")]
GARDEN = [(0, 3, "fill the hose"), (3, 6, "plant a seed with the rake"),
          (6, 9, "soak the seed with the hose")]
VOCABULARY = ["cube", "sphere", "water", "salt", "hose", "seed", "rake"]


def _scene(cube="red", sphere="blue", cone="yellow") -> list:
    """Three resting objects, left to right: cube, sphere, cone."""
    rest = [synth.Segment("rest", 0.0, DURATION)]
    return [synth.SceneObject(cube, "cube", 0, 60.0, list(rest)),
            synth.SceneObject(sphere, "sphere", 1, 160.0, list(rest)),
            synth.SceneObject(cone, "cone", 2, 260.0, list(rest))]


def _objects_in(frame: np.ndarray) -> list:
    """``[(shape, colour, x)]`` of one frame, left to right, read from its
    pixels with the demo's colour labels and shape measure."""
    labels = colour_labels(frame[None])[0]
    found = []
    for c, colour in enumerate(synth.PALETTE):
        ys, xs = np.nonzero(labels == c)
        if len(ys) < 20:
            continue
        cy, cx = ys.mean() * SUBSAMPLE + 0.5, xs.mean() * SUBSAMPLE + 0.5
        shape = shape_of(frame, colour, cy, cx)
        if shape is not None:
            found.append((shape, colour, cx))
    return sorted(found, key=lambda f: f[2])


class World:
    """The served model (see the module doc); ``log``: ``(messages,
    reply)`` per request, ``frames``: ``(kind, times, images)`` per request
    with images. ``leak``: question replies name what they must not."""

    def __init__(self, leak: bool = False):
        self.leak = leak
        self.log: list = []
        self.frames: list = []
        self._lock = threading.Lock()

    def __call__(self, messages):
        reply = self._reply(messages)
        with self._lock:
            self.log.append((messages, reply))
        return reply

    def _reply(self, messages):
        user = messages[-1]
        text = message_text(user)
        system = message_text(messages[0]) if messages[0]["role"] == "system" else ""
        images = message_images(user)
        if images:
            kind = "attribute" if text.endswith("within 10 words.") else "objects"
            with self._lock:
                self.frames.append((kind, frame_times(user), images))
            seen = _objects_in(images[0])
            if kind == "attribute":
                name = re.search(r"Please describe the (.+) in the image", text).group(1)
                colour = next((c for s, c, _ in seen if s == name), None)
                if colour is None:
                    return "I see no such thing."
                return f"The {name} is a small {colour} {SHAPE_WORDS[name]}."
            names = [s for s, _, _ in seen]
            relations = [[a, "left of", b] for i, a in enumerate(names) for b in names[i + 1:]]
            return json.dumps({"objects": names, "relations": relations})
        if text.startswith("The video is"):  # the step-parsing prompt
            acts = [{"start": float(a), "end": float(b), "action": step,
                     "objects": [w for w in step.split() if w in VOCABULARY]}
                    for a, b, step in re.findall(r"(\S+)s - (\S+)s: (.+)", text)]
            return json.dumps({"actions": acts})
        if "You know a lot about" in system:
            entity = system.rsplit("about ", 1)[1].rstrip(".")
            code = CODES[entity]
            if text.startswith("Please tell me 5 usages of"):
                return json.dumps([{f"{code} jobs": "doing"}])
            if text.startswith("Please tell me the physical properties of"):
                return json.dumps({"look": f"{code}-looking"})
            if text.startswith("Please tell me 5 things that"):
                return json.dumps([{"air": f"{code} mixing"}])
            return json.dumps({"things related": f"{code} tools", "purpose": f"to reach {code}",
                               "ways of": f"by {code} means"})
        if "commonsense-driven assistant" in system:
            goal = text.split(" Format:")[0]
            shown = sum(1 for m in messages if m["role"] == "assistant")
            for perspective, pattern in GOALS.items():
                m = re.fullmatch(pattern, goal)
                if m:
                    code = "-".join(CODES[g] for g in m.groups())
                    return f"{SITUATED[perspective].format(code)} ({shown} examples)"
            raise AssertionError(goal)
        if "You write questions about a video" in system:
            key = re.search(r"Write one question of type (\S+)", text).group(1)
            block = text.split("rests on:\n", 1)[1].split("\nThe correct answer is:", 1)[0]
            edges = block.split("\n")
            said = "; ".join(e.replace(" | ", " ").rstrip(".") for e in (edges[:-1] or edges))
            hidden = re.findall(r"'([^']*)'", text.rsplit("does not name", 1)[1]) \
                if "does not name" in text else []
            if not self.leak:
                for h in hidden:
                    said = re.sub(rf"\b{re.escape(h)}\b", "thing", said)
            return json.dumps({"question": f"[{key}] What follows from {said}?"})
        raise AssertionError(text)


def _events(video: str, steps: list, duration: float) -> list:
    return [C.Event(video, i, text, float(s), float(e), duration)
            for i, (s, e, text) in enumerate(steps)]


def _graphs():
    return S.situations_from_events(_events("kitchen", KITCHEN, DURATION)
                                    + _events("garden", GARDEN, 9.0), vocabulary=VOCABULARY)


@pytest.fixture(scope="module")
def video(tmp_path_factory):
    path = tmp_path_factory.mktemp("sokbench") / "kitchen.mp4"
    synth.encode_video(path, _scene(), DURATION)
    return path


@pytest.fixture(scope="module")
def built(video):
    """Both runs (same-video distractors only; cross-video allowed) over
    one served World, and the World's log of the first run."""
    world = World()
    with serve_chat_model(world) as served:
        model = D.cached_model(ChatCompletionsClient(served.base_url, "world", max_retries=0))
        rejected: list = []
        graphs = S.add_visual_facts(_graphs(), {"kitchen": video}, model, keyframes=2,
                                    image_format="png", rejections=rejected)
        know = S.language_model_knowledge(model)
        same = S.generate_sokbench(graphs, know, questions=S.language_model_questions(model),
                                   seed=0, model_stats=model, rejections=rejected)
        log = list(world.log)
        cross = S.generate_sokbench(graphs, S.language_model_knowledge(model),
                                    questions=S.language_model_questions(model), seed=0,
                                    cross_video_distractors=True)
    return {"graphs": graphs, "same": same, "cross": cross, "log": log, "world": world,
            "rejected": rejected}


def _question(result, key, entity, video="kitchen"):
    """The question of type ``key`` about ``entity`` (its asked entity is the
    next-to-last of ``related_objs_acts``)."""
    found = [q for q in result.data[key]
             if q["video"] == video and q["related_objs_acts"][-2] == entity]
    assert len(found) == 1, (key, entity, [q["related_objs_acts"] for q in result.data[key]])
    return found[0]


# ------------------------------------------------------------- visual stage

def test_visual_stage_adds_what_the_pixels_show(built):
    kitchen, garden = built["graphs"]
    assert built["rejected"] == []
    # the colours drawn, as the paper's attribute prompt got them described
    assert kitchen.attributes == {"cube": "The cube is a small red square block.",
                                  "sphere": "The sphere is a small blue round ball.",
                                  "cone": "The cone is a small yellow pointed triangle."}
    # the cone is never named by a step: found in the frames, it joins the
    # objects, linked to every step whose keyframes show it
    assert kitchen.objects == ("cube", "water", "salt", "sphere", "cone")
    edges = set(kitchen.edges)
    for i in range(4):
        assert (f"action:{i}", "seen", "cone") in edges
    assert kitchen.relations == (("cube", "left of", "sphere"), ("cube", "left of", "cone"),
                                 ("sphere", "left of", "cone"))
    assert ("cube", "attribute", "The cube is a small red square block.") in edges
    assert kitchen.visual.startswith("vision model ") and garden.visual == ""
    assert garden.attributes == {} and garden.objects == ("hose", "seed", "rake")


def test_keyframes_are_decoded_within_each_step_and_asked_as_the_paper_asks(built):
    frames = [f for f in built["world"].frames]
    objects = [f for f in frames if f[0] == "objects"]
    # Uniform(2) within each 2-s step: the middles of its two halves
    assert np.concatenate([t for _, t, _ in objects]).tolist() == \
        [0.5, 1.5, 2.5, 3.5, 4.5, 5.5, 6.5, 7.5]
    assert all(len(images) == 1 and images[0].shape == (240, 320, 3)
               for _, _, images in objects)
    attribute_requests = [m for m, _ in built["log"] if message_images(m[-1])
                          and message_text(m[-1]).endswith("within 10 words.")]
    assert len(attribute_requests) == 3  # cube, sphere, cone: once each
    cube = attribute_requests[0]
    assert [m["role"] for m in cube] == ["user"]  # the paper shows no system text
    assert message_text(cube[0]).split("\n")[-1] == PAPER_ATTRIBUTE.replace("tofu", "cube")


def test_visual_facts_follow_the_pixels(tmp_path):
    path = tmp_path / "swapped.mp4"
    synth.encode_video(path, _scene(cube="yellow", sphere="red", cone="green"), DURATION)
    world = World()
    with serve_chat_model(world) as served:
        client = ChatCompletionsClient(served.base_url, "world", max_retries=0)
        kitchen, = S.add_visual_facts(_graphs()[:1], {"kitchen": path}, client, keyframes=1,
                                      image_format="png")
    assert kitchen.attributes == {"cube": "The cube is a small yellow square block.",
                                  "sphere": "The sphere is a small red round ball.",
                                  "cone": "The cone is a small green pointed triangle."}


def test_visual_replies_are_validated(tmp_path, video):
    def careless(messages):
        text = message_text(messages[-1])
        if text.endswith("within 10 words."):
            return "It is " + " ".join(["very"] * 12) + " red."
        return json.dumps({"objects": ["cube", 7, "a b c d e f"],
                           "relations": [["cube", "on", "moon"], ["cube", "near"]]})

    rejected: list = []
    kitchen, = S.add_visual_facts(_graphs()[:1], {"kitchen": video}, careless, keyframes=1,
                                  rejections=rejected)
    assert kitchen.attributes == {} and kitchen.objects == ("cube", "water", "salt", "sphere")
    per_frame = {("bad_structure", "object 2 is not a name"),
                 ("over_word_limit", "object 3: over 4 words"),
                 ("bad_structure", "relation 1 names an object not listed: 'moon'"),
                 ("bad_structure", "relation 2 is not [a, relation, b]")}
    got = [(r.reason, r.detail) for r in rejected if r.source.startswith("step")]
    assert set(got) == per_frame and len(got) == 4 * len(per_frame)  # 4 steps x 1 frame
    assert [(r.reason, r.source) for r in rejected if not r.source.startswith("step")] == \
        [("over_word_limit", "cube: attribute")]


def test_without_a_vision_model_the_stage_is_skipped_and_said():
    result = S.generate_sokbench(_graphs(), types=["OCT"])
    assert dict(result.stages)["visual"].startswith("skipped: no vision model")


# ------------------------------------------------------------------ knowledge

def _sckg_requests(log, video_step: str, goal_start: str) -> list:
    return [m for m, _ in log if m[0]["role"] == "system"
            and "commonsense-driven assistant" in m[0]["content"]
            and video_step in m[0]["content"] and m[-1]["content"].startswith(goal_start)]


def test_general_knowledge_is_the_papers_triplet(built):
    usage = [m for m, _ in built["log"] if m[-1]["content"] == (
        "Please tell me 5 usages of cube. Format: The answer should follow format '<the thing "
        "applied on>: <how to apply>'. The answer is a list in JSON.")]
    assert len(usage) == 1  # once over both videos
    m = usage[0]
    assert [x["role"] for x in m] == ["system", "user", "assistant", "user"]
    assert m[0]["content"] == ("You are a helpful, pattern-following assistant. You know a lot "
                               "about cube.")
    assert m[1]["content"].startswith("Please tell me 5 usages of water.")  # F4's example
    assert json.loads(m[2]["content"])[0] == {"human": "hydration"}


def test_situated_knowledge_prompt_has_five_parts_in_order(built):
    requests = _sckg_requests(built["log"], "0s - 2s: put the cube in water",
                              "What would happen if the person did not use")
    # 5 objects x the paper's two iterations, less one: the last object's
    # second prompt (every other object's first answer) is its first, read
    # from the reply cache
    assert len(requests) == 9
    last = requests[5]  # iteration 2, the cube
    transcript = "\n".join(m["content"] for m in last)
    parts = ["0s - 2s: put the cube in water",  # video content
             "6s - 8s: pour water over the salt",
             "cube: physical: look: amber-looking",  # general knowledge
             "What would happen if the person did not use water?",  # examples
             "The result would lose its birch touch (1 examples)",
             PAPER_GOAL.format("cube"),  # goal
             PAPER_FORMAT]  # format
    # the goal and format close the prompt (each example turn holds a format too)
    at = [transcript.rfind(p) if k >= 5 else transcript.find(p) for k, p in enumerate(parts)]
    assert all(a >= 0 for a in at) and at == sorted(at), list(zip(parts, at))
    assert last[-1]["content"] == f"{PAPER_GOAL.format('cube')} {PAPER_FORMAT}"


def test_second_iteration_examples_are_the_first_iterations_answers(built):
    requests = _sckg_requests(built["log"], "0s - 2s: put the cube in water",
                              "What would happen if the person did not use")
    order = ["cube", "water", "salt", "sphere", "cone"]
    asked = [re.fullmatch(GOALS["what_if_no_obj"], m[-1]["content"].split(" Format:")[0])
             .group(1) for m in requests]
    assert asked == order + order[:-1]  # the cone's second prompt is its first (cached)
    # iteration 1: each object sees the answers about the objects before it
    first = {o: f"The result would lose its {CODES[o]} touch ({k} examples)"
             for k, o in enumerate(order)}
    for k, m in enumerate(requests[:5]):
        assert [x["content"] for x in m if x["role"] == "assistant"] == \
            [first[o] for o in order[:k]]
    # iteration 2: the first iteration's answers about every other object
    for o, m in zip(order, requests[5:]):
        assert [x["content"] for x in m if x["role"] == "assistant"] == \
            [first[p] for p in order if p != o]
    q = _question(built["same"], "OCT", "cube")
    assert q["answer"]["direct"] == "The result would lose its amber touch (4 examples)"


# ------------------------------------------------------------ question stage

def test_question_prompt_holds_video_content_and_integrated_graph(built):
    writes = [m for m, _ in built["log"] if m[0]["role"] == "system"
              and "You write questions about a video" in m[0]["content"]
              and "Write one question of type OCT+ST" in m[-1]["content"]
              and "cube | attribute" in m[-1]["content"]]
    assert len(writes) == 1
    system, user = writes[0][0]["content"], writes[0][1]["content"]
    for line in ("0s - 2s: put the cube in water", "2s - 4s: add salt to the sphere",
                 "cube | attribute | The cube is a small red square block.",
                 "cube | left of | sphere", "step 'put the cube in water' | seen | cone",
                 "cube | usage | amber jobs: doing",
                 "cube | what if no obj | The result would lose its amber touch (4 examples)"):
        assert line in system, line
    assert system.find("put the cube in water") < system.find("Integrated graph")
    at = [user.find(p) for p in ("Examples of questions and answers:", "Goal:", "Format:")]
    assert all(a >= 0 for a in at) and at == sorted(at)
    assert "The correct answer is: The result would lose its amber touch (4 examples)" in user
    q = _question(built["same"], "OCT+ST", "cube")
    assert q["question"] == ("[OCT+ST] What follows from thing attribute The thing is a small "
                             "red square block; thing left of sphere?")
    assert q["question_source"] == "language model"


def test_a_question_naming_its_hidden_object_is_rejected(video):
    world = World(leak=True)
    with serve_chat_model(world) as served:
        client = ChatCompletionsClient(served.base_url, "world", max_retries=0)
        writer = S.language_model_questions(client)
        result = S.generate_sokbench(_graphs()[:1], S.language_model_knowledge(client),
                                     questions=writer, types=["OCT+GK"])
    assert result.n_questions == 0
    assert {(r.stage, r.reason) for r in result.rejections} == {("question", "names_the_answer")}
    assert sorted(r.source for r in result.rejections) == \
        sorted(f"OCT+GK: {o}" for o in ("cube", "water", "salt", "sphere"))


# ---------------------------------------------------------------- distractors

def test_cross_video_distractors_off_by_default(built):
    same = built["same"]
    assert dict(same.stages)["distractors"] == "same video only"
    for items in same.data.values():
        for q in items:
            assert set(q["option_sources"]) <= {"correct", "same_video"}
    short = [r for r in same.rejections if r.reason == "too_few_distractors"]
    # the garden's 3 objects and 3 steps leave 2 same-video answers: every
    # question but OI's (2 pairs: too few as well) needs a third
    assert {r.video_id for r in short} == {"garden"}
    assert not any(q["video"] == "garden" for items in same.data.values() for q in items)


def test_cross_video_distractors_are_recorded(built):
    cross = built["cross"]
    q = _question(cross, "OCT", "hose", video="garden")
    sources = q["option_sources"]
    assert sources.count("correct") == 1 and sources.count("same_video") == 2
    (k,) = [i for i, s in enumerate(sources) if s.startswith("other_video:")]
    assert sources[k] == "other_video:kitchen"
    kitchen_answers = {f"The result would lose its {CODES[o]} touch (4 examples)"
                       for o in ("cube", "water", "salt", "sphere", "cone")}
    assert q["answer"]["choices"][k] in kitchen_answers
    garden_answers = {f"The result would lose its {CODES[o]} touch (2 examples)"
                      for o in ("seed", "rake")}
    assert {q["answer"]["choices"][i] for i, s in enumerate(sources)
            if s == "same_video"} == garden_answers
    assert q["answer"]["direct"] == "The result would lose its fern touch (2 examples)"


# -------------------------------------------------------------- twelve types

#: The first kitchen question of each type: its entity and answer, by the
#: World's rules (code words; examples shown in the last iteration: 4 of 5
#: objects, 5 of 6 pairs, 3 of 4 steps).
EXPECTED = {
    "OCT+ST": ("cube", "The result would lose its amber touch (4 examples)"),
    "OCB+ST": ("water", "It helps give the birch touch (4 examples)"),
    "OCT+GK": ("salt", "The result would lose its cedar touch (4 examples)"),
    "OCB+GK": ("sphere", "It helps give the dune touch (4 examples)"),
    "OCT": ("cone", "The result would lose its ember touch (4 examples)"),
    "OCB": ("cube", "cube"),
    "OI": ("cube<AND>water", "Together they make the amber-birch blend (5 examples)"),
    "APU+ST": ("add salt to the sphere", "To bring the jade stage (3 examples)"),
    "ACT+ST": ("put the cube in water", "The iris stage would be missing (3 examples)"),
    "APU": ("set the cube beside the sphere", "To bring the kelp stage (3 examples)"),
    "ACT": ("pour water over the salt", "The lime stage would be missing (3 examples)"),
    "APO": ("put the cube in water", "Do the iris stage another way (3 examples)"),
}


@pytest.mark.parametrize("key", list(EXPECTED))
def test_each_of_the_twelve_types_is_generated(built, key):
    result = built["same"]
    assert list(result.data) == list(EXPECTED)
    entity, answer = EXPECTED[key]
    q = _question(result, key, entity)
    assert q["answer"]["direct"] == answer
    assert q["answer"]["choices"][q["answer"]["right_choice"]] == answer
    assert len(q["answer"]["choices"]) == 4 and q["question"].startswith(f"[{key}] ")


def test_template_path_only_without_a_model():
    result = S.generate_sokbench(_graphs()[:1], S.table_knowledge(
        {"objects": {o: {"what_if_no_obj": f"Loss {CODES[o]}."} for o in CODES}}),
        types=["OCT"])
    q = result.data["OCT"][0]
    assert q["question"] == "What would happen if the person did not use cube?"
    assert q["question_source"] == "template"
    assert dict(result.stages)["questions"] == "fastvqa's templates (no question model given)"


# ------------------------------------------------------------------- the CLI

def _cli_args(tmp_path, video, base_url, **extra):
    import argparse

    from fastvqa.generate.events import cli

    captions = tmp_path / "captions.json"
    captions.write_text(json.dumps({
        name: {"duration": d, "timestamps": [[a, b] for a, b, _ in steps],
               "sentences": [t for _, _, t in steps]}
        for name, d, steps in (("kitchen", DURATION, KITCHEN), ("garden", 9.0, GARDEN))}))
    (tmp_path / "videos").mkdir(exist_ok=True)
    target = tmp_path / "videos" / "kitchen.mp4"
    if not target.exists():
        target.write_bytes(video.read_bytes())
    argv = ["--captions", str(captions), "--llm", base_url, "--model", "world",
            "--style", "sokbench", "--no-progress"]
    for k, v in extra.items():
        argv += [f"--{k.replace('_', '-')}"] + ([] if v is True else [str(v)])
    p = argparse.ArgumentParser()
    cli.add_arguments(p)
    return cli, p.parse_args(argv)


def test_cli_runs_every_stage(tmp_path, video, capsys):
    from fastvqa.data import load_sokbench

    world = World()
    with serve_chat_model(world) as served:
        cli, args = _cli_args(tmp_path, video, served.base_url, vlm=served.base_url,
                              vlm_model="world", videos=tmp_path / "videos",
                              out=tmp_path / "sok.json", rejections=tmp_path / "rej.jsonl")
        assert cli.run(args) == 0
    err = capsys.readouterr().err
    assert "visual: 1 of 2 situations (vision model" in err
    assert "distractors: same video only" in err
    records = load_sokbench(tmp_path / "sok.json")
    assert {r.extra["question_type"] for r in records} == set(EXPECTED)
    assert {r.video_id for r in records} == {"kitchen"}  # the garden is short of distractors
    rows = [json.loads(x) for x in (tmp_path / "rej.jsonl").read_text().splitlines()]
    assert {r["reason"] for r in rows} == {"too_few_distractors"}
    attribute = [m for m, _ in world.log if message_images(m[-1])
                 and message_text(m[-1]).endswith("within 10 words.")]
    assert len(attribute) == 3


@pytest.mark.parametrize("extra, message", [
    ({"vlm": "http://127.0.0.1:9/v1", "vlm_model": "m"}, "--vlm needs --videos"),
    ({"videos": "VIDEOS"}, "--videos goes with --vlm"),
    ({"vlm_model": "m"}, "give --vlm too"),
    ({"vlm": "http://127.0.0.1:9/v1", "videos": "VIDEOS"}, "--vlm is a URL: give the served "
                                                            "model's name with --vlm-model"),
    ({"vlm": "no_such_module_xyz:fn", "videos": "VIDEOS"}, "--vlm 'no_such_module_xyz:fn': "
                                                           "cannot import"),
    ({"style": "deveqa", "cross_video_distractors": True}, "options of --style sokbench"),
])
def test_cli_vision_options_out_of_place_are_one_line(tmp_path, video, extra, message):
    from fastvqa.errors import CommandError

    extra = {k: (str(tmp_path / "videos") if v == "VIDEOS" else v) for k, v in extra.items()}
    cli, args = _cli_args(tmp_path, video, "http://127.0.0.1:9/v1", out=tmp_path / "o.json",
                          **extra)
    with pytest.raises(CommandError, match=re.escape(message)) as info:
        cli.run(args)
    assert "\n" not in str(info.value)
    assert not (tmp_path / "o.json").exists()
