# SPDX-License-Identifier: Apache-2.0
"""Video frames as images in chat messages, and back.

The client side turns ``(H, W, 3)`` uint8 RGB frames into the OpenAI
chat-completions image parts that vLLM, llama.cpp's server and the hosted
APIs read (:func:`encode_image`, :func:`image_part`, :func:`frames_content`);
the server side reads them back from untrusted requests
(:func:`decode_image_url`, :func:`message_text`, :func:`message_images`).

Images travel as ``data:image/<format>;base64,...`` URLs, inside the
request body, so the client's cache key (:func:`fastvqa.llm.request_key`)
covers every pixel sent. PNG is lossless (a decoded PNG is the frame, pixel
for pixel); JPEG is smaller.

Pillow (``pip install "fastvqa[models]"``) is imported when an image is
encoded or decoded, not with this module.
"""

from __future__ import annotations

import base64
import binascii
import io
from typing import Any, Optional

import numpy as np

from fastvqa import _checks
from fastvqa.errors import InputError, InputTypeError
from fastvqa.llm._content import checked_content, text_of

_PILLOW_MISSING = 'Pillow is not installed; pip install "fastvqa[models]" (or pip install pillow)'
#: encode format -> (Pillow's format name, the data URL's media type)
_FORMATS = {"jpeg": ("JPEG", "image/jpeg"), "png": ("PNG", "image/png")}
#: media types a data URL may declare, and the Pillow formats its bytes may hold.
_MEDIA_TYPES = ("image/jpeg", "image/jpg", "image/png", "image/webp")
_DECODE_FORMATS = ["JPEG", "PNG", "WEBP"]
MAX_IMAGE_BYTES = 20 * 2**20
MAX_IMAGE_PIXELS = 4096 * 4096


def import_pil():
    """``PIL.Image`` with an error that says which ``pip install`` fixes it."""
    try:
        from PIL import Image
    except ImportError as err:
        raise ImportError(_PILLOW_MISSING) from err
    return Image


def _image_options(format: str, quality: Any, max_side: Any, op: str) -> tuple:
    """The checked ``(format, quality, max_side)`` of the encoding functions."""
    format = _checks.choice(format, op, "format", tuple(_FORMATS))
    quality = _checks.integer(quality, op, "quality", minimum=1)
    if quality > 95:
        raise InputError(f"{op}: quality must be <= 95 (Pillow's advice for JPEG), got {quality}")
    return format, quality, _checks.optional_integer(max_side, op, "max_side", minimum=1)


def _frame(frame: Any, op: str, name: str = "frame") -> np.ndarray:
    """``frame`` as an ``(H, W, 3)`` uint8 array (H, W >= 1), else InputError."""
    if not isinstance(frame, np.ndarray):
        raise InputTypeError(f"{op}: {name} must be a NumPy array, got {type(frame).__name__}")
    if frame.dtype != np.uint8 or frame.ndim != 3 or frame.shape[2] != 3 or 0 in frame.shape:
        raise InputError(f"{op}: {name} must be (H, W, 3) uint8 RGB, got shape "
                         f"{frame.shape} {frame.dtype}")
    return frame


