# SPDX-License-Identifier: Apache-2.0
"""Inside/outside tagging head (WildQA's IO baseline, as the paper specifies it:
sigmoid, threshold >= 0.5, maximal runs become spans)."""

from __future__ import annotations

from typing import Optional

import torch
from torch import Tensor, nn

from fastvqa.nn.masking import lengths_to_mask, safe_mean
from fastvqa.ops import RaggedSpans, io_to_spans


class IOHead(nn.Module):
    """Per-step inside/outside logits ``L . h_t + b``.

    Args:
        hidden_size: ``H`` of the sequence.

    Example:
        >>> import torch
        >>> head = IOHead(8)
        >>> tuple(head(torch.randn(2, 5, 8)).shape)
        (2, 5)
        >>> IOHead.tags_from_spans(torch.tensor([[[1, 2], [-1, -1]]]), 4).tolist()
        [[0.0, 1.0, 1.0, 0.0]]
        >>> head.decode(torch.tensor([[-2.0, 3.0, 1.0, -1.0]])).spans.tolist()
        [[1, 2]]
    """

    def __init__(self, hidden_size: int) -> None:
        super().__init__()
        self.proj = nn.Linear(hidden_size, 1)

    def forward(self, hidden: Tensor) -> Tensor:
        """``hidden`` [B, T, H] -> raw logits [B, T] (padding unmasked; see :meth:`loss`)."""
        return self.proj(hidden).squeeze(-1)

    @staticmethod
    def tags_from_spans(gold: Tensor, steps: int) -> Tensor:
        """[B, G, 2] inclusive gold spans ((-1, -1) padding) -> [B, T] float 0/1 tags."""
        gold = gold.reshape(gold.shape[0], -1, 2)
        t = torch.arange(steps, device=gold.device)[None, None, :]
        inside = (t >= gold[..., :1]) & (t <= gold[..., 1:]) & (gold[..., :1] >= 0)
        return inside.any(1).float()

    def loss(self, logits: Tensor, tags: Tensor, lengths: Optional[Tensor] = None) -> Tensor:
        """Binary cross-entropy per valid step (``tags`` [B, T] in {0, 1}),
        averaged over all valid steps of the batch; 0 when there are none."""
        B, T = logits.shape
        mask = lengths_to_mask(lengths, B, T, logits.device)
        # Padding gets logit 0 / target 0 so its (ignored) term stays finite.
        safe_logits = torch.where(mask, logits, torch.zeros_like(logits))
        target = torch.where(mask, tags.to(logits.dtype), torch.zeros_like(logits))
        per_step = nn.functional.binary_cross_entropy_with_logits(
            safe_logits, target, reduction="none")
        return safe_mean((per_step * mask).sum(), mask.sum())

    @torch.no_grad()
    def decode(self, logits: Tensor, lengths: Optional[Tensor] = None, *,
               threshold: float = 0.5, min_len: int = 1) -> RaggedSpans:
        """Spans from ``sigmoid(logits) >= threshold``: every maximal run of
        valid steps, scored by its mean probability, sorted by score then start.

        Returns :class:`fastvqa.ops.RaggedSpans` ``(spans [N, 2] inclusive
        int64, offsets [B + 1], scores [N])``: row ``b``'s spans are
        ``spans[offsets[b]:offsets[b + 1]]``. Eager only
        (the number of spans depends on the data).
        """
        return io_to_spans(torch.sigmoid(logits), threshold=threshold, lengths=lengths,
                           min_len=min_len)
