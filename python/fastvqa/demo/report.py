# SPDX-License-Identifier: Apache-2.0
"""The demo's outputs: the printed table, ``results.json`` and a self-contained ``report.html``."""

from __future__ import annotations

import base64
import html
import json
import math
import tempfile
from pathlib import Path
from typing import Any, Optional

import numpy as np

#: the printed / reported order of the metric groups, with a title each.
GROUPS = (
    ("grounding", "Grounding (\"When does the red cone slide?\"; NExT-GQA rules, best span)"),
    ("evidence", "Evidence spans (WildQA IoU-F1, mode 'clean', all predicted spans)"),
    ("grounded_qa", "Grounded QA (\"What does the red cone do first?\"; answer + span)"),
    ("multiple_choice", "Multiple choice (first / what / which)"),
)


#: the groups of ``fastvqa demo --pipeline devi``: every multiple-choice question.
DEVI_GROUPS = (
    ("grounded_qa", "Grounded QA, DeVi (first / what / which; answer + best span, NExT-GQA "
                    "rules, a failed parse counted wrong)"),
    ("multiple_choice", "Multiple choice, DeVi (first / what / which)"),
)


def format_tables(results: dict, groups: tuple = GROUPS) -> str:
    """Every metric group's :meth:`MetricResult.format_table`, titled."""
    blocks = []
    for name, title in groups:
        if name in results:
            blocks.append(f"== {title}\n{results[name].format_table(decimals=1)}")
    return "\n\n".join(blocks)


def _per_question(questions: list, predictions: dict, results: dict) -> list:
    """One row per question: what was asked, the truth, the prediction, its score."""
    overlap = {}
    for group in ("grounding", "grounded_qa"):
        if group in results:
            pq = results[group].per_question
            for k, key in enumerate(pq["key"]):
                overlap[key] = (float(pq["IoU"][k]), float(pq["IoP"][k]))
    rows = []
    for q in questions:
        p = predictions[q["id"]]
        row = {"id": q["id"], "video": q["video"], "kind": q["kind"], "text": q["text"],
               "gt_spans": q["spans"]}
        if "options" in q:
            row.update(options=q["options"], answer=q["answer_index"],
                       predicted=p["answer"], correct=p["answer"] == q["answer_index"])
        if q["kind"] == "when":
            row["pred_spans"] = p["spans"]
        elif q["kind"] == "first":
            row["pred_spans"] = [] if p.get("span") is None else [p["span"]]
        if q["id"] in overlap:
            row["IoU"], row["IoP"] = overlap[q["id"]]
        rows.append(row)
    return rows


def write_results(path: Path, results: dict, questions: list, predictions: dict,
                  timings: dict, config: dict, *, dialogues: Optional[dict] = None) -> None:
    """``results.json``: config, timings (s), each metric group's ``to_dict()``
    and one row per question; with ``dialogues`` (the DVD-style dialogue
    counts, :func:`fastvqa.demo.cater.dialogue_counts`), a ``dialogues``
    block. NaN is written as null."""
    payload = {
        "config": config,
        "timings_s": timings,
        "metrics": {name: results[name].to_dict() for name, _ in GROUPS if name in results},
        "questions": _per_question(questions, predictions, results),
    }
    if dialogues is not None:
        payload["dialogues"] = dialogues
    with Path(path).open("x") as f:
        json.dump(payload, f, indent=1, allow_nan=False, default=_json_default)


def write_devi_results(path: Path, results: dict, questions: list, result,
                       timings: dict, config: dict, *,
                       dialogues: Optional[dict] = None) -> None:
    """``results.json`` of ``--pipeline devi``: config, timings (s), the metric
    groups, the latency report, the self-consistency report, one row per
    question (truth, prediction, every consistency round, the raw reply) and,
    with ``dialogues``, the DVD-style dialogue counts (as :func:`write_results`)."""
    rows = []
    for q in questions:
        p = result.predictions[q["id"]]
        rows.append({"id": q["id"], "video": q["video"], "kind": q["kind"], "text": q["text"],
                     "options": q["options"], "answer": q["answer_index"],
                     "gt_spans": q["spans"], "correct": p.option == q["answer_index"],
                     **p.to_dict()})
    payload = {
        "config": config,
        "timings_s": timings,
        "metrics": {name: results[name].to_dict() for name, _ in DEVI_GROUPS if name in results},
        "latency": result.latency.to_dict(),
        "self_consistency": result.consistency.to_dict(),
        "questions": rows,
    }
    if dialogues is not None:
        payload["dialogues"] = dialogues
    with Path(path).open("x") as f:
        json.dump(payload, f, indent=1, allow_nan=False, default=_json_default)


