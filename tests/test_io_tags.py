# SPDX-License-Identifier: Apache-2.0
"""Tests for ``fastvqa.ops.io_to_spans`` and ``io_to_start_end`` against the
plain-loop references. Probabilities are drawn from quarters (exact in every
float dtype, so run means tie and are exact), plus NaN."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from fastvqa.ops import RaggedSpans, StartEnd, io_to_spans, io_to_start_end, span_argmax
from tests.conftest import DEVICES, to_np
from tests.conftest import assert_opcheck  # noqa: E402
from tests.reference.io_tags import io_to_spans_ref, io_to_start_end_ref

SETTINGS = dict(
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
QUARTERS = [0.0, 0.25, 0.5, 0.75, 1.0]


@st.composite
def problems(draw, values=st.sampled_from(QUARTERS + [math.nan]), max_B=5, max_T=30):
    B = draw(st.integers(0, max_B))
    T = draw(st.integers(0, max_T))
    probs = draw(arrays(np.float64, (B, T), elements=values))
    lengths = draw(st.one_of(st.none(), st.lists(st.integers(0, T), min_size=B, max_size=B)))
    if lengths is not None:
        lengths = np.array(lengths, dtype=np.int64).reshape(B)
    threshold = draw(st.sampled_from([0.5, 0.25, 0.75, 1.0, 0.1, 0.0]))
    min_len = draw(st.integers(1, 4))
    return probs, lengths, threshold, min_len


def check_spans(out, probs, lengths, threshold, min_len, dtype, cast_back=None):
    assert isinstance(out, RaggedSpans) and out._fields == ("spans", "offsets", "scores")
    spans, offsets, scores = (to_np(x) for x in out)
    r_spans, r_scores, r_off = io_to_spans_ref(probs, threshold, lengths, min_len, dtype)
    if cast_back is not None:  # half inputs: float32 means cast back to the input dtype
        r_scores = r_scores.astype(np.float32).astype(cast_back).astype(np.float64)
    assert spans.dtype == np.int64 and offsets.dtype == np.int64
    assert spans.shape == r_spans.shape
    np.testing.assert_array_equal(spans, r_spans)
    np.testing.assert_array_equal(scores.astype(np.float64), r_scores)
    np.testing.assert_array_equal(offsets, r_off)


@settings(max_examples=250, **SETTINGS)
@given(prob=problems(), dtype=st.sampled_from([np.float32, np.float64]),
       layout=st.sampled_from(["contiguous", "transposed", "reversed"]))
def test_io_to_spans_numpy(prob, dtype, layout):
    probs, lengths, threshold, min_len = prob
    p = probs.astype(dtype)
    if layout == "transposed":
        p = np.ascontiguousarray(p.T).T
    elif layout == "reversed":
        p = np.ascontiguousarray(p[:, ::-1])[:, ::-1]
    out = io_to_spans(p, threshold=threshold, lengths=lengths, min_len=min_len)
    assert all(isinstance(x, np.ndarray) for x in out) and out.scores.dtype == dtype
    check_spans(out, probs, lengths, threshold, min_len, dtype)


@settings(max_examples=120, **SETTINGS)
@given(prob=problems(), dtype=st.sampled_from([torch.float32, torch.float64, torch.float16]),
       strided=st.booleans())
def test_io_to_spans_torch(prob, dtype, strided):
    probs, lengths, threshold, min_len = prob
    p = torch.from_numpy(probs).to(dtype)
    if strided:
        big = torch.full((p.shape[0], 2 * p.shape[1]), 1.0, dtype=dtype)
        big[:, ::2] = p
        p = big[:, ::2]
    lens = None if lengths is None else torch.from_numpy(lengths).int()
    out = io_to_spans(p, threshold=threshold, lengths=lens, min_len=min_len)
    assert all(isinstance(x, torch.Tensor) for x in out) and out.scores.dtype == dtype
    check_spans(out, probs, lengths, threshold, min_len,
                np.float64 if dtype == torch.float64 else np.float32,
                cast_back=np.float16 if dtype == torch.float16 else None)


@settings(max_examples=100, **SETTINGS)
@given(prob=problems(values=st.floats(0, 1, width=32)),
       dtype=st.sampled_from([np.float32, np.float64]))
def test_io_to_spans_general_floats(prob, dtype):
    probs, lengths, threshold, min_len = prob
    out = io_to_spans(probs.astype(dtype), threshold=threshold, lengths=lengths, min_len=min_len)
    # float32 inputs are exact float32 values here, so the float64 reference run
    # on them rounds its means the same way.
    check_spans(out, probs.astype(dtype), lengths, threshold, min_len, dtype)


def test_io_to_spans_hand_computed():
    probs = np.array([
        [0.1, 0.6, 0.7, 0.2, 0.9, 0.9, 0.9, 0.5],
        [0.6, 0.6, 0.6, 0.6, 0.6, 0.6, 0.6, 0.6],
        [0.5, np.nan, 0.5, 0.4, 0.5, 0.5, 0.0, 0.0],
        [0.0] * 8,
    ])
    spans, off, scores = io_to_spans(probs, lengths=[8, 3, 8, 8])
    assert off.tolist() == [0, 2, 3, 6, 6]
    # row 0: [4, 7] mean 0.8, [1, 2] mean 0.65; row 1 cut at 3; row 2: NaN splits,
    # equal means 0.5 ordered by start.
    assert spans.tolist() == [[4, 7], [1, 2], [0, 2], [0, 0], [2, 2], [4, 5]]
    np.testing.assert_allclose(scores, [0.8, 0.65, 0.6, 0.5, 0.5, 0.5])
    spans, off, _ = io_to_spans(probs, min_len=2, threshold=0.55)
    assert spans.tolist() == [[4, 6], [1, 2], [0, 7]] and off.tolist() == [0, 2, 3, 3, 3]


def test_results_are_named_with_offsets_second():
    # 0.1 returned (spans, scores, offsets) here but (keep, offsets, scores) from nms_1d.
    probs = np.array([[0.1, 0.6, 0.7, 0.2, 0.9], [0.0] * 5])
    out = io_to_spans(probs)
    assert isinstance(out, RaggedSpans) and out._fields == ("spans", "offsets", "scores")
    assert out.offsets.tolist() == [0, 2, 2]
    assert out.spans.tolist() == [[4, 4], [1, 2]]
    np.testing.assert_allclose(out.scores, [0.9, 0.65])
    assert [r.tolist() for r in out.ragged().rows()] == [[[4, 4], [1, 2]], []]
    se = io_to_start_end(probs)
    assert isinstance(se, StartEnd) and se._fields == ("start", "end")
    np.testing.assert_allclose(se.start[0], [0.1, 0.5, 0.1, -0.5, 0.7])
    np.testing.assert_allclose(se.end[0], [-0.5, -0.1, 0.5, -0.7, 0.9])


@pytest.mark.parametrize("kind", ["numpy", "torch"])
@pytest.mark.parametrize("shape", [(0, 5), (3, 0), (0, 0)])
def test_io_empty(kind, shape):
    p = np.zeros(shape, np.float32)
    if kind == "torch":
        p = torch.from_numpy(p)
    spans, off, scores = io_to_spans(p)
    assert to_np(spans).shape == (0, 2) and to_np(scores).dtype == np.float32
    assert to_np(off).tolist() == [0] * (shape[0] + 1)
    start, end = io_to_start_end(p)
    assert to_np(start).shape == shape and to_np(end).dtype == np.float32


# --------------------------------------------------------------------------- #
# io_to_start_end
# --------------------------------------------------------------------------- #


@settings(max_examples=200, **SETTINGS)
@given(prob=problems(values=st.one_of(st.floats(-2, 2, width=32), st.just(math.nan))),
       dtype=st.sampled_from([np.float32, np.float64]), kind=st.sampled_from(["numpy", "torch"]))
def test_io_to_start_end_matches_reference(prob, dtype, kind):
    probs, lengths, _, _ = prob
    p = probs.astype(dtype)
    r_start, r_end = io_to_start_end_ref(p, lengths, dtype)
    if kind == "torch":
        p = torch.from_numpy(np.ascontiguousarray(p.T)).t()  # non-contiguous
        lengths = None if lengths is None else torch.from_numpy(lengths)
    start, end = io_to_start_end(p, lengths=lengths)
    assert type(start) is type(p) and to_np(start).dtype == dtype
    np.testing.assert_array_equal(to_np(start), r_start)
    np.testing.assert_array_equal(to_np(end), r_end)


def test_io_to_start_end_hand_computed():
    start, end = io_to_start_end(np.array([[0.1, 0.6, 0.7, 0.2], [0.5, 0.25, 1.0, 1.0]]),
                                 lengths=[4, 2])
    np.testing.assert_allclose(start, [[0.1, 0.5, 0.1, -0.5], [0.5, -0.25, np.nan, np.nan]])
    np.testing.assert_allclose(end, [[-0.5, -0.1, 0.5, 0.2], [0.25, 0.25, np.nan, np.nan]])


@settings(max_examples=150, **SETTINGS)
@given(tags=arrays(np.float64, (4, 20), elements=st.sampled_from([0.0, 1.0])),
       lengths=st.lists(st.integers(0, 20), min_size=4, max_size=4))
def test_span_argmax_decodes_the_first_run(tags, lengths):
    """On 0/1 tags every run has start 1 at its first step and end 1 at its last,
    so the best start/end span (ties: smaller start, then smaller end) is the
    first run; rows without a run have only spans scoring below 2."""
    lengths = np.array(lengths)
    start, end = io_to_start_end(tags, lengths=lengths)
    spans, scores = span_argmax(start, end)
    runs, off, _ = io_to_spans(tags, lengths=lengths)
    for b in range(4):
        row_runs = sorted(runs[off[b]:off[b + 1]].tolist())
        if row_runs:
            assert spans[b].tolist() == row_runs[0] and scores[b] == 2.0
        else:
            assert scores[b] < 2.0 or lengths[b] == 0


# --------------------------------------------------------------------------- #
# Errors
# --------------------------------------------------------------------------- #

P = np.zeros((2, 4))


@pytest.mark.parametrize("fn", [io_to_spans, io_to_start_end])
@pytest.mark.parametrize(
    "args, kwargs, exc, match",
    [
        ((P[0],), {}, ValueError, r"probs must have shape \(B, T\), got shape \(4,\)"),
        ((P[None],), {}, ValueError, r"probs must have shape \(B, T\)"),
        ((P.astype(bool),), {}, TypeError, "probs must hold real numbers"),
        ((P,), {"lengths": [1, 5]}, ValueError,
         r"lengths must lie in \[0, T\] = \[0, 4\], got lengths\[1\] = 5"),
        ((P,), {"lengths": [1, 2, 3]}, ValueError, r"lengths must have shape \(B,\) = \(2,\)"),
        ((P,), {"lengths": [1.0, 2.0]}, TypeError, "lengths must hold integers"),
        ((torch.zeros(2, 4),), {"lengths": np.array([1, 2])}, TypeError,
         "lengths must be a torch tensor"),
        ((torch.zeros(2, 4),), {"lengths": torch.tensor([-1, 2])}, ValueError, "lengths must lie"),
    ],
)
def test_errors(fn, args, kwargs, exc, match):
    with pytest.raises(exc, match=f"{fn.__name__}: {match}"):
        fn(*args, **kwargs)


@pytest.mark.parametrize(
    "kwargs, exc, match",
    [
        ({"threshold": math.nan}, ValueError, "io_to_spans: threshold must be a number"),
        ({"threshold": "x"}, TypeError, "threshold must be a real number"),
        ({"min_len": 0}, ValueError, "io_to_spans: min_len must be >= 1, got 0"),
        ({"min_len": 1.5}, TypeError, "min_len must be an integer"),
    ],
)
def test_io_to_spans_argument_errors(kwargs, exc, match):
    with pytest.raises(exc, match=match):
        io_to_spans(P, **kwargs)


# --------------------------------------------------------------------------- #
# torch.library: opcheck, torch.compile, CUDA
# --------------------------------------------------------------------------- #


def _probs(device, B=4, T=24, seed=0):
    g = torch.Generator().manual_seed(seed)
    return torch.rand(B, T, generator=g).to(device)


@pytest.mark.parametrize("device", DEVICES)
def test_opcheck(device):
    from fastvqa.ops import _torch_io_tags  # noqa: F401  (registers the ops)

    p = _probs(device)
    lengths = torch.tensor([24, 10, 0, 5], device=device)
    assert_opcheck(torch.ops.fastvqa.io_to_spans.default, (p, 0.5, 1, None))
    assert_opcheck(torch.ops.fastvqa.io_to_spans.default, (p, 0.3, 2, lengths))
    assert_opcheck(torch.ops.fastvqa.io_to_start_end.default, (p, None))
    # Padding steps are NaN, and opcheck compares outputs without equal_nan:
    # full lengths still take the lengths path.
    full = torch.full((4,), 24, device=device)
    assert_opcheck(torch.ops.fastvqa.io_to_start_end.default, (p, full))


def _pipeline(probs, lengths):
    spans, off, scores = io_to_spans(probs, threshold=0.5, lengths=lengths)
    start, end = io_to_start_end(probs, lengths=lengths)
    best, best_scores = span_argmax(start, end, max_len=8)
    return spans, scores.sum() + best_scores.sum(), off, best


@pytest.mark.parametrize("device", DEVICES)
def test_compile_fullgraph(device):
    torch._dynamo.reset()
    compiled = torch.compile(_pipeline, fullgraph=True)
    for seed in (0, 1):
        p = _probs(device, seed=seed)
        lengths = torch.tensor([24, 10, 0, 5], device=device)
        got, want = compiled(p, lengths), _pipeline(p, lengths)
        assert torch.equal(got[0], want[0]) and torch.equal(got[2], want[2])
        assert torch.equal(got[3], want[3])
        torch.testing.assert_close(got[1], want[1])


@pytest.mark.cuda
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_cuda_matches_cpu(dtype):
    g = torch.Generator().manual_seed(3)
    for B, T in ((0, 4), (3, 0), (64, 512), (7, 3000)):
        p = (torch.rand(B, T, generator=g, dtype=torch.float64) ** 0.5).to(dtype)
        lengths = torch.randint(0, T + 1, (B,), generator=g)
        for lens in (None, lengths):
            cpu = io_to_spans(p, threshold=0.6, lengths=lens, min_len=2)
            gpu = io_to_spans(p.cuda(), threshold=0.6, min_len=2,
                              lengths=None if lens is None else lens.cuda())
            for a, b in zip(cpu, gpu):
                assert b.is_cuda and torch.equal(a, b.cpu())
            cpu = io_to_start_end(p, lengths=lens)
            gpu = io_to_start_end(p.cuda(), lengths=None if lens is None else lens.cuda())
            for a, b in zip(cpu, gpu):
                assert torch.equal(a.nan_to_num(7.0), b.cpu().nan_to_num(7.0))
