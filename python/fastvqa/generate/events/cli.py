# SPDX-License-Identifier: Apache-2.0
"""``fastvqa generate events``: DeVE-QA- or SOK-Bench-style multiple-choice
questions from an ActivityNet-Captions-style file, through a language model.

``--llm`` is an OpenAI-compatible server's API root (``http://127.0.0.1:8000/v1``,
with ``--model``; the key, if any, from ``$OPENAI_API_KEY``) or a Python
function ``module:function`` (or ``path/to/file.py:function``) taking the chat
messages and returning the reply text. Replies are cached in ``--cache``
(JSON Lines, appended to, reused by a rerun); questions go to ``--out``
(``--style deveqa``: a JSON list, or JSON Lines for ``.jsonl``, that
``fastvqa.data.load_deveqa`` reads; ``--style sokbench``: the released
``{type: [question]}`` JSON that ``fastvqa.data.load_sokbench`` reads), every
rejected reply, question and left-out caption to ``--rejections`` (JSON
Lines, one reason code each). No output is overwritten; progress and the
summary go to stderr. ``--style sokbench`` also takes a vision-language model
(``--vlm``, the same two forms, ``--vlm-model``) for the keyframes of
``--videos``; its replies share the cache.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

from fastvqa._argtypes import int_at_least, positive_float, unit_interval
from fastvqa.errors import CommandError

STYLES = ("deveqa", "sokbench")


def add_arguments(p: argparse.ArgumentParser) -> None:
    """The options of ``fastvqa generate events`` (sets ``func=run``)."""
    p.add_argument("--captions", type=Path, required=True, metavar="FILE",
                   help="timed captions, ActivityNet Captions JSON {video_id: {duration, "
                        "timestamps, sentences}}")
    p.add_argument("--llm", required=True, metavar="URL|module:function",
                   help="the language model: an OpenAI-compatible server's API root "
                        "(http://host:port/v1, with --model) or a Python function "
                        "module:function (or file.py:function) of the chat messages")
    p.add_argument("--model", metavar="NAME",
                   help="the model name the --llm server serves (required with a URL)")
    p.add_argument("--llm-deadline", type=positive_float, metavar="SECONDS",
                   help="with a URL --llm: the most seconds all the model calls may take "
                        "together (attempts, retries and waits); past it the run fails, the "
                        "replies received kept in --cache for a rerun (default: no limit; "
                        "each attempt is limited to 60 s)")
    p.add_argument("--out", type=Path, required=True, metavar="FILE",
                   help="the questions (a new file; .jsonl gives JSON Lines for deveqa)")
    p.add_argument("--style", choices=STYLES, default="deveqa",
                   help="deveqa: 5-way grounded questions from each caption (the paper's "
                        "prompt, filter and distractor recipe); sokbench: 4-way knowledge "
                        "questions from a situation graph per video")
    p.add_argument("--seed", type=int_at_least(0), default=0,
                   help="seed of the caption subsampling and the options (an integer >= 0)")
    p.add_argument("--cache", type=Path, metavar="FILE",
                   help="reply cache, JSON Lines (made when missing, appended to, reused: a "
                        "rerun makes no model call)")
    p.add_argument("--rejections", type=Path, metavar="FILE",
                   help="also write every rejection and left-out caption as JSON Lines (a new "
                        "file)")
    p.add_argument("--max-captions", type=int_at_least(1), metavar="N",
                   help="deveqa: sample at most N of the captions that pass the filter")
    p.add_argument("--min-words", type=int_at_least(0), default=11,
                   help="deveqa: a caption needs at least this many words (the paper: more "
                        "than 10)")
    p.add_argument("--min-coverage", type=unit_interval, default=0.95,
                   help="deveqa: a video's captions must cover this fraction of it")
    p.add_argument("--coverage", choices=("union", "sum"), default="union",
                   help="deveqa: coverage as the union or the sum of the caption spans")
    p.add_argument("--knowledge", choices=("llm", "builtin"), default="llm",
                   help="sokbench: llm: general and situated commonsense knowledge from the "
                        "--llm with the paper's prompts (self-prompting, two iterations); "
                        "builtin: a small built-in cooking table, a demo aid, not the paper's "
                        "method")
    p.add_argument("--vlm", metavar="URL|module:function",
                   help="sokbench: a vision-language model that finds objects, attributes (the "
                        "paper's prompt) and spatial relations in keyframes of every step, "
                        "joined into the situation graph; needs --videos (the videos, named by "
                        "the captions' video ids). Without it the visual stage is skipped, and "
                        "the summary says so")
    p.add_argument("--vlm-model", metavar="NAME",
                   help="sokbench: the model name the --vlm server serves (required with a URL)")
    p.add_argument("--keyframes", type=int_at_least(1), default=2, metavar="K",
                   help="sokbench, with --vlm: frames per step sent to the vision model, spread "
                        "uniformly over the step")
    p.add_argument("--cross-video-distractors", action="store_true",
                   help="sokbench: fill a question short of same-category distractors from "
                        "other videos (each question records which options came from where); "
                        "off: such a question is rejected, as options from other videos may "
                        "be true of this one")
    p.add_argument("--workers", type=int_at_least(1), default=1,
                   help="deveqa: model requests in flight at once (the set does not depend "
                        "on it)")
    p.add_argument("--encoder", metavar="SPEC",
                   help="deveqa: rank the other-time distractors by frames outside each "
                        "question's segment (the paper's way) with this image-text encoder: "
                        "open_clip:ARCH@CHECKPOINT, open_clip:ARCH (random weights, for tests) "
                        "or hf:FOLDER; needs --videos (without --encoder: drawn from the "
                        "same answers by text only)")
    p.add_argument("--videos", type=Path, metavar="DIR",
                   help="the videos, named by the captions' video ids (searched "
                        "recursively): deveqa, with --encoder, ranks distractors by their "
                        "frames (a video missing or unreadable falls back to text only); "
                        "sokbench, with --vlm, sends their keyframes")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.set_defaults(func=run)


def load_callable(spec: str, option: str = "--llm") -> Any:
    """The function named ``module:function`` or ``path/file.py:function``
    (:func:`fastvqa._callables.load_callable`); CommandError, naming
    ``option``, otherwise."""
    from fastvqa._callables import load_callable as load

    return load(spec, f"{option} {spec!r}", error=CommandError,
                expected="http(s)://... or module:function")


def language_model(spec: str, model: Any, deadline: Any = None, *, option: str = "--llm",
                   model_option: str = "--model") -> Any:
    """The ``--llm`` (or ``option``, e.g. ``--vlm``) as a language model (a
    client for a URL, the function otherwise); ``model``: the served model's
    name (``model_option``); ``deadline``: ``--llm-deadline`` (URL only)."""
    if spec.startswith(("http://", "https://")):
        if not model:
            raise CommandError(f"{option} is a URL: give the served model's name with "
                               f"{model_option}")
        from fastvqa.llm.client import ChatCompletionsClient

        return ChatCompletionsClient(spec, model, api_key=os.environ.get("OPENAI_API_KEY"),
                                     max_total_seconds=deadline)
    if model:
        raise CommandError(f"{model_option} names a served model; it goes with an http(s) "
                           f"{option}")
    if deadline is not None:
        raise CommandError("--llm-deadline limits a server's calls; it goes with an http(s) "
                           "--llm")
    return load_callable(spec, option)


def sokbench_vision(args: argparse.Namespace, cache: Any) -> Any:
    """``--style sokbench`` with ``--vlm``: ``(the vision model behind the
    reply cache, {video id: file})``; None without ``--vlm``. CommandError
    for the SOK-Bench options out of place (before any model call)."""
    from fastvqa.generate.events.deveqa import cached_model

    spec = getattr(args, "vlm", None)
    sok = args.style == "sokbench"
    if not sok and (spec is not None or getattr(args, "cross_video_distractors", False)):
        raise CommandError("--vlm and --cross-video-distractors are options of --style sokbench")
    if spec is None:
        if getattr(args, "vlm_model", None):
            raise CommandError("--vlm-model names the --vlm server's model; give --vlm too")
        if sok and getattr(args, "videos", None) is not None:
            raise CommandError("--videos goes with --vlm for --style sokbench (the keyframes "
                               "are sent to the vision model)")
        return None
    if getattr(args, "videos", None) is None:
        raise CommandError("--vlm needs --videos DIR: the videos, named by the captions' video "
                           "ids")
    from fastvqa.extract.engine import video_paths

    videos = video_paths(args.videos)
    vlm = language_model(spec, getattr(args, "vlm_model", None), option="--vlm",
                         model_option="--vlm-model")
    return cached_model(vlm, cache), videos


def run(args: argparse.Namespace) -> int:
    """Runs ``fastvqa generate events``; returns the exit status: 0, or 1
    when no question was generated (the outputs are written all the same:
    the rejections say why). The reply cache is appended to as replies
    arrive and never removed, so a failed run's rerun resumes from it."""
    from fastvqa._outputs import OutputFiles
    from fastvqa.generate.events.captions import filter_captions, load_events
    from fastvqa.generate.events.deveqa import ResponseCache, cached_model

    outputs = OutputFiles()  # refused now, before any work, if taken
    out = outputs.add(args.out, "--out")
    rej_out = outputs.add(args.rejections, "--rejections")
    if args.cache is not None:
        if args.cache.exists() and not args.cache.is_file():
            raise CommandError(f"--cache {args.cache}: not a regular file")
        if os.path.realpath(args.cache) in {os.path.realpath(p) for p in (out, rej_out) if p}:
            raise CommandError("--cache must not be the --out or --rejections file")
    if not args.captions.exists():
        raise CommandError(f"--captions {args.captions}: no such file")
    if not args.captions.is_file():
        raise CommandError(f"--captions {args.captions}: not a regular file")
    llm = language_model(args.llm, args.model, getattr(args, "llm_deadline", None))
    model = cached_model(llm, ResponseCache(args.cache))
    vision = sokbench_vision(args, model.cache)
    events = load_events(args.captions)
    if not events:
        raise CommandError(f"--captions {args.captions}: holds no captions")
    progress = None if not args.no_progress else False
    if args.style == "deveqa":
        filtered = filter_captions(events, min_words=args.min_words,
                                   min_coverage=args.min_coverage, coverage_mode=args.coverage,
                                   max_captions=args.max_captions, seed=args.seed)
    else:  # SOK-Bench uses every step; only empty spans are left out
        filtered = filter_captions(events, min_words=0, pronouns=None, min_coverage=0.0)
    print(f"fastvqa generate events: {filtered.summary()}", file=sys.stderr)
    rows: list = [dict(stage="captions", reason=d.reason, video_id=d.video_id,
                       source=str(d.index), detail=d.detail, response="")
                  for d in filtered.dropped]
    if args.style == "deveqa":
        from fastvqa.generate.events.deveqa import (frame_retrieval_options, generate_deveqa,
                                                    write_records)

        result = generate_deveqa(filtered.kept, model, seed=args.seed, workers=args.workers,
                                 progress=progress,
                                 **frame_retrieval_options(args.encoder, args.videos))
        n_questions = len(result.questions)
        summary = result.summary()
    else:
        from fastvqa.generate.events.sokbench import (add_visual_facts, generate_sokbench,
                                                      language_model_knowledge,
                                                      language_model_questions,
                                                      situations_from_events, table_knowledge)

        rejected: list = []
        situations = situations_from_events(filtered.kept, llm=model, rejections=rejected)
        stats = [model]
        if vision is not None:
            vlm, videos = vision
            situations = add_visual_facts(situations, videos, vlm, keyframes=args.keyframes,
                                          rejections=rejected)
            stats.append(vlm)
        knowledge = (language_model_knowledge(model) if args.knowledge == "llm"
                     else table_knowledge())
        # A model is always given here, so every question is worded by it
        # (the templates serve the Python API without a question model).
        result = generate_sokbench(situations, knowledge,
                                   questions=language_model_questions(model), seed=args.seed,
                                   cross_video_distractors=args.cross_video_distractors,
                                   model_stats=stats, rejections=rejected)
        for line in result.stage_lines():
            print(f"fastvqa generate events: {line}", file=sys.stderr)
        n_questions = result.n_questions
        summary = result.summary()
    rows.extend(r.to_dict() for r in result.rejections)
    with outputs:
        if args.style == "deveqa":
            write_records(result.questions, outputs.temp(out),
                          jsonl=out.suffix.lower() == ".jsonl")
        else:
            from fastvqa.generate.events.sokbench import write_sokbench

            write_sokbench(result.data, outputs.temp(out))
        if rej_out is not None:
            outputs.temp(rej_out).write_text(
                "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows),
                encoding="utf-8")
        outputs.commit()
    print(f"fastvqa generate events: {summary}", file=sys.stderr)
    print(f"questions: {out} ({n_questions})", file=sys.stderr)
    if rej_out is not None:
        print(f"rejections: {rej_out} ({len(rows)})", file=sys.stderr)
    if not n_questions:
        where = f"see {rej_out}" if rej_out is not None else "--rejections FILE lists them"
        print(f"fastvqa generate events: error: no question was generated: every caption was "
              f"left out or every reply and question rejected ({where})", file=sys.stderr)
        return 1
    return 0


def main(argv: Any = None) -> int:  # pragma: no cover (the lead wires `fastvqa generate`)
    """Standalone entry point for development: ``python -m
    fastvqa.generate.events.cli ...`` (errors of the user's as one line)."""
    from fastvqa.errors import InputError

    parser = argparse.ArgumentParser(prog="fastvqa generate events")
    add_arguments(parser)
    args = parser.parse_args(argv)
    try:
        return run(args)
    except (InputError, FileNotFoundError, FileExistsError) as err:
        print(f"fastvqa generate events: error: {err}", file=sys.stderr)
        return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
