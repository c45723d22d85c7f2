# SPDX-License-Identifier: Apache-2.0
"""DeVi (DeVE-QA paper, ``docs/papers/deveqa.md`` §4) as typed stages and a runner.

1. :func:`hierarchical_captions`: the video tiled at three scales
   (:class:`fastvqa.video.Hierarchical`; the paper's 15/35/65-s segments with
   5/7/13 frames by default), one caption per segment.
2. :func:`visual_memory`: frame embeddings at 1 fps (the paper's CLIP
   ViT-L/14 features ``f_v``), kept in the event memory for step 4.
3. :func:`event_memory`: temporal event contextualisation, every caption
   refined with the others and the question, plus a synopsis (one language
   model call per (video, question), as the paper conditions it on the
   question).
4. :func:`answer_with_grounding`: an option and a span in seconds from the
   memory (the reply parsed by :mod:`fastvqa.parse`).
5. :func:`self_consistency`: ``R`` = the cosine between the pooled frame
   embeddings inside the predicted span and the embedding of the answer
   (:func:`fastvqa.ops.span_similarity`); while ``R < threshold`` (the
   paper's sigma = 0.6) the question is asked again with the verification
   prompt, at most ``max_verify`` times (the paper's delta = 2).

:func:`run_devi` composes them over many videos and questions, with a
latency report per stage and per component (the paper's Table 15 kind) and
a report of what self-consistency changed.

Choices the paper leaves open (deveqa.md §6), made here and named:

- the last partial segment of a level is kept (``Hierarchical(last="keep")``),
  frames at segment-bin centres (``mode="center"``);
- ``R`` pools with ``pool="cos_of_mean"`` (the cosine of the mean frame
  embedding) and is rescaled ``(R + 1) / 2`` into [0, 1] before the
  comparison with sigma (``rescale="affine01"``): raw image-text cosines sit
  far below 0.6 (``rescale="none"`` compares the raw cosine);
- the text encoded is the question followed by the answer option
  (``consistency_text="question+answer"``; DeVE-QA's answers are short
  phrases without their subject), or the option alone (``"answer"``);
- delta counts re-asks after the first answer; the last answer is kept
  whatever its score.
"""

from __future__ import annotations

import math
import re
from typing import Any, NamedTuple, Optional, Sequence

import numpy as np

from fastvqa import _checks
from fastvqa.devi import prompts as P
from fastvqa.llm.protocols import embeddings
from fastvqa.errors import InputError

#: sigma and delta of the paper (§4.3).
THRESHOLD, MAX_VERIFY = 0.6, 2
#: the rate of the visual memory's frame embeddings (the paper: 1 fps).
FEATURE_FPS = 1.0
POOLS = ("cos_of_mean", "mean_of_cos")
RESCALES = ("affine01", "none")
CONSISTENCY_TEXTS = ("question+answer", "answer")
LETTERS = "ABCDEFGHIJ"


def paper_hierarchy():
    """The paper's DeVE-QA hierarchy: ``Hierarchical((15, 35, 65), (5, 7, 13))``
    (NExT-GQA: lengths ``(5, 15, 45)``, frame counts not published)."""
    from fastvqa.video import Hierarchical

    return Hierarchical((15.0, 35.0, 65.0), (5, 7, 13))


class Caption(NamedTuple):
    """One caption: ``scale`` (0 = shortest segments), ``[start, end)`` seconds, ``text``."""

    scale: int
    start: float
    end: float
    text: str


class EventMemory(NamedTuple):
    """The temporal event memory ``M = {E, E', f_v}`` of one (video, question).

    ``captions``: the refined captions ``E'`` (same segments as
    ``original``); ``synopsis``: the global event ``e_y`` ('' when the reply
    had none); ``original``: the captions ``E``; ``features``: ``(T, D)``
    float32 frame embeddings ``f_v`` (or None); ``times``: ``(T,)`` their
    times in seconds; ``raw``: the contextualisation reply;
    ``synopsis_raw``: the synopsis reply ('' when none was asked)."""

    captions: list
    synopsis: str
    original: list
    features: Optional[np.ndarray]
    times: Optional[np.ndarray]
    raw: str
    synopsis_raw: str = ""