def _json_default(x: Any):
    if isinstance(x, np.generic):
        return x.item()
    raise TypeError(f"not JSON serialisable: {type(x).__name__}")


def _png(path: Path) -> str:
    data = base64.b64encode(path.read_bytes()).decode("ascii")
    return f'<img alt="{html.escape(path.stem)}" src="data:image/png;base64,{data}">'


def _plots(tmp: Path, results: dict, questions: list, predictions: dict,
           duration: float, max_timelines: int) -> list:
    """``(title, <img> tag)`` pairs, drawn with :mod:`fastvqa.evaluation.plots`."""
    from fastvqa.evaluation.plots import (
        plot_accuracy_bars,
        plot_grounding_summary,
        plot_video_timeline,
    )

    out = []
    if "grounding" in results:
        p = plot_grounding_summary(results["grounding"], tmp / "grounding.png",
                                   length_edges=(0, math.inf),
                                   title="\"when\" questions: per-question overlap")
        out.append(("IoU / IoP histogram (\"when\" questions)", _png(p)))
    if "multiple_choice" in results:
        mc = results["multiple_choice"]
        names = [n for n in mc.metrics if n != "Acc/macro"]
        p = plot_accuracy_bars(names, [mc[n] for n in names], tmp / "mc.png",
                               title="multiple-choice accuracy")
        out.append(("Multiple-choice accuracy", _png(p)))
    overlap = {r["id"]: r for r in _per_question(questions, predictions, results)}
    videos = list(dict.fromkeys(q["video"] for q in questions))[:max_timelines]
    for vid in videos:
        rows = []
        for q in questions:
            if q["video"] != vid or q["kind"] not in ("when", "first"):
                continue
            r = overlap[q["id"]]
            pred = r["pred_spans"][0] if r["pred_spans"] else None
            rows.append({"label": q["text"], "gt": q["spans"], "pred": pred,
                         "more_pred": r["pred_spans"][1:],
                         "IoU": r.get("IoU"), "IoP": r.get("IoP")})
        if rows:
            p = plot_video_timeline(vid, rows, tmp / f"timeline_{vid}.png", duration=duration)
            out.append((f"Timeline of {vid}: predicted spans (best solid, others light; "
                        "IoU/IoP of the best) vs ground truth", _png(p)))
    return out


_STYLE = ("<style>body{font-family:sans-serif;max-width:1100px;margin:auto}"
          "table{border-collapse:collapse;margin:6px 0}td,th{border:1px solid #ccc;"
          "padding:2px 6px;font-size:13px}img{max-width:100%}.bad{background:#fdd}</style>")


def _metrics_table(result) -> str:
    head = "".join(f"<th>{html.escape(n)}</th>" for n in result.metrics)
    row = "".join(f"<td>{'nan' if math.isnan(v) else f'{v:.1f}'}</td>"
                  for v in result.metrics.values())
    return f"<table><tr>{head}</tr><tr>{row}</tr></table>"


def _fmt_spans(spans) -> str:
    return ", ".join(f"[{s:g}, {e:g})" for s, e in spans) if spans else "-"


