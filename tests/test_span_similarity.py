# SPDX-License-Identifier: Apache-2.0
"""Tests for ``fastvqa.ops.span_similarity`` / ``span_similarity_all`` against
the float64 loop reference (every span enumerated and pooled directly), plus
gradients (gradcheck in float64, agreement with autograd through
``torch.nn.functional.cosine_similarity``), opcheck and torch.compile."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fastvqa.ops import span_similarity, span_similarity_all
from tests.conftest import DEVICES
from tests.conftest import assert_opcheck  # noqa: E402
from tests.reference.span_similarity import (
    span_similarity_all_exact,
    span_similarity_all_ref,
    span_similarity_ref,
    span_value_exact,
)

SETTINGS = dict(deadline=None, suppress_health_check=[HealthCheck.too_slow])
POOLS = ["mean_of_cos", "cos_of_mean"]
F = torch.nn.functional


def finite_only(x: torch.Tensor) -> torch.Tensor:
    """-inf cells have no gradient; gradcheck's finite differences need finite outputs."""
    return torch.where(torch.isfinite(x), x, torch.zeros_like(x))


def strided(x: np.ndarray, kind: str) -> np.ndarray:
    """Same values, another layout: transposed copy or every other step."""
    if kind == "transposed":
        return np.ascontiguousarray(x.swapaxes(-1, -2)).swapaxes(-1, -2)
    if kind == "every_other":
        buf = np.full(x.shape[:-1] + (2 * x.shape[-1],), 1e6, dtype=x.dtype)
        buf[..., ::2] = x
        return buf[..., ::2]
    return x


@st.composite
def problems(draw):
    B = draw(st.integers(0, 3))
    T = draw(st.integers(0, 9))
    D = draw(st.integers(1, 5))
    seed = draw(st.integers(0, 2**31 - 1))
    rng = np.random.default_rng(seed)
    frames = rng.standard_normal((B, T, D))
    query = rng.standard_normal((B, D))
    # Zero vectors (eps clamp), repeated frames (ties) and non-finite values.
    if draw(st.booleans()) and B * T:
        frames[rng.integers(B), rng.integers(T)] = 0.0
    if draw(st.booleans()) and B:
        query[rng.integers(B)] = 0.0
    if draw(st.booleans()) and B * T:
        frames[rng.integers(B), rng.integers(T), rng.integers(D)] = draw(
            st.sampled_from([math.nan, math.inf, -math.inf]))
    if draw(st.booleans()) and B:
        query[rng.integers(B), rng.integers(D)] = math.nan
    min_len = draw(st.integers(1, 3))
    max_len = draw(st.one_of(st.none(), st.integers(min_len, T + 3)))
    lengths = draw(st.one_of(st.none(), st.lists(st.integers(0, T), min_size=B, max_size=B)))
    if lengths is not None:
        lengths = np.array(lengths, dtype=np.int64).reshape(B)
    S = draw(st.integers(0, 6))
    spans = rng.integers(-2, T + 2, size=(B, S, 2))
    spans = np.where(rng.random((B, S, 1)) < 0.7, np.sort(spans, axis=-1), spans)
    return frames, query, min_len, max_len, lengths, spans


@settings(max_examples=120, **SETTINGS)
@given(prob=problems(), pool=st.sampled_from(POOLS), dtype=st.sampled_from(["float32", "float64"]),
       kind=st.sampled_from(["numpy", "torch"]),
       layout=st.sampled_from(["contiguous", "transposed", "every_other"]))
def test_matches_reference(prob, pool, dtype, kind, layout):
    frames, query, min_len, max_len, lengths, spans = prob
    f = strided(frames.astype(dtype), layout)
    q = strided(query.astype(dtype), layout)
    if kind == "torch":
        f, q = torch.from_numpy(f), torch.from_numpy(q)
        spans_in = torch.from_numpy(spans)
        lens_in = None if lengths is None else torch.from_numpy(lengths)
    else:
        spans_in, lens_in = spans, lengths
    tol = dict(rtol=1e-4, atol=1e-5) if dtype == "float32" else dict(rtol=1e-10, atol=1e-12)

    band = span_similarity_all(f, q, pool=pool, min_len=min_len, max_len=max_len, lengths=lens_in)
    ref = span_similarity_all_ref(frames.astype(dtype), query.astype(dtype), pool, min_len,
                                  max_len, lengths)
    band = band.numpy() if kind == "torch" else band
    assert band.dtype == np.dtype(dtype) and band.shape == ref.shape
    np.testing.assert_allclose(band, ref, equal_nan=True, **tol)

    out = span_similarity(f, q, spans_in, pool=pool)
    ref = span_similarity_ref(frames.astype(dtype), query.astype(dtype), spans, pool)
    out = out.numpy() if kind == "torch" else out
    assert out.dtype == np.dtype(dtype) and out.shape == ref.shape
    np.testing.assert_allclose(out, ref, equal_nan=True, **tol)


