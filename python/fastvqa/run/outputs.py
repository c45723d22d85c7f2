# SPDX-License-Identifier: Apache-2.0
"""A run's files, in exactly the formats ``fastvqa eval`` reads, and its scores.

For every benchmark the run folder holds ``responses.jsonl`` (``{"key",
"response"}`` per question, the raw replies: ``fastvqa eval BENCHMARK
--pred-text`` re-parses them) and ``outcomes.jsonl`` (every question's parse
outcome: option, spans, how it was read or why not), plus the parsed
predictions of the benchmark's own submission format:

- ``nextgqa``, ``deveqa``: ``ground.json`` ``{key: [start, end]}`` (the first
  span; a question without one is left out, as the official evaluator
  skips it) and ``qa.json`` ``{key: {"prediction": k, "answer": k_true}}``
  (``k = -1`` where the reply named no option);
- ``sokbench``: ``pred.json`` ``{key: k}``, or ``{key: "the raw reply"}``
  where the reply named no option: SOK-Bench's rule then takes the option
  with the highest BLEU against the reply (``fastvqa eval sokbench``), as
  the paper scores an output it cannot parse;
- ``wildqa``: ``answers.json`` (answer texts in file order) and
  ``evidence.json`` (span lists in file order).

Files are written whole through temporary names. A file that already exists
is left as it is when its bytes are the ones the run would write (a resumed
run), and refused otherwise: nothing a user has is overwritten.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Sequence

from fastvqa._outputs import OutputExistsError, write_new

#: the parsed-prediction files of each benchmark (besides responses/outcomes).
PREDICTION_FILES = {
    "nextgqa": ("ground.json", "qa.json"),
    "deveqa": ("ground.json", "qa.json"),
    "sokbench": ("pred.json",),
    "wildqa": ("answers.json", "evidence.json"),
}


def _json(value: Any) -> str:
    return json.dumps(value, indent=1, ensure_ascii=False) + "\n"


def _jsonl(rows: Sequence[dict]) -> str:
    return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows)


def prediction_texts(benchmark: str, records: Sequence[Any], outcomes: Sequence[Any]) -> dict:
    """``{file name: text}``: everything a run writes for ``benchmark``
    (``outcomes[i]`` answers ``records[i]``).

    >>> from fastvqa.data import QARecord
    >>> from fastvqa.run.harness import Outcome
    >>> r = QARecord("v1", "0", "What?", ["a", "b"], answer=1)
    >>> o = Outcome("v1_0", "Answer: B. 1 s - 2 s", 1, [(1.0, 2.0)], "", "", True, 0.1)
    >>> texts = prediction_texts("nextgqa", [r], [o])
    >>> sorted(texts), texts["qa.json"].split()
    (['ground.json', 'outcomes.jsonl', 'qa.json', 'responses.jsonl'], ['{', '"v1_0":', '{', '"prediction":', '1,', '"answer":', '1', '}', '}'])
    """
    texts = {"responses.jsonl": _jsonl([{"key": o.key, "response": o.response}
                                        for o in outcomes]),
             "outcomes.jsonl": _jsonl([o.to_dict() for o in outcomes])}
    if benchmark in ("nextgqa", "deveqa"):
        texts["ground.json"] = _json({o.key: list(o.spans[0]) for o in outcomes if o.spans})
        texts["qa.json"] = _json({o.key: {"prediction": o.option, "answer": r.answer}
                                  for r, o in zip(records, outcomes)})
    elif benchmark == "sokbench":
        texts["pred.json"] = _json({o.key: (o.option if o.option >= 0 else o.response)
                                    for o in outcomes})
    elif benchmark == "wildqa":
        texts["answers.json"] = _json([o.answer_text for o in outcomes])
        texts["evidence.json"] = _json([[list(s) for s in o.spans] for o in outcomes])
    return texts


def write_files(folder: Path, texts: dict) -> list:
    """Writes each ``{name: text}`` into ``folder``; returns the names left
    as they were (same bytes already there). A file there with other bytes
    raises :class:`~fastvqa._outputs.OutputExistsError` before anything is
    written."""
    folder = Path(folder)
    same = []
    for name, text in texts.items():
        path = folder / name
        if path.exists():
            if path.read_bytes() != text.encode("utf-8"):
                raise OutputExistsError(f"{path} exists with other contents; refusing to "
                                        "overwrite it (give another --out, or move it away)")
            same.append(name)
    for name, text in texts.items():
        if name not in same:
            write_new(folder / name, text, what=name)
    return same


def score(benchmark: str, folder: Path, gt: Any, split: str) -> list:
    """The official scores of the run's files, as ``[(task, MetricResult)]``."""
    folder = Path(folder)
    if benchmark == "nextgqa":
        from fastvqa.evaluation import nextgqa

        return [("grounded QA", nextgqa.evaluate(gt=gt, pred=folder / "ground.json",
                                                 qa=folder / "qa.json", split=split))]
    if benchmark == "deveqa":
        from fastvqa.evaluation import nextgqa

        return [("grounded QA", nextgqa.evaluate_deveqa(gt=gt, pred=folder / "ground.json",
                                                        qa=folder / "qa.json"))]
    if benchmark == "sokbench":
        from fastvqa.evaluation import sokbench

        return [("multiple choice", sokbench.evaluate(gt=gt, pred=folder / "pred.json"))]
    if benchmark == "wildqa":
        from fastvqa.evaluation import wildqa

        return [("answers", wildqa.evaluate_qa(gt=gt, pred=folder / "answers.json", split=split)),
                ("evidence", wildqa.evaluate_evidence(gt=gt, pred=folder / "evidence.json",
                                                      split=split))]
    raise ValueError(f"no run outputs for benchmark {benchmark!r}")
