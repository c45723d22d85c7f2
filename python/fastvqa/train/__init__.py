# SPDX-License-Identifier: Apache-2.0
"""Training grounding models from feature stores (docs/training.md).

- :mod:`~fastvqa.train.config`: :class:`TrainConfig` and :func:`load_config`
  (a TOML or JSON file);
- :mod:`~fastvqa.train.data`: the records joined with the stores, and
  :class:`GlobalBatchSampler` (the batch order, the same for one process or
  ``torchrun``'s N);
- :mod:`~fastvqa.train.loop`: :func:`fit` (AdamW with warm-up, clipping,
  mixed precision on a GPU, per-epoch exact evaluation, best-checkpoint
  selection, exact resume, data parallel), :func:`evaluate`,
  :func:`load_model`;
- :mod:`~fastvqa.train.scoring`: the benchmark's metrics during training;
- :mod:`~fastvqa.train.checkpoint`: the files a run writes;
- :mod:`~fastvqa.train.cli`: ``fastvqa train CONFIG``.

Every name below is imported on first use.
"""

from __future__ import annotations

from fastvqa._lazy import lazy_exports

_EXPORTS = {
    "TrainConfig": "config", "DataConfig": "config", "OptimConfig": "config",
    "EvalConfig": "config", "load_config": "config", "config_from_dict": "config",
    "GlobalBatchSampler": "data",
    "fit": "loop", "evaluate": "loop", "load_model": "loop", "FitResult": "loop",
    "Scorer": "scoring",
}

__getattr__, __dir__ = lazy_exports(
    __name__, _EXPORTS,
    submodules=("config", "data", "loop", "scoring", "checkpoint", "cli"))

__all__ = sorted(_EXPORTS)
