# SPDX-License-Identifier: Apache-2.0
"""WildQA extras: the 2023 Average Precision (against a float64 loop
reference and hand cases), the per-question-type table, the human
leave-one-annotator-out agreement and BLEU-1/2/3, through the metrics and
``fastvqa eval wildqa``."""

from __future__ import annotations

import json
import math
import random
from collections import Counter

import numpy as np
import pytest

from fastvqa.cli import main
from fastvqa.errors import InputError
from fastvqa.metrics import AveragePrecision, average_precision, human_agreement
from tests.reference import wildqa_ap as ref

# --------------------------------------------------------------------------
# average_precision: hand cases
# --------------------------------------------------------------------------


def test_ap_hand_case_with_an_alternative_target_set():
    # q0: two copies of [2,6] vs gold [2,6]: TP then FP (the span is taken).
    # q1: [0,4] misses the primary [10,14]; the alternative [0,4] gives 1 TP,
    #     so that set is kept (1 positive).
    # Rows TP, FP, TP over 2 positives: precision 1, 1/2, 2/3 at recall
    # 1/2, 1/2, 1; made monotone: 1 up to recall 1/2, 2/3 up to 1.
    # AP = 1/2 * 1 + 1/2 * 2/3 = 5/6.
    r = average_precision([[[2, 6], [2, 6]], [[0, 4]]], [[[2, 6]], [[10, 14]]],
                          alternatives=[[], [[[0, 4]]]])
    assert r["AP"] == pytest.approx(100 * 5 / 6, rel=1e-12)
    assert list(r.per_question["TP"]) == [1, 1] and list(r.per_question["target"]) == [0, 1]


def test_ap_depends_on_the_order_within_a_question():
    gold = [[[0, 10]]]
    # A wrong span first: rows FP, TP: precision 1/2 at recall 1 -> AP 1/2.
    assert average_precision([[[20, 30], [0, 10]]], gold)["AP"] == pytest.approx(50.0)
    # The right span first: rows TP, FP -> AP 1.
    assert average_precision([[[0, 10], [20, 30]]], gold)["AP"] == pytest.approx(100.0)


def test_ap_tie_between_target_sets_keeps_the_smaller():
    # Both sets give 1 TP; the alternative has one span, the primary two:
    # the alternative is kept, so 1 positive and AP = 1.
    r = average_precision([[[0, 4]]], [[[0, 4], [8, 9]]], alternatives=[[[[0, 4]]]])
    assert r["AP"] == pytest.approx(100.0)
    assert r.per_question["target"][0] == 1 and r.per_question["n_gold"][0] == 1


def test_ap_no_prediction_and_no_positive():
    assert average_precision([[]], [[[1, 2]]])["AP"] == 0.0  # positives, no rows
    assert math.isnan(average_precision([[[1, 2]]], [[]])["AP"])  # nothing to recall
    # A question with no prediction still adds its gold: 1 of 2 positives found.
    r = average_precision([[[0, 4]], []], [[[0, 4]], [[5, 6]]])
    assert r["AP"] == pytest.approx(50.0)


def test_ap_2023_rounds_the_primary_gold_and_compares_in_float32():
    # Primary [0.4, 5.6] is rounded to [0, 6] in wildqa-2023 (IoU of [0, 6] = 1);
    # clean keeps it (IoU 5.2/6 < 0.9).
    pred, gold = [[[0.0, 6.0]]], [[[0.4, 5.6]]]
    assert average_precision(pred, gold, threshold=0.9)["AP"] == pytest.approx(100.0)
    assert average_precision(pred, gold, mode="clean", threshold=0.9)["AP"] == 0.0
    # A real gold span that rounds to [0, 0] is dropped (as model.py drops padding).
    assert math.isnan(average_precision([[[0, 1]]], [[[0.0, 0.4]]])["AP"])


