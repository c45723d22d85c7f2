# SPDX-License-Identifier: Apache-2.0
"""fastvqa.retrieval.duplicates against set()-based and brute-force references."""

from __future__ import annotations

import random
from collections import deque

import numpy as np
import pytest

from fastvqa.retrieval import (CallableEncoder, duplicate_groups, normalize_question,
                               unique_counts_by_split, unique_question_count)

COLORS = ["red", "blue", "green", "yellow", "purple", "cyan", "gray", "brown"]
SHAPES = ["cube", "sphere", "cylinder", "cone"]
ACTIONS = ["rotating", "sliding", "flying"]
TEMPLATES = ["what color is the {s} that is {a} ?", "how many {c} {s}s are {a} ?",
             "is there a {c} {s} {a} before the {t} ?", "what is the {c} {s} doing at the end ?",
             "during the whole video , how many {c} things are {a} ?"]


def templated_questions(n: int, seed: int) -> list[str]:
    """Random templated questions; some repeat exactly, some differ only in
    case, spacing or trailing punctuation."""
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        q = rng.choice(TEMPLATES).format(s=rng.choice(SHAPES), a=rng.choice(ACTIONS),
                                         c=rng.choice(COLORS), t=rng.choice(SHAPES))
        r = rng.random()
        if r < 0.1:
            q = q.upper()
        elif r < 0.2:
            q = q.replace(" ", "   ").rstrip(" ?") + "?!"
        out.append(q)
    return out


def reference_normalize(text: str) -> str:
    """The documented normal form, written as a character loop."""
    words, cur = [], ""
    for ch in text.casefold():
        if ch.isspace():
            if cur:
                words.append(cur)
            cur = ""
        else:
            cur += ch
    if cur:
        words.append(cur)
    s = " ".join(words)
    while s and s[-1] in ".?!,;: \u2026\u3002\uff1f\uff01":
        s = s[:-1]
    return s


def reference_groups(questions, threshold):
    """Brute force: float64 sklearn TF-IDF cosine over all pairs, plus
    normalised-equal pairs, then BFS connected components."""
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.metrics.pairwise import cosine_similarity

    n = len(questions)
    x = TfidfVectorizer(dtype=np.float64).fit_transform(questions)
    sim = cosine_similarity(x)
    # The float32 code and this float64 reference must not straddle the threshold.
    assert not np.isclose(sim, threshold, rtol=0, atol=1e-5).any()
    norm = [reference_normalize(q) for q in questions]
    adj = [[j for j in range(n) if j != i and (sim[i, j] >= threshold or norm[i] == norm[j])]
           for i in range(n)]
    seen, groups = [False] * n, []
    for i in range(n):
        if seen[i]:
            continue
        seen[i], comp, todo = True, [i], deque([i])
        while todo:
            for j in adj[todo.popleft()]:
                if not seen[j]:
                    seen[j] = True
                    comp.append(j)
                    todo.append(j)
        groups.append(sorted(comp))
    return groups


def test_normalize_question():
    assert normalize_question("  What   IS\tit ?! ") == "what is it"
    assert normalize_question("what is it") == "what is it"
    assert normalize_question("...?") == ""
    assert normalize_question("Is it (red)?") == "is it (red)"
    assert normalize_question("\u00bfQu\u00e9 es\uff1f") == "\u00bfqu\u00e9 es"
    assert normalize_question("STRASSE.") == "strasse"
    for q in templated_questions(200, 1):
        assert normalize_question(q) == reference_normalize(q)
    with pytest.raises(TypeError, match="string"):
        normalize_question(3)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_exact_counts_and_groups_against_sets(seed):
    qs = templated_questions(300, seed)
    counts = unique_question_count(qs)
    assert counts.total == 300
    assert counts.unique_exact == len(set(qs))
    assert counts.unique_normalized == len({reference_normalize(q) for q in qs})
    assert counts.unique_near is None
    assert counts.unique_normalized < counts.unique_exact  # the data has such variants
    for exact, key in (("raw", lambda q: q), ("normalized", reference_normalize)):
        by_key: dict = {}
        for i, q in enumerate(qs):
            by_key.setdefault(key(q), []).append(i)
        want = sorted((g for g in by_key.values() if len(g) > 1), key=lambda g: g[0])
        assert duplicate_groups(qs, exact=exact) == want
        everything = duplicate_groups(qs, exact=exact, include_singletons=True)
        assert everything == sorted(by_key.values(), key=lambda g: g[0])