def test_hand_computed():
    # Frames e0, e1, e0 + e1 against query e0: per-frame cosines 1, 0, 1/sqrt(2).
    frames = np.array([[[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]]])
    query = np.array([[1.0, 0.0]])
    spans = np.array([[[0, 1], [0, 2], [2, 2], [-1, -1], [2, 3]]])
    got = span_similarity(frames, query, spans, pool="mean_of_cos")
    s = 1 / math.sqrt(2)
    np.testing.assert_allclose(got, [[0.5, (1 + s) / 3, s, -np.inf, -np.inf]])
    # Mean of [0, 1] is (0.5, 0.5): cosine 1/sqrt(2); mean of all three is (2/3, 2/3): same.
    got = span_similarity(frames, query, spans, pool="cos_of_mean")
    np.testing.assert_allclose(got, [[s, s, s, -np.inf, -np.inf]])
    band = span_similarity_all(frames, query, pool="mean_of_cos", max_len=2)
    np.testing.assert_allclose(band, [[[1.0, 0.5], [0.0, s / 2], [s, -np.inf]]])


def test_matches_torch_cosine_similarity_with_eps():
    """Norms below eps are clamped one by one, as in F.cosine_similarity."""
    f = torch.tensor([[[1e-9, 0.0], [3.0, 4.0], [0.0, 0.0]]], dtype=torch.float64)
    q = torch.tensor([[2e-9, 1e-9]], dtype=torch.float64)
    spans = torch.tensor([[[0, 0], [1, 1], [2, 2], [0, 2]]])
    for eps in (1e-8, 1e-3):
        got = span_similarity(f, q, spans, pool="cos_of_mean", eps=eps)
        ref = torch.stack([F.cosine_similarity(f[0, i:j + 1].mean(0), q[0], dim=0, eps=eps)
                           for i, j in spans[0].tolist()])
        torch.testing.assert_close(got[0], ref)


def test_nan_only_poisons_spans_that_touch_it():
    rng = np.random.default_rng(1)
    frames, query = rng.standard_normal((1, 6, 3)), rng.standard_normal((1, 3))
    frames[0, 2, 1] = np.nan
    for pool in POOLS:
        band = span_similarity_all(frames, query, pool=pool)
        for i in range(6):
            for d in range(6 - i):
                assert np.isnan(band[0, i, d]) == (i <= 2 <= i + d)
    query[0, 0] = np.inf
    assert np.isnan(span_similarity_all(frames, query, pool="cos_of_mean")[0, 3, 0])


def test_padding_is_never_read():
    rng = np.random.default_rng(2)
    frames, query = rng.standard_normal((2, 5, 4)), rng.standard_normal((2, 4))
    garbage = frames.copy()
    garbage[0, 3:] = np.nan
    garbage[1, :] = np.inf
    lengths = np.array([3, 0])
    for pool in POOLS:
        a = span_similarity_all(frames, query, pool=pool, lengths=lengths, max_len=7)
        b = span_similarity_all(garbage, query, pool=pool, lengths=lengths, max_len=7)
        np.testing.assert_array_equal(a, b)
        assert a.shape == (2, 5, 5) and np.all(a[1] == -np.inf)  # the band is capped at T = 5


@pytest.mark.parametrize("shape", [(0, 4, 3), (2, 0, 3), (2, 4, 0)])
def test_empty(shape):
    frames = np.zeros(shape)
    query = np.zeros((shape[0], shape[2]))
    band = span_similarity_all(frames, query, pool="mean_of_cos")
    assert band.shape == (shape[0], shape[1], shape[1])
    # D = 0: every norm is clamped, every cosine is 0.
    assert np.all(band[np.isfinite(band)] == 0)
    spans = np.zeros((shape[0], 0, 2), dtype=np.int64)
    assert span_similarity(frames, query, spans, pool="cos_of_mean").shape == (shape[0], 0)