def _dialogue_section(dialogues: list, counts: Optional[dict]) -> list:
    """HTML of the DVD-style dialogues: the counts, then each shown dialogue
    as a table of turns (question, answer, cross-turn dependencies)."""
    parts = ["<h2>DVD-style dialogues (scenes/*.json as CATER scene graphs)</h2>"]
    if counts is not None:
        none = counts.get("scenes_without_dialogues", 0)
        parts.append(f"<p>{counts['dialogues']} dialogues ({counts['turns']} turns) from "
                     f"{counts['scenes']} scenes in dialogues.json; {none} scenes got none.</p>")
    for k, d in enumerate(dialogues):
        parts.append(f"<h3>Dialogue {k + 1} ({html.escape(d['scene'])})</h3><table><tr>"
                     "<th>turn</th><th>question</th><th>answer</th><th>depends on</th></tr>")
        for t, turn in enumerate(d["turns"]):
            deps = ", ".join(turn["dependencies"]) or "-"
            parts.append(f"<tr><td>{t + 1}</td><td>{html.escape(turn['question'])}</td>"
                         f"<td>{html.escape(turn['answer'])}</td><td>{html.escape(deps)}</td></tr>")
        parts.append("</table>")
    return parts


def write_report(path: Path, results: dict, questions: list, predictions: dict,
                 timings: dict, config: dict, *, max_timelines: int = 6,
                 dialogues: Optional[list] = None,
                 dialogue_counts: Optional[dict] = None) -> None:
    """A self-contained HTML report (PNG plots inline as base64): the metric
    tables, IoU histogram, multiple-choice accuracy, per-video timelines of
    the first ``max_timelines`` videos, every question's outcome, and, when
    given, the DVD-style ``dialogues`` (rows of
    :func:`fastvqa.demo.cater.shown_dialogues`) with their
    ``dialogue_counts`` (:func:`fastvqa.demo.cater.dialogue_counts`)."""
    with tempfile.TemporaryDirectory(prefix="fastvqa-demo-plots-") as tmp:
        plots = _plots(Path(tmp), results, questions, predictions, config["duration"],
                       max_timelines)
    parts = ["<!DOCTYPE html><html><head><meta charset='utf-8'><title>fastvqa demo</title>",
             _STYLE, "</head><body><h1>fastvqa demo</h1>"]
    cfg = ", ".join(f"{k}={html.escape(str(v))}" for k, v in config.items())
    parts.append(f"<p>{cfg}. Spans are [start, end) seconds.</p>")
    for name, title in GROUPS:
        if name in results:
            parts.append(f"<h3>{html.escape(title)}</h3>{_metrics_table(results[name])}")
    times = "".join(f"<tr><td>{html.escape(k)}</td><td>{v:.2f}</td></tr>"
                    for k, v in timings.items())
    parts.append(f"<h3>Time per stage (s)</h3><table>{times}</table>")
    for title, img in plots:
        parts.append(f"<h2>{html.escape(title)}</h2>{img}")
    parts.append("<h2>Questions</h2><table><tr><th>id</th><th>question</th><th>truth</th>"
                 "<th>prediction</th><th>score</th></tr>")
    for r in _per_question(questions, predictions, results):
        truth, pred, score, bad = _fmt_spans(r["gt_spans"]), "", "", False
        if "options" in r:
            truth = f"{r['options'][r['answer']]}; {truth}"
            pred = r["options"][r["predicted"]]
            score, bad = ("right" if r["correct"] else "wrong"), not r["correct"]
        if "pred_spans" in r:
            pred = f"{pred}; {_fmt_spans(r['pred_spans'])}" if pred else _fmt_spans(
                r["pred_spans"])
        if r.get("IoU") is not None and not math.isnan(r["IoU"]):
            score = f"{score} IoU {r['IoU']:.2f}".strip()
            bad = bad or r["IoU"] < 0.5
        cls = " class='bad'" if bad else ""
        parts.append(f"<tr{cls}><td>{html.escape(r['id'])}</td><td>{html.escape(r['text'])}"
                     f"</td><td>{html.escape(truth)}</td><td>{html.escape(pred)}</td>"
                     f"<td>{html.escape(score)}</td></tr>")
    parts.append("</table>")
    if dialogues is not None or dialogue_counts is not None:
        parts.extend(_dialogue_section(dialogues or [], dialogue_counts))
    parts.append("</body></html>")
    with Path(path).open("x") as f:
        f.write("\n".join(parts))