class Answer(NamedTuple):
    """One answer: ``option`` (0-based index, -1 when no option could be
    parsed, and always for an open question), ``spans`` (list of ``(start,
    end)`` seconds, best first; empty when none could be parsed), ``raw``
    (the reply), ``error`` (why the parse failed, '' when it did not) and
    ``text`` (an open question's answer, :func:`fastvqa.parse.answer_text`;
    '' for multiple choice)."""

    option: int
    spans: list
    raw: str
    error: str = ""
    text: str = ""


class Round(NamedTuple):
    """One consistency check: the ``answer`` checked and its ``score``
    (rescaled as asked; ``-inf`` when the answer has no option or no span)."""

    answer: Answer
    score: float


class Verified(NamedTuple):
    """:func:`self_consistency`'s result: the final ``answer``, every
    ``rounds`` entry in order (the first is the initial answer), ``reasked``
    (verification prompts sent) and ``changed`` (the final option, or an open
    question's answer text, differs from the initial one)."""

    answer: Answer
    rounds: list
    reasked: int
    changed: bool


# Stage 1: hierarchical dense event captioning ------------------------------------

def hierarchical_captions(video: Any, sampler_config: Any = None, captioner: Any = None, *,
                          backend: str = "pyav") -> list:
    """Caption every segment of every scale of one video.

    Args:
        video: the video file.
        sampler_config: a :class:`fastvqa.video.Hierarchical` (default
            :func:`paper_hierarchy`): segment lengths (s), frames per segment,
            the last-segment policy and the in-segment sampling.
        captioner: a :class:`~fastvqa.llm.protocols.Captioner` or a function
            ``(frames, timestamps) -> str``; it gets each segment's ``(n, H, W, 3)``
            uint8 frames and their times in seconds from the first frame.
        backend: the decoder (``"pyav"``, ``"dali"``, ``"auto"``).

    Returns:
        ``[Caption(scale, start, end, text), ...]``: scale by scale, segments
        in time order (the sampler's :meth:`~fastvqa.video.Hierarchical.segments`).
    """
    from fastvqa.llm.protocols import as_captioner
    from fastvqa.video import Hierarchical, VideoDecoder

    sampler = paper_hierarchy() if sampler_config is None else sampler_config
    if not isinstance(sampler, Hierarchical):
        raise InputError(f"hierarchical_captions: sampler_config must be a fastvqa.video."
                         f"Hierarchical, got {type(sampler).__name__}")
    if captioner is None:
        raise InputError("hierarchical_captions: a captioner is required")
    captioner = as_captioner(captioner)
    with VideoDecoder(video, backend=backend) as decoder:
        index = decoder.metadata
        frames = decoder.read(sampler)
    data = np.asarray(frames.data)
    times = np.asarray(frames.pts_seconds, dtype=np.float64) - float(index.timestamps[0])
    out, at = [], 0
    for level, start, end, k in sampler.segments(float(index.duration)):
        text = segment_caption(captioner, data[at:at + k], times[at:at + k], start, end)
        out.append(Caption(int(level), float(start), float(end), str(text)))
        at += k
    return out


def segment_caption(captioner: Any, frames: np.ndarray, times: np.ndarray, start: float,
                    end: float) -> str:
    """One segment's caption; a captioner whose ``caption`` takes ``start``
    and ``end`` (:class:`fastvqa.llm.vision.ChatCaptioner`: the paper's
    caption prompt names the clip's span and frame count) is given the
    segment's own bounds in seconds, not its first and last frames' times."""
    import inspect

    try:
        params = inspect.signature(captioner.caption).parameters
    except (TypeError, ValueError):
        params = {}
    if "start" in params and "end" in params:
        return captioner.caption(frames, times, start=float(start), end=float(end))
    return captioner.caption(frames, times)