def test_ap_batch_size_is_the_weighted_mean_of_batch_aps():
    preds = [[[0, 4]], [[9, 10]], [[0, 4]]]
    gold = [[[0, 4]], [[0, 4]], [[0, 4]]]
    # Batches of 2: {TP, FP} over 2 positives -> 1/2; {TP} over 1 -> 1.
    # Weighted: (2 * 1/2 + 1 * 1) / 3 = 2/3. Whole split: TP FP TP over 3 -> ...
    r = average_precision(preds, gold, batch_size=2)
    assert r["AP"] == pytest.approx(100 * 2 / 3)
    whole = ref.average_precision([[[0, 4]], [[9, 10]], [[0, 4]]],
                                  [[[[0, 4]]]] * 3, 0.5)
    assert average_precision(preds, gold)["AP"] == pytest.approx(100 * whole)


def test_ap_extra_thresholds_and_errors():
    r = average_precision([[[0, 4]]], [[[0, 5]]], threshold=0.5, thresholds=[0.9])
    assert r["AP"] == 100.0 and r["AP@0.9"] == 0.0
    with pytest.raises(InputError, match="mode"):
        average_precision([[]], [[]], mode="wildqa-2022")
    with pytest.raises(InputError, match="batch_size must be a positive integer"):
        average_precision([[]], [[]], batch_size=0)
    with pytest.raises(InputError, match="given twice"):
        average_precision([[[0, 1]]], [[[0, 1]]], thresholds=[0.3, 0.3])


def _random_case(rng: random.Random, n: int):
    preds, gold, alts = [], [], []
    for _ in range(n):
        def spans(k, integer=False):
            out = []
            for _ in range(k):
                a, b = sorted(rng.uniform(0, 30) for _ in range(2))
                out.append([float(round(a)), float(round(b))] if integer else [a, b])
            return out
        preds.append(spans(rng.randint(0, 4), integer=rng.random() < 0.5))
        gold.append(spans(rng.randint(0, 3), integer=True))
        alts.append([spans(rng.randint(0, 3)) for _ in range(rng.randint(0, 2))])
    return preds, gold, alts


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("threshold", [0.1, 0.5, 0.7])
def test_ap_equals_the_float64_loop_reference(seed, threshold):
    rng = random.Random(seed)
    preds, gold, alts = _random_case(rng, 40)
    sets_2023 = [ref.gold_2023(g, a) for g, a in zip(gold, alts)]
    got = average_precision(preds, gold, alternatives=alts, threshold=threshold)["AP"]
    want = ref.average_precision(preds, sets_2023, threshold, float32=True)
    assert (math.isnan(got) and math.isnan(want)) or got == pytest.approx(100 * want, abs=1e-9)
    sets_clean = [[g, *a] for g, a in zip(gold, alts)]
    got = average_precision(preds, gold, alternatives=alts, threshold=threshold,
                            mode="clean", batch_size=7)["AP"]
    want = ref.average_precision(preds, sets_clean, threshold, batch_size=7)
    assert (math.isnan(got) and math.isnan(want)) or got == pytest.approx(100 * want, abs=1e-9)


def test_ap_stateful_form_equals_one_shot():
    preds, gold, alts = _random_case(random.Random(9), 20)
    m = AveragePrecision(threshold=0.3)
    m.update(preds[:12], gold[:12], alternatives=alts[:12])
    m.update(preds[12:], gold[12:], alternatives=alts[12:])
    assert m.compute().metrics == average_precision(preds, gold, alternatives=alts,
                                                    threshold=0.3).metrics


# --------------------------------------------------------------------------
# human_agreement
# --------------------------------------------------------------------------


def _rouge1(pred: str, refs: list[str]) -> float:
    """Independent ROUGE-1 F (unigram multiset overlap) after WildQA's
    normalisation, best over refs."""
    import re
    import string

    def tokens(text):
        text = text.lower().translate(str.maketrans("", "", string.punctuation))
        text = re.sub(r"\b(?:a|an|the)\b", " ", text)
        return re.sub(r"[^a-z0-9]+", " ", text).split()

    best = 0.0
    p = Counter(tokens(pred))
    for r in refs:
        g = Counter(tokens(r))
        overlap = sum((p & g).values())
        if overlap:
            prec, rec = overlap / sum(p.values()), overlap / sum(g.values())
            best = max(best, 2 * prec * rec / (prec + rec))
    return best


