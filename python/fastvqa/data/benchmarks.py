# SPDX-License-Identifier: Apache-2.0
"""The benchmark registry: each benchmark's name, splits, folder layout and
loader as data (:data:`BENCHMARKS`), and :func:`load_benchmark`, the one path
from a benchmark's name, a file or folder and a split to its records.

Every command reads its benchmark names, ``--split`` checks, folder errors
and ``--split``/``--gt`` help from here, so adding a benchmark adds its
entry here and its loader in :mod:`fastvqa.data`
(``docs/adding_a_benchmark.md``).

>>> [name for name, b in BENCHMARKS.items() if b.splits]
['nextgqa', 'wildqa']
>>> BENCHMARKS["deveqa"].split_files("dev")
('dev.json', 'dev.jsonl')
>>> check_split("wildqa", "raw_dev")
'raw_dev'
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable, Optional, Union

from fastvqa import _checks
from fastvqa.errors import InputError

if TYPE_CHECKING:
    from fastvqa.data.record import QARecord

PathLike = Union[str, Path]


@dataclass(frozen=True)
class BenchmarkInfo:
    """One benchmark, as every command reads it.

    >>> info = BENCHMARKS["wildqa"]
    >>> info.loader, info.has_splits, info.split_files("dev")
    ('load_wildqa', True, ('dev.json',))
    """

    #: The command-line name (``fastvqa eval <name>``, ``fastvqa stats <name>``, ...).
    name: str
    #: ``fastvqa.evaluation.<module>``, which registers its evaluation(s) and
    #: baselines at import.
    module: str
    #: The loader's name in :mod:`fastvqa.data`, called as
    #: ``loader(path, **options)``.
    loader: str
    #: What a folder of it holds (help and error messages).
    folder: str
    #: What ``--gt`` may be (``fastvqa eval``/``baseline`` help).
    gt: str
    #: The split names its folders hold, where the benchmark fixes them;
    #: None: any file stem.
    splits: Optional[tuple[str, ...]] = None
    #: A folder's file for a split: the first of these names it holds
    #: (``{split}`` stands for the split). Empty: the loader is given the
    #: folder itself (and ``split=`` where :attr:`splits` is set).
    files: tuple[str, ...] = ()
    #: The split a training set is read from beside the evaluated one
    #: (``fastvqa audit --train``, WildQA's answer baselines), where one is fixed.
    train_split: Optional[str] = None
    #: Whether its records hold answers (``fastvqa distractors`` mines them,
    #: ``fastvqa audit`` scores them).
    answers: bool = True

    @property
    def has_splits(self) -> bool:
        """Whether one folder of it holds several splits, chosen by name."""
        return self.splits is not None or any("{split}" in f for f in self.files)

    def split_files(self, split: str) -> tuple[str, ...]:
        """The names :attr:`files` gives for ``split``, in the order tried."""
        return tuple(f.replace("{split}", split) for f in self.files)


BENCHMARKS: dict[str, BenchmarkInfo] = {b.name: b for b in (
    BenchmarkInfo("deveqa", "nextgqa", "load_deveqa",
                  "<split>.json or <split>.jsonl",
                  "a DeVE-QA annotation file (a JSON list, a JSON object {qid: record} or "
                  ".jsonl), or a folder holding <split>.json or <split>.jsonl",
                  files=("{split}.json", "{split}.jsonl")),
    BenchmarkInfo("dvd", "dvd", "load_dvd",
                  "DVD dialogue .json files (every one below it, except metadata.json)",
                  "a DVD dialogue JSON file, or a folder of them (every *.json below it but "
                  "metadata.json, in sorted path order)"),
    BenchmarkInfo("nextgqa", "nextgqa", "load_nextgqa",
                  "gsub_<split>.json (and <split>.csv)",
                  "a folder with gsub_<split>.json (and <split>.csv), or a gsub JSON alone",
                  splits=("test", "val"), train_split="val"),
    BenchmarkInfo("qvhighlights", "qvhighlights", "load_qvhighlights",
                  "highlight_<split>_release.jsonl or <split>.jsonl",
                  "the QVHighlights ground-truth JSON Lines file (or a JSON array of its "
                  "objects), or the folder holding it as released",
                  files=("highlight_{split}_release.jsonl", "{split}.jsonl"), answers=False),
    BenchmarkInfo("sokbench", "sokbench", "load_sokbench",
                  "SOK-Bench question .json files (every one in it, in name order)",
                  "a SOK-Bench question JSON file, or a folder of them (every *.json in it, "
                  "in sorted order; question ids then start with the file name)"),
    BenchmarkInfo("wildqa", "wildqa", "load_wildqa",
                  "<split>.json",
                  "a WildQA split file (test.json, dev.json, raw_*.json) or the folder "
                  "holding them (--split names the file)",
                  splits=("test", "dev", "raw_test", "raw_dev"), files=("{split}.json",),
                  train_split="dev"),
)}

#: Every benchmark's one command-line name: ``fastvqa eval``, ``baseline``,
#: ``stats``, ``audit``, ``distractors`` and ``duplicates`` all take these
#: (each command the ones it supports, :func:`benchmark_choices`). A benchmark
#: with several tasks (WildQA: evidence and QA) keeps its one name; the task
#: is a further word (``fastvqa eval wildqa qa``).
BENCHMARK_NAMES: tuple[str, ...] = tuple(BENCHMARKS)


def benchmark_choices(names: Iterable[str]) -> tuple[str, ...]:
    """``names`` in :data:`BENCHMARK_NAMES` order, for a command's
    ``choices=``; ValueError (a fastvqa bug) on a name not in it.

    >>> benchmark_choices({"wildqa", "dvd"})
    ('dvd', 'wildqa')
    """
    names = set(names)
    unknown = sorted(names - set(BENCHMARK_NAMES))
    if unknown:
        raise ValueError(f"unknown benchmark name(s) {unknown}: add them to "
                         "fastvqa.data.benchmarks.BENCHMARKS (BENCHMARK_NAMES)")
    return tuple(n for n in BENCHMARK_NAMES if n in names)


#: The benchmarks whose records hold answers, in :data:`BENCHMARKS` order.
ANSWERED: tuple[str, ...] = tuple(n for n, b in BENCHMARKS.items() if b.answers)


def benchmark_info(name: str) -> BenchmarkInfo:
    """The entry of ``name``; :class:`~fastvqa.errors.InputError` naming the
    known benchmarks otherwise.

    >>> benchmark_info("nextgqa").splits
    ('test', 'val')
    """
    if not isinstance(name, str) or name not in BENCHMARKS:
        raise InputError(f"unknown benchmark {name!r}; choose from {', '.join(BENCHMARKS)}")
    return BENCHMARKS[name]


def check_split(name: str, split: str, *, path: Optional[PathLike] = None,
                option: str = "split") -> str:
    """``split`` when a folder of ``name`` can hold it: one of its fixed
    :attr:`~BenchmarkInfo.splits`, else a plain file stem (no folder part).

    Raises:
        InputError: one line naming ``option`` and the accepted splits (and,
            for a folder ``path``, the split's file it lacks).

    >>> check_split("nextgqa", "val")
    'val'
    >>> check_split("dvd", "my_split")
    'my_split'
    """
    info = benchmark_info(name)
    if info.splits is not None:
        try:
            return _checks.choice(split, f"{option} for {name}", "", info.splits)
        except InputError as err:
            raise InputError(f"{err}{_absent(info, path, split)}") from None
    if not isinstance(split, str) or not split or "/" in split or "\\" in split \
            or split in (".", ".."):
        raise InputError(f"{option} must name a file of the folder (e.g. test), got {split!r}")
    return split


def _absent(info: BenchmarkInfo, path: Optional[PathLike], split: Any) -> str:
    """`` (<folder>/<file> does not exist)`` when ``path`` is a folder without
    the split's file, else nothing."""
    if path is None or not isinstance(split, str) or not info.files or not Path(path).is_dir():
        return ""
    names = info.split_files(split)
    if any((Path(path) / n).is_file() for n in names):
        return ""
    return f" ({Path(path) / names[0]} does not exist)"


def split_path(name: str, path: PathLike, split: str = "test", *,
               option: Optional[str] = "split") -> Path:
    """What ``name``'s loader reads for ``path``: ``path`` itself when it is
    a file or when the loader reads the folder itself (empty
    :attr:`~BenchmarkInfo.files`), else the folder's file for ``split``.

    Raises:
        FileNotFoundError: nothing at ``path``; a folder without the split's
            file (the message names what such a folder holds and what it
            holds, and ``option``, which chooses the split, unless None).
        InputError: ``path`` is neither a regular file nor a folder.

    >>> import tempfile
    >>> with tempfile.TemporaryDirectory() as d:
    ...     _ = Path(d, "dev.json").write_text("[]")
    ...     print(split_path("wildqa", d, "dev").name, split_path("dvd", d) == Path(d))
    dev.json True
    """
    info = benchmark_info(name)
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"{path}: no such file or folder")
    if not (path.is_file() or path.is_dir()):
        raise InputError(f"{path}: not a regular file or folder (a device, pipe or socket)")
    if path.is_file() or not info.files:
        return path
    names = info.split_files(split)
    for n in names:
        if (path / n).is_file():
            return path / n
    splits = f" ({', '.join(info.splits)})" if info.splits else ""
    present = sorted(p.name for p in path.iterdir() if p.is_file())[:8]
    choose = f" (choose the split with {option})" if option else ""
    raise FileNotFoundError(
        f"{path}: no {' or '.join(names)} in this folder; a {name} folder must hold "
        f"{info.folder}{splits}; found {', '.join(present) or 'no files'}{choose}")


