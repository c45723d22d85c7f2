# SPDX-License-Identifier: Apache-2.0
"""Differentiable span losses for set-prediction heads (Moment-DETR's L1 and
generalised temporal IoU losses).

Written in torch so autograd differentiates them (the compiled
:func:`fastvqa.ops.temporal_iou` family has no gradients). Their forward
values are the compiled ops' ``"giou"`` mode wherever a union is at least
``eps`` long; below that, the ``eps`` rule keeps every value and every
gradient finite (see :func:`generalized_temporal_iou_loss`).
"""

from __future__ import annotations

from typing import Literal

from torch import Tensor

from fastvqa import _checks
from fastvqa.errors import InputError
from fastvqa.nn.spans import _check_pairs

REDUCTIONS = ("none", "mean", "sum")

_GIOU_DOC = """
    Spans are ``(start, end)`` pairs (seconds or fractions of the video; both
    inputs in the same unit). With ``len(x) = max(end - start, 0)`` (a
    reversed span is empty, as in :func:`fastvqa.ops.temporal_iou`),
    ``inter = max(min(a_end, b_end) - max(a_start, b_start), 0)``,
    ``union = len(a) + len(b) - inter`` and the hull
    ``hull = max(max(a_end, b_end) - min(a_start, b_start), 0)``::

        giou = inter / max(union, eps) - (hull - union) / max(hull, eps)

    in ``[-1, 1]``. Wherever ``union >= eps`` this is the textbook generalised
    IoU, the ``"giou"`` mode of :func:`fastvqa.ops.temporal_iou`. The ``eps``
    rule decides the degenerate cases, with no NaN or infinity in the value or
    its gradient: two zero-length spans at the same point (union and hull 0)
    have gIoU 0; two zero-length spans apart from each other (union 0, hull
    ``>= eps``) have gIoU -1, as the compiled op; unions shorter than ``eps``
    are divided by ``eps`` instead, so the value stays continuous. A NaN
    endpoint gives NaN."""


def span_l1_loss(pred: Tensor, target: Tensor, *,
                 reduction: Literal["none", "mean", "sum"] = "none") -> Tensor:
    """L1 distance between paired spans: ``|dc| + |dw|`` per span.

    Args:
        pred: ``(..., 2)`` predicted spans as ``(centre, width)`` (normally
            fractions of the video, see :func:`fastvqa.nn.normalize_spans`).
        target: ``(..., 2)`` target spans, the same shape; ``pred[i]`` is
            compared with ``target[i]``.
        reduction: ``"none"`` (shape ``(...)``, one value per span),
            ``"mean"`` (the mean over spans: Moment-DETR's
            ``l1_loss(...).sum() / num_spans``) or ``"sum"``. ``"mean"`` over no
            spans is 0, as in torchvision's ``generalized_box_iou_loss``.

    Example:
        >>> import torch
        >>> span_l1_loss(torch.tensor([[0.5, 0.2]]), torch.tensor([[0.4, 0.4]]))
        tensor([0.3000])
    """
    op = "span_l1_loss"
    _check_paired(pred, target, op)
    return _reduce((pred - target).abs().sum(-1), reduction, op)


def generalized_temporal_iou_loss(pred: Tensor, target: Tensor, *,
                                  reduction: Literal["none", "mean", "sum"] = "none",
                                  eps: float = 1e-7) -> Tensor:
    """``1 - giou(pred[i], target[i])`` for paired ``(start, end)`` spans, in ``[0, 2]``.

    Args:
        pred, target: ``(..., 2)`` spans, the same shape.
        reduction: ``"none"`` (shape ``(...)``), ``"mean"`` (0 over no spans)
            or ``"sum"``, as torchvision's ``generalized_box_iou_loss``.
        eps: the shortest denominator (``> 0``); see below.

    Example:
        >>> import torch
        >>> pred = torch.tensor([[0.0, 2.0], [0.0, 1.0]])
        >>> generalized_temporal_iou_loss(pred, torch.tensor([[1.0, 3.0], [2.0, 3.0]]))
        tensor([0.6667, 1.3333])
    """
    op = "generalized_temporal_iou_loss"
    _check_paired(pred, target, op)
    eps = _checks.real(eps, op, "eps", positive=True, finite=True)
    return _reduce(1 - _giou(pred, target, eps), reduction, op)


def pairwise_generalized_temporal_iou(a: Tensor, b: Tensor, *, eps: float = 1e-7) -> Tensor:
    """``(N, M)`` gIoU of every span of ``a`` (``(N, 2)``) with every span of
    ``b`` (``(M, 2)``), differentiable (the matcher's cost); ``N`` or ``M`` may be 0.

    Example:
        >>> import torch
        >>> b = torch.tensor([[1.0, 3.0], [0.0, 2.0], [3.0, 4.0]])
        >>> pairwise_generalized_temporal_iou(torch.tensor([[0.0, 2.0]]), b)
        tensor([[ 0.3333,  1.0000, -0.2500]])
    """
    op = "pairwise_generalized_temporal_iou"
    _check_pairs(a, op, "a")
    _check_pairs(b, op, "b")
    if a.ndim != 2 or b.ndim != 2:
        raise InputError(f"{op}: a and b must have shapes (N, 2) and (M, 2), "
                         f"got {tuple(a.shape)} and {tuple(b.shape)}")
    eps = _checks.real(eps, op, "eps", positive=True, finite=True)
    return _giou(a[:, None, :], b[None, :, :], eps)


generalized_temporal_iou_loss.__doc__ += _GIOU_DOC  # type: ignore[operator]
pairwise_generalized_temporal_iou.__doc__ += _GIOU_DOC  # type: ignore[operator]


def _giou(a: Tensor, b: Tensor, eps: float) -> Tensor:
    """gIoU of broadcastable ``(..., 2)`` span tensors (the formula above)."""
    a0, a1 = a.unbind(-1)
    b0, b1 = b.unbind(-1)
    len_a = (a1 - a0).clamp_min(0)
    len_b = (b1 - b0).clamp_min(0)
    inter = (a1.minimum(b1) - a0.maximum(b0)).clamp_min(0)
    union = len_a + len_b - inter
    # Clamping the hull at 0 matters only when both spans are reversed (it
    # can then be negative); for any other pair hull >= union >= 0.
    hull = (a1.maximum(b1) - a0.minimum(b0)).clamp_min(0)
    return inter / union.clamp_min(eps) - (hull - union) / hull.clamp_min(eps)


def _check_paired(pred: Tensor, target: Tensor, op: str) -> None:
    _check_pairs(pred, op, "pred")
    _check_pairs(target, op, "target")
    if pred.shape != target.shape:
        raise InputError(f"{op}: pred and target must have the same shape, "
                         f"got {tuple(pred.shape)} and {tuple(target.shape)}")


def _reduce(loss: Tensor, reduction: str, op: str) -> Tensor:
    _checks.choice(reduction, op, "reduction", REDUCTIONS)
    if reduction == "sum":
        return loss.sum()
    if reduction == "mean":
        # Over no spans: 0, still attached to the graph (torchvision's rule).
        return loss.mean() if loss.numel() > 0 else loss.sum() * 0.0
    return loss
