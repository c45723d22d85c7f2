# SPDX-License-Identifier: Apache-2.0
"""Small torch modules for temporal grounding heads (torch, imported on first use).

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

from fastvqa._lazy import lazy_exports

# public name -> submodule that defines it
_LAZY = {
    "AttentionPoolOutput": "attention_pool",
    "TemporalAttentionPool": "attention_pool",
    "IOHead": "io_head",
    "lengths_to_mask": "masking",
    "SpanHead": "span_head",
}

__all__ = sorted(_LAZY)

__getattr__, __dir__ = lazy_exports(__name__, _LAZY)
