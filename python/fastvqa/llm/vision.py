# SPDX-License-Identifier: Apache-2.0
"""A vision-language model as "prompt + model": frames in one chat message.

- :class:`ChatCaptioner`: a :class:`~fastvqa.llm.protocols.Captioner` (DeVi's
  segment captioner, the paper's Video-LLaVA) from any chat model that sees
  images;
- :class:`ChatAnswerer`: a multiple-choice (or open) question over frames,
  the reply text as the model wrote it (parse it with
  :func:`fastvqa.parse.parse_response`).

The messages: the prompt's ``system`` text as it is (a prompt's system text
is never formatted: DeVi's captioning prompt keeps the paper's
``{video.clips}`` as words), then one user message whose content is
:func:`fastvqa.llm.images.frames_content`: every frame after its
``"Frame k at t s:"`` line (k from 1, t in seconds), then the prompt's
``user`` template filled in. ``model`` is anything with ``complete(messages)
-> str`` (:class:`~fastvqa.llm.ChatCompletionsClient` for vLLM, llama.cpp,
a hosted API, or :func:`~fastvqa.llm.serve_chat_model` locally) or a function.
"""

from __future__ import annotations

import string
from typing import Any, Optional, Sequence

import numpy as np

from fastvqa.errors import InputError, InputTypeError
from fastvqa.llm import prompts as P
from fastvqa.llm.images import _image_options, checked_frames, frames_content
from fastvqa.llm.protocols import as_language_model

_LETTERS = string.ascii_uppercase
#: the fields each user template may name.
CAPTION_FIELDS = ("start", "end", "frames")
ANSWER_FIELDS = ("question", "options", "start", "end", "frames")


def _template_fields(prompt: Any, allowed: Sequence[str], op: str) -> P.Prompt:
    """``prompt`` checked to be a :class:`~fastvqa.llm.prompts.Prompt` whose
    ``user`` template names only ``allowed`` fields (``{start:.1f}`` names
    ``start``), so a wrong template fails when it is given, not mid-run."""
    if not isinstance(prompt, P.Prompt):
        raise InputTypeError(f"{op}: prompt must be a fastvqa.llm.prompts.Prompt, got "
                             f"{type(prompt).__name__}")
    try:
        parsed = list(string.Formatter().parse(prompt.user))
    except ValueError as err:  # an unmatched "{" or "}"
        raise InputError(f"{op}: prompt {prompt.name!r}: its user template is malformed "
                         f"({err})") from None
    for _, field, _, _ in parsed:
        if field is None:
            continue
        root = field.split(".")[0].split("[")[0]
        if root not in allowed:
            raise InputError(f"{op}: prompt {prompt.name!r}: its user template names "
                             f"{{{field}}}, but only {', '.join(allowed)} are filled in")
    return prompt


class _FramesChat:
    """What both classes share: the model, the image options, the messages."""

    def __init__(self, model: Any, op: str, format: str, quality: int,
                 max_side: Optional[int]):
        self.model = as_language_model(model)
        self.format, self.quality, self.max_side = _image_options(format, quality, max_side, op)

    def _messages(self, prompt: P.Prompt, frames: np.ndarray, times: np.ndarray,
                  fields: dict) -> list:
        try:
            text = prompt.user.format(**fields)
        except (KeyError, IndexError, ValueError) as err:  # e.g. a field inside a format spec
            raise InputError(f"prompt {prompt.name!r}: its user template cannot be filled in "
                             f"with {', '.join(fields)} ({type(err).__name__}: {err})") from None
        content = frames_content(text, frames, times,
                                 format=self.format, quality=self.quality,
                                 max_side=self.max_side)
        return [{"role": "system", "content": prompt.system},
                {"role": "user", "content": content}]


def _span(times: np.ndarray, start: Optional[float], end: Optional[float]) -> tuple:
    """``(start, end)`` seconds: the given ones, else the first / last frame's time."""
    return (float(times[0]) if start is None else float(start),
            float(times[-1]) if end is None else float(end))


