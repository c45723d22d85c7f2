# SPDX-License-Identifier: Apache-2.0
"""``temporal_iou`` (pairwise and paired) and ``grounding_overlap`` as
``torch.library`` custom ops (conventions: :mod:`fastvqa.ops._torch_common`)."""

from __future__ import annotations

import torch
from torch import Tensor

from fastvqa._ext import _C
from fastvqa.ops._torch_common import (_call, _call_cpu, _cast, _check_devices, _fast,
                                       _float_dtype, _prep_floats, _prep_index)

# ---------------------------------------------------------------- temporal IoU


def _temporal_iou_body(call, a, b, mode, paired):
    op = "paired_temporal_iou" if paired else "temporal_iou"
    _check_devices(op, a=a, b=b)
    (a_w, b_w), out_dtype = _prep_floats(op, a=a, b=b)
    return _cast(call(_C.temporal_iou, a.device, a_w, b_w, mode, paired), out_dtype)


@torch.library.custom_op("fastvqa::temporal_iou", mutates_args=())
def _temporal_iou_op(a: Tensor, b: Tensor, mode: str, paired: bool) -> Tensor:
    return _temporal_iou_body(_call, a, b, mode, paired)


@_temporal_iou_op.register_fake
def _(a: Tensor, b: Tensor, mode: str, paired: bool) -> Tensor:
    dtype = _float_dtype("temporal_iou", a=a, b=b)
    shape = (a.shape[0],) if paired else (a.shape[0], b.shape[0])
    return a.new_empty(shape, dtype=dtype)


# No gradient formula: the entry points detach (see _torch_common).


def temporal_iou(a: Tensor, b: Tensor, mode: str, paired: bool) -> Tensor:
    if _fast(a, b):
        return _temporal_iou_body(_call_cpu, a, b, mode, paired)
    return _temporal_iou_op(a.detach(), b.detach(), mode, paired)


# ----------------------------------------------------------- grounding overlap


def _grounding_body(call, pred, gt, gt_offsets):
    op = "grounding_overlap"
    _check_devices(op, pred=pred, gt=gt, gt_offsets=gt_offsets)
    (p_w, g_w), out_dtype = _prep_floats(op, pred=pred, gt=gt)
    offsets = _prep_index(gt_offsets, op, "gt_offsets")
    iou, iop = call(_C.grounding_overlap, pred.device, p_w, g_w, offsets)
    return _cast(iou, out_dtype), _cast(iop, out_dtype)


@torch.library.custom_op("fastvqa::grounding_overlap", mutates_args=())
def _grounding_op(pred: Tensor, gt: Tensor, gt_offsets: Tensor) -> tuple[Tensor, Tensor]:
    return _grounding_body(_call, pred, gt, gt_offsets)


@_grounding_op.register_fake
def _(pred: Tensor, gt: Tensor, gt_offsets: Tensor) -> tuple[Tensor, Tensor]:
    dtype = _float_dtype("grounding_overlap", pred=pred, gt=gt)
    n = pred.shape[0]
    return pred.new_empty((n,), dtype=dtype), pred.new_empty((n,), dtype=dtype)


def grounding_overlap(pred: Tensor, gt: Tensor, gt_offsets: Tensor) -> tuple[Tensor, Tensor]:
    # gt_offsets is required: .detach() keeps a None failing here, as it always has.
    if gt_offsets is not None and _fast(pred, gt, gt_offsets):
        return _grounding_body(_call_cpu, pred, gt, gt_offsets)
    return _grounding_op(pred.detach(), gt.detach(), gt_offsets.detach())
