# SPDX-License-Identifier: Apache-2.0
"""Masked temporal attention pooling (DVD's TA baselines; weakly supervised
grounding reads the attention as a localisation)."""

from __future__ import annotations

from typing import Literal, NamedTuple, Optional

import torch
from torch import Tensor, nn

from fastvqa.nn.masking import lengths_to_mask
from fastvqa.ops import top_spans


class AttentionPoolOutput(NamedTuple):
    """What :class:`TemporalAttentionPool` returns for a batch of ``B`` rows.

    Example:
        >>> import torch
        >>> _ = torch.manual_seed(0)
        >>> pool = TemporalAttentionPool(8, query_size=4)
        >>> out = pool(torch.randn(2, 5, 8), torch.tensor([5, 3]), torch.randn(2, 4))
        >>> tuple(out.pooled.shape), out.attention[1, 3:].tolist(), tuple(out.span.shape)
        ((2, 8), [0.0, 0.0], (2, 2))
    """

    pooled: Tensor      #: [B, H] attention-weighted sum of the valid steps (0 for empty rows)
    attention: Tensor   #: [B, T] weights summing to 1 over valid steps; padding exactly 0
    span: Tensor        #: [B, 2] inclusive best span of the attention, (-1, -1) for empty rows
    span_score: Tensor  #: [B] its score, -inf for empty rows


class TemporalAttentionPool(nn.Module):
    """Additive attention over time: ``a = softmax_t(v . tanh(W h_t + U q))``.

    Args:
        hidden_size: ``H`` of the sequence.
        query_size: size of an optional per-row query (e.g. the question
            encoding); ``None`` for unconditioned attention.
        attn_size: width of the tanh layer (default ``H``).
        span_reduce: how the best span of the attention is scored: ``"contrast"``
            (mean attention inside minus mean outside, the default: it neither
            favours single peaks nor the whole row), ``"mean"`` or ``"sum"``.
        min_len, max_len: span length limits in steps for the best span.

    Example:
        >>> import torch
        >>> pool = TemporalAttentionPool(8, span_reduce="mean", max_len=2)
        >>> out = pool(torch.randn(1, 4, 8))
        >>> tuple(out.attention.shape), bool(torch.isclose(out.attention.sum(), torch.tensor(1.0)))
        ((1, 4), True)
    """

    def __init__(self, hidden_size: int, query_size: Optional[int] = None, *,
                 attn_size: Optional[int] = None,
                 span_reduce: Literal["sum", "mean", "contrast"] = "contrast",
                 min_len: int = 1, max_len: Optional[int] = None) -> None:
        super().__init__()
        attn_size = attn_size or hidden_size
        self.key = nn.Linear(hidden_size, attn_size)
        self.query = None if query_size is None else nn.Linear(query_size, attn_size, bias=False)
        self.score = nn.Linear(attn_size, 1, bias=False)
        self.span_reduce, self.min_len, self.max_len = span_reduce, min_len, max_len

    def forward(self, hidden: Tensor, lengths: Optional[Tensor] = None,
                query: Optional[Tensor] = None) -> AttentionPoolOutput:
        """``hidden`` [B, T, H], ``lengths`` [B] (before padding), ``query`` [B, Q]."""
        B, T, _ = hidden.shape
        mask = lengths_to_mask(lengths, B, T, hidden.device)
        act = self.key(hidden)
        if self.query is not None:
            if query is None:
                raise ValueError("TemporalAttentionPool: this module was built with query_size, "
                                 "so forward needs query [B, Q]")
            act = act + self.query(query)[:, None, :]
        logits = self.score(torch.tanh(act)).squeeze(-1)
        # A finite fill keeps fully masked rows finite; the mask product then
        # makes every padded weight exactly 0 (and empty rows all 0).
        logits = logits.masked_fill(~mask, torch.finfo(logits.dtype).min)
        attention = torch.softmax(logits, dim=-1) * mask
        pooled = torch.einsum("bt,bth->bh", attention, hidden)
        spans, scores = top_spans(
            attention.detach(), 1, reduce=self.span_reduce, min_len=self.min_len,
            max_len=self.max_len, lengths=mask.sum(-1))
        return AttentionPoolOutput(pooled, attention, spans[:, 0], scores[:, 0])