def test_human_agreement_by_hand():
    pytest.importorskip("rouge_score")
    answers = [
        ["a red cube", "the red cube", "blue ball"],  # two Phase-2 answers
        ["yes"],  # nobody to agree with: skipped
        ["two cars", "three cars"],
    ]
    r = human_agreement(answers)
    # q0: "red cube" vs {"red cube", "blue ball"} -> 1; "blue ball" vs
    #     {"red cube", "red cube"} -> 0; mean 1/2. q2: "three cars" vs
    #     "two cars" -> P = R = 1/2, F = 1/2. Mean over q0, q2: 1/2.
    assert r["ROUGE-1"] == pytest.approx(50.0)
    assert r.info["skipped"] == 1 and list(r.per_question["scored"]) == [2, 0, 1]
    everyone = human_agreement(answers, annotators="all")
    # q0 adds "a red cube" vs {"the red cube", "blue ball"} -> 1: (1 + 1 + 0)/3;
    # q2 adds "two cars" vs "three cars" -> 1/2: mean 1/2.
    assert everyone["ROUGE-1"] == pytest.approx(100 * (2 / 3 + 1 / 2) / 2)
    with pytest.raises(InputError, match="annotators must be"):
        human_agreement(answers, annotators="experts")


# --------------------------------------------------------------------------
# fastvqa eval wildqa on the real files
# --------------------------------------------------------------------------


@pytest.fixture
def wildqa_dir(shared_data):
    folder = shared_data / "wildqa"
    if not (folder / "test.json").exists():
        pytest.skip("WildQA test.json not in the shared data")
    return folder


