# SPDX-License-Identifier: Apache-2.0
"""A vision-language model of the demo's synthetic world that reads the
pixels it is sent: put it behind :func:`fastvqa.llm.serve_chat_model` and
reach it with :class:`fastvqa.llm.ChatCaptioner` / :class:`fastvqa.llm.ChatAnswerer`
through :class:`fastvqa.llm.ChatCompletionsClient`, images and all.

It knows nothing about the videos but what the images show: no ids, no
file names, no annotations. Change the pixels and the reply changes.
"""

from __future__ import annotations

import threading
from typing import Optional, Sequence

import numpy as np

from fastvqa.demo.devi_models import DemoCaptioner, DemoLanguageModel, events_in
from fastvqa.demo.synth import ACTION_VERBS
from fastvqa.devi.pipeline import LETTERS, format_options, parse_answer
from fastvqa.devi.prompts import ANSWER
from fastvqa.errors import InputError
from fastvqa.llm.images import message_images, message_text


def frame_times(message: dict) -> np.ndarray:
    """The times (seconds) of the ``"Frame k at t s:"`` text parts of a
    message (:func:`fastvqa.llm.images.frames_content`), in order; read
    line by line, without a regex."""
    content = message.get("content") if isinstance(message, dict) else None
    times = []
    for part in content if isinstance(content, list) else []:
        text = part.get("text", "").strip() if part.get("type") == "text" else ""
        if text.startswith("Frame ") and text.endswith(" s:"):
            _, at, t = text[:-len(" s:")].partition(" at ")
            try:
                times.append(float(t))
            except ValueError:
                raise InputError(f"frame label {text[:60]!r}: the time is not a number") from None
    return np.asarray(times, dtype=np.float64)


def _line_after(text: str, label: str) -> Optional[str]:
    """The rest of the line that starts with ``label`` (None when none does)."""
    for line in text.splitlines():
        if line.startswith(label):
            return line[len(label):].strip()
    return None


def _options(text: str) -> list:
    """The ``A. ...`` lines after ``Options:`` up to the next blank line."""
    _, found, rest = text.partition("Options:\n")
    out = []
    for line in rest.split("\n\n", 1)[0].splitlines() if found else []:
        letter, dot, option = line.partition(". ")
        if dot and len(letter) == 1 and letter.isupper():
            out.append(option.strip())
    return out


class DemoVisionModel:
    """``fn(messages) -> str`` for :func:`~fastvqa.llm.serve_chat_model`.

    It reads the last user message: its images (:func:`~fastvqa.llm.images.message_images`)
    and their times from the ``"Frame k at t s:"`` parts before them, and
    captions them with :class:`~fastvqa.demo.devi_models.DemoCaptioner` (the
    demo's frame analysis: objects by colour and shape, their action between
    consecutive frames). Then:

    - a text with a ``Question:`` line (:data:`fastvqa.llm.prompts.VLM_ANSWER`,
      or :data:`~fastvqa.llm.prompts.VLM_OPEN` without options) is answered
      from that caption by :class:`~fastvqa.demo.devi_models.DemoLanguageModel`
      (the demo's questions: ``What does the X do first?``, ``... between a s
      and b s?``, ``Which object <verb>s between a s and b s?``). The reply:
      ``Answer: <letter>`` (open: the answer's words, among the four action
      verbs or the objects seen) and ``Span: a s - b s``: for a ``first``
      question the time of that action in the frames, for a ``between``
      question the interval asked. Nothing seen: a refusal, no option;
    - otherwise a request that mentions "caption" (the system or user text;
      DeVi's :data:`fastvqa.devi.prompts.CAPTION`) gets the caption;
    - anything else gets a reply that answers nothing.

    ``received``: one ``(timestamps (N,) float64 seconds, images (N, H, W, 3)
    uint8)`` per request, in arrival order (thread-safe: the server runs one
    thread per request).

    Raises (the server's 500): :class:`~fastvqa.errors.InputError` for an
    image that cannot be decoded, images of different sizes, or a number of
    frame labels that is not the number of images.
    """

    name = "fastvqa.demo.DemoVisionModel/1"

    def __init__(self):
        self.received: list = []
        self._lock = threading.Lock()

    def __call__(self, messages: Sequence[dict]) -> str:
        users = [m for m in messages if m.get("role") == "user"]
        if not users:
            return "I cannot help with that request."
        user = users[-1]
        images, times = message_images(user), frame_times(user)
        if len(images) != len(times):
            raise InputError(f"{len(images)} images but {len(times)} 'Frame k at t s:' labels")
        if len({im.shape for im in images}) > 1:
            raise InputError("the images are not all of one size")
        frames = np.stack(images) if images else np.zeros((0, 1, 1, 3), np.uint8)
        with self._lock:
            self.received.append((times, frames))
        text = message_text(user)
        system = "\n".join(message_text(m) for m in messages if m.get("role") == "system")
        if not images:
            return "I see no frames to describe."
        caption = DemoCaptioner().caption(frames, times)
        question = _line_after(text, "Question: ")
        if question is not None:
            return _answer(question, _options(text), caption)
        if "caption" in f"{system}\n{text}".lower():
            return caption
        return "I cannot help with that request."

    complete = __call__


def _answer(question: str, options: list, caption: str) -> str:
    """The VLM_ANSWER / VLM_OPEN reply: the demo language model's choice over
    the caption's events, asked in DeVi's answer prompt."""
    events = events_in(caption)
    if not events:
        return "I cannot see any object in these frames, so I cannot answer."
    choices = options
    if not options:  # open: choose among what could be said
        if question.lower().startswith("which object"):
            choices = list(dict.fromkeys(f"the {e.obj}" for e in events))
        else:
            choices = list(ACTION_VERBS.values())
    if len(choices) > len(LETTERS):
        return "There are too many options for me to compare."
    reply = DemoLanguageModel()(ANSWER.messages(events=caption, question=question,
                                                options=format_options(choices)))
    found = parse_answer(reply, choices)
    if found.option < 0 or not found.spans:
        return "I cannot determine the answer from these frames."
    start, end = found.spans[0]
    said = LETTERS[found.option] if options else choices[found.option]
    return f"Answer: {said}\nSpan: {start:.1f} s - {end:.1f} s"


__all__ = ["DemoVisionModel", "frame_times"]