# ------------------------------------------------------------------ gradients


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("pool", POOLS)
def test_gradcheck(device, pool):
    g = torch.Generator().manual_seed(3)
    f = torch.randn(3, 7, 4, generator=g, dtype=torch.float64).to(device)
    f.requires_grad_()
    q = torch.randn(3, 4, generator=g, dtype=torch.float64).to(device).requires_grad_()
    lengths = torch.tensor([7, 5, 0], device=device)
    spans = torch.tensor([[[0, 3], [2, 2], [-1, -1]], [[0, 6], [4, 6], [3, 1]],
                          [[0, 0], [5, 6], [1, 5]]], device=device)

    def band(a, b):
        return finite_only(span_similarity_all(a, b, pool=pool, min_len=2, max_len=4,
                                               lengths=lengths))

    def given(a, b):
        return finite_only(span_similarity(a, b, spans, pool=pool))

    assert torch.autograd.gradcheck(band, (f, q))
    assert torch.autograd.gradcheck(given, (f, q))


@pytest.mark.parametrize("pool", POOLS)
def test_gradient_matches_autograd_through_torch(pool):
    g = torch.Generator().manual_seed(4)
    f = torch.randn(2, 9, 6, generator=g, dtype=torch.float64, requires_grad=True)
    q = torch.randn(2, 6, generator=g, dtype=torch.float64, requires_grad=True)
    w = torch.randn(2, 9, 5, generator=g, dtype=torch.float64)
    band = span_similarity_all(f, q, pool=pool, max_len=5)
    loss = (finite_only(band) * w).sum()
    got = torch.autograd.grad(loss, (f, q))
    ref = 0.0
    for i in range(9):
        for d in range(min(5, 9 - i)):
            seg = f[:, i:i + d + 1]
            if pool == "mean_of_cos":
                v = F.cosine_similarity(seg, q[:, None], dim=-1).mean(1)
            else:
                v = F.cosine_similarity(seg.mean(1), q, dim=-1)
            ref = ref + (v * w[:, i, d]).sum()
    expect = torch.autograd.grad(ref, (f, q))
    for a, b in zip(got, expect):
        torch.testing.assert_close(a, b)


def test_nan_frames_get_no_gradient_and_do_not_spread():
    f = torch.randn(1, 5, 3, dtype=torch.float64)
    f[0, 1, 0] = math.nan
    f.requires_grad_()
    q = torch.randn(1, 3, dtype=torch.float64, requires_grad=True)
    for pool in POOLS:
        out = span_similarity_all(f, q, pool=pool)
        finite_only(torch.nan_to_num(out, nan=0.0)).sum().backward()
        assert torch.all(f.grad[0, 1] == 0) and torch.isfinite(f.grad).all()
        assert torch.isfinite(q.grad).all()
        f.grad = q.grad = None


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_half_precision_computes_in_float32(dtype):
    g = torch.Generator().manual_seed(5)
    f = torch.randn(2, 6, 8, generator=g).to(dtype).requires_grad_()
    q = torch.randn(2, 8, generator=g).to(dtype).requires_grad_()
    out = span_similarity_all(f, q, pool="cos_of_mean", max_len=3)
    ref = span_similarity_all(f.detach().float(), q.detach().float(), pool="cos_of_mean", max_len=3)
    assert out.dtype == dtype
    torch.testing.assert_close(out.float(), ref.to(dtype).float())
    finite_only(out).float().sum().backward()
    assert f.grad.dtype == dtype and q.grad.dtype == dtype


