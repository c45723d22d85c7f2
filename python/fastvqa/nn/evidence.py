# SPDX-License-Identifier: Apache-2.0
"""WildQA's evidence baselines on fastvqa's joint encoder: start/end span
extraction (:class:`SpanGrounder`) and inside/outside tagging
(:class:`IOGrounder`), with the interface of :class:`fastvqa.nn.MomentDETR`.

Both decode inclusive step spans ``(i, j)`` to seconds: by an even split of
``duration`` (a number or ``[B]``) over the row's ``lengths[b]`` steps,
``(i, j + 1) * duration / lengths[b]``, or, given ``start`` and ``end`` (the
batch's ``[B, T]`` step times in seconds), ``(start[b, i], end[b, j])``;
then clamped to ``[0, duration]``. ``decode``'s ``mask`` (``None``: every
step is real) gives ``lengths``; rows with no real step decode to nothing.
:class:`~fastvqa.nn.DecodedMoments`' ``queries`` is -1 (no queries here).
"""

from __future__ import annotations

from typing import Any, Mapping, NamedTuple, Optional

import torch
from torch import Tensor

from fastvqa import _checks
from fastvqa.errors import InputError
from fastvqa.nn.io_head import IOHead
from fastvqa.nn.joint_encoder import GroundingModel, describe
from fastvqa.nn.moment_detr import DecodedMoments
from fastvqa.nn.span_head import SpanHead
from fastvqa.nn.spans import Duration, clamp_spans, denormalize_spans


class SpanOutput(NamedTuple):
    """What :class:`SpanGrounder` returns (padded steps hold the dtype's lowest value).

    Example:
        >>> import torch
        >>> SpanOutput(torch.zeros(2, 5), torch.zeros(2, 5)).start_logits.shape
        torch.Size([2, 5])
    """

    start_logits: Tensor  #: [B, T]
    end_logits: Tensor    #: [B, T]


class SpanLossTerms(NamedTuple):
    """:meth:`SpanGrounder.loss` (one term, so ``total == start_end``).

    Example:
        >>> import torch
        >>> SpanLossTerms(torch.tensor(1.0), torch.tensor(1.0))._fields
        ('total', 'start_end')
    """

    total: Tensor
    start_end: Tensor  #: -log P(start) - log P(end), :meth:`fastvqa.nn.SpanHead.loss`


class IOOutput(NamedTuple):
    """What :class:`IOGrounder` returns (padded steps hold the dtype's lowest value).

    Example:
        >>> import torch
        >>> IOOutput(torch.zeros(2, 5)).logits.shape
        torch.Size([2, 5])
    """

    logits: Tensor  #: [B, T] inside logits


class IOLossTerms(NamedTuple):
    """:meth:`IOGrounder.loss` (one term, so ``total == io``).

    Example:
        >>> import torch
        >>> IOLossTerms(torch.tensor(1.0), torch.tensor(1.0))._fields
        ('total', 'io')
    """

    total: Tensor
    io: Tensor  #: per-step binary cross-entropy, :meth:`fastvqa.nn.IOHead.loss`


