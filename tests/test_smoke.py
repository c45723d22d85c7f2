# SPDX-License-Identifier: Apache-2.0
import importlib.metadata
import subprocess
import sys

import fastvqa

# Oldest NVIDIA Linux driver per CUDA major, from NVIDIA's CUDA compatibility
# guide (minor version compatibility: 12.x needs >= 525, 13.x >= 580) and the
# toolkit release notes (the driver of each major's first release).
NVIDIA_MIN_DRIVER = {12: "525.60.13", 13: "580.65.06"}


def test_build_info_keys():
    info = fastvqa.build_info()
    assert info["version"] == fastvqa.__version__
    for key in ("cuda", "cuda_version", "cuda_archs", "threads", "compiler"):
        assert key in info
    if info["cuda"]:
        assert info["cuda_version"] and info["cuda_archs"]
    else:
        assert info["cuda_version"] is None and info["cuda_archs"] == []


def test_build_info_cuda_major_and_driver():
    info = fastvqa.build_info()
    if not info["cuda"]:
        assert info["cuda_major"] is None and info["cuda_min_driver"] is None
        return
    major = int(info["cuda_version"].split(".")[0])
    assert info["cuda_major"] == major
    assert info["cuda_min_driver"] == NVIDIA_MIN_DRIVER[major]


def test_build_info_names_the_installed_distribution():
    info = fastvqa.build_info()
    dist = info["distribution"]
    # A source build is "fastvqa" with or without CUDA; a CUDA wheel names its major.
    assert dist == "fastvqa" or (info["cuda"] and dist == f"fastvqa-cu{info['cuda_major']}")
    meta = importlib.metadata.metadata(dist)
    assert meta["Version"] == info["version"]
    if dist != "fastvqa":
        assert f"Environment :: GPU :: NVIDIA CUDA :: {info['cuda_major']}" in meta.get_all("Classifier")
        assert f"driver >= {info['cuda_min_driver']}" in meta["Summary"]


def test_import_does_not_pull_heavy_backends():
    code = (
        "import sys, fastvqa; "
        "heavy = [m for m in ('torch', 'nvidia.dali', 'faiss', 'av') if m in sys.modules]; "
        "print(','.join(heavy))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""


def test_cli_info_runs():
    out = subprocess.run(
        [sys.executable, "-m", "fastvqa.cli", "info"], capture_output=True, text=True, check=True
    )
    assert "fastvqa" in out.stdout and fastvqa.__version__ in out.stdout
    assert "cuda kernels" in out.stdout
    info = fastvqa.build_info()
    assert f"({info['distribution']})" in out.stdout
    if info["cuda"]:
        assert f"needs driver >= {info['cuda_min_driver']}" in out.stdout


def test_cli_info_flags_a_driver_older_than_the_build(monkeypatch, capsys):
    """A CUDA 13 build on a driver that supports only CUDA 12.8: the driver's
    major is below the build's, so info names the minimum driver."""
    from fastvqa import cli

    cuda13 = dict(fastvqa.build_info(), cuda=True, cuda_version="13.0.88", cuda_major=13,
                  cuda_min_driver=NVIDIA_MIN_DRIVER[13], cuda_archs=["90-real"], cuda_runtime="static",
                  distribution="fastvqa-cu13")
    monkeypatch.setattr(fastvqa, "build_info", lambda: cuda13)
    monkeypatch.setattr(cli, "_gpu_report",
                        lambda info: {"visible_to_fastvqa": 0, "driver_version": "12.8", "nvidia_smi": None})
    assert cli.main(["info"]) == 0
    gpu = [ln.split(None, 1)[1] for ln in capsys.readouterr().out.splitlines() if ln.startswith("gpu ")]
    assert gpu == ["none visible (CPU path only), driver 12.8 (too old: this CUDA 13 build needs >= 580.65.06)"]
    # The same build on a 13.x driver carries no warning.
    monkeypatch.setattr(cli, "_gpu_report",
                        lambda info: {"visible_to_fastvqa": 1, "driver_version": "13.0", "nvidia_smi": None})
    assert cli.main(["info"]) == 0
    assert "too old" not in capsys.readouterr().out
