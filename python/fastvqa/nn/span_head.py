# SPDX-License-Identifier: Apache-2.0
"""Start/end span extraction head (WildQA's SE baseline, SQuAD-style)."""

from __future__ import annotations

from typing import Optional

import torch
from torch import Tensor, nn

from fastvqa import _checks
from fastvqa.nn.masking import lengths_to_mask, masked_log_softmax, safe_mean
from fastvqa.ops import ScoredSpans, span_argmax

MULTI_SPAN = ("first", "mean", "logsumexp")


class SpanHead(nn.Module):
    """Start and end logits over a sequence, their loss and their decoding.

    ``start_t = S . h_t + b_s`` and ``end_t = E . h_t + b_e`` (one
    ``nn.Linear(hidden_size, 2)``), normalised with a log-softmax over the
    valid steps of each row.

    Args:
        hidden_size: ``H``, the size of each step's hidden state.
        multi_span: how a row with several gold spans is scored:
            ``"first"`` (only the first valid gold span, as WildQA's code),
            ``"mean"`` (the mean over gold spans of ``-log P(start) - log P(end)``),
            or ``"logsumexp"`` (``-log`` of the total probability of the set of
            gold starts, plus the same for the set of gold ends: the model may
            put its mass on any gold boundary).
    """

    def __init__(self, hidden_size: int, *, multi_span: str = "mean") -> None:
        super().__init__()
        _checks.choice(multi_span, "SpanHead", "multi_span", MULTI_SPAN)
        self.proj = nn.Linear(hidden_size, 2)
        self.multi_span = multi_span

    def forward(self, hidden: Tensor) -> tuple[Tensor, Tensor]:
        """``hidden`` [B, T, H] -> raw ``(start_logits, end_logits)``, each [B, T].

        Padding steps hold whatever the projection gives; :meth:`loss` and
        :meth:`decode` mask them with ``lengths``.
        """
        logits = self.proj(hidden)
        return logits[..., 0], logits[..., 1]

    def loss(self, start_logits: Tensor, end_logits: Tensor, gold: Tensor,
             lengths: Optional[Tensor] = None) -> Tensor:
        """Span-extraction loss ``-log P(start) - log P(end)``, averaged over rows.

        Args:
            start_logits, end_logits: [B, T] from :meth:`forward`.
            gold: [B, 2] or [B, G, 2] inclusive (start, end) step indices;
                ``(-1, -1)`` pads rows with fewer gold spans. A gold span is
                used when ``0 <= start <= end < lengths[b]``; others are ignored.
            lengths: optional [B] valid lengths (computed before padding).

        Returns:
            A scalar: the mean over rows that have a valid gold span and a
            non-zero length (0 when there are none; never NaN).
        """
        B, T = start_logits.shape
        gold = gold.reshape(B, -1, 2).to(torch.int64)
        if T == 0:
            return start_logits.sum() * 0.0
        lp_s, lp_e, mask = self._log_probs(start_logits, end_logits, lengths)
        length = mask.sum(-1, keepdim=True)
        gs, ge = gold[..., 0], gold[..., 1]
        valid = (gs >= 0) & (gs <= ge) & (ge < length)  # [B, G]
        if self.multi_span == "first":
            # The first *valid* gold span of each row.
            valid = valid & (valid.cumsum(-1) == 1)
        gs_c, ge_c = gs.clamp(0, T - 1), ge.clamp(0, T - 1)
        if self.multi_span == "logsumexp":
            hot_s = torch.zeros(B, T, device=mask.device).scatter_add(1, gs_c, valid.float()) > 0
            hot_e = torch.zeros(B, T, device=mask.device).scatter_add(1, ge_c, valid.float()) > 0
            fill = torch.finfo(lp_s.dtype).min
            row = -(torch.logsumexp(lp_s.masked_fill(~hot_s, fill), -1)
                    + torch.logsumexp(lp_e.masked_fill(~hot_e, fill), -1))
        else:
            nll = -(lp_s.gather(1, gs_c) + lp_e.gather(1, ge_c))  # [B, G]
            nll = torch.where(valid, nll, torch.zeros_like(nll))
            row = safe_mean(nll.sum(-1), valid.sum(-1))
        used = valid.any(-1)
        row = torch.where(used, row, torch.zeros_like(row))
        return safe_mean(row.sum(), used.sum())

    @torch.no_grad()
    def decode(self, start_logits: Tensor, end_logits: Tensor,
               lengths: Optional[Tensor] = None, *, max_len: Optional[int] = None,
               min_len: int = 1, k: Optional[int] = None) -> ScoredSpans:
        """Best spans by ``log P(start) + log P(end)`` through :func:`fastvqa.ops.span_argmax`.

        Returns :class:`fastvqa.ops.ScoredSpans` ``(spans, scores)``: ``spans
        [B, 2]`` inclusive int64 and ``scores [B]`` for the best span of each
        row (``k=None``), ``[B, k, 2]`` and ``[B, k]`` for the ``k`` best;
        rows with fewer valid spans (e.g. ``lengths[b] == 0``) are padded with
        ``(-1, -1)`` and ``-inf``. Ties: higher score, smaller start, smaller end.
        """
        lp_s, lp_e, mask = self._log_probs(start_logits, end_logits, lengths)
        return span_argmax(lp_s, lp_e, max_len=max_len, min_len=min_len, k=k,
                           lengths=mask.sum(-1))

    @staticmethod
    def _log_probs(start_logits: Tensor, end_logits: Tensor,
                   lengths: Optional[Tensor]) -> tuple[Tensor, Tensor, Tensor]:
        """``(log P(start), log P(end), mask)`` over the valid steps of each row."""
        B, T = start_logits.shape
        mask = lengths_to_mask(lengths, B, T, start_logits.device)
        return masked_log_softmax(start_logits, mask), masked_log_softmax(end_logits, mask), mask
