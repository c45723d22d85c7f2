# SPDX-License-Identifier: Apache-2.0
"""The common record every loader returns, and ragged-span helpers."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Optional, Sequence

import numpy as np

from fastvqa.ragged import Ragged, from_rows


@dataclass
class QARecord:
    """One question about one video.

    Attributes:
        video_id: the benchmark's video identifier (str).
        question_id: the question's identifier within the benchmark (str).
        question: the question text.
        options: answer options for multiple choice (empty for open answers).
        answer: the correct answer: an option index (int) for multiple
            choice, the answer text (str) for open-ended / 40-way answers.
        spans: ``(K, 2)`` float64 ground-truth spans ``[start, end]`` in
            seconds (K may be 0).
        duration: video length in seconds, or None when the file has none.
        extra: benchmark-specific fields, kept as they were (never dropped).

    >>> r = QARecord("v1", "3", "What is on the table?", ["a cup", "a book"], answer=1)
    >>> r.key, r.options[r.answer], r.spans.shape
    ('v1_3', 'a book', (0, 2))
    """

    video_id: str
    question_id: str
    question: str = ""
    options: list[str] = field(default_factory=list)
    answer: Any = None
    spans: np.ndarray = field(default_factory=lambda: np.zeros((0, 2), dtype=np.float64))
    duration: Optional[float] = None
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def key(self) -> str:
        """``"<video_id>_<question_id>"``, the key of NExT-GQA-style prediction files."""
        return f"{self.video_id}_{self.question_id}"


def spans_to_csr(rows: Sequence[Any]) -> Ragged:
    """Ragged span lists -> ``Ragged(values (K, 2) float64, offsets (N + 1,) int64)``.

    ``rows[i]`` is anything shaped ``(k_i, 2)`` (k_i may be 0; ``[]`` is an
    empty row); the result (it unpacks as ``flat, offsets``) feeds
    :func:`fastvqa.ops.grounding_overlap` and :func:`fastvqa.metrics.grounded_qa`.
    :func:`fastvqa.ragged.from_rows` with ``width=2``.

    >>> flat, offsets = spans_to_csr([[[0, 1], [2, 3]], []])
    >>> flat
    array([[0., 1.],
           [2., 3.]])
    >>> offsets
    array([0, 2, 2])
    """
    return from_rows(rows, width=2)
