# SPDX-License-Identifier: Apache-2.0
"""Benchmark builders: what the seed papers generate their data with.

- :mod:`fastvqa.generate.dvd`: DVD-style diagnostic dialogues from CATER-format
  scene graphs (interval engine, functional-program executor, dialogue
  generator writing the released DVD JSON layout);
- :mod:`fastvqa.generate.events`: DeVE-QA- and SOK-Bench-style multiple-choice
  questions from timed event captions, through any language model.

``fastvqa generate dvd|events`` runs them from the command line.
"""

from __future__ import annotations

from fastvqa._lazy import lazy_exports

__getattr__, __dir__ = lazy_exports(__name__, submodules=("dvd", "events"))

__all__ = ["dvd", "events"]
