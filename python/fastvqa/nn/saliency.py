# SPDX-License-Identifier: Apache-2.0
"""Moment-DETR's saliency loss: a hinge ranking loss on per-step scores,
over every ordered pair of steps of a video (no sampling)."""

from __future__ import annotations

from typing import Optional

import torch
from torch import Tensor

from fastvqa import _checks
from fastvqa.errors import InputError
from fastvqa.nn.io_head import IOHead
from fastvqa.nn.joint_encoder import describe
from fastvqa.nn.masking import safe_mean


def saliency_loss(scores: Tensor, saliency: Tensor, saliency_mask: Tensor, mask: Tensor,
                  margin: float = 0.2, *, gold: Optional[Tensor] = None,
                  videos: Optional[float] = None) -> Tensor:
    """Hinge ranking loss: a more salient step should score ``margin`` above a less salient one.

    For video ``b``, every ordered pair of usable steps ``(i, j)`` with
    target ``y[b, i] > y[b, j]`` is a pair, and costs
    ``max(0, margin - scores[b, i] + scores[b, j])``. The loss is the mean
    over each video's pairs, then the mean over the videos that have at
    least one pair (each video counts once, as in Moment-DETR, where every
    video contributes the same number of sampled pairs). It is 0, never NaN,
    when no video has a pair.

    Why every pair: Moment-DETR samples a few high/low pairs per video in its
    data loader (one pair inside the moment, one inside against outside).
    All ordered pairs hold both kinds, cost nothing to choose, make the loss a
    deterministic function of the batch (so runs repeat exactly and
    ``gradcheck`` applies), and are cheap at moment-retrieval lengths: the
    work and memory are ``O(B T^2)`` (three ``[B, T, T]`` tensors; 32
    videos of 150 steps are 0.7 M pairs).

    Targets ``y``, per video:

    - where ``saliency_mask[b]`` has a True step (a benchmark with saliency
      labels, e.g. QVHighlights' 0-4 scores): ``y = saliency[b]``, and only
      steps that are labelled *and* valid (``mask``) are usable;
    - otherwise, when ``gold`` is given: ``y = 1`` on the steps inside a gold
      span and ``0`` outside, over all valid steps (the in-versus-out pair of
      Moment-DETR, for benchmarks without saliency labels);
    - otherwise the video has no pair.

    The video-level contrastive term of later Moment-DETR code (the query
    paired with another video) is not included: it needs a second forward
    pass over mismatched pairs, which is the training loop's choice.

    Args:
        scores: ``[B, T]`` predicted saliency (any real values; padded
            steps are ignored whatever they hold).
        saliency: ``[B, T]`` target saliency (any real values; NaN never
            forms a pair).
        saliency_mask: ``[B, T]`` bool, True where ``saliency`` is a label.
        mask: ``[B, T]`` bool, True on real steps.
        margin: the hinge margin (Moment-DETR: 0.2), ``>= 0``.
        gold: optional ``[B, G, 2]`` int64 inclusive step spans,
            ``(-1, -1)`` padding.
        videos: what the sum of the per-video means is divided by, instead
            of this batch's number of videos with a pair
            (:func:`saliency_videos`): data-parallel training passes the
            count over every rank's batch divided by the number of ranks, so
            that the averaged gradients are one process's.

    Returns:
        A 0-d tensor in ``scores``' dtype.

    Example:
        >>> import torch
        >>> scores = torch.tensor([[0.5, 0.0, 0.4]])
        >>> on = torch.ones(1, 3, dtype=torch.bool)
        >>> # pairs (0 > 1): 0.2 - 0.5 + 0.0 -> 0; (0 > 2): 0.2 - 0.5 + 0.4 = 0.1;
        >>> # (2 > 1): 0.2 - 0.4 + 0.0 -> 0. Mean over 3 pairs:
        >>> round(saliency_loss(scores, torch.tensor([[2.0, 0.0, 1.0]]), on, on).item(), 6)
        0.033333
        >>> # No labels: step 2 (inside the gold span [2, 2]) against steps 0 and 1:
        >>> # 0.2 - 0.4 + 0.5 = 0.3 and 0.2 - 0.4 + 0.0 -> 0, mean 0.15.
        >>> off = torch.zeros(1, 3, dtype=torch.bool)
        >>> gold = torch.tensor([[[2, 2]]])
        >>> round(saliency_loss(scores, torch.zeros(1, 3), off, on, gold=gold).item(), 6)
        0.15
    """
    op = "saliency_loss"
    margin = _checks.real(margin, op, "margin", minimum=0.0, finite=True)
    s, higher, _ = _pairs(scores, saliency, saliency_mask, mask, gold, op)
    hinge = (margin - s[:, :, None] + s[:, None, :]).clamp_min(0)
    hinge = torch.where(higher, hinge, torch.zeros_like(hinge))
    pairs = higher.sum((1, 2))
    per_video = safe_mean(hinge.sum((1, 2)), pairs)
    if videos is not None:
        return per_video.sum() / max(float(videos), 1.0)
    return safe_mean(per_video.sum(), (pairs > 0).sum())


