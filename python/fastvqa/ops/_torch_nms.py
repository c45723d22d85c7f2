# SPDX-License-Identifier: Apache-2.0
"""``torch.library`` registrations of nms_1d and the I/O tag ops, so code
calling them compiles under ``torch.compile(fullgraph=True)``. Their output
sizes depend on the data, so the fake implementations return unbacked sizes
(``new_dynamic_size``). Imported only when a wrapper receives a torch tensor;
shares the conversions of :mod:`fastvqa.ops._torch`.
"""

from __future__ import annotations

from typing import Optional

import torch
from torch import Tensor

from fastvqa._ext import _C
from fastvqa.ops._torch import (
    _allocator,
    _check_devices,
    _float_dtype,
    _prep_floats,
    _prep_index,
    _stream,
)

# ------------------------------------------------------------------------ NMS


@torch.library.custom_op("fastvqa::nms_1d", mutates_args=())
def _nms_1d_op(
    spans: Tensor,
    scores: Tensor,
    offsets: Optional[Tensor],
    iou_threshold: float,
    method: str,
    sigma: float,
    score_threshold: float,
) -> tuple[Tensor, Tensor, Tensor]:
    op = "nms_1d"
    _check_devices(op, spans=spans, scores=scores, offsets=offsets)
    (sp, sc), out_dtype = _prep_floats(op, spans=spans, scores=scores)
    off = _prep_index(offsets, op, "offsets")
    keep, keep_offsets, kept = _C.nms_1d(
        sp, sc, off, iou_threshold, method, sigma, score_threshold, _stream(sp),
        _allocator(spans.device),
    )
    return keep, keep_offsets, kept.to(out_dtype)


@_nms_1d_op.register_fake
def _(spans, scores, offsets, iou_threshold, method, sigma, score_threshold):
    dtype = _float_dtype("nms_1d", spans=spans, scores=scores)
    kept = torch.library.get_ctx().new_dynamic_size()
    groups = 1 if offsets is None else offsets.shape[0] - 1
    return (
        spans.new_empty((kept,), dtype=torch.int64),
        spans.new_empty((groups + 1,), dtype=torch.int64),
        spans.new_empty((kept,), dtype=dtype),
    )


def nms_1d(spans, scores, offsets, iou_threshold, method, sigma, score_threshold):
    return _nms_1d_op(
        spans.detach(), scores.detach(), offsets, iou_threshold, method, sigma, score_threshold,
    )


# -------------------------------------------------------------------- IO tags


@torch.library.custom_op("fastvqa::io_to_spans", mutates_args=())
def _io_to_spans_op(
    probs: Tensor, threshold: float, min_len: int, lengths: Optional[Tensor]
) -> tuple[Tensor, Tensor, Tensor]:
    op = "io_to_spans"
    _check_devices(op, probs=probs, lengths=lengths)
    (p,), out_dtype = _prep_floats(op, probs=probs)
    lens = _prep_index(lengths, op, "lengths")
    spans, scores, row_offsets = _C.io_to_spans(
        p, threshold, min_len, lens, _stream(p), _allocator(probs.device)
    )
    return spans, scores.to(out_dtype), row_offsets


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
    return _io_to_spans_op(probs.detach(), threshold, min_len, lengths)


@torch.library.custom_op("fastvqa::io_to_start_end", mutates_args=())
def _io_to_start_end_op(probs: Tensor, lengths: Optional[Tensor]) -> tuple[Tensor, Tensor]:
    op = "io_to_start_end"
    _check_devices(op, probs=probs, lengths=lengths)
    (p,), out_dtype = _prep_floats(op, probs=probs)
    lens = _prep_index(lengths, op, "lengths")
    start, end = _C.io_to_start_end(p, lens, _stream(p), _allocator(probs.device))
    return start.to(out_dtype), end.to(out_dtype)


@_io_to_start_end_op.register_fake
def _(probs, lengths):
    dtype = _float_dtype("io_to_start_end", probs=probs)
    return probs.new_empty(probs.shape, dtype=dtype), probs.new_empty(probs.shape, dtype=dtype)


def io_to_start_end(probs, lengths):
    return _io_to_start_end_op(probs.detach(), lengths)
