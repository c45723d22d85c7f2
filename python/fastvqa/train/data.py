# SPDX-License-Identifier: Apache-2.0
"""The training run's data: the benchmark's records joined with the feature
stores (:class:`fastvqa.extract.StoreDataset`), and the order batches are
drawn in (:class:`GlobalBatchSampler`)."""

from __future__ import annotations

import math
from typing import Any, Iterator

import numpy as np
from torch.utils.data import Sampler

from fastvqa.errors import InputError


class GlobalBatchSampler(Sampler):
    """The batches one process of ``world`` trains on, epoch by epoch.

    Each epoch the ``n`` examples are permuted by a generator seeded with
    ``(seed, epoch)`` (the identity without ``shuffle``) and cut into global
    batches of ``world * batch_size``; process ``rank`` takes the ``rank``-th
    run of ``batch_size`` examples of each. So one process with batch size
    ``2b`` and two processes with ``b`` see the same global batches, and a
    resumed epoch repeats its order exactly. The last global batch may be
    short: it is padded, with examples from the start of the permutation, to
    a multiple of ``world`` and split evenly (the padding repeats examples only
    when ``world > 1``).

    >>> s = GlobalBatchSampler(5, 2, shuffle=False)
    >>> list(s)
    [[0, 1], [2, 3], [4]]
    >>> [list(GlobalBatchSampler(5, 1, world=2, rank=r, shuffle=False)) for r in (0, 1)]
    [[[0], [2], [4]], [[1], [3], [0]]]
    """

    def __init__(self, n: int, batch_size: int, *, world: int = 1, rank: int = 0,
                 seed: int = 0, shuffle: bool = True):
        if n < 1:
            raise InputError("GlobalBatchSampler: no examples to draw batches from")
        if batch_size < 1 or world < 1 or not 0 <= rank < world:
            raise InputError(f"GlobalBatchSampler: batch_size {batch_size}, world {world}, "
                             f"rank {rank} are not a valid split")
        self.n, self.batch_size, self.world, self.rank = n, batch_size, world, rank
        self.seed, self.shuffle, self.epoch = seed, shuffle, 0

    def set_epoch(self, epoch: int) -> None:
        """The epoch whose order :meth:`__iter__` gives next."""
        self.epoch = int(epoch)

    def __len__(self) -> int:
        return math.ceil(self.n / (self.batch_size * self.world))

    def __iter__(self) -> Iterator[list]:
        order = (np.random.default_rng([self.seed, self.epoch]).permutation(self.n)
                 if self.shuffle else np.arange(self.n))
        size = self.batch_size * self.world
        for k in range(len(self)):
            chunk = order[k * size:(k + 1) * size]
            if len(chunk) < size:
                short = (-len(chunk)) % self.world
                chunk = np.concatenate([chunk, np.resize(order, short)])
            per = len(chunk) // self.world
            yield chunk[self.rank * per:(self.rank + 1) * per].tolist()


def load_split(benchmark: str, path: str, split: str) -> list:
    """The benchmark's records of ``split`` from ``path``
    (:func:`fastvqa.data.load_benchmark`); the records need spans."""
    from fastvqa.data.benchmarks import load_benchmark

    records = load_benchmark(benchmark, path, split)
    spans = [r for r in records if len(r.spans) > 0]
    if not spans:
        raise InputError(f"{path}: none of the {len(records)} {benchmark} records has a "
                         "ground-truth span to train or score grounding on")
    return spans


def make_dataset(config: Any, path: str, split: str) -> Any:
    """The :class:`~fastvqa.extract.StoreDataset` of ``path``'s records
    joined with the config's video and query stores."""
    from fastvqa.extract.dataset import StoreDataset

    records = load_split(config.benchmark, path, split)
    return StoreDataset(config.data.video_store, records, query_store=config.data.query_store)


__all__ = ["GlobalBatchSampler", "load_split", "make_dataset"]