@pytest.mark.parametrize("threshold", [0.6, 0.8, 0.95])
def test_near_groups_against_brute_force(threshold):
    pytest.importorskip("sklearn")
    qs = templated_questions(400, 7)
    want = reference_groups(qs, threshold)
    got = duplicate_groups(qs, threshold, include_singletons=True)
    assert got == want
    assert duplicate_groups(qs, threshold) == [g for g in want if len(g) > 1]
    assert unique_question_count(qs, threshold).unique_near == len(want)


def test_near_groups_in_many_chunks(monkeypatch):
    pytest.importorskip("sklearn")
    import fastvqa.retrieval.duplicates as dup

    qs = templated_questions(150, 3)
    monkeypatch.setattr(dup, "_CHUNK_CELLS", 7 * 150)  # blocks of a few rows
    assert duplicate_groups(qs, 0.8, include_singletons=True) == reference_groups(qs, 0.8)


def test_near_duplicates_are_transitive():
    # cos(a, b) = cos(b, c) = cos(30 deg) = 0.866; cos(a, c) = cos(60 deg) = 0.5.
    angle = {"a": 0.0, "b": 30.0, "c": 60.0, "d": 180.0}

    def vectors(texts):
        rad = np.deg2rad([angle[t] for t in texts])
        return np.stack([np.cos(rad), np.sin(rad)], axis=1) * 3.0  # not unit length

    enc = CallableEncoder(vectors, name="angles", cache_dir=False)
    assert duplicate_groups(["a", "b", "c", "d"], 0.8, encoder=enc) == [[0, 1, 2]]
    assert duplicate_groups(["a", "c", "d", "b"], 0.8, encoder=enc) == [[0, 1, 3]]
    assert duplicate_groups(["a", "c", "d"], 0.8, encoder=enc) == []
    assert duplicate_groups(["a", "c", "d"], 0.5 - 1e-6, encoder=enc) == [[0, 1]]
    counts = unique_question_count(["a", "b", "c", "d", "d"], 0.8, encoder=enc)
    assert (counts.total, counts.unique_exact, counts.unique_near) == (5, 4, 2)


def test_exact_duplicates_join_even_without_known_terms():
    pytest.importorskip("sklearn")
    # "?" has no TF-IDF term (zero vector, cosine 0) but the two are equal strings.
    from fastvqa.retrieval import RetrievalWarning

    qs = ["?", "how many cubes", "?", "How many cubes?"]
    # The distinct questions are "?" and "how many cubes" (normalised): one has no term.
    with pytest.warns(RetrievalWarning, match="1 of 2 distinct questions have no known term"):
        assert duplicate_groups(qs, 0.99) == [[0, 2], [1, 3]]
    with pytest.warns(RetrievalWarning, match="1 of 3 distinct questions have no known term"):
        # the cosine joins 1, 3
        assert duplicate_groups(qs, 0.99, exact="raw") == [[0, 2], [1, 3]]
    assert duplicate_groups(qs, exact="raw") == [[0, 2]]


def test_empty_and_single_inputs():
    assert duplicate_groups([]) == []
    assert duplicate_groups([], 0.5) == []
    assert duplicate_groups(["only"], 0.5, include_singletons=True) == [[0]]
    assert unique_question_count([], 0.5) == unique_question_count([], 0.5).__class__(0, 0, 0, 0)


@pytest.mark.parametrize("bad", [0, 0.0, -0.1, 1.5, float("nan")])
def test_bad_threshold_is_a_value_error(bad):
    with pytest.raises(ValueError, match="threshold"):
        duplicate_groups(["a b", "a b c"], bad)
    with pytest.raises(ValueError, match="threshold"):
        unique_question_count(["a b"], bad)


