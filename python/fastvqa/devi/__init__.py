# SPDX-License-Identifier: Apache-2.0
"""DeVi, the DeVE-QA paper's training-free grounded video QA pipeline, with
pluggable models (``docs/devi.md``).

- :mod:`fastvqa.devi.protocols`: the components (captioner, language model,
  image-text encoder) and adapters for plain callables;
- :mod:`fastvqa.devi.openai_client`: :class:`ChatCompletionsClient`, the
  OpenAI chat-completions protocol (vLLM, llama.cpp, SGLang, hosted APIs)
  with timeouts, retries, a concurrency limit and a per-call cache;
- :mod:`fastvqa.devi.serve`: :func:`serve_chat_model`, a local server of
  that protocol for any Python function;
- :mod:`fastvqa.devi.prompts`: the prompts, with their provenance;
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
