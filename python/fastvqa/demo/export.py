# SPDX-License-Identifier: Apache-2.0
"""The demo benchmark in a released benchmark's layout, so that the tools
made for real benchmarks run on it unchanged (``fastvqa run vlm deveqa
--gt DEMO/deveqa.json --videos DEMO/videos``, ``fastvqa eval deveqa``,
``fastvqa train`` on ``moments.jsonl`` as a QVHighlights file).

:func:`deveqa_records`: the multiple-choice questions as DeVE-QA records in
the DeVi repository's schema (``qid``, ``video_id``, ``question``,
``options`` (a list), ``answer`` (a letter), ``gt_span`` (the first gold
span, seconds), ``duration``); :func:`fastvqa.data.load_deveqa` reads them.
The demo's spans are ``[start, end)`` on a 0.5 s grid; DeVE-QA's are closed,
and the numbers are written as they are.

>>> ann = {"duration": 20.0, "questions": [
...     {"id": "v_q1", "video": "v", "text": "What does the red cube do first?",
...      "options": ["slides", "rests"], "answer_index": 1, "spans": [[0.0, 2.5]]},
...     {"id": "v_q2", "video": "v", "text": "When does the red cube rest?",
...      "answer": None, "spans": [[0.0, 2.5]]}]}
>>> deveqa_records(ann)[0]["answer"], deveqa_records(ann)[0]["qid"], len(deveqa_records(ann))
('B', 'v_q1', 1)
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from fastvqa.devi.pipeline import LETTERS


def deveqa_records(annotations: dict) -> list:
    """The demo's multiple-choice questions (those with ``options``) as
    DeVE-QA records, in annotation order."""
    out = []
    for q in annotations["questions"]:
        if "options" not in q:
            continue
        # DeVE-QA's qids are unique over the file: the demo's own ids are
        out.append({"qid": q["id"], "video_id": q["video"], "question": q["text"],
                    "options": list(q["options"]), "answer": LETTERS[q["answer_index"]],
                    "gt_span": [float(x) for x in q["spans"][0]],
                    "duration": float(annotations["duration"])})
    return out


def moment_records(annotations: dict) -> list:
    """Every demo question as a moment-retrieval query in QVHighlights'
    layout (``qid``, ``query``, ``vid``, ``duration``, ``relevant_windows``:
    all its gold spans, seconds), in annotation order; what ``fastvqa train``
    grounds (:func:`fastvqa.data.load_qvhighlights` reads it). There are no
    saliency scores: the demo has no annotators.

    >>> ann = {"duration": 20.0, "questions": [
    ...     {"id": "v_q2", "video": "v", "text": "When does the red cube rest?",
    ...      "answer": None, "spans": [[0.0, 2.5], [6.0, 8.0]]}]}
    >>> moment_records(ann)[0]["relevant_windows"]
    [[0.0, 2.5], [6.0, 8.0]]
    """
    return [{"qid": q["id"], "query": q["text"], "vid": q["video"],
             "duration": float(annotations["duration"]),
             "relevant_windows": [[float(x) for x in span] for span in q["spans"]]}
            for q in annotations["questions"] if q.get("spans")]


def write_moments(annotations: dict, path: Any) -> Path:
    """:func:`moment_records` written as JSON Lines to ``path`` (a new file)."""
    from fastvqa._outputs import write_new

    text = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in moment_records(annotations))
    return write_new(path, text, what="moments.jsonl")


def write_deveqa(annotations: dict, path: Any) -> Path:
    """:func:`deveqa_records` written as a JSON list to ``path`` (a new file)."""
    from fastvqa._outputs import write_new

    text = json.dumps(deveqa_records(annotations), indent=1, ensure_ascii=False) + "\n"
    return write_new(path, text, what="deveqa.json")
