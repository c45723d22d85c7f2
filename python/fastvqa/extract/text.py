# SPDX-License-Identifier: Apache-2.0
"""Query stores: a benchmark's questions through a text encoder, one store
entry per record (``fastvqa extract BENCHMARK --text-recipe NAME --gt PATH``).

A query store is a :class:`~fastvqa.extract.store.FeatureStore` whose header
says ``"kind": "text"`` and names the video recipe it pairs with (``pair``).
Entry ``record_id(record)`` (the record's ``key``, ``<video_id>_<question_id>``)
holds ``features [n, D]`` and ``start``/``end [n]`` in **token positions**
(float64 counts, end exclusive): token row ``t`` of a ``tokens`` recipe is
``[t, t + 1)``; the pooled row of text ``k`` covers the positions of the
tokens the model read for it. With several texts per record (one per answer
option) their positions follow one another, in option order. Each entry's
record holds ``texts`` (how many), ``text_tokens`` (positions per text) and
``text_sha256`` (of the encoded texts), so a store never silently serves
features of a question that has since changed.

Runs resume (done records are skipped), shard (``shard="i/n"`` takes every
n-th group of ``recipe.batch`` records in id order, from the i-th), and
record failures (a record without question text, or without options for a
``question+option`` recipe) as video runs do.
"""

from __future__ import annotations

import hashlib
import json
import sys
import time
from pathlib import Path
from typing import Any, NamedTuple, Optional, Sequence, Union

import numpy as np

from fastvqa.errors import InputError
from fastvqa.extract.recipes import TextRecipe, get_text_recipe, video_recipe_name
from fastvqa.extract.steps import checked_width
from fastvqa.extract.store import FeatureStore, StoreError, _check_id


def record_id(record: Any) -> str:
    """The id of a record's query-store entry: ``record.key``
    (``"<video_id>_<question_id>"``, unique within a benchmark's file).

    >>> from fastvqa.data import QARecord
    >>> record_id(QARecord("vid7", "3", "what falls?"))
    'vid7_3'
    """
    return record.key


def record_texts(record: Any, text: str) -> list:
    """The texts a recipe's ``text`` encodes of ``record``:
    ``["<question>"]`` or ``["<question> <option>", ...]``; an
    :class:`~fastvqa.errors.InputError` when there is none to encode.

    >>> from fastvqa.data import QARecord
    >>> record_texts(QARecord("v", "1", "Why?", ["rain", "sun"]), "question+option")
    ['Why? rain', 'Why? sun']
    """
    question = record.question if isinstance(record.question, str) else ""
    if not question.strip():
        raise InputError("no question text to encode")
    if text == "question":
        return [question]
    options = list(record.options or [])
    if not options:
        raise InputError("no answer options (a question+option recipe encodes one text per "
                         "option)")
    if not all(isinstance(o, str) and o.strip() for o in options):
        raise InputError("an answer option is empty or not text")
    return [f"{question} {o}" for o in options]


