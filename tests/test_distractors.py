# SPDX-License-Identifier: Apache-2.0
"""fastvqa.retrieval distractor mining and option building, against an
independent pure-Python/NumPy reference of the rules and scipy's chi-square."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest

pytest.importorskip("faiss", reason="FAISS is not installed (pip install 'fastvqa[faiss]')")
pytest.importorskip("sklearn", reason="scikit-learn is not installed")

from sklearn.feature_extraction.text import TfidfVectorizer  # noqa: E402

from fastvqa.retrieval import (  # noqa: E402
    DEVEQA_RECIPE,
    SOKBENCH_RECIPE,
    CallableEncoder,
    DistractorMiner,
    Recipe,
    build_options,
    mine_distractors,
    position_balance,
    same_category_pools,
)

ANSWER_TOKENS = r"(?u)\b\w+\b"  # single-character answer words count ("3")


def norm(text):
    """The spec's normalisation, written out again: casefold, strip, collapse
    spaces, strip trailing punctuation."""
    text = " ".join(text.casefold().split())
    while text and text[-1] in ".,;:!? ":
        text = text[:-1]
    return text


def unit(x):
    x = np.asarray(x, dtype=np.float64)
    n = np.linalg.norm(x, axis=1, keepdims=True)
    return x / np.where(n > 0, n, 1)


def tfidf_vectors(fit_texts, texts, **kw):
    v = TfidfVectorizer(**kw).fit(fit_texts)
    return v.transform(texts).toarray().astype(np.float64)


def reference_mine(bank_q, bank_a, qs, ans, k, tau, div, m, qvecs, avecs, exclude=None,
                   key=lambda q: q):
    """The rules of DistractorMiner.mine, one question at a time, float64.
    ``qvecs(bank_keys, query_keys)`` and ``avecs(distinct, correct)`` return
    the vectors to compare."""
    distinct = []
    for a in bank_a:
        if norm(a) not in [norm(d) for d in distinct]:
            distinct.append(a.strip())
    bq, qq = qvecs([key(q) for q in bank_q], [key(q) for q in qs])
    bq, qq = unit(bq), unit(qq)
    # Repeated (question, answer) pairs count once, at their first entry.
    pair = [(norm(q), norm(a)) for q, a in zip(bank_q, bank_a)]
    first_of = {}
    for j, p in enumerate(pair):
        first_of.setdefault(p, j)
    firsts = sorted(first_of.values())
    av, cv = avecs(distinct, ans)
    av, cv = unit(av), unit(cv)
    out = []
    for i in range(len(qs)):
        sims = bq @ qq[i]
        order = sorted(firsts, key=lambda j: (-sims[j], j))
        neigh = []
        for j in order:
            if exclude is not None and exclude[i] >= 0 and pair[j] == pair[exclude[i]]:
                continue
            if norm(bank_q[j]) == norm(qs[i]) and norm(bank_a[j]) == norm(ans[i]):
                continue
            neigh.append(j)
            if len(neigh) == m:
                break
        cands, seen = [], set()
        for j in neigh:
            d = [norm(t) for t in distinct].index(norm(bank_a[j]))
            if d in seen:
                continue
            seen.add(d)
            if norm(distinct[d]) == norm(ans[i]) or av[d] @ cv[i] >= tau:
                continue
            cands.append((d, sims[j]))
        chosen = []
        while len(chosen) < k:
            best, best_score = None, None
            for d, s in cands:
                if d in chosen or any(av[d] @ av[c] >= tau for c in chosen):
                    continue
                red = max(av[d] @ av[c] for c in chosen) if chosen else 0.0
                score = (1 - div) * s - div * red
                if best is None or score > best_score:
                    best, best_score = d, score
            if best is None:
                break
            chosen.append(best)
        out.append([distinct[d] for d in chosen])
    return out


def templated_bank(n, seed):
    rng = np.random.default_rng(seed)
    objs = ["cube", "ball", "dog", "cat", "car", "man", "woman", "bird", "box", "cup"]
    acts = ["holding", "pushing", "watching", "throwing", "carrying", "eating"]
    colours = ["red", "blue", "green", "dark blue", "light green", "yellow", "Red.", "black"]
    qs, ans = [], []
    for _ in range(n):
        o1, o2 = rng.choice(objs, 2, replace=False)
        a = rng.choice(acts)
        if rng.random() < 0.5:
            qs.append(f"what color is the {o1} the {o2} is {a}")
            ans.append(str(rng.choice(colours)))
        else:
            qs.append(f"why is the {o1} {a} the {o2}")
            ans.append(f"to {rng.choice(acts)} the {rng.choice(objs)}")
    return qs, ans


def tfidf_reference_vectors():
    qv = lambda bank, q: (tfidf_vectors(bank, bank), tfidf_vectors(bank, q))  # noqa: E731
    av = lambda d, c: (tfidf_vectors(d, d, token_pattern=ANSWER_TOKENS),  # noqa: E731
                       tfidf_vectors(d, c, token_pattern=ANSWER_TOKENS))
    return qv, av


def test_repeated_pairs_count_once():
    """A templated bank repeats pairs thousands of times (DVD). Copies count
    once: the result matches the reference, whose neighbours are the distinct
    pairs, and the search width does not grow with the number of copies."""
    bank_q, bank_a = templated_bank(150, seed=4)
    rng = np.random.default_rng(5)
    order = rng.permutation(np.repeat(np.arange(150), 40))  # 6,000 entries, 40 copies each
    rep_q, rep_a = [bank_q[i] for i in order], [bank_a[i] for i in order]
    miner = DistractorMiner(rep_q, rep_a, n_neighbours=10)
    qs, ans = bank_q[:30], bank_a[:30]
    got = miner.mine(qs, ans, 3)
    qv, av = tfidf_reference_vectors()
    assert got == reference_mine(rep_q, rep_a, qs, ans, 3, 0.8, 0.5, 10, qv, av)
    assert sum(map(len, got)) > 0



# ------------------------------------------------------------------- mining


@pytest.mark.parametrize("k,tau,div,m", [(3, 0.8, 0.5, 10), (4, 0.5, 0.0, 6),
                                         (2, 1.0, 1.0, 10), (5, 0.3, 0.7, 20)])
def test_tfidf_mining_matches_reference(k, tau, div, m):
    bank_q, bank_a = templated_bank(300, seed=1)
    qs, ans = bank_q[:40], bank_a[:40]
    miner = DistractorMiner(bank_q, bank_a, n_neighbours=m)
    got = miner.mine(qs, ans, k, exclude_similar_to_answer=tau, diversity=div,
                     exclude_ids=list(range(40)))
    qv, av = tfidf_reference_vectors()
    want = reference_mine(bank_q, bank_a, qs, ans, k, tau, div, m, qv, av, exclude=range(40))
    assert got == want
    assert any(len(g) == k for g in got)


def test_first3_key_and_new_questions_match_reference():
    bank_q, bank_a = templated_bank(200, seed=2)
    qs, ans = templated_bank(25, seed=3)
    first3 = lambda q: " ".join(q.split()[:3])  # noqa: E731
    got = DistractorMiner(bank_q, bank_a, question_key="first3").mine(qs, ans, 3)
    qv, av = tfidf_reference_vectors()
    assert got == reference_mine(bank_q, bank_a, qs, ans, 3, 0.8, 0.5, 10, qv, av, key=first3)


def test_dense_encoder_matches_reference(tmp_path):
    bank_q, bank_a = templated_bank(150, seed=4)
    qs, ans = bank_q[:30], bank_a[:30]
    vocab = sorted({w for t in bank_q + bank_a for w in re.findall(r"\w+", t.lower())})
    proj = np.random.default_rng(5).standard_normal((len(vocab), 12))

    def embed(texts):  # bag of words times a fixed random projection
        counts = np.zeros((len(texts), len(vocab)))
        for i, t in enumerate(texts):
            for w in re.findall(r"\w+", t.lower()):
                counts[i, vocab.index(w)] += 1
        return counts @ proj

    enc = CallableEncoder(embed, name="bow-proj", cache_dir=tmp_path)
    got = DistractorMiner(bank_q, bank_a, encoder=enc).mine(qs, ans, 3, exclude_ids=range(30))
    want = reference_mine(bank_q, bank_a, qs, ans, 3, 0.8, 0.5, 10,
                          lambda b, q: (embed(b), embed(q)), lambda d, c: (embed(d), embed(c)),
                          exclude=range(30))
    assert got == want


def test_invariants_against_independent_cosines():
    bank_q, bank_a = templated_bank(400, seed=6)
    tau = 0.6
    got = mine_distractors(bank_q[:80], bank_a[:80], bank_q, bank_a, k=4,
                           exclude_similar_to_answer=tau)
    fit = sorted({norm(a) for a in bank_a})
    for correct, ds in zip(bank_a[:80], got):
        assert len(ds) <= 4
        assert norm(correct) not in {norm(d) for d in ds}
        vecs = tfidf_vectors(fit, [correct, *ds], token_pattern=ANSWER_TOKENS)
        cos = vecs @ vecs.T
        assert (cos[0, 1:] < tau).all()
        off = cos[1:, 1:][~np.eye(len(ds), dtype=bool)]
        assert (off < tau).all()
        assert len({norm(d) for d in ds}) == len(ds)


BANK_Q = ["what color is the cube", "what color is the cube", "what color is the big cube",
          "what color is the small cube", "what color is the sphere", "how many dogs run"]
BANK_A = ["red", "Red.", "blue", "dark blue", "green", "three"]


def test_hand_built_bank():
    # TF-IDF cosine of "what color is the cube" to the bank: 1, 1 (the
    # question itself, twice with the same answer: both "self"), 0.764, 0.764
    # ("big" and "small" have the same idf: a tie, bank order), 0.619
    # (sphere), 0 (dogs). Answer cosines: "blue"~"dark blue" 0.628
    # (idf(blue) = 1 + ln 2, idf(dark) = 1 + ln 3), all other pairs 0.
    miner = DistractorMiner(BANK_Q, BANK_A, n_neighbours=3)
    q, a = ["what color is the cube"], ["red"]
    # Pure similarity order: blue, dark blue, green.
    assert miner.mine(q, a, 3, diversity=0.0, exclude_ids=[0]) == [["blue", "dark blue", "green"]]
    # tau = 0.6 makes "dark blue" a paraphrase of the chosen "blue": the pool runs out.
    assert miner.mine(q, a, 3, diversity=0.0, exclude_similar_to_answer=0.6) == [["blue", "green"]]
    # Pure diversity: blue first (all score 0, rank order), then green (0 > -0.628).
    assert miner.mine(q, a, 3, diversity=1.0) == [["blue", "green", "dark blue"]]
    # The correct answer ("Blue!" = "blue") and its paraphrase (0.628 >= 0.6) are dropped.
    assert mine_distractors("what color is the cube", "Blue!", BANK_Q, BANK_A, k=3,
                            exclude_similar_to_answer=0.6) == ["red", "green", "three"]
    # Fewer neighbours, fewer candidates; k = 0 gives nothing.
    assert miner.mine(q, a, 3, diversity=0.0)[0][:2] == ["blue", "dark blue"]
    assert DistractorMiner(BANK_Q, BANK_A, n_neighbours=1).mine(q, a, 3) == [["blue"]]
    assert miner.mine(q, a, 0) == [[]]


def test_mining_bad_inputs():
    with pytest.raises(ValueError, match="answers for"):
        DistractorMiner(BANK_Q, BANK_A[:-1])
    with pytest.raises(ValueError, match="question_key"):
        DistractorMiner(BANK_Q, BANK_A, question_key="first4")
    with pytest.raises(ValueError, match="n_neighbours"):
        DistractorMiner(BANK_Q, BANK_A, n_neighbours=0)
    with pytest.raises(ValueError, match="encoder"):
        DistractorMiner(BANK_Q, BANK_A, encoder="bm25")
    with pytest.raises(TypeError, match=r"bank_answers\[1\]"):
        DistractorMiner(BANK_Q, ["a", 2, "b", "c", "d", "e"])
    miner = DistractorMiner(BANK_Q, BANK_A)
    with pytest.raises(ValueError, match="k must be"):
        miner.mine(["q"], ["a"], -1)
    for tau in (-0.1, 1.5, float("nan")):
        with pytest.raises(ValueError, match="tau"):
            miner.mine(["q"], ["a"], 3, exclude_similar_to_answer=tau)
    with pytest.raises(ValueError, match="diversity"):
        miner.mine(["q"], ["a"], 3, diversity=2)
    # the shared validators (fastvqa._checks): one-line messages naming the argument
    with pytest.raises(ValueError, match=r"^mine: diversity must lie in \[0, 1\], got 2.0$"):
        miner.mine(["q"], ["a"], 3, diversity=2)
    with pytest.raises(TypeError, match=r"^mine: k must be an integer, got bool$"):
        miner.mine(["q"], ["a"], True)
    with pytest.raises(ValueError, match=r"^DistractorMiner: n_neighbours must be >= 1, got 0$"):
        DistractorMiner(BANK_Q, BANK_A, n_neighbours=0)
    with pytest.raises(ValueError, match="2 answers for 1"):
        miner.mine(["q"], ["a", "b"], 3)
    with pytest.raises(ValueError, match="exclude_ids"):
        miner.mine(["q"], ["a"], 3, exclude_ids=[0, 1])
    with pytest.raises(TypeError, match="both"):
        mine_distractors("q", ["a"], BANK_Q, BANK_A)
    assert DistractorMiner([], []).mine(["q"], ["a"], 3) == [[]]


# ------------------------------------------------------------------ options


def random_items(n, seed, pools=("other_time", "segment_wrong", "similar_top10"), size=6):
    rng = np.random.default_rng(seed)
    correct = [f"answer {i}" for i in range(n)]
    pool_list = [{p: [f"{p} {i} {j}" for j in range(size)] for p in pools} for i in range(n)]
    for i in range(0, n, 7):  # some candidates equal the correct answer, differently written
        pool_list[i][pools[0]].append(f"  ANSWER {i}.")
        rng.shuffle(pool_list[i][pools[0]])
    return correct, pool_list


def check_option_set(opts, correct, n_options):
    for i, (options, ans, src) in enumerate(zip(opts.options, opts.answer, opts.sources)):
        item = opts.items[i]
        assert len(options) == n_options == len(src)
        assert options[ans] == correct[item]
        assert src[ans] == "correct" and src.count("correct") == 1
        assert [norm(o) for o in options].count(norm(correct[item])) == 1
        assert len({norm(o) for o in options}) == n_options


def test_deveqa_recipe_mix_and_uniform_positions():
    from scipy.stats import chisquare

    correct, pools = random_items(10_000, seed=0)
    opts = build_options(correct, pools, DEVEQA_RECIPE, seed=7)
    assert opts.answer.dtype == np.int64 and len(opts.options) == 10_000
    check_option_set(opts, correct, 5)
    for src in opts.sources:
        assert sorted(src) == sorted(["correct", "other_time", "other_time", "segment_wrong",
                                      "similar_top10"])
    counts = np.bincount(opts.answer, minlength=5)
    assert counts.max() - counts.min() <= 1  # exact balance
    ref = chisquare(counts)
    bal = position_balance(opts.answer, 5)
    np.testing.assert_array_equal(bal.counts, counts)
    assert bal.chi2 == pytest.approx(ref.statistic, abs=1e-12)
    assert bal.p_value == pytest.approx(ref.pvalue, rel=1e-12)
    assert bal.uniform and ref.pvalue >= 0.01
    assert "A=2000" in bal.format() and "uniform" in bal.format()


def test_position_balance_negative_control():
    from scipy.stats import chisquare

    rng = np.random.default_rng(3)
    skewed = np.where(rng.random(10_000) < 0.3, 0, rng.integers(0, 5, 10_000))
    bal = position_balance(skewed, 5)
    ref = chisquare(np.bincount(skewed, minlength=5))
    assert bal.p_value == pytest.approx(ref.pvalue, rel=1e-9, abs=1e-300)
    assert bal.chi2 == pytest.approx(ref.statistic)
    assert not bal.uniform and "NOT uniform" in bal.format()
    with pytest.raises(ValueError, match="values must be in"):
        position_balance([0, 5], 5)
    with pytest.raises(ValueError, match="empty"):
        position_balance(np.zeros(0, dtype=np.int64), 5)
    with pytest.raises(ValueError, match="integer"):
        position_balance([0.5, 1.0], 5)


def test_sokbench_recipe_and_seeds():
    correct, pools = random_items(500, seed=1, pools=("same_category",))
    a = build_options(correct, pools, SOKBENCH_RECIPE, seed=11)
    check_option_set(a, correct, 4)
    assert all(sorted(s) == ["correct"] + ["same_category"] * 3 for s in a.sources)
    b = build_options(correct, pools, SOKBENCH_RECIPE, seed=11)
    assert a.options == b.options and a.sources == b.sources
    np.testing.assert_array_equal(a.answer, b.answer)
    c = build_options(correct, pools, SOKBENCH_RECIPE, seed=12)
    assert c.options != a.options and not np.array_equal(c.answer, a.answer)
    # Fewer options than the recipe: the steps in order until n_options - 1.
    d = build_options(correct, pools, SOKBENCH_RECIPE, 3, seed=0)
    check_option_set(d, correct, 3)


def test_short_pools_fallback_skip_and_error():
    correct = ["yes", "no", "maybe"]
    pools = [{"other_time": ["a", "b"], "segment_wrong": ["c"], "similar_top10": ["d"]},
             {"other_time": ["a"], "segment_wrong": ["c"], "similar_top10": ["d", "e", "f"]},
             {"other_time": ["Maybe!", "x"], "segment_wrong": [], "similar_top10": ["d"]}]
    with pytest.raises(ValueError, match=r"item 1 .*'other_time'"):
        build_options(correct, pools, DEVEQA_RECIPE)
    fb = Recipe(DEVEQA_RECIPE.steps, fallback=("similar_top10",))
    with pytest.raises(ValueError, match=r"item 2 .*'other_time'"):
        build_options(correct, pools, fb)  # item 2 has one usable other_time, too few fallbacks
    opts = build_options(correct, pools, fb, on_short="skip")
    assert opts.skipped == [2] and list(opts.items) == [0, 1]
    check_option_set(opts, correct, 5)
    src1 = opts.sources[1]
    assert src1.count("other_time") == 1 and src1.count("similar_top10") == 2


def test_similarity_callable_skips_close_candidates():
    def overlap(a, b):  # Jaccard of word sets
        sa, sb = set(a.lower().split()), set(b.lower().split())
        return len(sa & sb) / len(sa | sb)

    correct = ["the red cube"]
    pools = [{"same_category": ["the red cube now", "a blue ball", "a blue ball rolling",
                                "green tea", "wooden chair"]}]
    for seed in range(20):
        opts = build_options(correct, pools, SOKBENCH_RECIPE, seed=seed, similarity=overlap,
                             similarity_threshold=0.5)
        chosen = [o for o, s in zip(opts.options[0], opts.sources[0]) if s != "correct"]
        assert "the red cube now" not in chosen  # Jaccard 0.75 with the correct answer
        assert not {"a blue ball", "a blue ball rolling"} <= set(chosen)  # Jaccard 0.75


def test_build_options_bad_inputs():
    correct, pools = random_items(3, seed=0)
    with pytest.raises(ValueError, match="3 pools for 2"):
        build_options(correct[:2], pools, DEVEQA_RECIPE)
    with pytest.raises(ValueError, match="unknown pool"):
        build_options(correct, pools, Recipe((("other_tme", 2),)))
    with pytest.raises(ValueError, match="n_options"):
        build_options(correct, pools, DEVEQA_RECIPE, n_options=6)
    with pytest.raises(ValueError, match="count"):
        Recipe((("a", -1),))
    with pytest.raises(ValueError, match="on_short"):
        build_options(correct, pools, DEVEQA_RECIPE, on_short="pad")
    with pytest.raises(TypeError, match="Recipe"):
        build_options(correct, pools, (("other_time", 2),))
    with pytest.raises(TypeError, match=r"correct\[0\]"):
        build_options([1, 2, 3], pools, DEVEQA_RECIPE)


def test_same_category_pools_hand_example():
    items = [{"video_id": "v1", "cat": "use", "obj": "knife", "answer": "cuts"},
             {"video_id": "v1", "cat": "use", "obj": "pan", "answer": "fries"},
             {"video_id": "v1", "cat": "use", "obj": "knife", "answer": "slices"},
             {"video_id": "v1", "cat": "colour", "obj": "pan", "answer": "black"},
             {"video_id": "v2", "cat": "use", "obj": "pot", "answer": "boils"}]
    pools = same_category_pools(items, "cat", "obj")
    assert [p["same_category"] for p in pools] == [["fries"], ["cuts", "slices"], ["fries"],
                                                   [], []]
    corpus = same_category_pools(items, "cat", "obj", scope_key=None)
    assert corpus[0]["same_category"] == ["fries", "boils"]
    with pytest.raises(KeyError, match="item 0 has no field 'kind'"):
        same_category_pools(items, "kind", "obj")


def test_sokbench_example_same_category_rule(shared_data):
    """The released example's distractors are the same "what if no obj"
    category of the other objects (sokbench.md §1.4): rebuilt from its
    subgraph for the objects it names, dashi's pool holds exactly the other
    three objects' consequences."""
    from fastvqa.data import load_sokbench

    rec = load_sokbench(shared_data / "sokbench" / "example_question.json")[0]
    objects = rec.extra["related_subgraph"]["object"]
    # The objects the question was generated from (the last entry is the action).
    named = rec.extra["related_objs_acts"][:-1]
    items = [{"video_id": rec.video_id, "category": "what if no obj", "object": name,
              "answer": " ".join(objects[name]["what if no obj"]["consequence"])}
             for name in named]
    pools = same_category_pools(items, "category", "object")
    dashi = [it["object"] for it in items].index("dashi")
    others = {it["answer"] for it in items if it["object"] != "dashi"}
    assert set(pools[dashi]["same_category"]) == others
    assert {it["object"] for it in items} - {"dashi"} == {"miso", "scallions", "wakame seaweed"}
    opts = build_options([items[dashi]["answer"]], [pools[dashi]], SOKBENCH_RECIPE, seed=0)
    assert len(opts.options[0]) == rec.extra["n_choices"] == 4


