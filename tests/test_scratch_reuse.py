# SPDX-License-Identifier: Apache-2.0
"""Kernels keep per-thread scratch from call to call (csrc/fastvqa/common/
scratch.h). A call must never see what an earlier one left there: calls of
shrinking and growing rows, careful rows (infinite values) beside plain ones
and rows cut short by ``lengths`` follow each other here, each checked
against the float64 references of tests/reference."""

from __future__ import annotations

import numpy as np
import pytest

import fastvqa
import fastvqa.ops as O
from fastvqa import _C
from fastvqa._arrays import numpy_alloc
from tests.reference.span_argmax import span_argmax_ref
from tests.reference.span_scores import span_scores_grad_ref, span_scores_ref


def _rows(rng, batch, steps, special: bool):
    x = rng.standard_normal((batch, steps))
    if special:
        x[0, steps // 3] = np.inf  # a careful row: sums with an infinite term
        x[-1, steps // 2] = -1e300
    return x


# (rows, steps, max_len, reduce, special values, lengths given)
_SEQUENCE = [(3, 900, 16, "contrast", True, False), (2, 7, 16, "sum", False, True),
             (4, 400, 9, "mean", False, False), (1, 1200, 5, "sum", True, True),
             (5, 30, 30, "contrast", False, True), (2, 1500, 12, "mean", False, False)]


@pytest.mark.parametrize("threads", [1, 2])
def test_span_scores_forward_and_backward_after_other_calls(threads):
    rng = np.random.default_rng(11)
    before = fastvqa.get_num_threads()
    fastvqa.set_num_threads(threads)
    try:
        for batch, steps, max_len, reduce, special, with_lengths in _SEQUENCE:
            x = _rows(rng, batch, steps, special)
            lengths = rng.integers(1, steps + 1, batch) if with_lengths else None
            band = O.span_scores(x, reduce=reduce, max_len=max_len, lengths=lengths)
            np.testing.assert_allclose(band, span_scores_ref(x, reduce, 1, max_len, lengths),
                                       rtol=1e-9, atol=1e-9)
            g = rng.standard_normal(band.shape)
            g[~np.isfinite(band)] = 0
            grad = _C.span_scores_backward(g, reduce, 1, lengths, 0, numpy_alloc)
            np.testing.assert_allclose(grad, span_scores_grad_ref(g, reduce, 1, lengths),
                                       rtol=1e-9, atol=1e-9)
    finally:
        fastvqa.set_num_threads(before)


@pytest.mark.parametrize("k", [1, 3])
def test_span_argmax_after_other_calls(k):
    rng = np.random.default_rng(12)
    for batch, steps, max_len, _, special, with_lengths in _SEQUENCE:
        start, end = _rows(rng, batch, steps, special), _rows(rng, batch, steps, False)
        if special:
            start[0, 1] = np.nan
        lengths = rng.integers(1, steps + 1, batch) if with_lengths else None
        got = O.span_argmax(start, end, max_len=max_len, k=None if k == 1 else k,
                            lengths=lengths)
        spans, scores = span_argmax_ref(start, end, max_len=max_len, topk=k, lengths=lengths)
        np.testing.assert_array_equal(np.asarray(got.spans).reshape(spans.shape), spans)
        np.testing.assert_array_equal(np.asarray(got.scores).reshape(scores.shape), scores)
