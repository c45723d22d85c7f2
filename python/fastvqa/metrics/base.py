# SPDX-License-Identifier: Apache-2.0
"""Stateful metric objects for training loops, in torchmetrics' style:
``update(preds, target)`` per batch, ``compute()``, ``reset()``, ``merge()``
and ``sync()`` across ``torch.distributed`` ranks.

Every metric here is exact: a benchmark's number is not a sum of per-batch
numbers (mAP ranks within a query, the WildQA mean is a float32 running
total, grounding sums are NumPy pairwise sums), so the state is the inputs
themselves, concatenated, as torchmetrics' "cat" states are, and
``compute()`` runs the one-shot function on them. The result is the one-shot
result bit for bit, per-question rows and keys in update order included.

Why not ``torchmetrics.Metric`` as the base: it needs torch at import time
(``import fastvqa.metrics`` must not import torch), and its states are
tensors, while these inputs are records, strings, mappings and ragged span
lists. torch is imported only by :meth:`Metric.sync`, and only when a process
group is initialised.
"""

from __future__ import annotations

import copy
import inspect
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar, Optional

import numpy as np

from fastvqa import _arrays
from fastvqa.errors import InputError, InputTypeError


class Metric:
    """Base of the stateful metrics: one subclass per metric function.

    ``Metric(**options)`` takes the function's keyword options (``mode=``,
    ``thresholds=``...), fixed for the whole evaluation. ``update(preds,
    target, **per_item)`` takes one batch in the function's own input
    convention (``per_item``: the keywords that hold one entry per question,
    such as ``pred_answers`` or ``keys``; give the same ones in every batch).
    ``compute()`` returns exactly what the function returns on all batches
    concatenated in update order (mappings merged, a key given twice is an
    error); with no batch it raises :class:`fastvqa.errors.InputError` (a
    score of nothing is not defined).
    The function's checks run on the concatenated inputs in ``compute()``
    (a subclass may check each batch in :meth:`_batch`, as
    :class:`~fastvqa.metrics.GroundedQA` does).

    Subclasses set ``function`` (the name in :mod:`fastvqa.metrics`) and
    ``per_item``; a subclass whose inputs need more than generic joining
    overrides :meth:`_batch` and :meth:`_join`.

    Example:
        >>> from fastvqa.metrics import IoUF1
        >>> a, b = IoUF1(mode="clean"), IoUF1(mode="clean")  # e.g. two workers' shares
        >>> a.update([[[0, 4]]], [[[0, 5]]])
        >>> b.update([[[10, 12], [20, 25]]], [[[10, 12]]])
        >>> a.merge(b).compute()
        MetricResult(iou_f1: IoU-F1=83.33)
    """

    function: ClassVar[str]
    per_item: ClassVar[tuple[str, ...]] = ()
    #: Whether a tuple ``target`` is several per-item inputs side by side
    #: (``(options, answers)``) rather than one entry per item.
    composite_target: ClassVar[bool] = False

    def __init__(self, **options: Any):
        fn = self._function()
        allowed = [name for name, p in inspect.signature(fn).parameters.items()
                   if p.kind is inspect.Parameter.KEYWORD_ONLY and name not in self.per_item]
        unknown = sorted(set(options) - set(allowed))
        if unknown:
            raise InputTypeError(
                f"{type(self).__name__}: unknown option(s) {', '.join(unknown)}; the options "
                f"are {', '.join(allowed) or 'none'} (per-question inputs "
                f"{', '.join(self.per_item) or 'none'} go to update())")
        self.options: dict[str, Any] = dict(options)
        self._batches: list[dict[str, Any]] = []

    # ---------------------------------------------------------------- API

    def update(self, preds: Any, target: Any, **per_item: Any) -> None:
        """Adds one batch: ``preds`` and ``target`` as the metric function
        takes them, plus its per-question keywords (``per_item``)."""
        name = type(self).__name__
        unknown = sorted(set(per_item) - set(self.per_item))
        if unknown:
            raise InputTypeError(
                f"{name}.update: unknown keyword(s) {', '.join(unknown)}; it takes "
                f"{', '.join(self.per_item) or 'only preds and target'} (options go to "
                f"{name}(...))")
        given = {k: v for k, v in per_item.items() if v is not None}
        if self._batches:
            before = set(self._batches[0]) - {"preds", "target"}
            if set(given) != before:
                raise InputError(
                    f"{name}.update: give the same per-question inputs in every batch; the "
                    f"first had {sorted(before) or 'none'}, this one {sorted(given) or 'none'}")
        self._batches.append(self._batch(preds, target, given))

    def compute(self):
        """The metric over every batch since construction or :meth:`reset`:
        the :class:`~fastvqa.metrics.MetricResult` of the one-shot function
        on the concatenated inputs."""
        if not self._batches:
            raise InputError(f"{type(self).__name__}.compute: nothing to score (no update() "
                             "since construction or reset())")
        joined = {k: self._join(k, [b[k] for b in self._batches]) for k in self._batches[0]}
        preds, target = joined.pop("preds"), joined.pop("target")
        return self._function()(preds, target, **joined, **self.options)

    def reset(self) -> None:
        """Forgets every batch; the options stay."""
        self._batches = []

    def merge(self, other: "Metric") -> "Metric":
        """Appends ``other``'s batches (after this one's) and returns self;
        ``other`` must be the same metric with the same options."""
        self._check_compatible(type(other), getattr(other, "options", None), "merge")
        # A kept batch is never changed (compute() builds new inputs), so the
        # batches themselves can be shared.
        self._batches.extend(other._batches)
        return self

    def sync(self, group: Optional[Any] = None) -> "Metric":
        """A new metric holding the batches of every rank of ``group`` (the
        default process group when None), in rank order, gathered with
        ``torch.distributed.all_gather_object``; every rank gets the same
        state, so ``m.sync().compute()`` gives every rank the one-shot result
        over all ranks' data. This metric is left as it was. Without an
        initialised process group (one process), a copy of this metric.
        Every rank must call it (a collective), with the same options."""
        out = copy.copy(self)
        out._batches = list(self._batches)  # batches are never changed: shared
        try:
            import torch.distributed as dist
        except ImportError:  # pragma: no cover - no torch: a single process
            return out
        if not (dist.is_available() and dist.is_initialized()):
            return out
        gathered: list[Any] = [None] * dist.get_world_size(group)
        dist.all_gather_object(gathered, (type(self).__name__, self.options, self._batches),
                               group=group)
        out._batches = []
        for rank, (cls, options, batches) in enumerate(gathered):
            if cls != type(self).__name__ or not _same(options, self.options):
                raise InputError(f"{type(self).__name__}.sync: rank {rank} holds {cls} with "
                                 f"options {options!r}, this rank {self.options!r}")
            out._batches.extend(batches)
        return out

    def __repr__(self) -> str:
        opts = ", ".join(f"{k}={v!r}" for k, v in self.options.items())
        return f"{type(self).__name__}({opts}; {len(self._batches)} batches)"

    # ---------------------------------------------------------------- hooks

    def _batch(self, preds: Any, target: Any, per_item: dict[str, Any]) -> dict[str, Any]:
        """One batch -> what the state keeps (copies, so that later changes
        to the caller's objects do not change it)."""
        out = {"preds": _items(preds, "preds", self), "target": _items(target, "target", self)}
        out.update({k: _items(v, k, self) for k, v in per_item.items()})
        return out

    def _join(self, name: str, values: list[Any]) -> Any:
        """The batches' values of one input -> the one-shot function's."""
        return _cat(values, name, self)

    # ---------------------------------------------------------------- helpers

    def _function(self):
        import fastvqa.metrics

        return getattr(fastvqa.metrics, self.function)

    def _check_compatible(self, cls: type, options: Any, op: str) -> None:
        if cls is not type(self):
            raise InputTypeError(f"{type(self).__name__}.{op}: cannot combine with "
                                 f"{cls.__name__}")
        if not _same(options, self.options):
            raise InputError(f"{type(self).__name__}.{op}: options differ ({options!r} vs "
                             f"{self.options!r}); the same evaluation needs the same options")


