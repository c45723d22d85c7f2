# SPDX-License-Identifier: Apache-2.0
"""A small Moment-DETR-style set-prediction head: learned queries decode span
candidates from a sequence of features; trained with Hungarian matching,
L1 + gIoU span losses and a down-weighted background class; decoded to
seconds through :func:`fastvqa.ops.nms_1d`."""

from __future__ import annotations

import math
from typing import Literal, NamedTuple, Optional, Sequence

import torch
from torch import Tensor, nn

from fastvqa import _checks
from fastvqa.errors import InputError, InputTypeError
from fastvqa.nn.losses import generalized_temporal_iou_loss, span_l1_loss
from fastvqa.nn.masking import lengths_to_mask
from fastvqa.nn.matcher import HungarianMatcher, Match
from fastvqa.nn.spans import Duration, center_width_to_spans, clamp_spans, denormalize_spans
from fastvqa.ops import nms_1d

#: Class index of "this query holds a moment" in ``pred_logits`` (Moment-DETR's
#: ``foreground_label``); index 1 is the background ("no moment") class.
FOREGROUND = 0
BACKGROUND = 1


class MomentDETROutput(NamedTuple):
    """What :class:`MomentDETRHead` returns: ``B`` videos, ``Q`` queries.

    Example:
        >>> import torch
        >>> out = MomentDETROutput(torch.zeros(1, 3, 2), torch.full((1, 3, 2), 0.5))
        >>> decode(out, 10.0, iou_threshold=1.0)[0].spans.tolist()  # three equal queries
        [[2.5, 7.5], [2.5, 7.5], [2.5, 7.5]]
    """

    pred_logits: Tensor  #: [B, Q, 2] logits of (foreground, background) per query
    pred_spans: Tensor   #: [B, Q, 2] (centre, width) per query, fractions of the video, in (0, 1)


class SetPredictionLosses(NamedTuple):
    """:func:`set_prediction_loss`'s terms, each a 0-d tensor, and the matches.

    Example:
        >>> import torch
        >>> out = MomentDETROutput(torch.zeros(1, 2, 2), torch.tensor([[[0.5, 0.2], [0.2, 0.1]]]))
        >>> losses = set_prediction_loss(out, [torch.tensor([[0.5, 0.2]])])
        >>> losses.span_l1.item(), losses.giou.item(), losses.matches[0].pred_idx.tolist()
        (0.0, 0.0, [0])
    """

    total: Tensor           #: scalar: the weighted sum of the three terms below
    span_l1: Tensor         #: scalar: mean L1 on (centre, width) over matched queries (0 if none)
    giou: Tensor            #: scalar: mean 1 - gIoU over matched queries (0 if none)
    classification: Tensor  #: scalar: class-weighted cross-entropy over all queries
    matches: list           #: the B :class:`fastvqa.nn.Match` the terms were computed on


class DecodedMoments(NamedTuple):
    """One video's decoded moments, best first (:func:`decode`).

    Example:
        >>> import torch
        >>> logits = torch.tensor([[[2.0, 0.0], [0.0, 2.0], [1.0, 0.0]]])  # 1 video, 3 queries
        >>> cw = torch.tensor([[[0.25, 0.5], [0.5, 0.5], [0.3, 0.4]]])  # (centre, width)
        >>> decode(MomentDETROutput(logits, cw), 60.0, iou_threshold=0.5)
        [DecodedMoments(spans=tensor([[ 0., 30.], [15., 45.]]), scores=tensor([0.8808, 0.1192]),
                        queries=tensor([0, 1]))]
    """

    spans: Tensor    #: [K, 2] (start, end) in seconds, inside [0, duration]
    scores: Tensor   #: [K] foreground probability of each span
    queries: Tensor  #: [K] int64 index of the query that predicted it


