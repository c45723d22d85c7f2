# SPDX-License-Identifier: Apache-2.0
"""The benchmark table's former home: it lives in :mod:`fastvqa.data.benchmarks`
(the registry, with :func:`~fastvqa.data.load_benchmark`); these names stay
importable from here."""

from __future__ import annotations

from fastvqa.data.benchmarks import BENCHMARKS, BenchmarkInfo

__all__ = ["BENCHMARKS", "BenchmarkInfo"]
