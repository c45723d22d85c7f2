# SPDX-License-Identifier: Apache-2.0
"""``nms_1d`` as a ``torch.library`` custom op, so code calling it compiles
under ``torch.compile(fullgraph=True)``. Its output size depends on the data,
so the fake implementation returns an unbacked size (``new_dynamic_size``).
Conventions: :mod:`fastvqa.ops._torch_common`.
"""

from __future__ import annotations

from typing import Optional

import torch
from torch import Tensor

from fastvqa._ext import _C
from fastvqa.ops._torch_common import (_call, _call_cpu, _cast, _check_devices, _fast,
                                       _float_dtype, _prep_floats, _prep_index)

# ------------------------------------------------------------------------ NMS


def _nms_1d_body(call, spans, scores, offsets, iou_threshold, method, sigma, score_threshold,
                 ties):
    op = "nms_1d"
    _check_devices(op, spans=spans, scores=scores, offsets=offsets)
    (sp, sc), out_dtype = _prep_floats(op, spans=spans, scores=scores)
    off = _prep_index(offsets, op, "offsets")
    keep, keep_offsets, kept = call(_C.nms_1d, spans.device, sp, sc, off, iou_threshold, method,
                                    sigma, score_threshold, ties)
    return keep, keep_offsets, _cast(kept, out_dtype)


@torch.library.custom_op("fastvqa::nms_1d", mutates_args=())
def _nms_1d_op(
    spans: Tensor,
    scores: Tensor,
    offsets: Optional[Tensor],
    iou_threshold: float,
    method: str,
    sigma: float,
    score_threshold: float,
    ties: str,
) -> tuple[Tensor, Tensor, Tensor]:
    return _nms_1d_body(_call, spans, scores, offsets, iou_threshold, method, sigma,
                        score_threshold, ties)


@_nms_1d_op.register_fake
def _(spans, scores, offsets, iou_threshold, method, sigma, score_threshold, ties):
    dtype = _float_dtype("nms_1d", spans=spans, scores=scores)
    kept = torch.library.get_ctx().new_dynamic_size()
    groups = 1 if offsets is None else offsets.shape[0] - 1
    return (
        spans.new_empty((kept,), dtype=torch.int64),
        spans.new_empty((groups + 1,), dtype=torch.int64),
        spans.new_empty((kept,), dtype=dtype),
    )


def nms_1d(spans, scores, offsets, iou_threshold, method, sigma, score_threshold, ties):
    if _fast(spans, scores, offsets):
        return _nms_1d_body(_call_cpu, spans, scores, offsets, iou_threshold, method, sigma,
                            score_threshold, ties)
    return _nms_1d_op(
        spans.detach(), scores.detach(), offsets, iou_threshold, method, sigma, score_threshold,
        ties,
    )
