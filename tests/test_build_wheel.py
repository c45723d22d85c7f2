# SPDX-License-Identifier: Apache-2.0
"""scripts/build_wheel.py: the per-CUDA wheel variants are staged correctly
and the checkout is never touched. Building a wheel is too slow for the test
suite; .ci/run builds and installs one (docs/packaging.md)."""

from __future__ import annotations

import hashlib
import importlib.util
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

tomllib = pytest.importorskip("tomllib", reason="scripts/build_wheel.py needs Python >= 3.11")

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "scripts" / "build_wheel.py"
if not SCRIPT.exists():  # tests copied without the scripts (cibuildwheel's test step)
    pytest.skip("scripts/build_wheel.py is not beside these tests", allow_module_level=True)

# What each variant must ask for, from the packaging plan (issue 7 and
# docs/packaging.md), written out here rather than read from the script.
EXPECTED = {
    "12": {"name": "fastvqa-cu12", "dali": "nvidia-dali-cuda120", "faiss": "faiss-gpu>=1.10",
           "driver": "525.60.13", "image": "quay.io/manylinux_cuda/manylinux_2_28_x86_64_cuda12_9:latest"},
    "13": {"name": "fastvqa-cu13", "dali": "nvidia-dali-cuda130", "faiss": "faiss-gpu-cuvs>=1.15",
           "driver": "580.65.06", "image": "quay.io/manylinux_cuda/manylinux_2_28_x86_64_cuda13_1:latest"},
}


