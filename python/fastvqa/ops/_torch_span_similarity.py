# SPDX-License-Identifier: Apache-2.0
"""``span_similarity`` as ``torch.library`` custom ops, with its gradient.

The forward op and its backward op both call compiled kernels (CPU and
CUDA); ``register_autograd`` ties them together, so autograd never traces
through Python tensor ops and ``torch.compile(fullgraph=True)`` sees two
opaque ops with fake implementations. Importing this module imports torch.
"""

from __future__ import annotations

from typing import Optional

import torch
from torch import Tensor

from fastvqa._ext import _C
from fastvqa.ops._torch_common import (_allocator, _call, _call_cpu, _cast, _check_devices,
                                       _compute_dtype, _fast, _float_dtype, _prep_float,
                                       _prep_index, _prep_floats, _stream)


def _name(spans: Optional[Tensor]) -> str:
    return "span_similarity_all" if spans is None else "span_similarity"


def _prepare(frames, query, spans, lengths):
    """Inputs as the kernels want them: one float dtype, int64 indices."""
    op = _name(spans)
    _check_devices(op, frames=frames, query=query, spans=spans, lengths=lengths)
    (f, q), out_dtype = _prep_floats(op, frames=frames, query=query)
    s = _prep_index(spans, op, "spans")
    lens = _prep_index(lengths, op, "lengths")
    return f, q, s, lens, out_dtype, _compute_dtype(out_dtype)


def _out_shape(frames: Tensor, spans: Optional[Tensor], max_len: Optional[int]) -> tuple:
    if spans is not None:
        return (frames.shape[0], spans.shape[1])
    steps = frames.shape[1]
    return (frames.shape[0], steps, steps if max_len is None else min(max_len, steps))


def _forward_body(call, frames, query, spans, pool, min_len, max_len, lengths, eps):
    f, q, s, lens, out_dtype, _ = _prepare(frames, query, spans, lengths)
    out = call(_C.span_similarity, frames.device, f, q, s, pool, min_len, max_len, lens, eps)
    return _cast(out, out_dtype)


@torch.library.custom_op("fastvqa::span_similarity", mutates_args=())
def _forward_op(
    frames: Tensor,
    query: Tensor,
    spans: Optional[Tensor],
    pool: str,
    min_len: int,
    max_len: Optional[int],
    lengths: Optional[Tensor],
    eps: float,
) -> Tensor:
    return _forward_body(_call, frames, query, spans, pool, min_len, max_len, lengths, eps)


@_forward_op.register_fake
def _(frames, query, spans, pool, min_len, max_len, lengths, eps):
    dtype = _float_dtype(_name(spans), frames=frames, query=query)
    return frames.new_empty(_out_shape(frames, spans, max_len), dtype=dtype)


def _grad_dtype(t: Tensor, work: torch.dtype) -> torch.dtype:
    return t.dtype if t.dtype.is_floating_point else work


@torch.library.custom_op("fastvqa::span_similarity_backward", mutates_args=())
def _backward_op(
    grad: Tensor,
    frames: Tensor,
    query: Tensor,
    spans: Optional[Tensor],
    pool: str,
    min_len: int,
    max_len: Optional[int],
    lengths: Optional[Tensor],
    eps: float,
) -> tuple[Tensor, Tensor]:
    f, q, s, lens, _, work = _prepare(frames, query, spans, lengths)
    _check_devices(_name(spans), frames=frames, grad=grad)
    g = _prep_float(grad, work)
    gf, gq = _C.span_similarity_backward(g, f, q, s, pool, min_len, max_len, lens, eps,
                                         _stream(frames.device), _allocator(frames.device))
    return gf.to(_grad_dtype(frames, work)), gq.to(_grad_dtype(query, work))


@_backward_op.register_fake
def _(grad, frames, query, spans, pool, min_len, max_len, lengths, eps):
    work = _compute_dtype(_float_dtype(_name(spans), frames=frames, query=query))
    return (frames.new_empty(frames.shape, dtype=_grad_dtype(frames, work)),
            query.new_empty(query.shape, dtype=_grad_dtype(query, work)))


def _setup_context(ctx, inputs, output):
    frames, query, spans, pool, min_len, max_len, lengths, eps = inputs
    ctx.save_for_backward(frames, query, spans, lengths)
    ctx.args = (pool, min_len, max_len, eps)


def _backward(ctx, grad):
    frames, query, spans, lengths = ctx.saved_tensors
    pool, min_len, max_len, eps = ctx.args
    gf, gq = _backward_op(grad, frames, query, spans, pool, min_len, max_len, lengths, eps)
    return gf, gq, None, None, None, None, None, None


torch.library.register_autograd(
    "fastvqa::span_similarity", _backward, setup_context=_setup_context
)


def span_similarity(
    frames: Tensor,
    query: Tensor,
    spans: Optional[Tensor],
    pool: str,
    min_len: int,
    max_len: Optional[int],
    lengths: Optional[Tensor],
    eps: float,
) -> Tensor:
    # frames and query keep their gradient; the integer index arguments have none.
    if _fast(frames, query, spans, lengths, grad=True):
        return _forward_body(_call_cpu, frames, query, spans, pool, min_len, max_len, lengths,
                             eps)
    return _forward_op(frames, query, spans, pool, min_len, max_len, lengths, eps)
