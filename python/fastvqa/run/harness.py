# SPDX-License-Identifier: Apache-2.0
"""Running a model over a benchmark's records: one :class:`Outcome` per
question, from the raw reply to the parsed option and spans.

A *pipeline* is any function ``ask(record, video_path) -> str`` (the model's
raw reply to one question); :func:`run_questions` calls it for every record
(``workers`` at a time: the calls wait on HTTP servers), parses each reply
with :mod:`fastvqa.parse` and reports progress. Nothing here knows a model
or a benchmark file format: :mod:`fastvqa.run.pipelines` builds the ``ask``
functions and :mod:`fastvqa.run.outputs` writes what ``fastvqa eval`` reads.
"""

from __future__ import annotations

import math
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Callable, Mapping, NamedTuple, Optional, Sequence

import numpy as np

from fastvqa.errors import InputError

#: the option of an outcome whose reply named none (``fastvqa.data.answers.NO_ANSWER``).
NO_OPTION = -1


class Outcome(NamedTuple):
    """One question's result.

    ``key``: the record's key (``"<video_id>_<question_id>"``); ``response``:
    the model's raw reply; ``option``: the 0-based option the reply chose,
    :data:`NO_OPTION` when it named none (or the question has no options);
    ``spans``: ``[(start, end), ...]`` seconds, both ends inclusive, in the
    reply's order (empty when it gave none); ``answer_text``: the reply's
    free-text answer for open questions (``""`` for multiple choice);
    ``parse``: how the reply was read (the parser's rule names) or why it
    could not be (``"option: ...; span: ..."``); ``parsed``: everything the
    question asks for was read; ``seconds``: wall time of the question
    (frames, requests, parsing); ``judged``: the option came from the judge
    model, the rules having found none."""

    key: str
    response: str
    option: int
    spans: list
    answer_text: str
    parse: str
    parsed: bool
    seconds: float
    judged: bool = False

    def to_dict(self) -> dict:
        return {"key": self.key, "response": self.response, "option": self.option,
                "spans": [[s, e] for s, e in self.spans], "answer_text": self.answer_text,
                "parse": self.parse, "parsed": self.parsed, "judged": self.judged}


class StageClock:
    """Wall time per stage of the questions, summed over questions (stages
    of questions in flight together overlap, so the sums can exceed the
    run's wall time), with the number of times each ran. Thread-safe: the
    pipelines' workers time their stages into one clock.

    >>> clock = StageClock()
    >>> with clock.stage("decode"):
    ...     pass
    >>> clock.rows()[0][:2]
    ('decode', 1)
    """

    def __init__(self):
        self._lock = threading.Lock()
        self._rows: dict = {}  # name -> [seconds, times]

    @contextmanager
    def stage(self, name: str):
        start = time.perf_counter()
        try:
            yield
        finally:
            self.add(name, time.perf_counter() - start)

    def add(self, name: str, seconds: float) -> None:
        with self._lock:
            row = self._rows.setdefault(name, [0.0, 0])
            row[0] += seconds
            row[1] += 1

    def rows(self) -> list:
        """``[(stage, times, seconds, mean seconds), ...]`` in first-use order."""
        with self._lock:
            return [(name, n, secs, secs / n) for name, (secs, n) in self._rows.items()]

    def format_table(self) -> str:
        lines = [f"{'stage':14} {'times':>7} {'seconds':>9} {'s/time':>9}"]
        lines += [f"{name:14} {n:7d} {secs:9.3f} {mean:9.4f}"
                  for name, n, secs, mean in self.rows()]
        return "\n".join(lines)