# ----------------------------------------------------------------------- CLI


def test_cli_nextgqa_real_files(shared_data, tmp_path, capsys):
    from fastvqa.cli import main
    from fastvqa.data import load_nextgqa

    out = tmp_path / "d.json"
    assert main(["distractors", "--benchmark", "nextgqa", "--gt", str(shared_data / "nextgqa"),
                 "--split", "val", "-k", "3", "--tau", "0.8", "--options", "4", "--seed", "1",
                 "--out", str(out)]) == 0
    err = capsys.readouterr().err
    assert "correct position:" in err
    records = load_nextgqa(shared_data / "nextgqa", split="val")
    got = json.loads(out.read_text())
    assert list(got) == [r.key for r in records]
    positions = []
    for r in records:
        entry = got[r.key]
        correct = r.options[r.answer]
        assert entry["question"] == r.question and entry["answer"] == correct
        assert len(entry["distractors"]) <= 3
        assert norm(correct) not in {norm(d) for d in entry["distractors"]}
        if "options" in entry:
            assert entry["options"][entry["answer_index"]] == correct
            assert sorted(entry["options"]) == sorted([correct, *entry["distractors"]])
            positions.append(entry["answer_index"])
    counts = np.bincount(positions, minlength=4)
    assert len(positions) > 0.9 * len(records) and counts.max() - counts.min() <= 1
    # Never overwrite.
    before = out.read_text()
    assert main(["distractors", "--benchmark", "nextgqa", "--gt", str(shared_data / "nextgqa"),
                 "--out", str(out)]) == 2
    assert "refusing to overwrite" in capsys.readouterr().err
    assert out.read_text() == before


