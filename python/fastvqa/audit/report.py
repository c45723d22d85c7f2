# SPDX-License-Identifier: Apache-2.0
"""An :class:`~fastvqa.audit.AuditResult` as a terminal table, a JSON file
and a self-contained HTML page (matplotlib plots inline as base64 PNGs).
Files are written through :mod:`fastvqa._outputs`: never over an existing
file, never half-written."""

from __future__ import annotations

import base64
import html
import io
import json
from pathlib import Path
from typing import Any, Optional


def _pct(x: Optional[float]) -> str:
    return "-" if x is None else f"{x:.1f}"


def _rows(result: Any) -> list[tuple[str, str, str, str]]:
    """(name, accuracy [± std], chance, note) per baseline."""
    rows = []
    for s in result.scores:
        acc = _pct(s.accuracy)
        if s.std is not None:
            acc = f"{acc} ± {s.std:.1f}"
        rows.append((s.name, acc, _pct(s.chance), s.note))
    return rows


def summary_lines(result: Any) -> list[str]:
    """The checks that are not accuracies, one line each."""
    lines = []
    p = result.position
    if p is not None:
        cells = " ".join(f"{chr(65 + j) if j < 26 else j}={c}" for j, c in enumerate(p.counts))
        lines.append(f"correct position ({p.n} questions with {p.n_options} options): {cells}; "
                     f"chi-square vs uniform {p.chi2:.3f} (dof {p.dof}), p = {p.p_value:.4g}")
    ln = result.length
    if ln is not None:
        lines.append(f"answer length: correct option's mean length rank {ln.mean_rank:.2f} "
                     f"(1 = longest; chance {ln.chance_rank:.2f})")
    lk = result.leakage
    if lk is not None:
        lines.append(f"train/test leakage: {lk.near_share:.1f}% of test questions ({lk.near} of "
                     f"{lk.n}) have a near-duplicate in train (TF-IDF cosine >= "
                     f"{lk.threshold:g} or equal after normalisation; exact: "
                     f"{lk.exact_share:.1f}%, {lk.exact})")
    lines.append(f"text baselines' folds: {result.cv}")
    return lines


def format_table(result: Any) -> str:
    """The terminal report: a header, one row per baseline (accuracy %,
    ± std over folds, chance %, note) and the other checks' lines."""
    train = (f"train: {result.n_train} questions" if result.n_train is not None
             else "no training split: priors from the audited set itself")
    head = (f"audit of {result.benchmark or 'records'}: {result.n_questions} "
            f"{result.kind.replace('_', '-')} questions; {train}")
    rows = [("baseline", "accuracy %", "chance %", "note"), *_rows(result)]
    widths = [max(len(r[i]) for r in rows) for i in range(3)]
    body = [f"{r[0]:<{widths[0]}}  {r[1]:>{widths[1]}}  {r[2]:>{widths[2]}}  {r[3]}".rstrip()
            for r in rows]
    return "\n".join([head, "", *body, "", *summary_lines(result)])


def to_json(result: Any) -> str:
    """The result as indented JSON (every field; None as null)."""
    return json.dumps(result.to_dict(), indent=2, allow_nan=False, ensure_ascii=False)


def write_json(result: Any, path: Any) -> Path:
    """Writes :func:`to_json` to the new file ``path`` (refuses to overwrite)."""
    from fastvqa._outputs import write_new

    return write_new(path, to_json(result) + "\n", str(path))


def _png(fig) -> str:
    buf = io.BytesIO()
    fig.savefig(buf, format="png")
    data = base64.b64encode(buf.getvalue()).decode("ascii")
    return f'<img alt="plot" src="data:image/png;base64,{data}">'


def _baseline_plot(result: Any) -> Optional[str]:
    from fastvqa.evaluation.plots import _figure

    shown = [s for s in result.scores if s.accuracy is not None]
    if not shown:
        return None
    fig = _figure(7.5, 0.45 * len(shown) + 1.2)
    ax = fig.add_subplot(1, 1, 1)
    y = list(range(len(shown)))[::-1]
    ax.barh(y, [s.accuracy for s in shown], color="tab:blue")
    for yi, s in zip(y, shown):  # the spread over folds, where there are folds
        if s.std is not None:
            ax.errorbar(s.accuracy, yi, xerr=s.std, color="black", capsize=3)
    for yi, s in zip(y, shown):
        if s.chance is not None:
            ax.plot([s.chance, s.chance], [yi - 0.4, yi + 0.4], color="black", ls=":")
    ax.set_yticks(y, [s.name for s in shown])
    ax.set_xlim(0, 100)
    ax.set_xlabel("accuracy % (dotted: chance)")
    ax.set_title("blind baselines")
    fig.tight_layout()
    return _png(fig)


def _position_plot(result: Any) -> Optional[str]:
    from fastvqa.evaluation.plots import _figure

    p = result.position
    if p is None:
        return None
    fig = _figure(5.0, 3.0)
    ax = fig.add_subplot(1, 1, 1)
    labels = [chr(65 + j) if j < 26 else str(j) for j in range(p.n_options)]
    ax.bar(labels, p.counts, color="tab:green")
    ax.axhline(p.n / p.n_options, color="black", ls=":")
    ax.set_ylabel("questions")
    ax.set_title(f"correct position (p = {p.p_value:.3g}; dotted: uniform)")
    fig.tight_layout()
    return _png(fig)


_STYLE = ("<style>body{font-family:sans-serif;max-width:1000px;margin:auto}"
          "table{border-collapse:collapse;margin:6px 0}td,th{border:1px solid #ccc;"
          "padding:2px 6px;font-size:13px}img{max-width:100%}</style>")


def render_html(result: Any) -> str:
    """The self-contained HTML page: the table, the other checks, the
    baseline bars (with chance marks) and the position counts."""
    name = html.escape(result.benchmark or "records")
    parts = ["<!DOCTYPE html><html><head><meta charset='utf-8'>",
             f"<title>fastvqa audit: {name}</title>", _STYLE, "</head><body>",
             f"<h1>fastvqa audit: {name}</h1>",
             f"<p>{html.escape(format_table(result).splitlines()[0])}</p>",
             "<table><tr><th>baseline</th><th>accuracy %</th><th>chance %</th><th>note</th></tr>"]
    for row in _rows(result):
        parts.append("<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in row) + "</tr>")
    parts.append("</table><ul>")
    parts += [f"<li>{html.escape(line)}</li>" for line in summary_lines(result)]
    parts.append("</ul>")
    for img in (_baseline_plot(result), _position_plot(result)):
        if img is not None:
            parts.append(img)
    if result.leakage is not None and result.leakage.examples:
        parts.append("<h3>Near-duplicates (test, nearest train, cosine)</h3><table>")
        for q, t, c in result.leakage.examples:
            parts.append(f"<tr><td>{html.escape(q)}</td><td>{html.escape(t)}</td>"
                         f"<td>{c:.3f}</td></tr>")
        parts.append("</table>")
    parts.append("</body></html>")
    return "\n".join(parts)


def write_html(result: Any, path: Any) -> Path:
    """Writes :func:`render_html` to the new file ``path`` (refuses to overwrite)."""
    from fastvqa._outputs import write_new

    return write_new(path, render_html(result), str(path))
