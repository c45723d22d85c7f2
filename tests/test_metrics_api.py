# SPDX-License-Identifier: Apache-2.0
"""What every metric shares: the ``fn(preds, target, *, options)`` call, the
result labels (``metric`` = the function's name, ``benchmark`` set only by
evaluation)."""

from __future__ import annotations

import math

import numpy as np
import pytest

import fastvqa.metrics as M
from fastvqa.errors import InputError
from tests.test_metrics_dvd import _record as _dvd_record

# --------------------------------------------------------------------- cases
# One small input per metric, as (function name, preds, target, per-question
# keywords, options). Per-question keywords hold one entry per item (they are
# split with the items when batching); options apply to the whole evaluation.


def _grounded_case():
    preds = np.array([[1.0, 3.0], [np.nan, np.nan], [0.0, 10.0], [4.0, 4.0], [2.0, 9.0],
                      [0.5, 1.5]])
    target = (np.array([[0.0, 2.0], [2.0, 4.0], [0.0, 4.0], [3.0, 5.0], [3.0, 5.0], [2.0, 8.0],
                        [0.0, 1.0]]),
              np.array([0, 2, 3, 3, 5, 6, 7]))
    per_item = {"pred_answers": np.array([1, -1, 2, 0, 3, 1]),
                "gt_answers": np.array([1, 1, 2, 1, 3, 1]),
                "durations": np.array([10.0, 20.0, 30.0, 40.0, 50.0, 60.0]),
                "keys": [f"v{i}_q" for i in range(6)]}
    return "grounded_qa", preds, target, per_item, {}


def _iou_f1_case(mode, **options):
    preds = [[[2, 6]], [], [[0.4, 2.6], [10, 12]], [[1, 3], [1, 3]], [[5, 9]], [[0, 1]]]
    target = [[[2, 6], [10, 12]], [[1, 3]], [[0, 2], [10, 12]], [[1, 3]], [], [[0, 1]]]
    per_item = {}
    if mode != "wildqa-2022":
        per_item["alternatives"] = [[[[2, 5]]], [], [[[0, 3]], [[9, 12]]], [], [[[5, 9]]], []]
    return "iou_f1", preds, target, per_item, {"mode": mode, "thresholds": (0.1, 0.7), **options}


def _rouge_case():
    preds = ["a red cube slides", "the sphere is blue", "two", "it rotates, then stops", ""]
    target = ["the red cube is sliding", ["blue sphere", "a blue ball"], "two objects",
              ["it stops", "rotating"], "nothing"]
    return "rouge", preds, target, {}, {"references_mode": "max"}


def _dvd_case():
    # A transfer turn whose previous turn lands in the other batch (v_0_1
    # after v_0_0, v_0_3 after v_0_2) when split 3 + 3.
    records = [
        _dvd_record("v", 0, 0, "1", "object_count", "object_count", "compositional"),
        _dvd_record("v", 0, 1, "2", "object_count", "object_count", "compositional",
                    ["temporal"]),
        _dvd_record("v", 0, 2, "True", "object_exist", "object_exist", "atomic_spatial",
                    or_eff=2),
        _dvd_record("v", 0, 3, "0", "object_count", "object_count", "atomic_spatial",
                    ["spatial"]),
        _dvd_record("v", 1, 0, "red", "attribute_query", "attribute_query.color", "none"),
        _dvd_record("v", 1, 1, "metal", "attribute_query", "attribute_query.material", "none",
                    ["attribute"]),
    ]
    preds = {"v_0_0": "1", "v_0_1": 2, "v_0_2": True, "v_0_3": "1", "v_1_0": "Red",
             "v_1_1": None}
    return "dvd_accuracy", preds, records, {}, {}


def _multiple_choice_case():
    options = [["salt", "sugar", "flour", "pepper"]] * 3 + [["red", "green", "blue"]] * 3
    answers = [1, 1, 2, 0, 2, 1]
    preds = [1, "(B) sugar", "they add sugar", "A", None, "the answer is 1"]
    return ("multiple_choice_accuracy", preds, (options, answers),
            {"question_types": ["how", "how", "what", "what", "what", "how"]}, {})