def _op_samples(device):
    from fastvqa.ops import _torch_span_similarity  # noqa: F401  (registers the ops)

    g = torch.Generator().manual_seed(6)
    f = torch.randn(2, 6, 3, generator=g, dtype=torch.float64).to(device).requires_grad_()
    q = torch.randn(2, 3, generator=g, dtype=torch.float64).to(device).requires_grad_()
    spans = torch.tensor([[[0, 2], [1, 1]], [[3, 5], [-1, -1]]], device=device)
    lengths = torch.tensor([6, 4], device=device)
    fwd = torch.ops.fastvqa.span_similarity.default
    bwd = torch.ops.fastvqa.span_similarity_backward.default
    grad_band = torch.randn(2, 6, 3, generator=g, dtype=torch.float64).to(device)
    return [
        (fwd, (f, q, spans, "mean_of_cos", 1, None, None, 1e-8)),
        (fwd, (f, q, None, "cos_of_mean", 1, 3, lengths, 1e-8)),
        (bwd, (grad_band, f.detach(), q.detach(), None, "cos_of_mean", 2, 3, lengths, 1e-8)),
    ]


@pytest.mark.parametrize("device", DEVICES)
def test_opcheck(device):
    for op, args in _op_samples(device):
        # -inf cells make the finite-difference autograd check meaningless;
        # gradcheck above covers the gradient.
        assert_opcheck(op, args, test_utils=("test_schema", "test_faketensor",
                                                    "test_aot_dispatch_dynamic"))


@pytest.mark.parametrize("device", DEVICES)
def test_compile_fullgraph_forward_and_backward(device):
    torch._dynamo.reset()

    def fn(f, q):
        band = span_similarity_all(f, q, pool="cos_of_mean", max_len=4)
        return finite_only(band).sum()

    f = torch.randn(2, 8, 5, device=device, requires_grad=True)
    q = torch.randn(2, 5, device=device, requires_grad=True)
    compiled = torch.compile(fn, fullgraph=True)
    loss_c = compiled(f, q)
    grads_c = torch.autograd.grad(loss_c, (f, q))
    loss_e = fn(f, q)
    grads_e = torch.autograd.grad(loss_e, (f, q))
    torch.testing.assert_close(loss_c, loss_e)
    for a, b in zip(grads_c, grads_e):
        torch.testing.assert_close(a, b)


@pytest.mark.cuda
@pytest.mark.parametrize("pool", POOLS)
def test_cuda_matches_cpu(pool):
    g = torch.Generator().manual_seed(7)
    f = torch.randn(5, 40, 33, generator=g, dtype=torch.float64)
    f[2, 7, 3] = math.nan
    q = torch.randn(5, 33, generator=g, dtype=torch.float64)
    lengths = torch.tensor([40, 17, 30, 0, 1])
    w = torch.randn(5, 40, 12, generator=g, dtype=torch.float64)
    out = {}
    for dev in ("cpu", "cuda"):
        fd = f.to(dev).requires_grad_()
        qd = q.to(dev).requires_grad_()
        band = span_similarity_all(fd, qd, pool=pool, max_len=12, min_len=2,
                                   lengths=lengths.to(dev))
        loss = (torch.nan_to_num(finite_only(band), nan=0.0) * w.to(dev)).sum()
        loss.backward()
        out[dev] = [band.cpu(), fd.grad.cpu(), qd.grad.cpu()]
    for a, b in zip(out["cpu"], out["cuda"]):
        torch.testing.assert_close(a, b, equal_nan=True)


# ------------------------------------------- extreme magnitudes (issue 11)

FMAX = float(np.finfo(np.float64).max)


@pytest.mark.parametrize("kind", ["numpy", "torch"])
def test_zero_frame_at_eps_zero_does_not_poison_later_spans(kind):
    # Issue 11: a zero frame at eps=0 gave cos = 0/0 = NaN, and the running
    # sum carried it into every later span. A zero vector's cosine is 0.
    rng = np.random.default_rng(11)
    frames, query = rng.standard_normal((1, 6, 3)), rng.standard_normal((1, 3))
    frames[0, 1] = 0.0
    conv = torch.from_numpy if kind == "torch" else np.asarray
    for pool in POOLS:
        band = np.asarray(span_similarity_all(conv(frames), conv(query), pool=pool, eps=0.0))
        assert np.all(np.isfinite(band[0][np.triu(np.ones((6, 6)))[:, ::-1] > 0]))
        want = span_similarity_all_exact(frames, query, pool, 0.0)
        np.testing.assert_allclose(band, want, rtol=1e-13, atol=1e-15)
    # The zero frame alone, and a zero query, score 0.
    assert span_similarity_all(frames, query, pool="mean_of_cos", eps=0.0)[0, 1, 0] == 0.0
    zq = np.zeros((1, 3))
    for pool in POOLS:
        band = span_similarity_all(frames, zq, pool=pool, eps=0.0)
        assert np.all(band[np.isfinite(band)] == 0.0) and np.isfinite(band[0, 0]).all()
    # cos_of_mean of a span whose mean is exactly zero: 0, not NaN.
    f2 = np.array([[[1.0, 2.0], [-1.0, -2.0], [3.0, 0.0]]])
    got = span_similarity(f2, np.array([[1.0, 1.0]]), np.array([[[0, 1], [0, 2]]]),
                          pool="cos_of_mean", eps=0.0)
    np.testing.assert_allclose(got, [[0.0, 1 / math.sqrt(2)]], rtol=1e-15)


