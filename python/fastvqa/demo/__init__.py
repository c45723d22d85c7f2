# SPDX-License-Identifier: Apache-2.0
"""``fastvqa demo``: fastvqa's whole job on a synthetic benchmark, in one command.

- :mod:`fastvqa.demo.synth` generates seeded CATER-like videos (coloured shapes
  that slide, rotate, fly or rest over known intervals) and their questions;
- :mod:`fastvqa.demo.options` builds multiple-choice options with
  :mod:`fastvqa.retrieval`'s distractor mining;
- :mod:`fastvqa.demo.pipeline` decodes (:mod:`fastvqa.video`), computes
  per-colour motion features, grounds with :func:`fastvqa.ops.top_spans`,
  answers, and evaluates with :mod:`fastvqa.metrics`;
- :mod:`fastvqa.demo.report` prints the tables and writes ``results.json`` and
  ``report.html``; :mod:`fastvqa.demo.cli` is the command.
"""
