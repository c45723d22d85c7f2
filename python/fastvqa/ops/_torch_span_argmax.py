# SPDX-License-Identifier: Apache-2.0
"""``span_argmax`` as a ``torch.library`` custom op (conventions:
:mod:`fastvqa.ops._torch_common`). Not differentiable: inputs are detached."""

from __future__ import annotations

from typing import Optional

import torch
from torch import Tensor

from fastvqa._ext import _C
from fastvqa.ops._torch_common import (_call, _call_cpu, _cast, _check_devices, _fast,
                                       _float_dtype, _prep_floats, _prep_index)

# ----------------------------------------------------------------- span argmax


def _span_argmax_body(call, start, end, max_len, min_len, topk, lengths):
    op = "span_argmax"
    _check_devices(op, start=start, end=end, lengths=lengths)
    (s_w, e_w), out_dtype = _prep_floats(op, start=start, end=end)
    lens = _prep_index(lengths, op, "lengths")
    spans, scores = call(_C.span_argmax, start.device, s_w, e_w, max_len, min_len, topk, lens)
    return spans, _cast(scores, out_dtype)


@torch.library.custom_op("fastvqa::span_argmax", mutates_args=())
def _span_argmax_op(start: Tensor, end: Tensor, max_len: Optional[int], min_len: int, topk: int,
                    lengths: Optional[Tensor]) -> tuple[Tensor, Tensor]:
    return _span_argmax_body(_call, start, end, max_len, min_len, topk, lengths)


@_span_argmax_op.register_fake
def _(start: Tensor, end: Tensor, max_len: Optional[int], min_len: int, topk: int,
      lengths: Optional[Tensor]) -> tuple[Tensor, Tensor]:
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
    if _fast(start, end, lengths):
        return _span_argmax_body(_call_cpu, start, end, max_len, min_len, topk, lengths)
    return _span_argmax_op(start.detach(), end.detach(), max_len, min_len, topk, lengths)
