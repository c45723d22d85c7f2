# SPDX-License-Identifier: Apache-2.0
"""Multiple-choice options from candidate pools, with the correct answer's
position balanced over a dataset, and a check of that balance.

- :func:`build_options` follows a :class:`Recipe` (how many wrong options
  from which pool). :data:`DEVEQA_RECIPE` and :data:`SOKBENCH_RECIPE` are the
  two benchmarks' rules (deveqa.md §1.2, sokbench.md §1.4);
  :func:`same_category_pools` builds SOK-Bench's pools.
- :func:`position_balance` counts the correct positions and tests them
  against the uniform distribution (chi-square).
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Optional, Sequence

import numpy as np

from fastvqa.retrieval.distractors import normalize_option


@dataclass(frozen=True)
class Recipe:
    """Where the wrong options come from.

    ``steps``: ordered ``(pool_name, count)`` pairs. ``fallback``: pool names
    tried in order when a step's pool has too few usable candidates; the
    shortfall is drawn from them.
    """

    steps: tuple[tuple[str, int], ...]
    fallback: tuple[str, ...] = ()

    def __post_init__(self):
        steps = tuple(tuple(s) for s in self.steps)
        for s in steps:
            if len(s) != 2 or not isinstance(s[0], str) or isinstance(s[1], bool) \
                    or not isinstance(s[1], (int, np.integer)) or s[1] < 0:
                raise ValueError(f"Recipe: each step must be (pool_name: str, count: int >= 0), "
                                 f"got {s!r}")
        if isinstance(self.fallback, str) or not all(isinstance(f, str) for f in self.fallback):
            raise ValueError(f"Recipe: fallback must be a tuple of pool names, got "
                             f"{self.fallback!r}")
        object.__setattr__(self, "steps", tuple((name, int(c)) for name, c in steps))
        object.__setattr__(self, "fallback", tuple(self.fallback))

    @property
    def n_distractors(self) -> int:
        return sum(c for _, c in self.steps)

    @property
    def pool_names(self) -> tuple[str, ...]:
        names = [n for n, _ in self.steps] + list(self.fallback)
        return tuple(dict.fromkeys(names))


#: DeVE-QA (deveqa.md §1.2): 2 answers that fit the video at another time, 1
#: that fits the segment but not the question, 1 drawn from the answers of the
#: 10 most similar questions; 5 options.
DEVEQA_RECIPE = Recipe((("other_time", 2), ("segment_wrong", 1), ("similar_top10", 1)))
#: SOK-Bench (sokbench.md §1.4): 3 of the same knowledge category about other
#: objects of the same video (:func:`same_category_pools`); 4 options.
SOKBENCH_RECIPE = Recipe((("same_category", 3),))


@dataclass
class OptionSet:
    """``options[i]``: item i's options; ``answer[i]`` (int64): the index of
    its correct option; ``sources[i][j]``: the pool option j came from
    (``"correct"`` for the correct one); ``items``: the input index of each
    row (all items unless ``on_short="skip"`` left some out); ``skipped``:
    the input indices left out."""

    options: list[list[str]]
    answer: np.ndarray
    sources: list[list[str]]
    items: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    skipped: list[int] = field(default_factory=list)


def _positions(n_items: int, n_options: int, rng: np.random.Generator) -> np.ndarray:
    """A shuffle of 0, 1, .., n_options-1 repeated to n_items: every position
    is used floor or ceil of n_items / n_options times."""
    reps = -(-n_items // n_options) if n_items else 0
    return rng.permutation(np.tile(np.arange(n_options, dtype=np.int64), reps)[:n_items])


def build_options(correct: Sequence[str], pools: Sequence[Mapping[str, Sequence[str]]],
                  recipe: Recipe, n_options: Optional[int] = None, seed: int = 0, *,
                  similarity: Optional[Callable[[str, str], float]] = None,
                  similarity_threshold: float = 0.8, on_short: str = "error") -> OptionSet:
    """Options for N items: the correct answer plus wrong ones drawn by ``recipe``.

    Args:
        correct: N correct answers (strings).
        pools: N dicts pool name -> candidate strings. A recipe pool missing
            from an item's dict counts as empty for that item; a recipe pool
            missing from every item is an error (a misspelt name).
        recipe: the steps (and fallbacks) to follow, in order.
        n_options: options per item, 2 .. ``1 + recipe.n_distractors``
            (default the maximum). When smaller, the steps are followed in
            order until ``n_options - 1`` wrong options are drawn.
        seed: seeds ``np.random.default_rng``; the same inputs and seed give
            the same OptionSet.
        similarity: optional ``similarity(a, b) -> float``; a candidate with
            ``similarity >= similarity_threshold`` to the correct answer or to
            an option already chosen is skipped.
        on_short: ``"error"`` (default): a ValueError naming the first item
            that cannot be filled and the pool(s) that ran short; ``"skip"``:
            such items are left out (listed in ``OptionSet.skipped``).

    Drawing: within a pool, candidates are taken in a uniformly random order
    (a seeded permutation), skipping those equal (:func:`normalize_option`)
    to the correct answer or to an option already chosen, or too similar; a
    step short of candidates takes the rest from ``recipe.fallback`` in
    order. The wrong options of an item are then shuffled, and the correct
    one is inserted at its position: positions are a seeded shuffle of
    ``0, .., n_options-1`` repeated over the items, so their counts differ by
    at most 1.
    """
    correct = list(correct)
    pools = list(pools)
    if len(pools) != len(correct):
        raise ValueError(f"build_options: {len(pools)} pools for {len(correct)} correct answers")
    if not isinstance(recipe, Recipe):
        raise TypeError(f"build_options: recipe must be a Recipe, got {type(recipe).__name__}")
    if on_short not in ("error", "skip"):
        raise ValueError(f"build_options: on_short must be 'error' or 'skip', got {on_short!r}")
    total = 1 + recipe.n_distractors
    n_options = total if n_options is None else n_options
    if isinstance(n_options, bool) or not isinstance(n_options, (int, np.integer)) \
            or not 2 <= n_options <= total:
        raise ValueError(f"build_options: n_options must be an integer in [2, {total}] for this "
                         f"recipe, got {n_options!r}")
    for i, (c, p) in enumerate(zip(correct, pools)):
        if not isinstance(c, str):
            raise TypeError(f"build_options: correct[{i}] must be a string, got "
                            f"{type(c).__name__}")
        if not isinstance(p, Mapping):
            raise TypeError(f"build_options: pools[{i}] must be a dict pool name -> candidates, "
                            f"got {type(p).__name__}")
    if correct:
        seen = set().union(*(p.keys() for p in pools))
        missing = [name for name in recipe.pool_names if name not in seen]
        if missing:
            raise ValueError(f"build_options: unknown pool(s) {missing}: no item has them "
                             f"(items have {sorted(seen)})")
    rng = np.random.default_rng(seed)
    drawn: list[tuple[list[str], list[str]]] = []
    items, skipped = [], []
    for i, (c, p) in enumerate(zip(correct, pools)):
        got = _draw_item(c, p, recipe, n_options - 1, rng, similarity, similarity_threshold)
        if isinstance(got, str):  # the reason it could not be filled
            if on_short == "error":
                raise ValueError(f"build_options: item {i} cannot be filled: {got}")
            skipped.append(i)
            continue
        drawn.append(got)
        items.append(i)
    position = _positions(len(drawn), n_options, rng)
    options, sources = [], []
    for item, (texts, names), pos in zip(items, drawn, position):
        order = rng.permutation(len(texts))
        texts = [texts[j] for j in order]
        names = [names[j] for j in order]
        texts.insert(int(pos), correct[item])
        names.insert(int(pos), "correct")
        options.append(texts)
        sources.append(names)
    return OptionSet(options, position.astype(np.int64), sources,
                     np.asarray(items, dtype=np.int64), skipped)


def _draw_item(correct: str, pools: Mapping[str, Sequence[str]], recipe: Recipe, need: int,
               rng: np.random.Generator, similarity, threshold: float):
    """(texts, pool names) of ``need`` wrong options, or a string saying which
    pool(s) ran short."""
    taken_norm = {normalize_option(correct)}
    taken = [correct]
    texts: list[str] = []
    names: list[str] = []
    order_cache: dict[str, deque] = {}

    def usable(cand: Any) -> bool:
        if not isinstance(cand, str):
            raise TypeError(f"build_options: pool candidates must be strings, got "
                            f"{type(cand).__name__}")
        if normalize_option(cand) in taken_norm:
            return False
        return similarity is None or all(similarity(cand, t) < threshold for t in taken)

    def take(pool: str, count: int) -> int:
        if pool not in order_cache:
            cands = pools.get(pool, ())
            if isinstance(cands, str):
                raise TypeError(f"build_options: pool {pool!r} must be a list of strings, "
                                "not a single string")
            cands = list(cands)
            order_cache[pool] = deque(cands[j] for j in rng.permutation(len(cands)))
        queue, got = order_cache[pool], 0
        while got < count and queue:
            cand = queue.popleft()
            if usable(cand):
                taken_norm.add(normalize_option(cand))
                taken.append(cand)
                texts.append(cand)
                names.append(pool)
                got += 1
        return got

    short = []
    for pool, count in recipe.steps:
        count = min(count, need - len(texts))
        if count <= 0:
            break
        missing = count - take(pool, count)
        if missing:
            short.append(pool)
            for fb in recipe.fallback:
                missing -= take(fb, missing)
                if not missing:
                    break
        if missing:
            fb = f" (fallback {list(recipe.fallback)} also ran out)" if recipe.fallback else ""
            return (f"pool {pool!r} is {missing} usable candidate(s) short of {count}{fb}; "
                    f"short pools: {short}")
    return texts, names


@dataclass
class PositionBalance:
    """How often the correct option sits at each position, and a chi-square
    test of uniformity (``uniform``: p-value >= ``alpha``)."""

    counts: np.ndarray
    chi2: float
    dof: int
    p_value: float
    alpha: float
    uniform: bool

    def format(self) -> str:
        """One line, e.g. ``positions A=1113 B=1105 ... chi2=...``."""
        letters = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
        cells = " ".join(f"{letters[i] if i < 26 else i}={c}" for i, c in enumerate(self.counts))
        verdict = "uniform" if self.uniform else "NOT uniform"
        return (f"correct position: {cells} | chi2={self.chi2:.3f} (dof {self.dof}) "
                f"p={self.p_value:.4g} -> {verdict} at alpha={self.alpha:g}")


def position_balance(answer: Any, n_options: int, alpha: float = 0.01) -> PositionBalance:
    """Counts of the correct position (``answer``: (N,) ints in
    ``[0, n_options)``) and Pearson's chi-square test against the uniform
    distribution: statistic ``sum((c - N/n)^2 / (N/n))``, n - 1 degrees of
    freedom, p-value from ``scipy.stats.chi2.sf``. ``uniform`` is
    ``p_value >= alpha``. Needs scipy (it comes with scikit-learn).
    """
    try:
        from scipy.stats import chi2 as chi2_dist
    except ImportError as err:
        raise ImportError("position_balance needs scipy: pip install scipy "
                          "(or pip install 'fastvqa[text]')") from err
    a = np.asarray(answer)
    if isinstance(n_options, bool) or not isinstance(n_options, (int, np.integer)) \
            or n_options < 2:
        raise ValueError(f"position_balance: n_options must be an integer >= 2, got {n_options!r}")
    if a.ndim != 1 or (a.size and not np.issubdtype(a.dtype, np.integer)):
        raise ValueError(f"position_balance: answer must be a 1-D integer array, got shape "
                         f"{a.shape} dtype {a.dtype}")
    if a.size == 0:
        raise ValueError("position_balance: no items (answer is empty)")
    if a.min() < 0 or a.max() >= n_options:
        raise ValueError(f"position_balance: answer values must be in [0, {n_options}), got "
                         f"{int(a.min())}..{int(a.max())}")
    if not 0.0 < alpha < 1.0:
        raise ValueError(f"position_balance: alpha must be in (0, 1), got {alpha}")
    counts = np.bincount(a.astype(np.int64), minlength=n_options)
    expected = a.size / n_options
    stat = float(((counts - expected) ** 2).sum() / expected)
    dof = n_options - 1
    p = float(chi2_dist.sf(stat, dof))
    return PositionBalance(counts, stat, dof, p, float(alpha), p >= alpha)


def same_category_pools(items: Sequence[Mapping[str, Any]], category_key: str, object_key: str,
                        scope_key: Optional[str] = "video_id", *, text_key: str = "answer",
                        pool_name: str = "same_category") -> list[dict[str, list[str]]]:
    """SOK-Bench's rule (sokbench.md §1.4): item i's wrong-option candidates
    are the texts of the other items with the same ``category_key`` about a
    different ``object_key``, within the same ``scope_key`` (default the same
    video; None: the whole list). Returns ``[{pool_name: [texts]}]`` in item
    order, candidates in list order. Items are dicts; missing keys raise a
    KeyError naming the item.
    """
    groups: dict[tuple, list[int]] = {}
    keys = []
    for i, it in enumerate(items):
        try:
            key = (it[scope_key] if scope_key is not None else None, it[category_key])
            obj, text = it[object_key], it[text_key]
        except KeyError as err:
            raise KeyError(f"same_category_pools: item {i} has no field {err.args[0]!r}") from None
        if not isinstance(text, str):
            raise TypeError(f"same_category_pools: item {i} field {text_key!r} must be a string")
        keys.append((key, obj))
        groups.setdefault(key, []).append(i)
    out = []
    for i, (key, obj) in enumerate(keys):
        out.append({pool_name: [items[j][text_key] for j in groups[key] if keys[j][1] != obj]})
    return out
