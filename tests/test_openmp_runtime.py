# SPDX-License-Identifier: Apache-2.0
"""fastvqa chooses a passive OpenMP wait policy only for an OpenMP runtime of
its own (a wheel's vendored libgomp copy), never for one shared with torch
and never over the user's choice (fastvqa._ext)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import fastvqa
from fastvqa import _ext

SYSTEM_GOMP = Path("/usr/lib/x86_64-linux-gnu/libgomp.so.1")


def _package(tmp_path: Path, vendored: bool) -> Path:
    pkg = tmp_path / "fastvqa"
    pkg.mkdir()
    if vendored:
        libs = tmp_path / "fastvqa.libs"
        libs.mkdir()
        (libs / "libgomp-0123abcd.so.1.0.0").write_bytes(b"")
    return pkg


@pytest.fixture
def no_wait_env(monkeypatch):
    for name in ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT"):
        monkeypatch.delenv(name, raising=False)


def test_private_copy_gets_passive_wait_only_while_loading(tmp_path, no_wait_env):
    runtime = _ext._private_openmp(_package(tmp_path, vendored=True))
    assert runtime is not None and runtime.name == "libgomp-0123abcd.so.1.0.0"
    state = {}
    with _ext._passive_wait_for(runtime, state):
        assert os.environ["OMP_WAIT_POLICY"] == "PASSIVE"
    assert "OMP_WAIT_POLICY" not in os.environ  # the user's other runtimes never see it
    assert state == {"private": True, "path": str(runtime), "passive_wait_set": True}


@pytest.mark.parametrize("folder", ["fastvqa_cu12.libs", "fastvqa_cu13.libs"])
def test_cuda_wheels_private_copy_is_found(tmp_path, folder):
    pkg = _package(tmp_path, vendored=False)
    (tmp_path / folder).mkdir()
    (tmp_path / folder / "libgomp-89abcdef.so.1.0.0").write_bytes(b"")
    assert _ext._private_openmp(pkg) == tmp_path / folder / "libgomp-89abcdef.so.1.0.0"


def test_shared_runtime_is_left_alone(tmp_path, no_wait_env):
    runtime = _ext._private_openmp(_package(tmp_path, vendored=False))
    assert runtime is None
    state = {}
    with _ext._passive_wait_for(runtime, state):
        assert "OMP_WAIT_POLICY" not in os.environ
    assert state == {"private": False, "path": None, "passive_wait_set": False}


@pytest.mark.parametrize("name,value", [("OMP_WAIT_POLICY", "ACTIVE"), ("GOMP_SPINCOUNT", "1000")])
def test_user_choice_wins(tmp_path, monkeypatch, no_wait_env, name, value):
    monkeypatch.setenv(name, value)
    runtime = _ext._private_openmp(_package(tmp_path, vendored=True))
    state = {}
    with _ext._passive_wait_for(runtime, state):
        assert os.environ[name] == value
        assert name == "OMP_WAIT_POLICY" or "OMP_WAIT_POLICY" not in os.environ
    assert state["passive_wait_set"] is False


def test_build_info_reports_the_runtime():
    info = fastvqa.build_info()
    rt = info["openmp_runtime"]
    assert set(rt) == {"private", "path", "passive_wait_set", "deep_bind"}
    # This checkout's extension is a source build: it shares libgomp.so.1 with torch.
    if not rt["private"]:
        assert rt["passive_wait_set"] is False and rt["deep_bind"] is False
    if info["openmp"] and sys.platform == "linux":
        library = Path(info["openmp_library"])
        assert library.name.startswith("libgomp") and library.exists()
        if rt["private"]:
            assert library.resolve() == Path(rt["path"]).resolve()


def test_num_threads_round_trip_and_bad_values():
    before = fastvqa.get_num_threads()
    try:
        fastvqa.set_num_threads(1)
        assert fastvqa.get_num_threads() == 1
    finally:
        fastvqa.set_num_threads(before)
    assert fastvqa.get_num_threads() == before
    with pytest.raises(ValueError, match="set_num_threads: n must be >= 1"):
        fastvqa.set_num_threads(0)
    with pytest.raises(TypeError, match="set_num_threads: n must be an integer"):
        fastvqa.set_num_threads(1.5)


@pytest.mark.skipif(shutil.which("patchelf") is None or not SYSTEM_GOMP.exists(),
                    reason="needs patchelf and the system libgomp to vendor a copy")
def test_a_vendored_runtime_is_the_one_the_kernels_call_even_after_torch(tmp_path):
    # A package laid out as auditwheel repairs it: the extension needs a renamed
    # libgomp copy in fastvqa.libs. torch (imported first) puts its own runtime
    # in the global symbol scope; the kernels must still reach the copy, with
    # PASSIVE waiting, and start from torch's thread count.
    pkg = tmp_path / "fastvqa"
    shutil.copytree(Path(fastvqa.__file__).parent, pkg,
                    ignore=shutil.ignore_patterns("__pycache__"))
    ext = next(pkg.glob("_C*.so"))
    needed = subprocess.run(["patchelf", "--print-needed", str(ext)], check=True,
                            capture_output=True, text=True).stdout.split()
    gomp = next(name for name in needed if name.startswith("libgomp"))
    if gomp == "libgomp.so.1":  # a source build: vendor a renamed copy, as auditwheel does
        libs = tmp_path / "fastvqa.libs"
        libs.mkdir()
        copy = libs / "libgomp-0123abcd.so.1"
        shutil.copy(SYSTEM_GOMP, copy)
        subprocess.run(["patchelf", "--set-soname", copy.name, str(copy)], check=True)
        subprocess.run(["patchelf", "--replace-needed", "libgomp.so.1", copy.name,
                        "--set-rpath", "$ORIGIN/../fastvqa.libs", str(ext)], check=True)
    else:  # an installed repaired wheel: its own vendored copy, beside the package copy
        [libs] = [d for d in Path(fastvqa.__file__).parent.parent.glob("fastvqa*.libs")
                  if (d / gomp).exists()]
        shutil.copytree(libs, tmp_path / libs.name)
        copy = tmp_path / libs.name / gomp
    script = textwrap.dedent("""
        import sys
        import torch
        torch.set_num_threads(1)
        import numpy as np
        import fastvqa
        import fastvqa.ops as O
        info = fastvqa.build_info()
        print(info["openmp_library"], info["openmp_runtime"]["passive_wait_set"],
              fastvqa.get_num_threads())
        torch.set_num_threads(2)
        fastvqa.set_num_threads(2)
        x = np.random.default_rng(0).standard_normal((64, 256)).astype(np.float32)
        band = O.span_scores(x, reduce="sum", max_len=64)  # a parallel region in the copy
        print(float(band[3, 10, 5]), float(x[3, 10:16].astype(np.float64).sum()))  # steps 10..15
    """)
    env = {k: v for k, v in os.environ.items() if k not in ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT")}
    env["PYTHONPATH"] = str(tmp_path)
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         env=env, timeout=120, cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    first, second = out.stdout.splitlines()
    library, passive, threads = first.split()
    assert Path(library).resolve() == copy.resolve()
    assert (passive, threads) == ("True", "1")
    got, want = map(float, second.split())
    assert abs(got - want) <= 1e-5 * max(1.0, abs(want))


@pytest.mark.skipif(not SYSTEM_GOMP.exists(), reason="needs the system libgomp to copy")
def test_a_real_private_copy_initialises_passive_and_a_shared_one_does_not(tmp_path):
    # A vendored copy (own file name, as auditwheel makes it) loaded inside the
    # context reads PASSIVE (spins 0 times); the runtime loaded before (torch's) keeps its default.
    pkg = _package(tmp_path, vendored=False)
    (tmp_path / "fastvqa.libs").mkdir()
    copy = tmp_path / "fastvqa.libs" / "libgomp-0123abcd.so.1.0.0"
    shutil.copy(SYSTEM_GOMP, copy)
    script = textwrap.dedent(f"""
        import ctypes, os, sys
        from pathlib import Path
        import torch  # initialises the shared libgomp.so.1 first
        torch.set_num_threads(torch.get_num_threads())
        from fastvqa import _ext
        runtime = _ext._private_openmp(Path({str(pkg)!r}))
        state = {{}}
        sys.stderr.write("LOADING PRIVATE\\n"); sys.stderr.flush()
        with _ext._passive_wait_for(runtime, state):
            ctypes.CDLL(str(runtime))
        assert "OMP_WAIT_POLICY" not in os.environ
    """)
    # OMP_DISPLAY_ENV: each runtime prints its settings when it initialises;
    # PASSIVE shows as a spin count of 0 (the default is 300,000; libgomp
    # prints OMP_WAIT_POLICY as PASSIVE for "unset" too, so that line says nothing).
    env = {k: v for k, v in os.environ.items() if k not in ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT")}
    env["OMP_DISPLAY_ENV"] = "VERBOSE"
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         env=env, timeout=120)
    assert out.returncode == 0, out.stderr
    shared, private = out.stderr.split("LOADING PRIVATE\n", 1)
    assert "OPENMP DISPLAY ENVIRONMENT BEGIN" in shared  # torch's runtime: default policy
    assert "GOMP_SPINCOUNT = '300000'" in shared
    assert "OPENMP DISPLAY ENVIRONMENT BEGIN" in private
    assert "GOMP_SPINCOUNT = '0'" in private