def load_benchmark(name: str, path: PathLike, split: str = "test",
                   **options: Any) -> list[QARecord]:
    """The records of benchmark ``name`` in ``path``, read by its loader.

    Args:
        name: a key of :data:`BENCHMARKS` (``"nextgqa"``, ``"wildqa"`` ...).
        path: a file of the benchmark, or a folder as released
            (:attr:`BenchmarkInfo.folder`).
        split: which split a folder is read for (:func:`check_split`); a
            file is read whole, and a benchmark without splits (DVD,
            SOK-Bench) ignores it.
        **options: the loader's own keywords, e.g. ``schema=`` and
            ``durations=`` for DeVE-QA, ``evidence_filter=`` for WildQA.

    Returns:
        The loader's :class:`~fastvqa.data.QARecord` list, in file order.

    Raises:
        InputError: an unknown benchmark or split (one line naming the
            accepted ones).
        FileNotFoundError: as :func:`split_path`.
        DataFormatError: a file the loader refuses.

    >>> import json, tempfile
    >>> item = {"question": "Why?", "answer": "rain", "evidences": [{"0": [1.0, 4.5]}],
    ...         "duration": 60.0, "video_id": "v1"}
    >>> with tempfile.TemporaryDirectory() as d:
    ...     _ = Path(d, "dev.json").write_text(json.dumps([item]))
    ...     print([r.key for r in load_benchmark("wildqa", d, "dev")])
    ['v1_0']
    """
    import fastvqa.data

    info = benchmark_info(name)
    check_split(name, split, path=path)
    target = split_path(name, path, split)
    if info.splits is not None and not info.files:
        options["split"] = split  # the loader finds the split's files in the folder
    # Looked up on the package at each call, where the loaders are exported.
    return getattr(fastvqa.data, info.loader)(target, **options)