def test_cli_wildqa_with_bank(shared_data, capsys):
    from fastvqa.cli import main
    from fastvqa.data import load_wildqa

    wq = shared_data / "wildqa"
    assert main(["distractors", "--benchmark", "wildqa", "--gt", str(wq / "test.json"), "--bank",
                 str(wq / "dev.json"), "-k", "2", "--question-key", "first3"]) == 0
    got = json.loads(capsys.readouterr().out)
    test = load_wildqa(wq / "test.json")
    bank_answers = {norm(r.answer) for r in load_wildqa(wq / "dev.json")}
    assert list(got) == [r.key for r in test]
    for r in test:
        ds = got[r.key]["distractors"]
        assert len(ds) <= 2 and all(norm(d) in bank_answers for d in ds)
        assert norm(r.answer) not in {norm(d) for d in ds}


def test_cli_errors(tmp_path, capsys):
    from fastvqa.cli import main

    empty = tmp_path / "empty.json"
    empty.write_text("[]")
    dis = ["distractors", "--benchmark"]
    cases = [([*dis, "wildqa", "--gt", str(tmp_path / "nope.json")], "no such file"),
             ([*dis, "sokbench", "--gt", str(empty)], "no sokbench records"),
             ([*dis, "sokbench", "--gt", str(empty), "-k", "2", "--options", "4"],
              "--options must be")]
    for argv, message in cases:
        assert main(argv) == 2
        err = capsys.readouterr().err
        assert message in err and len(err.strip().splitlines()) == 1


