# SPDX-License-Identifier: Apache-2.0
"""fastvqa: fast, exact building blocks for grounded video question answering.

``import fastvqa`` needs only NumPy and loads no subpackage: each of
:mod:`~fastvqa.ops`, :mod:`~fastvqa.metrics`, :mod:`~fastvqa.data`,
:mod:`~fastvqa.video`, :mod:`~fastvqa.retrieval`, :mod:`~fastvqa.evaluation`,
:mod:`~fastvqa.nn` (torch) and :mod:`~fastvqa.errors` is imported on first
access (``fastvqa.metrics.grounded_qa``), and torch, PyAV, DALI and FAISS only
by what uses them. Start with :func:`build_info` (or ``fastvqa info`` in a shell).
"""

from __future__ import annotations

from fastvqa._ext import _C
from fastvqa._lazy import lazy_exports

_SUBPACKAGES = ("audit", "data", "devi", "errors", "evaluation", "generate", "llm", "metrics",
                "nn", "ops", "parse", "ragged", "retrieval", "stats", "train", "video")

__version__: str = _C.build_info()["version"]


def build_info() -> dict:
    """What this build of fastvqa contains.

    Returns:
        A dict with ``version`` (str), ``distribution`` (the installed
        distribution's name: ``"fastvqa"``, ``"fastvqa-cu12"`` or
        ``"fastvqa-cu13"``), ``cuda`` (bool: CUDA kernels compiled),
        ``cuda_version`` (toolkit version used, or None), ``cuda_major`` (int,
        or None), ``cuda_min_driver`` (oldest NVIDIA Linux driver this build
        runs on, such as ``"580.65.06"``, or None), ``cuda_archs`` (list of
        CMake architecture entries such as ``"80-real"``), ``cuda_runtime``
        (``"static"`` or None), ``threads`` (int: :func:`get_num_threads`),
        ``compiler`` and ``cuda_host_compiler``; ``cuda_sass`` and ``cuda_ptx`` (sorted ints:
        the compute capabilities with real code, e.g. ``[75, 90]``, and with
        PTX, which the driver JIT-compiles for any GPU of that capability or
        newer; see :func:`cuda_runs_on`). CUDA fields are None (lists empty) in a CPU-only build.
    """
    info = dict(_C.build_info())
    info.update(_arch_coverage(info["cuda_archs"]))
    return info


def get_num_threads() -> int:
    """The number of threads fastvqa's CPU kernels may use.

    The kernels run on fastvqa's own pool, whose idle threads sleep (they never
    spin), in every build; no OpenMP runtime is involved, so neither
    ``torch.set_num_threads`` nor ``OMP_WAIT_POLICY`` reaches it. The count
    starts as ``FASTVQA_NUM_THREADS``, else ``OMP_NUM_THREADS`` (its first
    entry), else the CPUs this process may run on, and changes only through
    :func:`set_num_threads`. A call shares its rows out only when its estimated
    single-thread time exceeds about 250 us (a per-op cost model), so small
    calls run on the calling thread whatever this is.

    >>> import fastvqa
    >>> fastvqa.get_num_threads() >= 1
    True
    """
    return _C.get_num_threads()


def set_num_threads(n: int) -> None:
    """Set the number of threads of fastvqa's CPU kernels (``n >= 1``; see
    :func:`get_num_threads`). Other libraries' thread settings are untouched."""
    from fastvqa import _checks

    _C.set_num_threads(_checks.integer(n, "set_num_threads", "n", minimum=1))


def _arch_coverage(archs: list) -> dict:
    """SASS and PTX compute capabilities of CMake arch entries ("75-real",
    "75-virtual", "90" = both)."""
    sass, ptx = set(), set()
    for entry in archs:
        number, _, kind = entry.partition("-")
        if not number.isdigit():
            continue
        if kind in ("", "real"):
            sass.add(int(number))
        if kind in ("", "virtual"):
            ptx.add(int(number))
    return {"cuda_sass": sorted(sass), "cuda_ptx": sorted(ptx)}


def cuda_runs_on(capability: int, archs: list | None = None) -> str | None:
    """How CUDA kernels built for ``archs`` (CMake entries; default: this
    build's ``cuda_archs``) run on a GPU of compute ``capability`` (an int:
    ``90`` for 9.0): ``"sass"`` (real code of its major and the same or an
    older minor), ``"ptx"`` (PTX of the same or an older capability, which the
    driver JIT-compiles once), or None (not covered; also for a CPU-only build).
    """
    cov = _arch_coverage(build_info()["cuda_archs"] if archs is None else archs)
    if any(c // 10 == capability // 10 and c <= capability for c in cov["cuda_sass"]):
        return "sass"
    if any(c <= capability for c in cov["cuda_ptx"]):
        return "ptx"
    return None


__getattr__, __dir__ = lazy_exports(__name__, submodules=_SUBPACKAGES)

__all__ = ["__version__", "build_info", "cuda_runs_on", "get_num_threads", "set_num_threads",
           *_SUBPACKAGES]