def encode_image(frame: np.ndarray, *, format: str = "jpeg", quality: int = 90,
                 max_side: Optional[int] = None) -> bytes:
    """One frame as image file bytes.

    Args:
        frame: ``(H, W, 3)`` uint8 RGB.
        format: ``"jpeg"`` or ``"png"`` (lossless: the decoded pixels are the frame's).
        quality: JPEG quality, 1-95 (ignored for PNG).
        max_side: when given and the longer side is longer, the frame is
            first resized (bilinear) so that its longer side is ``max_side``
            px, keeping the aspect ratio (the shorter side rounded, >= 1 px).

    Raises:
        InputError: a frame of another shape or dtype, an option out of range.
        ImportError: Pillow is missing (``pip install "fastvqa[models]"``).

    >>> frame = np.zeros((4, 6, 3), dtype=np.uint8)
    >>> encode_image(frame, format="png")[:8]
    b'\\x89PNG\\r\\n\\x1a\\n'
    """
    op = "encode_image"
    format, quality, max_side = _image_options(format, quality, max_side, op)
    frame = _frame(frame, op)
    Image = import_pil()
    image = Image.fromarray(np.ascontiguousarray(frame))  # (H, W, 3) uint8: mode RGB
    h, w = frame.shape[:2]
    if max_side is not None and max(h, w) > max_side:
        scale = max_side / max(h, w)
        size = (max(1, round(w * scale)), max(1, round(h * scale)))  # Pillow: (width, height)
        image = image.resize(size, Image.BILINEAR)  # not Image.Resampling: Pillow 9.0 lacks it
    out = io.BytesIO()
    if format == "jpeg":
        image.save(out, format="JPEG", quality=quality)
    else:
        image.save(out, format="PNG")
    return out.getvalue()


def image_part(frame: np.ndarray, *, format: str = "jpeg", quality: int = 90,
               max_side: Optional[int] = None) -> dict:
    """One frame as a chat content part, ``{"type": "image_url", "image_url":
    {"url": "data:image/jpeg;base64,..."}}`` (``image/png`` for PNG). Options
    and errors as :func:`encode_image`.

    >>> part = image_part(np.zeros((2, 2, 3), dtype=np.uint8), format="png")
    >>> part["type"], part["image_url"]["url"][:22]
    ('image_url', 'data:image/png;base64,')
    """
    data = encode_image(frame, format=format, quality=quality, max_side=max_side)
    media = _FORMATS[format][1]
    return {"type": "image_url",
            "image_url": {"url": f"data:{media};base64,{base64.b64encode(data).decode('ascii')}"}}


def frames_content(text: str, frames: np.ndarray, timestamps: Any, *, format: str = "jpeg",
                   quality: int = 90, max_side: Optional[int] = None) -> list:
    """The content parts of one user message showing ``frames``: for each
    frame ``k`` a text part ``"Frame {k + 1} at {t:.2f} s:"`` (frames are
    numbered **from 1**, as a reply's "frame 3" is read back by
    :func:`fastvqa.parse.parse_spans` with ``frame_times``; ``t`` in seconds,
    two decimals) and its image part (:func:`image_part`), then one text part,
    ``text``.

    Args:
        text: the request, after the frames.
        frames: ``(N, H, W, 3)`` uint8 RGB, N >= 1.
        timestamps: ``(N,)`` finite seconds, each frame's time in the video.
        format, quality, max_side: as :func:`encode_image`.

    Raises:
        InputError: shapes that do not match, no frames, non-finite times.

    >>> parts = frames_content("What moves?", np.zeros((2, 4, 4, 3), np.uint8), [0.5, 1.5],
    ...                        format="png")
    >>> [p["text"] if p["type"] == "text" else p["type"] for p in parts]
    ['Frame 1 at 0.50 s:', 'image_url', 'Frame 2 at 1.50 s:', 'image_url', 'What moves?']
    """
    op = "frames_content"
    _checks.string(text, op, "text")
    _image_options(format, quality, max_side, op)
    frames, times = checked_frames(frames, timestamps, op)
    parts = []
    for k, (frame, t) in enumerate(zip(frames, times)):
        parts.append({"type": "text", "text": f"Frame {k + 1} at {t:.2f} s:"})
        parts.append(image_part(frame, format=format, quality=quality, max_side=max_side))
    parts.append({"type": "text", "text": text})
    return parts


