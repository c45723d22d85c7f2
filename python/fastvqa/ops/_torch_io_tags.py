# SPDX-License-Identifier: Apache-2.0
"""``io_to_spans`` and ``io_to_start_end`` as ``torch.library`` custom ops, so
code calling them compiles under ``torch.compile(fullgraph=True)``. The number
of spans depends on the data, so that fake implementation returns an unbacked
size (``new_dynamic_size``). Conventions: :mod:`fastvqa.ops._torch_common`.
"""

from __future__ import annotations

from typing import Optional

import torch
from torch import Tensor

from fastvqa._ext import _C
from fastvqa.ops._torch_common import (_call, _call_cpu, _cast, _check_devices, _fast,
                                       _float_dtype, _prep_floats, _prep_index)

# -------------------------------------------------------------------- IO tags


def _io_to_spans_body(call, probs, threshold, min_len, lengths):
    op = "io_to_spans"
    _check_devices(op, probs=probs, lengths=lengths)
    (p,), out_dtype = _prep_floats(op, probs=probs)
    lens = _prep_index(lengths, op, "lengths")
    spans, scores, row_offsets = call(_C.io_to_spans, probs.device, p, threshold, min_len, lens)
    return spans, _cast(scores, out_dtype), row_offsets


@torch.library.custom_op("fastvqa::io_to_spans", mutates_args=())
def _io_to_spans_op(
    probs: Tensor, threshold: float, min_len: int, lengths: Optional[Tensor]
) -> tuple[Tensor, Tensor, Tensor]:
    return _io_to_spans_body(_call, probs, threshold, min_len, lengths)


@_io_to_spans_op.register_fake
def _(probs, threshold, min_len, lengths):
    dtype = _float_dtype("io_to_spans", probs=probs)
    count = torch.library.get_ctx().new_dynamic_size()
    return (
        probs.new_empty((count, 2), dtype=torch.int64),
        probs.new_empty((count,), dtype=dtype),
        probs.new_empty((probs.shape[0] + 1,), dtype=torch.int64),
    )


def io_to_spans(probs, threshold, min_len, lengths):
    if _fast(probs, lengths):
        return _io_to_spans_body(_call_cpu, probs, threshold, min_len, lengths)
    return _io_to_spans_op(probs.detach(), threshold, min_len, lengths)


def _io_to_start_end_body(call, probs, lengths):
    op = "io_to_start_end"
    _check_devices(op, probs=probs, lengths=lengths)
    (p,), out_dtype = _prep_floats(op, probs=probs)
    lens = _prep_index(lengths, op, "lengths")
    start, end = call(_C.io_to_start_end, probs.device, p, lens)
    return _cast(start, out_dtype), _cast(end, out_dtype)


@torch.library.custom_op("fastvqa::io_to_start_end", mutates_args=())
def _io_to_start_end_op(probs: Tensor, lengths: Optional[Tensor]) -> tuple[Tensor, Tensor]:
    return _io_to_start_end_body(_call, probs, lengths)


@_io_to_start_end_op.register_fake
def _(probs, lengths):
    dtype = _float_dtype("io_to_start_end", probs=probs)
    return probs.new_empty(probs.shape, dtype=dtype), probs.new_empty(probs.shape, dtype=dtype)


def io_to_start_end(probs, lengths):
    if _fast(probs, lengths):
        return _io_to_start_end_body(_call_cpu, probs, lengths)
    return _io_to_start_end_op(probs.detach(), lengths)
