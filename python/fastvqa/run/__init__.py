# SPDX-License-Identifier: Apache-2.0
"""Running models over benchmarks (``fastvqa run``): the harness
(:mod:`fastvqa.run.harness`: records in, one :class:`Outcome` per question
out, replies parsed by :mod:`fastvqa.parse`), the pipelines
(:mod:`fastvqa.run.pipelines`: a vision-language model over sampled frames,
DeVi) and the run's files in the formats ``fastvqa eval`` reads
(:mod:`fastvqa.run.outputs`).
"""

from __future__ import annotations

from fastvqa._lazy import lazy_exports

_LAZY = {
    "Outcome": "harness",
    "parse_reply": "harness",
    "run_questions": "harness",
    "vlm_pipeline": "pipelines",
    "devi_outcomes": "pipelines",
    "sampled_frames": "pipelines",
    "prediction_texts": "outputs",
    "score": "outputs",
}

__all__ = sorted(_LAZY)

__getattr__, __dir__ = lazy_exports(__name__, _LAZY)
