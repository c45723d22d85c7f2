# SPDX-License-Identifier: Apache-2.0
"""A torch ``Dataset`` over a feature store, joined with a benchmark's records
and, optionally, a query store of their texts (:mod:`fastvqa.extract.text`),
and the collate function that pads its items into training batches."""

from __future__ import annotations

import warnings
from typing import Any, Optional, Sequence

import numpy as np
import torch
from torch.utils.data import Dataset

from fastvqa.errors import InputError
from fastvqa.extract.store import FeatureStore
from fastvqa.extract.targets import clip_saliency, saliency_steps, spans_to_cw, spans_to_steps
from fastvqa.extract.text import expected_text_sha256, record_id
from fastvqa.nn.masking import lengths_to_mask


def _open(store: Any) -> FeatureStore:
    return store if isinstance(store, FeatureStore) else FeatureStore(store)


class StoreDataset(Dataset):
    """Items of a video :class:`~fastvqa.extract.store.FeatureStore`, one per
    video or, with ``records``, one per benchmark record
    (:class:`fastvqa.data.QARecord`, joined on ``video_id``); with
    ``query_store``, each record's text features too (joined on
    :func:`~fastvqa.extract.text.record_id`). For a ``DataLoader`` with
    :meth:`collate`.

    Each item is a dict: ``video``, ``id`` (record id or None), ``record``,
    ``features`` ``[n, D]`` float32, ``start``/``end`` ``[n]`` float64
    seconds (end exclusive), ``gold`` ``[G, 2]`` int64 inclusive steps
    (:func:`~fastvqa.extract.targets.spans_to_steps`), ``gold_spans`` ``[G,
    2]`` float64 seconds, ``gold_cw`` ``[G, 2]`` float32
    (:func:`~fastvqa.extract.targets.spans_to_cw`), ``duration`` (the
    record's, else the store's last ``end``), ``saliency`` ``[n]`` float32
    and ``saliency_mask`` ``[n]`` bool
    (:func:`~fastvqa.extract.targets.saliency_steps`), and with a query
    store ``query`` ``[L, Dq]`` float32.

    Records whose video has no features, or (with a query store) whose query
    has none, are left out with one warning for each (a store built for part
    of a benchmark); when none is left, :class:`~fastvqa.errors.InputError`.
    A query store made to pair with another video recipe than the video
    store's is refused (one line naming both hashes); one whose entry was
    encoded from other text than the record's is an InputError on access.
    :attr:`recipe_hashes` gives ``{"video": hash, "query": hash or None}``
    for a training log. Features are read from disk (safetensors, no
    pickle), each file checked on its first read, and the items built are
    kept in memory up to ``cache_bytes`` (512 MiB; 0 keeps none), so that
    later epochs read nothing: an item returned is shared with the cache (a
    new dict of the same tensors), so change its tensors only by copying
    them. The dataset is cheap to send to DataLoader workers (each fills
    its own cache).

    >>> data = StoreDataset("qvh", records, query_store="qvh-text")  # doctest: +SKIP
    >>> batch = StoreDataset.collate([data[0], data[1]])  # doctest: +SKIP
    >>> batch["query"].shape, batch["gold_cw"].shape  # doctest: +SKIP
    (torch.Size([2, 14, 512]), torch.Size([2, 1, 2]))
    """

    def __init__(self, store: Any, records: Optional[Sequence[Any]] = None,
                 query_store: Any = None, *, cache_bytes: int = 512 << 20):
        from fastvqa import _checks

        self.cache_bytes = _checks.integer(cache_bytes, "StoreDataset", "cache_bytes", minimum=0)
        self._cache: dict = {}
        self._cached = 0
        self.store = _open(store)
        if self.store.kind != "video":
            raise InputError(f"{self.store.path} is a query store; give the video store first "
                             "and the query store as query_store")
        self.query_store = None if query_store is None else _open(query_store)
        if self.query_store is not None:
            self._check_query_store(records)
        self.recipe_hashes = {"video": self.store.header["recipe_hash"],
                              "query": None if self.query_store is None
                              else self.query_store.header["recipe_hash"]}
        videos = self.store.videos()
        if records is None:
            self.items = [(v, None, None) for v in videos]
        else:
            records = list(records)
            keep = self._joined(records, set(videos))
            self.items = [(r.video_id, r, clip_saliency(r)) for r in keep]
            if self.query_store is not None:   # what each query entry must be encoded from
                kind = self.query_store.header["recipe"].get("text", "question")
                self._texts = {record_id(r): expected_text_sha256(r, kind) for r in keep}
        if not self.items:
            raise InputError(f"{self.store.path}: the store holds no videos")

    def _check_query_store(self, records: Any) -> None:
        query, video = self.query_store, self.store
        if records is None:
            raise InputError(f"query store {query.path}: give the records its entries belong to")
        if query.kind != "text":
            raise InputError(f"{query.path} is a video store, not a query store (fastvqa extract "
                             "BENCHMARK --text-recipe NAME makes one)")
        pair, mine = query.header["recipe"].get("pair"), video.header["recipe_hash"]
        if pair is not None and pair != mine:
            raise InputError(f"query store {query.path} was made to pair with video recipe "
                             f"{pair}, but video store {video.path} holds recipe {mine} "
                             f"({video.header['recipe']['name']}); extract the queries again "
                             f"with --pair-with {video.path}")

    def _joined(self, records: list, have: set) -> list:
        """The records with features (and queries), with one warning per kind missing."""
        no_video = [r for r in records if r.video_id not in have]
        if len(no_video) == len(records):
            raise InputError(f"{self.store.path}: none of the {len(records)} records' videos "
                             "has features in the store")
        if no_video:
            warnings.warn(f"{len(no_video)} of {len(records)} records have no features in "
                          f"{self.store.path}; left out", stacklevel=3)
        keep = [r for r in records if r.video_id in have]
        if self.query_store is None:
            return keep
        queries = set(self.query_store.videos())
        no_query = [r for r in records if record_id(r) not in queries]
        if no_query:
            warnings.warn(f"{len(no_query)} of {len(records)} records have no query features in "
                          f"{self.query_store.path}; left out", stacklevel=3)
        keep = [r for r in keep if record_id(r) in queries]
        if not keep:
            raise InputError(f"{self.query_store.path}: none of the {len(records)} records has "
                             "both video features and query features")
        return keep

    def __len__(self) -> int:
        return len(self.items)

    def __getitem__(self, i: int) -> dict:
        hit = self._cache.get(i)
        if hit is not None:
            return dict(hit)
        item = self._item(i)
        size = sum(v.numel() * v.element_size() for v in item.values()
                   if isinstance(v, torch.Tensor))
        if self._cached + size <= self.cache_bytes:
            self._cache[i] = item
            self._cached += size
        return dict(item)

    def __getstate__(self) -> dict:
        # workers start with an empty cache of their own, not a copy of ours
        state = dict(self.__dict__)
        state["_cache"], state["_cached"] = {}, 0
        return state

    def _item(self, i: int) -> dict:
        video, record, saliency = self.items[i]
        got = self.store.load(video)
        spans = np.zeros((0, 2)) if record is None else np.asarray(record.spans, np.float64)
        duration = float(record.duration) if record is not None and record.duration is not None \
            else float(got.end[-1])
        scores, mask = saliency_steps(saliency, got.start, got.end)
        item = {"video": video, "record": record,
                "id": None if record is None else record_id(record),
                "features": torch.from_numpy(got.features.astype(np.float32, copy=False)),
                "start": torch.from_numpy(got.start), "end": torch.from_numpy(got.end),
                "gold": torch.from_numpy(spans_to_steps(spans, got.start, got.end)),
                "gold_spans": torch.from_numpy(spans.reshape(-1, 2)),
                "gold_cw": torch.from_numpy(spans_to_cw(spans, duration)),
                "duration": duration, "saliency": torch.from_numpy(scores),
                "saliency_mask": torch.from_numpy(mask)}
        if self.query_store is not None:
            item["query"] = self._query(record)
        return item

    def _query(self, record: Any) -> torch.Tensor:
        rid = record_id(record)
        got = self.query_store.load(rid)
        want = self._texts[rid]
        if want is None or got.record.get("text_sha256") != want:
            raise InputError(f"{self.query_store.features_path(rid)}: encoded from other text "
                             f"than record {rid!r} has now (another version of the benchmark's "
                             "file?); extract the queries again")
        return torch.from_numpy(got.features.astype(np.float32, copy=False))

    @staticmethod
    def collate(items: Sequence[dict]) -> dict:
        """A batch (``T``, ``G``, ``L`` the batch's largest step, span and
        query-token counts):

        - ``features`` ``[B, T, D]`` float32 (zeros after each video's end),
          ``lengths`` ``[B]`` int64, ``mask`` ``[B, T]`` bool (True on real
          steps), ``start``/``end`` ``[B, T]`` float64 seconds (NaN on padding);
        - with a query store: ``query`` ``[B, L, Dq]`` float32 (zeros on
          padding), ``query_lengths`` ``[B]`` int64, ``query_mask`` ``[B, L]``
          bool; absent without one;
        - ``gold`` ``[B, G, 2]`` int64 inclusive step indices (``(-1, -1)``
          on padding, and on a span that overlaps no step), ``gold_mask``
          ``[B, G]`` bool (True on the record's spans), ``gold_spans`` ``[B,
          G, 2]`` float64 seconds (NaN on padding), ``gold_cw`` ``[B, G, 2]``
          float32 (centre, width) / duration (0 on padding);
        - ``duration`` ``[B]`` float64 seconds;
        - ``saliency`` ``[B, T]`` float32 and ``saliency_mask`` ``[B, T]``
          bool (all False where the record has no per-clip saliency, and on
          padding);
        - ``videos``, ``records``, ``ids`` (record ids): lists.
        """
        b = len(items)
        lengths = torch.tensor([len(it["features"]) for it in items], dtype=torch.int64)
        steps = int(lengths.max()) if b else 0
        spans = max(len(it["gold"]) for it in items)
        feats = torch.zeros(b, steps, items[0]["features"].shape[1], dtype=torch.float32)
        start = torch.full((b, steps), float("nan"), dtype=torch.float64)
        end = start.clone()
        saliency = torch.zeros(b, steps, dtype=torch.float32)
        saliency_mask = torch.zeros(b, steps, dtype=torch.bool)
        gold = torch.full((b, spans, 2), -1, dtype=torch.int64)
        gold_mask = torch.zeros(b, spans, dtype=torch.bool)
        gold_spans = torch.full((b, spans, 2), float("nan"), dtype=torch.float64)
        gold_cw = torch.zeros(b, spans, 2, dtype=torch.float32)
        for i, it in enumerate(items):
            n, g = len(it["features"]), len(it["gold"])
            feats[i, :n], start[i, :n], end[i, :n] = it["features"], it["start"], it["end"]
            saliency[i, :n], saliency_mask[i, :n] = it["saliency"], it["saliency_mask"]
            gold[i, :g], gold_spans[i, :g], gold_cw[i, :g] = \
                it["gold"], it["gold_spans"], it["gold_cw"]
            gold_mask[i, :g] = True
        batch = {"features": feats, "lengths": lengths,
                 "mask": lengths_to_mask(lengths, b, steps, lengths.device),
                 "start": start, "end": end}
        if "query" in items[0]:
            batch.update(_pad_queries([it["query"] for it in items]))
        batch.update({"gold": gold, "gold_mask": gold_mask, "gold_spans": gold_spans,
                      "gold_cw": gold_cw,
                      "duration": torch.tensor([it["duration"] for it in items],
                                               dtype=torch.float64),
                      "saliency": saliency, "saliency_mask": saliency_mask,
                      "videos": [it["video"] for it in items],
                      "records": [it["record"] for it in items],
                      "ids": [it["id"] for it in items]})
        return batch


def _pad_queries(queries: list) -> dict:
    """``query`` ``[B, L, Dq]`` (zeros after each end), ``query_lengths``, ``query_mask``."""
    lengths = torch.tensor([len(q) for q in queries], dtype=torch.int64)
    longest = int(lengths.max())
    out = torch.zeros(len(queries), longest, queries[0].shape[1], dtype=torch.float32)
    for i, q in enumerate(queries):
        out[i, :len(q)] = q
    return {"query": out, "query_lengths": lengths,
            "query_mask": lengths_to_mask(lengths, len(queries), longest, lengths.device)}
