# SPDX-License-Identifier: Apache-2.0
"""From videos to a feature store a training loop reads
(``pip install 'fastvqa[extract]'``, plus torch and PyAV).

- :class:`Recipe` pins what decides the numbers (sampler, resize, crop,
  normalisation, model and layer, dtype, item-to-time mapping); the built-in
  :data:`RECIPES` reproduce the benchmarks' published setups.
- :func:`run` (``fastvqa extract``) decodes a folder of videos and runs the
  model on them into a :class:`FeatureStore`: one safetensors file per video,
  resumable after a kill, shardable (``shard="i/n"``), failures recorded.
- :func:`run_text` (``fastvqa extract BENCHMARK --text-recipe NAME``)
  encodes a benchmark's questions into a query store, by a
  :class:`TextRecipe` (:data:`TEXT_RECIPES`), paired with a video recipe.
- :class:`StoreDataset` reads a store joined with a benchmark's records (and
  a query store) as padded training batches.

Each name is imported on first use; torch only when a model runs.
"""

from __future__ import annotations

from fastvqa._lazy import lazy_exports

# public name -> submodule that defines it
_LAZY = {
    "DamagedFileError": "store",
    "ExtractSummary": "engine",
    "FeatureStore": "store",
    "ForeignFileError": "store",
    "RECIPES": "recipes",
    "Recipe": "recipes",
    "StoreDataset": "dataset",  # imports torch
    "StoreError": "store",
    "TEXT_RECIPES": "recipes",
    "TextRecipe": "recipes",
    "TextSummary": "text",
    "VideoFeatures": "store",
    "discover": "engine",
    "video_paths": "engine",
    "get_recipe": "recipes",
    "get_text_recipe": "recipes",
    "record_id": "text",
    "register_recipe": "recipes",
    "register_text_recipe": "recipes",
    "run": "engine",
    "run_text": "text",
    "spans_to_cw": "targets",
    "spans_to_steps": "targets",
}

__all__ = sorted(_LAZY)

__getattr__, __dir__ = lazy_exports(__name__, _LAZY)