def visual_memory(video: Any, encoder: Any, *, fps: float = FEATURE_FPS,
                  backend: str = "pyav") -> tuple:
    """``(times, features)``: the frames at ``fps`` (:class:`fastvqa.video.Fps`)
    and their ``(T, D)`` float32 embeddings from ``encoder.encode_frames``;
    ``times`` ``(T,)`` seconds from the first frame."""
    from fastvqa.llm.protocols import as_encoder
    from fastvqa.video import Fps, read_frames

    encoder = as_encoder(encoder)
    frames = read_frames(video, Fps(fps), backend=backend)
    data = np.asarray(frames.data)
    feats = embeddings(encoder.encode_frames(data), len(data), "encode_frames")
    times = np.asarray(frames.pts_seconds, dtype=np.float64)
    return times - (times[0] if len(times) else 0.0), feats


# Stage 2: temporal event contextualisation ---------------------------------------

def format_captions(captions: Sequence[Caption]) -> str:
    """One line per caption: ``(k) scale s, [start s, end s]: text`` (k from 1)."""
    return "\n".join(f"({k}) scale {c.scale}, [{c.start:.1f} s, {c.end:.1f} s]: {c.text}"
                     for k, c in enumerate(captions, 1))


# Matched against a stripped line: a lazy group before a trailing \s*$ would
# take time quadratic in a line's whitespace (a reply is untrusted).
_NUMBERED = re.compile(r"\(?(\d+)[).:]\s*(.+)")
_SYNOPSIS = re.compile(r"^\s*\**synopsis\**\s*[:\-]\s*(.*)$", re.IGNORECASE)


def parse_contextualised(text: str, captions: Sequence[Caption]) -> tuple:
    """``(refined captions, synopsis)`` from a contextualisation reply: lines
    ``(k) text`` replace caption ``k`` (1-based; a caption the reply leaves
    out keeps its text), the line ``Synopsis: ...`` (and any lines after it)
    is the synopsis ('' when absent)."""
    refined = list(captions)
    synopsis_lines, in_synopsis = [], False
    for line in text.splitlines():
        m = _SYNOPSIS.match(line)
        if m:
            in_synopsis = True
            synopsis_lines.append(m.group(1))
            continue
        if in_synopsis:
            synopsis_lines.append(line.strip())
            continue
        m = _NUMBERED.fullmatch(line.strip())
        if m and len(m.group(1)) <= 6 and 1 <= int(m.group(1)) <= len(refined):
            k = int(m.group(1)) - 1
            refined[k] = refined[k]._replace(text=m.group(2))
    return refined, " ".join(s for s in synopsis_lines if s).strip()


def contextualise_messages(captions: Sequence[Caption], question: Optional[str],
                           prompt: P.Prompt = P.CONTEXTUALISE) -> list:
    """The chat messages of :func:`event_memory`."""
    return prompt.messages(captions=format_captions(captions),
                           question=question if question else "(none: refine for any question)")


def synopsis_messages(captions: Sequence[Caption], question: Optional[str],
                      prompt: P.Prompt = P.SYNOPSIS) -> list:
    """The chat messages of the synopsis call (the refined ``captions``)."""
    return prompt.messages(captions=format_captions(captions),
                           question=question if question else "(none: any question)")


def parse_synopsis(text: str) -> str:
    """The synopsis of a synopsis reply: the text from its ``Synopsis:``
    line on, else the whole reply, stripped."""
    lines = text.splitlines()
    for k, line in enumerate(lines):
        m = _SYNOPSIS.match(line)
        if m:
            return " ".join(s.strip() for s in [m.group(1)] + lines[k + 1:] if s.strip())
    return " ".join(s.strip() for s in lines if s.strip())


