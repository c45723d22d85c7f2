# SPDX-License-Identifier: Apache-2.0
"""fastvqa: fast, exact building blocks for grounded video question answering.

``import fastvqa`` needs only NumPy: torch, DALI and FAISS are imported on
first use. Start with :func:`build_info` (or ``fastvqa info`` in a shell).
"""

from __future__ import annotations

from fastvqa._ext import _C
from fastvqa import ops

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
        (``"static"`` or None), ``openmp`` (bool), ``openmp_version`` (the
        ``_OPENMP`` date, or None), ``openmp_max_threads``, ``compiler`` and
        ``cuda_host_compiler``. CUDA fields are None (archs empty) in a
        CPU-only build.
    """
    return dict(_C.build_info())


__all__ = ["__version__", "build_info", "ops"]