def test_bad_arguments():
    with pytest.raises(TypeError, match="threshold"):
        duplicate_groups(["a"], "0.5")
    with pytest.raises(TypeError, match="threshold"):
        duplicate_groups(["a"], True)
    with pytest.raises(ValueError, match="exact"):
        duplicate_groups(["a"], exact="casefold")
    with pytest.raises(TypeError, match="single string"):
        duplicate_groups("what is it")
    with pytest.raises(TypeError, match=r"questions\[1\]"):
        unique_question_count(["a", None])
    with pytest.raises(TypeError, match="encoder"):
        duplicate_groups(["a", "b"], 0.5, encoder=42)


def test_counts_by_split_union_is_not_the_sum():
    splits = {"train": ["what is it?", "What is it", "how many"],
              "test": ["how many", "where"]}
    counts = unique_counts_by_split(splits)
    assert counts["train"].unique_normalized == 2 and counts["train"].unique_exact == 3
    assert counts["test"].unique_normalized == 2
    assert counts["total"].total == 5
    assert counts["total"].unique_exact == len(set(splits["train"] + splits["test"])) == 4
    assert counts["total"].unique_normalized == 3  # "how many" is in both splits
    with pytest.raises(ValueError, match="reserved"):
        unique_counts_by_split({"total": ["a"]})


def test_dvd_file_unique_questions(shared_data):
    from fastvqa.data.dvd import load_dvd

    records = load_dvd(shared_data / "dvd")
    qs = [r.question for r in records]
    assert qs
    counts = unique_question_count(qs)
    assert counts.total == len(qs)
    assert counts.unique_exact == len(set(qs))
    assert counts.unique_normalized == len({" ".join(q.lower().split()).rstrip(" ?.")
                                            for q in qs})
    groups = duplicate_groups(qs, exact="raw")
    assert len(qs) - sum(len(g) - 1 for g in groups) == len(set(qs))


def test_cli_duplicates(tmp_path, capsys):
    import json

    from fastvqa.cli import main

    qs = templated_questions(120, 5)
    path = tmp_path / "qs.json"
    path.write_text(json.dumps(qs))
    assert main(["duplicates", str(path), "--json"]) == 0
    counts = json.loads(capsys.readouterr().out)
    assert counts == {"total": 120, "unique_exact": len(set(qs)),
                      "unique_normalized": len({reference_normalize(q) for q in qs}),
                      "unique_near": None}
    out = tmp_path / "groups.json"
    assert main(["duplicates", str(path), "--threshold", "0.8", "--groups-out", str(out),
                 "--json"]) == 0
    want = reference_groups(qs, 0.8)
    assert json.loads(capsys.readouterr().out)["unique_near"] == len(want)
    written = json.loads(out.read_text())
    assert [g["indices"] for g in written["groups"]] == [g for g in want if len(g) > 1]
    assert all(g["questions"] == [qs[i] for i in g["indices"]] for g in written["groups"])
    before = out.read_text()
    assert main(["duplicates", str(path), "--groups-out", str(out)]) == 2
    assert "refusing to overwrite" in capsys.readouterr().err
    assert out.read_text() == before
    with pytest.raises(SystemExit) as exc:
        main(["duplicates", str(path), "--threshold", "1.5"])
    assert exc.value.code == 2
    assert "argument --threshold: must lie in (0, 1], got 1.5" in capsys.readouterr().err
    records = tmp_path / "records.json"
    records.write_text(json.dumps([{"question": "q"}]))
    assert main(["duplicates", str(records)]) == 2
    err = capsys.readouterr().err
    assert "expected a JSON list of strings" in err and "fastvqa duplicates BENCHMARK" in err


def test_cli_duplicates_reads_a_benchmark(shared_data, capsys):
    from fastvqa.cli import main
    from fastvqa.data.wildqa import load_wildqa

    dev = shared_data / "wildqa" / "dev.json"
    qs = [r.question for r in load_wildqa(dev)]
    assert main(["duplicates", str(dev), "--benchmark", "wildqa"]) == 0
    lines = dict(line.split() for line in capsys.readouterr().out.splitlines())
    assert lines == {"total": str(len(qs)), "unique_exact": str(len(set(qs))),
                     "unique_normalized": str(len({reference_normalize(q) for q in qs}))}
