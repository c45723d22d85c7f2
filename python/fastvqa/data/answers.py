# SPDX-License-Identifier: Apache-2.0
"""The answer-index sentinels shared by the prediction readers
(:mod:`fastvqa.data.deveqa`), the grounded-QA metric
(:mod:`fastvqa.metrics.grounding`) and its evaluation entry
(:mod:`fastvqa.evaluation.nextgqa`), defined once here, the lowest of the
three in the import graph (``data`` imports neither of the others).

A predicted answer is an option index ``>= 0`` or one of these.
"""

from __future__ import annotations

#: ``pred_answers`` value for "no answer prediction for this question"
#: (the question is not answered; how it counts is the metric's mode).
NO_ANSWER = -1

#: ``pred_answers`` value for "answered, but with no valid option" (a
#: negative index, or a letter outside A-Z): answered, never correct.
INVALID_ANSWER = -2

__all__ = ["INVALID_ANSWER", "NO_ANSWER"]