def _eval(capsys, *argv):
    capsys.readouterr()
    assert main(["eval", "wildqa", *argv, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_cli_qa_sections_on_the_real_test_split(wildqa_dir, tmp_path, capsys):
    pytest.importorskip("rouge_score")
    items = json.loads((wildqa_dir / "test.json").read_text())
    pred = tmp_path / "common.json"
    pred.write_text(json.dumps(["Yes"] * len(items)))  # the paper's "Common" baseline
    plain = _eval(capsys, "qa", "--gt", str(wildqa_dir), "--pred", str(pred))
    full = _eval(capsys, "qa", "--gt", str(wildqa_dir), "--pred", str(pred), "--bleu",
                 "--human", "--by-type")
    m = full["metrics"]
    # The default report is unchanged, and stays Table 4's Common row.
    assert list(plain["metrics"]) == ["ROUGE-1", "ROUGE-2", "ROUGE-L"]
    assert round(plain["metrics"]["ROUGE-1"], 1) == 10.6 and round(m["ROUGE-L"], 1) == 10.6
    for k in ("ROUGE-1", "ROUGE-2", "ROUGE-L"):
        assert m[k] == plain["metrics"][k]
    # Per type: a question counts in every type it lists (Existence 298 ...).
    types = Counter(t for it in items for t in dict.fromkeys(it["question_type"]))
    assert types["Existence"] == 298
    for t, count in types.items():
        assert full["info"]["counts"][f"ROUGE-1/type={t}"] == count
    exist = [i for i, it in enumerate(items) if "Existence" in it["question_type"]]
    want = np.mean([_rouge1("Yes", [items[i]["answer"]]) for i in exist])
    assert m["ROUGE-1/type=Existence"] == pytest.approx(100 * want, abs=1e-9)
    # Human: each Phase-2 answer against the other answers (Phase-1 included).
    per_q = []
    for it in items:
        answers = [it["answer"], *it["alter_answers"]]
        if len(answers) > 1:
            per_q.append(np.mean([_rouge1(answers[j], answers[:j] + answers[j + 1:])
                                  for j in range(1, len(answers))]))
    assert m["Human ROUGE-1"] == pytest.approx(100 * np.mean(per_q), abs=1e-9)
    assert full["info"]["human"]["skipped"] == sum(not it["alter_answers"] for it in items)
    # BLEU-1 (corpus): "yes" against the normalised Phase-1 answers, by hand.
    refs = [it["answer"] for it in items]
    matches = sum(1 for r in refs if "yes" in _tokens_norm(r))
    c, r_len = len(refs), sum(len(_tokens_norm(r)) for r in refs)
    bleu1 = (matches / c) * (math.exp(1 - r_len / c) if c < r_len else 1.0)
    assert m["BLEU-1"] == pytest.approx(100 * bleu1, rel=1e-9)


def _tokens_norm(text: str) -> list[str]:
    from fastvqa.metrics import normalize_answer

    return normalize_answer(text).split()


def test_cli_evidence_ap_and_by_type_on_the_real_test_split(wildqa_dir, tmp_path, capsys):
    items = json.loads((wildqa_dir / "test.json").read_text())
    pred = tmp_path / "spans.json"
    assert main(["baseline", "wildqa", "evidence", "random", "--gt", str(wildqa_dir),
                 "--seed", "3", "--out", str(pred)]) == 0
    spans = json.loads(pred.read_text())
    doc = _eval(capsys, "evidence", "--gt", str(wildqa_dir), "--pred", str(pred), "--mode",
                "wildqa-2023", "--threshold", "0.1", "--ap", "--by-type")
    sets = [ref.gold_2023([list(e.values())[0] for e in it["evidences"]],
                          it["alter_evidences"]) for it in items]
    want = ref.average_precision(spans, sets, float(np.float32(0.1)), float32=True)
    assert doc["metrics"]["AP"] == pytest.approx(100 * want, abs=1e-9)
    assert doc["info"]["ap"]["positives"] > 0
    plain = _eval(capsys, "evidence", "--gt", str(wildqa_dir), "--pred", str(pred), "--mode",
                  "wildqa-2023", "--threshold", "0.1")
    assert doc["metrics"]["IoU-F1"] == plain["metrics"]["IoU-F1"]
    assert list(plain["metrics"]) == ["IoU-F1"]
    # IoU-F1 per type = the mean of the per-question F1 over that type's questions.
    pq = tmp_path / "pq.json"
    main(["eval", "wildqa", "evidence", "--gt", str(wildqa_dir), "--pred", str(pred), "--mode",
          "wildqa-2023", "--threshold", "0.1", "--per-question", str(pq)])
    f1 = [row["F1"] for row in json.loads(pq.read_text())]
    motion = [f1[i] for i, it in enumerate(items) if "Motion" in it["question_type"]]
    assert doc["metrics"]["IoU-F1/type=Motion"] == pytest.approx(100 * np.mean(motion),
                                                                 abs=1e-9)
    # Batched (as logged): the weighted mean of per-batch APs.
    batched = _eval(capsys, "evidence", "--gt", str(wildqa_dir), "--pred", str(pred),
                    "--mode", "wildqa-2023", "--threshold", "0.1", "--ap",
                    "--ap-batch-size", "32")
    want_b = ref.average_precision(spans, sets, float(np.float32(0.1)), float32=True,
                                   batch_size=32)
    assert batched["metrics"]["AP"] == pytest.approx(100 * want_b, abs=1e-9)


def test_cli_ap_refuses_the_paper_era_mode(wildqa_dir, tmp_path, capsys):
    pred = tmp_path / "spans.json"
    pred.write_text(json.dumps([[]] * 652))
    assert main(["eval", "wildqa", "evidence", "--gt", str(wildqa_dir), "--pred", str(pred),
                 "--ap"]) != 0
    assert "exists only in the 2023 rewrite" in capsys.readouterr().err
    assert main(["eval", "wildqa", "evidence", "--gt", str(wildqa_dir), "--pred", str(pred),
                 "--mode", "wildqa-2023", "--ap-batch-size", "4"]) != 0
    assert "--ap-batch-size applies to --ap only" in capsys.readouterr().err


def test_human_evidence_agreement_by_hand():
    from fastvqa.metrics import human_evidence_agreement

    primary = [[[0, 10]], [[0, 4]]]
    annotators = [[[[0, 10]], [[20, 30]], []], []]
    # q0: annotator 0 matches the primary (F1 1), annotator 1 matches nobody
    # (0), annotator 2 has no evidence; q1 has no Phase-2 annotator: skipped.
    skip = human_evidence_agreement(primary, annotators)
    assert skip["IoU-F1"] == pytest.approx(50.0)
    assert skip.info["skipped"] == 1 and list(skip.per_question["scored"]) == [2, 0]
    zero = human_evidence_agreement(primary, annotators, empty="zero")
    assert zero["IoU-F1"] == pytest.approx(100 / 3)
    # Annotator 1 finds annotator 0's span among the others' sets when it overlaps.
    near = human_evidence_agreement([[[0, 10]]], [[[[0, 10]], [[1, 10]]]], threshold=0.8)
    assert near["IoU-F1"] == pytest.approx(100.0)
    with pytest.raises(InputError, match="empty"):
        human_evidence_agreement(primary, annotators, empty="drop")


def test_cli_evidence_human_on_raw_test(shared_data, tmp_path, capsys):
    folder = shared_data / "wildqa"
    if not (folder / "raw_test.json").exists():
        pytest.skip("WildQA raw_test.json not in the shared data")
    items = json.loads((folder / "raw_test.json").read_text())
    pred = tmp_path / "spans.json"
    pred.write_text(json.dumps([[]] * len(items)))
    doc = _eval(capsys, "evidence", "--gt", str(folder), "--split", "raw_test",
                "--evidence-filter", "--pred", str(pred), "--mode", "clean", "--human", "skip")
    # Independent loop: continuous IoU, one-to-one matching (clean), max over
    # {Phase-1, other annotators' filtered non-empty lists}, mean per question.
    per_q = []
    for it in items:
        limit = it["duration"] / 4
        ann = [[s for s in a if s[1] - s[0] <= limit] for a in it["alter_evidences"]]
        primary = [list(e.values())[0] for e in it["evidences"]]
        scores = []
        for j, spans in enumerate(ann):
            if not spans:
                continue
            sets = [primary] + [a for i, a in enumerate(ann) if i != j and a]
            scores.append(max(_clean_f1(spans, t) for t in sets))
        if scores:
            per_q.append(np.mean(scores))
    assert doc["metrics"]["Human IoU-F1"] == pytest.approx(100 * np.mean(per_q), abs=1e-9)
    assert doc["info"]["human"]["empty"] == "skip"
    assert main(["eval", "wildqa", "evidence", "--gt", str(folder), "--pred", str(pred),
                 "--mode", "clean", "--human", "skip"]) != 0
    assert "no longer aligned" in capsys.readouterr().err


def _clean_f1(preds, golds, threshold=0.5):
    """F1 with a maximum one-to-one matching (brute force over small sets)."""
    import itertools

    if not preds and not golds:
        return 1.0
    best = 0
    edges = [(p, g) for p in range(len(preds)) for g in range(len(golds))
             if ref.iou(preds[p], golds[g]) >= threshold]
    for r in range(min(len(preds), len(golds)), 0, -1):
        for combo in itertools.combinations(edges, r):
            if len({p for p, _ in combo}) == r and len({g for _, g in combo}) == r:
                best = r
                break
        if best:
            break
    if best == 0:
        return 0.0
    prec, rec = best / len(preds), best / len(golds)
    return 2 * prec * rec / (prec + rec)
