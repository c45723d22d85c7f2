# SPDX-License-Identifier: Apache-2.0
"""Multiple-choice questions from timed event captions, through any language model.

- :mod:`~fastvqa.generate.events.captions`: DeVE-QA's caption filter
  (length, pronouns, coverage, subsampling), every dropped caption counted
  by reason;
- :mod:`~fastvqa.generate.events.deveqa`: DeVE-QA's pipeline (the paper's
  prompt and limits, validated replies, a request cache, the DeVE-QA
  distractor recipe, "other time" distractors ranked by frames outside the
  segment when an image-text encoder is given, position-balanced options),
  written for
  :func:`fastvqa.data.load_deveqa`;
- :mod:`~fastvqa.generate.events.sokbench`: SOK-Bench's pipeline (situation
  graph from captions and, through a vision-language model, keyframes
  (:mod:`~fastvqa.generate.events.sokbench_visual`); general and situated
  knowledge with the paper's prompt compositions
  (:mod:`~fastvqa.generate.events.sokbench_knowledge`,
  :mod:`~fastvqa.generate.events.sokbench_prompts`); the 12 question types
  (:mod:`~fastvqa.generate.events.sokbench_questions`); same-video
  distractors), written for :func:`fastvqa.data.load_sokbench`;
- :mod:`~fastvqa.generate.events.cli`: ``fastvqa generate events``.

Every model reply that fails a check is a
:class:`~fastvqa.generate.events.deveqa.Rejection` with a reason code
(:data:`~fastvqa.generate.events.deveqa.REASONS`), never dropped silently.
"""

from __future__ import annotations

from fastvqa._lazy import lazy_exports

_EXPORTS = {
    "Event": "captions",
    "DroppedCaption": "captions",
    "FilteredCaptions": "captions",
    "PRONOUNS": "captions",
    "coverage": "captions",
    "filter_captions": "captions",
    "load_events": "captions",
    "events_from_records": "captions",
    "QA_PROMPT": "deveqa",
    "REASONS": "deveqa",
    "Rejection": "deveqa",
    "ResponseCache": "deveqa",
    "CachedModel": "deveqa",
    "DeVEQASet": "deveqa",
    "parse_qa_reply": "deveqa",
    "qa_messages": "deveqa",
    "generate_deveqa": "deveqa",
    "write_records": "deveqa",
    "QUESTION_TYPES": "sokbench",
    "COMMONSENSE": "sokbench",
    "TimedAction": "sokbench",
    "SituationGraph": "sokbench",
    "SOKBenchSet": "sokbench",
    "situation_graph": "sokbench",
    "table_knowledge": "sokbench",
    "language_model_knowledge": "sokbench",
    "situations_from_events": "sokbench",
    "generate_sokbench": "sokbench",
    "mask_entities": "sokbench",
    "add_visual_facts": "sokbench_visual",
    "language_model_questions": "sokbench_questions",
    "frame_retrieval_options": "deveqa",
}

__all__ = sorted(_EXPORTS)

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
