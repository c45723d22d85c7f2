# SPDX-License-Identifier: Apache-2.0
"""The pipelines ``fastvqa run`` runs, as ``ask(record, video) -> (reply,
frame_times)`` functions for :func:`fastvqa.run.harness.run_questions`.

- :func:`vlm_pipeline`: one vision-language model answers and grounds from
  frames sampled uniformly over the whole video (the papers' zero-shot VLM
  baseline rows): the frames travel as images, each labelled with its time,
  and a reply naming frames ("frames 3 to 5") is read at those frames' own
  times.
- :func:`devi_outcomes`: DeVi (:func:`fastvqa.devi.run_devi`) over the
  records, its predictions as outcomes.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any, Callable, Mapping, Optional, Sequence

import numpy as np

from fastvqa.run.harness import NO_OPTION, Outcome


def sampled_frames(path: Path, frames: int, *, backend: str = "pyav") -> tuple:
    """``(frames (N, H, W, 3) uint8, times (N,) seconds from the video's
    start)``: ``frames`` frames spread uniformly over the video
    (:class:`fastvqa.video.Uniform`), times as the container states them."""
    from fastvqa.video import Uniform, VideoDecoder

    with VideoDecoder(path, backend=backend) as decoder:
        start = float(decoder.metadata.start)
        got = decoder.read(Uniform(frames))
    return np.asarray(got.data), np.asarray(got.pts_seconds, dtype=np.float64) - start


def vlm_pipeline(answerer: Any, *, frames: int = 8, backend: str = "pyav",
                 clock: Optional[Any] = None) -> Callable[[Any, Path], tuple]:
    """``ask`` for :func:`~fastvqa.run.harness.run_questions`: ``frames``
    uniform frames of the record's video, then ``answerer.answer(frames,
    times, question, options)`` (a :class:`fastvqa.llm.vision.ChatAnswerer`:
    multiple choice where the record has options, an open answer otherwise).
    Returns the raw reply and the frames' times (so "frame 3" in a reply
    reads as the third frame's time). ``clock`` (a
    :class:`~fastvqa.run.harness.StageClock`): the stages ``"decode"`` (the
    frames) and ``"answer"`` (images encoded, the request and its reply) are
    timed into it."""
    from fastvqa.run.harness import StageClock

    clock = StageClock() if clock is None else clock

    def ask(record, path):
        with clock.stage("decode"):
            data, times = sampled_frames(path, frames, backend=backend)
        with clock.stage("answer"):
            reply = answerer.answer(data, times, record.question, list(record.options))
        return reply, times

    return ask


def devi_outcomes(records: Sequence[Any], videos: Mapping[str, Path], components: Any, *,
                  cache_dir: Optional[Path] = None, progress: Optional[bool] = None,
                  **devi_options: Any) -> tuple:
    """``(outcomes, result)``: DeVi over ``records`` (multiple choice, or open
    questions answered in free text), one
    :class:`~fastvqa.run.harness.Outcome` per record in order, and the
    :class:`fastvqa.devi.DeViResult` (latencies, consistency report). The
    reply kept is the final answer's (after self-consistency); its parse is
    DeVi's own, not repeated here."""
    from fastvqa.devi import run_devi

    start = time.perf_counter()
    result = run_devi(dict(videos), list(records), components, cache_dir=cache_dir,
                      progress=progress, **devi_options)
    per = (time.perf_counter() - start) / max(len(records), 1)
    outcomes = []
    for record in records:
        p = result.predictions[record.key]  # DeVi parsed its replies already
        how = p.final.error or "DeVi's parse of its final answer"
        if p.reasked:
            how += f"; after {p.reasked} self-consistency re-asks"
        said = p.final.text  # an open question's answer ("" for multiple choice)
        outcomes.append(Outcome(record.key, p.final.raw,
                                int(p.option) if p.option >= 0 else NO_OPTION,
                                [tuple(map(float, s)) for s in p.spans], said, how,
                                (p.option >= 0 or bool(said)) and bool(p.spans), per))
    return outcomes, result


def judge_option(model: Any) -> Callable[[Any, str], Optional[int]]:
    """``judge(record, reply) -> option or None`` for
    :func:`~fastvqa.run.harness.run_questions`: ``model`` (a language model,
    ``complete(messages) -> str``) is shown the question, its options and the
    reply (:data:`fastvqa.llm.prompts.JUDGE`), and its own reply is read by
    :func:`fastvqa.parse.parse_option` (None when it names no option)."""
    from fastvqa.devi.pipeline import format_options
    from fastvqa.llm.prompts import JUDGE
    from fastvqa.parse import parse_option

    def judge(record, reply: str) -> Optional[int]:
        options = list(record.options)
        said = model.complete(JUDGE.messages(question=record.question,
                                             options=format_options(options), reply=reply))
        got = parse_option(said, options)
        return int(got.index) if got.error is None else None

    return judge