def _moment_case():
    preds = {
        "1": [[0.0, 10.0, 0.9], [20.0, 40.0, 0.8], [5.0, 12.0, 0.95]],
        "2": [[30.0, 70.0, 0.5], [0.0, 2.0, 0.6]],
        "3": [[1.0, 2.0, 0.1]],
        "4": [[0.0, 100.0, 0.3], [40.0, 60.0, 0.3], [41.0, 59.0, 0.7]],
        "5": [[2.0, 4.0, 1.0], [2.0, 4.0, 1.0]],
        "6": [[10.0, 20.0, 0.2], [12.0, 18.0, 0.4]],
    }
    target = {"1": [[0.0, 10.0]], "2": [[30.0, 60.0], [62.0, 70.0]], "3": [[1.0, 3.0]],
              "4": [[40.0, 60.0]], "5": [[2.0, 4.0], [6.0, 8.0]], "6": [[11.0, 19.0]]}
    return "moment_retrieval", preds, target, {}, {}


def _recall_case():
    preds = [[[0.0, 5.0], [4.0, 10.0]], [[1.0, 2.0], [0.0, 3.0], [2.5, 3.0]], [[3.0, 9.0]],
             [[0.0, 1.0], [0.0, 1.0], [5.0, 6.0]], [[7.0, 8.0]], [[2.0, 4.0], [2.0, 3.0]]]
    target = [[4.0, 10.0], [0.0, 3.0], [[0.0, 4.0], [6.0, 9.0]], [5.0, 6.0], [0.0, 1.0],
              [2.0, 4.0]]
    return "recall_at_n", preds, target, {}, {"rule": "2dtan"}


CASES = {
    "grounded_qa": _grounded_case,
    "iou_f1-2022": lambda: _iou_f1_case("wildqa-2022", pad_to_batch=4),
    "iou_f1-2023": lambda: _iou_f1_case("wildqa-2023"),
    "iou_f1-clean": lambda: _iou_f1_case("clean"),
    "rouge": _rouge_case,
    "dvd_accuracy": _dvd_case,
    "multiple_choice_accuracy": _multiple_choice_case,
    "moment_retrieval": _moment_case,
    "recall_at_n": _recall_case,
}


def one_shot(case):
    name, preds, target, per_item, options = case
    return getattr(M, name)(preds, target, **per_item, **options)


# -------------------------------------------------------------------- labels


@pytest.mark.parametrize("case", sorted(CASES))
def test_result_label_is_the_function_name_and_no_benchmark(case):
    result = one_shot(CASES[case]())
    name = CASES[case]()[0]
    assert result.metric == name
    assert result.benchmark is None
    assert result.to_dict()["metric"] == name and result.to_dict()["benchmark"] is None
    assert result.format_table().splitlines()[0] == name


def test_benchmark_is_a_separate_field():
    r = M.MetricResult("grounded_qa", {"mIoU": 50.0}, benchmark="nextgqa")
    assert (r.metric, r.benchmark, r.title) == ("grounded_qa", "nextgqa", "nextgqa")
    assert r.to_dict()["benchmark"] == "nextgqa" and r.to_dict()["metric"] == "grounded_qa"
    assert r.format_table().splitlines()[0] == "nextgqa"
    assert not math.isnan(r["mIoU"])


# ------------------------------------------------------ stateful metric objects

CLASSES = {
    "grounded_qa": "GroundedQA",
    "iou_f1": "IoUF1",
    "rouge": "Rouge",
    "dvd_accuracy": "DVDAccuracy",
    "multiple_choice_accuracy": "MultipleChoiceAccuracy",
    "moment_retrieval": "MomentRetrieval",
    "recall_at_n": "RecallAtN",
}


def _n_items(preds):
    return len(preds)


def _take(x, lo, hi):
    if isinstance(x, dict):
        return {k: x[k] for k in list(x)[lo:hi]}
    if isinstance(x, tuple):
        return tuple(_take(v, lo, hi) for v in x)
    return x[lo:hi]


def batches(case, cuts):
    """The case's items split at ``cuts`` -> [(preds, target, per_item)]; for
    grounded_qa the batches alternate between the two target forms (a list of
    rows, then the CSR pair of that batch)."""
    name, preds, target, per_item, _ = case
    n = _n_items(preds)
    if name == "grounded_qa":
        spans, offsets = target
        target = [spans[offsets[i]:offsets[i + 1]] for i in range(n)]
    bounds = [0, *cuts, n]
    out = []
    for b, (lo, hi) in enumerate(zip(bounds[:-1], bounds[1:])):
        t = _take(target, lo, hi)
        if name == "grounded_qa" and b % 2:
            from fastvqa.data import spans_to_csr

            t = spans_to_csr(t)
        out.append((_take(preds, lo, hi), t, {k: _take(v, lo, hi) for k, v in per_item.items()}))
    return out


