# SPDX-License-Identifier: Apache-2.0
"""The ops as ``torch.library`` custom ops, so code calling them compiles under
``torch.compile(fullgraph=True)``. Importing this module imports torch; the
public wrappers import it only when they receive a torch tensor.

Tensors reach the compiled core through DLPack (no copy, no libtorch link);
outputs are allocated here with ``torch.empty`` on the input's device, and CUDA
work is queued on the caller's current stream.
"""

from __future__ import annotations

from typing import Optional

import torch
from torch import Tensor

from fastvqa._ext import _C

_NATIVE = (torch.float32, torch.float64)
_INTEGER = (torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64)
_DTYPES = {"float32": torch.float32, "float64": torch.float64, "int64": torch.int64}


def _float_dtype(op: str, **named: Tensor) -> torch.dtype:
    """The dtype an op computes in and returns, from its float inputs."""
    result = None
    for name, t in named.items():
        if not (t.dtype.is_floating_point or t.dtype in _INTEGER):
            raise TypeError(f"{op}: {name} must hold real numbers, got {t.dtype}")
        dt = t.dtype if t.dtype.is_floating_point else torch.get_default_dtype()
        result = dt if result is None else torch.promote_types(result, dt)
    return result  # type: ignore[return-value]


def _compute_dtype(dtype: torch.dtype) -> torch.dtype:
    return dtype if dtype in _NATIVE else torch.float32


def _stream(t: Tensor) -> int:
    return torch.cuda.current_stream(t.device).cuda_stream if t.is_cuda else 0


def _allocator(device: torch.device):
    def alloc(shape: tuple, dtype: str) -> Tensor:
        return torch.empty(shape, dtype=_DTYPES[dtype], device=device)

    return alloc


def _prep_float(t: Tensor, dtype: torch.dtype) -> Tensor:
    return t.detach().to(dtype)


def _prep_floats(op: str, **named: Tensor) -> tuple[list[Tensor], torch.dtype]:
    """The float inputs in their compute dtype, and the dtype the op returns
    (the torch counterpart of :func:`fastvqa._arrays.numpy_common_float`)."""
    out_dtype = _float_dtype(op, **named)
    work = _compute_dtype(out_dtype)
    return [_prep_float(t, work) for t in named.values()], out_dtype


def _prep_index(t: Optional[Tensor], op: str, name: str) -> Optional[Tensor]:
    if t is None:  # optional index inputs (lengths, offsets) pass through
        return None
    if t.dtype.is_floating_point or t.dtype.is_complex or t.dtype == torch.bool:
        raise TypeError(f"{op}: {name} must hold integers, got {t.dtype}")
    # Row pointers and lengths are read on the host before launch; on CUDA the
    # copy wants one contiguous block.
    t = t.detach().to(torch.int64)
    return t.contiguous() if t.is_cuda else t


def _check_devices(op: str, **named: Optional[Tensor]) -> None:
    devices = {name: t.device for name, t in named.items() if t is not None}
    if len(set(devices.values())) > 1:
        listing = ", ".join(f"{n} on {d}" for n, d in devices.items())
        raise ValueError(f"{op}: all inputs must be on the same device, got {listing}")


# ---------------------------------------------------------------- temporal IoU


@torch.library.custom_op("fastvqa::temporal_iou", mutates_args=())
def _temporal_iou_op(a: Tensor, b: Tensor, mode: str, paired: bool) -> Tensor:
    op = "paired_temporal_iou" if paired else "temporal_iou"
    _check_devices(op, a=a, b=b)
    (a_w, b_w), out_dtype = _prep_floats(op, a=a, b=b)
    out = _C.temporal_iou(a_w, b_w, mode, paired, _stream(a_w), _allocator(a.device))
    return out.to(out_dtype)


@_temporal_iou_op.register_fake
def _(a: Tensor, b: Tensor, mode: str, paired: bool) -> Tensor:
    dtype = _float_dtype("temporal_iou", a=a, b=b)
    shape = (a.shape[0],) if paired else (a.shape[0], b.shape[0])
    return a.new_empty(shape, dtype=dtype)


# The public entry points detach their float inputs: these ops have no
# gradient formula, and a result that claimed to need one would only fail
# later, in backward(). Results therefore never require grad. Index inputs
# (lengths, offsets, spans) are integer tensors, which never require grad, and
# anything else is refused by _prep_index, so they are passed as they are.


def temporal_iou(a: Tensor, b: Tensor, mode: str, paired: bool) -> Tensor:
    return _temporal_iou_op(a.detach(), b.detach(), mode, paired)


# ----------------------------------------------------------- grounding overlap


@torch.library.custom_op("fastvqa::grounding_overlap", mutates_args=())
def _grounding_op(pred: Tensor, gt: Tensor, gt_offsets: Tensor) -> tuple[Tensor, Tensor]:
    op = "grounding_overlap"
    _check_devices(op, pred=pred, gt=gt, gt_offsets=gt_offsets)
    (p_w, g_w), out_dtype = _prep_floats(op, pred=pred, gt=gt)
    offsets = _prep_index(gt_offsets, op, "gt_offsets")
    iou, iop = _C.grounding_overlap(p_w, g_w, offsets, _stream(p_w), _allocator(pred.device))
    return iou.to(out_dtype), iop.to(out_dtype)


@_grounding_op.register_fake
def _(pred: Tensor, gt: Tensor, gt_offsets: Tensor) -> tuple[Tensor, Tensor]:
    dtype = _float_dtype("grounding_overlap", pred=pred, gt=gt)
    n = pred.shape[0]
    return pred.new_empty((n,), dtype=dtype), pred.new_empty((n,), dtype=dtype)


def grounding_overlap(pred: Tensor, gt: Tensor, gt_offsets: Tensor) -> tuple[Tensor, Tensor]:
    # gt_offsets is required: .detach() keeps a None failing here, as it always has.
    return _grounding_op(pred.detach(), gt.detach(), gt_offsets.detach())


# ----------------------------------------------------------------- span argmax


@torch.library.custom_op("fastvqa::span_argmax", mutates_args=())
def _span_argmax_op(
    start: Tensor,
    end: Tensor,
    max_len: Optional[int],
    min_len: int,
    topk: int,
    lengths: Optional[Tensor],
) -> tuple[Tensor, Tensor]:
    op = "span_argmax"
    _check_devices(op, start=start, end=end, lengths=lengths)
    (s_w, e_w), out_dtype = _prep_floats(op, start=start, end=end)
    lens = _prep_index(lengths, op, "lengths")
    spans, scores = _C.span_argmax(
        s_w, e_w, max_len, min_len, topk, lens, _stream(s_w), _allocator(start.device)
    )
    return spans, scores.to(out_dtype)


@_span_argmax_op.register_fake
def _(
    start: Tensor,
    end: Tensor,
    max_len: Optional[int],
    min_len: int,
    topk: int,
    lengths: Optional[Tensor],
) -> tuple[Tensor, Tensor]:
    dtype = _float_dtype("span_argmax", start=start, end=end)
    batch = start.shape[0]
    return (
        start.new_empty((batch, topk, 2), dtype=torch.int64),
        start.new_empty((batch, topk), dtype=dtype),
    )


def span_argmax(
    start: Tensor,
    end: Tensor,
    max_len: Optional[int],
    min_len: int,
    topk: int,
    lengths: Optional[Tensor],
) -> tuple[Tensor, Tensor]:
    return _span_argmax_op(start.detach(), end.detach(), max_len, min_len, topk, lengths)