def test_bank_that_is_the_gt_excludes_each_question_itself(tmp_path, capsys):
    """``--bank`` naming the ``--gt`` files (the same file, or its folder with
    the same --split) is allowed and gives the default bank's result: the
    miner never counts a question's own (question, answer) pair, so with
    --neighbours 1 the one neighbour is another question, never itself (whose
    answer is the correct one). Unlike a retrieval baseline's --train, nothing
    is scored, so nothing is refused (issue 12's decision)."""
    from fastvqa.cli import main

    pytest.importorskip("sklearn")
    records = [{"question": q, "answer": a, "evidences": [{"0": [1.0, 2.0]}],
                "duration": 30.0, "video_id": f"v{i}"}
               for i, (q, a) in enumerate([("what does the red dog chase", "a ball"),
                                           ("what does the brown dog chase", "a cat"),
                                           ("where does the old man walk", "the park"),
                                           ("where does the young man walk", "the beach")])]
    folder = tmp_path / "wildqa"
    folder.mkdir()
    gt = folder / "test.json"
    gt.write_text(json.dumps(records))
    base = ["distractors", "--benchmark", "wildqa", "--gt", str(gt), "-k", "1",
            "--neighbours", "1"]
    outputs = []
    for bank in ([], ["--bank", str(gt)], ["--bank", str(folder)],
                 ["--bank", str(folder / ".." / "wildqa" / "test.json")]):
        assert main([*base, *bank]) == 0
        outputs.append(json.loads(capsys.readouterr().out))
    # By hand: each question's nearest other question is its pair.
    expected = {"a ball": ["a cat"], "a cat": ["a ball"], "the park": ["the beach"],
                "the beach": ["the park"]}
    for got in outputs:
        assert {v["answer"]: v["distractors"] for v in got.values()} == expected