@pytest.mark.parametrize("pool", POOLS)
@pytest.mark.parametrize("scale", [1e154, 1e200, 1e300, 1e-160, 1e-300, 5e-324 * 2**20])
def test_huge_and_tiny_features_keep_their_cosine(pool, scale):
    # Issue 11: above about 1.3e154 the squared norm overflowed and gave NaN
    # for finite input; below about 1e-154 it underflowed to 0.
    rng = np.random.default_rng(12)
    base = rng.standard_normal((2, 5, 4))
    q = rng.standard_normal((2, 4))
    frames = base * scale
    for qs in (1.0, scale):
        got = span_similarity_all(frames, q * qs, pool=pool, eps=0.0)
        want = span_similarity_all_exact(frames, q * qs, pool, 0.0)
        assert np.isfinite(got).sum() == 2 * 15
        np.testing.assert_allclose(got, want, rtol=1e-13, atol=1e-15)


def test_feature_sums_that_overflow_double():
    # cos_of_mean sums the span: two frames of 1e308 overflow double, the
    # mean does not.
    frames = np.array([[[1e308, 1e308], [1e308, 1e308], [FMAX, -FMAX], [-FMAX, FMAX]]])
    q = np.array([[1.0, 1.0]])
    band = span_similarity_all(frames, q, pool="cos_of_mean")
    np.testing.assert_allclose(band[0, 0, :2], [1.0, 1.0], rtol=1e-15)
    np.testing.assert_allclose(band[0, 2, :2], [0.0, 0.0], atol=1e-15)  # [2, 3] sums to 0
    want = span_similarity_all_exact(frames, q, "cos_of_mean", 1e-8)
    np.testing.assert_allclose(band, want, rtol=1e-13, atol=1e-15)


@st.composite
def extreme_rows(draw):
    T = draw(st.integers(1, 6))
    D = draw(st.integers(1, 4))
    rng = np.random.default_rng(draw(st.integers(0, 2**31 - 1)))
    exps = draw(st.lists(st.sampled_from([0, 0, 500, 1000, 1020, -500, -1000, -1060]),
                         min_size=T, max_size=T))
    frames = rng.integers(-4, 5, size=(1, T, D)).astype(np.float64)
    for t, e in enumerate(exps):
        frames[0, t] *= 2.0**e
    if draw(st.booleans()):
        frames[0, rng.integers(T)] = 0.0
    qe = draw(st.sampled_from([0, 700, -700]))
    query = rng.integers(-4, 5, size=(1, D)).astype(np.float64) * 2.0**qe
    eps = draw(st.sampled_from([0.0, 1e-8, 1e-310]))
    return frames, query, eps


@settings(max_examples=60, **SETTINGS)
@given(case=extreme_rows())
def test_mean_of_cos_with_extreme_magnitudes_matches_exact_reference(case):
    frames, query, eps = case
    T = frames.shape[1]
    got = span_similarity_all(frames, query, pool="mean_of_cos", eps=eps)
    want = span_similarity_all_exact(frames, query, "mean_of_cos", eps)
    # Prefix sums of cosines in [-1, 1]: absolute error within a few T ulps.
    np.testing.assert_allclose(got, want, rtol=1e-13, atol=8 * T * 2.0**-53)


