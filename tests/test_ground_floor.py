# SPDX-License-Identifier: Apache-2.0
"""The shared pieces low in the house, each read in one place: the device
vocabulary (fastvqa._device) as retrieval, the encoders and extraction use
it, ``--shard i/n`` (fastvqa._shards) and input digests (fastvqa._digests).
The parser's own cases are in tests/video/test_device.py."""

from __future__ import annotations

import argparse
import doctest
import hashlib

import pytest

import fastvqa._device as device_module
import fastvqa._shards as shards_module
from fastvqa._device import Device, parse_device
from fastvqa.errors import InputError, InputTypeError


@pytest.mark.parametrize("module", [device_module, shards_module])
def test_module_examples_run(module):
    result = doctest.testmod(module)
    assert result.attempted > 0 and result.failed == 0


def test_auto_is_none_and_the_errors_are_input_errors():
    assert parse_device("auto") is None
    assert parse_device(Device("cuda", 2)).ordinal == 2 and Device("cuda").ordinal == 0
    with pytest.raises(InputError, match=r"device 'gpu' is not a device fastvqa understands "
                                         r"\(for the GPU say 'cuda'\)"):
        parse_device("gpu")
    with pytest.raises(InputTypeError):
        parse_device(3)


def test_the_video_module_names_are_the_shared_ones():
    from fastvqa.video import device as video_device

    assert video_device.parse_device is parse_device and video_device.Device is Device


def test_retrieval_index_reads_the_one_vocabulary():
    pytest.importorskip("faiss")
    torch = pytest.importorskip("torch")
    from fastvqa.retrieval import Index

    assert Index(device="cpu").device == "cpu"
    assert Index(device=torch.device("cpu")).device == "cpu"
    assert Index(device=None).device in ("cpu", "cuda")
    with pytest.raises(InputError, match="device 'gpu'"):
        Index(device="gpu")
    import faiss

    if faiss.get_num_gpus() < 4:
        with pytest.raises(RuntimeError, match=r"Index\(device='cuda:3'\): FAISS reports"):
            Index(device="cuda:3")


def test_sentence_encoder_checks_its_device_when_made():
    from fastvqa.retrieval.encoders import SentenceEncoder

    assert SentenceEncoder(device="cuda:1").device == "cuda:1"
    assert SentenceEncoder().device is None
    with pytest.raises(InputError, match="device 'gpu'"):
        SentenceEncoder(device="gpu")


def test_extract_with_ray_refuses_a_gpu_index_before_any_work(tmp_path):
    from fastvqa.extract import run

    (tmp_path / "v.mp4").write_bytes(b"not read")
    with pytest.raises(InputError, match=r"device 'cuda:1': --engine ray assigns one GPU"):
        run(tmp_path, "wildqa-i3d", out=tmp_path / "store", engine="ray", device="cuda:1",
            progress=False)
    assert not (tmp_path / "store").exists()


def test_shard_argument_is_argparse_shaped():
    assert shards_module.shard_argument("0/2") == (0, 2)
    with pytest.raises(argparse.ArgumentTypeError, match="need 0 <= i < n"):
        shards_module.shard_argument("2/2")


def test_digests_are_the_files_sha256(tmp_path):
    from fastvqa import evaluation
    from fastvqa._digests import input_digests, sha256_file

    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "b.txt").write_bytes(b"two")
    (tmp_path / "a.txt").write_bytes(b"one")
    assert sha256_file(tmp_path / "a.txt") == hashlib.sha256(b"one").hexdigest()
    assert input_digests({"gt": tmp_path / "a.txt", "pred": None, "dir": tmp_path / "d"}) == {
        "gt": {"path": str(tmp_path / "a.txt"), "sha256": hashlib.sha256(b"one").hexdigest()},
        "dir": {"path": str(tmp_path / "d"),
                "files": {"b.txt": hashlib.sha256(b"two").hexdigest()}}}
    assert evaluation.sha256_file is sha256_file
