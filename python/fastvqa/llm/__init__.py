# SPDX-License-Identifier: Apache-2.0
"""Reaching language and vision-language models: the one home for model
access, used by :mod:`fastvqa.devi`, :mod:`fastvqa.generate` and the demo.

- :mod:`fastvqa.llm.client`: :class:`ChatCompletionsClient`, the OpenAI
  chat-completions protocol (vLLM, llama.cpp, SGLang, hosted APIs) with
  deadlines, a body limit, retries, a concurrency limit and a per-call cache;
- :mod:`fastvqa.llm.serve`: :func:`serve_chat_model`, a real local server of
  that protocol for any Python function (tests, demos, a Python model);
- :mod:`fastvqa.llm.protocols`: the model interfaces (:class:`LanguageModel`,
  :class:`Captioner`, :class:`ImageTextEncoder`) and adapters for plain
  callables;
- :mod:`fastvqa.llm.prompts`: :class:`Prompt`, a prompt as data with its
  provenance;
- :mod:`fastvqa.llm.images`: frames as chat image parts and back
  (:func:`frames_content`, :func:`decode_image_url`; Pillow);
- :mod:`fastvqa.llm.vision`: :class:`ChatCaptioner` and :class:`ChatAnswerer`,
  a vision-language model as a prompt plus a chat model.

It imports nothing beyond the standard library and NumPy (Pillow when an
image is encoded or decoded).
"""

from __future__ import annotations

from fastvqa._lazy import lazy_exports

_LAZY = {
    "ChatCompletionsClient": "client",
    "ClientStats": "client",
    "LanguageModelError": "client",
    "request_key": "client",
    "Reply": "serve",
    "ServedModel": "serve",
    "ServerStats": "serve",
    "serve_chat_model": "serve",
    "Captioner": "protocols",
    "ImageTextEncoder": "protocols",
    "LanguageModel": "protocols",
    "as_captioner": "protocols",
    "as_encoder": "protocols",
    "as_language_model": "protocols",
    "Prompt": "prompts",
    "HFClipEncoder": "encoders",
    "OpenClipEncoder": "encoders",
    "load_encoder": "encoders",
    "decode_image_url": "images",
    "encode_image": "images",
    "frames_content": "images",
    "image_part": "images",
    "message_images": "images",
    "message_text": "images",
    "ChatAnswerer": "vision",
    "ChatCaptioner": "vision",
}

__all__ = sorted(_LAZY)

__getattr__, __dir__ = lazy_exports(__name__, _LAZY)
