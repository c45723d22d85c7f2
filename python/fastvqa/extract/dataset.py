# SPDX-License-Identifier: Apache-2.0
"""A torch ``Dataset`` over a feature store, joined with a benchmark's records,
and the collate function that pads its items into batches for the
:mod:`fastvqa.nn` heads."""

from __future__ import annotations

import warnings
from typing import Any, Optional, Sequence

import numpy as np
import torch
from torch.utils.data import Dataset

from fastvqa.errors import InputError
from fastvqa.extract.store import FeatureStore
from fastvqa.nn.masking import lengths_to_mask


def spans_to_steps(spans: Any, start: np.ndarray, end: np.ndarray) -> np.ndarray:
    """``[G, 2]`` int64 inclusive ``(first, last)`` step indices of spans in seconds.

    Step ``t`` covers ``[start[t], end[t])`` (a store's times, ascending). A
    span ``[s, e]`` maps to the steps whose interval overlaps ``[s, e)``: the
    first step with ``end > s`` to the last step with ``start < e``; a span
    with ``e <= s`` maps to the step holding ``s``. A span that overlaps no
    step (outside the features, or NaN) gives ``(-1, -1)``, the padding that
    :meth:`fastvqa.nn.SpanHead.loss` skips."""
    spans = np.asarray(spans, dtype=np.float64).reshape(-1, 2)
    s, e = spans[:, 0], spans[:, 1]
    first = np.searchsorted(end, s, side="right")
    last = np.where(e > s, np.searchsorted(start, e, side="left"),
                    np.searchsorted(start, s, side="right")) - 1
    ok = (first <= last) & (first < len(start)) & (last >= 0) & ~np.isnan(spans).any(axis=1)
    return np.where(ok[:, None], np.stack([first, last], axis=1), -1).astype(np.int64)


class StoreDataset(Dataset):
    """Items of a :class:`~fastvqa.extract.store.FeatureStore`, one per video or,
    with ``records``, one per benchmark record (:class:`fastvqa.data.QARecord`:
    joined on ``video_id``), for a ``DataLoader`` with :meth:`collate`.

    Each item is a dict: ``video`` (id), ``features`` ``[n, D]`` float32
    tensor, ``start``/``end`` ``[n]`` float64 tensors (seconds, end
    exclusive), ``record`` (the record or ``None``) and ``gold`` ``[G, 2]``
    int64 inclusive step indices of the record's spans (:func:`spans_to_steps`;
    ``[0, 2]`` without a record).

    Records whose video has no features in the store are left out with one
    warning naming how many (a store built for part of a benchmark); when none
    is left, :class:`~fastvqa.errors.InputError`. Features are read from disk
    on each access (safetensors, no pickle): the dataset is cheap to send to
    DataLoader workers.
    """

    def __init__(self, store: Any, records: Optional[Sequence[Any]] = None):
        self.store = store if isinstance(store, FeatureStore) else FeatureStore(store)
        videos = self.store.videos()
        if records is None:
            self.items = [(v, None) for v in videos]
        else:
            have = set(videos)
            records = list(records)
            self.items = [(r.video_id, r) for r in records if r.video_id in have]
            missing = len(records) - len(self.items)
            if not self.items:
                raise InputError(f"{self.store.path}: none of the {len(records)} records' "
                                 "videos has features in the store")
            if missing:
                warnings.warn(f"{missing} of {len(records)} records have no features in "
                              f"{self.store.path}; left out", stacklevel=2)
        if not self.items:
            raise InputError(f"{self.store.path}: the store holds no videos")

    def __len__(self) -> int:
        return len(self.items)

    def __getitem__(self, i: int) -> dict:
        video, record = self.items[i]
        got = self.store.load(video)
        gold = np.zeros((0, 2), np.int64) if record is None else \
            spans_to_steps(record.spans, got.start, got.end)
        return {"video": video, "record": record,
                "features": torch.from_numpy(got.features.astype(np.float32, copy=False)),
                "start": torch.from_numpy(got.start), "end": torch.from_numpy(got.end),
                "gold": torch.from_numpy(gold)}

    @staticmethod
    def collate(items: Sequence[dict]) -> dict:
        """A batch: ``features`` ``[B, T, D]`` (zeros after each video's
        end), ``lengths`` ``[B]`` int64, ``mask`` ``[B, T]`` bool (True on real
        steps), ``start``/``end`` ``[B, T]`` float64 (NaN on padding), ``gold``
        ``[B, G, 2]`` int64 (``(-1, -1)`` rows pad), ``videos`` and ``records``
        as lists. ``T`` and ``G`` are the batch's largest."""
        lengths = torch.tensor([len(it["features"]) for it in items], dtype=torch.int64)
        steps = int(lengths.max()) if len(items) else 0
        width = items[0]["features"].shape[1]
        spans = max(len(it["gold"]) for it in items)
        feats = torch.zeros(len(items), steps, width, dtype=torch.float32)
        start = torch.full((len(items), steps), float("nan"), dtype=torch.float64)
        end = start.clone()
        gold = torch.full((len(items), spans, 2), -1, dtype=torch.int64)
        for b, it in enumerate(items):
            n = len(it["features"])
            feats[b, :n], start[b, :n], end[b, :n] = it["features"], it["start"], it["end"]
            gold[b, :len(it["gold"])] = it["gold"]
        mask = lengths_to_mask(lengths, len(items), steps, lengths.device)
        return {"features": feats, "lengths": lengths, "mask": mask, "start": start,
                "end": end, "gold": gold, "videos": [it["video"] for it in items],
                "records": [it["record"] for it in items]}
