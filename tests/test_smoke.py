# SPDX-License-Identifier: Apache-2.0
import subprocess
import sys

import fastvqa


def test_build_info_keys():
    info = fastvqa.build_info()
    assert info["version"] == fastvqa.__version__
    for key in ("cuda", "cuda_version", "cuda_archs", "openmp", "compiler"):
        assert key in info
    if info["cuda"]:
        assert info["cuda_version"] and info["cuda_archs"]
    else:
        assert info["cuda_version"] is None and info["cuda_archs"] == []


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
