# SPDX-License-Identifier: Apache-2.0
"""Loads the compiled extension, keeping the real cause when it fails.

The extension links no OpenMP runtime: its CPU loops run on fastvqa's own
thread pool (csrc/fastvqa/common/parallel.cpp), so how it is loaded and which
runtime torch or FAISS brought into the process change nothing.
"""

from __future__ import annotations

import sys

try:
    from fastvqa import _C  # noqa: F401  (re-exported for the ops modules)
except ImportError as err:  # pragma: no cover - exercised only on broken installs
    raise ImportError(
        "fastvqa could not load its compiled extension fastvqa._C "
        f"(Python {sys.version.split()[0]}, {sys.platform}). The original error is chained "
        "below. Reinstall with `pip install --force-reinstall fastvqa`, or for a source "
        "checkout rebuild with `pip install .` (set FASTVQA_ENABLE_CUDA=OFF to skip the CUDA "
        "kernels). Do not import fastvqa from the repository root without building it."
    ) from err

__all__ = ["_C"]
