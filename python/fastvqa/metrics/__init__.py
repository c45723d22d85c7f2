# SPDX-License-Identifier: Apache-2.0
"""Benchmark-exact metrics. Each function returns a :class:`MetricResult`
whose keys are the names the benchmark prints.

One calling convention, as torchmetrics' functional API:
``fn(preds, target, *, options)``. ``preds`` is what the model produced, one
entry per question or query; ``target`` is the ground truth of the same
questions; everything else (options, and per-question extras such as
``pred_answers``/``gt_answers``, ``durations``, ``keys``, ``alternatives``,
``question_types``) is a keyword. For :func:`grounded_qa`, ``target`` is the
CSR pair ``(gt_spans, gt_offsets)`` or a list of per-question ``(k_i, 2)``
arrays; for :func:`dvd_accuracy` and :func:`multiple_choice_accuracy` the
``QARecord`` list (or, for the latter, the pair ``(options, answers)``); for
the others a sequence (or, for the moment metrics, a mapping) aligned with
``preds``. docs/metrics.md has the table.

Each function has a stateful class for training loops (torchmetrics style,
without torch): :class:`GroundedQA`, :class:`IoUF1`, :class:`Rouge`,
:class:`DVDAccuracy`, :class:`MultipleChoiceAccuracy`,
:class:`MomentRetrieval`, :class:`RecallAtN`, all :class:`Metric`:
``update(preds, target)`` per batch, ``compute()``, ``reset()``,
``merge(other)``, ``sync()`` across ``torch.distributed`` ranks; ``compute()``
equals the one-shot function exactly.

Submodules are named by task: ``grounding`` (grounded QA), ``evidence``
(evidence selection), ``open_answers`` (open-ended answers), ``dialogue``
(video dialogue QA), ``multiple_choice``, ``moment`` (moment retrieval), ``highlight``
(highlight detection),
``text_generation`` (free-text answers: BLEU, BERTScore);
``result`` holds the result types, ``_align`` the shared record alignment.
Submodules are imported on first use, so ``import fastvqa`` stays light.
"""

from __future__ import annotations

from fastvqa._lazy import lazy_exports

# public name -> submodule that defines it
_LAZY = {
    "MetricResult": "result",
    "BreakdownResult": "result",
    "Metric": "base",
    "GroundedQA": "grounding",
    "IoUF1": "evidence",
    "Rouge": "open_answers",
    "DVDAccuracy": "dialogue",
    "MultipleChoiceAccuracy": "multiple_choice",
    "MomentRetrieval": "moment",
    "RecallAtN": "moment",
    "grounded_qa": "grounding",
    "slice_by_duration": "grounding",
    "slice_by_event_count": "grounding",
    "iou_f1": "evidence",
    "rouge": "open_answers",
    "normalize_answer": "open_answers",
    "human_agreement": "open_answers",
    "dvd_accuracy": "dialogue",
    "DVD_ANSWERS": "dialogue",
    "answer_subspace": "dialogue",
    "multiple_choice_accuracy": "multiple_choice",
    "parse_option_index": "multiple_choice",
    "moment_retrieval": "moment",
    "direct_answer": "text_generation",
    "DirectAnswer": "text_generation",
    "average_precision": "evidence",
    "AveragePrecision": "evidence",
    "human_evidence_agreement": "evidence",
    "recall_at_n": "moment",
    "highlight_detection": "highlight",
    "HighlightDetection": "highlight",
    "clip_saliency": "highlight",
}

__all__ = sorted(_LAZY)

__getattr__, __dir__ = lazy_exports(__name__, _LAZY)