def split_help(names: Iterable[str], folder: str = "a folder") -> str:
    """The ``--split`` help of a command reading ``names`` (from ``folder``,
    e.g. ``"a --gt folder"``): for each of them whose folders hold several
    splits, the split names and the file(s) a folder holds for one.

    >>> split_help(["wildqa", "dvd"])
    'which split of a folder is read (wildqa test|dev|raw_test|raw_dev: <split>.json)'
    """
    parts = [f"{n} {'|'.join(BENCHMARKS[n].splits or ('any name',))}: {BENCHMARKS[n].folder}"
             for n in names if BENCHMARKS[n].has_splits]
    return f"which split of {folder} is read (" + "; ".join(parts) + ")"


def gt_help(names: Iterable[str]) -> str:
    """The ``--gt`` help of a command reading any of ``names``: a file, or
    what a folder of each holds.

    >>> gt_help(["wildqa"])
    'a file of the benchmark, or a folder holding wildqa: <split>.json'
    """
    return "a file of the benchmark, or a folder holding " + "; ".join(
        f"{n}: {BENCHMARKS[n].folder}" for n in names)


__all__ = ["ANSWERED", "BENCHMARKS", "BENCHMARK_NAMES", "BenchmarkInfo", "benchmark_choices",
           "benchmark_info", "check_split",
           "gt_help", "load_benchmark", "split_help", "split_path"]
