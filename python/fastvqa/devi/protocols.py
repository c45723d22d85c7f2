# SPDX-License-Identifier: Apache-2.0
"""The three models one DeVi run uses. The model interfaces themselves live
in :mod:`fastvqa.llm.protocols` (their names are also importable from here).
"""

from __future__ import annotations

from typing import Any, NamedTuple

from fastvqa.llm.protocols import (  # noqa: F401  (the names this module always had)
    CallableCaptioner,
    CallableEncoder,
    CallableLanguageModel,
    Captioner,
    ImageTextEncoder,
    LanguageModel,
    Message,
    as_captioner,
    as_encoder,
    as_language_model,
    embeddings,
)


class Components(NamedTuple):
    """The models one DeVi run uses (each adapted by ``as_*`` in :func:`components`)."""

    captioner: Captioner
    llm: LanguageModel
    encoder: ImageTextEncoder


def components(captioner: Any, llm: Any, encoder: Any) -> Components:
    """:class:`Components` from objects or callables (see the ``as_*`` adapters)."""
    return Components(as_captioner(captioner), as_language_model(llm), as_encoder(encoder))
