# SPDX-License-Identifier: Apache-2.0
"""``fastvqa audit``: what a model can score on a benchmark without the video
(answer and question-type priors, question retrieval, option-only and
question-only text baselines, option-position balance, answer-length bias,
train/test near-duplicate leakage), as one report.

:func:`audit` takes any loader's records (or a
:class:`~fastvqa.retrieval.OptionSet`); :mod:`fastvqa.audit.report` renders
the terminal table, the JSON and the HTML page. scikit-learn and scipy load
on first use.
"""

from __future__ import annotations

from fastvqa._lazy import lazy_exports

_EXPORTS = {
    "audit": "core",
    "AuditResult": "core",
    "Score": "core",
    "PositionCheck": "core",
    "LengthBias": "core",
    "Leakage": "core",
    "records_from_options": "core",
    "format_table": "report",
    "write_html": "report",
    "write_json": "report",
}

__all__ = sorted(_EXPORTS)

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
