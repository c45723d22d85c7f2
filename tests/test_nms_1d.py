# SPDX-License-Identifier: Apache-2.0
"""Tests for ``fastvqa.ops.nms_1d`` against the plain-loop reference.

Span endpoints are drawn from a small integer grid and scores from a few
exactly representable values (plus NaN and -inf), so identical spans, tied
scores and IoUs that equal the threshold are common; the reference mirrors the
compute dtype operation by operation, so kept indices must match *exactly*.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import math

import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fastvqa.ops import NmsResult, nms_1d, temporal_iou
from tests.conftest import DEVICES, to_np
from tests.conftest import assert_opcheck  # noqa: E402
from tests.reference.nms_1d import nms_1d_ref, special_endpoint_bound
from tests.reference.temporal_iou import span_overlap_exact_ref

SETTINGS = dict(
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
METHODS = ["hard", "linear", "gaussian"]
TIES = ["start", "stable"]
SCORE_VALUES = [0.0, 0.25, 0.5, 0.75, 1.0, 2.0, -1.0]
# 1/3 and 2/3 are IoUs of integer spans whose float32 and float64 roundings
# fall on opposite sides of the double threshold: exact comparison matters.
THRESHOLDS = [0.0, 0.25, 1 / 3, 0.5, 2 / 3, 0.7, 1.0]


def _libm_expf():
    """The float32 exp the CPU kernel calls (glibc ``expf``), or None."""
    name = ctypes.util.find_library("m")
    if name is None:
        return None
    try:
        fn = ctypes.CDLL(name).expf
    except (OSError, AttributeError):
        return None
    fn.restype, fn.argtypes = ctypes.c_float, [ctypes.c_float]
    return fn


EXPF = _libm_expf()


def ref(spans, scores, dtype, **kw):
    exp = EXPF if np.dtype(dtype) == np.float32 and EXPF is not None else None
    return nms_1d_ref(spans, scores, dtype=dtype, exp=exp, **kw)


def run(spans, scores, **kw):
    """nms_1d, checking its result has the same three named fields for every method."""
    out = nms_1d(spans, scores, **kw)
    assert isinstance(out, NmsResult) and out._fields == ("keep", "offsets", "scores")
    assert out.keep is out[0] and out.offsets is out[1] and out.scores is out[2]
    return out


@st.composite
def problems(draw, max_n=24, nan=True):
    n = draw(st.integers(0, max_n))
    grid = st.integers(0, 12).map(float)
    endpoint = st.one_of(grid, grid, grid, st.just(math.nan)) if nan else grid
    starts = draw(st.lists(endpoint, min_size=n, max_size=n))
    lengths = draw(st.lists(st.integers(-1, 6), min_size=n, max_size=n))  # -1: reversed
    spans = np.array([[s, s + d] for s, d in zip(starts, lengths)], dtype=np.float64)
    spans = spans.reshape(n, 2)
    score_values = SCORE_VALUES + ([math.nan, -math.inf] if nan else [])
    scores = np.array(draw(st.lists(st.sampled_from(score_values), min_size=n, max_size=n)))
    if draw(st.booleans()):
        cuts = sorted(draw(st.lists(st.integers(0, n), max_size=5)))
        offsets = np.array([0, *cuts, n], dtype=np.int64)
    else:
        offsets = None
    kw = dict(
        iou_threshold=draw(st.sampled_from(THRESHOLDS)),
        method=draw(st.sampled_from(METHODS)),
        sigma=draw(st.sampled_from([0.5, 0.1, 1.0])),
        score_threshold=draw(st.sampled_from([-math.inf, 0.0, 0.3])),
        ties=draw(st.sampled_from(TIES)),
    )
    return spans, scores, offsets, kw


def check_against_ref(out, spans, scores, offsets, kw, dtype):
    keep, keep_off = to_np(out[0]), to_np(out[1])
    r_keep, r_off, r_scores = ref(spans, scores, dtype, offsets=offsets, **kw)
    assert keep.dtype == np.int64 and keep_off.dtype == np.int64
    np.testing.assert_array_equal(keep, r_keep)
    np.testing.assert_array_equal(keep_off, r_off)
    # Hard NMS returns the input scores of the kept spans (as the reference does).
    kept = to_np(out[2]).astype(np.float64)
    if kw["method"] == "gaussian" and np.dtype(dtype) == np.float32 and EXPF is None:
        np.testing.assert_allclose(kept, r_scores, rtol=1e-6)
    else:
        np.testing.assert_array_equal(kept, r_scores)


# --------------------------------------------------------------------------- #
# Property tests against the reference
# --------------------------------------------------------------------------- #


@settings(max_examples=250, **SETTINGS)
@given(prob=problems(), dtype=st.sampled_from([np.float32, np.float64]))
def test_numpy_matches_reference(prob, dtype):
    spans, scores, offsets, kw = prob
    sp, sc = spans.astype(dtype), scores.astype(dtype)
    out = run(sp, sc, offsets=offsets, **kw)
    assert all(isinstance(x, np.ndarray) for x in out)
    assert out[2].dtype == dtype
    check_against_ref(out, spans, scores, offsets, kw, dtype)


@settings(max_examples=120, **SETTINGS)
@given(
    prob=problems(),
    dtype=st.sampled_from([torch.float32, torch.float64]),
    layout=st.sampled_from(["contiguous", "transposed", "strided"]),
    off_dtype=st.sampled_from([torch.int64, torch.int32]),
)
def test_torch_matches_reference(prob, dtype, layout, off_dtype):
    spans, scores, offsets, kw = prob
    sp = torch.from_numpy(spans).to(dtype)
    sc = torch.from_numpy(scores).to(dtype)
    if layout == "transposed":
        sp = sp.t().contiguous().t()
    elif layout == "strided":  # every other row and score of a bigger buffer
        big = torch.full((2 * len(sp), 2), 99.0, dtype=dtype)
        big[::2] = sp
        sp = big[::2]
        big_sc = torch.full((2 * len(sc),), 99.0, dtype=dtype)
        big_sc[::2] = sc
        sc = big_sc[::2]
    off = None if offsets is None else torch.from_numpy(offsets).to(off_dtype)
    out = run(sp, sc, offsets=off, **kw)
    assert all(isinstance(x, torch.Tensor) for x in out)
    np_dtype = np.float32 if dtype == torch.float32 else np.float64
    check_against_ref(out, spans, scores, offsets, kw, np_dtype)


@settings(max_examples=60, **SETTINGS)
@given(prob=problems(nan=False))
def test_hard_invariants(prob):
    """Kept spans of a group pairwise overlap at most the threshold, and every
    dropped span overlaps a kept span of its group that ranks before it by more."""
    spans, scores, offsets, kw = prob
    thr = kw["iou_threshold"]
    keep, keep_off, _ = nms_1d(spans, scores, iou_threshold=thr, offsets=offsets)
    off = [0, len(spans)] if offsets is None else list(offsets)
    for g in range(len(off) - 1):
        kept = keep[keep_off[g]:keep_off[g + 1]]
        assert all(off[g] <= k < off[g + 1] for k in kept)
        if len(kept):
            iou = temporal_iou(spans[kept], spans[kept])
            np.fill_diagonal(iou, 0.0)
            assert (iou <= thr).all()
            ks = scores[kept]
            assert (ks[:-1] >= ks[1:]).all()
        for k in set(range(off[g], off[g + 1])) - set(kept.tolist()):
            assert any(
                temporal_iou(spans[[q]], spans[[k]])[0, 0] > thr for q in kept
            )


def test_multi_tile_groups_match_reference():
    """Groups larger than the 64-wide CUDA tiles (and one group of 200)."""
    rng = np.random.default_rng(0)
    n = 500
    starts = rng.integers(0, 60, n).astype(np.float64)
    spans = np.stack([starts, starts + rng.integers(0, 12, n)], axis=1)
    scores = rng.choice([0.1, 0.2, 0.3, 0.5, 0.9], n)
    offsets = np.array([0, 1, 65, 65, 130, 300, 500])
    for method in METHODS:
        for dtype in (np.float32, np.float64):
            kw = dict(iou_threshold=0.4, method=method, sigma=0.5)
            out = run(spans.astype(dtype), scores.astype(dtype), offsets=offsets, **kw)
            check_against_ref(out, spans, scores, offsets, kw, dtype)


# --------------------------------------------------------------------------- #
# Hard NMS on groups above 64 spans: the CPU path that indexes the kept spans
# by start (O(N log N)) must keep exactly what the greedy loop keeps.
# --------------------------------------------------------------------------- #


@st.composite
def large_hard_problems(draw):
    """Groups of 65..200 spans (the indexed path) beside small ones (the plain
    loop): dense or sparse integer grids, so ties, duplicates, touching and
    nested spans, zero-length and reversed spans, IoUs equal to the threshold;
    NaN and +-inf endpoints, NaN and -inf scores; thresholds 0, 1 and < 0."""
    sizes = draw(st.lists(st.integers(0, 200), min_size=1, max_size=4))
    if max(sizes) <= 64:
        sizes.append(draw(st.integers(65, 200)))
    n = sum(sizes)
    hi = draw(st.sampled_from([8, 40, 400]))  # heavy overlap .. sparse
    specials = draw(st.sampled_from([[], [math.nan], [math.nan, math.inf, -math.inf]]))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    starts = rng.integers(0, hi, n).astype(np.float64)
    lengths = rng.integers(-1, max(2, hi // 4), n).astype(np.float64)  # -1 reversed, 0 empty
    spans = np.stack([starts, starts + lengths], axis=1)
    if specials:
        hit = rng.random((n, 2)) < 0.03
        spans[hit] = rng.choice(specials, int(hit.sum()))
    values = SCORE_VALUES + [0.125, 0.375, 0.625, 0.875]
    if draw(st.booleans()):
        values = values + [math.nan, -math.inf]
    scores = rng.choice(values, n)
    offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    kw = dict(
        iou_threshold=draw(st.sampled_from(THRESHOLDS + [-0.5, 0.9, 1.5])),
        method="hard",
        score_threshold=draw(st.sampled_from([-math.inf, -math.inf, 0.3])),
        ties=draw(st.sampled_from(TIES)),
    )
    return spans, scores, offsets, kw


@settings(max_examples=150, **SETTINGS)
@given(prob=large_hard_problems(), dtype=st.sampled_from([np.float32, np.float64]))
def test_hard_indexed_path_matches_reference(prob, dtype):
    spans, scores, offsets, kw = prob
    out = run(spans.astype(dtype), scores.astype(dtype), offsets=offsets, **kw)
    check_against_ref(out, spans, scores, offsets, kw, dtype)


def test_hard_indexed_path_hand_computed():
    """A group of 70: the kept spans overlap each other (threshold 0.5), so the
    suppressor of a candidate is not the kept span starting closest before it."""
    # One long span [0, 100] first, then unit spans [i, i + 1] at i = 0..67,
    # then [10, 12] (IoU 1/2 with [10, 11] and [11, 12]: kept at 0.5, not at 0.4).
    spans = np.array([[0.0, 100.0]] + [[i, i + 1.0] for i in range(68)] + [[10.0, 12.0]])
    scores = np.array([1.0] + [0.5] * 68 + [0.25])
    for dtype in (np.float32, np.float64):
        sp, sc = spans.astype(dtype), scores.astype(dtype)
        keep, _, _ = nms_1d(sp, sc, iou_threshold=0.5)
        assert keep.tolist() == list(range(70))
        keep, _, _ = nms_1d(sp, sc, iou_threshold=0.4)
        assert keep.tolist() == list(range(69))
        # IoU 0 suppresses at a negative threshold: only the first span stays.
        keep, _, _ = nms_1d(sp, sc, iou_threshold=-0.1)
        assert keep.tolist() == [0]
        # A NaN endpoint is never suppressed; an infinite one is compared exactly.
        sp2 = sp.copy()
        sp2[69] = [np.nan, 12.0]
        sp2[68] = [np.inf, np.inf]
        keep, _, _ = nms_1d(sp2, sc, iou_threshold=0.4)
        assert keep.tolist() == list(range(70))


def test_hard_large_n_matches_reference_per_cluster():
    """200k spans in one group at constant density (about 30k kept), which the
    O(N * kept) loop took seconds for: the spans lie in 4000 disjoint clusters
    of 50, so the greedy result is each cluster's own greedy result, merged in
    rank order. Checked against the reference on a sample of clusters, and in
    whole against the same clusters run as groups (<= 64 spans: the plain loop
    the property tests check)."""
    rng = np.random.default_rng(7)
    clusters, per = 4000, 50
    n = clusters * per
    base = np.repeat(np.arange(clusters) * 100.0, per)
    starts = base + rng.integers(0, 60, n)
    spans = np.stack([starts, starts + rng.integers(1, 15, n)], axis=1)
    scores = rng.choice(np.arange(64) / 64.0, n)  # many ties across clusters
    offsets = np.arange(0, n + 1, per)
    keep, off, kept_scores = nms_1d(spans, scores, iou_threshold=0.5)
    assert off.tolist() == [0, len(keep)] and len(keep) > 25_000
    # Rank order: score descending, then start, end and index ascending.
    order = np.lexsort((keep, spans[keep, 1], spans[keep, 0], -scores[keep]))
    np.testing.assert_array_equal(order, np.arange(len(keep)))
    np.testing.assert_array_equal(kept_scores, scores[keep])
    by_group, _, _ = nms_1d(spans, scores, iou_threshold=0.5, offsets=offsets)
    np.testing.assert_array_equal(np.sort(keep), np.sort(by_group))
    for c in rng.choice(clusters, 40, replace=False):
        lo = int(c) * per
        r_keep, _, _ = nms_1d_ref(spans[lo:lo + per], scores[lo:lo + per], 0.5)
        mine = keep[(keep >= lo) & (keep < lo + per)] - lo
        np.testing.assert_array_equal(mine, r_keep)


# --------------------------------------------------------------------------- #
# Hard NMS against an independent float64 greedy loop, on seeded random
# groups built to reach every branch of the indexed CPU path: time buckets
# (ties, duplicates, spans covering one or many buckets, spans longer than the
# whole group), the trees for long kept spans and long candidates, zero-length
# and reversed spans, infinite and NaN endpoints, NaN and tied scores, a
# score_threshold, groups whose kept count crosses the 64 where the plain loop
# hands over, and extents that overflow (no buckets at all).
# --------------------------------------------------------------------------- #


def _special_pair(a0, a1, s, e):
    """Which kept spans (a0, a1) form a pair with a special endpoint with (s, e)."""
    big = special_endpoint_bound(float)
    with np.errstate(invalid="ignore"):
        kept_special = (np.abs(a0) >= big) | (np.abs(a1) >= big)
    return kept_special | (abs(s) >= big or abs(e) >= big)


def _greedy_hard_f64(spans, scores, offsets, iou_threshold, score_threshold):
    """The docstring's greedy hard NMS in float64, one group at a time: take
    spans by higher score, then smaller start, smaller end, smaller index (NaN
    after every number); drop a span whose score is NaN or below
    score_threshold, or whose IoU with an already kept span of its group is
    > iou_threshold. IoU: len = max(end - start, 0), inter = max(min(ends) -
    max(starts), 0), union = len_a + len_b - inter, inter / union (0 when
    union <= 0), NaN with a NaN endpoint (which suppresses nothing); IEEE
    float64 arithmetic, except for pairs with an endpoint that is infinite or
    >= 2**1020 in magnitude, which take the exact value of temporal_iou's
    reference (so [0, inf] and [5, inf] have IoU 1). Vectorised over the kept spans of
    a group, which changes no rounding."""
    def nan_last(x):
        return (1, 0.0) if math.isnan(x) else (0, x)

    keep, out_off = [], [0]
    for g in range(len(offsets) - 1):
        lo, hi = int(offsets[g]), int(offsets[g + 1])
        order = sorted(range(lo, hi), key=lambda k: (
            (1, 0.0) if math.isnan(scores[k]) else (0, -float(scores[k])),
            nan_last(float(spans[k, 0])), nan_last(float(spans[k, 1])), k))
        ks = np.empty(hi - lo)
        ke = np.empty(hi - lo)
        count = 0
        for k in order:
            s, e, sc = float(spans[k, 0]), float(spans[k, 1]), float(scores[k])
            if math.isnan(sc) or sc < score_threshold:
                continue
            if count and not (math.isnan(s) or math.isnan(e)):
                a0, a1 = ks[:count], ke[:count]
                with np.errstate(all="ignore"):
                    len_a = np.maximum(a1 - a0, 0.0)
                    len_c = max(e - s, 0.0) if not math.isnan(e - s) else math.nan
                    inter = np.maximum(np.minimum(a1, e) - np.maximum(a0, s), 0.0)
                    union = len_a + len_c - inter
                    iou = np.where(union > 0, inter / np.where(union > 0, union, 1.0), 0.0)
                    iou[np.isnan(a0) | np.isnan(a1)] = np.nan
                # A pair with an infinite or huge endpoint: temporal_iou's exact rule.
                for t in np.nonzero(_special_pair(a0, a1, s, e))[0]:
                    iou[t] = span_overlap_exact_ref(a0[t], a1[t], s, e, "iou")
                if (iou > iou_threshold).any():
                    continue
            ks[count], ke[count] = s, e
            count += 1
            keep.append(k)
        out_off.append(len(keep))
    return np.array(keep, dtype=np.int64), np.array(out_off, dtype=np.int64)


def _random_group(rng, n, kind):
    """n spans of one group, drawn by `kind` (see the section comment)."""
    if kind == "grid":  # small integer grid: ties, duplicates, IoU == threshold
        starts = rng.integers(0, max(4, n // 8), n).astype(np.float64)
        lengths = rng.integers(-1, 8, n).astype(np.float64)
    elif kind == "dense":  # continuous, constant density, some long spans
        starts = rng.uniform(0, n / 10, n)
        lengths = rng.uniform(1, 30, n)
        long = rng.random(n) < 0.05
        lengths[long] *= rng.choice([5.0, 50.0, 5000.0], int(long.sum()))
    elif kind == "multiscale":  # lengths over six decades
        starts = rng.uniform(0, 1000, n)
        lengths = 10.0 ** rng.uniform(-3, 3, n)
    elif kind == "spread":  # a dense cluster and a few spans far away
        starts = np.where(rng.random(n) < 0.9, rng.uniform(0, 50, n), rng.uniform(-1e9, 1e9, n))
        lengths = rng.uniform(0.5, 5, n)
    else:  # "huge": finite endpoints whose extent overflows
        starts = rng.choice([-1.7e308, 1.7e308, 0.0], n) + rng.uniform(-1, 1, n) * 1e300
        lengths = rng.uniform(0, 1e300, n)
    spans = np.stack([starts, starts + lengths], axis=1)
    zero = rng.random(n) < 0.05
    spans[zero, 1] = spans[zero, 0]
    special = rng.random((n, 2)) < 0.01
    spans[special] = rng.choice([math.nan, math.inf, -math.inf], int(special.sum()))
    return spans


@pytest.mark.parametrize("seed", range(12))
def test_hard_matches_float64_greedy_on_random_groups(seed):
    rng = np.random.default_rng(1000 + seed)
    kinds = ["grid", "dense", "multiscale", "spread", "huge"]
    sizes = [int(rng.integers(0, 40)), int(rng.integers(100, 1500)),
             int(rng.integers(100, 1500)), int(rng.integers(64, 70))]
    parts = [_random_group(rng, n, kinds[(seed + i) % len(kinds)]) for i, n in enumerate(sizes)]
    # The last group: 66 disjoint unit spans ranked first (the kept count
    # crosses 64 inside them), then spans over them.
    k = sizes[-1]
    parts[-1] = np.concatenate([np.stack([np.arange(66) * 2.0, np.arange(66) * 2.0 + 1], 1),
                                parts[-1][: k - 66] if k > 66 else np.zeros((0, 2))])
    sizes[-1] = len(parts[-1])
    spans = np.concatenate(parts)
    n = len(spans)
    scores = rng.choice(np.arange(16) / 16.0, n) if seed % 2 else rng.random(n)
    scores[rng.random(n) < 0.02] = math.nan
    scores[n - sizes[-1]: n - sizes[-1] + 66] = 2.0
    offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    for iou_threshold in (0.0, 0.5, 0.7, 1.0, -0.1):
        score_threshold = -math.inf if iou_threshold != 0.5 else 0.25
        keep, off, kept_scores = nms_1d(spans, scores, iou_threshold=iou_threshold,
                                        offsets=offsets, score_threshold=score_threshold)
        r_keep, r_off = _greedy_hard_f64(spans, scores, offsets, iou_threshold,
                                         score_threshold)
        np.testing.assert_array_equal(off, r_off)
        np.testing.assert_array_equal(keep, r_keep)
        np.testing.assert_array_equal(kept_scores, scores[r_keep])


def test_hard_long_spans_over_many_buckets_hand_computed():
    """Unit spans [2i, 2i + 1] (all kept) set the bucket width; then spans
    covering all of them or part of one: each is kept or dropped by its own
    IoUs, however many buckets it covers."""
    units = np.stack([np.arange(200) * 2.0, np.arange(200) * 2.0 + 1], 1)
    others = np.array([[0.0, 399.0],    # covers every unit span: IoU 1/399 with each
                       [10.0, 10.75],   # inside unit 5: IoU 0.75
                       [20.5, 21.5],    # half of unit 10: IoU 1/3
                       [-1.0, 401.0]])  # IoU 399/402 with span 200, 1/402 with a unit
    spans = np.concatenate([units, others])
    scores = np.concatenate([np.ones(200), [0.6, 0.5, 0.5, 0.4]])
    units_kept = list(range(200))
    for thr, rest in ((0.5, [200, 202]), (0.3, [200]), (0.995, [200, 201, 202, 203]),
                      (0.0, [])):  # 0: any overlap suppresses
        for dtype in (np.float32, np.float64):
            keep, _, _ = nms_1d(spans.astype(dtype), scores.astype(dtype), iou_threshold=thr)
            assert keep.tolist() == units_kept + rest, (thr, dtype)


# --------------------------------------------------------------------------- #
# Hand-computed cases
# --------------------------------------------------------------------------- #


def test_hard_hand_computed():
    spans = np.array([[0.0, 10.0], [1.0, 11.0], [20.0, 30.0], [0.0, 10.0], [5.0, 15.0]])
    scores = np.array([0.9, 0.8, 0.7, 0.95, 0.6])
    # [0,10] vs [1,11]: 9/11 = 0.82; vs [5,15]: 5/15 = 1/3; identical spans: 1.
    keep, off, _ = nms_1d(spans, scores, iou_threshold=0.5)
    assert keep.tolist() == [3, 2, 4] and off.tolist() == [0, 3]
    keep, _, _ = nms_1d(spans, scores, iou_threshold=0.3)
    assert keep.tolist() == [3, 2]
    # Strict >: an IoU equal to the threshold does not suppress.
    keep, _, _ = nms_1d(spans, scores, iou_threshold=1.0)
    assert keep.tolist() == [3, 0, 1, 2, 4]
    keep, _, _ = nms_1d(spans, scores, iou_threshold=9 / 11)
    assert keep.tolist() == [3, 1, 2, 4]


@pytest.mark.parametrize("method", METHODS)
def test_result_has_the_same_named_fields_for_every_method(method):
    # 0.1 returned (keep, offsets) for hard and (keep, offsets, scores) for soft.
    spans = np.array([[0.0, 10.0], [1.0, 11.0], [20.0, 30.0], [0.0, 10.0], [5.0, 15.0]])
    scores = np.array([0.9, 0.8, 0.7, 0.95, 0.6])
    out = nms_1d(spans, scores, iou_threshold=0.5, method=method, offsets=[0, 3, 5])
    assert isinstance(out, NmsResult) and out._fields == ("keep", "offsets", "scores")
    keep, offsets, kept = out
    if method == "hard":  # the kept spans' own scores
        assert keep.tolist() == [0, 2, 3, 4] and offsets.tolist() == [0, 2, 4]
        assert kept.tolist() == [0.9, 0.7, 0.95, 0.6]
    else:  # soft-NMS with the default score_threshold returns every span, reordered
        assert offsets.tolist() == [0, 3, 5] and keep.tolist()[::3] == [0, 3]
        assert kept.shape == (5,) and kept[0] == 0.9 and kept[3] == 0.95
    bounds = offsets.tolist()
    assert [r.tolist() for r in out.ragged().rows()] == [keep.tolist()[:bounds[1]],
                                                         keep.tolist()[bounds[1]:]]


def test_threshold_equal_iou_is_kept_in_both_dtypes():
    spans = np.array([[0.0, 3.0], [1.0, 3.0]])  # IoU 2/3 exactly
    scores = np.array([1.0, 0.5])
    for dtype in (np.float32, np.float64):
        keep, _, _ = nms_1d(spans.astype(dtype), scores.astype(dtype), iou_threshold=0.5)
        assert keep.tolist() == [0]
        keep, _, _ = nms_1d(spans.astype(dtype), scores.astype(dtype), iou_threshold=0.7)
        assert keep.tolist() == [0, 1]


def test_ties_order():
    # Equal scores: smaller start, then smaller end, then smaller index.
    spans = np.array([[5.0, 6.0], [1.0, 3.0], [1.0, 2.0], [1.0, 2.0], [0.0, 9.0]])
    scores = np.array([1.0, 1.0, 1.0, 1.0, 0.5])
    keep, _, _ = nms_1d(spans, scores, iou_threshold=1.0)
    assert keep.tolist() == [2, 3, 1, 0, 4]
    keep, _, _ = nms_1d(spans, scores, iou_threshold=0.9)  # 3 duplicates 2
    assert keep.tolist() == [2, 1, 0, 4]


def test_stable_ties_keep_input_order_hand_computed():
    # Same spans as test_ties_order; equal scores now keep the input order.
    spans = np.array([[5.0, 6.0], [1.0, 3.0], [1.0, 2.0], [1.0, 2.0], [0.0, 9.0]])
    scores = np.array([1.0, 1.0, 1.0, 1.0, 0.5])
    keep, _, _ = nms_1d(spans, scores, iou_threshold=1.0, ties="stable")
    assert keep.tolist() == [0, 1, 2, 3, 4]
    # IoU([1,3], [1,2]) = 0.5 > 0.4: span 1 (first in the file) suppresses 2
    # and 3; "start" keeps 2 (smaller end) and suppresses 1 and 3 instead.
    keep, _, _ = nms_1d(spans, scores, iou_threshold=0.4, ties="stable")
    assert keep.tolist() == [0, 1, 4]
    keep, _, _ = nms_1d(spans, scores, iou_threshold=0.4)
    assert keep.tolist() == [2, 0, 4]
    assert nms_1d(spans, scores, iou_threshold=0.4, ties="start")[0].tolist() == [2, 0, 4]
    # A higher score still wins over input order; NaN scores are never kept.
    keep, _, kept = nms_1d(spans, np.array([1.0, 2.0, 1.0, math.nan, 2.0]), iou_threshold=1.0,
                           ties="stable")
    assert keep.tolist() == [1, 4, 0, 2] and kept.tolist() == [2.0, 2.0, 1.0, 1.0]
    # Soft-NMS: equal current scores are taken in input order too. Span 0 and
    # 1 are disjoint from each other and from 2, so nothing decays.
    keep, _, _ = nms_1d(np.array([[4.0, 5.0], [0.0, 1.0], [2.0, 3.0]]), np.ones(3),
                        iou_threshold=0.5, method="linear", ties="stable")
    assert keep.tolist() == [0, 1, 2]


@settings(max_examples=150, **SETTINGS)
@given(n=st.integers(0, 40), data=st.data(), method=st.sampled_from(METHODS))
def test_stable_ties_equal_a_stable_sort_of_many_ties(n, data, method):
    # Very few distinct scores: almost every comparison is a tie. With
    # ties="stable" the kept order must be that of Python's stable sort by
    # descending score, restricted to the kept spans (hard NMS keeps a
    # subsequence of that order; without overlap every span is kept).
    starts = data.draw(st.lists(st.integers(0, 30).map(float), min_size=n, max_size=n))
    spans = np.array([[s, s + 1.0] for s in starts]).reshape(n, 2)
    scores = np.array(data.draw(st.lists(st.sampled_from([0.0, 1.0]), min_size=n, max_size=n)))
    order = sorted(range(n), key=lambda k: -scores[k])  # stable
    keep, _, _ = nms_1d(spans, scores, iou_threshold=0.5, method=method, ties="stable")
    r_keep, _, _ = nms_1d_ref(spans, scores, 0.5, method=method, ties="stable")
    np.testing.assert_array_equal(keep, r_keep)
    if method == "hard":
        pos = [order.index(k) for k in keep.tolist()]
        assert pos == sorted(pos)
    # Disjoint spans (all starts distinct, unit length) are all kept, in the
    # stable order, by every method.
    disjoint = np.array([[2.0 * k, 2.0 * k + 1.0] for k in range(n)]).reshape(n, 2)
    keep, _, _ = nms_1d(disjoint, scores, iou_threshold=0.5, method=method, ties="stable")
    assert keep.tolist() == order


def test_groups_are_independent_and_empty_groups_allowed():
    spans = np.array([[0.0, 10.0], [0.0, 10.0], [0.0, 10.0]])
    scores = np.array([0.5, 0.9, 0.7])
    keep, off, _ = nms_1d(spans, scores, iou_threshold=0.5, offsets=[0, 0, 2, 2, 3, 3])
    assert keep.tolist() == [1, 2] and off.tolist() == [0, 0, 1, 1, 2, 2]
    keep, off, _ = nms_1d(spans, scores, iou_threshold=0.5)
    assert keep.tolist() == [1] and off.tolist() == [0, 1]


def test_soft_hand_computed():
    spans = np.array([[0.0, 10.0], [1.0, 11.0], [20.0, 30.0]])
    scores = np.array([0.9, 0.8, 0.7])
    iou = 9 / 11
    keep, off, s = nms_1d(spans, scores, iou_threshold=0.5, method="linear")
    assert keep.tolist() == [0, 2, 1] and off.tolist() == [0, 3]
    np.testing.assert_allclose(s, [0.9, 0.7, 0.8 * (1 - iou)], rtol=1e-15)
    keep, _, s = nms_1d(spans, scores, iou_threshold=0.5, method="gaussian", sigma=0.5)
    assert keep.tolist() == [0, 2, 1]
    np.testing.assert_allclose(s, [0.9, 0.7, 0.8 * math.exp(-iou**2 / 0.5)], rtol=1e-15)
    # Linear below the threshold leaves scores alone; the order is by score.
    keep, _, s = nms_1d(spans, scores, iou_threshold=0.9, method="linear")
    assert keep.tolist() == [0, 1, 2] and s.tolist() == [0.9, 0.8, 0.7]
    # score_threshold drops spans decayed below it (and low inputs).
    keep, _, s = nms_1d(spans, scores, iou_threshold=0.5, method="linear", score_threshold=0.2)
    assert keep.tolist() == [0, 2]
    keep, _, _ = nms_1d(spans, scores, iou_threshold=0.5, method="gaussian", score_threshold=0.75)
    assert keep.tolist() == [0]
    # Decay re-orders: after taking 0, span 1 (0.8 -> 0.145) falls behind span 2.
    keep, _, _ = nms_1d(spans, np.array([0.9, 0.8, 0.3]), iou_threshold=0.5, method="linear")
    assert keep.tolist() == [0, 2, 1]


def test_score_threshold_applies_to_hard():
    spans = np.array([[0.0, 1.0], [5.0, 6.0], [9.0, 10.0]])
    keep, _, _ = nms_1d(spans, np.array([0.9, 0.1, 0.5]), iou_threshold=0.5, score_threshold=0.5)
    assert keep.tolist() == [0, 2]


def test_nan_behaviour():
    spans = np.array([[0.0, 10.0], [0.0, 10.0], [np.nan, 10.0], [0.0, 10.0]])
    scores = np.array([np.nan, 0.5, 0.9, 0.4])
    for method in METHODS:
        out = nms_1d(spans, scores, iou_threshold=0.5, method=method)
        keep = out[0].tolist()
        # NaN score: never kept. NaN endpoint: kept, suppresses/decays nothing.
        assert 0 not in keep
        assert keep[:2] == [2, 1]
        if method == "hard":
            assert keep == [2, 1]
        else:
            assert keep == [2, 1, 3]
    # -inf scores are valid and rank last.
    keep, _, _ = nms_1d(spans[[1, 3]], np.array([-np.inf, 0.0]), iou_threshold=1.0)
    assert keep.tolist() == [1, 0]


@pytest.mark.parametrize("kind", ["numpy", "torch"])
@pytest.mark.parametrize("method", METHODS)
def test_empty(kind, method):
    conv = (lambda x: torch.from_numpy(np.asarray(x))) if kind == "torch" else np.asarray
    spans, scores = conv(np.zeros((0, 2), np.float32)), conv(np.zeros(0, np.float32))
    for offsets, expect in ((None, [0, 0]), ([0], [0]), ([0, 0, 0], [0, 0, 0])):
        off = None if offsets is None else conv(np.array(offsets, dtype=np.int64))
        out = nms_1d(spans, scores, iou_threshold=0.5, method=method, offsets=off)
        assert type(out[0]) is type(spans)
        assert to_np(out[0]).shape == (0,) and to_np(out[0]).dtype == np.int64
        assert to_np(out[1]).tolist() == expect
        assert to_np(out[2]).dtype == np.float32


def test_dtypes():
    spans = np.array([[0, 10], [1, 11]], dtype=np.int32)
    _, _, s = nms_1d(spans, np.array([2, 1]), iou_threshold=0.5, method="linear")
    assert s.dtype == np.float64
    _, _, s = nms_1d(spans.astype(np.float32), np.array([2.0, 1.0], np.float32),
                     iou_threshold=0.5, method="gaussian")
    assert s.dtype == np.float32
    for dtype in (torch.float16, torch.bfloat16):
        sp = torch.tensor([[0.0, 10.0], [1.0, 11.0], [20.0, 30.0]], dtype=dtype)
        sc = torch.tensor([0.5, 0.25, 0.75], dtype=dtype)
        keep, off, s = nms_1d(sp, sc, iou_threshold=0.5, method="linear")
        assert keep.tolist() == [2, 0, 1] and s.dtype == dtype
    sp = torch.tensor([[0.0, 10.0], [1.0, 11.0]], requires_grad=True)
    sc = torch.tensor([0.5, 0.25], requires_grad=True)
    keep, off, s = nms_1d(sp, sc, iou_threshold=0.5, method="gaussian")
    assert not s.requires_grad and not keep.requires_grad


# --------------------------------------------------------------------------- #
# Errors
# --------------------------------------------------------------------------- #

S = np.zeros((3, 2))
C = np.zeros(3)


@pytest.mark.parametrize(
    "args, kwargs, exc, match",
    [
        ((S[:, 0], C), {}, ValueError, r"nms_1d: spans must have shape \(N, 2\)"),
        ((np.zeros((3, 3)), C), {}, ValueError, r"spans must have shape \(N, 2\)"),
        ((S, np.zeros(4)), {}, ValueError, r"scores must have shape \(N,\) = \(3,\)"),
        ((S, np.zeros((3, 1))), {}, ValueError, r"scores must have shape \(N,\)"),
        ((S.astype(bool), C), {}, TypeError, "must hold real numbers"),
        ((S, C), {"method": "soft"}, ValueError, "method must be one of 'hard', 'linear'"),
        ((S, C), {"method": 1}, TypeError, "method must be a string"),
        ((S, C), {"ties": "index"}, ValueError, "ties must be one of 'start', 'stable'"),
        ((torch.zeros(3, 2), torch.zeros(3)), {"ties": "index"}, ValueError,
         "ties must be one of 'start', 'stable'"),
        ((S, C), {"ties": None}, TypeError, "ties must be a string"),
        ((S, C), {"sigma": 0.0}, ValueError, "sigma must be > 0, got 0"),
        ((S, C), {"iou_threshold": math.nan}, ValueError, "iou_threshold must be a number"),
        ((S, C), {"iou_threshold": "0.5"}, TypeError, "iou_threshold must be a real number"),
        ((S, C), {"iou_threshold": True}, TypeError, "iou_threshold must be a real number"),
        ((S, C), {"score_threshold": math.nan}, ValueError, "score_threshold must be a number"),
        ((S, C), {"offsets": [0, 1]}, ValueError,
         r"offsets must end at the number of spans \(3\), got 1"),
        ((S, C), {"offsets": [1, 3]}, ValueError, "offsets must start at 0, got 1"),
        ((S, C), {"offsets": [0, 2, 1, 3]}, ValueError, "offsets must be non-decreasing"),
        ((S, C), {"offsets": np.zeros(0, np.int64)}, ValueError,
         r"offsets must have shape \(G \+ 1,\)"),
        ((S, C), {"offsets": [[0, 3]]}, ValueError, r"offsets must have shape \(G \+ 1,\)"),
        ((S, C), {"offsets": [0.0, 3.0]}, TypeError, "offsets must hold integers"),
        ((torch.zeros(3, 2), C), {}, TypeError, "scores must be a torch tensor"),
        ((torch.zeros(3, 2), torch.zeros(3)), {"offsets": np.array([0, 3])}, TypeError,
         "offsets must be a torch tensor"),
        ((torch.zeros(3, 2), torch.zeros(3)), {"offsets": torch.tensor([0.0, 3.0])}, TypeError,
         "offsets must hold integers"),
        ((torch.zeros(3, 2), torch.zeros(3)), {"offsets": torch.tensor([0, 2])}, ValueError,
         "offsets must end at the number of spans"),
        ((torch.zeros(3, 2), torch.zeros(2)), {}, ValueError, r"scores must have shape \(N,\)"),
    ],
)
def test_errors(args, kwargs, exc, match):
    kwargs = {"iou_threshold": 0.5, **kwargs}
    with pytest.raises(exc, match=match):
        nms_1d(*args, **kwargs)


def test_iou_threshold_is_required():
    with pytest.raises(TypeError, match="iou_threshold"):
        nms_1d(S, C)  # type: ignore[call-arg]


# --------------------------------------------------------------------------- #
# torch.library: opcheck, torch.compile, CUDA
# --------------------------------------------------------------------------- #


def _random_problem(n, groups, seed, device="cpu", dtype=torch.float32):
    g = torch.Generator().manual_seed(seed)
    starts = torch.randint(0, 50, (n,), generator=g).to(dtype)
    spans = torch.stack([starts, starts + torch.randint(0, 10, (n,), generator=g)], 1)
    scores = torch.rand(n, generator=g, dtype=torch.float64).to(dtype)
    cuts = torch.randint(0, n + 1, (groups - 1,), generator=g).sort().values
    offsets = torch.cat([torch.tensor([0]), cuts, torch.tensor([n])])
    return spans.to(device), scores.to(device), offsets.to(device)


@pytest.mark.parametrize("device", DEVICES)
def test_opcheck(device):
    from fastvqa.ops import _torch_nms_1d  # noqa: F401  (registers the ops)

    spans, scores, offsets = _random_problem(40, 4, 0, device)
    op = torch.ops.fastvqa.nms_1d.default
    for method in METHODS:
        for ties in TIES:
            assert_opcheck(op, (spans, scores, offsets, 0.5, method, 0.5, -math.inf, ties))
            assert_opcheck(op, (spans, scores, None, 0.3, method, 0.5, 0.2, ties))


def _pipeline(spans, scores, offsets):
    keep, keep_off, _ = nms_1d(spans, scores, iou_threshold=0.5, offsets=offsets)
    keep2, _, soft = nms_1d(spans, scores, iou_threshold=0.5, method="gaussian")
    return spans[keep].sum() + scores[keep].sum(), keep, keep_off, soft.sum() + keep2.numel()


@pytest.mark.parametrize("device", DEVICES)
def test_compile_fullgraph_dynamic_output(device):
    torch._dynamo.reset()
    compiled = torch.compile(_pipeline, fullgraph=True)
    for n, seed in ((30, 1), (57, 2)):
        args = _random_problem(n, 3, seed, device)
        got, want = compiled(*args), _pipeline(*args)
        torch.testing.assert_close(got[0], want[0])
        assert torch.equal(got[1], want[1]) and torch.equal(got[2], want[2])
        torch.testing.assert_close(got[3], want[3])


@pytest.mark.cuda
@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("ties", TIES)
def test_cuda_matches_cpu(method, dtype, ties):
    for n, groups, seed in ((0, 1, 0), (5, 3, 1), (300, 7, 2), (3000, 40, 3), (2000, 1, 4)):
        spans, scores, offsets = _random_problem(n, groups, seed, "cpu", dtype)
        if ties == "stable":  # scores on a coarse grid: long runs of ties
            scores = (scores * 4).round() / 4
        kw = dict(iou_threshold=0.4, method=method, sigma=0.5, ties=ties)
        cpu = nms_1d(spans, scores, offsets=offsets, **kw)
        gpu = nms_1d(spans.cuda(), scores.cuda(), offsets=offsets.cuda(), **kw)
        assert all(x.is_cuda for x in gpu)
        assert torch.equal(gpu[0].cpu(), cpu[0]) and torch.equal(gpu[1].cpu(), cpu[1])
        if method == "linear":
            assert torch.equal(gpu[2].cpu(), cpu[2])
        elif method == "gaussian":  # device exp may differ from libm by an ulp
            torch.testing.assert_close(gpu[2].cpu(), cpu[2])


@pytest.mark.cuda
@settings(max_examples=60, **SETTINGS)
@given(prob=problems(), dtype=st.sampled_from([torch.float32, torch.float64]))
def test_cuda_tie_heavy_matches_reference(prob, dtype):
    spans, scores, offsets, kw = prob
    if kw["method"] == "gaussian":
        kw = dict(kw, method="linear")  # exact on the device; gaussian is checked above
    off = None if offsets is None else torch.from_numpy(offsets).cuda()
    out = run(torch.from_numpy(spans).to("cuda", dtype), torch.from_numpy(scores).to("cuda", dtype),
              offsets=off, **kw)
    np_dtype = np.float32 if dtype == torch.float32 else np.float64
    check_against_ref(out, spans, scores, offsets, kw, np_dtype)


def test_infinite_and_huge_endpoints_use_temporal_iou_rule_hand_computed():
    """[0, inf] and [5, inf] have IoU 1 (the limit of (L - 5) / L), so the
    second is suppressed at 0.5; in float32, [0, 3e38] and [1e38, 3e38] have
    IoU 2/3 although their lengths' sum overflows. temporal_iou agrees."""
    cases = [
        (np.float64, [[0.0, math.inf], [5.0, math.inf]], 1.0),
        (np.float32, [[0.0, 3e38], [1e38, 3e38]], 2.0 / 3.0),
    ]
    for dtype, rows, iou in cases:
        spans = np.array(rows, dtype=dtype)
        scores = np.array([1.0, 0.9], dtype=dtype)
        np.testing.assert_allclose(temporal_iou(spans[:1], spans[1:])[0, 0], iou, rtol=1e-6)
        keep, _, _ = nms_1d(spans, scores, iou_threshold=0.5)
        assert keep.tolist() == [0]
        keep, _, _ = nms_1d(spans, scores, iou_threshold=0.99 if iou < 1 else 1.0)
        assert keep.tolist() == [0, 1]
        # Soft-NMS (linear) decays the second score by 1 - IoU.
        _, _, kept = nms_1d(spans, scores, iou_threshold=0.5, method="linear")
        np.testing.assert_allclose(kept[1:].astype(np.float64), [0.9 * (1 - iou)], atol=1e-6)
