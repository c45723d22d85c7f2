# SPDX-License-Identifier: Apache-2.0
"""``fastvqa eval ... --pred-text responses.jsonl``: raw model responses,
parsed with :mod:`fastvqa.parse` into each benchmark's ordinary prediction
and scored by that benchmark's own evaluation.

The responses file is JSON Lines, one object per question: the question's
key (the field the benchmark's ``--pred`` format keys by) and
``"response"``, the model's text (``null``: no usable response, a failed
parse). Keys, per benchmark:

- ``nextgqa``: ``"key"``, ``"<video_id>_<qid>"`` (the grounding file's key);
- ``deveqa``: ``"qid"`` (as the DeVi JSON Lines) or ``"key"``
  (``"<video_id>_<qid>"``);
- ``sokbench``: ``"key"``, the record key ``"<video>_<question_id>"`` or the
  question id (as the ``--pred`` mapping);
- ``wildqa evidence``: no key; one line per ground-truth question, in its
  order (as the ``--pred`` list).

A failed parse (including a reply the parser could not read at all: a
failure ``"the parser failed on this response (<error type>)"``, never a
traceback) is scored by the benchmark's rule (:data:`FAILURE_RULES`);
a question with no line at all is what a missing ``--pred`` entry is. The
counts go into ``result.info["parse"]`` (``responses``, and per part
``<part>_failures`` and ``<part>_failure_rate``, a fraction), one line of
the printed table (``info["parse_failures"]``), and the per-question columns
``answer_parse`` / ``span_parse`` (the rule that matched, or ``"failed: "``
and why; None for a question without a response).
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any, NamedTuple, Optional, Sequence

import numpy as np

from fastvqa.data.errors import DataFormatError
from fastvqa.data.io import iter_json_lines
from fastvqa.errors import CommandError, InputError
from fastvqa.metrics.result import MetricResult
from fastvqa.parse import OptionParse, ResponseParse, SpanParse, parse_response

#: What a failed parse scores as, per benchmark (printed in the docs and
#: kept in ``info["parse"]["failure_rule"]``).
FAILURE_RULES = {
    "nextgqa": {
        "answer": "a wrong answer (an index that is no option; still answered, so in the "
                  "Acc@QA denominator)",
        "span": "zero overlap (IoU = IoP = 0; the question stays in the grounding "
                "denominators: a response was given, so it is not skipped as missing)",
    },
    "sokbench": {
        "answer": "SOK-Bench's own fallback: the option with the highest BLEU against the "
                  "response (paper §4.1)",
    },
    "wildqa evidence": {
        "span": "no evidence (an empty span list, as the --pred format writes it)",
    },
}
FAILURE_RULES["deveqa"] = FAILURE_RULES["nextgqa"]

#: The span a failed span parse is scored as under both grounded-QA modes: a
#: reversed span, which ``grounded_qa`` scores IoU = IoP = 0 (``nextgqa``:
#: reversed predictions score 0; ``deveqa-repo``: sanitised to a zero-length
#: prediction, IoP 0).
FAILED_SPAN = (1.0, 0.0)


class Response(NamedTuple):
    """One line of a responses file: its line number, key (None where the
    benchmark keys by order) and text (None for ``"response": null``)."""

    line: int
    key: Optional[str]
    text: Optional[str]


def add_arguments(parser: argparse.ArgumentParser, group, *, fps: bool) -> None:
    """``--pred-text`` (in ``group``, the ``--pred``/``--pred-text``
    mutually exclusive group) and, where responses may hold spans
    (``fps``), ``--pred-fps``."""
    from fastvqa._argtypes import positive_float

    group.add_argument("--pred-text", metavar="FILE.jsonl",
                       help="raw model responses, one JSON object per line with the question's "
                            'key and "response"; parsed into answers/spans (fastvqa.parse) and '
                            "scored as --pred (docs/evaluation.md, Free-text predictions)")
    if fps:
        parser.add_argument("--pred-fps", type=positive_float, metavar="FPS",
                            help="with --pred-text: frames per second of frame indices in the "
                                 "responses (\"frames 30 to 90\"); without it they fail to "
                                 "parse")


def one_source(pred: Any, pred_text: Any) -> None:
    """Exactly one of ``pred`` and ``pred_text``, else :class:`CommandError`."""
    if (pred is None) == (pred_text is None):
        raise CommandError("give exactly one of --pred (a prediction file) and --pred-text "
                           "(raw responses)")


def read_responses(path: Any, key_fields: Sequence[str]) -> list[Response]:
    """The lines of a responses file; ``key_fields``: the fields a line's key
    may be in (the first present is used; none: keyed by order).

    Raises :class:`~fastvqa.data.DataFormatError` naming the line for a line
    that is not an object, a missing or non-scalar key, a key given twice,
    or a ``"response"`` that is missing or neither a string nor null."""
    out: list[Response] = []
    seen: set[str] = set()
    for line, item in iter_json_lines(path):
        where = f"line {line}"
        if not isinstance(item, dict):
            raise DataFormatError(path, f"expected an object {{key, \"response\"}}, got "
                                        f"{type(item).__name__}", record=where)
        key = None
        if key_fields:
            field = next((f for f in key_fields if f in item), None)
            value = item.get(field) if field else None
            if value is None or isinstance(value, (bool, list, dict, float)):
                raise DataFormatError(path, f"missing the question's key "
                                            f"({' or '.join(map(repr, key_fields))})",
                                      record=where)
            key = str(value)
            if key in seen:
                raise DataFormatError(path, "the same key appears twice", record=key)
            seen.add(key)
        if "response" not in item:
            raise DataFormatError(path, "missing", record=where, field="response")
        text = item["response"]
        if text is not None and not isinstance(text, str):
            raise DataFormatError(path, f"expected a string or null, got "
                                        f"{type(text).__name__}", record=where, field="response")
        out.append(Response(line, key, text))
    if not out:
        raise CommandError(f"{path}: holds no responses; nothing to score")
    return out


def _parse(response: Response, options, duration, *, fps, normalized: bool,
           index_base: int) -> ResponseParse:
    if response.text is None:
        failed = "no response (null)"
        return ResponseParse(None if options is None else OptionParse(None, "", failed),
                             SpanParse([], "", failed))
    try:
        return parse_response(response.text, options, duration=duration, fps=fps,
                              normalized=normalized, index_base=index_base)
    except InputError:
        raise  # a bad argument (duration, fps): the run's error, not this response's
    except Exception as err:  # one reply never aborts a whole run
        # The parser is linear and does not raise on any str; should a reply
        # still break it, that reply is a counted failure, not a traceback.
        failed = f"the parser failed on this response ({type(err).__name__})"
        return ResponseParse(None if options is None else OptionParse(None, "", failed),
                             SpanParse([], "", failed))


def _column(part) -> Optional[str]:
    """A per-question cell: the rule that matched, or ``"failed: <why>"``."""
    if part is None:
        return None
    return part.how if part.error is None else f"failed: {part.error}"


class _Tally:
    """Parse outcomes per record, for the report."""

    def __init__(self, n: int, parts: Sequence[str]):
        self.parts = tuple(parts)
        self.cells = {part: [None] * n for part in parts}
        self.responses = 0
        self.failures = dict.fromkeys(parts, 0)
        self.multi_span = 0

    def add(self, i: int, parsed: ResponseParse, response: Response, path: Any) -> None:
        if any(cells[i] is not None for cells in self.cells.values()):
            raise DataFormatError(path, "a second response for the same question (by its key "
                                        "and by its question id)", record=f"line {response.line}")
        self.responses += 1
        for part in self.parts:
            got = parsed.answer if part == "answer" else parsed.spans
            self.cells[part][i] = _column(got)
            self.failures[part] += got.error is not None

    def report(self, result: MetricResult, benchmark: str, path: Any, **extra: Any) -> None:
        """Writes the counts into ``result`` (``info["parse"]``, the table
        line ``info["parse_failures"]``, the per-question columns)."""
        n = self.responses
        info: dict[str, Any] = {"responses": n}
        line = []
        for part in self.parts:
            k = self.failures[part]
            info[f"{part}_failures"] = k
            info[f"{part}_failure_rate"] = k / n if n else float("nan")
            line.append(f"{part} {k} of {n} ({100.0 * k / n:.1f}%)" if n else f"{part} 0 of 0")
            result.per_question[f"{part}_parse"] = self.cells[part]
        info["failure_rule"] = {p: FAILURE_RULES[benchmark][p] for p in self.parts}
        info.update(extra)
        result.info["parse"] = info
        result.info["parse_failures"] = ", ".join(line)
        result.info["pred"] = None
        result.info["pred_text"] = str(path)


def _lookup(records: Sequence[Any], by_qid: bool) -> dict[str, int]:
    index = {rec.key: i for i, rec in enumerate(records)}
    if by_qid:
        for i, rec in enumerate(records):
            index.setdefault(rec.question_id, i)
    return index


def grounded_predictions(path: Any, records: Sequence[Any], *, by_qid: bool, fps=None,
                         normalized: bool = False, index_base: int = 1, gt: Any = None):
    """NExT-GQA / DeVE-QA: ``(spans, answers, tally)`` in the shapes
    :func:`fastvqa.evaluation.nextgqa` scores: ``spans`` ``{key: (s, e) or
    None}`` (the first span a response gives, :data:`FAILED_SPAN` where none
    parses; None for a key that names no question), ``answers`` ``{key:
    (index or -1, None)}`` (None when the ground truth has no options: then
    only the grounding metrics), in seconds (``normalized``: bare numbers in
    the responses are fractions, scaled by each record's duration)."""
    responses = read_responses(path, ("qid", "key") if by_qid else ("key",))
    where = _lookup(records, by_qid)
    with_answers = all(rec.options and isinstance(rec.answer, int) for rec in records)
    tally = _Tally(len(records), ("answer", "span") if with_answers else ("span",))
    spans: dict[str, Any] = {}
    answers: Optional[dict[str, Any]] = {} if with_answers else None
    for response in responses:
        i = where.get(response.key)
        if i is None:
            spans[response.key] = None  # counted as unmatched by the scorer
            continue
        rec = records[i]
        if normalized and rec.duration is None:
            raise DataFormatError(gt, "no duration to scale the normalised responses "
                                  "(pass --durations)", record=rec.key, field="duration")
        parsed = _parse(response, rec.options if with_answers else None, rec.duration,
                        fps=fps, normalized=normalized, index_base=index_base)
        tally.add(i, parsed, response, path)
        if len(parsed.spans.spans) > 1:
            tally.multi_span += 1
        spans[response.key] = parsed.spans.spans[0] if parsed.spans.spans else FAILED_SPAN
        if answers is not None:
            index = parsed.answer.index
            answers[response.key] = (-1 if index is None else index, None)
    return spans, answers, tally


def sokbench_outputs(path: Any, records: Sequence[Any], *, index_base: int):
    """SOK-Bench: ``(outputs, tally)``, ``outputs`` ``{key: index or
    response text}`` for :func:`~fastvqa.metrics.multiple_choice_accuracy`
    with ``parse_text=False`` (a failed parse keeps its text, which goes
    straight to the BLEU fallback; a null response stays None: missing)."""
    responses = read_responses(path, ("key",))
    where = _lookup(records, by_qid=True)
    tally = _Tally(len(records), ("answer",))
    outputs: dict[str, Any] = {}
    for response in responses:
        i = where.get(response.key)
        if i is None:
            outputs[response.key] = None  # an unknown key, reported by the metric
            continue
        parsed = _parse(response, records[i].options, None, fps=None, normalized=False,
                        index_base=index_base)
        tally.add(i, parsed, response, path)
        index = parsed.answer.index
        outputs[response.key] = index if index is not None else response.text
    return outputs, tally


def evidence_predictions(path: Any, records: Sequence[Any], gt: Path, *, fps=None):
    """WildQA evidence: ``(spans, tally)``, one ``(k, 2)`` float64 array per
    question in ground-truth order (every span a response gives, clamped to
    the video; empty where none parses)."""
    responses = read_responses(path, ())
    if len(responses) != len(records):
        raise DataFormatError(path, f"has {len(responses)} responses but the ground truth "
                                    f"{gt} has {len(records)} questions; give one line per "
                                    "question, in the ground-truth file's order")
    tally = _Tally(len(records), ("span",))
    spans = []
    for i, (response, rec) in enumerate(zip(responses, records)):
        parsed = _parse(response, None, rec.duration, fps=fps, normalized=False, index_base=1)
        tally.add(i, parsed, response, path)
        spans.append(np.array(parsed.spans.spans, dtype=np.float64).reshape(-1, 2))
    return spans, tally


__all__ = ["FAILED_SPAN", "FAILURE_RULES", "Response", "add_arguments", "evidence_predictions",
           "grounded_predictions", "one_source", "read_responses", "sokbench_outputs"]
