# SPDX-License-Identifier: Apache-2.0
"""fastvqa.train's config and batch order (issue 34). Expected values by
hand."""

from __future__ import annotations

import json

import pytest

from fastvqa.errors import InputError
from fastvqa.train.config import config_from_dict, load_config

pytest.importorskip("torch")

from fastvqa.train.data import GlobalBatchSampler  # noqa: E402

BASE = {"benchmark": "deveqa", "out": "runs/x",
        "data": {"train": "a.json", "video_store": "v", "query_store": "q"}}


def test_config_defaults_and_hash_ignore_where_it_runs(tmp_path):
    c = config_from_dict(BASE)
    assert c.optim.epochs == 20 and c.optim.batch_size == 16 and c.model == {"name": "moment_detr"}
    moved = config_from_dict({**BASE, "out": "elsewhere", "device": "cuda",
                              "optim": {"epochs": 99}, "data": {**BASE["data"], "workers": 4}})
    assert moved.hash() == c.hash()       # where and how long: the same run
    other = config_from_dict({**BASE, "seed": 1})
    assert other.hash() != c.hash()
    p = tmp_path / "c.json"
    p.write_text(json.dumps({**BASE, "optim": {"lr": 3e-4, "warmup": 0.2}}))
    assert load_config(p).optim.lr == 3e-4
    t = tmp_path / "c.toml"
    t.write_text('benchmark = "deveqa"\nout = "r"\n[data]\ntrain = "a"\nvideo_store = "v"\n'
                 'query_store = "q"\n[optim]\nepochs = 3\n')
    assert load_config(t).optim.epochs == 3


@pytest.mark.parametrize("change, words", [
    ({"benchmark": "nope"}, "benchmark"),
    ({"optim": {"epochs": 0}}, "optim.epochs"),
    ({"optim": {"lr": "fast"}}, "optim.lr"),
    ({"optim": {"warmup": 1.5}}, "optim.warmup"),
    ({"optim": {"amp": "fp8"}}, "optim.amp"),
    ({"optim": {"batch": 3}}, "unknown setting(s) batch"),
    ({"colour": 1}, "unknown setting(s) colour"),
    ({"data": {"train": "a"}}, "missing video_store"),
    ({"device": "gpu"}, "device"),
    ({"model": {"hidden": 3}}, "model"),
])
def test_bad_settings_are_named(change, words):
    with pytest.raises(InputError) as err:
        config_from_dict({**BASE, **change})
    assert words in str(err.value) and "\n" not in str(err.value)


def test_batch_order_by_hand():
    # epoch order from (seed, epoch); global batches of world * batch_size
    s = GlobalBatchSampler(6, 2, seed=3)
    s.set_epoch(0)
    first = list(s)
    s.set_epoch(1)
    second = list(s)
    assert sorted(sum(first, [])) == list(range(6)) and first != second
    s.set_epoch(0)
    assert list(s) == first                       # a resumed epoch repeats its order
    # two processes of batch 1 share exactly one process's batches of 2
    one = GlobalBatchSampler(6, 2, seed=3)
    halves = [GlobalBatchSampler(6, 1, world=2, rank=r, seed=3) for r in (0, 1)]
    for b, r0, r1 in zip(one, *halves):
        assert b == r0 + r1
    assert [list(GlobalBatchSampler(5, 2, world=2, rank=r, shuffle=False)) for r in (0, 1)] == \
        [[[0, 1], [4]], [[2, 3], [0]]]
