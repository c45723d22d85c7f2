# SPDX-License-Identifier: Apache-2.0
"""``fastvqa run PIPELINE BENCHMARK``: a model over a benchmark, to its scores.

``fastvqa run vlm nextgqa --gt DIR --videos DIR --vlm-url URL --vlm-model NAME
--out RUN`` reads the records through the benchmark's loader, samples each
question's frames, asks the vision-language model (images in the OpenAI
chat-completions format: vLLM, SGLang, llama.cpp's server, hosted APIs),
writes the raw replies, the parse outcomes and the predictions in the files
``fastvqa eval`` reads (:mod:`fastvqa.run.outputs`), then prints the official
scores. ``fastvqa run devi ...`` runs DeVi (:mod:`fastvqa.devi`) with a
captioner (``--vlm-*``), a language model (``--llm-*``) and an image-text
encoder (``--encoder``).

Resumable: every reply is cached under ``RUN/cache`` (keyed by the whole
request, images included), so a killed run started again asks only what it
had not received, and writes the same bytes. ``--shard i/n`` answers every
n-th video's questions into ``RUN/shard-i-of-n/`` (shards share the cache);
the run without ``--shard`` then assembles every answer from the cache and
scores it.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from fastvqa.errors import CommandError

DESCRIPTION = ("Run a model over a benchmark: frames to a vision-language model (vlm) or the "
               "DeVi pipeline (devi), replies to predictions in the files `fastvqa eval` reads, "
               "then the official scores; resumable (replies cached under OUT/cache) and "
               "sharded (--shard i/n).")
PIPELINES = ("vlm", "devi")
BENCHMARKS = ("nextgqa", "deveqa", "sokbench", "wildqa")


def add_arguments(p: argparse.ArgumentParser) -> None:
    from fastvqa import _cli_grammar as grammar
    from fastvqa._argtypes import int_at_least, int_in_range, positive_float
    from fastvqa._shards import shard_argument
    from fastvqa.data.benchmarks import split_help

    sub = p.add_subparsers(dest="pipeline", metavar="PIPELINE", required=True)
    for name, help_text in (("vlm", "one vision-language model answers and grounds from "
                                    "uniformly sampled frames (the zero-shot VLM baseline)"),
                            ("devi", "DeVi: hierarchical captions, event memory, "
                                     "self-consistency (DeVE-QA paper)")):
        q = sub.add_parser(name, help=help_text, description=help_text)
        grammar.add_benchmark(q, BENCHMARKS, "the benchmark whose records are asked")
        q.add_argument("--gt", required=True, metavar="PATH",
                       help="the benchmark's annotation file or folder")
        q.add_argument("--split", default="test", help=split_help(BENCHMARKS, "a --gt folder"))
        q.add_argument("--videos", required=True, metavar="DIR",
                       help="the videos, named by the benchmark's video ids (searched "
                            "recursively; any common video suffix)")
        q.add_argument("--out", required=True, metavar="DIR",
                       help="the run folder: replies, predictions, scores, cache (made if "
                            "missing; reused to resume)")
        q.add_argument("--vlm-url", required=True, metavar="URL",
                       help="the vision-language model's API root, e.g. http://127.0.0.1:8000/v1")
        q.add_argument("--vlm-model", required=True, metavar="NAME",
                       help="the model name the server serves")
        q.add_argument("--image-format", choices=("jpeg", "png"), default="jpeg",
                       help="how frames travel (png: lossless, larger)")
        q.add_argument("--image-quality", type=int_in_range(1, 95), default=90, metavar="Q",
                       help="JPEG quality 1-95")
        q.add_argument("--max-side", type=int_at_least(1), default=None, metavar="PX",
                       help="shrink frames whose longer side exceeds PX before sending")
        q.add_argument("--api-key", default=None, help="sent as a Bearer token (default: none)")
        if name == "vlm":
            q.add_argument("--judge-url", default=None, metavar="URL",
                           help="a language model that extracts the option from replies the "
                                "rules cannot read (off by default; counted apart)")
            q.add_argument("--judge-model", default=None, metavar="NAME",
                           help="the judge model's name (with --judge-url)")
        q.add_argument("--timeout", type=positive_float, default=120.0, metavar="S",
                       help="seconds one request may take in all")
        q.add_argument("--concurrency", type=int_at_least(1), default=4, metavar="N",
                       help="requests in flight at once")
        q.add_argument("--shard", type=shard_argument, default=None, metavar="i/n",
                       help="answer only the videos of shard i of n (into OUT/shard-i-of-n)")
        q.add_argument("--limit", type=int_at_least(1), default=None, metavar="N",
                       help="only the first N records (a quick look)")
        q.add_argument("--backend", choices=("pyav", "dali", "auto"), default="pyav",
                       help="the video decoder")
        q.add_argument("--progress", action=argparse.BooleanOptionalAction, default=None,
                       help="a progress bar (default: on a terminal; log lines otherwise)")
        if name == "vlm":
            q.add_argument("--frames", type=int_at_least(1), default=8, metavar="K",
                           help="frames per question, spread uniformly")
        else:
            q.add_argument("--llm-url", required=True, metavar="URL",
                           help="the language model's API root")
            q.add_argument("--llm-model", required=True, metavar="NAME",
                           help="the language model's name")
            q.add_argument("--encoder", required=True, metavar="SPEC",
                           help="the image-text encoder: open_clip:ARCH@CHECKPOINT, "
                                "open_clip:ARCH (random weights, for tests), hf:FOLDER, or "
                                "demo (fastvqa demo's synthetic world only)")
            q.add_argument("--segment-lengths", type=_floats, default=(15.0, 35.0, 65.0),
                           metavar="S,S,S", help="the caption hierarchy's segment lengths in "
                                                 "seconds (the paper's)")
            q.add_argument("--segment-frames", type=_ints, default=(5, 7, 13), metavar="K,K,K",
                           help="frames per segment at each length (the paper's)")
            q.add_argument("--store", default=None, metavar="DIR",
                           help="a feature store (fastvqa extract) of the --encoder's image "
                                "features: the visual memory of the videos it holds is read "
                                "from it, only the others are decoded and encoded")
        q.set_defaults(func=run)


def _floats(text: str) -> tuple:
    try:
        values = tuple(float(x) for x in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected numbers separated by commas, got {text!r}")
    if not values or any(not v > 0 for v in values):
        raise argparse.ArgumentTypeError(f"expected positive numbers, got {text!r}")
    return values


def _ints(text: str) -> tuple:
    values = _floats(text)
    if any(v != int(v) for v in values):
        raise argparse.ArgumentTypeError(f"expected whole numbers, got {text!r}")
    return tuple(int(v) for v in values)


def _encoder(spec: str):
    if spec == "demo":
        from fastvqa.demo.devi_models import DemoEncoder

        return DemoEncoder()
    from fastvqa.llm.encoders import load_encoder

    return load_encoder(spec)


def _client(args, url: str, model: str, cache: Path):
    from fastvqa.llm import ChatCompletionsClient

    return ChatCompletionsClient(url, model, api_key=args.api_key, timeout=args.timeout,
                                 max_concurrency=args.concurrency, cache_dir=cache)


def run(args: argparse.Namespace) -> int:
    from fastvqa import _cli_grammar as grammar
    from fastvqa._shards import shard_of
    from fastvqa.data.benchmarks import load_benchmark
    from fastvqa.extract.engine import video_paths
    from fastvqa.run import harness, outputs

    benchmark = grammar.benchmark(args, "run")
    out = Path(args.out)
    if out.exists() and not out.is_dir():
        raise CommandError(f"--out {out} is a file; give a folder")
    records = load_benchmark(benchmark, args.gt, args.split)
    if args.limit is not None:
        records = records[:args.limit]
    if not records:
        raise CommandError(f"{args.gt}: no {benchmark} records to ask")
    videos = video_paths(args.videos)
    if args.shard is not None:
        ids = shard_of(sorted({r.video_id for r in records}), args.shard)
        keep = set(ids)
        records = [r for r in records if r.video_id in keep]
        folder = out / f"shard-{args.shard[0]}-of-{args.shard[1]}"
    else:
        folder = out
    cache = out / "cache"
    cache.mkdir(parents=True, exist_ok=True)
    vlm = _client(args, args.vlm_url, args.vlm_model, cache)
    image = {"format": args.image_format, "quality": args.image_quality,
             "max_side": args.max_side}
    started = time.perf_counter()
    if args.pipeline == "vlm":
        from fastvqa.llm.vision import ChatAnswerer
        from fastvqa.run.pipelines import vlm_pipeline

        answerer = ChatAnswerer(vlm, None, **image)
        clock = harness.StageClock()
        ask = vlm_pipeline(answerer, frames=args.frames, backend=args.backend, clock=clock)
        clients = {"vlm": vlm}
        judge = None
        if (args.judge_url is None) != (args.judge_model is None):
            raise CommandError("--judge-url and --judge-model go together")
        if args.judge_url is not None:
            from fastvqa.run.pipelines import judge_option

            clients["judge"] = _client(args, args.judge_url, args.judge_model, cache)
            judge = judge_option(clients["judge"])
        outcomes = harness.run_questions(records, videos, ask, workers=args.concurrency,
                                         progress=args.progress, judge=judge, clock=clock)
        devi = None
        latency = clock.format_table()
    else:
        from fastvqa.devi import prompts as devi_prompts
        from fastvqa.devi.protocols import components
        from fastvqa.llm.vision import ChatCaptioner
        from fastvqa.run.pipelines import devi_outcomes
        from fastvqa.video import Hierarchical

        if len(args.segment_lengths) != len(args.segment_frames):
            raise CommandError("--segment-lengths and --segment-frames must have as many "
                               f"values ({len(args.segment_lengths)} and "
                               f"{len(args.segment_frames)})")
        llm = _client(args, args.llm_url, args.llm_model, cache)
        parts = components(ChatCaptioner(vlm, devi_prompts.CAPTION, **image), llm,
                           _encoder(args.encoder))
        outcomes, devi = devi_outcomes(
            records, videos, parts, cache_dir=out / "devi-cache", progress=args.progress,
            backend=args.backend, store=args.store,
            hierarchy=Hierarchical(args.segment_lengths, args.segment_frames))
        clients = {"vlm": vlm, "llm": llm}
        latency = devi.latency.format_table()
    seconds = time.perf_counter() - started
    texts = outputs.prediction_texts(benchmark, records, outcomes)
    record = {"pipeline": args.pipeline, "benchmark": benchmark, "gt": str(args.gt),
              "split": args.split, "videos": str(args.videos),
              "shard": None if args.shard is None else list(args.shard),
              "summary": harness.summary(outcomes)}
    if devi is not None:
        record["devi"] = {"latency": devi.latency.to_dict()}
        record["consistency"] = devi.consistency.to_dict()
        record["visual_memory_from_store"] = len(devi.stored)
    folder.mkdir(parents=True, exist_ok=True)
    same = outputs.write_files(folder, texts)
    summary = record["summary"]
    print(f"{summary['questions']} questions, {summary['parsed']} replies fully parsed "
          f"({summary['judged']} options by the judge model), "
          f"{summary['no_option_or_answer']} without an answer, {summary['no_span']} without "
          f"a span; {seconds:.1f} s" + (f"; unchanged: {', '.join(same)}" if same else ""),
          file=sys.stderr)
    print(f"latency per stage (seconds summed over questions):\n{latency}", file=sys.stderr)
    if devi is not None:
        print(devi.consistency.format(), file=sys.stderr)
        if args.store is not None:
            print(f"visual memory: {len(devi.stored)} of {len(devi.durations)} videos read from "
                  f"{args.store}, the others decoded and encoded", file=sys.stderr)
    for name, c in clients.items():
        s = c.stats
        latency = f", {s.total_seconds / s.calls:.2f} s per request" if s.calls else ""
        tokens = (f", {s.prompt_tokens} prompt + {s.completion_tokens} completion tokens"
                  if s.tokens_reported else "")
        print(f"{name}: {s.calls} requests, {s.cache_hits} from the cache, {s.retries} "
              f"retries{latency}{tokens}", file=sys.stderr)
    if args.shard is not None:
        print(f"shard {args.shard[0]}/{args.shard[1]} written to {folder}; run again without "
              "--shard to assemble and score (answers come from the cache)", file=sys.stderr)
        return 0
    scores = outputs.score(benchmark, folder, args.gt, args.split)
    for task, result in scores:
        print(f"{benchmark} {task}")
        print(result.format_table())
    record["scores"] = {task: result.metrics for task, result in scores}
    outputs.write_files(folder, {"run.json": json.dumps(_stable(record), indent=1) + "\n"})
    return 0


def _stable(record: dict) -> dict:
    """The run record without what changes between reruns of the same work
    (wall times; DeVi's latency report), so a resumed run writes the same bytes."""
    summary = {k: v for k, v in record["summary"].items() if not k.startswith("seconds")}
    return {**{k: v for k, v in record.items() if k != "devi"}, "summary": summary}
