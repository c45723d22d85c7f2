# SPDX-License-Identifier: Apache-2.0
"""Loaders for each benchmark's files, returning :class:`QARecord` lists, and
the benchmark registry: :func:`load_benchmark` reads any benchmark by name
(its entry, a :class:`BenchmarkInfo`, in :mod:`fastvqa.data.benchmarks`).

Malformed files raise :class:`DataFormatError` naming the file, the record and
the field. Loaders are imported on first use.
"""

from __future__ import annotations

from fastvqa._lazy import lazy_exports

# public name -> submodule that defines it
_LAZY = {
    "DataFormatError": "errors",
    "INVALID_ANSWER": "answers",
    "NO_ANSWER": "answers",
    "QARecord": "record",
    "spans_to_csr": "record",
    "BenchmarkInfo": "benchmarks",
    "load_benchmark": "benchmarks",
    "load_nextgqa": "nextgqa",
    "load_deveqa": "deveqa",
    "load_wildqa": "wildqa",
    "load_dvd": "dvd",
    "load_sokbench": "sokbench",
    "load_activitynet_captions": "moment",
    "load_qvhighlights": "moment",
    "load_qvhighlights_submission": "moment",
}

__all__ = sorted(_LAZY)

__getattr__, __dir__ = lazy_exports(__name__, _LAZY)