@settings(max_examples=60, **SETTINGS)
@given(case=extreme_rows())
def test_cos_of_mean_with_extreme_magnitudes_matches_exact_reference(case):
    frames, query, eps = case
    T, D = frames.shape[1:]
    got = span_similarity_all(frames, query, pool="cos_of_mean", eps=eps)
    for i in range(T):
        for d in range(T - i):
            want = span_value_exact(frames[0], query[0], i, i + d, "cos_of_mean", eps)
            # Summation error of the span alone (components may cancel):
            # n u |sum_t |f_t|| / |S|, in exact arithmetic.
            seg = [[Fraction(float(v)) for v in f] for f in frames[0, i:i + d + 1]]
            S = [sum(f[k] for f in seg) for k in range(D)]
            A = [sum(abs(f[k]) for f in seg) for k in range(D)]
            s2 = sum(x * x for x in S)
            if s2 == 0:
                continue  # the span's own sum cancels: any summation order is ill-conditioned
            ratio = sum(x * x for x in A) / s2
            if ratio > 2**100:
                continue  # cancels to far below its terms: ill-conditioned likewise
            cond = math.sqrt(float(ratio))
            bound = 1e-13 + 4 * (d + 1) * 2.0**-53 * cond
            assert abs(got[0, i, d] - want) <= bound, (i, d, got[0, i, d], want)


@pytest.mark.parametrize("pool", POOLS)
@pytest.mark.parametrize("fill", [FMAX, -FMAX, 1e-320, 0.0, math.nan, 1e200])
def test_a_span_does_not_see_the_frames_outside_it(pool, fill):
    # Frames outside the span, whatever they hold, do not change its value:
    # cos_of_mean sums the span itself (bit for bit), mean_of_cos takes
    # differences of prefix sums of cosines in [-1, 1] (a few ulps).
    rng = np.random.default_rng(13)
    inner = rng.standard_normal((1, 4, 3))
    q = rng.standard_normal((1, 3))
    alone = span_similarity_all(inner, q, pool=pool)
    frames = np.concatenate([np.full((1, 3, 3), fill), inner, np.full((1, 2, 3), fill)], axis=1)
    band = span_similarity_all(frames, q, pool=pool)
    inside = np.isfinite(alone)  # the spans of the 4 inner frames
    assert inside.sum() == 10
    part = band[:, 3:7, :4][inside]
    if pool == "cos_of_mean":
        np.testing.assert_array_equal(part, alone[inside])
    else:
        np.testing.assert_allclose(part, alone[inside], rtol=0, atol=1e-15)


@pytest.mark.parametrize("pool", POOLS)
@pytest.mark.parametrize("k", [600, -600, 1000])
def test_gradients_scale_exactly_with_the_features(pool, k):
    # cos is scale invariant at eps = 0, so d y / d (2^k f) = 2^-k d y / d f:
    # the gradient at huge or tiny features follows from the one at moderate
    # ones (checked against autograd above), instead of overflowing to 0 or NaN.
    g = torch.Generator().manual_seed(14)
    f = torch.randn(2, 6, 5, generator=g, dtype=torch.float64)
    q = torch.randn(2, 5, generator=g, dtype=torch.float64)
    w = torch.randn(2, 6, 4, generator=g, dtype=torch.float64)

    def grads(ff, qq):
        ff, qq = ff.clone().requires_grad_(), qq.clone().requires_grad_()
        band = span_similarity_all(ff, qq, pool=pool, max_len=4, eps=0.0)
        (finite_only(band) * w).sum().backward()
        return band.detach(), ff.grad, qq.grad

    b0, gf0, gq0 = grads(f, q)
    b1, gf1, gq1 = grads(f * 2.0**k, q)
    torch.testing.assert_close(b1, b0, rtol=1e-13, atol=1e-15)
    torch.testing.assert_close(gf1, gf0 * 2.0**-k, rtol=1e-11, atol=0)
    torch.testing.assert_close(gq1, gq0, rtol=1e-11, atol=1e-15)
    b2, gf2, gq2 = grads(f, q * 2.0**k)
    torch.testing.assert_close(b2, b0, rtol=1e-13, atol=1e-15)
    torch.testing.assert_close(gf2, gf0, rtol=1e-11, atol=1e-15)
    torch.testing.assert_close(gq2, gq0 * 2.0**-k, rtol=1e-11, atol=0)


