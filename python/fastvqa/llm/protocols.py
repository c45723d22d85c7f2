# SPDX-License-Identifier: Apache-2.0
"""The model interfaces fastvqa's pipelines are built from, as
:class:`typing.Protocol`\\ s, and adapters that turn plain callables into them.

- :class:`Captioner`: frames of one segment -> one caption (the paper's
  Video-LLaVA);
- :class:`LanguageModel`: chat messages -> the reply text (the paper's GPT-4o;
  :class:`fastvqa.llm.ChatCompletionsClient` reaches any OpenAI-compatible
  server);
- :class:`ImageTextEncoder`: images and texts -> L2-normalised embeddings in
  one space (the paper's CLIP ViT-L/14), for the self-consistency score;
  :mod:`fastvqa.llm.encoders` has CLIP models behind it.

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
    """Images and texts into one embedding space.

    ``encode_images(images)``: ``(N, H, W, 3)`` uint8 RGB -> ``(N, D)``
    float32; ``encode_texts(texts)``: ``M`` strings -> ``(M, D)`` float32.
    Every row L2-normalised (norm 1; an all-zero row is allowed and means
    "nothing recognised": its cosine with anything is 0), so a dot product
    is a cosine similarity.

    ``encode_frames`` is the former name of ``encode_images``: code written
    for it keeps working, as :func:`as_encoder` gives every encoder both
    names."""

    def encode_images(self, images: np.ndarray) -> np.ndarray: ...

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
    """A pair of functions ``(images_fn, texts_fn)`` as an :class:`ImageTextEncoder`
    (``encode_frames`` is ``encode_images``)."""

    def __init__(self, images_fn: Callable, texts_fn: Callable):
        self.images_fn, self.texts_fn = images_fn, texts_fn
        self.name = f"({_name(images_fn)}, {_name(texts_fn)})"

    def encode_images(self, images):
        return self.images_fn(images)

    encode_frames = encode_images

    def encode_texts(self, texts):
        return self.texts_fn(texts)


class EncoderAdapter:
    """An object with ``encode_texts`` and one of ``encode_images`` /
    ``encode_frames`` (the former name), given both names. Its ``name`` is the
    object's (or its class name), so caches keyed on it keep their keys; other
    attributes are the object's."""

    def __init__(self, encoder: Any):
        self.encoder = encoder
        self.name = getattr(encoder, "name", None) or type(encoder).__qualname__
        self.encode_images = getattr(encoder, "encode_images", None) or encoder.encode_frames
        self.encode_frames = self.encode_images
        self.encode_texts = encoder.encode_texts

    def __getattr__(self, attr: str) -> Any:  # dim, batch_size, ... of the encoder
        if "encoder" not in self.__dict__:  # half-built (copy, pickle): no recursion
            raise AttributeError(attr)
        return getattr(self.__dict__["encoder"], attr)


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
    """An :class:`ImageTextEncoder` that also answers to ``encode_frames``.

    ``obj`` itself when it has ``encode_images``, ``encode_frames`` and
    ``encode_texts`` (the encoders of :mod:`fastvqa.llm.encoders` do); an
    object with ``encode_texts`` and only one of ``encode_images`` /
    ``encode_frames`` wrapped in :class:`EncoderAdapter`; a pair of functions
    ``(images_fn, texts_fn)`` wrapped in :class:`CallableEncoder`."""
    if isinstance(obj, (tuple, list)) and len(obj) == 2 and all(map(callable, obj)):
        return CallableEncoder(*obj)
    has = [callable(getattr(obj, m, None)) for m in ("encode_images", "encode_frames",
                                                      "encode_texts")]
    if all(has):
        return obj
    if has[2] and (has[0] or has[1]):
        return EncoderAdapter(obj)
    raise InputTypeError(f"encoder: expected an object with encode_images (or encode_frames) and "
                         f"encode_texts, or a pair of functions (images_fn, texts_fn), got "
                         f"{type(obj).__name__}")


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
