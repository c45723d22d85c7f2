# SPDX-License-Identifier: Apache-2.0
"""Span conversions for training: (start, end) <-> (centre, width), seconds <->
normalised, clamping to the video.

Two conventions meet in span models. fastvqa's ops, metrics and files use
``(start, end)`` in seconds (continuous ends). Set-prediction heads such as
Moment-DETR predict ``(centre, width)`` as fractions of the video's duration,
both in ``[0, 1]``. Every function here takes a torch tensor of shape
``(..., 2)`` (any leading shape, the pair in the last dimension), returns a new
tensor of the same shape and dtype, and is built from differentiable torch
operations, so autograd flows through it (and ``torch.compile`` traces it).
"""

from __future__ import annotations

from typing import Union

import torch
from torch import Tensor

from fastvqa.errors import InputError, InputTypeError

Duration = Union[float, int, Tensor]


def spans_to_center_width(spans: Tensor) -> Tensor:
    """``(start, end)`` -> ``(centre, width)``: ``((start + end) / 2, end - start)``.

    A reversed span (``end < start``) gets a negative width; nothing is
    clamped (see :func:`clamp_spans`).

    Example:
        >>> import torch
        >>> spans_to_center_width(torch.tensor([[2.0, 6.0], [5.0, 4.0]])).tolist()
        [[4.0, 4.0], [4.5, -1.0]]
    """
    _check_pairs(spans, "spans_to_center_width", "spans")
    start, end = spans.unbind(-1)
    return torch.stack(((start + end) / 2, end - start), dim=-1)


def center_width_to_spans(cw: Tensor) -> Tensor:
    """``(centre, width)`` -> ``(start, end)``: ``(centre - width / 2, centre + width / 2)``.

    The inverse of :func:`spans_to_center_width` (up to rounding).

    Example:
        >>> import torch
        >>> center_width_to_spans(torch.tensor([[4.0, 4.0]])).tolist()
        [[2.0, 6.0]]
    """
    _check_pairs(cw, "center_width_to_spans", "cw")
    centre, width = cw.unbind(-1)
    half = width / 2
    return torch.stack((centre - half, centre + half), dim=-1)


def normalize_spans(spans: Tensor, duration: Duration) -> Tensor:
    """Spans in seconds -> fractions of the video: ``spans / duration``.

    Works on ``(start, end)`` and on ``(centre, width)`` alike (both scale).

    Args:
        spans: ``(..., 2)`` spans in seconds.
        duration: the video's duration in seconds, ``> 0``: a number for all
            spans, or a tensor of shape ``(B,)`` with one duration per row of
            a ``(B, ..., 2)`` input (e.g. ``(B, N, 2)``); a 0-d tensor acts as a
            number.

    Raises:
        InputError: a duration that is not finite and ``> 0``, or a per-row
            duration whose length is not ``spans.shape[0]``.

    Example:
        >>> import torch
        >>> normalize_spans(torch.tensor([[2.0, 6.0]]), 8.0).tolist()
        [[0.25, 0.75]]
        >>> normalize_spans(torch.tensor([[[2.0, 6.0]], [[2.0, 6.0]]]), torch.tensor([8.0, 4.0]))
        tensor([[[0.2500, 0.7500]],
        <BLANKLINE>
                [[0.5000, 1.5000]]])
    """
    op = "normalize_spans"
    _check_pairs(spans, op, "spans")
    return spans / _duration_like(spans, duration, op)


def denormalize_spans(spans: Tensor, duration: Duration) -> Tensor:
    """Fractions of the video -> seconds: ``spans * duration``; the inverse of
    :func:`normalize_spans` (same arguments).

    Example:
        >>> import torch
        >>> denormalize_spans(torch.tensor([[0.25, 0.75]]), 8.0).tolist()
        [[2.0, 6.0]]
    """
    op = "denormalize_spans"
    _check_pairs(spans, op, "spans")
    return spans * _duration_like(spans, duration, op)


def clamp_spans(spans: Tensor, duration: Duration) -> Tensor:
    """``(start, end)`` spans clipped to the video ``[0, duration]``.

    Each endpoint is clamped to ``[0, duration]``, then ``end`` is raised to
    ``start`` where it fell below it, so the result always has
    ``0 <= start <= end <= duration`` (a span wholly outside the video
    becomes a zero-length span at the nearer edge; a reversed span becomes
    zero-length at its clamped start). Gradients flow to the endpoints that
    were not clamped. ``duration`` as in :func:`normalize_spans` (use ``1``
    for normalised spans). A NaN endpoint stays NaN.

    Example:
        >>> import torch
        >>> clamp_spans(torch.tensor([[-1.0, 3.0], [7.0, 9.0], [10.0, 12.0]]), 8.0).tolist()
        [[0.0, 3.0], [7.0, 8.0], [8.0, 8.0]]
    """
    op = "clamp_spans"
    _check_pairs(spans, op, "spans")
    limit = _duration_like(spans, duration, op).squeeze(-1)
    zero = torch.zeros((), dtype=spans.dtype, device=spans.device)
    start, end = spans.unbind(-1)
    start = torch.minimum(torch.maximum(start, zero), limit)
    end = torch.minimum(torch.maximum(end, zero), limit)
    return torch.stack((start, torch.maximum(end, start)), dim=-1)


def _check_pairs(x: object, op: str, name: str) -> None:
    """A floating-point tensor whose last dimension holds pairs."""
    if not isinstance(x, Tensor):
        raise InputTypeError(f"{op}: {name} must be a torch tensor, got {type(x).__name__}")
    if x.ndim == 0 or x.shape[-1] != 2:
        raise InputError(f"{op}: {name} must have shape (..., 2), got {tuple(x.shape)}")
    if not x.is_floating_point():
        raise InputTypeError(f"{op}: {name} must be a floating-point tensor, got {x.dtype}")


def _duration_like(spans: Tensor, duration: Duration, op: str) -> Tensor:
    """``duration`` as a tensor that broadcasts over ``spans``: a number or a
    0-d tensor as is, a ``(B,)`` tensor reshaped to ``(B, 1, ..., 1)``."""
    if isinstance(duration, bool) or not isinstance(duration, (int, float, Tensor)):
        raise InputTypeError(f"{op}: duration must be a number or a tensor of shape (B,), "
                             f"got {type(duration).__name__}")
    if not isinstance(duration, Tensor):
        value = float(duration)
        if not (value > 0 and value != float("inf")):
            raise InputError(f"{op}: duration must be finite and > 0, got {value}")
        return torch.tensor(value, dtype=spans.dtype, device=spans.device)
    if duration.ndim > 1 or (duration.ndim == 1 and (spans.ndim < 2
                                                     or duration.shape[0] != spans.shape[0])):
        raise InputError(f"{op}: duration must be a number or have shape (B,) = "
                         f"({spans.shape[0] if spans.ndim >= 2 else '?'},) for spans of shape "
                         f"{tuple(spans.shape)}, got shape {tuple(duration.shape)}")
    duration = duration.to(device=spans.device, dtype=spans.dtype)
    # A value check needs the values on the host; skip it while tracing.
    if not torch.compiler.is_compiling() and not bool(
            ((duration > 0) & torch.isfinite(duration)).all()):
        raise InputError(f"{op}: every duration must be finite and > 0")
    return duration.reshape(duration.shape + (1,) * (spans.ndim - duration.ndim))