def event_memory(captions: Sequence[Caption], llm: Any, *, question: Optional[str] = None,
                 features: Optional[np.ndarray] = None, times: Optional[np.ndarray] = None,
                 prompt: P.Prompt = P.CONTEXTUALISE, reply: Optional[str] = None,
                 synopsis_prompt: P.Prompt = P.SYNOPSIS,
                 synopsis_reply: Optional[str] = None) -> EventMemory:
    """The :class:`EventMemory` of one video for one question (``question=None``:
    one memory shared by all of the video's questions). Two ``llm`` calls, in
    the paper's order: the contextualisation refines the captions, then the
    synopsis call articulates the refined captions into one global event
    (``reply``/``synopsis_reply``: a call's text when the caller made it
    already). A synopsis line in the contextualisation reply is used only
    where the synopsis reply gives none."""
    from fastvqa.llm.protocols import as_language_model

    captions = list(captions)
    if reply is None:
        reply = as_language_model(llm).complete(contextualise_messages(captions, question, prompt))
    refined, inline = parse_contextualised(reply, captions)
    if synopsis_reply is None:
        synopsis_reply = as_language_model(llm).complete(
            synopsis_messages(refined, question, synopsis_prompt))
    synopsis = parse_synopsis(synopsis_reply) or inline
    return EventMemory(refined, synopsis, captions, features, times, reply, synopsis_reply)


def format_events(memory: EventMemory) -> str:
    """The memory as the QA prompt shows it: the refined captions, then the synopsis."""
    lines = [f"[{c.start:.1f} s - {c.end:.1f} s] (scale {c.scale}) {c.text}"
             for c in memory.captions]
    if memory.synopsis:
        lines.append(f"Synopsis: {memory.synopsis}")
    return "\n".join(lines)


# Stage 3: event-grounded QA ------------------------------------------------------

def format_options(options: Sequence[str]) -> str:
    """``(A) first option`` lines."""
    if len(options) > len(LETTERS):
        raise InputError(f"at most {len(LETTERS)} options are supported, got {len(options)}")
    return "\n".join(f"({LETTERS[k]}) {o}" for k, o in enumerate(options))


def answer_messages(question: str, options: Sequence[str], memory: EventMemory,
                    prompt: Optional[P.Prompt] = None) -> list:
    """The chat messages of :func:`answer_with_grounding`: ``prompt``, by
    default :data:`~fastvqa.devi.prompts.ANSWER`, or
    :data:`~fastvqa.devi.prompts.ANSWER_OPEN` for an open question (no
    options)."""
    if not options:
        return (prompt or P.ANSWER_OPEN).messages(events=format_events(memory),
                                                  question=question)
    return (prompt or P.ANSWER).messages(events=format_events(memory), question=question,
                                         options=format_options(options))


def parse_answer(text: str, options: Sequence[str], duration: Optional[float] = None) -> Answer:
    """An :class:`Answer` from a reply, through :func:`fastvqa.parse.parse_response`
    (spans in seconds, found first, so that a time is never read as an option
    number; ``duration`` lets fractions of the video be read). Without
    options (an open question) the answer is the reply's text
    (:func:`fastvqa.parse.answer_text`) and ``option`` is -1."""
    from fastvqa.parse import answer_text, parse_response

    if not options:
        spans = parse_response(text, None, duration=duration).spans
        found = [(float(s), float(e)) for s, e in (spans.spans or [])]
        said = answer_text(text)
        errors = ([] if said else ["answer: none found"]) + \
            ([] if found else [f"span: {spans.error or 'none found'}"])
        return Answer(-1, found, text, "; ".join(errors), said)
    opt, spans = parse_response(text, list(options), duration=duration)
    index = opt.index if isinstance(opt.index, (int, np.integer)) and opt.index >= 0 else -1
    found = [(float(s), float(e)) for s, e in (spans.spans or [])]
    errors = []
    if index < 0:
        errors.append(f"option: {opt.error or 'none found'}")
    if not found:
        errors.append(f"span: {spans.error or 'none found'}")
    return Answer(int(index), found, text, "; ".join(errors))