def texts_sha256(texts: Sequence[str]) -> str:
    """sha256 (hex) of the texts as a JSON list (UTF-8), as entries record it."""
    data = json.dumps(list(texts), ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(data.encode("utf-8")).hexdigest()


class TextSummary(NamedTuple):
    """What :func:`run_text` did: records ``written`` and ``failed`` by this
    run, ``existing`` (already in the store), ``skipped_failed`` (failed
    before, not retried), ``rows`` (feature rows written), ``seconds``."""

    store: Path
    written: int
    existing: int
    failed: int
    skipped_failed: int
    rows: int
    seconds: float

    def line(self) -> str:
        """One line for a log: counts and throughput."""
        rate = self.written / self.seconds if self.seconds > 0 else 0.0
        return (f"{self.written} records encoded ({self.rows} feature rows) in "
                f"{self.seconds:.1f} s: {rate:.1f} records/s; {self.existing} already in the "
                f"store, {self.failed} failed, {self.skipped_failed} skipped as failed before")


def run_text(records: Sequence[Any], recipe: Union[str, TextRecipe], *, out: Any,
             model: Any = None, model_name: Optional[str] = None, pair_with: Any = None,
             benchmark: Optional[str] = None, shard: Union[str, tuple, None] = None,
             retry_failed: bool = False, repair: bool = False,
             progress: Optional[bool] = None, device: Any = "cpu") -> TextSummary:
    """Encode the records' texts with ``recipe`` into the query store ``out``.

    Args:
        records: :class:`fastvqa.data.QARecord` s (any loader's); their ids
            (:func:`record_id`) must be distinct and able to name a file.
        recipe: a :class:`~fastvqa.extract.recipes.TextRecipe` or a built-in
            name (``"question-clip"``).
        out: the store folder: made if missing; an existing one must be of
            the same recipe (pairing included) and model.
        model: a spec, CLIP encoder or function
            (:func:`~fastvqa.extract.text_models.resolve_text_model`);
            ``None``: the recipe's.
        model_name: the name recorded for a function given from Python.
        pair_with: a video store (path or
            :class:`~fastvqa.extract.store.FeatureStore`): the recipe's
            ``pair`` becomes that store's recipe hash.
        benchmark: recorded in every entry, when given.
        shard: ``"i/n"``: every n-th group of ``recipe.batch`` records (id
            order), from the i-th; default torchrun's RANK/WORLD_SIZE.
        retry_failed: encode again the records recorded as failed.
        repair: a damaged or foreign entry, or one encoded from other text
            than the record's now, is moved into ``STORE/quarantine/`` and
            encoded again (without: a StoreError before any work).
        progress: a bar on a terminal (None), off one a line every 30 s.
        device: where a CLIP model runs (``"cpu"``, ``"cuda[:k]"``).

    Returns:
        :class:`TextSummary`. A model error, or a model whose output width
        changes, stops the run; what was written stays complete.

    >>> import tempfile
    >>> from fastvqa.data import QARecord
    >>> words = lambda texts: [np.ones((len(t.split()), 2)) for t in texts]
    >>> with tempfile.TemporaryDirectory() as d:
    ...     s = run_text([QARecord("v", "1", "a red cup")], "question-clip", out=d + "/q",
    ...                  model=words, model_name="words", progress=False)
    ...     got = FeatureStore(d + "/q").load("v_1")
    >>> s.written, got.features.shape, got.start.tolist(), got.end.tolist()
    (1, (3, 2), [0.0, 1.0, 2.0], [1.0, 2.0, 3.0])
    """
    from fastvqa import __version__
    from fastvqa._progress import Progress
    from fastvqa._shards import parse_shard, shard_of
    from fastvqa.extract.engine import _model_device
    from fastvqa.extract.models import weights_sha256
    from fastvqa.extract.text_models import resolve_text_model

    began = time.perf_counter()
    recipe = get_text_recipe(recipe)
    recipe, pair = _paired(recipe, pair_with)
    device = _model_device(device)
    groups = shard_of(_groups(records, recipe.batch), parse_shard(shard))
    resolved = resolve_text_model(recipe.model if model is None else model, model_name, device)
    if resolved.weights == "random":
        print(f"warning: text model {resolved.name} has RANDOM weights (no checkpoint given): "
              "its features carry no learned meaning; give open_clip:ARCH@CHECKPOINT or "
              "hf:FOLDER for real ones (docs/extract.md)", file=sys.stderr, flush=True)
    header = {"kind": "text", "recipe": recipe.to_dict(), "recipe_hash": recipe.hash,
              "model": resolved.name, "model_sha256": resolved.module_sha256 or weights_sha256(resolved.module),
              "weights": resolved.weights, "fastvqa": __version__, "pair": pair}
    store = FeatureStore.create(out, header)

    todo, counts = _plan(store, groups, recipe, retry_failed, repair)
    store.remove_partials(rid for _, ids in todo for rid in ids)
    base = {"recipe": recipe.name, "recipe_hash": recipe.hash, "model": resolved.name,
            "fastvqa": __version__, "device": device}
    if benchmark is not None:
        base["benchmark"] = benchmark
    writer = _Writer(store, recipe, resolved, base)
    bar = Progress(sum(len(ids) for _, ids in todo), progress is not False, desc="encoding",
                   unit="record", force=progress is True)
    try:
        for group, ids in todo:
            writer(group, ids)
            bar.update(len(ids))
    finally:
        bar.close()
    return TextSummary(store.path, writer.written, counts["ok"], writer.failed,
                       counts["failed"], writer.rows, time.perf_counter() - began)


def _paired(recipe: TextRecipe, pair_with: Any) -> tuple:
    """The recipe paired with the video store ``pair_with`` (when given), and
    the header's ``pair``: the video recipe's name and hash, or None."""
    if pair_with is None:
        name = video_recipe_name(recipe.pair)
    else:
        video = pair_with if isinstance(pair_with, FeatureStore) else FeatureStore(pair_with)
        if video.kind != "video":
            raise StoreError(f"{video.path} is a query store; pair a query store with the "
                             "video store its features go with")
        recipe = recipe.replace(pair=video.header["recipe_hash"])
        name = video.header["recipe"]["name"]
    pair = None if recipe.pair is None else {"video_recipe": name,
                                             "video_recipe_hash": recipe.pair}
    return recipe, pair


def _groups(records: Sequence[Any], size: int) -> list:
    """The records in id order, in groups of ``size``; ids checked first."""
    by_id: dict = {}
    for r in records:
        rid = record_id(r)
        _check_id(rid)
        if rid in by_id:
            raise InputError(f"two records have the id {rid!r}; a query store keys its entries "
                             "by record id")
        by_id[rid] = r
    ids = sorted(by_id)
    return [[by_id[i] for i in ids[k:k + size]] for k in range(0, len(ids), size)]


def _plan(store: FeatureStore, groups: list, recipe: TextRecipe, retry_failed: bool,
          repair: bool) -> tuple:
    """``([(group, ids to write)], {"ok": n, "failed": n})`` from what the store holds."""
    from fastvqa.extract.engine import _checked_record

    todo, counts = [], {"ok": 0, "failed": 0}
    for group in groups:
        ids = []
        for r in group:
            rid = record_id(r)
            rec = _checked_record(store, rid, repair)
            if rec is not None and rec["status"] == "ok" and not _same_text(rec, r, recipe):
                path = store.features_path(rid)
                if not repair:
                    raise StoreError(f"{path}: encoded from other text than record {rid!r} has "
                                     "now (was the --gt file changed?); run again with --repair "
                                     "to move it aside and encode it again, or use a new --out")
                print(f"extract: stale entry moved to quarantine: {store.quarantine(path)}",
                      file=sys.stderr, flush=True)
                rec = store.record(rid)  # a failure record may be left
            if rec is None or (rec["status"] == "failed" and retry_failed):
                ids.append(rid)
            else:
                counts["ok" if rec["status"] == "ok" else "failed"] += 1
        if ids:
            todo.append((group, ids))
    return todo, counts


def expected_text_sha256(record: Any, text: str) -> Optional[str]:
    """The ``text_sha256`` an entry encoded from ``record``'s current texts
    (``text``: a recipe's text kind) holds; None when the record has no such
    texts (every entry then differs from it)."""
    try:
        return texts_sha256(record_texts(record, text))
    except InputError:
        return None


def _same_text(entry: dict, record: Any, recipe: TextRecipe) -> bool:
    want = expected_text_sha256(record, recipe.text)
    return want is not None and entry.get("text_sha256") == want


class _Writer:
    """Encodes one group of records (all whose texts can be encoded, so a
    record's numbers never depend on what was done before) and writes the
    entries of ``ids``."""

    def __init__(self, store: FeatureStore, recipe: TextRecipe, model: Any, base: dict):
        from fastvqa.extract.steps import _stored_width

        self.store, self.recipe, self.model, self.base = store, recipe, model, base
        self.width = _stored_width(store)
        self.written = self.failed = self.rows = 0

    def __call__(self, group: list, ids: list) -> None:
        texts, errors = {}, {}
        for r in group:
            try:
                texts[record_id(r)] = record_texts(r, self.recipe.text)
            except InputError as err:
                errors[record_id(r)] = str(err)
        flat = [t for ts in texts.values() for t in ts]
        outputs = iter(self.model.encode(flat, self.recipe.output, self.recipe.max_tokens)
                       if flat else [])
        parts = {rid: [next(outputs) for _ in ts] for rid, ts in texts.items()}
        for r in group:
            rid = record_id(r)
            if rid not in ids:
                continue
            record = {**self.base, "video_id": r.video_id, "question_id": r.question_id}
            entry = None if rid in errors else self._entry(rid, parts[rid])
            if isinstance(entry, str) or entry is None:
                self.store.write_failure(rid, record, errors.get(rid) or entry)
                self.failed += 1
                continue
            feats, start, end, tokens = entry
            self.store.write(rid, feats, start, end,
                             {**record, "texts": len(tokens), "text_tokens": tokens,
                              "text_sha256": texts_sha256(texts[rid])})
            self.written += 1
            self.rows += len(feats)

    def _entry(self, rid: str, parts: list) -> Any:
        """``(features, start, end, positions per text)``, or the error."""
        if any(len(rows) == 0 for rows, _ in parts):
            return "the model gave no rows for a text"
        feats = np.concatenate([rows for rows, _ in parts]).astype(self.recipe.dtype)
        if not np.isfinite(feats).all():
            return f"the model gave values that are not finite in {self.recipe.dtype}"
        self.width = checked_width(self.width, feats, self.model.name, "row",
                                   f"record {rid!r}", "records")
        steps = np.concatenate([np.full(len(rows), n, np.float64) for rows, n in parts])
        end = np.cumsum(steps)
        return feats, end - steps, end, [int(len(rows) * n) for rows, n in parts]
