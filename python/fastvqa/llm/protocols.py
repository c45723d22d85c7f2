# SPDX-License-Identifier: Apache-2.0
"""The model interfaces fastvqa's pipelines are built from, as
:class:`typing.Protocol`\\ s, and adapters that turn plain callables into them.

- :class:`Captioner`: frames of one segment -> one caption (the paper's
  Video-LLaVA);
- :class:`LanguageModel`: chat messages -> the reply text (the paper's GPT-4o;
  :class:`fastvqa.llm.ChatCompletionsClient` reaches any OpenAI-compatible
  server);
- :class:`ImageTextEncoder`: frames and texts -> L2-normalised embeddings in
  one space (the paper's CLIP ViT-L/14), for the self-consistency score.

Any object with the right methods is a component; :func:`as_captioner`,
:func:`as_language_model` and :func:`as_encoder` also accept plain functions
(a function for the first two, a pair of functions for the encoder).
"""

from __future__ import annotations

from typing import Any, Callable, Protocol, Sequence, runtime_checkable

import numpy as np

from fastvqa.errors import InputTypeError

#: one chat message: ``{"role": "system" | "user" | "assistant", "content": str}``
Message = dict


@runtime_checkable
class Captioner(Protocol):
    """``caption(frames, timestamps) -> str``.

    ``frames``: ``(N, H, W, 3)`` uint8 RGB, the frames of one segment in time
    order; ``timestamps``: ``(N,)`` float64, each frame's presentation time in
    seconds on the video's timeline. Returns the caption text."""

    def caption(self, frames: np.ndarray, timestamps: np.ndarray) -> str: ...


@runtime_checkable
class LanguageModel(Protocol):
    """``complete(messages) -> str``: the assistant's reply to a chat
    (``messages``: a list of ``{"role", "content"}`` dicts, oldest first)."""

    def complete(self, messages: Sequence[Message]) -> str: ...


@runtime_checkable
class ImageTextEncoder(Protocol):
    """Frames and texts into one embedding space.

    ``encode_frames(frames)``: ``(N, H, W, 3)`` uint8 -> ``(N, D)`` float32;
    ``encode_texts(texts)``: ``M`` strings -> ``(M, D)`` float32. Every row
    L2-normalised (norm 1; an all-zero row is allowed and means "nothing
    recognised": its cosine with anything is 0)."""

    def encode_frames(self, frames: np.ndarray) -> np.ndarray: ...

    def encode_texts(self, texts: Sequence[str]) -> np.ndarray: ...


def _name(fn: Any) -> str:
    return getattr(fn, "name", None) or getattr(fn, "__qualname__", None) or type(fn).__name__


class CallableCaptioner:
    """A function ``fn(frames, timestamps) -> str`` as a :class:`Captioner`."""

    def __init__(self, fn: Callable[[np.ndarray, np.ndarray], str]):
        self.fn, self.name = fn, _name(fn)

    def caption(self, frames, timestamps) -> str:
        return _text(self.fn(frames, timestamps), self.name)


class CallableLanguageModel:
    """A function ``fn(messages) -> str`` as a :class:`LanguageModel`."""

    def __init__(self, fn: Callable[[Sequence[Message]], str]):
        self.fn, self.name = fn, _name(fn)

    def complete(self, messages) -> str:
        return _text(self.fn(messages), self.name)


class CallableEncoder:
    """A pair of functions ``(frames_fn, texts_fn)`` as an :class:`ImageTextEncoder`."""

    def __init__(self, frames_fn: Callable, texts_fn: Callable):
        self.frames_fn, self.texts_fn = frames_fn, texts_fn
        self.name = f"({_name(frames_fn)}, {_name(texts_fn)})"

    def encode_frames(self, frames):
        return self.frames_fn(frames)

    def encode_texts(self, texts):
        return self.texts_fn(texts)


def _text(value: Any, who: str) -> str:
    if not isinstance(value, str):
        raise InputTypeError(f"{who} returned {type(value).__name__}, expected the text (str)")
    return value


def _adapt(obj: Any, protocol: type, wrapper: type, what: str, method: str) -> Any:
    if isinstance(obj, protocol):
        return obj
    if callable(obj):
        return wrapper(obj)
    raise InputTypeError(f"{what}: expected an object with {method} or a function, got "
                         f"{type(obj).__name__}")


def as_captioner(obj: Any) -> Captioner:
    """``obj`` when it has ``caption``, a function wrapped in :class:`CallableCaptioner`."""
    return _adapt(obj, Captioner, CallableCaptioner, "captioner", "caption(frames, timestamps)")


def as_language_model(obj: Any) -> LanguageModel:
    """``obj`` when it has ``complete``, a function wrapped in :class:`CallableLanguageModel`."""
    return _adapt(obj, LanguageModel, CallableLanguageModel, "language model",
                  "complete(messages)")


def as_encoder(obj: Any) -> ImageTextEncoder:
    """``obj`` when it has ``encode_frames`` and ``encode_texts``; a pair of
    functions ``(frames_fn, texts_fn)`` wrapped in :class:`CallableEncoder`."""
    if isinstance(obj, ImageTextEncoder):
        return obj
    if isinstance(obj, (tuple, list)) and len(obj) == 2 and all(map(callable, obj)):
        return CallableEncoder(*obj)
    raise InputTypeError(f"encoder: expected an object with encode_frames and encode_texts, or a "
                         f"pair of functions (frames_fn, texts_fn), got {type(obj).__name__}")


def embeddings(x: Any, rows: int, what: str) -> np.ndarray:
    """An encoder's output checked: ``(rows, D)`` finite float32 (a clear
    error naming ``what`` otherwise)."""
    from fastvqa.errors import InputError

    arr = np.asarray(x, dtype=np.float32)
    if arr.ndim != 2 or arr.shape[0] != rows:
        raise InputError(f"{what}: expected ({rows}, D) embeddings, got shape {arr.shape}")
    if not np.isfinite(arr).all():
        raise InputError(f"{what}: embeddings hold NaN or infinite values")
    return arr