def fingerprint(result):
    """What two bit-identical results share: the metric's name, every metric
    and info entry, the per-question columns and values (floats through repr;
    NaN as null)."""
    import json

    return (result.metric, json.dumps(result.to_dict(), sort_keys=True),
            list(result.per_question), json.dumps(result.per_question_rows()))


def _metric(case):
    name, *_, options = case
    return getattr(M, CLASSES[name])(**options)


@pytest.mark.parametrize("case", sorted(CASES))
def test_batched_updates_equal_the_one_shot_result(case):
    c = CASES[case]()
    expected = one_shot(c)
    m = _metric(c)
    for preds, target, per_item in batches(c, [2, 2, 3]):  # an empty batch included
        m.update(preds, target, **per_item)
    assert fingerprint(m.compute()) == fingerprint(expected)
    # compute() does not consume the state.
    assert fingerprint(m.compute()) == fingerprint(expected)


@pytest.mark.parametrize("case", sorted(CASES))
def test_merged_objects_equal_the_one_shot_result(case):
    c = CASES[case]()
    expected = one_shot(c)
    first, second = _metric(c), _metric(c)
    (p0, t0, k0), (p1, t1, k1), (p2, t2, k2) = batches(c, [1, 4])
    first.update(p0, t0, **k0)
    second.update(p1, t1, **k1)
    second.update(p2, t2, **k2)
    assert fingerprint(first.merge(second).compute()) == fingerprint(expected)
    # merge copies: the other object is unchanged and still scores its own part.
    alone = _metric(c)
    alone.update(p1, t1, **k1)
    alone.update(p2, t2, **k2)
    assert fingerprint(second.compute()) == fingerprint(alone.compute())


@pytest.mark.parametrize("case", sorted(CASES))
def test_reset_and_empty_state(case):
    c = CASES[case]()
    m = _metric(c)
    with pytest.raises(InputError, match="nothing to score"):
        m.compute()
    (p0, t0, k0), (p1, t1, k1) = batches(c, [3])
    m.update(p0, t0, **k0)
    m.reset()
    with pytest.raises(InputError, match="nothing to score"):
        m.compute()
    m.update(p0, t0, **k0)
    m.update(p1, t1, **k1)
    assert fingerprint(m.compute()) == fingerprint(one_shot(c))


def test_state_is_a_copy_of_the_inputs():
    name, preds, target, per_item, options = CASES["grounded_qa"]()
    expected = one_shot(CASES["grounded_qa"]())
    m = M.GroundedQA(**options)
    m.update(preds, target, **per_item)
    preds[:] = 0.0
    per_item["pred_answers"][:] = 0
    assert fingerprint(m.compute()) == fingerprint(expected)


def test_per_question_lists_and_tuples_batch_like_arrays():
    """Regressions: a per-question input given as an (empty) list was kept as
    a float array (its integers then refused at compute()), and a tuple of
    predictions was taken for a composite target."""
    m = M.GroundedQA()
    m.update(np.array([[0.0, 4.0]]), [np.array([[0.0, 2.0]])], pred_answers=[2], gt_answers=[2])
    m.update(np.zeros((0, 2)), [], pred_answers=[], gt_answers=[])
    # Hand computation: one question, IoU 2 / 4, IoP 2 / 4, its answer right.
    result = m.compute()
    assert result["mIoU"] == 50.0 and result["Acc@QA"] == 100.0

    r = M.Rouge()
    r.update(("a red cube",), ("a red cube",))
    r.update(("blue",), ("a blue ball",))
    assert fingerprint(r.compute()) == fingerprint(M.rouge(["a red cube", "blue"],
                                                           ["a red cube", "a blue ball"]))


