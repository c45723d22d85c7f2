# SPDX-License-Identifier: Apache-2.0
"""Tests for ``fastvqa.ops.span_argmax`` against the plain-loop reference.

The tie-heavy property tests draw scores from a small set of small integers
and halves (plus NaN and -inf), so ties are everywhere and every sum is exact
in float32: the returned spans must equal the reference's *exactly*, which
pins down the tie rule (higher score, then smaller start, then smaller end).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from fastvqa.ops import span_argmax

from tests.conftest import DEVICES, to_np
from tests.reference.span_argmax import hf_style_best_span, log_softmax, span_argmax_ref

SETTINGS = dict(
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)

# Exactly representable in float16, bfloat16, float32 and float64; every
# pairwise sum is exact too, so float32 and float64 rank identically.
TIE_VALUES = [-3.0, -2.0, -1.5, -1.0, -0.5, 0.0, 0.5, 1.0, 2.0, 3.0]
SPECIAL_VALUES = [math.nan, -math.inf]

NP_LAYOUTS = ["contiguous", "transposed", "every_other_column", "reversed", "every_other_row"]
TORCH_LAYOUTS = ["contiguous", "transposed", "every_other_column", "every_other_row"]

# A value a kernel reading the wrong element would pick up (it beats anything
# in TIE_VALUES, so a stride bug changes the answer).
GARBAGE = 100.0


# --------------------------------------------------------------------------- #
# Helpers
# --------------------------------------------------------------------------- #


def np_layout(x: np.ndarray, layout: str) -> np.ndarray:
    """``x`` (B, T) with the same values but a different memory layout."""
    B, T = x.shape
    if layout == "contiguous":
        out = np.ascontiguousarray(x)
    elif layout == "transposed":  # a (T, B) C-array, viewed transposed
        out = np.ascontiguousarray(x.T).T
    elif layout == "every_other_column":
        buf = np.full((B, 2 * T), GARBAGE, dtype=x.dtype)
        buf[:, ::2] = x
        out = buf[:, ::2]
    elif layout == "reversed":  # negative column stride
        out = np.ascontiguousarray(x[:, ::-1])[:, ::-1]
    elif layout == "every_other_row":
        buf = np.full((2 * B, T), GARBAGE, dtype=x.dtype)
        buf[::2] = x
        out = buf[::2]
    else:  # pragma: no cover
        raise AssertionError(layout)
    np.testing.assert_array_equal(out, x)
    return out


def torch_layout(x: np.ndarray, layout: str, dtype: torch.dtype, device: str = "cpu"):
    """``x`` as a torch tensor on ``device`` with a given memory layout."""
    B, T = x.shape
    t = torch.from_numpy(np.ascontiguousarray(x)).to(dtype=dtype, device=device)
    if layout == "contiguous":
        out = t.contiguous()
    elif layout == "transposed":
        out = t.t().contiguous().t()
    elif layout == "every_other_column":
        buf = torch.full((B, 2 * T), GARBAGE, dtype=dtype, device=device)
        buf[:, ::2] = t
        out = buf[:, ::2]
    elif layout == "every_other_row":
        buf = torch.full((2 * B, T), GARBAGE, dtype=dtype, device=device)
        buf[::2] = t
        out = buf[::2]
    else:  # pragma: no cover
        raise AssertionError(layout)
    assert torch.equal(out.isnan(), t.isnan())
    assert torch.equal(torch.nan_to_num(out), torch.nan_to_num(t))
    return out


def check_valid_spans(spans, scores, s, e, max_len, min_len, lengths, compute_dtype):
    """Structural checks that need no reference: every returned span is valid,
    its score is ``start[i] + end[j]`` in the compute dtype, scores are
    non-increasing, spans are distinct, and padding is (-1, -1)/-inf at the end."""
    B, topk = scores.shape
    T = s.shape[1]
    for b in range(B):
        seen = set()
        filled = False
        for k in range(topk):
            i, j = (int(v) for v in spans[b, k])
            if i == -1 and j == -1:
                filled = True
                assert scores[b, k] == -np.inf
                continue
            assert not filled, "a real span after the padding"
            assert 0 <= i <= j < T
            n = j - i + 1
            assert n >= min_len and (max_len is None or n <= max_len)
            if lengths is not None:
                assert j < int(lengths[b])
            assert (i, j) not in seen
            seen.add((i, j))
            expect = compute_dtype(s[b, i]) + compute_dtype(e[b, j])
            assert not np.isnan(expect)
            assert scores[b, k] == expect, (b, k, i, j, scores[b, k], expect)
        finite = scores[b]
        assert np.all(finite[:-1] >= finite[1:]), finite


@st.composite
def problems(draw, values, max_B=5, max_T=40):
    """(start, end, max_len, min_len, topk, lengths) as float64 NumPy arrays."""
    B = draw(st.integers(0, max_B))
    T = draw(st.integers(0, max_T))
    min_len = draw(st.integers(1, 4))
    max_len = draw(st.one_of(st.none(), st.integers(min_len, max(min_len, T + 3))))
    # Mostly small, sometimes more than there are valid spans (T * (T + 1) / 2).
    topk = draw(st.one_of(st.integers(1, 8), st.integers(1, 64)))
    lengths = draw(st.one_of(st.none(), st.lists(st.integers(0, T), min_size=B, max_size=B)))
    if lengths is not None:
        lengths = np.array(lengths, dtype=np.int64).reshape(B)
    start = draw(arrays(np.float64, (B, T), elements=values))
    end = draw(arrays(np.float64, (B, T), elements=values))
    return start, end, max_len, min_len, topk, lengths


# Plain ties; ties with a sprinkling of NaN/-inf; and a tiny alphabet heavy in
# -inf and NaN, so that whole stretches of spans tie at -inf.
# Spans ending at a -inf end all tie at -inf; the smallest start must come
# first even though start[1] is the largest start score.
NEG_INF_END_TIES = (
    np.array([[0.0, 1.0, 0.0]]), np.full((1, 3), -np.inf), None, 1, 3, None,
)

tie_problems = st.one_of(
    problems(st.sampled_from(TIE_VALUES)),
    problems(st.sampled_from(TIE_VALUES + SPECIAL_VALUES)),
    problems(st.sampled_from([0.0, 1.0, -math.inf, -math.inf, math.nan])),
)


# --------------------------------------------------------------------------- #
# Property tests: tie-heavy inputs, exact spans
# --------------------------------------------------------------------------- #


@settings(max_examples=200, **SETTINGS)
@given(
    prob=tie_problems,
    dtype=st.sampled_from([np.float32, np.float64]),
    layout_s=st.sampled_from(NP_LAYOUTS),
    layout_e=st.sampled_from(NP_LAYOUTS),
    len_dtype=st.sampled_from([np.int64, np.int32]),
)
@example(
    prob=NEG_INF_END_TIES, dtype=np.float64, layout_s="contiguous", layout_e="contiguous",
    len_dtype=np.int64,
)
def test_tie_heavy_numpy_matches_reference(prob, dtype, layout_s, layout_e, len_dtype):
    start, end, max_len, min_len, topk, lengths = prob
    s = np_layout(start.astype(dtype), layout_s)
    e = np_layout(end.astype(dtype), layout_e)
    s_before, e_before = s.copy(), e.copy()
    lens = None if lengths is None else lengths.astype(len_dtype)

    spans, scores = span_argmax(s, e, max_len=max_len, min_len=min_len, k=topk, lengths=lens)

    ref_spans, ref_scores = span_argmax_ref(start, end, max_len, min_len, topk, lengths)
    assert isinstance(spans, np.ndarray) and isinstance(scores, np.ndarray)
    assert spans.dtype == np.int64 and scores.dtype == dtype
    assert spans.shape == (start.shape[0], topk, 2) and scores.shape == (start.shape[0], topk)
    np.testing.assert_array_equal(spans, ref_spans)
    np.testing.assert_array_equal(scores.astype(np.float64), ref_scores)
    # Inputs are not written to.
    np.testing.assert_array_equal(s, s_before)
    np.testing.assert_array_equal(e, e_before)


@settings(max_examples=150, **SETTINGS)
@given(
    prob=tie_problems,
    dtype=st.sampled_from([torch.float32, torch.float64]),
    layout_s=st.sampled_from(TORCH_LAYOUTS),
    layout_e=st.sampled_from(TORCH_LAYOUTS),
    len_dtype=st.sampled_from([torch.int64, torch.int32]),
)
@example(
    prob=NEG_INF_END_TIES, dtype=torch.float32, layout_s="contiguous",
    layout_e="contiguous", len_dtype=torch.int64,
)
def test_tie_heavy_torch_matches_reference(prob, dtype, layout_s, layout_e, len_dtype):
    start, end, max_len, min_len, topk, lengths = prob
    s = torch_layout(start, layout_s, dtype)
    e = torch_layout(end, layout_e, dtype)
    lens = None if lengths is None else torch.from_numpy(lengths).to(len_dtype)

    spans, scores = span_argmax(s, e, max_len=max_len, min_len=min_len, k=topk, lengths=lens)

    ref_spans, ref_scores = span_argmax_ref(start, end, max_len, min_len, topk, lengths)
    assert isinstance(spans, torch.Tensor) and isinstance(scores, torch.Tensor)
    assert spans.dtype == torch.int64 and scores.dtype == dtype
    assert spans.shape == (start.shape[0], topk, 2) and scores.shape == (start.shape[0], topk)
    np.testing.assert_array_equal(spans.numpy(), ref_spans)
    np.testing.assert_array_equal(scores.numpy().astype(np.float64), ref_scores)


@settings(max_examples=60, **SETTINGS)
@given(
    prob=tie_problems,
    dtype=st.sampled_from([torch.float16, torch.bfloat16]),
    layout=st.sampled_from(TORCH_LAYOUTS),
)
def test_tie_heavy_torch_half_precision(prob, dtype, layout):
    """float16/bfloat16 compute in float32; every TIE_VALUES sum is exact in
    both, so spans and (cast-back) scores match the reference exactly."""
    start, end, max_len, min_len, topk, lengths = prob
    s = torch_layout(start, layout, dtype)
    e = torch_layout(end, layout, dtype)
    lens = None if lengths is None else torch.from_numpy(lengths)

    spans, scores = span_argmax(s, e, max_len=max_len, min_len=min_len, k=topk, lengths=lens)

    ref_spans, ref_scores = span_argmax_ref(start, end, max_len, min_len, topk, lengths)
    assert spans.dtype == torch.int64 and scores.dtype == dtype
    np.testing.assert_array_equal(spans.numpy(), ref_spans)
    np.testing.assert_array_equal(scores.float().numpy().astype(np.float64), ref_scores)


# --------------------------------------------------------------------------- #
# Property tests: general floats
# --------------------------------------------------------------------------- #


def general_values(width):
    finite = st.floats(-1e4, 1e4, allow_nan=False, allow_infinity=False, width=width)
    return st.one_of(
        finite,
        st.one_of(finite, finite, finite, st.sampled_from(SPECIAL_VALUES)),
    )


@st.composite
def general_problems(draw):
    width = draw(st.sampled_from([32, 64]))
    prob = draw(problems(general_values(width)))
    return width, prob


@settings(max_examples=150, **SETTINGS)
@given(
    wp=general_problems(),
    kind=st.sampled_from(["numpy", "torch"]),
    layout=st.sampled_from(TORCH_LAYOUTS),
)
def test_general_floats(wp, kind, layout):
    width, (start, end, max_len, min_len, topk, lengths) = wp
    np_dtype = np.float32 if width == 32 else np.float64
    if kind == "numpy":
        s = np_layout(start.astype(np_dtype), layout)
        e = np_layout(end.astype(np_dtype), layout)
        lens = lengths
    else:
        t_dtype = torch.float32 if width == 32 else torch.float64
        s = torch_layout(start, layout, t_dtype)
        e = torch_layout(end, layout, t_dtype)
        lens = None if lengths is None else torch.from_numpy(lengths)

    spans, scores = span_argmax(s, e, max_len=max_len, min_len=min_len, k=topk, lengths=lens)
    spans, scores = to_np(spans), to_np(scores)
    assert scores.dtype == np_dtype

    s32, e32 = start.astype(np_dtype), end.astype(np_dtype)
    check_valid_spans(spans, scores, s32, e32, max_len, min_len, lengths, np_dtype)

    # The reference in float64: scores agree within the compute dtype's rounding.
    ref_spans, ref_scores = span_argmax_ref(s32, e32, max_len, min_len, topk, lengths)
    np.testing.assert_array_equal(np.isneginf(scores), np.isneginf(ref_scores))
    np.testing.assert_array_equal(spans == -1, ref_spans == -1)
    fin = np.isfinite(ref_scores)
    tol = 1e-6 if width == 32 else 1e-12
    np.testing.assert_allclose(scores[fin], ref_scores[fin], rtol=tol, atol=tol * 1e4)

    # Mirroring the compute dtype, the multiset of top-k scores is unique, so
    # scores match exactly; the spans then match exactly too, by the tie rule.
    m_spans, m_scores = span_argmax_ref(
        s32, e32, max_len, min_len, topk, lengths, compute_dtype=np_dtype
    )
    np.testing.assert_array_equal(scores.astype(np.float64), m_scores)
    np.testing.assert_array_equal(spans, m_spans)


# --------------------------------------------------------------------------- #
# Agreement with the usual HuggingFace-style decoding
# --------------------------------------------------------------------------- #


@settings(max_examples=100, **SETTINGS)
@given(
    seed=st.integers(0, 2**32 - 1),
    B=st.integers(1, 4),
    T=st.integers(1, 40),
    max_len=st.one_of(st.none(), st.integers(1, 43)),
    scale=st.sampled_from([0.1, 1.0, 5.0]),
)
def test_top1_equals_hf_style_decoding(seed, B, T, max_len, scale):
    rng = np.random.default_rng(seed)
    start_logits = rng.normal(size=(B, T)) * scale
    end_logits = rng.normal(size=(B, T)) * scale
    start = log_softmax(start_logits)
    end = log_softmax(end_logits)

    # Skip the (measure-zero) draws whose best two valid spans nearly tie.
    i, j = np.triu_indices(T)
    ok = np.ones_like(i, dtype=bool) if max_len is None else (j - i + 1 <= max_len)
    for b in range(B):
        sums = np.sort(start[b, i[ok]] + end[b, j[ok]])[::-1]
        if sums.size > 1 and sums[0] - sums[1] < 1e-9:
            return

    spans, scores = span_argmax(start, end, max_len=max_len)
    for b in range(B):
        (hi, hj), log_prob = hf_style_best_span(start_logits[b], end_logits[b], max_len)
        assert tuple(spans[b]) == (hi, hj)
        assert scores[b] == pytest.approx(log_prob, rel=1e-9, abs=1e-9)
    # And against the explicit-enumeration reference.
    ref_spans, ref_scores = span_argmax_ref(start, end, max_len)
    np.testing.assert_array_equal(spans, ref_spans[:, 0])
    np.testing.assert_allclose(scores, ref_scores[:, 0], rtol=1e-12, atol=1e-12)


def test_hf_style_decoding_tie_rule_is_row_major_first():
    """With exact ties HF's flat argmax returns the first maximum in row-major
    order: smaller start, then smaller end -- the same rule as span_argmax."""
    logits = np.zeros(5)
    (i, j), _ = hf_style_best_span(logits, logits)
    spans, _ = span_argmax(log_softmax(logits), log_softmax(logits))  # one row
    assert (i, j) == (0, 0) == tuple(spans)
    start = np.array([0.0, 2.0, 0.0, 2.0, 0.0])
    end = np.array([0.0, 0.0, 1.0, 0.0, 1.0])
    (i, j), _ = hf_style_best_span(start, end, max_len=3)
    spans, _ = span_argmax(log_softmax(start), log_softmax(end), max_len=3)
    assert (i, j) == (1, 2) == tuple(spans)


# --------------------------------------------------------------------------- #
# Longer rows (block boundaries, long windows) against a dense reference
# --------------------------------------------------------------------------- #


def tie_heavy_matrix(rng, B, T, special=0.1):
    """(B, T) draws from TIE_VALUES, with a fraction ``special`` of NaN/-inf."""
    vals = np.array(TIE_VALUES + SPECIAL_VALUES)
    p = [(1 - special) / len(TIE_VALUES)] * len(TIE_VALUES)
    p += [special / len(SPECIAL_VALUES)] * len(SPECIAL_VALUES)
    return rng.choice(vals, size=(B, T), p=p)


def dense_ref(start, end, max_len, min_len, topk, lengths):
    """Vectorised O(T^2) reference (same contract as span_argmax_ref)."""
    B, T = start.shape
    spans = np.full((B, topk, 2), -1, dtype=np.int64)
    scores = np.full((B, topk), -np.inf)
    i, j = np.triu_indices(T)
    n = j - i + 1
    for b in range(B):
        L = T if lengths is None else int(lengths[b])
        keep = (n >= min_len) & (j < L)
        if max_len is not None:
            keep &= n <= max_len
        ii, jj = i[keep], j[keep]
        sc = start[b, ii] + end[b, jj]
        good = ~np.isnan(sc)
        ii, jj, sc = ii[good], jj[good], sc[good]
        order = np.lexsort((jj, ii, -sc))[:topk]
        spans[b, : order.size, 0] = ii[order]
        spans[b, : order.size, 1] = jj[order]
        scores[b, : order.size] = sc[order]
    return spans, scores


@pytest.mark.parametrize("T", [63, 64, 65, 257, 1000])
@pytest.mark.parametrize("max_len", [None, 1, 17, 300])
@pytest.mark.parametrize("topk", [1, 9])
def test_long_rows_tie_heavy(T, max_len, topk):
    rng = np.random.default_rng(T * 1000 + (max_len or 0) * 10 + topk)
    B = 3
    start = tie_heavy_matrix(rng, B, T)
    end = tie_heavy_matrix(rng, B, T)
    lengths = np.array([T, T // 2, rng.integers(0, T + 1)])
    min_len = 2 if max_len != 1 else 1
    ref = dense_ref(start, end, max_len, min_len, topk, lengths)
    for dtype in (np.float32, np.float64):
        spans, scores = span_argmax(
            start.astype(dtype), end.astype(dtype), max_len=max_len, min_len=min_len,
            k=topk, lengths=lengths,
        )
        np.testing.assert_array_equal(spans, ref[0])
        np.testing.assert_array_equal(scores.astype(np.float64), ref[1])


def test_dense_ref_agrees_with_loop_ref():
    rng = np.random.default_rng(0)
    for _ in range(20):
        B, T = 3, int(rng.integers(0, 15))
        start = rng.choice(np.array(TIE_VALUES + SPECIAL_VALUES), size=(B, T))
        end = rng.choice(np.array(TIE_VALUES + SPECIAL_VALUES), size=(B, T))
        lengths = rng.integers(0, T + 1, size=B)
        args = (start, end, int(rng.integers(2, 6)), 2, int(rng.integers(1, 10)), lengths)
        a, b = dense_ref(*args), span_argmax_ref(*args)
        np.testing.assert_array_equal(a[0], b[0])
        np.testing.assert_array_equal(a[1], b[1])


# --------------------------------------------------------------------------- #
# Hand-computed cases
# --------------------------------------------------------------------------- #

NEG = -np.inf
FILL = [-1, -1]


@pytest.mark.parametrize(
    "start, end, kwargs, exp_spans, exp_scores",
    [
        # (1, 3): 5 + 7 = 12 is the best overall.
        ([[0, 5, 0, 0]], [[0, 0, 0, 7]], {}, [[1, 3]], [12]),
        # then the three spans ending at 3 with a 0 start (ties: smaller start first)
        (
            [[0, 5, 0, 0]], [[0, 0, 0, 7]], {"k": 6},
            [[1, 3], [0, 3], [2, 3], [3, 3], [1, 1], [1, 2]], [12, 7, 7, 7, 5, 5],
        ),
        # max_len 2: windows (0,0)0 (0,1)0 (1,1)5 (1,2)5 (2,2)0 (2,3)7 (3,3)7
        (
            [[0, 5, 0, 0]], [[0, 0, 0, 7]], {"max_len": 2, "k": 5},
            [[2, 3], [3, 3], [1, 1], [1, 2], [0, 0]], [7, 7, 5, 5, 0],
        ),
        # exactly length 2: (0,1)0 (1,2)5 (2,3)7, then padding
        (
            [[0, 5, 0, 0]], [[0, 0, 0, 7]], {"max_len": 2, "min_len": 2, "k": 4},
            [[2, 3], [1, 2], [0, 1], FILL], [7, 5, 0, NEG],
        ),
        # min_len 3 excludes (1, 1) and (1, 2) and (2, 3), (3, 3)
        (
            [[0, 5, 0, 0]], [[0, 0, 0, 7]], {"min_len": 3, "k": 4},
            [[1, 3], [0, 3], [0, 2], FILL], [12, 7, 0, NEG],
        ),
        # max_len 1: only (i, i)
        ([[0, 5, 0, 0]], [[0, 0, 0, 7]], {"max_len": 1, "k": 2}, [[3, 3], [1, 1]], [7, 5]),
        # all tied: row-major order of the upper triangle
        (
            [[0, 0, 0]], [[0, 0, 0]], {"k": 7},
            [[0, 0], [0, 1], [0, 2], [1, 1], [1, 2], [2, 2], FILL], [0, 0, 0, 0, 0, 0, NEG],
        ),
        # all tied, band of 2
        (
            [[0, 0, 0]], [[0, 0, 0]], {"k": 6, "max_len": 2},
            [[0, 0], [0, 1], [1, 1], [1, 2], [2, 2], FILL], [0, 0, 0, 0, 0, NEG],
        ),
        # lengths cut the row
        (
            [[0, 0, 0]], [[0, 0, 9]], {"k": 4, "lengths": [2]},
            [[0, 0], [0, 1], [1, 1], FILL], [0, 0, 0, NEG],
        ),
        # a late start cannot pair with an earlier end
        ([[0, 0, 9]], [[8, 0, 0]], {}, [[2, 2]], [9]),
        # NaN start/end make steps unusable: only (1, 1) is left
        (
            [[np.nan, 1, 0]], [[5, 0, np.nan]], {"k": 2},
            [[1, 1], FILL], [1, NEG],
        ),
        # -inf spans are valid and rank last, ordered by the tie rule
        (
            [[NEG, 0]], [[0, NEG]], {"k": 4},
            [[0, 0], [0, 1], [1, 1], FILL], [NEG, NEG, NEG, NEG],
        ),
        (
            [[NEG, 1]], [[2, 3]], {"k": 4},
            [[1, 1], [0, 0], [0, 1], FILL], [4, NEG, NEG, NEG],
        ),
        # Every span ending at a -inf end ties at -inf, whatever the start
        # score: among them the smaller start wins, not the larger start score.
        (
            [[0, 1, 0]], [[NEG, NEG, NEG]], {"k": 3},
            [[0, 0], [0, 1], [0, 2]], [NEG, NEG, NEG],
        ),
        (
            [[0, 0, 1]], [[0, NEG, NEG]], {"k": 4},
            [[0, 0], [0, 1], [0, 2], [1, 1]], [0, NEG, NEG, NEG],
        ),
        (
            [[0, 0, 0, 1]], [[0, 0, NEG, NEG]], {"k": 5},
            [[0, 0], [0, 1], [1, 1], [0, 2], [0, 3]], [0, 0, 0, NEG, NEG],
        ),
        # all-NaN row: nothing
        ([[np.nan, np.nan]], [[1, 2]], {"k": 2}, [FILL, FILL], [NEG, NEG]),
        # max_len larger than T is the same as no limit
        ([[1, 0]], [[0, 1]], {"max_len": 10}, [[0, 1]], [2]),
        # min_len larger than T: nothing
        ([[1, 0]], [[0, 1]], {"min_len": 3}, [FILL], [NEG]),
    ],
    ids=[
        "best-overall", "top6-ties-by-start", "max_len2-top5", "exactly-len2-padded",
        "min_len3", "max_len1", "all-tied-top7", "all-tied-band2", "lengths-cut",
        "no-backward-span", "nan-steps-unusable", "neg-inf-spans-rank-last",
        "finite-then-neg-inf", "neg-inf-end-ties-smaller-start", "neg-inf-end-ties-top4",
        "neg-inf-end-ties-mixed", "all-nan-row", "max_len-over-T", "min_len-over-T",
    ],
)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_hand_computed(start, end, kwargs, exp_spans, exp_scores, dtype):
    start = np.array(start, dtype=dtype)
    end = np.array(end, dtype=dtype)
    if "lengths" in kwargs:
        kwargs = dict(kwargs, lengths=np.array(kwargs["lengths"]))
    kwargs = {"k": 1, **kwargs}  # the expected values have a k axis
    spans, scores = span_argmax(start, end, **kwargs)
    np.testing.assert_array_equal(spans, np.array([exp_spans], dtype=np.int64))
    np.testing.assert_array_equal(scores, np.array([exp_scores], dtype=dtype))
    # The reference agrees on all of them.
    r_spans, r_scores = span_argmax_ref(start, end, **_ref_kwargs(kwargs))
    np.testing.assert_array_equal(r_spans, spans)
    np.testing.assert_array_equal(r_scores, scores.astype(np.float64))


def test_lengths_zero_row_is_filled():
    start = np.array([[1.0, 2.0, 3.0], [1.0, 2.0, 3.0]])
    spans, scores = span_argmax(start, start, k=2, lengths=np.array([0, 3]))
    np.testing.assert_array_equal(spans[0], [FILL, FILL])
    np.testing.assert_array_equal(scores[0], [NEG, NEG])
    np.testing.assert_array_equal(spans[1], [[2, 2], [1, 2]])
    np.testing.assert_array_equal(scores[1], [6.0, 5.0])


@pytest.mark.parametrize("kind", ["numpy", "torch"])
@pytest.mark.parametrize("topk", [1, 3])
def test_empty_time_axis(kind, topk):
    x = np.zeros((3, 0))
    if kind == "torch":
        x = torch.from_numpy(x)
    spans, scores = span_argmax(x, x, k=topk)
    spans, scores = to_np(spans), to_np(scores)
    assert spans.shape == (3, topk, 2) and scores.shape == (3, topk)
    assert spans.dtype == np.int64 and scores.dtype == np.float64
    assert np.all(spans == -1) and np.all(scores == -np.inf)


@pytest.mark.parametrize("kind", ["numpy", "torch"])
@pytest.mark.parametrize("T", [0, 5])
@pytest.mark.parametrize("topk", [1, 4])
def test_empty_batch(kind, T, topk):
    x = np.zeros((0, T), dtype=np.float32)
    if kind == "torch":
        x = torch.from_numpy(x)
    lengths = np.zeros((0,), dtype=np.int64)
    lengths = torch.from_numpy(lengths) if kind == "torch" else lengths
    for lens in (None, lengths):
        spans, scores = span_argmax(x, x, k=topk, lengths=lens)
        assert type(spans) is type(x) and type(scores) is type(x)
        spans, scores = to_np(spans), to_np(scores)
        assert spans.shape == (0, topk, 2) and spans.dtype == np.int64
        assert scores.shape == (0, topk) and scores.dtype == np.float32


# --------------------------------------------------------------------------- #
# dtypes and output kinds
# --------------------------------------------------------------------------- #


def test_numpy_integer_inputs_are_float64():
    start = np.array([[0, 5, 0, 0]], dtype=np.int32)
    end = np.array([[0, 0, 0, 7]], dtype=np.int64)
    spans, scores = span_argmax(start, end)
    assert scores.dtype == np.float64
    np.testing.assert_array_equal(spans, [[1, 3]])
    np.testing.assert_array_equal(scores, [12.0])


def test_numpy_mixed_float_dtypes_promote_to_float64():
    start = np.array([[0.1, 0.2]], dtype=np.float32)
    end = np.array([[0.1, 0.2]], dtype=np.float64)
    spans, scores = span_argmax(start, end)
    assert scores.dtype == np.float64
    np.testing.assert_array_equal(spans, [[1, 1]])
    assert scores[0] == np.float64(np.float32(0.2)) + 0.2


def test_python_lists_are_accepted_as_numpy():
    spans, scores = span_argmax([[0, 5, 0, 0]], [[0, 0, 0, 7]], lengths=[3])
    assert isinstance(spans, np.ndarray) and isinstance(scores, np.ndarray)
    np.testing.assert_array_equal(spans, [[1, 1]])
    np.testing.assert_array_equal(scores, [5.0])


def test_torch_outputs_and_dtypes():
    start = torch.tensor([[0.0, 5.0, 0.0, 0.0]])
    end = torch.tensor([[0.0, 0.0, 0.0, 7.0]])
    spans, scores = span_argmax(start, end, k=2)
    assert isinstance(spans, torch.Tensor) and isinstance(scores, torch.Tensor)
    assert spans.dtype == torch.int64 and scores.dtype == torch.float32
    assert spans.device == start.device == scores.device
    assert spans.tolist() == [[[1, 3], [0, 3]]]
    assert scores.tolist() == [[12.0, 7.0]]


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float32, torch.float64])
def test_torch_scores_dtype_preserved(dtype):
    start = torch.tensor([[0.0, 5.0, 0.0, 0.0]], dtype=dtype)
    end = torch.tensor([[0.0, 0.0, 0.0, 7.0]], dtype=dtype)
    spans, scores = span_argmax(start, end, k=11)  # 10 valid spans
    assert scores.dtype == dtype and spans.dtype == torch.int64
    assert spans[0, 0].tolist() == [1, 3] and scores[0, 0].item() == 12.0
    assert spans[0, -1].tolist() == [-1, -1] and scores[0, -1].item() == -math.inf


def test_torch_half_scores_are_float32_sums_cast_back():
    """float16 inputs are summed in float32 and the score cast to float16."""
    torch.manual_seed(0)
    start = (torch.randn(4, 30) * 10).half()
    end = (torch.randn(4, 30) * 10).half()
    spans, scores = span_argmax(start, end, k=5, max_len=7)
    m_spans, m_scores = span_argmax_ref(
        start.float().numpy(), end.float().numpy(), 7, 1, 5, compute_dtype=np.float32
    )
    np.testing.assert_array_equal(spans.numpy(), m_spans)
    expect = torch.from_numpy(m_scores.astype(np.float32)).half()
    assert torch.equal(scores, expect)


def test_torch_integer_inputs_use_default_dtype():
    start = torch.tensor([[0, 5, 0, 0]])
    end = torch.tensor([[0, 0, 0, 7]], dtype=torch.int32)
    spans, scores = span_argmax(start, end)
    assert scores.dtype == torch.get_default_dtype()
    assert spans.tolist() == [[1, 3]] and scores.tolist() == [12.0]


def test_torch_integer_inputs_follow_changed_default_dtype():
    old = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    try:
        spans, scores = span_argmax(torch.tensor([[1, 2]]), torch.tensor([[3, 4]]))
    finally:
        torch.set_default_dtype(old)
    assert scores.dtype == torch.float64
    assert spans.tolist() == [[1, 1]] and scores.tolist() == [6.0]


def test_torch_requires_grad_inputs():
    torch.manual_seed(1)
    start = torch.randn(3, 12, requires_grad=True)
    end = torch.randn(3, 12, requires_grad=True)
    spans, scores = span_argmax(start, end, k=4, max_len=5)
    ref_spans, ref_scores = span_argmax(start.detach(), end.detach(), k=4, max_len=5)
    assert torch.equal(spans, ref_spans)
    assert torch.equal(scores.detach(), ref_scores)
    assert start.grad is None and end.grad is None
    # The winning score is start[i] + end[j]: gather it the differentiable way.
    i, j = spans[:, 0, 0], spans[:, 0, 1]
    best = start.gather(1, i[:, None]) + end.gather(1, j[:, None])
    assert torch.equal(best.detach()[:, 0], scores.detach()[:, 0])


def test_outputs_do_not_alias_inputs():
    start = np.zeros((2, 3))
    end = np.zeros((2, 3))
    spans, scores = span_argmax(start, end, k=2)
    scores[...] = 42.0
    spans[...] = 7
    np.testing.assert_array_equal(start, 0.0)
    np.testing.assert_array_equal(end, 0.0)


# --------------------------------------------------------------------------- #
# Errors
# --------------------------------------------------------------------------- #

X = np.zeros((2, 4))


@pytest.mark.parametrize(
    "args, kwargs, exc, match",
    [
        ((X[None], X[None]), {}, ValueError, r"must have shape \(B, T\)"),
        ((X, X[0]), {}, ValueError, r"must have shape \(B, T\)"),
        ((X, X[:1]), {}, ValueError, "same shape"),
        ((X, X[:, :3]), {}, ValueError, "same shape"),
        ((X.astype(bool), X.astype(bool)), {}, TypeError, "must hold real numbers"),
        ((X, X.astype(bool)), {}, TypeError, "must hold real numbers"),
        ((X.astype(complex), X.astype(complex)), {}, TypeError, "must hold real numbers"),
        ((X, X), {"k": 0}, ValueError, "span_argmax: k must be >= 1"),
        ((X, X), {"k": -3}, ValueError, "span_argmax: k must be >= 1"),
        ((X, X), {"min_len": 0}, ValueError, "min_len must be >= 1"),
        ((X, X), {"min_len": -1}, ValueError, "min_len"),
        ((X, X), {"max_len": 0}, ValueError, "max_len must be >= 1"),
        ((X, X), {"max_len": -2}, ValueError, "max_len must be >= 1"),
        ((X, X), {"max_len": 2, "min_len": 3}, ValueError, "max_len must be >= min_len"),
        ((X, X), {"k": 2.5}, TypeError, "span_argmax: k must be an integer"),
        ((X, X), {"k": 2.0}, TypeError, "span_argmax: k must be an integer"),
        ((X, X), {"k": True}, TypeError, "span_argmax: k must be an integer"),
        ((X, X), {"max_len": 2.5}, TypeError, "max_len"),
        ((X, X), {"max_len": True}, TypeError, "max_len"),
        ((X, X), {"min_len": 1.5}, TypeError, "min_len"),
        ((X, X), {"min_len": True}, TypeError, "min_len"),
        ((X, X), {"lengths": np.array([1.0, 2.0])}, TypeError, "must hold integers"),
        ((X, X), {"lengths": np.array([True, False])}, TypeError, "must hold integers"),
        ((X, X), {"lengths": np.array([1, 2, 3])}, ValueError, r"lengths must have shape \(B,\)"),
        ((X, X), {"lengths": np.array([[1, 2]])}, ValueError, r"lengths must have shape \(B,\)"),
        ((X, X), {"lengths": np.array([1, 5])}, ValueError, r"lengths must lie in \[0, T\]"),
        ((X, X), {"lengths": np.array([-1, 2])}, ValueError, r"lengths must lie in \[0, T\]"),
        ((torch.zeros(2, 4), X), {}, TypeError, "must be a torch tensor"),
        ((X, torch.zeros(2, 4)), {}, TypeError, "must be a torch tensor"),
        (
            (torch.zeros(2, 4), torch.zeros(2, 4)),
            {"lengths": np.array([1, 2])},
            TypeError,
            "must be a torch tensor",
        ),
        (
            (torch.zeros(2, 4), torch.zeros(2, 4)),
            {"lengths": torch.tensor([1.0, 2.0])},
            TypeError,
            "must hold integers",
        ),
        ((torch.zeros(2, 4), torch.zeros(2, 3)), {}, ValueError, "same shape"),
        (
            (torch.zeros(2, 4, dtype=torch.bool), torch.zeros(2, 4, dtype=torch.bool)),
            {},
            TypeError,
            "must hold real numbers",
        ),
        (
            (torch.zeros(2, 4, dtype=torch.complex64), torch.zeros(2, 4, dtype=torch.complex64)),
            {},
            TypeError,
            "must hold real numbers",
        ),
        (
            (torch.zeros(2, 4), torch.zeros(2, 4)),
            {"lengths": torch.tensor([0, 5])},
            ValueError,
            r"lengths must lie in \[0, T\]",
        ),
        (
            (torch.zeros(2, 4), torch.zeros(2, 4)),
            {"lengths": torch.tensor([1])},
            ValueError,
            r"lengths must have shape \(B,\)",
        ),
    ],
)
def test_errors(args, kwargs, exc, match):
    with pytest.raises(exc, match=match):
        span_argmax(*args, **kwargs)


def test_numpy_integer_scalars_are_accepted_as_ints():
    spans, _ = span_argmax(X, X, k=np.int64(2), max_len=np.int32(3), min_len=np.int16(1))
    assert spans.shape == (2, 2, 2)


# --------------------------------------------------------------------------- #
# CUDA (and the same checks on torch CPU)
# --------------------------------------------------------------------------- #


@pytest.mark.parametrize("device", DEVICES)
@settings(max_examples=100, **SETTINGS)
@given(
    prob=tie_problems,
    dtype=st.sampled_from([torch.float32, torch.float64]),
    layout=st.sampled_from(TORCH_LAYOUTS),
    len_dtype=st.sampled_from([torch.int64, torch.int32]),
)
@example(prob=NEG_INF_END_TIES, dtype=torch.float32, layout="contiguous", len_dtype=torch.int64)
def test_tie_heavy_on_device(device, prob, dtype, layout, len_dtype):
    start, end, max_len, min_len, topk, lengths = prob
    s = torch_layout(start, layout, dtype, device)
    e = torch_layout(end, layout, dtype, device)
    lens = None if lengths is None else torch.from_numpy(lengths).to(len_dtype).to(device)

    spans, scores = span_argmax(s, e, max_len=max_len, min_len=min_len, k=topk, lengths=lens)
    assert spans.device.type == device and scores.device.type == device
    assert spans.dtype == torch.int64 and scores.dtype == dtype

    ref_spans, ref_scores = span_argmax_ref(start, end, max_len, min_len, topk, lengths)
    np.testing.assert_array_equal(spans.cpu().numpy(), ref_spans)
    np.testing.assert_array_equal(scores.cpu().numpy().astype(np.float64), ref_scores)

    # Identical to the CPU kernel, span for span.
    c_spans, c_scores = span_argmax(
        s.cpu(), e.cpu(), max_len=max_len, min_len=min_len, k=topk,
        lengths=None if lens is None else lens.cpu(),
    )
    assert torch.equal(spans.cpu(), c_spans)
    assert torch.equal(scores.cpu(), c_scores)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("max_len", [None, 1, 3, 40, 700])
@pytest.mark.parametrize("topk", [1, 5, 64])
def test_long_rows_on_device(device, max_len, topk):
    """Rows longer than any block/warp size, with heavy ties, on the device."""
    rng = np.random.default_rng(12345 + (max_len or 0) + topk)
    B, T = 4, 1100
    start = tie_heavy_matrix(rng, B, T)
    end = tie_heavy_matrix(rng, B, T)
    lengths = np.array([T, 0, 513, 1])
    ref_spans, ref_scores = dense_ref(start, end, max_len, 1, topk, lengths)
    for dtype in (torch.float32, torch.float64):
        s = torch.from_numpy(start).to(dtype=dtype, device=device)
        e = torch.from_numpy(end).to(dtype=dtype, device=device).t().contiguous().t()
        lens = torch.from_numpy(lengths).to(device)
        spans, scores = span_argmax(s, e, max_len=max_len, k=topk, lengths=lens)
        assert spans.device.type == device
        np.testing.assert_array_equal(spans.cpu().numpy(), ref_spans)
        np.testing.assert_array_equal(scores.cpu().numpy().astype(np.float64), ref_scores)


@pytest.mark.parametrize("device", DEVICES)
def test_hand_computed_on_device(device):
    start = torch.tensor([[0.0, 5.0, 0.0, 0.0], [0.0, 0.0, 0.0, 0.0]], device=device)
    end = torch.tensor([[0.0, 0.0, 0.0, 7.0], [0.0, 0.0, 0.0, 0.0]], device=device)
    lengths = torch.tensor([4, 2], device=device)
    spans, scores = span_argmax(start, end, max_len=2, k=5, lengths=lengths)
    assert spans.device.type == device
    assert spans.cpu().tolist() == [
        [[2, 3], [3, 3], [1, 1], [1, 2], [0, 0]],
        [[0, 0], [0, 1], [1, 1], [-1, -1], [-1, -1]],
    ]
    assert scores.cpu().tolist() == [[7, 7, 5, 5, 0], [0, 0, 0, -math.inf, -math.inf]]


@pytest.mark.parametrize("max_len", [None, 2])
@pytest.mark.parametrize("topk", [1, 2])
def test_rounding_ties_go_to_the_smaller_start(max_len, topk):
    # In float32, 2**24 + 0.5 and 2**24 + 1 both round to 2**24: the spans
    # (0, 1) and (1, 1) have exactly the same score although start[0] < start[1],
    # so the tie rule must pick start 0 (hand-computed, not from the kernel).
    start = np.array([[0.5, 1.0]], dtype=np.float32)
    end = np.array([[-np.inf, 2.0**24]], dtype=np.float32)
    assert np.float32(0.5) + np.float32(2.0**24) == np.float32(1.0) + np.float32(2.0**24)
    spans, scores = span_argmax(start, end, max_len=max_len, k=topk)
    assert spans[0, 0].tolist() == [0, 1]
    assert scores[0, 0] == np.float32(2.0**24)
    if topk == 2:
        assert spans[0, 1].tolist() == [1, 1]


def _ref_kwargs(kwargs):
    """span_argmax keywords for span_argmax_ref, which calls k ``topk``."""
    return {("topk" if name == "k" else name): v for name, v in kwargs.items()}



# --------------------------------------------------------------------------- #
# Result shapes: top-1 without a k axis, a single row without a batch axis
# --------------------------------------------------------------------------- #


@pytest.mark.parametrize("kind", ["numpy", "torch"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_shapes_by_k_and_single_row_match_the_reference(kind, dtype):
    # 0.1: top-1 returned (B, 1, 2) and a 1-D row was refused.
    rng = np.random.default_rng(7)
    start, end = rng.standard_normal((2, 5, 12))
    lengths = np.array([12, 0, 7, 1, 3])
    conv = torch.from_numpy if kind == "torch" else np.asarray
    s, e = conv(start.astype(dtype)), conv(end.astype(dtype))
    r32 = dict(compute_dtype=np.float32) if dtype == np.float32 else {}
    ref_spans, ref_scores = span_argmax_ref(start.astype(dtype), end.astype(dtype), 4, 1, 3,
                                            lengths, **r32)
    # top-1, batched: (B, 2) and (B,)
    out = span_argmax(s, e, max_len=4, lengths=conv(lengths))
    assert type(out.spans) is type(s) and tuple(out.spans.shape) == (5, 2)
    assert tuple(out.scores.shape) == (5,)
    np.testing.assert_array_equal(to_np(out.spans), ref_spans[:, 0])
    np.testing.assert_array_equal(to_np(out.scores).astype(np.float64), ref_scores[:, 0])
    assert to_np(out.spans)[1].tolist() == [-1, -1] and to_np(out.scores)[1] == -np.inf
    # an explicit k keeps its axis, k = 1 included
    for k in (1, 3):
        spans, scores = span_argmax(s, e, max_len=4, k=k, lengths=conv(lengths))
        assert tuple(spans.shape) == (5, k, 2) and tuple(scores.shape) == (5, k)
        np.testing.assert_array_equal(to_np(spans), ref_spans[:, :k])
    # a single row: no batch axis; lengths as an integer or a one-element array
    for b in range(5):
        for lens in (int(lengths[b]), conv(lengths[b:b + 1])):
            if kind == "torch" and isinstance(lens, int):
                continue  # torch inputs take tensor lengths only
            spans, scores = span_argmax(s[b], e[b], max_len=4, lengths=lens)
            assert type(spans) is type(s) and tuple(spans.shape) == (2,)
            assert tuple(scores.shape) == ()
            np.testing.assert_array_equal(to_np(spans), ref_spans[b, 0])
            assert float(scores) == ref_scores[b, 0]
            spans, scores = span_argmax(s[b], e[b], max_len=4, lengths=lens, k=3)
            assert tuple(spans.shape) == (3, 2) and tuple(scores.shape) == (3,)
            np.testing.assert_array_equal(to_np(spans), ref_spans[b])
            np.testing.assert_array_equal(to_np(scores).astype(np.float64), ref_scores[b])


def test_single_row_hand_computed_and_mismatched_ranks():
    # start + end of (i, j): best is (1, 3) = 5 + 7; with max_len 2, (2, 3) and (3, 3)
    # tie at 0 + 7 and the smaller start wins.
    assert span_argmax([0, 5, 0, 0], [0, 0, 0, 7]).spans.tolist() == [1, 3]
    assert span_argmax([0, 5, 0, 0], [0, 0, 0, 7], max_len=2).spans.tolist() == [2, 3]
    assert span_argmax(np.zeros(0), np.zeros(0)).spans.tolist() == [-1, -1]
    with pytest.raises(ValueError, match="span_argmax"):
        span_argmax(np.zeros(4), np.zeros((1, 4)))


@pytest.mark.parametrize("max_len", [1, 7, 64, None])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_signed_zero_scores_match_reference(max_len, dtype):
    # Every score is +-0: all spans tie, the first (smallest start, then end)
    # wins, and its score is start[i] + end[j] with that pair's zero signs
    # (-0 only when both are -0), whichever zero the window maxima saw.
    rng = np.random.default_rng(7)
    start = np.where(rng.random((6, 200)) < 0.5, -0.0, 0.0).astype(dtype)
    end = np.where(rng.random((6, 200)) < 0.7, -0.0, 0.0).astype(dtype)
    start[:, 0] = -0.0
    min_len = 1 if max_len == 1 else 2
    got = span_argmax(start, end, max_len=max_len, min_len=min_len)
    ref_spans, ref_scores = span_argmax_ref(start, end, max_len=max_len, min_len=min_len)
    np.testing.assert_array_equal(got.spans, ref_spans[:, 0])
    np.testing.assert_array_equal(np.signbit(got.scores), np.signbit(ref_scores[:, 0]))


# --------------------------------------------------------------------------- #
# Top-k by best-first search: every case against a brute force written here
# from the docstring (independent of tests/reference), +inf included
# --------------------------------------------------------------------------- #


def brute_force_spans(start, end, max_len, min_len, k, lengths, dtype=np.float64):
    """Every valid span of every row, scored ``start[i] + end[j]`` in ``dtype``
    (one scalar addition each), NaN sums dropped, sorted by higher score, then
    smaller start, then smaller end; the first ``k`` per row, padded with
    ``(-1, -1)`` / ``-inf``. Returns (spans [B, k, 2] int64, scores [B, k] float64)."""
    B, T = start.shape
    spans = np.full((B, k, 2), -1, dtype=np.int64)
    scores = np.full((B, k), -np.inf)
    for b in range(B):
        length = T if lengths is None else int(lengths[b])
        found = []
        for j in range(length):
            for i in range(j + 1):
                n = j - i + 1
                if n < min_len or (max_len is not None and n > max_len):
                    continue
                with np.errstate(invalid="ignore"):
                    s = dtype(start[b, i]) + dtype(end[b, j])
                if np.isnan(s):
                    continue
                found.append((-float(s), i, j))
        found.sort()
        for t, (neg, i, j) in enumerate(found[:k]):
            spans[b, t] = (i, j)
            scores[b, t] = -neg
    return spans, scores


INF = math.inf
# Alphabets whose pairwise sums are exact in float32: a float64 reference then
# ranks exactly as the kernels do, so whole outputs must be equal.
ALPHABETS = {
    "ties": [-2.0, -1.0, 0.0, 1.0, 2.0],
    "ties-nan-neg-inf": [-1.0, 0.0, 1.0, 1.0, -INF, math.nan],
    "pos-inf": [0.0, 1.0, INF, -INF, math.nan],
    "mostly-neg-inf": [0.0, -INF, -INF, -INF, INF, math.nan],
}


def random_problem(rng, alphabet):
    """(start, end, max_len, min_len, k, lengths): batched rows with per-row
    lengths, min_len == max_len, max_len >= T and k beyond the valid spans."""
    B, T = int(rng.integers(1, 5)), int(rng.integers(0, 33))
    vals = np.array(ALPHABETS[alphabet])
    start, end = rng.choice(vals, (B, T)), rng.choice(vals, (B, T))
    min_len = int(rng.integers(1, 5))
    shape = rng.integers(4)
    max_len = (None if shape == 0 else min_len if shape == 1
               else int(rng.integers(T, T + 4)) if shape == 2
               else int(rng.integers(min_len, max(min_len, T) + 1)))
    max_len = max(max_len, min_len) if max_len is not None else None
    k = int(rng.choice([2, 3, 7, 40, 600]))  # 600 > any row's T (T + 1) / 2 spans
    lengths = None if rng.random() < 0.4 else rng.integers(0, T + 1, size=B)
    return start, end, max_len, min_len, k, lengths


@pytest.mark.parametrize("alphabet", sorted(ALPHABETS))
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_topk_seeded_random_against_brute_force(alphabet, dtype):
    rng = np.random.default_rng(sorted(ALPHABETS).index(alphabet) * 7 + (dtype == np.float32))
    for _ in range(150):
        start, end, max_len, min_len, k, lengths = random_problem(rng, alphabet)
        exp_spans, exp_scores = brute_force_spans(start, end, max_len, min_len, k, lengths)
        s, e = start.astype(dtype), end.astype(dtype)
        for kk in (k, 1):  # top-k, and top-1 (the +inf start, -inf end rule)
            spans, scores = span_argmax(s, e, max_len=max_len, min_len=min_len, k=kk,
                                        lengths=lengths)
            case = (alphabet, s.tolist(), e.tolist(), max_len, min_len, kk, lengths)
            np.testing.assert_array_equal(spans, exp_spans[:, :kk], err_msg=str(case))
            np.testing.assert_array_equal(scores.astype(np.float64), exp_scores[:, :kk],
                                          err_msg=str(case))


@settings(max_examples=150, **SETTINGS)
@given(
    prob=problems(st.sampled_from([0.0, 1.0, 2.0, -INF, INF, math.nan])),
    dtype=st.sampled_from([np.float32, np.float64]),
)
def test_topk_with_pos_inf_matches_brute_force(prob, dtype):
    start, end, max_len, min_len, topk, lengths = prob
    spans, scores = span_argmax(start.astype(dtype), end.astype(dtype), max_len=max_len,
                                min_len=min_len, k=topk, lengths=lengths)
    exp_spans, exp_scores = brute_force_spans(start, end, max_len, min_len, topk, lengths)
    np.testing.assert_array_equal(spans, exp_spans)
    np.testing.assert_array_equal(scores.astype(np.float64), exp_scores)


@pytest.mark.parametrize(
    "start, end, kwargs, exp_spans, exp_scores",
    [
        # +inf + -inf is NaN, but start 1 still makes a -inf span with end 1:
        # it is the best (and only) span, for top-1 as for top-k.
        ([INF, 0.0], [-INF, -INF], {"k": 1}, [[1, 1]], [-INF]),
        ([INF, 0.0], [-INF, -INF], {"k": 3}, [[1, 1], FILL, FILL], [-INF, -INF, -INF]),
        # The same behind a +inf span: every -inf span, by start then end.
        ([INF, 0.0, 0.0], [1.0, -INF, -INF], {"k": 5},
         [[0, 0], [1, 1], [1, 2], [2, 2], FILL], [INF, -INF, -INF, -INF, -INF]),
        # -inf + +inf is NaN and the window has nothing else: no span at end 1.
        ([-INF, NEG], [0.0, INF], {"k": 3, "max_len": 1}, [[0, 0], FILL, FILL],
         [-INF, -INF, -INF]),
    ],
    ids=["pos-inf-start-top1", "pos-inf-start-topk", "pos-inf-then-neg-inf-ends",
         "neg-inf-start-pos-inf-end"],
)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_pos_inf_hand_computed(start, end, kwargs, exp_spans, exp_scores, dtype):
    spans, scores = span_argmax(np.array([start], dtype=dtype), np.array([end], dtype=dtype),
                                **kwargs)
    np.testing.assert_array_equal(spans, [exp_spans])
    np.testing.assert_array_equal(scores, np.array([exp_scores], dtype=dtype))


@pytest.mark.parametrize("T, max_len, min_len", [(700, 700, 1), (700, None, 3), (700, 5, 5),
                                                 (513, 257, 2), (600, 1000, 1)])
@pytest.mark.parametrize("k", [2, 25])
def test_topk_long_rows_against_dense_brute_force(T, max_len, min_len, k):
    """Long windows (sparse-table levels, splits far from the window ends) with
    ties, NaN and +-inf, against the dense (vectorised) enumeration above."""
    rng = np.random.default_rng(T + k + (max_len or 0))
    vals = np.array([-1.0, 0.0, 0.5, 1.0, 2.0, 2.0, -INF, math.nan])
    start, end = rng.choice(vals, (3, T)), rng.choice(vals, (3, T))
    start[1, rng.integers(T)] = INF  # a +inf start with -inf ends after it
    end[1, rng.random(T) < 0.3] = -INF
    end[2] = -INF  # a row of -inf spans only: all tie, by start then end
    lengths = np.array([T, T - 3, T // 2])
    with np.errstate(invalid="ignore"):  # +inf + -inf: NaN sums, dropped
        exp_spans, exp_scores = dense_ref(start, end, max_len, min_len, k, lengths)
    for dtype in (np.float32, np.float64):
        spans, scores = span_argmax(start.astype(dtype), end.astype(dtype), max_len=max_len,
                                    min_len=min_len, k=k, lengths=lengths)
        np.testing.assert_array_equal(spans, exp_spans)
        np.testing.assert_array_equal(scores.astype(np.float64), exp_scores)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("max_len", [None, 40])
def test_topk_rounding_merges_sums_like_the_brute_force(dtype, max_len):
    """End scores that dwarf the start scores: different starts round to the
    same sum, and the smaller start must come first. Reference summed in the
    input dtype (the contract's score), one addition per span."""
    rng = np.random.default_rng(11)
    big = 2.0**24 if dtype == np.float32 else 2.0**53
    start = rng.integers(-4, 5, size=(3, 90)) * 0.25
    end = big * rng.integers(1, 4, size=(3, 90)) + rng.integers(-2, 3, size=(3, 90))
    s, e = start.astype(dtype), end.astype(dtype)
    for k in (2, 30):
        spans, scores = span_argmax(s, e, max_len=max_len, k=k)
        exp_spans, exp_scores = brute_force_spans(s, e, max_len, 1, k, None, dtype=dtype)
        np.testing.assert_array_equal(spans, exp_spans)
        np.testing.assert_array_equal(scores.astype(np.float64), exp_scores)


def test_topk_continuous_scores_long_windows():
    """Continuous scores (no ties), T = 400 with windows as long as the row:
    against the float64 brute force summed in float32 as the kernel does."""
    rng = np.random.default_rng(5)
    start = rng.standard_normal((2, 400)).astype(np.float32)
    end = rng.standard_normal((2, 400)).astype(np.float32)
    for max_len in (400, 64, None):
        spans, scores = span_argmax(start, end, max_len=max_len, k=12)
        exp_spans, exp_scores = dense_ref(start, end, max_len, 1, 12, None)
        np.testing.assert_array_equal(spans, exp_spans)
        np.testing.assert_array_equal(scores, exp_scores.astype(np.float32))