@pytest.mark.cuda
@pytest.mark.parametrize("pool", POOLS)
def test_cuda_matches_cpu_at_extreme_magnitudes(pool):
    g = torch.Generator().manual_seed(15)
    f = torch.randn(3, 12, 7, generator=g, dtype=torch.float64)
    f[0] *= 1e300
    f[1, ::2] *= 1e-300
    f[1, 3] = 0.0
    f[2, :2] = FMAX
    q = torch.randn(3, 7, generator=g, dtype=torch.float64) * 1e200
    spans = torch.tensor([[[0, 11], [2, 5], [3, 3]]] * 3)
    for eps in (0.0, 1e-8):
        out = [span_similarity_all(f.to(dev), q.to(dev), pool=pool, max_len=5, eps=eps).cpu()
               for dev in ("cpu", "cuda")]
        torch.testing.assert_close(out[0], out[1], equal_nan=True, rtol=1e-14, atol=1e-15)
        out = [span_similarity(f.to(dev), q.to(dev), spans.to(dev), pool=pool, eps=eps).cpu()
               for dev in ("cpu", "cuda")]
        torch.testing.assert_close(out[0], out[1], equal_nan=True, rtol=1e-14, atol=1e-15)


# --------------------------------------------------------------------- errors


def test_errors():
    f, q = np.zeros((2, 4, 3)), np.zeros((2, 3))
    spans = np.zeros((2, 1, 2), dtype=np.int64)
    with pytest.raises(ValueError, match="span_similarity: pool must be 'mean_of_cos' or 'cos_of_mean', got 'max'"):
        span_similarity(f, q, spans, pool="max")
    with pytest.raises(TypeError, match="span_similarity_all: pool must be a string"):
        span_similarity_all(f, q, pool=None)
    with pytest.raises(ValueError, match=r"span_similarity: query must have shape \(B, D\) = \(2, 3\) to match frames \(2, 4, 3\), got shape \(2, 4\)"):
        span_similarity(f, np.zeros((2, 4)), spans, pool="mean_of_cos")
    with pytest.raises(ValueError, match=r"span_similarity_all: frames must have shape \(B, T, D\), got shape \(4, 3\)"):
        span_similarity_all(f[0], q, pool="mean_of_cos")
    with pytest.raises(ValueError, match=r"span_similarity: spans must have shape \(B, S, 2\) = \(2, S, 2\) of inclusive step indices, got shape \(2, 1, 3\)"):
        span_similarity(f, q, np.zeros((2, 1, 3), dtype=np.int64), pool="mean_of_cos")
    with pytest.raises(TypeError, match="span_similarity: spans must hold integers, got dtype float64"):
        span_similarity(f, q, spans.astype(float), pool="mean_of_cos")
    with pytest.raises(ValueError, match="span_similarity_all: max_len must be >= min_len, got max_len = 2 and min_len = 3"):
        span_similarity_all(f, q, pool="mean_of_cos", min_len=3, max_len=2)
    with pytest.raises(ValueError, match="span_similarity_all: min_len must be >= 1, got 0"):
        span_similarity_all(f, q, pool="mean_of_cos", min_len=0)
    with pytest.raises(ValueError, match=r"span_similarity_all: lengths must lie in \[0, T\] = \[0, 4\], got lengths\[1\] = 5"):
        span_similarity_all(f, q, pool="mean_of_cos", lengths=[4, 5])
    with pytest.raises(ValueError, match=r"span_similarity_all: lengths must have shape \(B,\) = \(2,\), got shape \(3,\)"):
        span_similarity_all(f, q, pool="mean_of_cos", lengths=[4, 4, 4])
    with pytest.raises(ValueError, match="span_similarity: eps must be >= 0, got -1"):
        span_similarity(f, q, spans, pool="mean_of_cos", eps=-1)
    with pytest.raises(TypeError, match="span_similarity: frames must hold real numbers"):
        span_similarity(f.astype(bool), q, spans, pool="mean_of_cos")
    with pytest.raises(TypeError, match="span_similarity: query must be a torch tensor like frames"):
        span_similarity(torch.zeros(2, 4, 3), q, torch.zeros(2, 1, 2, dtype=torch.int64),
                        pool="mean_of_cos")
    with pytest.raises(TypeError, match="span_similarity_all: lengths must hold integers, got torch.float32"):
        span_similarity_all(torch.zeros(2, 4, 3), torch.zeros(2, 3), pool="mean_of_cos",
                            lengths=torch.zeros(2))
