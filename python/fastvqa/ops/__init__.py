# SPDX-License-Identifier: Apache-2.0
"""Compiled kernels. Every op takes NumPy arrays or torch tensors (CPU or CUDA)
and returns the same kind of array on the same device."""

from __future__ import annotations

from fastvqa.ops.span_argmax import span_argmax
from fastvqa.ops.span_scores import span_scores, top_spans
from fastvqa.ops.temporal_iou import grounding_overlap, paired_temporal_iou, temporal_iou

__all__ = [
    "grounding_overlap",
    "paired_temporal_iou",
    "span_argmax",
    "span_scores",
    "temporal_iou",
    "top_spans",
]
