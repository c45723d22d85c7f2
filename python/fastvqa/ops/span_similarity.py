# SPDX-License-Identifier: Apache-2.0
"""Span-to-query cosine similarity (the DeVE-QA self-consistency score)."""

from __future__ import annotations

from typing import Any, Literal, Optional

from fastvqa import _arrays, _checks
from fastvqa._ext import _C
from fastvqa.ops import _limits
from fastvqa.ops._eager import numpy_on_cpu_tensors

_COMMON_DOC = """
    Similarity:
        ``cos(x, y) = x . y / (max(|x|, eps) * max(|y|, eps))``, the definition
        of ``torch.nn.functional.cosine_similarity`` (each norm clamped at
        ``eps`` separately), except that a zero vector's cosine with anything
        is 0 for every ``eps``, ``eps = 0`` included (the limit of the clamped
        formula as ``eps -> 0``; torch gives 0/0 = NaN there). For a span of
        ``n`` frames ``f_i .. f_j``:

        - ``pool="mean_of_cos"``: ``(1/n) sum_t cos(f_t, q)``, the mean of the
          per-frame cosines (prefix sums of the per-frame cosines, O(1) a span;
          each cosine is in [-1, 1], so a span's absolute error is at most
          about ``T * 2**-53`` whatever the other frames hold).
        - ``pool="cos_of_mean"``: ``cos((1/n) sum_t f_t, q)``, the cosine of the
          mean feature (the span's own features are summed, a running sum from
          each start on the band, O(D) a span there; O(n D) for a given span),
          so no frame outside a span enters its value.

        DeVE-QA (deveqa.md §4.3) does not say which pooling its ``R_va`` uses,
        so ``pool`` has no default: name the one you mean. Scores are raw
        cosines in [-1, 1]; apply any rescaling (e.g. ``(R + 1) / 2``) yourself.

    Special values:
        Invalid spans score ``-inf`` (their gradient is 0). A span that covers
        a frame with a NaN or infinite component scores NaN, and so does every
        span of a row whose query has one; other spans of the row are
        unaffected (the bad frame is kept out of every sum and only counted).
        Only finite scores send gradient. Finite input never gives NaN or inf:
        norms and dot products are computed as BLAS ``nrm2`` does, rescaling a
        vector by a power of two when its squares would overflow (features
        above about ``1e154``) or underflow (below about ``1e-154``), and a
        ``cos_of_mean`` span sum that overflows double (features near
        ``1.8e308``) is recomputed scaled. A zero frame or query at
        ``eps = 0`` scores 0 and gets a zero gradient (the cosine is not
        differentiable there); with ``eps > 0`` its gradient is the clamped
        formula's, as in torch. Gradients use the same scaled norms and span
        sums, so they do not overflow or underflow either; each cell's term
        is spread over its frames through difference arrays, so a frame's
        gradient is accurate to about ``T`` ulps of the largest term in its row.

    dtypes and gradients:
        float32 and float64 (mixed inputs promote to float64; integers are
        converted). Sums are accumulated in float64 whatever the dtype.
        float16/bfloat16 torch tensors are computed in float32 and cast back.
        Torch inputs are differentiable with respect to ``frames`` and
        ``query`` (compiled backward kernels on CPU and CUDA, registered with
        ``torch.library.register_autograd``); NumPy inputs are not.
"""


