# SPDX-License-Identifier: Apache-2.0
"""``fastvqa audit``: each number against an independent computation (hand
counts on hand-built records, a plain loop, scipy directly), planted biases
that must be found, the command on the real files, and its errors."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

pytest.importorskip("sklearn")
pytest.importorskip("scipy")

from fastvqa.audit import audit, format_table, records_from_options  # noqa: E402
from fastvqa.audit import core  # noqa: E402
from fastvqa.cli import main  # noqa: E402
from fastvqa.data import QARecord  # noqa: E402
from fastvqa.errors import InputError  # noqa: E402

from tests.conftest import SHARED_DATA_SKIP, shared_data_dir  # noqa: E402


def mc(video, qid, question, options, answer, **extra) -> QARecord:
    return QARecord(video_id=video, question_id=str(qid), question=question,
                    options=list(options), answer=answer, extra=extra)


def op(video, qid, question, answer, **extra) -> QARecord:
    return QARecord(video_id=video, question_id=str(qid), question=question, answer=answer,
                    extra=extra)


# ------------------------------------------------------------------ priors


def test_answer_and_index_priors_by_hand():
    # Train: "red" is the correct text 3 times, "blue" once; index 1 twice,
    # 0 once, 2 once -> index prior 1 (tie 1 vs nothing).
    train = [mc("t1", 0, "what colour is it", ["red", "blue", "cat"], 0),
             mc("t2", 1, "what colour is the box", ["blue", "red", "dog"], 1),
             mc("t3", 2, "which colour", ["cat", "red", "green"], 1),
             mc("t4", 3, "what colour now", ["dog", "cat", "blue"], 2)]
    test = [mc("v1", 0, "what colour is the cup", ["green", "red", "cat"], 1),   # red: right
            mc("v2", 1, "what colour is the car", ["red", "blue", "dog"], 1),    # red: wrong
            mc("v3", 2, "what animal", ["pig", "cow", "hen"], 1),                # none seen
            mc("v4", 3, "what thing", ["pig", "cow", "hen"], 0)]                 # none seen
    r = audit(test, train, folds_k=2)
    # Answer prior: v1 right, v2 wrong (picks red at 0), v3 and v4 fall back
    # to index 1: v3 right, v4 wrong -> 2 of 4.
    assert r.score("answer prior").accuracy == pytest.approx(50.0)
    # Index prior 1: v1, v2, v3 right; v4 wrong -> 3 of 4.
    assert r.score("option-index prior").accuracy == pytest.approx(75.0)
    assert r.score("answer prior").chance == pytest.approx(100 / 3)
    assert r.source == "train" and r.n_train == 4


def test_self_source_is_marked():
    test = [mc("v1", 0, "q a", ["x", "y"], 0), mc("v2", 1, "q b", ["x", "y"], 0)]
    r = audit(test, folds_k=2)
    assert r.source == "self"
    assert "itself" in r.score("answer prior").note
    assert r.score("question retrieval").accuracy is None
    assert r.leakage is None


def test_open_answer_prior_and_type_prior_by_hand():
    source = [op("a", 0, "is it raining", "Yes", question_type="yn"),
              op("b", 1, "is it sunny", "yes.", question_type="yn"),
              op("c", 2, "where is it", "park", question_type="where"),
              op("d", 3, "where is he", "park", question_type="where"),
              op("e", 4, "where now", "home", question_type="where")]
    # Self source: answers normalised: yes x2, park x2, home x1; tie yes/park
    # goes to the first seen ("yes") -> 2 of 5 right.
    r = audit(source, folds_k=2)
    assert r.score("answer prior").accuracy == pytest.approx(40.0)
    assert r.score("answer prior").chance == pytest.approx(100 / 3)  # 3 distinct answers
    # Per type: yn -> yes (2 right), where -> park (2 right) -> 4 of 5.
    assert r.score("question-type prior").accuracy == pytest.approx(80.0)
    assert r.kind == "open"


# ------------------------------------------------------------- retrieval


def test_retrieval_picks_the_neighbours_answer_among_the_options():
    train = [mc("t1", 0, "what does the dog chase", ["ball", "cat", "car"], 1),
             mc("t2", 1, "what colour is the sky", ["green", "blue", "red"], 1),
             mc("t3", 2, "how many legs has a spider", ["eight", "six", "two"], 0)]
    test = [mc("v1", 0, "what does the dog chase now", ["cat", "car", "ball"], 0),
            mc("v2", 1, "what colour is the sky today", ["red", "green", "blue"], 2),
            mc("v3", 2, "how many legs has a spider here", ["six", "two", "ten"], 0)]
    r = audit(test, train, folds_k=2)
    # v1 -> "cat" at 0 (right), v2 -> "blue" at 2 (right); v3's neighbour
    # answer "eight" is none of its options -> index prior of train (1: two
    # of three) -> "two", wrong.
    assert r.score("question retrieval").accuracy == pytest.approx(200 / 3)
    assert "1 question(s) found no neighbour answer" in r.score("question retrieval").note


# ---------------------------------------------------------------- leakage


def _max_cosines(test_q, train_q):
    """Plain loop: the largest TF-IDF cosine of each test question to any
    training question (vectorizer fitted on the training questions)."""
    from sklearn.feature_extraction.text import TfidfVectorizer

    vec = TfidfVectorizer().fit(train_q)
    a = vec.transform(test_q).toarray()
    b = vec.transform(train_q).toarray()
    out = []
    for row in a:
        best = 0.0
        for other in b:
            na, nb = math.sqrt(float(row @ row)), math.sqrt(float(other @ other))
            if na and nb:
                best = max(best, float(row @ other) / (na * nb))
        out.append(best)
    return out


def test_planted_leakage():
    train_q = ["what is the man holding in the kitchen", "why did the girl run away",
               "how many dogs are in the park", "where is the red car parked",
               "what colour is the bird on the fence"]
    test_q = ["What is the man holding in the kitchen?",        # exact after normalising
              "why did the girl run away",                      # exact
              "how many dogs are in the red park",              # near
              "what instrument does the lady play",              # unrelated
              "when does the boy jump into the water",           # unrelated
              "who opens the door of the house"]                 # unrelated
    train = [op(f"t{i}", i, q, "x") for i, q in enumerate(train_q)]
    test = [op(f"v{i}", i, q, "x") for i, q in enumerate(test_q)]
    threshold = 0.8
    cos = _max_cosines(test_q, train_q)
    assert 0.8 <= cos[2] < 1.0 and max(cos[3:]) < 0.8  # the planted case is what it claims
    r = audit(test, train, folds_k=2, threshold=threshold)
    lk = r.leakage
    assert (lk.exact, lk.near, lk.n) == (2, 3, 6)
    assert lk.near_share == pytest.approx(50.0) and lk.exact_share == pytest.approx(100 / 3)
    assert lk.threshold == 0.8
    # A threshold above the near case keeps only the exact ones.
    assert audit(test, train, folds_k=2, threshold=0.99).leakage.near == 2


# ------------------------------------------------------- option checks


def test_position_chi_square_against_scipy():
    from scipy.stats import chisquare

    answers = [0, 0, 0, 1, 2, 0, 1]
    records = [mc(f"v{i}", i, "q", ["a", "bb", "ccc"], a) for i, a in enumerate(answers)]
    p = core.position_check(records)
    counts = [4, 2, 1]  # hand count
    ref = chisquare(counts)
    assert p.counts == tuple(counts) and p.n == 7 and p.n_options == 3 and p.dof == 2
    assert p.chi2 == pytest.approx(float(ref.statistic), rel=1e-12)
    assert p.p_value == pytest.approx(float(ref.pvalue), rel=1e-12)


def test_position_uses_the_most_common_option_count():
    records = [mc("v0", 0, "q", ["a", "b"], 1), mc("v1", 1, "q", ["a", "b", "c"], 2),
               mc("v2", 2, "q", ["a", "b", "c"], 2)]
    p = core.position_check(records)
    assert (p.n_options, p.n, p.counts) == (3, 2, (0, 0, 2))


def test_longest_option_always_right():
    rng = np.random.default_rng(3)
    records = []
    for i in range(20):
        opts = ["x" * n for n in rng.permutation([2, 5, 9, 14])]
        records.append(mc(f"v{i}", i, f"question {i}", opts, int(np.argmax([len(o) for o in opts]))))
    r = audit(records, folds_k=2)
    assert r.score("longest option").accuracy == 100.0
    assert r.score("shortest option").accuracy == 0.0
    assert r.length.mean_rank == 1.0 and r.length.chance_rank == 2.5
    assert r.score("longest option").chance == pytest.approx(25.0)


def test_length_rank_with_ties_by_hand():
    # Lengths 3, 3, 1: the correct option (index 0) ties for longest -> rank
    # (1 + 2) / 2 = 1.5; second question correct is the shortest -> rank 3.
    records = [mc("v0", 0, "q", ["abc", "def", "g"], 0), mc("v1", 1, "q", ["abc", "de", "f"], 2)]
    lb = core.length_bias(records)
    assert lb.mean_rank == pytest.approx((1.5 + 3) / 2)
    assert lb.longest == pytest.approx(50.0)   # first longest is index 0 -> right in q0 only
    assert lb.shortest == pytest.approx(50.0)  # shortest: q0 picks 2 (wrong), q1 picks 2 (right)


# ------------------------------------------------------ text baselines


def test_folds_never_split_a_video():
    records = [op(f"vid{i // 3}", i, f"q {i}", "a") for i in range(30)]
    splits, how = core.folds(records, 5, seed=1)
    assert how.startswith("GroupKFold by video")
    seen = set()
    for train_idx, test_idx in splits:
        train_v = {records[i].video_id for i in train_idx}
        test_v = {records[i].video_id for i in test_idx}
        assert not train_v & test_v
        seen |= set(test_idx.tolist())
    assert seen == set(range(30))


def test_option_only_finds_a_planted_word():
    # The correct option always says "zebra": an options-only model learns it.
    rng = np.random.default_rng(0)
    words = ["apple", "river", "stone", "cloud", "tiger", "piano"]
    records = []
    for i in range(40):
        wrong = list(rng.choice(words, size=3, replace=False))
        pos = int(rng.integers(4))
        opts = wrong[:pos] + [f"the zebra {words[i % 6]}"] + wrong[pos:]
        records.append(mc(f"v{i}", i, f"what happens {words[i % 6]}", opts, pos))
    r = audit(records, folds_k=4)
    s = r.score("option only (logistic regression)")
    assert s.accuracy == 100.0 and s.std == 0.0 and s.folds == 4
    assert s.chance == pytest.approx(25.0)
    assert "GroupKFold by video" in s.note


def test_question_only_finds_a_planted_rule():
    # Open answers decided by one word of the question.
    records = []
    for i in range(40):
        if i % 2:
            records.append(op(f"v{i}", i, f"what colour is object {i}", "red"))
        else:
            records.append(op(f"v{i}", i, f"how many items in box {i}", "three"))
    r = audit(records, folds_k=4)
    s = r.score("question only (logistic regression)")
    assert s.accuracy == 100.0 and s.std == 0.0
    assert s.chance == pytest.approx(50.0)  # two distinct answers


def test_too_few_questions_for_the_folds_is_said():
    r = audit([mc("v", 0, "q", ["a", "b"], 0), mc("v", 1, "q", ["a", "b"], 1)], folds_k=5)
    s = r.score("option only (logistic regression)")
    assert s.accuracy is None and "fewer than k=5" in s.note


def test_one_video_falls_back_to_question_folds_and_says_so():
    records = [op("only", i, f"what colour {i}", "red" if i % 2 else "blue") for i in range(10)]
    r = audit(records, folds_k=5)
    assert r.cv.startswith("KFold over questions") and "span folds" in r.cv


# ------------------------------------------------------ option builders


def test_audits_a_builders_option_set():
    from fastvqa.retrieval import Recipe, build_options

    correct = [f"answer number {i}" for i in range(12)]
    pools = [{"p": [f"wrong {i} {j}" for j in range(5)]} for i in range(12)]
    opts = build_options(correct, pools, Recipe((("p", 3),)), seed=0)
    r = audit(opts, folds_k=3)
    # build_options balances positions: counts differ by at most one.
    assert sum(r.position.counts) == 12 and max(r.position.counts) - min(r.position.counts) <= 1
    recs = records_from_options(opts, questions=[f"question {i}" for i in range(12)])
    assert [x.answer for x in recs] == opts.answer.tolist()
    assert recs[0].options[recs[0].answer] == correct[int(opts.items[0])]


# ------------------------------------------------------------ bad input


@pytest.mark.parametrize("records, match", [
    ([], "no questions"),
    ([mc("v", 0, "q", ["a", "b"], 2)], "not an option index"),
    ([mc("v", 0, "q", ["a", "b"], 0), op("v", 1, "q", "a")], "mixes"),
    ([op("v", 0, "q", None)], "no answer"),
    (["text"], "not a QARecord"),
])
def test_bad_records_are_input_errors(records, match):
    with pytest.raises(InputError, match=match):
        audit(records)


def test_bad_options_are_input_errors():
    recs = [op("v", 0, "q", "a"), op("w", 1, "r", "b")]
    with pytest.raises(InputError, match="folds_k"):
        audit(recs, folds_k=1)
    with pytest.raises(InputError, match="threshold"):
        audit(recs, threshold=0.0)
    with pytest.raises(InputError, match="train is not"):
        audit(recs, [mc("v", 0, "q", ["a", "b"], 0)])


# --------------------------------------------------- CLI on the real files

DATA = shared_data_dir()
needs_data = pytest.mark.skipif(DATA is None, reason=SHARED_DATA_SKIP)


@needs_data
@pytest.mark.parametrize("argv, expect", [
    (["nextgqa", "--gt", "nextgqa", "--train", "nextgqa", "--folds", "2"],
     "5553 multiple-choice questions; train: 3358"),
    (["wildqa", "--gt", "wildqa/test.json", "--train", "wildqa/dev.json"],
     "652 open questions; train: 264"),
    (["dvd", "--gt", "dvd"], "open questions"),
    (["sokbench", "--gt", "sokbench/example_question.json"], "1 multiple-choice questions"),
])
def test_cli_on_the_real_files(argv, expect, tmp_path, capsys):
    argv = [a if not a.startswith(("nextgqa", "wildqa/", "dvd", "sokbench/")) or i == 0
            else str(DATA / a) for i, a in enumerate(argv)]
    js, page = tmp_path / "a.json", tmp_path / "a.html"
    assert main(["audit", *argv, "--json", str(js), "--html", str(page)]) == 0
    out = capsys.readouterr().out
    assert expect in out
    doc = json.loads(js.read_text())
    assert doc["benchmark"] == argv[0] and doc["n_questions"] > 0
    text = page.read_text()
    assert text.startswith("<!DOCTYPE html>") and "data:image/png;base64," in text
    if argv[0] == "nextgqa":
        # Independent: the correct positions counted from the loader's records.
        from fastvqa.data import load_nextgqa

        counts = np.bincount([r.answer for r in load_nextgqa(DATA / "nextgqa", "test")],
                             minlength=5)
        assert doc["position"]["counts"] == counts.tolist()


@needs_data
def test_cli_refuses_to_overwrite_and_writes_nothing(tmp_path, capsys):
    js, page = tmp_path / "a.json", tmp_path / "a.html"
    page.write_text("mine")
    code = main(["audit", "sokbench", "--gt", str(DATA / "sokbench"), "--json", str(js),
                 "--html", str(page)])
    err = capsys.readouterr().err
    assert code == 2 and "refusing to overwrite" in err and len(err.strip().splitlines()) == 1
    assert page.read_text() == "mine" and not js.exists()


@needs_data
def test_cli_refuses_train_equal_to_gt(capsys):
    f = str(DATA / "wildqa" / "test.json")
    assert main(["audit", "wildqa", "--gt", f, "--train", f, "--train-split", "test"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "retrieve themselves" in err


def test_cli_bad_input_is_one_line(tmp_path, capsys):
    empty = tmp_path / "empty.json"
    empty.write_text("[]")
    assert main(["audit", "wildqa", "--gt", str(empty)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "holds no wildqa questions" in err
    assert main(["audit", "wildqa", "--gt", str(tmp_path / "missing.json")]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "missing.json" in err


def test_table_lists_every_baseline_with_chance():
    recs = [op(f"v{i}", i, f"what colour {i}", "red" if i % 2 else "blue") for i in range(10)]
    text = format_table(audit(recs, folds_k=2))
    for name in ("answer prior", "question-type prior", "question retrieval",
                 "question only (logistic regression)", "chance %"):
        assert name in text


def deveqa_sample(folder):
    """Six DeVE-QA questions in the sample layout, written to ``folder/test.jsonl``;
    the correct option is always "C"."""
    rows = [{"qid": str(i), "video_id": f"vid{i}", "question": f"what does person {i} do",
             "options": {"A": "sit", "B": "run", "C": f"open the box {i}", "D": "eat",
                         "E": "sleep"},
             "answer": "C", "gt_span": [1.0, 2.0], "duration": 10.0} for i in range(6)]
    gt = folder / "test.jsonl"
    gt.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    return gt


def test_cli_on_a_deveqa_file(tmp_path, capsys):
    # the index prior finds the always-"C" answer (6 of 6) and the chi-square sees it
    gt = deveqa_sample(tmp_path)
    js = tmp_path / "a.json"
    assert main(["audit", "deveqa", "--gt", str(gt), "--folds", "3", "--json", str(js)]) == 0
    doc = json.loads(js.read_text())
    scores = {s["name"]: s for s in doc["scores"]}
    assert scores["option-index prior"]["accuracy"] == 100.0
    assert doc["position"]["counts"] == [0, 0, 6, 0, 0]
    assert scores["longest option"]["accuracy"] == 100.0
    err = capsys.readouterr().err
    assert "open the box" not in err
    # No --train: the priors have seen the answers, and the run says so with
    # the answer prior against chance. The prior fitted on these questions
    # counts each one's own correct text ("open the box i") once and its wrong
    # options never, so it picks the right option every time: 100%, against
    # chance 1/5 = 20.0%.
    assert ("fastvqa audit: warning: no --train: the priors are fitted on the 6 audited "
            "questions themselves" in err)
    assert "(answer prior 100.0% against chance 20.0%)" in err