class SpanGrounder(GroundingModel):
    """WildQA's start/end (SE) baseline: the joint encoder, then
    :class:`~fastvqa.nn.SpanHead` over the encoded video steps.

    Trained with ``-log P(start) - log P(end)`` of the gold spans' first and
    last steps (``multi_span`` decides rows with several gold spans:
    ``"first"`` is WildQA's code); decoded to the best ``k`` spans by
    ``P(start) P(end)`` (:func:`fastvqa.ops.span_argmax`; WildQA predicts one).

    Args:
        video_dim, query_dim, hidden, heads, enc_layers, ffn, dropout: as
            :class:`~fastvqa.nn.MomentDETR`'s (the joint encoder).
        multi_span: ``"mean"``, ``"first"`` or ``"logsumexp"`` (:class:`~fastvqa.nn.SpanHead`).

    Example:
        >>> import torch
        >>> _ = torch.manual_seed(0)
        >>> model = SpanGrounder(8, 4, hidden=16, heads=2, enc_layers=1, ffn=32).eval()
        >>> mask = torch.tensor([[True] * 6, [True] * 4 + [False] * 2])
        >>> out = model(torch.randn(2, 6, 8), mask, torch.randn(2, 3, 4),
        ...             torch.ones(2, 3, dtype=torch.bool))
        >>> moments = model.decode(out, torch.tensor([12.0, 8.0]), mask)
        >>> [len(m.spans) for m in moments], bool((moments[1].spans <= 8.0).all())
        ([1, 1], True)
    """

    name = "span"

    def __init__(self, video_dim: int, query_dim: int, *, hidden: int = 256, heads: int = 8,
                 enc_layers: int = 2, ffn: int = 1024, dropout: float = 0.1,
                 multi_span: str = "mean") -> None:
        super().__init__(video_dim, query_dim, hidden=hidden, heads=heads,
                         enc_layers=enc_layers, ffn=ffn, dropout=dropout)
        self.span_head = SpanHead(hidden, multi_span=multi_span)
        self._config.update(multi_span=multi_span)

    def forward(self, features: Tensor, mask: Tensor, query: Tensor,
                query_mask: Tensor) -> SpanOutput:
        """As :meth:`fastvqa.nn.MomentDETR.forward` -> :class:`SpanOutput`."""
        start, end = self.span_head(self.encoder(features, mask, query, query_mask))
        return SpanOutput(_fill_padding(start, mask), _fill_padding(end, mask))

    def loss(self, output: SpanOutput, batch: Mapping[str, Any]) -> SpanLossTerms:
        """The start/end loss of ``output`` against ``batch["gold"]`` ``[B, G, 2]``
        inclusive steps (``(-1, -1)`` padding) over ``batch["mask"]``."""
        op = "SpanGrounder.loss"
        gold, lengths = _gold_and_lengths(self, batch, output.start_logits, op)
        nll = self.span_head.loss(output.start_logits, output.end_logits, gold, lengths)
        return SpanLossTerms(nll, nll)

    @torch.no_grad()
    def decode(self, output: SpanOutput, duration: Duration, mask: Optional[Tensor] = None, *,
               k: int = 1, max_len: Optional[int] = None, min_len: int = 1,
               start: Optional[Tensor] = None, end: Optional[Tensor] = None
               ) -> list[DecodedMoments]:
        """The ``k`` best spans of each video in seconds, scored ``P(start) P(end)``
        (softmax over the real steps), best first; equal scores: smaller start,
        then smaller end (:func:`fastvqa.ops.span_argmax`'s order). ``max_len``
        and ``min_len`` are in steps.
        Seconds, ``mask`` and ``start``/``end``: see the module's docstring.
        """
        logits = output.start_logits
        lengths = _lengths(mask, logits)
        spans, scores = self.span_head.decode(logits, output.end_logits, lengths,
                                              max_len=max_len, min_len=min_len, k=k)
        B = logits.shape[0]
        rows = torch.arange(B, device=logits.device)[:, None].expand_as(scores)
        found = spans[..., 0] >= 0
        return _moments(spans[found], scores[found].exp(), rows[found], found.sum(-1),
                        lengths, duration, start, end, "SpanGrounder.decode")


class IOGrounder(GroundingModel):
    """WildQA's inside/outside (IO) baseline: the joint encoder, then
    :class:`~fastvqa.nn.IOHead` tagging each encoded video step.

    Trained with per-step binary cross-entropy against 1 inside a gold span
    and 0 outside (the WildQA paper's sigmoid; its code's softmax over time
    is not reproduced); decoded to every maximal run of steps whose
    probability is at least ``threshold`` (0.5, the paper's), scored by the
    run's mean probability.

    Args:
        video_dim, query_dim, hidden, heads, enc_layers, ffn, dropout: as
            :class:`~fastvqa.nn.MomentDETR`'s (the joint encoder).

    Example:
        >>> import torch
        >>> _ = torch.manual_seed(0)
        >>> model = IOGrounder(8, 4, hidden=16, heads=2, enc_layers=1, ffn=32).eval()
        >>> mask = torch.ones(1, 6, dtype=torch.bool)
        >>> out = model(torch.randn(1, 6, 8), mask, torch.randn(1, 3, 4),
        ...             torch.ones(1, 3, dtype=torch.bool))
        >>> tuple(out.logits.shape)
        (1, 6)
        >>> # Steps 1-2 and 4 are inside (sigmoid >= 0.5); 2 s per step.
        >>> logits = torch.tensor([[-1.0, 2.0, 3.0, -1.0, 1.0, -2.0]])
        >>> moments = model.decode(IOOutput(logits), 12.0)
        >>> moments[0].spans.tolist(), [round(s, 4) for s in moments[0].scores.tolist()]
        ([[2.0, 6.0], [8.0, 10.0]], [0.9167, 0.7311])
    """

    name = "io"

    def __init__(self, video_dim: int, query_dim: int, *, hidden: int = 256, heads: int = 8,
                 enc_layers: int = 2, ffn: int = 1024, dropout: float = 0.1) -> None:
        super().__init__(video_dim, query_dim, hidden=hidden, heads=heads,
                         enc_layers=enc_layers, ffn=ffn, dropout=dropout)
        self.io_head = IOHead(hidden)

    def forward(self, features: Tensor, mask: Tensor, query: Tensor,
                query_mask: Tensor) -> IOOutput:
        """As :meth:`fastvqa.nn.MomentDETR.forward` -> :class:`IOOutput`."""
        logits = self.io_head(self.encoder(features, mask, query, query_mask))
        return IOOutput(_fill_padding(logits, mask))

    def loss(self, output: IOOutput, batch: Mapping[str, Any]) -> IOLossTerms:
        """Binary cross-entropy of ``output`` against the tags of
        ``batch["gold"]`` ``[B, G, 2]`` (inclusive steps), averaged over the
        real steps of the batch (``batch["mask"]``)."""
        op = "IOGrounder.loss"
        gold, lengths = _gold_and_lengths(self, batch, output.logits, op)
        tags = IOHead.tags_from_spans(gold, output.logits.shape[1])
        bce = self.io_head.loss(output.logits, tags, lengths)
        return IOLossTerms(bce, bce)

    @torch.no_grad()
    def decode(self, output: IOOutput, duration: Duration, mask: Optional[Tensor] = None, *,
               threshold: float = 0.5, min_len: int = 1, top_k: Optional[int] = None,
               start: Optional[Tensor] = None, end: Optional[Tensor] = None
               ) -> list[DecodedMoments]:
        """Each video's runs of inside steps in seconds (:func:`fastvqa.ops.io_to_spans`),
        best first: higher mean probability, then smaller start; at most
        ``top_k`` per video (``None``: all). ``min_len`` is in steps.
        Seconds, ``mask`` and ``start``/``end``: see the module's docstring.
        """
        logits = output.logits
        lengths = _lengths(mask, logits)
        spans, offsets, scores = self.io_head.decode(logits, lengths, threshold=threshold,
                                                     min_len=min_len)
        counts = offsets.diff()
        rows = torch.repeat_interleave(torch.arange(len(counts), device=counts.device), counts)
        top_k = _checks.optional_integer(top_k, "IOGrounder.decode", "top_k", minimum=1)
        if top_k is not None:
            rank = torch.arange(len(rows), device=rows.device) - offsets[:-1][rows]
            keep = rank < top_k
            spans, scores, rows = spans[keep], scores[keep], rows[keep]
            counts = counts.clamp_max(top_k)
        return _moments(spans, scores, rows, counts, lengths, duration, start, end,
                        "IOGrounder.decode")


