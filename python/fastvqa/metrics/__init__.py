# SPDX-License-Identifier: Apache-2.0
"""Benchmark-exact metrics. Each function returns a :class:`MetricResult`
whose keys are the names the benchmark prints.

Submodules are imported on first use, so ``import fastvqa`` stays light.
"""

from __future__ import annotations

from fastvqa._lazy import lazy_exports

# public name -> submodule that defines it
_LAZY = {
    "MetricResult": "result",
    "grounded_qa": "grounding",
    "slice_by_duration": "grounding",
    "slice_by_event_count": "grounding",
    "iou_f1": "wildqa",
    "rouge": "wildqa",
    "normalize_answer": "wildqa",
    "dvd_accuracy": "dvd",
    "DVD_ANSWERS": "dvd",
    "answer_subspace": "dvd",
    "multiple_choice_accuracy": "multiple_choice",
    "parse_option_index": "multiple_choice",
    "moment_retrieval": "moment",
    "recall_at_n": "moment",
}

__all__ = sorted(_LAZY)

__getattr__, __dir__ = lazy_exports(__name__, _LAZY)
