# SPDX-License-Identifier: Apache-2.0
"""One device vocabulary for fastvqa.video, and ``backend="auto"`` that costs nothing without a GPU."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

import fastvqa

from fastvqa.video.device import Device, gpu_visible, parse_device

ROOT = Path(__file__).resolve().parents[2]
# The folder holding the fastvqa under test (source tree, or site-packages in CI).
PACKAGE_ROOT = Path(fastvqa.__file__).resolve().parents[1]


@pytest.mark.parametrize("value, expected", [
    (None, None), ("cpu", Device("cpu")), ("cuda", Device("cuda")),
    ("cuda:0", Device("cuda", 0)), ("cuda:3", Device("cuda", 3)),
])
def test_parse_device_accepts_the_vocabulary(value, expected):
    assert parse_device(value) == expected


def test_parse_device_accepts_torch_devices():
    torch = pytest.importorskip("torch")
    assert parse_device(torch.device("cpu")) == Device("cpu")
    assert parse_device(torch.device("cuda")) == Device("cuda")
    assert parse_device(torch.device("cuda", 2)) == Device("cuda", 2)
    with pytest.raises(ValueError, match="not supported here"):
        parse_device(torch.device("meta"))


@pytest.mark.parametrize("value", ["gpu", "GPU", "CUDA", "cuda:", "cuda:x", "cuda:-1", "cuda:0:1",
                                   " cuda", "mps", "cpu:0", ""])
def test_parse_device_rejects_what_it_does_not_mean(value):
    with pytest.raises(ValueError) as err:
        parse_device(value)
    message = str(err.value)
    assert repr(value) in message and "'cuda:K'" in message and "\n" not in message


@pytest.mark.parametrize("value", [0, 1.0, b"cuda", ["cuda"]])
def test_parse_device_rejects_other_types(value):
    with pytest.raises(TypeError, match="device must be"):
        parse_device(value)


def test_dali_device_uses_the_one_parser():
    from fastvqa.video.dali_backend import dali_device

    assert dali_device(None) == ("gpu", 0)
    assert dali_device("cuda") == ("gpu", 0)
    assert dali_device("cuda:2") == ("gpu", 2)
    assert dali_device("cuda", 1) == ("gpu", 1)
    assert dali_device("cpu") == ("cpu", 0)
    # "gpu" used to select DALI's CPU decoder silently.
    with pytest.raises(ValueError, match=r"device 'gpu'.*'cuda'"):
        dali_device("gpu")
    with pytest.raises(ValueError, match="disagree"):
        dali_device("cuda:1", 0)


def test_read_frames_rejects_an_unknown_device_before_decoding(h264_video):
    pytest.importorskip("av")
    from fastvqa.video import Uniform, read_batch, read_frames

    for backend in ("auto", "pyav", "dali"):
        with pytest.raises(ValueError, match=r"device 'gpu'"):
            read_frames(h264_video.path, Uniform(2), backend=backend, device="gpu")
        with pytest.raises(ValueError, match=r"device 'cuda:x'"):
            read_batch([h264_video.path], Uniform(2), backend=backend, device="cuda:x")
    out = read_frames(h264_video.path, Uniform(2), backend="pyav", device="cpu")
    assert isinstance(out.data, np.ndarray)


def test_gpu_visible_honours_cuda_visible_devices(monkeypatch):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")
    assert gpu_visible() is False
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "-1")
    assert gpu_visible() is False


def test_auto_backend_imports_neither_dali_nor_torch_without_a_gpu(tmp_path, h264_video):
    """``backend="auto"`` used to import torch (and DALI) to ask for a GPU: 5-8 s a process."""
    if gpu_visible():
        pytest.skip("a GPU is visible here: auto may rightly load DALI")
    # A stand-in nvidia.dali that is importable (so auto has a reason to look)
    # and records being imported.
    stub = tmp_path / "stub" / "nvidia" / "dali"
    stub.mkdir(parents=True)
    (stub / "__init__.py").write_text("import os\nopen(os.environ['DALI_MARK'], 'w').close()\n")
    mark = tmp_path / "dali-imported"
    script = textwrap.dedent(f"""
        import sys
        from fastvqa.video import Uniform, read_frames, resolve_backend
        assert resolve_backend("auto") == "pyav", resolve_backend("auto")
        assert resolve_backend("auto", "cuda") == "pyav"
        out = read_frames({str(h264_video.path)!r}, Uniform(2))
        assert out.data.shape[0] == 2
        print(sorted(m for m in sys.modules if m == "torch" or m.startswith("nvidia")))
    """)
    env = {**os.environ, "DALI_MARK": str(mark),
           "PYTHONPATH": os.pathsep.join([str(tmp_path / "stub"), str(PACKAGE_ROOT), str(ROOT)])}
    env.pop("CUDA_VISIBLE_DEVICES", None)
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "[]", proc.stdout
    assert not mark.exists()