def parse_reply(text: str, record: Any, *, duration: Optional[float] = None,
                frame_times: Optional[Sequence[float]] = None) -> tuple:
    """``(option, spans, answer_text, how, parsed)`` from a reply to ``record``.

    Multiple choice (``record.options`` non-empty): the option and the spans
    through :func:`fastvqa.parse.parse_response` (spans first, so a time is
    never read as an option). Open questions: the text after ``Answer:``
    (or the whole first line) and the spans. ``frame_times``: the seconds of
    the frames the model was shown, numbered from 1 as the prompt numbers
    them, so that "frames 3 to 5" reads as ``(frame_times[2], frame_times[4])``.
    ``parsed`` is True when everything the question asks for was found (an
    option, or an answer text, and at least one span).

    >>> from fastvqa.data import QARecord
    >>> r = QARecord("v1", "0", "What does the cube do?", ["slides", "rests"], answer=1)
    >>> parse_reply("Answer: B\\nSpan: 1.0 s - 2.5 s", r)
    (1, [(1.0, 2.5)], '', 'answer_phrase; unit_range', True)
    >>> parse_reply("It rests, in frames 2 to 3.", r, frame_times=[0.0, 4.0, 8.0])[1]
    [(4.0, 8.0)]
    """
    from fastvqa.parse import parse_response

    options = list(record.options) if record.options else None
    got = parse_response(text, options, duration=duration, frame_times=frame_times)
    spans = [(float(s), float(e)) for s, e in (got.spans.spans or [])]
    span_how = got.spans.how if spans else f"span: {got.spans.error}"
    if options is not None:
        opt = got.answer
        option = int(opt.index) if opt.error is None else NO_OPTION
        option_how = opt.how if opt.error is None else f"option: {opt.error}"
        return option, spans, "", f"{option_how}; {span_how}", option >= 0 and bool(spans)
    from fastvqa.parse import answer_text

    answer = answer_text(text)
    answer_how = "answer line" if answer else "answer: none found"
    return NO_OPTION, spans, answer, f"{answer_how}; {span_how}", bool(answer) and bool(spans)


def run_questions(records: Sequence[Any], videos: Mapping[str, Path],
                  ask: Callable[[Any, Path], tuple], *, workers: int = 4,
                  progress: Optional[bool] = None,
                  judge: Optional[Callable[[Any, str], Optional[int]]] = None,
                  clock: Optional[StageClock] = None) -> list:
    """Every record through ``ask``, in input order.

    ``ask(record, path) -> (reply, frame_times)``: the model's raw reply and
    the seconds of the frames it was shown (``None`` when it was shown no
    numbered frames). ``videos``: video id -> file; a record whose video is
    missing raises :class:`~fastvqa.errors.InputError` before any question
    is asked. ``workers`` questions are in flight at once. An exception in
    ``ask`` (the server went down, a decode failed) stops the run and is
    raised once the questions in flight have ended; the replies received are
    in the model client's cache, so a rerun asks only the rest.
    ``judge(record, reply) -> option or None``: asked only for a
    multiple-choice reply in which the rules found no option (off when None);
    an option it gives is marked ``judged``. ``clock``: the parse and the
    judge are timed into it as stages ``"parse"`` and ``"judge"`` (``ask``
    times its own).
    """
    from fastvqa._progress import Progress

    missing = sorted({r.video_id for r in records} - set(videos))
    if missing:
        shown = ", ".join(missing[:5]) + (" ..." if len(missing) > 5 else "")
        raise InputError(f"{len(missing)} videos of the records are not in --videos: {shown}")
    clock = StageClock() if clock is None else clock
    bar = Progress(len(records), progress is not False, desc="questions", unit="question",
                   force=progress is True)

    def one(record) -> Outcome:
        start = time.perf_counter()
        reply, frame_times = ask(record, videos[record.video_id])
        duration = record.duration if record.duration is not None and \
            math.isfinite(record.duration) else None
        with clock.stage("parse"):
            option, spans, answer, how, parsed = parse_reply(reply, record, duration=duration,
                                                             frame_times=frame_times)
        judged = False
        if judge is not None and record.options and option < 0:
            with clock.stage("judge"):
                got = judge(record, reply)
            if got is not None:
                option, judged = got, True
                how = f"option by the judge model; {how.split('; ', 1)[-1]}"
                parsed = bool(spans)
        bar.update()
        return Outcome(record.key, reply, option, spans, answer, how, parsed,
                       time.perf_counter() - start, judged)

    try:
        if workers <= 1 or len(records) <= 1:
            return [one(r) for r in records]
        with ThreadPoolExecutor(max_workers=workers) as pool:
            futures = [pool.submit(one, r) for r in records]
            try:
                return [f.result() for f in futures]
            except BaseException:
                for f in futures:
                    f.cancel()
                raise
    finally:
        bar.close()


def summary(outcomes: Sequence[Outcome]) -> dict:
    """Counts for the run record: questions, replies fully parsed, replies
    without an option / an answer, without a span; median and total seconds."""
    secs = np.array([o.seconds for o in outcomes], dtype=np.float64)
    return {"questions": len(outcomes),
            "parsed": sum(o.parsed for o in outcomes),
            "judged": sum(o.judged for o in outcomes),
            "no_option_or_answer": sum(o.option < 0 and not o.answer_text for o in outcomes),
            "no_span": sum(not o.spans for o in outcomes),
            "seconds_median": float(np.median(secs)) if len(secs) else 0.0,
            "seconds_total": float(secs.sum())}