def saliency_videos(saliency: Tensor, saliency_mask: Tensor, mask: Tensor, *,
                    gold: Optional[Tensor] = None) -> int:
    """How many videos of a batch have a pair for :func:`saliency_loss` (its
    default divisor), from the targets alone."""
    zeros = torch.zeros(mask.shape, dtype=torch.float32, device=mask.device)
    _, higher, _ = _pairs(zeros, saliency, saliency_mask, mask, gold, "saliency_videos")
    return int(higher.any(-1).any(-1).sum())


def _pairs(scores: Tensor, saliency: Tensor, saliency_mask: Tensor, mask: Tensor,
           gold: Optional[Tensor], op: str) -> tuple:
    """``(scores with unusable steps 0, higher [B, T, T], usable [B, T])``:
    the checked inputs and which ordered step pairs rank."""
    if not isinstance(scores, Tensor) or scores.ndim != 2 or not scores.is_floating_point():
        raise InputError(f"{op}: scores must be a float tensor of shape (B, T), got "
                         f"{describe(scores)}")
    shape = tuple(scores.shape)
    for name, value, boolean in (("saliency", saliency, False),
                                 ("saliency_mask", saliency_mask, True), ("mask", mask, True)):
        if not isinstance(value, Tensor) or tuple(value.shape) != shape:
            raise InputError(f"{op}: {name} must be a tensor of shape {shape} like scores, "
                             f"got {describe(value)}")
        if boolean and value.dtype != torch.bool:
            raise InputError(f"{op}: {name} must be a bool tensor, got {value.dtype}")
    B, T = shape
    device = scores.device
    mask, saliency_mask = mask.to(device), saliency_mask.to(device)
    labelled = saliency_mask & mask
    has_labels = labelled.any(-1, keepdim=True)
    target = saliency.to(device, scores.dtype)
    usable = labelled
    if gold is not None:
        if not isinstance(gold, Tensor) or gold.ndim != 3 or gold.shape[0] != B \
                or gold.shape[-1] != 2:
            raise InputError(f"{op}: gold must be a tensor of shape ({B}, G, 2), got "
                             f"{describe(gold)}")
        inside = IOHead.tags_from_spans(gold.to(device), T).to(scores.dtype)
        target = torch.where(has_labels, target, inside)
        usable = torch.where(has_labels, labelled, mask)
    # Unusable steps get score 0 so that no padding value (the models fill
    # padding with the dtype's lowest number) can overflow a difference.
    s = torch.where(usable, scores, torch.zeros_like(scores))
    higher = ((target[:, :, None] > target[:, None, :])
              & usable[:, :, None] & usable[:, None, :])
    return s, higher, usable