def answer_with_grounding(question: str, options: Sequence[str], memory: EventMemory, llm: Any,
                          *, duration: Optional[float] = None,
                          prompt: Optional[P.Prompt] = None) -> Answer:
    """Ask ``llm`` the ``question`` (multiple choice, or open without
    options) over the memory; the reply parsed into an :class:`Answer`
    (:func:`parse_answer`)."""
    from fastvqa.llm.protocols import as_language_model

    reply = as_language_model(llm).complete(answer_messages(question, options, memory, prompt))
    return parse_answer(reply, options, duration)


# Stage 4: self-consistency checking ------------------------------------------------

def consistency_text(question: str, option: str, mode: str = "question+answer") -> str:
    """The text whose embedding ``R`` compares with the span's frames."""
    return f"{question} {option}" if mode == "question+answer" else option


def span_steps(times: np.ndarray, start: float, end: float) -> Optional[tuple]:
    """The inclusive ``(i, j)`` of the feature frames inside ``[start, end]``
    seconds (times within 1 microsecond of an end count as inside); a span
    holding no frame takes the frame on screen at its midpoint. None for a
    reversed or non-finite span, or no frames."""
    if not (math.isfinite(start) and math.isfinite(end)) or end < start or len(times) == 0:
        return None
    eps = 1e-6
    i = int(np.searchsorted(times, start - eps, side="left"))
    j = int(np.searchsorted(times, end + eps, side="right")) - 1
    if i > j:
        k = int(np.searchsorted(times, (start + end) / 2 + eps, side="right")) - 1
        i = j = min(max(k, 0), len(times) - 1)
    return i, min(j, len(times) - 1)


def consistency_score(features: np.ndarray, times: np.ndarray, span: Optional[tuple],
                      text_embedding: np.ndarray, *, pool: str = "cos_of_mean",
                      rescale: str = "affine01") -> float:
    """``R`` of one answer: :func:`fastvqa.ops.span_similarity` between the
    frame embeddings inside ``span`` (seconds) and ``text_embedding``
    (``pool`` as there), rescaled (``"affine01"``: ``(R + 1) / 2``;
    ``"none"``). ``-inf`` when the span holds no frame or is None."""
    from fastvqa.ops import span_similarity

    steps = None if span is None else span_steps(times, float(span[0]), float(span[1]))
    if steps is None:
        return -math.inf
    r = span_similarity(np.asarray(features, np.float32)[None],
                        np.asarray(text_embedding, np.float32)[None],
                        np.array([[steps]], dtype=np.int64), pool=pool)
    r = float(np.asarray(r)[0, 0])
    return (r + 1.0) / 2.0 if rescale == "affine01" else r


def describe_answer(answer: Answer, options: Sequence[str]) -> str:
    """``(B) slides, at 2.0s - 4.5s`` (an open question: ``"slides", at ...``)
    for the verification prompt."""
    if not options:
        what = f'"{answer.text}"' if answer.text else "(no answer given)"
    else:
        what = f"({LETTERS[answer.option]}) {options[answer.option]}" if answer.option >= 0 \
            else "(no option given)"
    where = f"{answer.spans[0][0]:.1f}s - {answer.spans[0][1]:.1f}s" if answer.spans \
        else "no time span"
    return f"{what}, at {where}"


def describe_frames(times: np.ndarray, answer: Answer) -> str:
    """The supportive frames of an answer: frame indices at the memory's rate and seconds."""
    steps = span_steps(times, *answer.spans[0]) if answer.spans else None
    if steps is None:
        return "no supportive frames (no valid time span)"
    i, j = steps
    return f"frames {i} to {j} ({times[i]:.1f} s to {times[j]:.1f} s)"


