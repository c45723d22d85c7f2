# SPDX-License-Identifier: Apache-2.0
"""``temporal_iou`` (pairwise and paired) and ``grounding_overlap`` as
``torch.library`` custom ops (conventions: :mod:`fastvqa.ops._torch_common`)."""

from __future__ import annotations

import torch
from torch import Tensor

from fastvqa._ext import _C
from fastvqa.ops._torch_common import (_call, _call_cpu, _cast, _check_devices,
                                       _fast, _float_dtype, _prep_floats, _prep_index,
                                       _stream)

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


# ------------------------------------------------------- temporal IoU, out=
# A separate overload that writes a caller's tensor (as torch's own ``.out``
# variants), so the functional op above stays pure for torch.compile.


def _check_out(op: str, a: Tensor, b: Tensor, paired: bool, out: Tensor) -> torch.dtype:
    """Everything about ``out`` that holds under fake tensors too; returns the
    compute dtype."""
    dtype = _float_dtype(op, a=a, b=b)
    for name, t in (("a", a), ("b", b)):
        if t.dim() != 2 or t.shape[1] != 2:
            raise ValueError(f"{op}: {name} must have shape (N, 2) holding [start, end] in "
                             f"seconds, got shape {tuple(t.shape)}")
    if paired and a.shape[0] != b.shape[0]:
        raise ValueError(f"{op}: a and b must have the same number of spans, got "
                         f"{a.shape[0]} and {b.shape[0]}")
    shape = (a.shape[0],) if paired else (a.shape[0], b.shape[0])
    if out.device != a.device:
        raise ValueError(f"{op}: out must be on the inputs' device {a.device}, got {out.device}")
    if tuple(out.shape) != shape:
        raise ValueError(f"{op}: out must have shape {shape}, got {tuple(out.shape)}")
    if out.dtype != dtype:
        raise TypeError(f"{op}: out must have the result dtype {dtype}, got {out.dtype}")
    if not out.is_contiguous():
        raise ValueError(f"{op}: out must be contiguous")
    return dtype


def _extent(t: Tensor) -> tuple[int, int]:
    """The byte range ``[lo, hi)`` a strided tensor can touch."""
    lo = hi = t.data_ptr()
    for size, stride in zip(t.shape, t.stride()):
        reach = (size - 1) * stride * t.element_size()
        lo, hi = (lo + reach, hi) if reach < 0 else (lo, hi + reach)
    return lo, hi + t.element_size()


def _check_no_overlap(op: str, out: Tensor, **inputs: Tensor) -> None:
    if out.numel() == 0:
        return
    o_lo, o_hi = _extent(out)
    for name, t in inputs.items():
        if t.numel() == 0:
            continue
        lo, hi = _extent(t)
        if lo < o_hi and o_lo < hi:
            raise ValueError(f"{op}: out must not overlap the input {name}")


# The mode argument is not named ``mode``: auto_functionalize (torch.compile of
# a mutating op) takes a keyword of that name itself.
@torch.library.custom_op("fastvqa::temporal_iou.out", mutates_args=("out",))
def _temporal_iou_out_op(a: Tensor, b: Tensor, measure: str, paired: bool, out: Tensor) -> None:
    op = "paired_temporal_iou" if paired else "temporal_iou"
    _check_devices(op, a=a, b=b)
    _check_out(op, a, b, paired, out)
    _check_no_overlap(op, out, a=a, b=b)
    (a_w, b_w), out_dtype = _prep_floats(op, a=a, b=b)
    if a_w.dtype == out_dtype:  # float32/float64: the kernel writes out itself, once
        _C.temporal_iou(a_w, b_w, measure, paired, _stream(a.device), lambda _shape, _dtype: out,
                        True)
    else:  # float16/bfloat16: computed in float32, then cast into out
        out.copy_(_call(_C.temporal_iou, a.device, a_w, b_w, measure, paired))


@_temporal_iou_out_op.register_fake
def _(a: Tensor, b: Tensor, measure: str, paired: bool, out: Tensor) -> None:
    _check_out("paired_temporal_iou" if paired else "temporal_iou", a, b, paired, out)


def temporal_iou_out(a: Tensor, b: Tensor, mode: str, paired: bool, out: Tensor) -> Tensor:
    op = "paired_temporal_iou" if paired else "temporal_iou"
    if not isinstance(out, Tensor):
        raise TypeError(f"{op}: out must be a torch tensor like the inputs, got "
                        f"{type(out).__module__}.{type(out).__qualname__}")
    if out.requires_grad:
        raise ValueError(f"{op}: out must not require grad (results are not differentiable)")
    _temporal_iou_out_op(a.detach(), b.detach(), mode, paired, out)
    return out


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
