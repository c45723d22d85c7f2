# SPDX-License-Identifier: Apache-2.0
"""Small torch modules for temporal grounding heads (imports torch).

- :class:`SpanHead`: start/end logits, the span-extraction loss, decoding
  through :func:`fastvqa.ops.span_argmax` (WildQA's SE baseline).
- :class:`TemporalAttentionPool`: masked attention pooling that also returns
  its attention and the best span of it (DVD's TA baselines).
- :class:`IOHead`: inside/outside tagging with a masked BCE loss and run-length
  decoding (WildQA's IO baseline).

Every module takes ``lengths`` (``[B]`` valid steps, computed *before*
padding): steps at or after ``lengths[b]`` never contribute to a loss, an
attention weight or a decoded span, and rows with ``lengths[b] == 0`` give
no span and a zero (never NaN) loss contribution. ``forward`` and ``loss``
compile under ``torch.compile(fullgraph=True)``.
"""

from __future__ import annotations

from fastvqa.nn.attention_pool import AttentionPoolOutput, TemporalAttentionPool
from fastvqa.nn.io_head import IOHead
from fastvqa.nn.masking import lengths_to_mask
from fastvqa.nn.span_head import SpanHead

__all__ = ["AttentionPoolOutput", "IOHead", "SpanHead", "TemporalAttentionPool",
           "lengths_to_mask"]
