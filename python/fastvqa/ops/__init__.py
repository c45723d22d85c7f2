# SPDX-License-Identifier: Apache-2.0
"""Compiled kernels. Every op takes NumPy arrays or torch tensors (CPU or CUDA)
and returns the same kind of array on the same device."""

from __future__ import annotations

from fastvqa.ops.io_tags import io_to_spans, io_to_start_end
from fastvqa.ops.nms_1d import nms_1d
from fastvqa.ops.span_argmax import span_argmax
from fastvqa.ops.span_similarity import span_similarity, span_similarity_all
from fastvqa.ops.span_scores import span_scores, top_spans
from fastvqa.ops.temporal_iou import grounding_overlap, paired_temporal_iou, temporal_iou

__all__ = [
    "grounding_overlap",
    "io_to_spans",
    "io_to_start_end",
    "nms_1d",
    "paired_temporal_iou",
    "span_argmax",
    "span_scores",
    "span_similarity",
    "span_similarity_all",
    "temporal_iou",
    "top_spans",
]
