# SPDX-License-Identifier: Apache-2.0
"""The shape of a chat message's ``content``, checked once for the client
(:meth:`fastvqa.llm.ChatCompletionsClient.body`) and the server
(:func:`fastvqa.llm.serve_chat_model`); standard library only.

``content`` is a ``str``, or a non-empty list of parts in the OpenAI
chat-completions form: ``{"type": "text", "text": str}`` or
``{"type": "image_url", "image_url": {"url": str}}`` (with an optional
``"detail"`` str). What an image URL holds is not checked here: a hosted API
takes ``https://`` URLs, a local server decodes ``data:`` URLs itself
(:func:`fastvqa.llm.images.decode_image_url`).
"""

from __future__ import annotations

from typing import Any, Union

from fastvqa.errors import InputError

_IMAGE_URL_KEYS = {"url", "detail"}


def checked_content(content: Any, where: str) -> Union[str, list]:
    """``content`` as it is sent: the string itself, or a copy of its parts
    (each a new dict, so the caller's later edits cannot change a body already
    hashed). Raises :class:`~fastvqa.errors.InputError` naming
    ``where[j]`` (e.g. ``messages[1].content[2]``) and what is wrong."""
    if isinstance(content, str):
        return content
    if not isinstance(content, list) or not content:
        raise InputError(f"{where}: expected a str or a non-empty list of content parts, "
                         f"got {_shown(content)}")
    return [_checked_part(part, f"{where}[{j}]") for j, part in enumerate(content)]


def _checked_part(part: Any, where: str) -> dict:
    if not isinstance(part, dict):
        raise InputError(f"{where}: expected a dict content part, got {type(part).__name__}")
    kind = part.get("type")
    if kind == "text":
        if set(part) != {"type", "text"} or not isinstance(part["text"], str):
            raise InputError(f"{where}: a text part is {{'type': 'text', 'text': str}}, "
                             f"got {_shown(part)}")
        return {"type": "text", "text": part["text"]}
    if kind == "image_url":
        image = part.get("image_url")
        if set(part) != {"type", "image_url"} or not isinstance(image, dict):
            raise InputError(f"{where}: an image part is {{'type': 'image_url', 'image_url': "
                             f"{{'url': str}}}}, got {_shown(part)}")
        if not isinstance(image.get("url"), str) or not set(image) <= _IMAGE_URL_KEYS:
            raise InputError(f"{where}: image_url must hold a str 'url' (and optionally a str "
                             f"'detail'), got keys {sorted(map(str, image))}")
        if "detail" in image and not isinstance(image["detail"], str):
            raise InputError(f"{where}: image_url.detail must be a str, "
                             f"got {type(image['detail']).__name__}")
        return {"type": "image_url", "image_url": dict(image)}
    raise InputError(f"{where}: unknown content part type {_shown(kind)}; expected 'text' or "
                     "'image_url'")


def text_of(content: Union[str, list]) -> str:
    """The text of checked ``content``: the string, or its text parts joined
    with ``"\\n"`` (image parts left out)."""
    if isinstance(content, str):
        return content
    return "\n".join(p["text"] for p in content if p["type"] == "text")


def _shown(value: Any) -> str:
    """A short one-line repr (never a whole base64 image)."""
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."