def _fill_padding(scores: Tensor, mask: Tensor) -> Tensor:
    return scores.masked_fill(~mask, torch.finfo(scores.dtype).min)


def _lengths(mask: Optional[Tensor], logits: Tensor) -> Tensor:
    B, T = logits.shape
    if mask is None:
        return torch.full((B,), T, dtype=torch.int64, device=logits.device)
    if not isinstance(mask, Tensor) or tuple(mask.shape) != (B, T) or mask.dtype != torch.bool:
        raise InputError(f"decode: mask must be a bool tensor of shape {(B, T)}, "
                         f"got {describe(mask)}")
    return mask.to(logits.device).sum(-1)


def _gold_and_lengths(model: GroundingModel, batch: Mapping[str, Any], logits: Tensor,
                      op: str) -> tuple[Tensor, Tensor]:
    gold = model._field(batch, "gold", op)
    mask = model._field(batch, "mask", op)
    B, T = logits.shape
    if gold.ndim != 3 or gold.shape[0] != B or gold.shape[-1] != 2 \
            or tuple(mask.shape) != (B, T):
        raise InputError(f"{op}: gold must have shape ({B}, G, 2) and mask {(B, T)}, "
                         f"got {tuple(gold.shape)} and {tuple(mask.shape)}")
    return gold.to(logits.device, torch.int64), mask.to(logits.device).sum(-1)


def _moments(steps: Tensor, scores: Tensor, rows: Tensor, counts: Tensor, lengths: Tensor,
             duration: Duration, start: Optional[Tensor], end: Optional[Tensor],
             op: str) -> list[DecodedMoments]:
    """Inclusive step spans ``[N, 2]`` of the rows ``rows`` (grouped by row,
    ``counts[b]`` each) -> one :class:`DecodedMoments` per row, in seconds."""
    B = len(counts)
    dtype = scores.dtype
    if isinstance(duration, Tensor) and duration.ndim == 1:
        if duration.shape[0] != B:
            raise InputError(f"{op}: duration must be a number or have shape ({B},), "
                             f"got shape {tuple(duration.shape)}")
        duration = duration.to(steps.device, dtype)[rows]
    if (start is None) != (end is None):
        raise InputError(f"{op}: give both start and end step times, or neither")
    if start is None:
        bounds = torch.stack((steps[:, 0], steps[:, 1] + 1), dim=-1).to(dtype)
        seconds = denormalize_spans(bounds / lengths[rows, None].to(dtype), duration)
    else:
        for name, times in (("start", start), ("end", end)):
            if not isinstance(times, Tensor) or times.ndim != 2 or times.shape[0] != B:
                raise InputError(f"{op}: {name} must be a tensor of shape ({B}, T) (seconds), "
                                 f"got {describe(times)}")
        seconds = torch.stack((start.to(steps.device)[rows, steps[:, 0]],
                               end.to(steps.device)[rows, steps[:, 1]]), dim=-1).to(dtype)
    seconds = clamp_spans(seconds, duration)
    queries = torch.full((len(steps),), -1, dtype=torch.int64, device=steps.device)
    sizes = counts.tolist()
    return [DecodedMoments(*parts) for parts in zip(seconds.split(sizes), scores.split(sizes),
                                                    queries.split(sizes))]
