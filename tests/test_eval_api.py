# SPDX-License-Identifier: Apache-2.0
"""Evaluation as a library: each benchmark's ``evaluate(**keywords)`` and
each baseline's ``run(**keywords)`` called from Python give what ``fastvqa
eval``/``fastvqa baseline`` give (the command line only translates its
options), and the registry no longer hides a missing benchmark module.

Expected numbers are hand computations on the small files of
tests/test_eval_trust.py's ``files`` fixture."""

from __future__ import annotations

import json

import pytest

from fastvqa.cli import main
from tests.test_eval_trust import BASELINES, files  # noqa: F401  (the fixture)


def _cli(capsys, *argv) -> dict:
    capsys.readouterr()
    assert main(["eval", *argv, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def _same(result, cli: dict) -> None:
    """The library's result is the command line's: every field of its JSON
    form (the command line may add its own run record on top)."""
    lib = json.loads(json.dumps(result.to_dict()))
    assert lib == {k: cli[k] for k in lib}


def _gt(files, bench):
    return files["wildqa" if bench.startswith("wildqa") else bench]


@pytest.mark.parametrize("bench, name, extra", BASELINES)
def test_every_baseline_from_python_equals_the_cli_file(files, capsys, bench, name, extra):
    from fastvqa.evaluation import run_baseline

    gt = _gt(files, bench)
    out = files["tmp"] / "cli.json"
    keywords = {"gt": gt}
    seed = []
    if name.startswith("random"):
        keywords["seed"], seed = 3, ["--seed", "3"]
    assert main(["baseline", *bench.split(), name, "--gt", str(gt), "--out", str(out),
                 *seed]) == 0
    assert run_baseline(bench, name, **keywords) == json.loads(out.read_text())


def _write(path, data):
    path.write_text(json.dumps(data))
    return path


def test_nextgqa_evaluate_from_python(files, capsys):
    from fastvqa.evaluation import nextgqa

    gt = files["nextgqa"]
    pred = _write(files["tmp"] / "p.json", {"v1_0": [0, 20], "v1_1": [0, 20], "v2_0": [0, 40]})
    qa = _write(files["tmp"] / "qa.json", {"v1_0": {"prediction": 1, "answer": 1},
                                           "v1_1": {"prediction": 0, "answer": 2},
                                           "v2_0": {"prediction": 0, "answer": 0}})
    result = nextgqa.evaluate(gt=gt, pred=pred, qa=qa, split="test")
    # IoU 1/2, 1/2, 1; answers right, wrong, right; grounded-right (IoP >= .5): q0, q2
    assert result["mIoU"] == pytest.approx(100 * 2 / 3)
    assert result["Acc@QA"] == pytest.approx(100 * 2 / 3)
    assert result["Acc@GQA"] == pytest.approx(100 * 2 / 3)
    _same(result, _cli(capsys, "nextgqa", "--gt", str(gt), "--pred", str(pred), "--qa", str(qa)))
    with pytest.raises(ValueError, match="split: expected one of test, val, got 'train'"):
        nextgqa.evaluate(gt=gt, pred=pred, split="train")
    with pytest.raises(TypeError, match="unexpected keyword argument 'seed'"):
        nextgqa.evaluate(gt=gt, pred=pred, seed=1)


def test_deveqa_evaluate_from_python_both_modes(files, capsys):
    from fastvqa.evaluation import nextgqa

    gt = files["deveqa"]
    pred = _write(files["tmp"] / "p.json", {"v1_a": [0, 20]})  # b has none
    for mode in ("nextgqa", "deveqa-repo"):
        result = nextgqa.evaluate_deveqa(gt=gt, pred=pred, mode=mode)
        # a: IoU 10/20; b: skipped (nextgqa) or zero (deveqa-repo)
        assert result["mIoU"] == pytest.approx(50.0 if mode == "nextgqa" else 25.0)
        _same(result, _cli(capsys, "deveqa", "--gt", str(gt), "--pred", str(pred),
                           "--mode", mode))


def test_wildqa_evaluate_from_python(files, capsys):
    from fastvqa.evaluation import wildqa

    gt = files["wildqa"]
    spans = _write(files["tmp"] / "s.json", [[[0, 10]], [[0, 1]]])
    result = wildqa.evaluate_evidence(gt=gt, pred=spans, mode="clean", threshold=0.5)
    assert result["IoU-F1"] == pytest.approx(50.0)  # one exact match, one miss
    _same(result, _cli(capsys, "wildqa", "evidence", "--gt", str(gt), "--pred", str(spans),
                       "--mode", "clean"))
    answers = _write(files["tmp"] / "a.json", ["Yes", "No"])
    result = wildqa.evaluate_qa(gt=gt, pred=answers, references="primary")
    assert result["ROUGE-1"] == pytest.approx(50.0)  # "Yes" = "Yes"; "No" vs "A tractor."
    _same(result, _cli(capsys, "wildqa", "qa", "--gt", str(gt), "--pred", str(answers)))
    with pytest.raises(ValueError, match="references: expected one of primary, max"):
        wildqa.evaluate_qa(gt=gt, pred=answers, references="all")


def test_sokbench_and_qvhighlights_evaluate_from_python(files, capsys):
    from fastvqa.evaluation import qvhighlights, sokbench

    gt = files["sokbench"]
    pred = _write(files["tmp"] / "p.json", [0, 1])  # answers 0 and 2: one right
    result = sokbench.evaluate(gt=gt, pred=pred)
    assert result["Acc"] == pytest.approx(50.0)
    _same(result, _cli(capsys, "sokbench", "--gt", str(gt), "--pred", str(pred)))

    gt = files["qvhighlights"]
    sub = _write(files["tmp"] / "sub.json", [
        {"qid": 1, "pred_relevant_windows": [[0, 8, 1.0]]},
        {"qid": 2, "pred_relevant_windows": [[0, 20, 1.0]]}])
    result = qvhighlights.evaluate(gt=gt, pred=sub, max_pred_windows=10)
    assert result["R1@0.5"] == pytest.approx(50.0)  # IoU 1, then 0
    _same(result, _cli(capsys, "qvhighlights", "--gt", str(gt), "--pred", str(sub)))


def test_dvd_evaluate_from_python(shared_data, tmp_path, capsys):
    from fastvqa.evaluation import dvd

    gt = shared_data / "dvd" / "CLEVR_new_000002.json"
    pred = _write(tmp_path / "p.json", dvd.answer_prior(gt=gt))
    result = dvd.evaluate(gt=gt, pred=pred)
    assert result["Acc"] == 30.0  # "0" is the answer of 3 of the 10 turns
    _same(result, _cli(capsys, "dvd", "--gt", str(gt), "--pred", str(pred)))


def test_evaluate_by_name_and_unknown_names(files):
    from fastvqa.evaluation import evaluate, qvhighlights, run_baseline

    gt = files["qvhighlights"]
    sub = _write(files["tmp"] / "sub.json", qvhighlights.full_video(gt=gt))
    assert dict(evaluate("qvhighlights", gt=gt, pred=sub)) == \
        dict(qvhighlights.evaluate(gt=gt, pred=sub))
    with pytest.raises(ValueError, match="no benchmark 'nextqa'; known: deveqa, dvd, nextgqa"):
        evaluate("nextqa", gt=gt, pred=sub)
    with pytest.raises(ValueError, match="no baseline 'oracle' for 'nextgqa'"):
        run_baseline("nextgqa", "oracle", gt=gt)


def test_a_missing_benchmark_module_is_an_error(monkeypatch):
    """0.1 skipped a benchmark module that did not exist (work in progress)."""
    import fastvqa.evaluation as ev

    monkeypatch.setattr(ev, "MODULES", (*ev.MODULES, "no_such_benchmark"))
    with pytest.raises(ModuleNotFoundError, match="no_such_benchmark"):
        ev.load_all()


def test_command_error_lives_in_fastvqa_errors_only():
    """Its neutral home: the command modules import it from fastvqa.errors
    (0.1 defined it in fastvqa.evaluation, which retrieval/cli.py imported
    upward); no alias is left behind."""
    import fastvqa.errors
    import fastvqa.evaluation
    from fastvqa._outputs import OutputError

    assert fastvqa.errors.CommandError.__module__ == "fastvqa.errors"
    assert issubclass(fastvqa.errors.CommandError, fastvqa.errors.InputError)
    assert issubclass(OutputError, fastvqa.errors.CommandError)
    assert not hasattr(fastvqa.evaluation, "CommandError")
    assert "CommandError" not in fastvqa.evaluation.__all__
    import fastvqa.demo.cli
    import fastvqa.retrieval.cli
    import fastvqa.video.cli

    for module in (fastvqa.retrieval.cli, fastvqa.video.cli, fastvqa.demo.cli):
        assert module.CommandError is fastvqa.errors.CommandError


def test_every_keyword_of_every_function_is_a_cli_option():
    """The one translation covers everything: each keyword of each evaluate,
    plot, check and baseline function is an option of its command (none is
    left at its library default by the command line), and each function
    takes keywords only."""
    import inspect

    from fastvqa.cli import build_parser
    from fastvqa.evaluation import BASELINES, BENCHMARKS

    parser = build_parser()
    for name, bench in BENCHMARKS.items():
        args = parser.parse_args(["eval", *name.split(), "--gt", "g", "--pred", "p"])
        for fn in filter(None, (bench.evaluate, bench.plot, bench.check)):
            params = inspect.signature(fn).parameters.values()
            keyword = {p.name for p in params if p.kind is p.KEYWORD_ONLY}
            assert keyword <= set(vars(args)), (name, fn.__name__, keyword - set(vars(args)))
            if fn is not bench.plot:  # plot(result, path, **options)
                assert all(p.kind is p.KEYWORD_ONLY for p in params), (name, fn.__name__)
        assert set(bench.inputs) <= set(vars(args))
    for (bench, name), baseline in BASELINES.items():
        args = parser.parse_args(["baseline", *bench.split(), name, "--gt", "g", "--out", "o",
                                  *(["--train", "t"] if name == "q-retrieval" else [])])
        params = inspect.signature(baseline.run).parameters.values()
        assert all(p.kind is p.KEYWORD_ONLY for p in params), (bench, name)
        assert {p.name for p in params} <= set(vars(args)), (bench, name)
