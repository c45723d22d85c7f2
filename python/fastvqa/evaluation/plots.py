# SPDX-License-Identifier: Apache-2.0
"""PNG plots of grounded QA results (matplotlib, imported lazily).

- :func:`plot_grounding_summary`: the IoU/IoP distribution over the evaluated
  questions, and the metrics per video-length bin;
- :func:`plot_video_timeline`: one video's questions, predicted vs
  ground-truth spans on a time axis.

Figures are drawn with matplotlib's object API on an Agg canvas, so no global
pyplot state or backend setting is touched.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any, Optional, Sequence

import numpy as np


def _figure(width: float, height: float):
    try:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
    except ImportError as err:
        raise ImportError("plots need matplotlib: pip install 'fastvqa[plot]' "
                          "(or pip install matplotlib)") from err
    fig = Figure(figsize=(width, height), dpi=110)
    FigureCanvasAgg(fig)
    return fig


def save_png(fig, path: str | Path, *, dpi: Optional[float] = None) -> Path:
    """Writes ``fig`` as PNG to exactly ``path`` (no suffix is appended,
    whatever its name), which must not exist (``FileExistsError``), through
    a temporary name moved into place only when drawing succeeded
    (:mod:`fastvqa._outputs`)."""
    from fastvqa._outputs import open_new

    with open_new(path, "xb", "path") as f:
        fig.savefig(f, format="png", **({} if dpi is None else {"dpi": dpi}))
    return Path(path)


_save = save_png


def _na_label(count: Optional[int]) -> str:
    return "n/a (n=0)" if count == 0 else "n/a"


def plot_accuracy_bars(names: Sequence[str], values: Sequence[float], path: str | Path, *,
                       title: str, color: str = "tab:blue",
                       chance: Optional[float] = None,
                       counts: Optional[Sequence[Optional[int]]] = None) -> Path:
    """One horizontal bar per named accuracy (percent, 0-100), in the given
    order, with an optional dotted chance line. A NaN value (a group with no
    items) gets no bar and the label ``n/a`` (``n/a (n=0)`` when ``counts``
    gives 0). Refuses to overwrite ``path`` (``FileExistsError``, before
    drawing)."""
    from fastvqa._outputs import check_new

    check_new(path, "path")
    values = [float(v) for v in values]
    counts = list(counts) if counts is not None else [None] * len(values)
    fig = _figure(7, 0.35 * len(names) + 1.2)
    ax = fig.add_subplot()
    ax.barh(range(len(names)), [0.0 if math.isnan(v) else v for v in values], color=color)
    for i, (v, c) in enumerate(zip(values, counts)):
        if math.isnan(v):
            ax.text(1.0, i, _na_label(c), va="center", ha="left", fontsize=8, color="grey")
    ax.set_yticks(range(len(names)), labels=list(names))
    ax.invert_yaxis()
    ax.set_xlim(0, 100)
    if chance is not None:
        ax.axvline(chance, color="gray", linestyle=":", label=f"chance ({chance:g}%)")
        ax.legend(loc="lower right")
    ax.set_xlabel("accuracy (%)")
    ax.set_title(title)
    fig.tight_layout()
    return _save(fig, path)


def plot_grounding_summary(
    result: Any,
    path: str | Path,
    *,
    length_edges: Sequence[float] = (0, 30, 60, 90, math.inf),
    closed: str = "left",
    title: Optional[str] = None,
) -> Path:
    """IoU/IoP histograms, and mIoP, mIoU (and Acc@GQA with answers) per
    video-length bin.

    Args:
        result: a :func:`fastvqa.metrics.grounded_qa` result with a
            ``"duration"`` per-question column (seconds).
        path: the PNG to write (refuses to overwrite: ``FileExistsError``
            before drawing).
        length_edges: bin edges in seconds, as for
            :func:`fastvqa.metrics.slice_by_duration`.
        closed: which side of each bin is closed (``"left"`` or ``"right"``).
        title: figure title; default: benchmark, mode and evaluated count.
    """
    from fastvqa._outputs import check_new
    from fastvqa.metrics.grounding import slice_by_duration

    check_new(path, "path")
    pq = result.per_question
    evaluated = np.asarray(pq["evaluated"], dtype=bool)
    fig = _figure(11.0, 4.2)
    ax_hist, ax_bins = fig.subplots(1, 2)
    edges = np.linspace(0.0, 1.0, 21)
    for name, color in (("IoP", "tab:orange"), ("IoU", "tab:blue")):
        values = np.asarray(pq[name], dtype=np.float64)[evaluated]
        ax_hist.hist(values, bins=edges, alpha=0.55, color=color,
                     label=f"{name} (mean {100 * values.mean() if values.size else math.nan:.1f}%)")
    for t in result.info.get("thresholds", ()):
        ax_hist.axvline(t, color="grey", linestyle=":", linewidth=1)
    ax_hist.set_xlabel("per-question overlap (max over ground-truth segments)")
    ax_hist.set_ylabel("questions")
    ax_hist.set_title("overlap distribution")
    ax_hist.legend(loc="upper right", fontsize=8)

    if "duration" in pq:
        bins = slice_by_duration(result, None, length_edges, closed=closed)
        labels = list(bins)
        names = [n for n in ("Acc@GQA", "mIoP", "mIoU") if n in result.metrics]
        x = np.arange(len(labels))
        width = 0.8 / len(names)
        counts = [bins[b].info["evaluated"] for b in labels]
        for j, name in enumerate(names):
            vals = [bins[b].metrics.get(name, math.nan) for b in labels]
            ax_bins.bar(x + (j - (len(names) - 1) / 2) * width,
                        [0.0 if math.isnan(v) else v for v in vals], width, label=name)
        for i, c in enumerate(counts):
            if c == 0:  # a bin without evaluated questions: no bar, never 0
                ax_bins.text(x[i], 1.0, "n/a (n=0)", ha="center", va="bottom", fontsize=8,
                             color="grey")
        ax_bins.set_xticks(x)
        ax_bins.set_xticklabels([f"{b}\nn={c}" for b, c in zip(labels, counts)], fontsize=8)
        ax_bins.set_xlabel("video length (s)")
        ax_bins.set_ylabel("%")
        ax_bins.set_title("by video length")
        ax_bins.legend(fontsize=8)
    else:
        ax_bins.text(0.5, 0.5, "no video durations", ha="center", va="center")
        ax_bins.set_axis_off()
    mode = result.info.get("mode", "")
    fig.suptitle(title or f"{result.title}, mode {mode}: {result.info.get('evaluated', '?')} "
                 "questions evaluated", fontsize=10)
    fig.tight_layout()
    return _save(fig, path)


def plot_video_timeline(
    video_id: str,
    rows: Sequence[dict[str, Any]],
    path: str | Path,
    *,
    duration: Optional[float] = None,
    title: Optional[str] = None,
) -> Path:
    """Predicted vs ground-truth spans of one video's questions.

    Args:
        video_id: shown in the title.
        rows: one dict per question: ``label`` (str), ``gt`` (``(K, 2)``
            seconds), ``pred`` (``[start, end]`` seconds or None for no
            prediction), optional ``IoU``/``IoP`` (0-1) shown beside the label,
            optional ``more_pred`` (``(M, 2)`` seconds: further predicted spans,
            drawn lighter; the scores are of ``pred``).
        path: the PNG to write (refuses to overwrite: ``FileExistsError``
            before drawing).
        duration: video length in seconds (the axis end); default: the
            largest span end.
    """
    from fastvqa._outputs import check_new

    check_new(path, "path")
    fig = _figure(10.0, 1.2 + 0.55 * max(len(rows), 1))
    ax = fig.subplots()
    ends = [0.0]
    legend = {"ground truth": False, "prediction": False, "other predicted spans": False}

    def label_once(name: str) -> Optional[str]:
        first = not legend[name]
        legend[name] = True
        return name if first else None

    for i, row in enumerate(rows):
        y = len(rows) - 1 - i
        gt = np.asarray(row.get("gt", np.zeros((0, 2))), dtype=np.float64).reshape(-1, 2)
        for s, e in gt:
            ax.broken_barh([(s, max(e - s, 0.0))], (y + 0.05, 0.4), color="tab:green", alpha=0.8,
                           label=label_once("ground truth"))
            ends.append(max(s, e))
        pred = row.get("pred")
        if pred is not None and not any(math.isnan(v) for v in pred):
            s, e = float(pred[0]), float(pred[1])
            lo, hi = min(s, e), max(s, e)
            ax.broken_barh([(lo, max(hi - lo, 0.0))], (y - 0.45, 0.4), color="tab:blue",
                           alpha=0.8, label=label_once("prediction"))
            if hi == lo:  # zero-length predictions: a visible tick
                ax.plot([lo, lo], [y - 0.45, y - 0.05], color="tab:blue", linewidth=2)
            ends.append(hi)
        more = np.asarray(row.get("more_pred", np.zeros((0, 2))), dtype=np.float64).reshape(-1, 2)
        for s, e in more[~np.isnan(more).any(axis=1)]:
            lo, hi = min(s, e), max(s, e)
            ax.broken_barh([(lo, max(hi - lo, 0.0))], (y - 0.45, 0.4), color="tab:blue",
                           alpha=0.3, label=label_once("other predicted spans"))
            ends.append(hi)
    labels = []
    for row in rows:
        text = str(row.get("label", ""))
        if row.get("IoU") is not None and not math.isnan(row["IoU"]):
            text += f"  IoU {row['IoU']:.2f} IoP {row['IoP']:.2f}"
        elif row.get("pred") is None:
            text += "  (no prediction)"
        labels.append(text)
    ax.set_yticks(np.arange(len(rows))[::-1])
    ax.set_yticklabels(labels, fontsize=8)
    end = duration if duration is not None and duration > 0 else max(ends)
    ax.set_xlim(0.0, max(end, max(ends)) * 1.02 or 1.0)
    if duration is not None:
        ax.axvline(duration, color="grey", linestyle=":", linewidth=1)
    ax.set_xlabel("time (s)")
    handles, names = ax.get_legend_handles_labels()
    if handles:
        # Below the axes: inside, it would hide spans near the video's end.
        ax.legend(handles, names, loc="upper center", bbox_to_anchor=(0.5, -0.12), ncol=3,
                  fontsize=8, frameon=False)
    ax.set_title(title or f"video {video_id}: prediction (below) vs ground truth (above)",
                 fontsize=10)
    fig.tight_layout()
    return _save(fig, path)
