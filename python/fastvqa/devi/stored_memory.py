# SPDX-License-Identifier: Apache-2.0
"""DeVi's visual memory read from a feature store instead of decoded and
encoded again.

The paper keeps 1-fps CLIP image features of the whole video in its event
memory (docs/papers/deveqa.md, section 4.2); ``fastvqa extract --recipe
devi-clip`` writes exactly those into a :class:`~fastvqa.extract.FeatureStore`.
A run given that store reads each video's features from it, and decodes and
encodes only the videos it lacks.

The self-consistency score compares these image features with the
encoder's *text* embeddings, so the store must hold features of the same
model: :class:`StoredMemory` refuses a store whose weights differ from the
encoder's (compared by the sha256 of the weights, ``model_sha256`` in the
store's header, for encoders that are torch modules; by name otherwise).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from fastvqa.errors import InputError


def _name(encoder: Any) -> str:
    return str(getattr(encoder, "name", None) or type(encoder).__qualname__)


class StoredMemory:
    """The visual memory of the videos a store holds, for one encoder.

    ``store``: a :class:`~fastvqa.extract.FeatureStore` or its folder;
    ``encoder``: the run's image-text encoder. Raises
    :class:`~fastvqa.errors.InputError` when the store's features cannot be
    the encoder's (another model or other weights) or are not image
    features (a clip recipe).

    ``video in memory`` says whether the store has features for a video id;
    :meth:`load` returns ``(times, features)`` as
    :func:`fastvqa.devi.pipeline.visual_memory` does: ``times`` ``(T,)``
    float64 seconds (each item's start, end exclusive at the next), and
    ``features`` ``(T, D)`` float32, L2-normalised per row (a zero row stays
    zero), as the encoders of :mod:`fastvqa.llm.encoders` return them.
    """

    def __init__(self, store: Any, encoder: Any):
        from fastvqa.extract import FeatureStore

        self.store = store if isinstance(store, FeatureStore) else FeatureStore(Path(store))
        header = self.store.header
        where = f"--store {self.store.path}"
        if header["recipe"].get("input", "frames") != "frames":
            raise InputError(f"{where} holds clip features (recipe {header['recipe']['name']!r}); "
                             "DeVi's visual memory is per-frame image features, e.g. "
                             "fastvqa extract --recipe devi-clip")
        stored_model, stored_sha = header.get("model"), header.get("model_sha256")
        module = getattr(encoder, "model", None)
        if stored_sha is not None and module is not None and hasattr(module, "state_dict"):
            from fastvqa.extract.models import weights_sha256

            if weights_sha256(module) != stored_sha:
                raise InputError(
                    f"{where} holds features of {stored_model} whose weights differ from the "
                    f"encoder's ({_name(encoder)}); self-consistency compares them with the "
                    "encoder's text embeddings, so they must come from the same weights")
        elif stored_model != _name(encoder):
            raise InputError(f"{where} holds features of {stored_model!r}, not of the encoder "
                             f"{_name(encoder)!r}; self-consistency compares them with the "
                             "encoder's text embeddings, so they must come from the same model")
        self._videos = set(self.store.videos())
        self.dim = getattr(encoder, "dim", None)

    def __contains__(self, video: str) -> bool:
        return video in self._videos

    def load(self, video: str) -> tuple:
        got = self.store.load(video)
        feats = np.asarray(got.features, dtype=np.float32)
        if feats.ndim != 2 or (self.dim is not None and feats.shape[1] != self.dim):
            raise InputError(f"--store {self.store.path}: video {video!r} has features of shape "
                             f"{tuple(feats.shape)}; the encoder's embeddings have "
                             f"{self.dim} dimensions")
        if not np.isfinite(feats).all():
            raise InputError(f"--store {self.store.path}: video {video!r} has NaN or infinite "
                             "features")
        norm = np.linalg.norm(feats, axis=1, keepdims=True)
        feats = np.divide(feats, norm, out=np.zeros_like(feats), where=norm > 0)
        return np.asarray(got.start, dtype=np.float64), feats  # from the first frame, as stored
