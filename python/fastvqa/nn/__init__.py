# SPDX-License-Identifier: Apache-2.0
"""Small torch modules for temporal grounding heads (torch, imported on first use).

- :class:`SpanHead`: start/end logits, the span-extraction loss, decoding
  through :func:`fastvqa.ops.span_argmax` (WildQA's SE baseline).
- :class:`TemporalAttentionPool`: masked attention pooling that also returns
  its attention and the best span of it (DVD's TA baselines).
- :class:`IOHead`: inside/outside tagging with a masked BCE loss and run-length
  decoding (WildQA's IO baseline).
- :class:`MomentDETRHead`: learned queries for set prediction of moments
  (Moment-DETR), its :func:`set_prediction_loss` and NMS decoding.

Query-conditioned grounding models (video steps and query tokens encoded
together by a :class:`JointEncoder`), one interface for the training loop
(``forward(features, mask, query, query_mask)``, ``loss(output, batch)``,
``decode(output, duration, mask)``, ``config``), built by name with
:func:`build_model` from :data:`MODELS`:

- :class:`MomentDETR`: learned moment queries, set prediction and a
  saliency head trained with :func:`saliency_loss`;
- :class:`SpanGrounder` and :class:`IOGrounder`: WildQA's start/end and
  inside/outside evidence baselines.

Training pieces of span models (see ``docs/training.md``):

- conversions :func:`spans_to_center_width`, :func:`center_width_to_spans`,
  :func:`normalize_spans`, :func:`denormalize_spans`, :func:`clamp_spans`;
- differentiable losses :func:`span_l1_loss`,
  :func:`generalized_temporal_iou_loss`, :func:`pairwise_generalized_temporal_iou`;
- Hungarian matching :func:`hungarian_match` / :class:`HungarianMatcher`
  (needs scipy).

Every head takes ``lengths`` (``[B]`` valid steps, computed *before*
padding): steps at or after ``lengths[b]`` never contribute to a loss, an
attention weight or a decoded span, and rows with ``lengths[b] == 0`` give
no span and a zero (never NaN) loss contribution (:class:`MomentDETRHead`:
such a row should get no targets; its queries then learn "background").
``forward`` and ``loss`` compile under ``torch.compile(fullgraph=True)``,
except :meth:`MomentDETRHead.loss`, whose matching runs scipy eagerly (its
``forward``, the span conversions and the losses compile). The grounding
models take ``mask`` (``[B, T]`` bool, True on each row's first steps) and
check that it is one, which reads it on the host: they run eagerly.
"""

from __future__ import annotations

from fastvqa._lazy import lazy_exports

# public name -> submodule that defines it
_LAZY = {
    "AttentionPoolOutput": "attention_pool",
    "TemporalAttentionPool": "attention_pool",
    "IOHead": "io_head",
    "generalized_temporal_iou_loss": "losses",
    "pairwise_generalized_temporal_iou": "losses",
    "span_l1_loss": "losses",
    "lengths_to_mask": "masking",
    "HungarianMatcher": "matcher",
    "Match": "matcher",
    "SpanTargets": "matcher",
    "hungarian_match": "matcher",
    "IOGrounder": "evidence",
    "IOLossTerms": "evidence",
    "IOOutput": "evidence",
    "SpanGrounder": "evidence",
    "SpanLossTerms": "evidence",
    "SpanOutput": "evidence",
    "GroundingOutput": "grounding",
    "LossTerms": "grounding",
    "MODELS": "grounding",
    "MomentDETR": "grounding",
    "build_model": "grounding",
    "GroundingModel": "joint_encoder",
    "JointEncoder": "joint_encoder",
    "DecodedMoments": "moment_detr",
    "MomentDETRHead": "moment_detr",
    "MomentDETROutput": "moment_detr",
    "SetPredictionLosses": "moment_detr",
    "set_prediction_loss": "moment_detr",
    "set_prediction_counts": "moment_detr",
    "saliency_loss": "saliency",
    "saliency_videos": "saliency",
    "SpanHead": "span_head",
    "center_width_to_spans": "spans",
    "clamp_spans": "spans",
    "denormalize_spans": "spans",
    "normalize_spans": "spans",
    "spans_to_center_width": "spans",
}

__all__ = sorted(_LAZY)

__getattr__, __dir__ = lazy_exports(__name__, _LAZY)
