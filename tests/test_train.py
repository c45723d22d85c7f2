# SPDX-License-Identifier: Apache-2.0
"""``fastvqa train`` end to end on the demo's synthetic benchmark (issue 34):
videos -> a video store (``fastvqa demo --store``) and a question store
(``fastvqa extract --text-recipe``, the random-init ``fastvqa:tiny-text``)
-> a Moment-DETR-style model trained and scored each epoch with the exact
moment-retrieval metrics; exact resume after a kill; two ``torchrun``
processes against one.

Expected values are independent of the code under test: the metrics of a
reloaded model recomputed with the one-shot ``fastvqa.metrics`` function, the
weights of an uninterrupted run, a query-blind model's score."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("av")
pytest.importorskip("safetensors")
pytest.importorskip("scipy")
pytest.importorskip("sklearn")      # the demo's distractor mining
pytest.importorskip("matplotlib")   # the demo's report

from fastvqa.cli import main  # noqa: E402
from fastvqa.errors import InputError  # noqa: E402
from fastvqa.train import config_from_dict, fit, load_model  # noqa: E402
from fastvqa.train.loop import evaluate  # noqa: E402

TINY = {"name": "moment_detr", "hidden": 32, "heads": 2, "ffn": 64, "enc_layers": 1,
        "dec_layers": 1, "num_queries": 5, "dropout": 0.0}


@pytest.fixture(scope="module")
def bench(tmp_path_factory):
    """32 demo videos of 10 s; their questions split by video 24 / 8."""
    root = tmp_path_factory.mktemp("train")
    demo = root / "demo"
    assert main(["demo", "--videos", "32", "--duration", "10", "--out", str(demo), "--store",
                 "--no-progress"]) == 0
    assert main(["extract", "qvhighlights", "--text-recipe", "question-clip", "--gt",
                 str(demo / "moments.jsonl"), "--model", "fastvqa:tiny-text", "--pair-with",
                 str(demo / "features"), "--out", str(root / "questions"),
                 "--no-progress"]) == 0
    lines = (demo / "moments.jsonl").read_text().splitlines()
    train = [x for x in lines if int(json.loads(x)["vid"][5:]) < 24]
    val = [x for x in lines if int(json.loads(x)["vid"][5:]) >= 24]
    (root / "train.jsonl").write_text("\n".join(train) + "\n")
    (root / "val.jsonl").write_text("\n".join(val) + "\n")
    return root


def _config(bench, out, **changes):
    d = {"benchmark": "qvhighlights", "out": str(out), "seed": 0,
         "data": {"train": str(bench / "train.jsonl"), "val": str(bench / "val.jsonl"),
                  "video_store": str(bench / "demo" / "features"),
                  "query_store": str(bench / "questions")},
         "model": dict(TINY), "optim": {"epochs": 3, "batch_size": 8, "lr": 1e-3,
                                        "warmup": 0.1}}
    for key, value in changes.items():
        d[key] = {**d[key], **value} if isinstance(value, dict) and key != "model" else value
    return config_from_dict(d)


def _weights(folder: Path) -> dict:
    from safetensors.torch import load_file

    return load_file(str(folder / "best.safetensors"))


def _last(folder: Path) -> dict:
    return torch.load(folder / "last.pt", weights_only=True)


def _same_state(a: dict, b: dict) -> None:
    assert a.keys() == b.keys()
    for k in a:
        assert torch.equal(a[k], b[k]), k


def _strip_time(history):
    return [{k: v for k, v in line.items() if k != "seconds"} for line in history]


def test_fit_writes_the_run_and_scores_exactly(bench, tmp_path):
    result = fit(_config(bench, tmp_path / "run"), progress=False)
    run = json.loads((tmp_path / "run" / "run.json").read_text())
    assert run["config_hash"] == _config(bench, "x").hash()
    assert set(run["features"]) == {"video", "query"} and all(
        len(h) == 64 for h in run["features"].values())
    log = [json.loads(x) for x in (tmp_path / "run" / "log.jsonl").read_text().splitlines()]
    assert [x["epoch"] for x in log] == [1, 2, 3] and all("R1@0.5" in x["metrics"] for x in log)
    assert result.best_epoch == max(range(1, 4), key=lambda e: (log[e - 1]["metrics"]["R1@0.5"],
                                                                -e))
    # the saved best model, reloaded, scores what the log says, and the
    # one-shot metric on its decoded windows agrees
    model = load_model(tmp_path / "run")
    from fastvqa.train.data import make_dataset
    from fastvqa.metrics import moment_retrieval

    cfg = _config(bench, tmp_path / "run")
    val = make_dataset(cfg, cfg.data.val, "val")
    scores = evaluate(model, val, "qvhighlights")
    logged = log[result.best_epoch - 1]["metrics"]
    assert scores.keys() == logged.keys()
    for k, v in scores.items():   # undefined metrics are NaN here, null in the log
        assert (logged[k] is None and np.isnan(v)) or v == logged[k], k
    batch = type(val).collate([val[i] for i in range(len(val))])
    with torch.no_grad():
        out = model(batch["features"], batch["mask"], batch["query"], batch["query_mask"])
        decoded = model.decode(out, batch["duration"], mask=batch["mask"])
    preds = {r.question_id: np.concatenate([d.spans.numpy(), d.scores.numpy()[:, None]],
                                           axis=1)[:10].tolist()
             for r, d in zip(batch["records"], decoded)}
    gold = {r.question_id: r.spans.tolist() for r in batch["records"]}
    assert moment_retrieval(preds, gold)["R1@0.5"] == pytest.approx(scores["R1@0.5"], abs=1e-9)


def test_a_run_killed_mid_epoch_resumes_to_the_same_weights(bench, tmp_path):
    whole = fit(_config(bench, tmp_path / "whole"), progress=False)
    per_epoch = whole.history[0]["step"]

    class Killed(Exception):
        pass

    def kill(step):
        if step == per_epoch + 3:      # inside epoch 2
            raise Killed

    with pytest.raises(Killed):
        fit(_config(bench, tmp_path / "cut"), progress=False, on_step=kill)
    assert _last(tmp_path / "cut")["epoch"] == 1     # epoch 2 left nothing behind
    resumed = fit(_config(bench, tmp_path / "cut"), progress=False)
    _same_state(_last(tmp_path / "whole")["model"], _last(tmp_path / "cut")["model"])
    _same_state(_weights(tmp_path / "whole"), _weights(tmp_path / "cut"))
    assert _strip_time(resumed.history) == _strip_time(whole.history)


def test_cli_run_killed_by_a_signal_resumes(bench, tmp_path):
    cfg = _config(bench, tmp_path / "sig")
    path = tmp_path / "c.json"
    path.write_text(json.dumps(cfg.to_dict()))
    cmd = [sys.executable, "-c", "from fastvqa.cli import main; main()", "train", str(path),
           "--no-progress"]
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    with open(tmp_path / "stderr.txt", "wb") as err, \
            subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=err) as proc:
        deadline = time.monotonic() + 120
        while not (tmp_path / "sig" / "last.pt").exists():   # epoch 1 is done
            assert proc.poll() is None and time.monotonic() < deadline, \
                (tmp_path / "stderr.txt").read_text()
            time.sleep(0.05)
        proc.send_signal(signal.SIGKILL)
    assert proc.returncode == -signal.SIGKILL
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    # the same command never killed, in the same kind of process (threads
    # change float sums, so the reference runs as the killed one did)
    ref = subprocess.run(cmd + ["--out", str(tmp_path / "ref")], env=env, capture_output=True,
                         text=True, timeout=300)
    assert ref.returncode == 0, ref.stderr
    _same_state(_last(tmp_path / "ref")["model"], _last(tmp_path / "sig")["model"])
    _same_state(_weights(tmp_path / "ref"), _weights(tmp_path / "sig"))


def test_another_run_or_a_foreign_folder_is_refused(bench, tmp_path):
    fit(_config(bench, tmp_path / "r", optim={"epochs": 1}), progress=False)
    with pytest.raises(InputError, match="another training run"):
        fit(_config(bench, tmp_path / "r", seed=1), progress=False)
    (tmp_path / "f").mkdir()
    (tmp_path / "f" / "notes.txt").write_text("mine")
    with pytest.raises(InputError, match="not a fastvqa training run"):
        fit(_config(bench, tmp_path / "f"), progress=False)
    assert (tmp_path / "f" / "notes.txt").read_text() == "mine"
    # more epochs continue the same run
    more = fit(_config(bench, tmp_path / "r", optim={"epochs": 2}), progress=False)
    assert [x["epoch"] for x in more.history] == [1, 2]


def test_the_model_learns_to_ground_the_questions(bench, tmp_path):
    # a short version of docs/training.md's run (about 15 CPU seconds): the
    # model grounds the questions, well above itself shown no question (every
    # question's tokens replaced by zeros). Measured on this machine: R1@0.5
    # 72.6 against 39.3 blind (seed 0).
    model_config = {"name": "moment_detr", "hidden": 64, "heads": 4, "ffn": 128,
                    "num_queries": 5, "dropout": 0.0}
    cfg = _config(bench, tmp_path / "learn", model=model_config,
                  optim={"epochs": 25, "batch_size": 16, "warmup": 0.05})
    result = fit(cfg, progress=False)
    assert result.best_metrics["R1@0.5"] >= 60.0, result.best_metrics
    from fastvqa.train.data import make_dataset

    model = load_model(tmp_path / "learn")
    val = make_dataset(cfg, cfg.data.val, "val")
    blind = evaluate(model, _Blind(val), "qvhighlights")["R1@0.5"]
    assert blind <= result.best_metrics["R1@0.5"] - 15.0, (blind, result.best_metrics)


class _Blind(torch.utils.data.Dataset):
    """A dataset whose questions are all zeros: what the model does without
    reading the question."""

    def __init__(self, inner):
        self.inner = inner

    def __len__(self):
        return len(self.inner)

    def __getitem__(self, i):
        item = dict(self.inner[i])
        item["query"] = torch.zeros_like(item["query"])
        return item

    @staticmethod
    def collate(items):
        from fastvqa.extract.dataset import StoreDataset

        return StoreDataset.collate(items)


@pytest.mark.skipif(not torch.distributed.is_available(), reason="needs torch.distributed")
def test_two_torchrun_processes_equal_one(bench, tmp_path):
    # One process with batches of 8 against two (gloo) with 4 each: the same
    # global batches, the loss's divisors summed over the ranks, so the
    # averaged gradients are one process's up to float rounding (which Adam
    # amplifies a little over an epoch).
    env = {**os.environ, "OMP_NUM_THREADS": "1"}   # what torchrun gives each process
    runs = {}
    for name, batch, launch in (
            ("one", 8, [sys.executable, "-c", "from fastvqa.cli import main; main()"]),
            ("two", 4, [sys.executable, "-m", "torch.distributed.run", "--standalone",
                        "--nproc_per_node", "2", "-m", "fastvqa"])):
        cfg = _config(bench, tmp_path / name, optim={"epochs": 1, "batch_size": batch})
        path = tmp_path / f"{name}.json"
        path.write_text(json.dumps(cfg.to_dict()))
        done = subprocess.run(launch + ["train", str(path), "--no-progress"], env=env,
                              capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, done.stderr[-3000:]
        runs[name] = [json.loads(x) for x in
                      (tmp_path / name / "log.jsonl").read_text().splitlines()][0]
    assert json.loads((tmp_path / "two" / "run.json").read_text())["world_size"] == 2
    one, two = runs["one"], runs["two"]
    assert one["step"] == two["step"]
    assert one["loss"]["total"] == pytest.approx(two["loss"]["total"], rel=1e-2)
    n_val = len((bench / "val.jsonl").read_text().splitlines())
    for k, v in one["metrics"].items():   # within one query of each other
        assert v is None and two["metrics"][k] is None or \
            abs(v - two["metrics"][k]) <= 100.0 / n_val + 1e-9, (k, one, two)
    w1, w2 = _last(tmp_path / "one")["model"], _last(tmp_path / "two")["model"]
    for k in w1:
        assert torch.allclose(w1[k], w2[k], atol=2e-3), k
    # the two processes' metrics (each rank scored half the batches, joined
    # by Metric.sync) are exactly one process's on the same weights
    from fastvqa.train.data import make_dataset

    cfg = _config(bench, tmp_path / "two", optim={"batch_size": 4})
    alone = evaluate(load_model(tmp_path / "two"), make_dataset(cfg, cfg.data.val, "val"),
                     "qvhighlights", batch_size=4)
    for k, v in alone.items():
        assert (two["metrics"][k] is None and np.isnan(v)) or v == two["metrics"][k], k