class MomentDETRHead(nn.Module):
    """Learned queries over a ``(B, T, D)`` feature sequence, Moment-DETR style.

    The features are projected to ``hidden``, given a sinusoidal encoding of
    their position *as a fraction of the row's valid length* (so a row's
    encoding does not depend on how far it was padded, and spans come out as
    fractions of the video), and serve as the memory of an
    ``nn.TransformerDecoder`` whose ``num_queries`` learned queries
    cross-attend to the valid steps only. Each query's output gives
    ``pred_logits`` (foreground/background, see :data:`FOREGROUND`) and
    ``pred_spans`` ``(centre, width)`` through a 3-layer MLP and a sigmoid.

    Args:
        dim: ``D``, the feature size.
        num_queries: ``Q``, the number of span candidates per video.
        hidden: the transformer width (divisible by ``heads``, even).
        layers: decoder layers.
        heads: attention heads.
        dropout: dropout inside the decoder (Moment-DETR: 0.1).
        feedforward: the decoder's feed-forward width (default ``4 * hidden``).

    Example:
        >>> import torch
        >>> head = MomentDETRHead(dim=16, num_queries=5, hidden=32).eval()
        >>> out = head(torch.randn(2, 20, 16), lengths=torch.tensor([20, 12]))
        >>> tuple(out.pred_logits.shape), tuple(out.pred_spans.shape)
        ((2, 5, 2), (2, 5, 2))
        >>> [len(m.spans) <= 5 for m in head.decode(out, torch.tensor([40.0, 24.0]))]
        [True, True]
    """

    def __init__(self, dim: int, num_queries: int = 10, *, hidden: int = 256, layers: int = 2,
                 heads: int = 4, dropout: float = 0.1,
                 feedforward: Optional[int] = None) -> None:
        super().__init__()
        op = "MomentDETRHead"
        dim = _checks.integer(dim, op, "dim", minimum=1)
        num_queries = _checks.integer(num_queries, op, "num_queries", minimum=1)
        hidden = _checks.integer(hidden, op, "hidden", minimum=2)
        layers = _checks.integer(layers, op, "layers", minimum=1)
        heads = _checks.integer(heads, op, "heads", minimum=1)
        dropout = _checks.unit_interval(dropout, op, "dropout")
        if hidden % heads or hidden % 2:
            raise InputError(f"{op}: hidden must be even and divisible by heads, "
                             f"got hidden={hidden}, heads={heads}")
        self.hidden = hidden
        self.input_proj = nn.Sequential(nn.LayerNorm(dim), nn.Linear(dim, hidden))
        self.queries = nn.Embedding(num_queries, hidden)
        layer = nn.TransformerDecoderLayer(hidden, heads, feedforward or 4 * hidden, dropout,
                                           batch_first=True)
        self.decoder = nn.TransformerDecoder(layer, layers, norm=nn.LayerNorm(hidden))
        self.class_head = nn.Linear(hidden, 2)
        self.span_head = nn.Sequential(nn.Linear(hidden, hidden), nn.ReLU(),
                                       nn.Linear(hidden, hidden), nn.ReLU(),
                                       nn.Linear(hidden, 2))

    @property
    def num_queries(self) -> int:
        return self.queries.num_embeddings

    def forward(self, features: Tensor, lengths: Optional[Tensor] = None) -> MomentDETROutput:
        """``features`` ``(B, T, D)``, ``lengths`` ``(B,)`` valid steps (computed
        before padding; ``None``: all ``T``) -> :class:`MomentDETROutput`.

        Steps at or after ``lengths[b]`` are never attended to, so their
        content does not change row ``b``'s outputs. A row with
        ``lengths[b] == 0`` attends to zeros (finite, meaningless outputs;
        give it no targets and :meth:`decode` it with ``lengths``).
        """
        dim = self.input_proj[1].in_features
        if not isinstance(features, Tensor) or features.ndim != 3 or features.shape[-1] != dim:
            got = tuple(features.shape) if isinstance(features, Tensor) else type(features).__name__
            raise InputError(f"MomentDETRHead: features must have shape (B, T, {dim}), got {got}")
        B, T, _ = features.shape
        mask = lengths_to_mask(lengths, B, T, features.device)
        length = mask.sum(-1, keepdim=True).clamp_min(1)
        # Positions as fractions of the valid length: step t covers
        # [t, t + 1) / length, and we encode its centre.
        where = (torch.arange(T, device=features.device) + 0.5) / length
        memory = self.input_proj(features)
        memory = memory + _sine_encoding(where, self.hidden).to(memory.dtype)
        memory = memory * mask[..., None].to(memory.dtype)
        # A row with no valid step attends to its (zeroed) steps rather than
        # to nothing, which would make the softmax NaN.
        ignore = ~mask & mask.any(-1, keepdim=True)
        queries = self.queries.weight[None].expand(B, -1, -1)
        out = self.decoder(queries, memory, memory_key_padding_mask=ignore)
        return MomentDETROutput(self.class_head(out), torch.sigmoid(self.span_head(out)))

    def loss(self, outputs: MomentDETROutput, targets: Sequence[Tensor],
             matcher: Optional[HungarianMatcher] = None, **weights: float) -> SetPredictionLosses:
        """:func:`set_prediction_loss` (same arguments)."""
        return set_prediction_loss(outputs, targets, matcher, **weights)

    @torch.no_grad()
    def decode(self, outputs: MomentDETROutput, duration: Duration, **options) -> list:
        """:func:`decode` (same arguments)."""
        return decode(outputs, duration, **options)