def _same(a: Any, b: Any) -> bool:
    try:
        return bool(a == b)
    except (TypeError, ValueError):  # e.g. arrays among the options
        return repr(a) == repr(b)


def _items(x: Any, name: str, metric: Metric) -> Any:
    """A batch input -> a copy the state keeps: a dict, a NumPy array (torch
    tensors are moved to host) or a list; the ``target`` of a metric with
    ``composite_target`` given as a tuple (``(options, answers)``) is a tuple
    of those. A tuple anywhere else is one entry per item, as a list is."""
    if _arrays.is_torch(x):
        x = x.detach().cpu().numpy()
    if isinstance(x, Mapping):
        return dict(x)
    if isinstance(x, tuple) and name == "target" and metric.composite_target:
        return tuple(_items(v, f"{name}[{i}]", metric) for i, v in enumerate(x))
    if isinstance(x, np.ndarray):
        if x.ndim == 0:
            raise InputError(f"{type(metric).__name__}.update: {name} must hold one entry per "
                             f"item, got a scalar")
        return x.copy()
    if isinstance(x, (str, bytes)) or not isinstance(x, Sequence):
        raise InputTypeError(f"{type(metric).__name__}.update: {name} must be a sequence or a "
                             f"mapping with one entry per item, got {type(x).__name__}")
    return list(x)


def _kind(x: Any) -> str:
    if isinstance(x, dict):
        return "a mapping"
    if isinstance(x, tuple):
        return "a tuple"
    return "a sequence"


def _cat(values: list[Any], name: str, metric: Metric) -> Any:
    """Concatenates one input over the batches, in order."""
    who = f"{type(metric).__name__}.compute"
    kinds = {_kind(v) for v in values}
    if len(kinds) > 1:
        raise InputError(f"{who}: {name} was {' in some batches and '.join(sorted(kinds))} in "
                         "others; give the same kind in every update()")
    kind = kinds.pop()
    if kind == "a mapping":
        out: dict = {}
        for v in values:
            for k, item in v.items():
                if k in out:
                    raise InputError(f"{who}: {name} key {k!r} was given in two update() calls")
                out[k] = item
        return out
    if kind == "a tuple":
        if len({len(v) for v in values}) > 1:
            raise InputError(f"{who}: {name} tuples of different lengths in different batches")
        return tuple(_cat([v[i] for v in values], f"{name}[{i}]", metric)
                     for i in range(len(values[0])))
    if all(isinstance(v, np.ndarray) for v in values):
        if len({v.shape[1:] for v in values}) == 1:
            return np.concatenate(values, axis=0)
    out_list: list = []
    for v in values:
        out_list.extend(v)
    return out_list