@numpy_on_cpu_tensors(("frames", "query"), ("spans",))
def span_similarity(
    frames: Any, query: Any, spans: Any, *, pool: Literal["mean_of_cos", "cos_of_mean"],
    eps: float = 1e-8
) -> Any:
    """Cosine similarity between given spans of frame features and a query.

    Args:
        frames: ``[B, T, D]`` per-step features (e.g. CLIP image embeddings at
            1 fps), NumPy array or torch tensor, any strides.
        query: ``[B, D]`` query embeddings (e.g. the CLIP text embedding of an
            answer), same kind and device.
        spans: ``[B, S, 2]`` integer inclusive ``(start, end)`` step indices
            (e.g. the output of ``span_argmax``). A span is valid when
            ``0 <= start <= end < T``; anything else, such as the ``(-1, -1)``
            padding of ``span_argmax``, scores ``-inf``.
        pool: ``"mean_of_cos"`` or ``"cos_of_mean"`` (see below).
        eps: norm clamp (``>= 0``), as in ``torch.nn.functional.cosine_similarity``.

    Returns:
        ``[B, S]`` similarities in the input float dtype, same kind and device.

    Example:
        >>> import numpy as np
        >>> frames = np.array([[[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]]])
        >>> query = np.array([[1.0, 0.0]])
        >>> span_similarity(frames, query, np.array([[[0, 0], [0, 1], [-1, -1]]]),
        ...                 pool="mean_of_cos").tolist()
        [[1.0, 0.5, -inf]]
    """
    op = "span_similarity"
    pool = _checks.string(pool, op, "pool")  # its values, and eps >= 0, are checked in C++
    eps = _checks.real(eps, op, "eps")
    if _arrays.any_torch(frames, query, spans):
        _arrays.require_all_torch(op, frames=frames, query=query, spans=spans)
        from fastvqa.ops import _torch_span_similarity as T

        return T.span_similarity(frames, query, spans, pool, 1, None, None, eps)
    f, q = _arrays.numpy_common_float(op, frames=frames, query=query)
    s = _arrays.numpy_index(spans, op, "spans")
    return _C.span_similarity(f, q, s, pool, 1, None, None, eps, 0, _arrays.numpy_alloc)


@numpy_on_cpu_tensors(("frames", "query"), ("lengths",))
def span_similarity_all(
    frames: Any,
    query: Any,
    *,
    pool: Literal["mean_of_cos", "cos_of_mean"],
    min_len: int = 1,
    max_len: Optional[int] = None,
    lengths: Any = None,
    eps: float = 1e-8,
) -> Any:
    """Cosine similarity of every span of frames to the query, banded.

    The band has one cell per (start, length): the span ``[i, i + d]``
    (inclusive steps, ``n = d + 1`` frames) is at ``[b, i, d]``. This is the
    layout ``span_scores`` returns and ``top_spans`` decodes.

    Args:
        frames: ``[B, T, D]`` per-step features, NumPy array or torch tensor.
        query: ``[B, D]`` query embeddings, same kind and device.
        pool: ``"mean_of_cos"`` or ``"cos_of_mean"`` (see below).
        min_len: shortest span in steps (``>= 1``).
        max_len: longest span in steps (``>= min_len``); ``None`` for ``T``.
            The band is ``W = min(max_len, T)`` wide: no span is longer than
            its row, so a larger ``max_len`` (even ``2**70``) means no limit.
        lengths: optional ``[B]`` integer valid lengths in ``[0, T]``; steps at
            or after ``lengths[b]`` are padding, never part of a span and never
            read (they may hold anything) and get a zero gradient.
        eps: norm clamp (``>= 0``), as in ``torch.nn.functional.cosine_similarity``.

    Returns:
        ``[B, T, W]`` with ``W = min(max_len, T)`` (or ``T``), in the input float dtype.
        Cells that are not a valid span (``n < min_len``, ``n > max_len``,
        ``i + d >= lengths[b]``) are ``-inf``.

    Example:
        >>> import numpy as np
        >>> frames = np.array([[[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]]])
        >>> band = span_similarity_all(frames, np.array([[1.0, 0.0]]), pool="mean_of_cos",
        ...                            max_len=2)
        >>> band.tolist()  # band[0, i, d]: the span [i, i + d]
        [[[1.0, 0.5], [0.0, 0.35355339059327373], [0.7071067811865475, -inf]]]
    """
    op = "span_similarity_all"
    pool = _checks.string(pool, op, "pool")  # its values, and eps >= 0, are checked in C++
    eps = _checks.real(eps, op, "eps")
    min_len, max_len = _limits.span_lengths(min_len, max_len, op)
    if _arrays.any_torch(frames, query, lengths):
        _arrays.require_all_torch(op, frames=frames, query=query, lengths=lengths)
        from fastvqa.ops import _torch_span_similarity as T

        return T.span_similarity(frames, query, None, pool, min_len, max_len, lengths, eps)
    f, q = _arrays.numpy_common_float(op, frames=frames, query=query)
    lens = None if lengths is None else _arrays.numpy_index(lengths, op, "lengths")
    return _C.span_similarity(f, q, None, pool, min_len, max_len, lens, eps, 0,
                              _arrays.numpy_alloc)


span_similarity.__doc__ += _COMMON_DOC
span_similarity_all.__doc__ += _COMMON_DOC

