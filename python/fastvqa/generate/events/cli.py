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
summary go to stderr.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
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
                   help="sokbench: knowledge from the --llm, or from the small built-in "
                        "commonsense table")
    p.add_argument("--workers", type=int_at_least(1), default=1,
                   help="deveqa: model requests in flight at once (the set does not depend "
                        "on it)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.set_defaults(func=run)


def load_callable(spec: str) -> Any:
    """The function named ``module:function`` or ``path/file.py:function``
    (the current folder is searched for modules too); CommandError otherwise."""
    module_name, sep, attr = spec.rpartition(":")
    if not sep or not module_name or not attr:
        raise CommandError(f"--llm {spec!r}: expected http(s)://... or module:function")
    try:
        if module_name.endswith(".py"):
            path = Path(module_name)
            if not path.is_file():
                raise CommandError(f"--llm {spec!r}: no such file {path}")
            loaded = importlib.util.spec_from_file_location(path.stem, path)
            module = importlib.util.module_from_spec(loaded)
            loaded.loader.exec_module(module)
        else:
            if os.getcwd() not in sys.path:
                sys.path.append(os.getcwd())
            module = importlib.import_module(module_name)
    except CommandError:
        raise
    except ImportError as err:
        raise CommandError(f"--llm {spec!r}: cannot import {module_name} ({err})") from None
    except Exception as err:  # the user's module failed while importing
        raise CommandError(f"--llm {spec!r}: importing {module_name} failed: "
                           f"{type(err).__name__}: {err}") from None
    fn = getattr(module, attr, None)
    if fn is None:
        raise CommandError(f"--llm {spec!r}: {module_name} has no {attr!r}")
    if not callable(fn):
        raise CommandError(f"--llm {spec!r}: {attr} is not callable")
    return fn


def language_model(spec: str, model: Any, deadline: Any = None) -> Any:
    """The ``--llm`` as a language model (a client for a URL, the function
    otherwise); ``deadline``: ``--llm-deadline`` (URL only)."""
    if spec.startswith(("http://", "https://")):
        if not model:
            raise CommandError("--llm is a URL: give the served model's name with --model")
        from fastvqa.llm.client import ChatCompletionsClient

        return ChatCompletionsClient(spec, model, api_key=os.environ.get("OPENAI_API_KEY"),
                                     max_total_seconds=deadline)
    if model:
        raise CommandError("--model names a served model; it goes with an http(s) --llm")
    if deadline is not None:
        raise CommandError("--llm-deadline limits a server's calls; it goes with an http(s) "
                           "--llm")
    return load_callable(spec)


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
        from fastvqa.generate.events.deveqa import generate_deveqa, write_records

        result = generate_deveqa(filtered.kept, model, seed=args.seed, workers=args.workers,
                                 progress=progress)
        n_questions = len(result.questions)
        summary = result.summary()
    else:
        from fastvqa.generate.events.sokbench import (generate_sokbench,
                                                      language_model_knowledge,
                                                      situations_from_events, table_knowledge)

        rejected: list = []
        situations = situations_from_events(filtered.kept, llm=model, rejections=rejected)
        knowledge = (language_model_knowledge(model) if args.knowledge == "llm"
                     else table_knowledge())
        result = generate_sokbench(situations, knowledge, seed=args.seed, model_stats=model,
                                   rejections=rejected)
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
