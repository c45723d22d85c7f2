# SPDX-License-Identifier: Apache-2.0
"""DeVi, the DeVE-QA paper's training-free grounded video QA pipeline, with
pluggable models (``docs/devi.md``).

- :mod:`fastvqa.devi.protocols`: :class:`Components`, the three models one
  run uses (captioner, language model, image-text encoder; the interfaces and
  the client that reaches a served model are :mod:`fastvqa.llm`'s, and their
  names are also importable from here);
- :mod:`fastvqa.devi.prompts`: the paper's prompts, with their provenance;
- :mod:`fastvqa.devi.pipeline`: the stages; :mod:`fastvqa.devi.runner`:
  :func:`run_devi` and its reports.
"""

from __future__ import annotations

from fastvqa._lazy import lazy_exports

_LAZY = {
    "Answer": "pipeline",
    "Caption": "pipeline",
    "EventMemory": "pipeline",
    "Verified": "pipeline",
    "answer_with_grounding": "pipeline",
    "event_memory": "pipeline",
    "hierarchical_captions": "pipeline",
    "paper_hierarchy": "pipeline",
    "self_consistency": "pipeline",
    "visual_memory": "pipeline",
    "ChatCompletionsClient": "openai_client",
    "LanguageModelError": "openai_client",
    "Captioner": "protocols",
    "Components": "protocols",
    "ImageTextEncoder": "protocols",
    "LanguageModel": "protocols",
    "components": "protocols",
    "PROMPTS": "prompts",
    "Prompt": "prompts",
    "DeViResult": "runner",
    "Question": "runner",
    "run_devi": "runner",
    "score": "runner",
    "serve_chat_model": "serve",
}

__all__ = sorted(_LAZY)

__getattr__, __dir__ = lazy_exports(__name__, _LAZY)