@pytest.fixture(scope="module")
def build_wheel():
    spec = importlib.util.spec_from_file_location("_fastvqa_build_wheel_script", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while the file runs
    try:
        spec.loader.exec_module(module)
        yield module
    finally:
        del sys.modules[spec.name]


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.mark.parametrize("cuda", ["12", "13"])
def test_cuda_variant_is_staged_with_its_name_extras_and_cmake_settings(build_wheel, tmp_path, cuda):
    want = EXPECTED[cuda]
    before = _digest(ROOT / "pyproject.toml")
    staged = build_wheel.stage(build_wheel.VARIANTS[cuda], tmp_path / "src")
    assert _digest(ROOT / "pyproject.toml") == before  # the checkout is untouched

    data = tomllib.loads((staged / "pyproject.toml").read_text())
    project = data["project"]
    assert project["name"] == want["name"]
    assert f"Environment :: GPU :: NVIDIA CUDA :: {cuda}" in project["classifiers"]
    assert f"CUDA {cuda} build (NVIDIA driver >= {want['driver']}" in project["description"]
    extras = project["optional-dependencies"]
    assert extras["dali"] == [want["dali"]]
    assert extras["faiss"] == [want["faiss"], "scikit-learn>=1.3"]
    assert "faiss-gpu" not in extras
    dali_in_test = [r for r in extras["test"] if r.startswith("nvidia-dali")]
    assert dali_in_test == [f"{want['dali']}>=2.4; platform_system == 'Linux'"]
    define = data["tool"]["scikit-build"]["cmake"]["define"]
    assert define["FASTVQA_ENABLE_CUDA"] == "ON"
    assert define["FASTVQA_EXPECT_CUDA_MAJOR"] == cuda
    assert define["FASTVQA_CUDA_ARCHS"] == {"env": "FASTVQA_CUDA_ARCHS", "default": "release"}
    assert data["tool"]["cibuildwheel"]["linux"]["manylinux-x86_64-image"] == want["image"]
    # Everything else is the checkout's own source, byte for byte.
    for rel in ("CMakeLists.txt", "README.md", "python/fastvqa/__init__.py",
                "csrc/fastvqa/bindings/build_info.cpp"):
        assert _digest(staged / rel) == _digest(ROOT / rel), rel
    assert not (staged / "build").exists() and not (staged / ".venv").exists()


def test_cpu_variant_only_turns_cuda_off(build_wheel, tmp_path):
    staged = build_wheel.stage(build_wheel.VARIANTS["none"], tmp_path / "src")
    old = (ROOT / "pyproject.toml").read_text().splitlines()
    new = (staged / "pyproject.toml").read_text().splitlines()
    changed = [(a, b) for a, b in zip(old, new) if a != b]
    assert len(old) == len(new)
    assert changed == [('FASTVQA_ENABLE_CUDA = { env = "FASTVQA_ENABLE_CUDA", default = "AUTO" }',
                        'FASTVQA_ENABLE_CUDA = "OFF"')]


def test_stage_refuses_an_existing_folder(build_wheel, tmp_path):
    (tmp_path / "src").mkdir()
    with pytest.raises(build_wheel.BuildError, match="exists"):
        build_wheel.stage(build_wheel.VARIANTS["13"], tmp_path / "src")


def test_a_reworded_pyproject_fails_instead_of_half_renaming(build_wheel):
    text = (ROOT / "pyproject.toml").read_text().replace('\ndali = ["', '\ndali-x = ["')
    with pytest.raises(build_wheel.BuildError, match="dali"):
        build_wheel.variant_pyproject(text, build_wheel.VARIANTS["12"])


def test_cli_stage_only_prints_the_folder_and_refuses_bad_variants(tmp_path):
    out = subprocess.run([sys.executable, str(SCRIPT), "--cuda", "13", "--stage-only", str(tmp_path / "s")],
                         capture_output=True, text=True, check=True)
    assert out.stdout.strip().splitlines()[-1] == str(tmp_path / "s")
    bad = subprocess.run([sys.executable, str(SCRIPT), "--cuda", "11", "--stage-only", str(tmp_path / "t")],
                         capture_output=True, text=True)
    assert bad.returncode == 2 and "invalid choice: '11'" in bad.stderr
    again = subprocess.run([sys.executable, str(SCRIPT), "--cuda", "13", "--stage-only", str(tmp_path / "s")],
                           capture_output=True, text=True)
    assert again.returncode == 2 and "exists; refusing to overwrite" in again.stderr


@pytest.mark.skipif(shutil.which("cmake") is None, reason="cmake is not on PATH")
def test_cmake_refuses_a_cuda_wheel_without_cuda(tmp_path):
    """FASTVQA_EXPECT_CUDA_MAJOR (set in every fastvqa-cuXX tree) stops a
    configuration whose CUDA major differs, here a CPU-only one."""
    # The check comes before pybind11 and Python are looked for, so plain cmake suffices.
    proc = subprocess.run(
        ["cmake", "-S", str(ROOT), "-B", str(tmp_path / "b"), "-DFASTVQA_ENABLE_CUDA=OFF",
         "-DFASTVQA_EXPECT_CUDA_MAJOR=13", "-DSKBUILD_PROJECT_NAME=fastvqa-cu13",
         "-DSKBUILD_PROJECT_VERSION=0.1.0"],
        capture_output=True, text=True)
    assert proc.returncode != 0
    assert "FASTVQA_EXPECT_CUDA_MAJOR=13 but the build has CUDA ''" in proc.stderr


def test_outside_git_the_same_sources_are_staged(build_wheel, tmp_path):
    """Without git (an sdist, a container where git refuses the checkout) the
    tree walk finds the tracked sources and skips build outputs."""
    with_git = build_wheel.source_files(build_wheel.ROOT)
    copy = tmp_path / "tree"
    for rel in with_git:
        (copy / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(build_wheel.ROOT / rel, copy / rel)
    (copy / "build" / "x").mkdir(parents=True)
    (copy / "build" / "x" / "CMakeCache.txt").write_text("stale")
    (copy / ".venv-cpu" / "bin").mkdir(parents=True)
    (copy / ".venv-cpu" / "bin" / "python").write_text("")
    (copy / "python" / "fastvqa" / "_C.cpython-311-x86_64-linux-gnu.so").write_bytes(b"\x7fELF")
    assert not (copy / ".git").exists()
    assert build_wheel.source_files(copy) == with_git
