# SPDX-License-Identifier: Apache-2.0
"""Nearest-neighbour retrieval over text: a FAISS index, text encoders with an
embedding cache, question-retrieval baselines, distractor mining and
multiple-choice option building.

Importing this package is cheap: FAISS, scikit-learn, torch and
sentence-transformers load only when a class that needs them is used.
"""

from __future__ import annotations

from fastvqa._lazy import lazy_exports

_EXPORTS = {
    "Index": "index",
    "IndexFileError": "index",
    "RetrievalWarning": "encoders",
    "Encoder": "encoders",
    "TfidfEncoder": "encoders",
    "SentenceEncoder": "encoders",
    "CallableEncoder": "encoders",
    "cached_encode": "encoders",
    "default_cache_dir": "encoders",
    "question_retrieval": "baselines",
    "RetrievalResult": "baselines",
    "DistractorMiner": "distractors",
    "mine_distractors": "distractors",
    "normalize_option": "distractors",
    "Recipe": "options",
    "OptionSet": "options",
    "build_options": "options",
    "DEVEQA_RECIPE": "options",
    "SOKBENCH_RECIPE": "options",
    "same_category_pools": "options",
    "position_balance": "options",
    "PositionBalance": "options",
    "normalize_question": "duplicates",
    "duplicate_groups": "duplicates",
    "unique_question_count": "duplicates",
    "unique_counts_by_split": "duplicates",
    "UniqueCounts": "duplicates",
}

__all__ = sorted(_EXPORTS)

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