def checked_frames(frames: Any, timestamps: Any, op: str) -> tuple:
    """``(frames, times)``: ``(N, H, W, 3)`` uint8 and ``(N,)`` finite float64
    seconds, N >= 1, else InputError naming ``op``."""
    if not isinstance(frames, np.ndarray):
        raise InputTypeError(f"{op}: frames must be a NumPy array, got {type(frames).__name__}")
    if frames.dtype != np.uint8 or frames.ndim != 4 or frames.shape[3] != 3 or 0 in frames.shape:
        raise InputError(f"{op}: frames must be (N, H, W, 3) uint8 RGB with N >= 1, got shape "
                         f"{frames.shape} {frames.dtype}")
    try:
        times = np.asarray(timestamps, dtype=np.float64)
    except (TypeError, ValueError):
        raise InputTypeError(f"{op}: timestamps must be numbers (seconds)") from None
    if times.shape != (len(frames),):
        raise InputError(f"{op}: timestamps must have shape ({len(frames)},) like the frames, "
                         f"got {times.shape}")
    if not np.isfinite(times).all():
        raise InputError(f"{op}: timestamps must be finite seconds")
    return frames, times


def decode_image_url(url: str, *, max_bytes: int = MAX_IMAGE_BYTES,
                     max_pixels: int = MAX_IMAGE_PIXELS) -> np.ndarray:
    """The ``(H, W, 3)`` uint8 RGB pixels of a ``data:image/...;base64,`` URL
    (JPEG, PNG or WebP; the first frame of an animated one), for a server
    reading untrusted requests.

    Every refusal is one :class:`~fastvqa.errors.InputError` line, checked
    before the work it saves: a URL that is not a ``data:`` URL (``http(s)://``
    URLs are never fetched), a media type other than JPEG/PNG/WebP, base64
    longer than ``max_bytes`` decoded bytes (measured on the text, before
    decoding), bad base64, an image of more than ``max_pixels`` pixels (read
    from its header, before its pixels are decoded), bytes Pillow cannot read
    or that hold another format. Other modes (grey, palette, RGBA, CMYK) are
    converted to RGB (alpha dropped, not blended).

    Raises:
        InputError: as above.
        ImportError: Pillow is missing (``pip install "fastvqa[models]"``).

    >>> url = image_part(np.full((2, 3, 3), 7, np.uint8), format="png")["image_url"]["url"]
    >>> decode_image_url(url).shape
    (2, 3, 3)
    >>> decode_image_url("https://example.com/cat.png")
    Traceback (most recent call last):
    fastvqa.errors.InputError: decode_image_url: expected a data:image/...;base64, URL ...
    """
    op = "decode_image_url"
    _checks.string(url, op, "url")
    max_bytes = _checks.integer(max_bytes, op, "max_bytes", minimum=1)
    max_pixels = _checks.integer(max_pixels, op, "max_pixels", minimum=1)
    # "data:<media type>[;params];base64,<data>", split without a regex.
    header, comma, payload = url.partition(",")
    if not header.startswith("data:") or not comma:
        raise InputError(f"{op}: expected a data:image/...;base64, URL (URLs are not fetched), "
                         f"got {_start(url)}")
    params = header[len("data:"):].split(";")
    media = params[0].strip().lower()
    if media not in _MEDIA_TYPES:
        raise InputError(f"{op}: the data URL holds {media or 'no media type'!r}; expected one "
                         f"of {', '.join(_MEDIA_TYPES)}")
    if params[-1].strip().lower() != "base64":
        raise InputError(f"{op}: the data URL is not base64-encoded (no ';base64' before ',')")
    # Base64 takes 4 characters per 3 bytes: refuse what would decode to too much.
    if len(payload) > 4 * ((max_bytes + 2) // 3):
        raise InputError(f"{op}: the image is over {max_bytes} bytes ({len(payload)} base64 "
                         "characters)")
    try:
        data = base64.b64decode(payload, validate=True)
    except (binascii.Error, ValueError) as err:
        raise InputError(f"{op}: the data URL's base64 is malformed ({err})") from None
    if len(data) > max_bytes:
        raise InputError(f"{op}: the image is over {max_bytes} bytes ({len(data)})")
    return _decoded(data, max_pixels, op)


def _decoded(data: bytes, max_pixels: int, op: str) -> np.ndarray:
    """Image bytes -> ``(H, W, 3)`` uint8; any failure of Pillow's is the
    input's (untrusted bytes reach many code paths: OSError, SyntaxError,
    struct.error, EOFError...), so it becomes one InputError line."""
    Image = import_pil()
    from PIL import UnidentifiedImageError

    try:
        image = Image.open(io.BytesIO(data), formats=_DECODE_FORMATS)  # reads the header only
    except (Image.DecompressionBombError, Image.DecompressionBombWarning):
        # Pillow's own guard, far above max_pixels: the header is enough to refuse
        raise InputError(f"{op}: the image is over the limit of {max_pixels} pixels "
                         "(max_pixels; Pillow calls it a decompression bomb)") from None
    except UnidentifiedImageError:
        raise InputError(f"{op}: the bytes are not a JPEG, PNG or WebP image") from None
    except Exception as err:  # noqa: BLE001 -- untrusted bytes: any failure is the input's
        raise InputError(f"{op}: not a readable JPEG, PNG or WebP image "
                         f"({_reason(err)})") from None
    with image:
        w, h = image.size
        if w < 1 or h < 1 or w * h > max_pixels:
            raise InputError(f"{op}: the image is {w}x{h} px, over the limit of {max_pixels} "
                             "pixels (max_pixels)")
        try:
            rgb = image if image.mode == "RGB" else image.convert("RGB")
            pixels = np.asarray(rgb, dtype=np.uint8)
        except Exception as err:  # noqa: BLE001 -- a truncated or corrupt body
            raise InputError(f"{op}: the {image.format} image cannot be decoded "
                             f"({_reason(err)})") from None
    if pixels.shape != (h, w, 3):  # cannot happen for RGB; guards the contract
        raise InputError(f"{op}: decoded to shape {pixels.shape}, expected ({h}, {w}, 3)")
    return pixels


def _reason(err: BaseException) -> str:
    text = " ".join(str(err).split())[:120]
    return f"{type(err).__name__}: {text}" if text else type(err).__name__


def _start(text: str) -> str:
    return repr(text) if len(text) <= 60 else repr(text[:57]) + "..."


def message_text(message: dict) -> str:
    """The text of one chat message: its ``content`` when a str, else its text
    parts joined with ``"\\n"`` (image parts left out).

    Raises:
        InputError: content that is neither (see :meth:`ChatCompletionsClient.body
            <fastvqa.llm.ChatCompletionsClient.body>`).

    >>> message_text({"role": "user", "content": [
    ...     {"type": "text", "text": "Frame 1 at 0.00 s:"},
    ...     {"type": "image_url", "image_url": {"url": "data:image/png;base64,"}},
    ...     {"type": "text", "text": "Describe it."}]})
    'Frame 1 at 0.00 s:\\nDescribe it.'
    """
    return text_of(checked_content(_content(message), "message.content"))


def message_images(message: dict, *, max_bytes: int = MAX_IMAGE_BYTES,
                   max_pixels: int = MAX_IMAGE_PIXELS) -> list:
    """The images of one chat message, in order, each ``(H, W, 3)`` uint8 RGB
    (:func:`decode_image_url`, whose limits and errors apply); ``[]`` for a
    text-only message.

    >>> msg = {"role": "user", "content": [
    ...     image_part(np.zeros((2, 2, 3), np.uint8), format="png"),
    ...     {"type": "text", "text": "What is this?"}]}
    >>> [im.shape for im in message_images(msg)]
    [(2, 2, 3)]
    """
    content = checked_content(_content(message), "message.content")
    if isinstance(content, str):
        return []
    return [decode_image_url(p["image_url"]["url"], max_bytes=max_bytes, max_pixels=max_pixels)
            for p in content if p["type"] == "image_url"]


def _content(message: Any) -> Any:
    if not isinstance(message, dict) or "content" not in message:
        raise InputError(f"expected a chat message {{'role', 'content'}}, got "
                         f"{type(message).__name__}")
    return message["content"]


__all__ = ["decode_image_url", "encode_image", "frames_content", "image_part", "message_images",
           "message_text"]