def set_prediction_loss(outputs: MomentDETROutput, targets: Sequence[Tensor],
                        matcher: Optional[HungarianMatcher] = None, *,
                        span_weight: float = 10.0, giou_weight: float = 1.0,
                        class_weight: float = 4.0, eos_coef: float = 0.1,
                        span_count: Optional[float] = None,
                        class_weight_sum: Optional[float] = None) -> SetPredictionLosses:
    """Moment-DETR's set-prediction loss.

    Queries are matched to targets by ``matcher`` (default
    ``HungarianMatcher(cost_class=4, cost_span=10, cost_giou=1)``, Moment-DETR's
    costs; every target is foreground). Then

    - ``span_l1``: :func:`fastvqa.nn.span_l1_loss` on ``(centre, width)``, and
      ``giou``: :func:`fastvqa.nn.generalized_temporal_iou_loss` on
      ``(start, end)``, both summed over matched pairs and divided by their
      number (0 when nothing is matched);
    - ``classification``: cross-entropy of every query against foreground
      (matched) or background (unmatched), the background class weighted by
      ``eos_coef`` (the mean is weighted: ``sum(w * ce) / sum(w)``);
    - ``total = span_weight * span_l1 + giou_weight * giou + class_weight * classification``
      (Moment-DETR's defaults 10, 1, 4).

    Args:
        outputs: :class:`MomentDETROutput` of the head (or any pair of
            ``(B, Q, 2)`` logits and ``(B, Q, 2)`` spans).
        targets: ``B`` tensors ``(T_b, 2)``: each video's moments as
            ``(centre, width)``, fractions of the video (see
            :func:`fastvqa.nn.spans_to_center_width` and
            :func:`fastvqa.nn.normalize_spans`); ``T_b = 0`` is allowed.
        matcher: the matcher (anything called as ``matcher(pred_logits,
            pred_spans, [(labels, spans), ...])`` returning one
            :class:`fastvqa.nn.Match` per video).
        span_count, class_weight_sum: what the span sums and the weighted
            cross-entropy sum are divided by, instead of this batch's matched
            pairs and ``sum(w)`` (:func:`set_prediction_counts`): data-parallel
            training passes the counts over every rank's batch divided by the
            number of ranks (DETR's all-reduced ``num_boxes``), so that the
            averaged gradients are one process's.

    Example:
        >>> import torch
        >>> _ = torch.manual_seed(0)
        >>> out = MomentDETRHead(dim=16, num_queries=5, hidden=32)(torch.randn(2, 20, 16))
        >>> losses = set_prediction_loss(out, [torch.tensor([[0.5, 0.2]]), torch.zeros(0, 2)])
        >>> losses.total.shape, [len(m.pred_idx) for m in losses.matches]
        (torch.Size([]), [1, 0])
    """
    op = "set_prediction_loss"
    span_weight, giou_weight, class_weight = (
        _checks.real(w, op, name, minimum=0.0, finite=True)
        for w, name in ((span_weight, "span_weight"), (giou_weight, "giou_weight"),
                        (class_weight, "class_weight")))
    eos_coef = _checks.real(eos_coef, op, "eos_coef", minimum=0.0, finite=True)
    logits, spans = outputs
    B, Q, _ = logits.shape
    if isinstance(targets, Tensor) or len(targets) != B:
        raise InputError(f"{op}: targets must be a sequence of B = {B} tensors of shape (T, 2)")
    for b, t in enumerate(targets):
        if not isinstance(t, Tensor) or t.ndim != 2 or t.shape[-1] != 2:
            raise InputError(f"{op}: targets[{b}] must be a tensor of shape (T, 2)")
    targets = [t.to(spans.device, spans.dtype) for t in targets]
    if matcher is None:
        matcher = HungarianMatcher(cost_class=4.0, cost_span=10.0, cost_giou=1.0)
    labelled = [(torch.full((t.shape[0],), FOREGROUND, dtype=torch.int64, device=t.device), t)
                for t in targets]
    matches: list[Match] = matcher(logits.detach(), spans.detach(), labelled)

    video = torch.cat([torch.full_like(m.pred_idx, b) for b, m in enumerate(matches)]
                      ).to(spans.device)
    query = torch.cat([m.pred_idx for m in matches]).to(spans.device)
    matched_target = torch.cat([t[m.tgt_idx.to(t.device)] for t, m in zip(targets, matches)])
    matched_pred = spans[video, query]
    count = max(len(query), 1) if span_count is None else max(float(span_count), 1.0)
    span_l1 = span_l1_loss(matched_pred, matched_target, reduction="sum") / count
    giou = generalized_temporal_iou_loss(center_width_to_spans(matched_pred),
                                         center_width_to_spans(matched_target),
                                         reduction="sum") / count

    classes = torch.full((B, Q), BACKGROUND, dtype=torch.int64, device=logits.device)
    classes[video, query] = FOREGROUND
    class_weights = logits.new_ones(2)
    class_weights[BACKGROUND] = eos_coef
    if logits.numel() == 0:
        classification = logits.sum() * 0.0
    elif class_weight_sum is None:
        classification = nn.functional.cross_entropy(logits.transpose(1, 2), classes,
                                                     weight=class_weights)
    else:
        classification = nn.functional.cross_entropy(
            logits.transpose(1, 2), classes, weight=class_weights, reduction="sum"
        ) / max(float(class_weight_sum), 1e-12)
    total = span_weight * span_l1 + giou_weight * giou + class_weight * classification
    return SetPredictionLosses(total, span_l1, giou, classification, matches)


