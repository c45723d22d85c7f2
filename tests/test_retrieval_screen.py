# SPDX-License-Identifier: Apache-2.0
"""The bfloat16 screen + exact re-rank of large flat CPU searches
(fastvqa.retrieval._screen) against a float64 NumPy brute force: the same ids
and the float32 rounding of the exact scores, ties by id."""

import numpy as np
import pytest

pytest.importorskip("faiss")
pytest.importorskip("torch")

from fastvqa.retrieval import Index, _screen  # noqa: E402
from fastvqa.retrieval import index as index_mod  # noqa: E402

pytestmark = pytest.mark.skipif(not _screen.available(),
                                reason="torch has no native bfloat16 GEMM on this CPU")


def brute(bank, ids, q, k, metric):
    """float64 scores rounded to float32 once; ranked by them, ties by id."""
    b64, q64 = bank.astype(np.float64), q.astype(np.float64)
    if metric == "ip":
        exact = q64 @ b64.T
    else:
        exact = ((q64[:, None, :] - b64[None]) ** 2).sum(-1)
    s32 = exact.astype(np.float32)
    key = -s32 if metric == "ip" else s32
    order = np.lexsort((np.broadcast_to(ids, key.shape), key), axis=-1)[:, :k]
    return np.take_along_axis(s32, order, 1), ids[order]


@pytest.fixture
def screened(monkeypatch):
    """Every flat CPU search goes through the screen; counts its answers."""
    calls = []
    real = _screen.search

    def spy(*a, **kw):
        out = real(*a, **kw)
        calls.append(out is not None)
        return out

    monkeypatch.setattr(index_mod, "_SCREEN_WORK", 0)
    monkeypatch.setattr(index_mod, "_SCREEN_METRICS", ("ip", "l2"))
    monkeypatch.setattr(_screen, "search", spy)
    return calls


def banks(rng, metric):
    n, d = 3000, 24
    x = rng.standard_normal((n, d)).astype(np.float32)
    yield "gaussian", x
    if metric == "ip":
        yield "normalised", x / np.linalg.norm(x, axis=1, keepdims=True)
    dup = x.copy()
    dup[::3] = dup[7]  # a thousand copies of one vector: exact ties
    yield "duplicates", dup
    yield "huge", x * np.float32(1e12)
    yield "small", x * np.float32(1e-12)
    grid = rng.integers(-2, 3, size=(n, d)).astype(np.float32)  # many exact ties
    yield "integer grid", grid
    mixed = x * np.exp(rng.uniform(-6, 6, size=(n, 1))).astype(np.float32)
    yield "norms 1e-3..1e3", mixed
    if metric == "l2":
        # Far from the origin: |q - x|^2 by the expansion |q|^2 - 2 q.x + |x|^2
        # cancels most of its float32 digits (FAISS's scores are off here).
        yield "offset 1e3", x + np.float32(1e3)
        yield "offset grid", grid + np.float32(4096)


@pytest.mark.parametrize("metric", ["ip", "l2"])
@pytest.mark.parametrize("k", [1, 10, 57])
def test_screen_equals_float64_brute_force(metric, k, screened):
    rng = np.random.default_rng(k)
    for name, bank in banks(rng, metric):
        ids = rng.permutation(bank.shape[0] * 3)[:bank.shape[0]].astype(np.int64)
        index = Index(metric, "flat", "cpu").add(bank, ids)
        q = np.concatenate([rng.standard_normal((20, bank.shape[1])).astype(np.float32)
                            * np.float32(np.abs(bank).max()), bank[:5], bank[7:8]])
        if name.startswith("offset"):  # queries among the bank, off it by small steps
            q = np.concatenate([q, bank[10:30] + rng.integers(-2, 3, (20, bank.shape[1]))
                                .astype(np.float32)])
        got_s, got_i = index.search(q, k)
        ref_s, ref_i = brute(bank, ids, q, k, metric)
        np.testing.assert_array_equal(got_i, ref_i, err_msg=f"{metric} {name}")
        np.testing.assert_array_equal(got_s, ref_s, err_msg=f"{metric} {name}")
        if name != "norms 1e-3..1e3":  # there the bound may be too loose to pay
            assert screened[-1], f"{metric} {name}: the screen gave up"