def self_consistency(answer: Answer, question: str, options: Sequence[str],
                     memory: EventMemory, llm: Any, *, encoder: Any = None,
                     option_embeddings: Optional[np.ndarray] = None,
                     threshold: float = THRESHOLD, max_verify: int = MAX_VERIFY,
                     pool: str = "cos_of_mean", rescale: str = "affine01",
                     text: str = "question+answer", duration: Optional[float] = None,
                     answer_prompt: Optional[P.Prompt] = None,
                     verify_prompt: Optional[P.Prompt] = None) -> Verified:
    """The paper's dynamic verification loop for one answer.

    ``R`` (:func:`consistency_score`) of the current answer is compared with
    ``threshold``; while it is lower and fewer than ``max_verify`` re-asks
    were made, the verification prompt (previous answer, its supportive
    frames, ``R`` to two decimals, and the QA prompt) goes to ``llm`` and its
    reply (parsed as :func:`parse_answer`) becomes the current answer. The
    last answer is returned whatever its score.

    The text embeddings come from ``option_embeddings`` (``(n_options, D)``,
    the embeddings of :func:`consistency_text` of each option) or are made
    with ``encoder.encode_texts``. An open question (no ``options``) scores
    each round's answer text, embedded with ``encoder`` (required then);
    its prompts default to :data:`~fastvqa.devi.prompts.ANSWER_OPEN` and
    :data:`~fastvqa.devi.prompts.VERIFY_OPEN`. ``memory.features``/``times``
    are the frame embeddings; without them the answer is returned unchecked.
    """
    from fastvqa.llm.protocols import as_encoder, as_language_model

    _checks.real(threshold, "self_consistency", "threshold", finite=True)
    _checks.integer(max_verify, "self_consistency", "max_verify", minimum=0)
    _checks.choice(pool, "self_consistency", "pool", POOLS)
    _checks.choice(rescale, "self_consistency", "rescale", RESCALES)
    _checks.choice(text, "self_consistency", "text", CONSISTENCY_TEXTS)
    if memory.features is None or memory.times is None:
        return Verified(answer, [Round(answer, math.nan)], 0, False)
    open_question = not options
    if open_question and encoder is None:
        raise InputError("self_consistency: an open question needs the encoder (its answer "
                         "text is embedded each round)")
    if option_embeddings is None and not open_question:
        if encoder is None:
            raise InputError("self_consistency: give encoder or option_embeddings")
        texts = [consistency_text(question, o, text) for o in options]
        option_embeddings = embeddings(as_encoder(encoder).encode_texts(texts), len(texts),
                                       "encode_texts")
    llm = as_language_model(llm)
    qa_prompt = answer_messages(question, options, memory, answer_prompt)[-1]["content"]
    verify_prompt = verify_prompt or (P.VERIFY_OPEN if open_question else P.VERIFY)
    text_encoder = as_encoder(encoder) if open_question else None

    def text_embedding(a: Answer) -> Optional[np.ndarray]:
        if open_question:
            if not a.text:
                return None
            said = consistency_text(question, a.text, text)
            return embeddings(text_encoder.encode_texts([said]), 1, "encode_texts")[0]
        return option_embeddings[a.option] if 0 <= a.option < len(options) else None

    def score(a: Answer) -> float:
        target = text_embedding(a) if a.spans else None
        if target is None:
            return -math.inf
        return consistency_score(memory.features, memory.times, a.spans[0], target,
                                 pool=pool, rescale=rescale)

    current, rounds, reasked = answer, [], 0
    while True:
        r = score(current)
        rounds.append(Round(current, r))
        if r >= threshold or reasked >= max_verify:
            break
        messages = P.verify_messages(qa_prompt, describe_answer(current, options),
                                     describe_frames(memory.times, current),
                                     "n/a" if not math.isfinite(r) else f"{r:.2f}",
                                     verify_prompt)
        current = parse_answer(llm.complete(messages), options, duration)
        reasked += 1
    return Verified(current, rounds, reasked,
                    (current.option, current.text) != (answer.option, answer.text))