def set_prediction_counts(target_counts: Sequence[int], num_queries: int,
                          eos_coef: float = 0.1) -> tuple[float, float]:
    """``(matched pairs, sum of class weights)``: the divisors
    :func:`set_prediction_loss` uses by default for a batch whose videos have
    ``target_counts`` targets (each video matches ``min(T_b, Q)`` of them;
    matched queries weigh 1, the others ``eos_coef``).

    >>> set_prediction_counts([1, 3, 0], num_queries=2, eos_coef=0.1)
    (3.0, 3.3)
    """
    matched = float(sum(min(int(t), num_queries) for t in target_counts))
    total = float(len(target_counts) * num_queries)
    return matched, round(matched + (total - matched) * eos_coef, 12)


@torch.no_grad()
def decode(outputs: MomentDETROutput, duration: Duration, *, lengths: Optional[Tensor] = None,
           iou_threshold: float = 0.7, top_k: Optional[int] = None,
           score_threshold: float = 0.0,
           ties: Literal["stable", "start"] = "stable") -> list[DecodedMoments]:
    """Each video's predicted moments in seconds, after 1-D NMS.

    The ``(centre, width)`` predictions become ``(start, end)``, are scaled by
    ``duration`` and clamped to ``[0, duration]``
    (:func:`fastvqa.nn.clamp_spans`), are scored by their foreground
    probability (softmax over the two classes), and go through hard
    :func:`fastvqa.ops.nms_1d` per video (one call for the batch): a span is
    dropped when its IoU with a better kept span of its video exceeds
    ``iou_threshold`` (strict ``>``; ``1.0`` keeps every span), or when its
    score is below ``score_threshold``.

    Args:
        outputs: :class:`MomentDETROutput` ``(pred_logits, pred_spans)``.
        duration: seconds, a number or a ``(B,)`` tensor (one per video).
        lengths: optional ``(B,)`` valid lengths; rows with ``lengths[b] == 0``
            decode to nothing.
        iou_threshold: the NMS threshold in ``[0, 1]`` (Moment-DETR-style
            post-processing commonly uses 0.7).
        top_k: keep at most this many spans per video (``None``: all kept).
        score_threshold: drop spans scoring below it.
        ties: how equal scores are ordered (:func:`fastvqa.ops.nms_1d`):
            ``"stable"`` (query order, as the stable sort of Moment-DETR's and
            UniVTG's post-processing) or ``"start"`` (smaller start, then
            smaller end, then smaller query index).

    Returns:
        ``B`` :class:`DecodedMoments` ``(spans, scores, queries)``, best first
        (higher score, then the ``ties`` rule).

    Example:
        >>> import torch
        >>> logits = torch.tensor([[[2.0, 0.0], [0.0, 2.0], [1.0, 0.0]]])  # 1 video, 3 queries
        >>> cw = torch.tensor([[[0.25, 0.5], [0.5, 0.5], [0.3, 0.4]]])  # (centre, width)
        >>> decode(MomentDETROutput(logits, cw), 60.0, iou_threshold=0.5)  # query 2 is suppressed
        [DecodedMoments(spans=tensor([[ 0., 30.], [15., 45.]]), scores=tensor([0.8808, 0.1192]),
                        queries=tensor([0, 1]))]
    """
    op = "decode"
    iou_threshold = _checks.unit_interval(iou_threshold, op, "iou_threshold")
    top_k = _checks.optional_integer(top_k, op, "top_k", minimum=1)
    score_threshold = _checks.real(score_threshold, op, "score_threshold")
    logits, cw = outputs
    if not isinstance(logits, Tensor) or not isinstance(cw, Tensor):
        raise InputTypeError(f"{op}: outputs must hold torch tensors (pred_logits, pred_spans)")
    B, Q, _ = cw.shape
    scores = logits.softmax(-1)[..., FOREGROUND]
    seconds = clamp_spans(denormalize_spans(center_width_to_spans(cw), duration), duration)
    if lengths is not None:
        # Empty rows: NaN scores are never kept by nms_1d.
        scores = scores.masked_fill((lengths.to(scores.device) == 0)[:, None], math.nan)
    flat_spans, flat_scores = seconds.reshape(-1, 2), scores.reshape(-1)
    offsets = torch.arange(B + 1, device=cw.device) * Q
    kept = nms_1d(flat_spans, flat_scores, iou_threshold=iou_threshold, offsets=offsets,
                  score_threshold=score_threshold, ties=ties)
    bounds = kept.offsets.tolist()
    results = []
    for b in range(B):
        keep = kept.keep[bounds[b]:bounds[b + 1]][:top_k]
        results.append(DecodedMoments(flat_spans[keep], flat_scores[keep], keep - b * Q))
    return results


def _sine_encoding(where: Tensor, dim: int) -> Tensor:
    """``(B, T)`` positions in ``[0, 1]`` -> ``(B, T, dim)`` sines and cosines
    at frequencies from 1/2 to about 50 cycles per video (geometric), fine
    enough to tell apart steps of a video of a hundred steps."""
    half = dim // 2
    freqs = math.pi * 100.0 ** (torch.arange(half, device=where.device, dtype=torch.float32)
                                / max(half - 1, 1))
    angles = where.to(torch.float32)[..., None] * freqs
    return torch.cat((angles.sin(), angles.cos()), dim=-1)
