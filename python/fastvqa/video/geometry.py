# SPDX-License-Identifier: Apache-2.0
"""The output geometry of a read: resize and centre crop, computed once for every backend.

The API layer (:mod:`fastvqa.video.api`) calls :func:`output_geometry` and
hands the result to the backend, which only executes it: PyAV and DALI give
the same shapes for the same arguments, on every machine.

Rounding rule (torchvision's, so shapes match a torchvision preprocessing):

- ``size=<int>`` resizes the shorter side to ``size`` and the longer side to
  ``floor(size * longer / shorter)`` (``torchvision.transforms.Resize(int)``
  truncates: 640x480 at 224 gives 298x224, WxH). A square frame gives
  ``size x size``. ``size=(H, W)`` resizes to exactly that.
- ``crop=<int>`` or ``(h, w)``: the centre crop of the resized frame, top-left
  corner at ``(round((H - h) / 2), round((W - w) / 2))`` with Python's
  ``round`` (half to even; ``torchvision.transforms.CenterCrop``). A crop
  larger than the resized frame is a ``ValueError``.
"""

from __future__ import annotations

import numbers
from typing import NamedTuple, Optional

from fastvqa import _checks
from fastvqa.errors import InputError

#: The largest output side (pixels) a resize may produce: FFmpeg's own image
#: size limit is about 16384 x 16384.
MAX_SIDE = 16384


class Geometry(NamedTuple):
    """What a backend does to each decoded frame, in this order.

    ``resize``: ``(H, W)`` to resize to, ``None`` to keep the frame's size.
    ``crop``: ``(top, left, h, w)`` of the centre crop in the resized frame,
    ``None`` for no crop. ``shape``: the ``(h, w)`` of the frames that come out.
    """

    resize: Optional[tuple]
    crop: Optional[tuple]
    shape: tuple


def _pair(name: str, value) -> tuple:
    """``value`` (an int, or a ``(height, width)`` pair) as two positive ints."""
    if isinstance(value, numbers.Integral) and not isinstance(value, bool):
        side = _checks.integer(value, "", name, minimum=1)
        return side, side
    try:
        h, w = value
    except (TypeError, ValueError):
        raise TypeError(f"{name} must be an int or (height, width), got {value!r}") from None
    return _checks.integer(h, "", name, minimum=1), _checks.integer(w, "", name, minimum=1)


def output_size(height: int, width: int, size=None) -> tuple:
    """``(H, W)`` after the shorter-side (int) or exact (``(H, W)``) resize of a
    ``height x width`` frame (the module's rounding rule: the longer side is
    truncated). A side above :data:`MAX_SIDE` is a ``ValueError``."""
    if size is None:
        return int(height), int(width)
    if isinstance(size, numbers.Integral) and not isinstance(size, bool):
        s = _checks.integer(size, "", "size", minimum=1)
        if width <= height:  # exact integer floor == torchvision's int(s * long / short)
            h, w = s * int(height) // int(width), s
        else:
            h, w = s, s * int(width) // int(height)
    else:
        h, w = _pair("size", size)
    if max(h, w) > MAX_SIDE:
        raise InputError(f"size {size!r} resizes the {width}x{height} (WxH) video to {w}x{h}; "
                         f"the largest side allowed is {MAX_SIDE} pixels")
    return h, w


def crop_box(height: int, width: int, crop=None) -> tuple:
    """``(top, left, h, w)`` of the centre crop of a ``height x width`` frame
    (offsets ``round((height - h) / 2)``, half to even, as torchvision's
    ``CenterCrop``). A crop larger than the frame is a ``ValueError``."""
    if crop is None:
        return 0, 0, int(height), int(width)
    ch, cw = _pair("crop", crop)
    if ch > height or cw > width:
        raise InputError(f"crop {ch}x{cw} (HxW) does not fit in the {height}x{width} frame")
    return int(round((height - ch) / 2.0)), int(round((width - cw) / 2.0)), ch, cw


def output_geometry(height: int, width: int, size=None, crop=None) -> Geometry:
    """The resize and crop for frames of ``height x width`` (the orientation
    they are delivered in), by the module's rounding rule; the one place
    either is computed."""
    out_h, out_w = output_size(height, width, size)
    top, left, h, w = crop_box(out_h, out_w, crop)
    resize = None if (out_h, out_w) == (int(height), int(width)) else (out_h, out_w)
    box = None if crop is None else (top, left, h, w)
    return Geometry(resize, box, (h, w))
