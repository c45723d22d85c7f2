# SPDX-License-Identifier: Apache-2.0
"""Compiled kernels. Every op takes NumPy arrays or torch tensors (CPU or CUDA)
and returns the same kind of array on the same device. An op that returns
more than one array returns a NamedTuple with fixed fields (:class:`NmsResult`,
:class:`RaggedSpans`, :class:`ScoredSpans`, :class:`StartEnd`,
:class:`Overlap`), whatever its options; ragged results put their
``offsets`` second, after the values they index, as
:class:`fastvqa.ragged.Ragged` does."""

from __future__ import annotations

from fastvqa.ops.io_tags import RaggedSpans, StartEnd, io_to_spans, io_to_start_end
from fastvqa.ops.nms_1d import NmsResult, nms_1d
from fastvqa.ops.span_argmax import ScoredSpans, span_argmax
from fastvqa.ops.span_similarity import span_similarity, span_similarity_all
from fastvqa.ops.span_scores import span_scores, top_spans
from fastvqa.ops.temporal_iou import Overlap, grounding_overlap, paired_temporal_iou, temporal_iou

__all__ = [
    "NmsResult",
    "Overlap",
    "RaggedSpans",
    "ScoredSpans",
    "StartEnd",
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
