# SPDX-License-Identifier: Apache-2.0
"""``span_scores`` (with its compiled backward) and ``top_spans`` as
``torch.library`` custom ops, so code calling them compiles under
``torch.compile(fullgraph=True)``. Importing this module imports torch; the
public wrappers in :mod:`fastvqa.ops.span_scores` import it only when they
receive a torch tensor. Conventions (DLPack, current stream, half computed in
float32) are those of :mod:`fastvqa.ops._torch_common`.
"""

from __future__ import annotations

from typing import Optional

import torch
from torch import Tensor

from fastvqa._ext import _C
from fastvqa.ops._torch_common import (_allocator, _call, _call_cpu, _cast, _check_devices,
                                       _compute_dtype, _fast, _fast_autograd, _float_dtype,
                                       _prep_float, _prep_floats, _prep_index, _stream)

# ----------------------------------------------------------------- span_scores


def _span_scores_body(call, x, reduce, min_len, max_len, lengths):
    op = "span_scores"
    _check_devices(op, x=x, lengths=lengths)
    (x_w,), out_dtype = _prep_floats(op, x=x)
    lens = _prep_index(lengths, op, "lengths")
    out = call(_C.span_scores, x.device, x_w, reduce, min_len, max_len, lens)
    return _cast(out, out_dtype)


@torch.library.custom_op("fastvqa::span_scores", mutates_args=())
def _span_scores_op(
    x: Tensor, reduce: str, min_len: int, max_len: Optional[int], lengths: Optional[Tensor]
) -> Tensor:
    return _span_scores_body(_call, x, reduce, min_len, max_len, lengths)


@_span_scores_op.register_fake
def _(x: Tensor, reduce: str, min_len: int, max_len: Optional[int], lengths: Optional[Tensor]):
    batch, steps = x.shape
    width = steps if max_len is None else min(max_len, steps)  # as the binding clamps
    return x.new_empty((batch, steps, width), dtype=_float_dtype("span_scores", x=x))


def _span_scores_backward_body(call, grad, reduce, min_len, lengths):
    op = "span_scores_backward"
    _check_devices(op, grad=grad, lengths=lengths)
    g_w = _prep_float(grad, _compute_dtype(grad.dtype))
    lens = _prep_index(lengths, op, "lengths")
    out = call(_C.span_scores_backward, grad.device, g_w, reduce, min_len, lens)
    return out.to(grad.dtype)


@torch.library.custom_op("fastvqa::span_scores_backward", mutates_args=())
def _span_scores_backward_op(
    grad: Tensor, reduce: str, min_len: int, lengths: Optional[Tensor]
) -> Tensor:
    return _span_scores_backward_body(_call, grad, reduce, min_len, lengths)


@_span_scores_backward_op.register_fake
def _(grad: Tensor, reduce: str, min_len: int, lengths: Optional[Tensor]) -> Tensor:
    return grad.new_empty(grad.shape[:2])


def _setup_context(ctx, inputs, output) -> None:
    x, reduce, min_len, _max_len, lengths = inputs
    ctx.reduce, ctx.min_len = reduce, min_len
    ctx.x_dtype = x.dtype
    ctx.has_lengths = lengths is not None
    if lengths is not None:
        ctx.save_for_backward(lengths)


def _backward(ctx, grad: Tensor):
    grad_x = None
    if ctx.needs_input_grad[0]:
        lengths = ctx.saved_tensors[0] if ctx.has_lengths else None
        grad_x = _span_scores_backward_op(grad, ctx.reduce, ctx.min_len, lengths)
        grad_x = grad_x.to(ctx.x_dtype)
    return grad_x, None, None, None, None


_span_scores_op.register_autograd(_backward, setup_context=_setup_context)


class _EagerSpanScores(torch.autograd.Function):
    """span_scores with its gradient in plain eager mode, both kernels on the
    NumPy path: the same kernels and checks as the custom op, without two
    dispatcher round trips and with NumPy's allocations, which are faster to
    fill (BENCHMARKS.md, "span_scores forward + backward": 1.6x the custom
    op's time before). A backward that must itself be differentiable
    (``create_graph=True``), or that meets a mode, goes through the op."""

    @staticmethod
    def forward(ctx, x, reduce, min_len, max_len, lengths):
        ctx.reduce, ctx.min_len, ctx.x_dtype = reduce, min_len, x.dtype
        ctx.lengths = lengths
        return _span_scores_body(_call_cpu, x.detach(), reduce, min_len, max_len, lengths)

    @staticmethod
    def backward(ctx, grad):
        if _fast(grad, ctx.lengths, grad=True):
            grad_x = _span_scores_backward_body(_call_cpu, grad, ctx.reduce, ctx.min_len,
                                                ctx.lengths)
        else:
            grad_x = _span_scores_backward_op(grad, ctx.reduce, ctx.min_len, ctx.lengths)
        return grad_x.to(ctx.x_dtype), None, None, None, None


def span_scores(
    x: Tensor, reduce: str, min_len: int, max_len: Optional[int], lengths: Optional[Tensor]
) -> Tensor:
    if _fast(x, lengths, grad=True):
        return _span_scores_body(_call_cpu, x, reduce, min_len, max_len, lengths)
    if x.requires_grad and _fast_autograd(x, lengths):
        return _EagerSpanScores.apply(x, reduce, min_len, max_len, lengths)
    return _span_scores_op(x, reduce, min_len, max_len, lengths)


# ------------------------------------------------------------------- top_spans


def _top_spans_body(call, x, k, reduce, min_len, max_len, lengths, nms_iou):
    op = "top_spans"
    _check_devices(op, x=x, lengths=lengths)
    (x_w,), out_dtype = _prep_floats(op, x=x)
    lens = _prep_index(lengths, op, "lengths")
    spans, scores = call(_C.top_spans, x.device, x_w, k, reduce, min_len, max_len, lens, nms_iou)
    return spans, _cast(scores, out_dtype)


@torch.library.custom_op("fastvqa::top_spans", mutates_args=())
def _top_spans_op(
    x: Tensor,
    k: int,
    reduce: str,
    min_len: int,
    max_len: Optional[int],
    lengths: Optional[Tensor],
    nms_iou: Optional[float],
) -> tuple[Tensor, Tensor]:
    return _top_spans_body(_call, x, k, reduce, min_len, max_len, lengths, nms_iou)


@_top_spans_op.register_fake
def _(
    x: Tensor,
    k: int,
    reduce: str,
    min_len: int,
    max_len: Optional[int],
    lengths: Optional[Tensor],
    nms_iou: Optional[float],
) -> tuple[Tensor, Tensor]:
    batch = x.shape[0]
    return (
        x.new_empty((batch, k, 2), dtype=torch.int64),
        x.new_empty((batch, k), dtype=_float_dtype("top_spans", x=x)),
    )


# Not differentiable (a selection): inputs are detached, as in _torch_span_argmax.py, so a
# result never claims a gradient it cannot give.
def top_spans(
    x: Tensor,
    k: int,
    reduce: str,
    min_len: int,
    max_len: Optional[int],
    lengths: Optional[Tensor],
    nms_iou: Optional[float],
) -> tuple[Tensor, Tensor]:
    if _fast(x, lengths):
        return _top_spans_body(_call_cpu, x, k, reduce, min_len, max_len, lengths, nms_iou)
    return _top_spans_op(x.detach(), k, reduce, min_len, max_len, lengths, nms_iou)
