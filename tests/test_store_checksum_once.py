# SPDX-License-Identifier: Apache-2.0
"""A feature store checks each file's data checksum once per file as it is
on disk: an epoch-long training run reads each file many times, and a file
changed on disk (a new identity) is checked again."""

from __future__ import annotations

import os

import numpy as np
import pytest

pytest.importorskip("safetensors")

from fastvqa.extract.store import DamagedFileError, FeatureStore, data_sha256  # noqa: E402

HEAD = {"recipe": {"name": "t", "input": "frames"}, "recipe_hash": "0" * 16, "model": "m",
        "model_sha256": None, "weights": "random"}
REC = {"recipe": "t", "recipe_hash": "0" * 16, "model": "m"}


def _store(tmp_path):
    store = FeatureStore.create(tmp_path / "s", HEAD)
    store.write("v", np.arange(6, dtype=np.float32).reshape(3, 2), np.arange(3.0),
                np.arange(1.0, 4.0), REC)
    return store


def test_checksum_is_computed_once_per_file_identity(tmp_path, monkeypatch):
    store = _store(tmp_path)
    calls = []
    import fastvqa.extract.store as S

    monkeypatch.setattr(S, "data_sha256", lambda *a: calls.append(1) or data_sha256(*a))
    for _ in range(3):
        assert store.load("v").features.tolist() == [[0, 1], [2, 3], [4, 5]]
    assert len(calls) == 1


def test_a_file_changed_after_a_good_read_is_caught(tmp_path):
    store = _store(tmp_path)
    store.load("v")
    path = store.features_path("v")
    blob = bytearray(path.read_bytes())
    at = blob.rindex(np.float32(5).tobytes())          # the last feature value
    blob[at:at + 4] = np.float32(7).tobytes()
    os.replace(_write(tmp_path / "x", bytes(blob)), path)   # a new file (new identity)
    with pytest.raises(DamagedFileError, match="checksum"):
        store.load("v")
    # and a fresh store object checks on its first read too
    with pytest.raises(DamagedFileError, match="checksum"):
        FeatureStore(tmp_path / "s").load("v")


def _write(path, data):
    path.write_bytes(data)
    return path


def test_store_dataset_keeps_items_in_memory_within_its_budget(tmp_path, monkeypatch):
    import pickle

    torch = pytest.importorskip("torch")
    from fastvqa.extract.dataset import StoreDataset

    store = _store(tmp_path)
    reads = []
    real = FeatureStore.load
    monkeypatch.setattr(FeatureStore, "load", lambda self, v: reads.append(v) or real(self, v))
    data = StoreDataset(store)
    first, again = data[0], data[0]
    assert len(reads) == 1 and torch.equal(first["features"], again["features"])
    again["features"] = None                 # a caller's dict is its own
    assert data[0]["features"] is not None
    assert pickle.loads(pickle.dumps(data))._cache == {}     # a worker starts empty
    none = StoreDataset(store, cache_bytes=0)
    none[0], none[0]
    assert len(reads) == 3
