# SPDX-License-Identifier: Apache-2.0
"""The local chat-completions server's former home; it is :mod:`fastvqa.llm.serve`."""

from fastvqa.llm.serve import (  # noqa: F401
    MAX_REQUEST_BYTES,
    REQUEST_TIMEOUT,
    Reply,
    ServedModel,
    ServerStats,
    serve_chat_model,
)
