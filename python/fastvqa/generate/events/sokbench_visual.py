# SPDX-License-Identifier: Apache-2.0
"""The visual stage of SOK-Bench's situation graph (docs/papers/sokbench.md
§2.1, steps 2-5): objects, attributes and spatial relations found in
keyframes by a vision-language model, joined with the captions' actions.

For every step of a video, ``keyframes`` frames spread uniformly over its
span are decoded (:mod:`fastvqa.video`) and each is sent, as one image in a
chat message (:func:`fastvqa.llm.images.frames_content`, the message layout
of :class:`fastvqa.llm.ChatCaptioner`), with
:data:`~fastvqa.generate.events.sokbench_prompts.VISUAL_OBJECTS`: the objects
it shows and their spatial relations (the paper's BLIP2 and MiniGPT4 roles;
fastvqa's words). Every object seen is then described once, in the first
keyframe that shows it, with the paper's attribute prompt
(:data:`~fastvqa.generate.events.sokbench_prompts.ATTRIBUTE`, verbatim,
within 10 words). Every reply is validated with bounded sizes (linear-time
parsing); what fails is a rejection (stage ``"visual"``), never kept.

Joined into the graph (:func:`add_visual_facts`): an object seen in a
keyframe of a step gets the paper's (action, object) edge, ``(action,
"seen", object)`` (the keyframe's time lies in the step's span, the
paper's "coincides"); objects the captions did not name join the graph's
objects; ``(object, "attribute", text)`` and ``(object, relation, object)``
edges.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping, NamedTuple, Optional, Sequence, Union

import numpy as np

from fastvqa import _checks
from fastvqa.generate.events import sokbench_prompts as P
from fastvqa.generate.events.deveqa import Rejection, ResponseCache, cached_model, reply_json
from fastvqa.generate.events.sokbench_knowledge import parse_text_reply

#: Bounds on one keyframe's reply (fastvqa's).
MAX_OBJECTS = 12
MAX_RELATIONS = 12
MAX_NAME_WORDS = 4
MAX_RELATION_WORDS = 5
#: The paper's "within 10 words" for an attribute.
ATTRIBUTE_WORDS = 10


def _name(value: Any, named: Sequence[str]) -> Optional[str]:
    """An object name from a reply, lower-case, spaces collapsed, a leading
    article dropped; a name ending with one the step names ("red cube",
    "cube") is that name. None for what is not text."""
    if not isinstance(value, str):
        return None
    name = " ".join(value.lower().split())
    for article in ("the ", "a ", "an "):
        if name.startswith(article):
            name = name[len(article):]
            break
    if name in named:
        return name
    return next((n for n in named if name.endswith(" " + n)), name) or None


def parse_objects_reply(text: str, named: Sequence[str] = ()) -> tuple:
    """``(objects, relations, problems)`` of a keyframe reply
    ``{"objects": [name, ...], "relations": [[a, relation, b], ...]}``
    (a relation may also be ``{"subject", "relation", "object"}``).

    Names are joined to ``named`` (the step's objects) by :func:`_name`; at
    most :data:`MAX_OBJECTS` objects of at most :data:`MAX_NAME_WORDS` words
    and :data:`MAX_RELATIONS` relations of at most
    :data:`MAX_RELATION_WORDS` words between two different objects listed
    (or named by the step). ``problems``: ``(reason, detail)`` for each
    entry left out. Linear in the reply.

    >>> parse_objects_reply('{"objects": ["the red cube", "cone"], '
    ...                     '"relations": [["cube", "left of", "cone"], ["cube", "on", "moon"]]}',
    ...                     ["cube"])  # doctest: +NORMALIZE_WHITESPACE
    (('cube', 'cone'), (('cube', 'left of', 'cone'),),
     [('bad_structure', "relation 2 names an object not listed: 'moon'")])
    """
    value, error = reply_json(text)
    if value is None:
        return (), (), [("malformed_json", error)]
    if not isinstance(value, dict) or not isinstance(value.get("objects"), list):
        return (), (), [("missing_field", "no list of objects")]
    problems: list = []
    objects: dict = {}
    for k, raw in enumerate(value["objects"][:4 * MAX_OBJECTS]):
        name = _name(raw, named)
        if not name:
            problems.append(("bad_structure", f"object {k + 1} is not a name"))
        elif len(name.split()) > MAX_NAME_WORDS:
            problems.append(("over_word_limit", f"object {k + 1}: over {MAX_NAME_WORDS} words"))
        else:
            objects[name] = None
    if len(objects) > MAX_OBJECTS:
        problems.append(("too_many_pairs", f"{len(objects)} objects, the first {MAX_OBJECTS} "
                                           "kept"))
    objs = tuple(objects)[:MAX_OBJECTS]
    known = set(objs) | set(named)
    rels: dict = {}
    raw_rels = value.get("relations", [])
    if not isinstance(raw_rels, list):
        problems.append(("bad_structure", "relations is not a list"))
        raw_rels = []
    for k, raw in enumerate(raw_rels[:4 * MAX_RELATIONS]):
        if isinstance(raw, dict):
            raw = [raw.get("subject"), raw.get("relation"), raw.get("object")]
        if not isinstance(raw, list) or len(raw) != 3 or not isinstance(raw[1], str):
            problems.append(("bad_structure", f"relation {k + 1} is not [a, relation, b]"))
            continue
        a, b = _name(raw[0], named), _name(raw[2], named)
        rel = " ".join(raw[1].lower().split())
        if a not in known or b not in known or a == b:
            problems.append(("bad_structure", f"relation {k + 1} names an object not listed: "
                                              f"{(a if a not in known else b)!r:.60}"))
        elif not rel or len(rel.split()) > MAX_RELATION_WORDS:
            problems.append(("over_word_limit", f"relation {k + 1}: 1 to {MAX_RELATION_WORDS} "
                                                "words"))
        else:
            rels[(a, rel, b)] = None
    if len(rels) > MAX_RELATIONS:
        problems.append(("too_many_pairs", f"{len(rels)} relations, the first {MAX_RELATIONS} "
                                           "kept"))
    return objs, tuple(rels)[:MAX_RELATIONS], problems


def parse_attribute_reply(text: str, limit: int = ATTRIBUTE_WORDS) -> tuple:
    """``(sentence, None)`` or ``(None, (reason, detail))`` for an attribute
    reply: one line of at most ``limit`` words (the paper's 10).

    >>> parse_attribute_reply("The tofus are small, white, sliced squares.")
    ('The tofus are small, white, sliced squares.', None)
    """
    sentence = parse_text_reply(text)
    if not sentence:
        return None, ("missing_field", "empty reply")
    if len(sentence.split()) > limit:
        return None, ("over_word_limit", f"{len(sentence.split())} words > {limit}")
    return sentence, None


class VisualFacts(NamedTuple):
    """What the keyframes of one video showed: ``seen`` (step index ->
    objects seen in its keyframes), ``attributes`` (object -> sentence),
    ``relations`` (``(object, relation, object)`` edges), ``keyframes``
    (frames sent)."""

    seen: dict
    attributes: dict
    relations: tuple
    keyframes: int


def _shown(frame: np.ndarray, t: float, image: dict) -> list:
    """One keyframe's content parts (its label and encoded image), encoded
    once for every request that shows it."""
    from fastvqa.llm.images import frames_content

    return frames_content("", frame[None], [t], **image)[:-1]


def _messages(system: str, text: str, shown: list) -> list:
    user = {"role": "user", "content": shown + [{"type": "text", "text": text}]}
    return ([{"role": "system", "content": system}] if system else []) + [user]


def visual_facts(graph: Any, path: Union[str, Path], vlm: Any, *, keyframes: int = 2,
                 backend: str = "pyav", rejections: Optional[list] = None,
                 image: Optional[dict] = None) -> VisualFacts:
    """The :class:`VisualFacts` of ``graph``'s video at ``path`` through
    ``vlm`` (``complete(messages) -> str``): ``keyframes`` frames per step
    (:class:`fastvqa.video.Uniform` within the step's span, seconds from
    the video's first frame; a step starting past the video's end is a
    ``span_outside_video`` rejection), one objects call per distinct
    keyframe, one attribute call per object seen. ``image``: the
    :func:`~fastvqa.llm.images.frames_content` options (``format``,
    ``quality``, ``max_side``).

    Raises:
        VideoError: the video cannot be read (naming it).
    """
    from fastvqa.video import Uniform, VideoDecoder

    image = dict(image or {})
    rejected = rejections if rejections is not None else []
    vid = graph.video_id
    seen: dict = {}
    first: dict = {}  # object -> the content parts of the first keyframe showing it
    relations: dict = {}
    sent = 0
    with VideoDecoder(path, backend=backend) as decoder:
        t0, length = float(decoder.metadata.start), float(decoder.metadata.duration)
        for act in graph.actions:
            if act.start >= length:
                rejected.append(Rejection("visual", "span_outside_video", vid, f"step {act.index}",
                                          f"the step starts at {act.start:g} s, after the "
                                          f"{length:g}-s video"))
                continue
            end = min(max(act.end, act.start + 1e-3), length)  # a 0-s step: its first frame
            got = decoder.read(Uniform(keyframes).within(act.start, end))
            _, keep = np.unique(got.indices, return_index=True)
            text = P.VISUAL_OBJECTS.user.format(step=act.text,
                                                named=", ".join(act.objects) or "none")
            for j in sorted(keep):
                t = float(got.pts_seconds[j]) - t0
                shown = _shown(np.asarray(got.data[j]), t, image)
                reply = vlm.complete(_messages(P.VISUAL_OBJECTS.system, text, shown))
                sent += 1
                objs, rels, problems = parse_objects_reply(reply, act.objects)
                for reason, detail in problems:
                    rejected.append(Rejection("visual", reason, vid,
                                              f"step {act.index} frame at {t:.2f} s", detail,
                                              reply[:300]))
                seen[act.index] = tuple(dict.fromkeys(seen.get(act.index, ()) + objs))
                for o in objs:
                    first.setdefault(o, shown)
                relations.update(dict.fromkeys(rels))
    attributes = {}
    for obj, shown in first.items():
        reply = vlm.complete(_messages(P.ATTRIBUTE.system, P.ATTRIBUTE.user.format(object=obj),
                                       shown))
        text, problem = parse_attribute_reply(reply)
        if problem is not None:
            rejected.append(Rejection("visual", problem[0], vid, f"{obj}: attribute",
                                      problem[1], reply[:300]))
        else:
            attributes[obj] = text
    return VisualFacts(seen, attributes, tuple(relations), sent)


def add_visual_facts(graphs: Sequence[Any], videos: Mapping[str, Union[str, Path]], vlm: Any,
                     *, keyframes: int = 2, backend: str = "pyav",
                     cache: Union[None, str, Path, ResponseCache] = None,
                     rejections: Optional[list] = None, image_format: str = "jpeg",
                     quality: int = 90, max_side: Optional[int] = None) -> list:
    """``graphs`` with the visual facts of their videos joined in
    (:func:`visual_facts`; see the module doc), in order. ``videos``: video
    id -> file; a graph whose video is not there is returned as it is (its
    ``visual`` stays ``""``). ``vlm``: a vision-language model
    (``complete(messages)`` object or function; a
    :class:`~fastvqa.llm.ChatCompletionsClient` for a served one), its
    replies cached in ``cache``. Rejected replies go to ``rejections``.

    >>> add_visual_facts([], {}, lambda messages: "{}")
    []
    """
    from fastvqa.generate.events.sokbench import situation_graph
    from fastvqa.llm.images import _image_options

    op = "add_visual_facts"
    keyframes = _checks.integer(keyframes, op, "keyframes", minimum=1)
    fmt, quality, max_side = _image_options(image_format, quality, max_side, op)
    model = cached_model(vlm, cache)
    out = []
    for g in graphs:
        path = videos.get(g.video_id)
        if path is None:
            out.append(g)
            continue
        facts = visual_facts(g, path, model, keyframes=keyframes, backend=backend,
                             rejections=rejections,
                             image={"format": fmt, "quality": quality, "max_side": max_side})
        out.append(situation_graph(
            g.video_id, g.duration, g.actions, facts.attributes, seen=facts.seen,
            relations=facts.relations,
            visual=f"vision model {model.name}, {facts.keyframes} keyframes"))
    return out


__all__ = ["ATTRIBUTE_WORDS", "MAX_OBJECTS", "MAX_RELATIONS", "VisualFacts", "add_visual_facts",
           "parse_attribute_reply", "parse_objects_reply", "visual_facts"]
