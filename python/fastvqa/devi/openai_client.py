# SPDX-License-Identifier: Apache-2.0
"""The chat-completions client's former home; it is :mod:`fastvqa.llm.client`."""

from fastvqa.llm.client import (  # noqa: F401
    MAX_BODY_BYTES,
    MAX_RETRY_AFTER,
    ChatCompletionsClient,
    ClientStats,
    LanguageModelError,
    request_key,
)