@pytest.mark.parametrize("metric", ["ip", "l2"])
def test_screen_edges_k_beyond_bank_and_empty(metric, screened):
    rng = np.random.default_rng(3)
    bank = rng.standard_normal((40, 8)).astype(np.float32)
    q = rng.standard_normal((3, 8)).astype(np.float32)
    index = Index(metric, "flat", "cpu").add(bank)
    s, i = index.search(q, 50)
    ref_s, ref_i = brute(bank, np.arange(40), q, 40, metric)
    np.testing.assert_array_equal(i[:, :40], ref_i)
    np.testing.assert_array_equal(s[:, :40], ref_s)
    assert (i[:, 40:] == -1).all() and np.isinf(s[:, 40:]).all()
    s, i = Index(metric, "flat", "cpu").search(q, 5)  # empty bank
    assert (i == -1).all() and np.isinf(s).all()
    with pytest.raises(ValueError, match="NaN"):
        index.search(np.full((1, 8), np.nan, np.float32), 3)


def test_screen_cache_follows_add(screened):
    rng = np.random.default_rng(4)
    a, b = (rng.standard_normal((500, 16)).astype(np.float32) for _ in range(2))
    q = rng.standard_normal((10, 16)).astype(np.float32)
    index = Index("ip", "flat", "cpu").add(a)
    index.search(q, 5)
    index.add(b)
    s, i = index.search(q, 5)
    ref_s, ref_i = brute(np.concatenate([a, b]), np.arange(1000), q, 5, "ip")
    np.testing.assert_array_equal(i, ref_i)
    np.testing.assert_array_equal(s, ref_s)


def test_bf16_floor_is_a_bfloat16_at_or_just_below():
    rng = np.random.default_rng(5)
    x = np.concatenate([rng.standard_normal(2000) * 10.0 ** rng.uniform(-30, 30, 2000),
                        [0.0, -0.0, 1.0, -1.0, 1e-40, -1e-40]])
    keys = _screen._bf16_floor(x)
    vals = _screen._values(_screen._keys(keys)).astype(np.float64)
    assert (vals <= x).all()
    # At most one widening step and one rounding step below the true floor.
    nxt = _screen._values(_screen._keys(keys + np.int16(3))).astype(np.float64)
    assert (nxt > x).all()


@pytest.mark.parametrize("metric", ["ip", "l2"])
@pytest.mark.parametrize("d", [7, 384, 1500])
def test_bound_holds_for_every_pair(metric, d):
    """The premise of the proof, on this machine's GEMM: for every pair,
    |K - v| <= 2^-8 |v| + E (K the exact key in float64, v the bfloat16
    GEMM output), at a size where oneDNN blocks the inner dimension."""
    import torch

    rng = np.random.default_rng(d)
    x = rng.standard_normal((1200, d)).astype(np.float32)
    for bank in (x, x * np.exp(rng.uniform(-4, 4, (1200, 1))).astype(np.float32),
                 x + np.float32(100)):
        q = np.concatenate([rng.standard_normal((60, d)).astype(np.float32)
                            * np.float32(bank.std() + 1), bank[:40]]) + bank.mean(0)
        screen = _screen.Screen(bank, metric)
        qb, err, _ = _screen.bound(screen, q.astype(np.float32))
        v = (qb @ screen.xb.T).double().numpy()
        qc = q.astype(np.float32).astype(np.float64) - screen.centre
        xc = bank.astype(np.float64) - screen.centre
        key = qc @ xc.T
        if metric == "l2":
            key -= (xc * xc).sum(1) / 2
        slack = 1e-12 * np.abs(key).max()
        assert (np.abs(key - v) <= 2.0 ** -8 * np.abs(v) + err[:, None] + slack).all()
        if metric == "l2":
            assert screen.xb.shape[1] == d + 3


def test_l2_screen_is_exact_where_the_expansion_cancels(screened):
    """Rows near a large common offset: float32 |q|^2 - 2 q.x + |x|^2 loses
    the distances; the screen's scores are the float64 ones rounded once."""
    rng = np.random.default_rng(6)
    bank = rng.standard_normal((2000, 16)).astype(np.float32) + np.float32(3e3)
    q = bank[:50] + rng.standard_normal((50, 16)).astype(np.float32)
    index = Index("l2", "flat", "cpu").add(bank)
    s, i = index.search(q, 8)
    ref_s, ref_i = brute(bank, np.arange(2000), q, 8, "l2")
    np.testing.assert_array_equal(i, ref_i)
    np.testing.assert_array_equal(s, ref_s)
    assert screened[-1]