class ChatCaptioner(_FramesChat):
    """A captioner from a chat model that sees images.

    Args:
        model: ``complete(messages) -> str`` (or such a function).
        prompt: a :class:`~fastvqa.llm.prompts.Prompt` (DeVi's
            :data:`fastvqa.devi.prompts.CAPTION`, say) whose ``user``
            template may name ``start``, ``end`` (seconds) and ``frames``
            (the count).
        format, quality, max_side: how frames are sent
            (:func:`fastvqa.llm.images.encode_image`).

    Raises:
        InputError: a template naming another field, an image option out of range.

    >>> from fastvqa.llm.prompts import Prompt
    >>> p = Prompt("caption", "You caption videos.", "{frames} frames, {start:.1f}-{end:.1f} s.",
    ...            source="fastvqa")
    >>> seen = []
    >>> def model(messages):
    ...     seen.append(messages)
    ...     return "A grey screen."
    >>> ChatCaptioner(model, p, format="png").caption(np.zeros((2, 4, 4, 3), np.uint8), [0, 1])
    'A grey screen.'
    >>> seen[0][1]["content"][-1]
    {'type': 'text', 'text': '2 frames, 0.0-1.0 s.'}
    """

    def __init__(self, model: Any, prompt: P.Prompt, *, format: str = "jpeg", quality: int = 90,
                 max_side: Optional[int] = None):
        op = "ChatCaptioner"
        super().__init__(model, op, format, quality, max_side)
        self.prompt = _template_fields(prompt, CAPTION_FIELDS, op)
        self.name = f"ChatCaptioner({getattr(self.model, 'name', type(self.model).__name__)}, " \
                    f"{prompt.name})"

    def caption(self, frames: np.ndarray, timestamps: Any, start: Optional[float] = None,
                end: Optional[float] = None) -> str:
        """The model's caption of ``frames`` ``(N, H, W, 3)`` uint8 RGB (N >= 1)
        at ``timestamps`` ``(N,)`` seconds; ``start``/``end`` (seconds, for the
        template) default to the first and last frame's time. One chat call."""
        frames, times = checked_frames(frames, timestamps, "ChatCaptioner.caption")
        start, end = _span(times, start, end)
        return self.model.complete(self._messages(
            self.prompt, frames, times, {"start": start, "end": end, "frames": len(frames)}))

    __call__ = caption


class ChatAnswerer(_FramesChat):
    """A question over frames, asked of a chat model that sees images.

    Args:
        model: ``complete(messages) -> str`` (or such a function).
        prompt: a :class:`~fastvqa.llm.prompts.Prompt` whose ``user`` template
            may name ``question``, ``options`` (the option lines, ``A. ...``),
            ``start``, ``end`` (seconds) and ``frames`` (the count); ``None``
            (the default): :data:`~fastvqa.llm.prompts.VLM_ANSWER` for a
            question with options, :data:`~fastvqa.llm.prompts.VLM_OPEN` for one
            without (an open question, WildQA's kind).
        format, quality, max_side: how frames are sent
            (:func:`fastvqa.llm.images.encode_image`).

    >>> def model(messages):
    ...     return "Answer: B\\nSpan: 1.0 s - 2.0 s"
    >>> ChatAnswerer(model, format="png").answer(np.zeros((2, 4, 4, 3), np.uint8), [1.0, 2.0],
    ...                                          "What is shown?", ["a cat", "nothing"])
    'Answer: B\\nSpan: 1.0 s - 2.0 s'
    """

    def __init__(self, model: Any, prompt: Optional[P.Prompt] = None, *, format: str = "jpeg",
                 quality: int = 90, max_side: Optional[int] = None):
        op = "ChatAnswerer"
        super().__init__(model, op, format, quality, max_side)
        self.prompt = None if prompt is None else _template_fields(prompt, ANSWER_FIELDS, op)

    def answer(self, frames: np.ndarray, timestamps: Any, question: str,
               options: Sequence[str] = ()) -> str:
        """The model's reply (raw text) to ``question`` over ``frames``
        ``(N, H, W, 3)`` uint8 RGB at ``timestamps`` ``(N,)`` seconds.
        ``options``: the choices, shown as ``A. ...`` lines (at most 26;
        empty: an open question). One chat call.

        Raises:
            InputError: bad frames, a question or option that is not a str,
                more than 26 options.
        """
        op = "ChatAnswerer.answer"
        frames, times = checked_frames(frames, timestamps, op)
        if not isinstance(question, str):
            raise InputTypeError(f"{op}: question must be a str, got {type(question).__name__}")
        if isinstance(options, str) or not all(isinstance(o, str) for o in options):
            raise InputTypeError(f"{op}: options must be a list of str")
        if len(options) > len(_LETTERS):
            raise InputError(f"{op}: at most {len(_LETTERS)} options, got {len(options)}")
        prompt = self.prompt or (P.VLM_ANSWER if options else P.VLM_OPEN)
        lines = "\n".join(f"{_LETTERS[k]}. {o}" for k, o in enumerate(options))
        start, end = _span(times, None, None)
        return self.model.complete(self._messages(
            prompt, frames, times, {"question": question, "options": lines, "start": start,
                                    "end": end, "frames": len(frames)}))

    __call__ = answer


__all__ = ["ChatAnswerer", "ChatCaptioner"]
