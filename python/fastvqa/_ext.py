# SPDX-License-Identifier: Apache-2.0
"""Loads the compiled extension, keeping the real cause when it fails.

OpenMP waiting: an OpenMP thread with no work spins for a while before it
sleeps (libgomp: about 300,000 spins, ``GOMP_SPINCOUNT``). When the cores are
shared with other processes the spinning threads take CPU from the ones that
have work, and fastvqa's calls slow down many times over. libgomp reads its
wait policy once, when it is loaded, for the whole process, so fastvqa can
choose it only for an OpenMP runtime of its own: a wheel repaired by
auditwheel carries a private copy (``fastvqa.libs/libgomp-<hash>.so``). If
that copy is not loaded yet and neither ``OMP_WAIT_POLICY`` nor
``GOMP_SPINCOUNT`` is set, ``OMP_WAIT_POLICY=PASSIVE`` is set for the moment
the extension loads and removed again, so it applies to fastvqa's runtime
only. The extension is then loaded with ``RTLD_DEEPBIND``: torch puts its own
libgomp in the process's global symbol scope, and without it the extension's
OpenMP calls would bind to torch's runtime and never reach the private copy
(``build_info()["openmp_library"]`` names the runtime they reach). That
private runtime's thread count starts as torch's when torch is already
imported (``OMP_NUM_THREADS`` or the core count otherwise), and is set with
:func:`fastvqa.set_num_threads` (``torch.set_num_threads`` does not reach it).
A source build links the system's ``libgomp.so.1``, which is the same
runtime as torch's (the loader shares one ``libgomp.so.1`` per process):
there fastvqa changes nothing, and ``OMP_WAIT_POLICY=PASSIVE`` set by the user
before starting Python applies to both. What happened is in
``fastvqa.build_info()["openmp_runtime"]``.
"""

from __future__ import annotations

import os
import sys
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator, Optional

_WAIT_VARIABLES = ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT")


def _private_openmp(package_dir: Path) -> Optional[Path]:
    """fastvqa's own libgomp copy (auditwheel's folder beside the package,
    named after the distribution: ``fastvqa.libs``, ``fastvqa_cu13.libs``), or
    None when the build uses a shared one."""
    for libs in sorted(package_dir.parent.glob("fastvqa*.libs")):
        found = sorted(libs.glob("libgomp-*.so*"))
        if found:
            return found[0]
    return None


def _mapped(path: Path) -> bool:
    """True when ``path`` is already loaded in this process (Linux)."""
    try:
        with open("/proc/self/maps") as f:
            target = str(path.resolve())
            return any(line.rstrip().endswith(target) for line in f)
    except OSError:
        return False


@contextmanager
def _passive_wait_for(runtime: Optional[Path], state: dict) -> Iterator[None]:
    """Set ``OMP_WAIT_POLICY=PASSIVE`` while ``runtime`` (a private libgomp)
    initialises, unless the user chose a policy or it is loaded already."""
    state.update(private=runtime is not None, path=str(runtime) if runtime else None,
                 passive_wait_set=False)
    if (runtime is None or any(v in os.environ for v in _WAIT_VARIABLES)
            or _mapped(runtime)):
        yield
        return
    os.environ["OMP_WAIT_POLICY"] = "PASSIVE"
    state["passive_wait_set"] = True
    try:
        yield
    finally:
        os.environ.pop("OMP_WAIT_POLICY", None)


@contextmanager
def _deep_bind(runtime: Optional[Path], state: dict) -> Iterator[None]:
    """Load extensions with ``RTLD_DEEPBIND`` (their own dependencies before
    the global scope) while ``runtime``, a private libgomp, is to be used;
    nothing changes for a shared runtime or where the flag does not exist."""
    flag = getattr(os, "RTLD_DEEPBIND", 0)
    state["deep_bind"] = bool(runtime is not None and flag)
    if not state["deep_bind"]:
        yield
        return
    saved = sys.getdlopenflags()
    sys.setdlopenflags(saved | flag)
    try:
        yield
    finally:
        sys.setdlopenflags(saved)


openmp_runtime: dict = {}

try:
    _runtime = _private_openmp(Path(__file__).resolve().parent)
    with _passive_wait_for(_runtime, openmp_runtime), _deep_bind(_runtime, openmp_runtime):
        from fastvqa import _C  # noqa: F401  (re-exported for the ops modules)
    _torch = sys.modules.get("torch")  # None also where `import torch` is blocked
    if _runtime is not None and _torch is not None:
        _C.set_num_threads(_torch.get_num_threads())
except ImportError as err:  # pragma: no cover - exercised only on broken installs
    raise ImportError(
        "fastvqa could not load its compiled extension fastvqa._C "
        f"(Python {sys.version.split()[0]}, {sys.platform}). The original error is chained "
        "below. Reinstall with `pip install --force-reinstall fastvqa`, or for a source "
        "checkout rebuild with `pip install .` (set FASTVQA_ENABLE_CUDA=OFF to skip the CUDA "
        "kernels). Do not import fastvqa from the repository root without building it."
    ) from err

__all__ = ["_C", "openmp_runtime"]