def test_stateful_errors():
    name, preds, target, per_item, options = CASES["grounded_qa"]()
    with pytest.raises(TypeError, match="unknown option"):
        M.GroundedQA(keys=["a"])  # a per-question input, not an option
    m = M.GroundedQA()
    with pytest.raises(TypeError, match="unknown keyword"):
        m.update(preds, target, mode="nextgqa")
    # A bad batch is refused when it is added, naming the argument.
    with pytest.raises(InputError, match="grounded_qa: preds must have shape"):
        m.update([[1.0, 2.0, 3.0]], [[[0.0, 1.0]]])
    m.update(preds, target, keys=per_item["keys"])
    with pytest.raises(InputError, match="same per-question inputs in every batch"):
        m.update(preds, target)
    with pytest.raises(InputError, match="options differ"):
        M.GroundedQA().merge(M.GroundedQA(mode="deveqa-repo"))
    with pytest.raises(TypeError, match="cannot combine"):
        M.GroundedQA().merge(M.Rouge())
    moment = M.MomentRetrieval()
    moment.update({"1": [[0.0, 1.0, 1.0]]}, {"1": [[0.0, 1.0]]})
    moment.update({"1": [[0.0, 2.0, 1.0]]}, {"1": [[0.0, 2.0]]})
    with pytest.raises(InputError, match="key '1' was given in two update"):
        moment.compute()
    rouge = M.Rouge()
    rouge.update(["a"], ["a"])
    rouge.update({"q": "a"}, ["a"])
    with pytest.raises(InputError, match="a mapping in some batches and a sequence in others"):
        rouge.compute()
    with pytest.raises(TypeError, match="preds must be a sequence or a mapping"):
        M.Rouge().update("a red cube", ["x"])


def test_sync_without_a_process_group_is_a_copy():
    name, preds, target, per_item, options = CASES["recall_at_n"]()
    m = M.RecallAtN(**options)
    m.update(preds, target)
    synced = m.sync()
    assert synced is not m
    assert fingerprint(synced.compute()) == fingerprint(one_shot(CASES["recall_at_n"]()))


def test_classes_are_exported_lazily():
    names = {"Metric", *CLASSES.values()}
    assert names <= set(M.__all__) and names <= set(dir(M))
    for name in CLASSES.values():
        assert issubclass(getattr(M, name), M.Metric)
        assert getattr(M, name).function in CLASSES


def test_import_does_not_import_torch():
    import subprocess
    import sys

    code = ("import sys, fastvqa.metrics as M; [getattr(M, n) for n in M.__all__]; "
            "m = M.GroundedQA(); m.update([[0.0, 1.0]], [[[0.0, 1.0]]]); m.compute(); "
            "print('torch' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    assert out.stdout.strip() == "False"


# ------------------------------------------------- two gloo processes on CPU

def _gloo_worker(rank, world, port, out_dir):
    import datetime
    import json

    import torch.distributed as dist

    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank,
                            world_size=world, timeout=datetime.timedelta(seconds=60))
    try:
        results = {}
        for key in sorted(CASES):
            c = CASES[key]()
            n = _n_items(c[1])
            mine = batches(c, [n // 2])[rank]  # rank 0 the first half, rank 1 the rest
            m = _metric(c)
            m.update(mine[0], mine[1], **mine[2])
            r = m.sync().compute()
            results[key] = {"doc": r.to_dict(), "rows": r.per_question_rows()}
            # sync leaves the rank's own state alone.
            assert len(m._batches) == 1
        with open(f"{out_dir}/rank{rank}.json", "w") as f:
            json.dump(results, f, sort_keys=True)
    finally:
        dist.destroy_process_group()


def _free_port():
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_sync_over_two_gloo_processes(tmp_path):
    import json
    import time

    pytest.importorskip("torch")
    import torch.distributed as dist
    import torch.multiprocessing as mp

    if not dist.is_available() or not dist.is_gloo_available():
        pytest.skip("torch.distributed with gloo is not available")
    ctx = mp.start_processes(_gloo_worker, args=(2, _free_port(), str(tmp_path)), nprocs=2,
                             join=False, start_method="spawn")
    deadline = time.monotonic() + 240
    try:
        while not ctx.join(timeout=5):
            if time.monotonic() > deadline:
                pytest.fail("the two gloo processes did not finish within 240 s")
    finally:
        for p in ctx.processes:
            if p.is_alive():
                p.kill()
                p.join()
    ranks = [json.loads((tmp_path / f"rank{r}.json").read_text()) for r in range(2)]
    assert ranks[0] == ranks[1]
    for key in sorted(CASES):
        expected = one_shot(CASES[key]())
        got = ranks[0][key]
        assert json.dumps(got["doc"], sort_keys=True) == json.dumps(
            json.loads(json.dumps(expected.to_dict())), sort_keys=True), key
        assert got["rows"] == json.loads(json.dumps(expected.per_question_rows())), key
