# SPDX-License-Identifier: Apache-2.0
"""``fastvqa demo``: generate the synthetic benchmark, run the pipeline, evaluate, report."""

from __future__ import annotations

import argparse
import contextlib
import math
import os
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path

from fastvqa._argtypes import int_at_least, positive_float
from fastvqa.errors import CommandError

STAGES = ("generate", "decode", "features", "dialogues", "ground", "answer", "evaluate", "report")
PIPELINES = ("features", "devi")
#: the model name the demo's own chat-completions server is asked for.
DEMO_LLM_MODEL = "fastvqa-demo-rules"
DEMO_VLM_MODEL = "fastvqa-demo-vision"

DESCRIPTION = """\
Generate a small synthetic grounded video-QA benchmark (coloured shapes that
slide, rotate, fly or rest over known intervals, as in DVD's CATER scenes),
then run fastvqa's pipeline on it: decode with fastvqa.video, per-colour
motion features, grounding with the span-scoring kernel (top_spans), answers
to multiple-choice questions whose wrong options come from fastvqa.retrieval's
distractor mining, and the NExT-GQA / WildQA / multiple-choice metrics. Prints
the tables and writes videos/, annotations.json, results.json and
report.html into the output folder, the multiple-choice questions as a
DeVE-QA file (deveqa.json: fastvqa run vlm deveqa --gt DIR/deveqa.json
--videos DIR/videos asks a model them), every question with its gold spans
as moment-retrieval queries in QVHighlights' layout (moments.jsonl: fastvqa
train grounds them, docs/training.md), every video as a CATER scene graph
(scenes/*.json: fastvqa generate dvd --scenes DIR/scenes reads them) and a
few DVD-style dialogues for each (dialogues.json, the DVD layout). Needs PyAV,
scikit-learn and matplotlib: pip install 'fastvqa[demo]'."""


#: The accepted range of each numeric option, checked before any work.
VIDEOS = (1, 100)
DURATION = (5.0, 600.0)  # seconds; also a multiple of synth.GRID
FPS = (0.1, 10.0)  # up to the videos' own rate (synth.NATIVE_FPS): above it frames repeat
SEED = (0, 2**63 - 1)


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--videos", type=int_at_least(1), default=12,
                   help=f"number of synthetic videos, {VIDEOS[0]} to {VIDEOS[1]}")
    p.add_argument("--duration", type=positive_float, default=20.0,
                   help=f"seconds per video, {DURATION[0]:g} to {DURATION[1]:g} and a multiple "
                        "of 0.5")
    p.add_argument("--fps", type=positive_float, default=5.0,
                   help=f"decoding rate in frames per second, {FPS[0]:g} to {FPS[1]:g} (the "
                        "videos are 10 fps)")
    from fastvqa.video.device import BACKENDS

    p.add_argument("--backend", choices=BACKENDS, default="auto",
                   help="decoder: pyav (CPU), dali (NVDEC on a GPU) or auto (DALI when it "
                        "and a GPU are usable, else PyAV)")
    p.add_argument("--out", metavar="DIR",
                   help="output folder, kept (must not exist or be empty); default: a new "
                        "temporary folder, also kept, whose path is printed")
    p.add_argument("--seed", type=int_at_least(0), default=0,
                   help="seed of the benchmark (scenes, questions, options), 0 to 2**63 - 1; "
                        "the same seed gives the same annotations")
    p.add_argument("--store", action="store_true",
                   help="decode and compute the per-step features through fastvqa extract "
                        "into DIR/features (a feature store) and ground from it")
    p.add_argument("--no-progress", action="store_true", help="no progress bars")
    p.add_argument("--pipeline", choices=PIPELINES, default="features",
                   help="features: per-colour motion features and the span kernel; "
                        "devi: the DeVE-QA paper's DeVi pipeline (hierarchical captions, event "
                        "memory, grounded answers, self-consistency) with the demo's "
                        "deterministic captioner, encoder and language model, the latter "
                        "served on 127.0.0.1 and reached over the OpenAI chat-completions "
                        "protocol (docs/devi.md)")
    p.add_argument("--llm-url", metavar="URL",
                   help="with --pipeline devi: an OpenAI-compatible server to use as the "
                        "language model instead of the demo's, e.g. http://127.0.0.1:8000/v1 "
                        "(vLLM, llama.cpp, SGLang, a hosted API; the key, if any, from "
                        "$OPENAI_API_KEY)")
    p.add_argument("--llm-model", metavar="NAME",
                   help="the model name the --llm-url server serves (required with --llm-url)")
    p.add_argument("--llm-deadline", type=positive_float, metavar="SECONDS",
                   help="with --pipeline devi: the most seconds all the language-model calls "
                        "may take together (attempts, retries and waits); past it the run "
                        "fails, keeping the replies received for a rerun (default: no limit; "
                        "each attempt is limited to 60 s)")


def _check_dependencies() -> None:
    """One clear line for each missing extra, before anything is written."""
    try:
        from fastvqa.video.index import import_av

        import_av()
    except ImportError as err:
        raise CommandError(str(err)) from None
    for module, what, extra in (("sklearn", "scikit-learn (TF-IDF distractor mining)", "text"),
                                ("matplotlib", "matplotlib (report plots)", "plot")):
        try:
            __import__(module)
        except ImportError:
            raise CommandError(f"{what} is not installed; pip install 'fastvqa[{extra}]' "
                               "(or 'fastvqa[demo]' for all the demo needs)") from None


#: the language model's reply cache under ``--out``: never deleted by a failure.
LLM_CACHE = Path("cache") / "llm"


def _check_out(out) -> None:
    """``--out``: a new path, an empty folder, or a folder holding only the
    reply cache a failed run kept (``cache/llm``: the rerun resumes from
    it); CommandError otherwise."""
    path = Path(out)
    if path.exists():
        if not path.is_dir():
            raise CommandError(f"{path} exists and is not a folder; choose another --out")
        if any(path.iterdir()) and not _only_kept_cache(path):
            raise CommandError(f"{path} is not empty; refusing to write into it "
                               "(choose a new or empty --out folder)")


def _only_kept_cache(folder: Path) -> bool:
    """``folder`` holds nothing but ``cache/llm`` (what a failed run keeps)."""
    top = list(folder.iterdir())
    if [c.name for c in top] != ["cache"] or top[0].is_symlink() or not top[0].is_dir():
        return False
    inner = list(top[0].iterdir())
    return [c.name for c in inner] == ["llm"] and inner[0].is_dir() \
        and not inner[0].is_symlink()


def _replies(folder: Path) -> int:
    """How many model replies ``folder``'s reply cache holds."""
    cache = folder / LLM_CACHE
    return sum(1 for _ in cache.rglob("*.json")) if cache.is_dir() else 0


def _salvage_leftovers(final: Path, into: Path) -> None:
    """Removes the temporary folders killed runs of the same ``--out`` left
    beside it (:func:`fastvqa._outputs.leftover_temporaries`), after moving
    the model replies they had cached into ``into``'s reply cache (a reply
    already there is kept as it is: same key, same request)."""
    import shutil

    from fastvqa._outputs import leftover_temporaries

    for part in leftover_temporaries(final, folders=True):
        if part == into:
            continue  # this run's own temporary folder
        cache = part / LLM_CACHE
        if cache.is_dir() and not cache.is_symlink():
            for entry in cache.rglob("*.json"):
                if not entry.is_file() or entry.is_symlink() or entry.name.startswith("."):
                    continue  # a link, or a cache entry's own unfinished temporary
                dest = into / LLM_CACHE / entry.relative_to(cache)
                if not dest.exists():
                    dest.parent.mkdir(parents=True, exist_ok=True)
                    try:
                        os.link(entry, dest)
                    except OSError:
                        shutil.copyfile(entry, dest)
        shutil.rmtree(part, ignore_errors=True)


class _Stages:
    """Times each stage; a failure that is not fastvqa's (a video the local
    FFmpeg cannot decode, a full disk: the :mod:`fastvqa.errors` family and
    ``OSError``) becomes one CommandError line naming the stage. Anything
    else is a bug and keeps its traceback."""

    def __init__(self, show: bool):
        self.show = show
        self.timings: dict[str, float] = {}

    @contextmanager
    def stage(self, name: str, total: int, unit: str, show_bar: bool = True):
        """``show_bar=False``: the work draws its own bar (decoding), so the
        stage's stays hidden rather than sit at 0/total above it."""
        from fastvqa._progress import Progress

        bar = Progress(total, self.show and show_bar, desc=name, unit=unit)
        start = time.perf_counter()
        from fastvqa.errors import InputError

        try:
            yield bar
        except CommandError:
            raise
        except (InputError, OSError) as err:
            if os.environ.get("FASTVQA_DEBUG"):
                raise
            raise CommandError(f"{name} failed: {type(err).__name__}: {err}") from err
        finally:
            bar.close()
            self.timings[name] = time.perf_counter() - start


def _in_range(name: str, value, bounds, unit: str = "") -> None:
    lo, hi = bounds

    def show(v):
        return f"{v:g}" if isinstance(v, float) else str(v)

    if not lo <= value <= hi:  # also rejects NaN
        raise CommandError(f"--{name} must be between {show(lo)}{unit} and {show(hi)}{unit}, "
                           f"got {show(value)}")


def validate(args: argparse.Namespace) -> None:
    """Every option checked before any work: ranges (:data:`VIDEOS`,
    :data:`DURATION`, :data:`FPS`, :data:`SEED`), the duration grid,
    ``--backend dali`` against what is installed and visible, and the decoded
    frames against the memory available. Raises :class:`CommandError` (one
    line, exit 2)."""
    from fastvqa.demo import synth

    _in_range("videos", args.videos, VIDEOS)
    # The duration grid first: "--duration must be >= 5" names the usual mistake.
    grid = args.duration / synth.GRID
    if not args.duration >= synth.MIN_DURATION or abs(grid - round(grid)) > 1e-9:
        raise CommandError(f"--duration must be >= {synth.MIN_DURATION:g} s and a multiple of "
                           f"{synth.GRID:g} s, got {args.duration:g}")
    _in_range("duration", args.duration, DURATION, " s")
    if args.fps > synth.NATIVE_FPS:
        raise CommandError(f"--fps must be between {FPS[0]:g} and {FPS[1]:g}, got {args.fps:g}: "
                           f"the videos are {synth.NATIVE_FPS} fps, a higher rate only repeats "
                           "frames")
    _in_range("fps", args.fps, FPS)
    _in_range("seed", args.seed, SEED)
    _validate_pipeline(args)
    from fastvqa.video.cli import check_backend

    check_backend(args.backend)
    from fastvqa.video.api import _gib, available_memory

    frames = args.videos * math.ceil(args.duration * args.fps - 1e-9)
    need = frames * synth.WIDTH * synth.HEIGHT * 3
    budget = available_memory()
    if budget is not None and need > budget // 2:
        raise CommandError(f"--videos {args.videos} x --duration {args.duration:g} x --fps "
                           f"{args.fps:g} decode {frames:,} frames ({_gib(need)}); more than half "
                           f"the {_gib(budget)} of memory available: lower one of them")


def _validate_pipeline(args: argparse.Namespace) -> None:
    pipeline = getattr(args, "pipeline", "features")
    url, model = getattr(args, "llm_url", None), getattr(args, "llm_model", None)
    if pipeline != "devi":
        if url is not None or model is not None:
            raise CommandError("--llm-url and --llm-model need --pipeline devi")
        if getattr(args, "llm_deadline", None) is not None:
            raise CommandError("--llm-deadline needs --pipeline devi")
        return
    if getattr(args, "store", False):
        raise CommandError("--store is for --pipeline features (devi reads the videos itself)")
    if args.backend == "dali":
        raise CommandError("--pipeline devi decodes on the CPU with PyAV; drop --backend dali")
    if (url is None) != (model is None):
        raise CommandError("--llm-url and --llm-model go together: give both, or neither "
                           "for the demo's own language model")
    if url is not None and not url.startswith(("http://", "https://")):
        raise CommandError(f"--llm-url must start with http:// or https://, got {url!r}")


def run(args: argparse.Namespace) -> int:
    """Every option checked, then the demo: into a new ``--out`` through a
    temporary folder beside it, moved into place only when every stage
    succeeded (:class:`fastvqa._outputs.OutputFiles`); into an empty
    existing ``--out`` or the default temporary folder directly. A failed
    run leaves nothing behind but the language model's replies (``--out``
    holding only ``cache/llm``, which a rerun of the same command accepts
    and resumes from); the temporary folders of killed runs of the same
    ``--out`` are removed by the next run, their cached replies kept."""
    from fastvqa._outputs import OutputError, OutputFiles

    validate(args)
    _check_dependencies()
    if args.out is not None:
        _check_out(args.out)
    if args.out is None or Path(args.out).exists():
        out = Path(args.out) if args.out is not None else Path(
            tempfile.mkdtemp(prefix="fastvqa-demo-"))
        if args.out is not None:
            _salvage_leftovers(out, out)
        return _run_or_clear(out, out, args, remove=args.out is None)
    outputs = OutputFiles()
    final = outputs.add(args.out, "--out", folder=True)
    with outputs:  # a failure removes the temporary folder and the folders made for it
        tmp = outputs.temp(final)
        _salvage_leftovers(final, tmp)
        try:
            code = _run_or_clear(tmp, final, args, remove=False)
        except BaseException:
            if _replies(tmp):  # only the reply cache is left: it becomes --out
                with contextlib.suppress(OutputError):
                    outputs.commit()
            raise
        outputs.commit()
    return code


def _run_or_clear(folder: Path, shown: Path, args: argparse.Namespace, remove: bool) -> int:
    try:
        return _run_in(folder, args, shown)
    except CommandError as err:
        # The folder was new or empty: what is in it now is the demo's own
        # partial output, which would only make a rerun refuse the folder;
        # the model's replies are kept, for a rerun to resume from.
        kept = _clear_folder(folder, remove=remove)
        note = f"partial output removed from {shown}"
        if kept:
            rerun = "rerun the same command" if args.out is not None else \
                f"rerun with --out {shown}"
            note += (f"; the {kept} model replies received are kept in "
                     f"{shown / LLM_CACHE}: {rerun} to resume")
        raise CommandError(f"{err} ({note})") from err
    except BaseException:  # Ctrl-C, or a bug: no partial output either
        _clear_folder(folder, remove=remove)
        raise


def _clear_folder(folder: Path, remove: bool) -> int:
    """Removes the run's output from ``folder`` (``remove``: the folder too),
    except a reply cache holding replies (``cache/llm``); returns how many
    replies were kept."""
    from fastvqa._outputs import remove_path

    kept = _replies(folder)
    if remove and not kept:
        remove_path(folder)
        return 0
    for child in folder.iterdir():
        if kept and child.name == LLM_CACHE.parts[0] and child.is_dir() \
                and not child.is_symlink():
            for inner in child.iterdir():  # the other caches (captions, features) go
                if inner.name != LLM_CACHE.parts[1]:
                    remove_path(inner)
            continue
        remove_path(child)
    return kept


def _features_through_store(out: Path, bench, args: argparse.Namespace, stages,
                            config: dict) -> dict:
    """``--store``: the decode and features stages as one fastvqa extract run
    into ``out/features`` (PyAV), then every video's features read back."""
    from fastvqa.demo import pipeline
    from fastvqa.extract import FeatureStore, run

    config["backend"], config["store"] = "pyav", "features"
    with stages.stage("decode", args.videos, "video", show_bar=False):
        summary = run(bench.videos, pipeline.extraction_recipe(args.fps), out=out / "features",
                      model=pipeline.Activations(args.fps), model_name="fastvqa.demo.Activations",
                      progress=None if not args.no_progress else False)
        if summary.failed:
            raise CommandError(f"{summary.failed} demo videos could not be decoded "
                               f"(see {out / 'features' / 'failed'})")
    with stages.stage("features", args.videos, "video") as bar:
        store = FeatureStore(out / "features")
        features = {}
        for vid, path in zip(bench.annotations["videos"], bench.videos):
            features[vid] = pipeline.from_store(store.load(Path(path).stem))
            bar.update()
    return features


def _run_in(out: Path, args: argparse.Namespace, shown: Path) -> int:
    """The stages, writing into ``out``; ``shown``: the folder named to the
    user (where ``out`` will be once the run succeeded)."""
    from fastvqa.demo import cater, export, options, pipeline, report, synth

    if getattr(args, "pipeline", "features") == "devi":
        return _run_devi_in(out, args, shown)
    stages = _Stages(not args.no_progress)
    config = {"videos": args.videos, "duration": args.duration, "fps": args.fps,
              "backend": args.backend, "seed": args.seed}

    with stages.stage("generate", args.videos, "video") as bar:
        bench = synth.generate(out, videos=args.videos, duration=args.duration, seed=args.seed,
                               add_options=options.add_options, progress=bar.update)
        questions = bench.annotations["questions"]
        export.write_deveqa(bench.annotations, out / "deveqa.json")
        export.write_moments(bench.annotations, out / "moments.jsonl")
    if getattr(args, "store", False):
        features = _features_through_store(out, bench, args, stages, config)
    else:
        with stages.stage("decode", args.videos, "video", show_bar=False):  # read_batch draws
            from fastvqa.video import resolve_backend

            config["backend"] = resolve_backend(args.backend, "cuda")  # auto: DALI on a GPU
            decoded = pipeline.decode(bench.videos, args.fps, config["backend"],
                                      progress=not args.no_progress)
        with stages.stage("features", args.videos, "video") as bar:
            features = {}
            for vid, (frames, timestamps) in zip(bench.annotations["videos"], decoded):
                features[vid] = pipeline.video_features(frames, timestamps, 1.0 / args.fps)
                bar.update()
            del decoded
    with stages.stage("dialogues", args.videos, "scene") as bar:
        dialogues = _dialogues(out, bench, args, bar)
    n_when = sum(q["kind"] == "when" for q in questions)
    with stages.stage("ground", n_when, "question") as bar:
        predictions = pipeline.ground_questions(questions, features)
        bar.update(n_when)
    with stages.stage("answer", len(questions) - n_when, "question") as bar:
        predictions.update(pipeline.answer_questions(questions, features, bar.update))
    with stages.stage("evaluate", 1, "step") as bar:
        results = pipeline.evaluate(questions, predictions, args.duration)
        bar.update()
    with stages.stage("report", 1, "file") as bar:
        report.write_report(out / "report.html", results, questions, predictions,
                            stages.timings, config,
                            dialogues=cater.shown_dialogues(dialogues.dialogues, 2),
                            dialogue_counts=cater.dialogue_counts(dialogues))
        bar.update()
    # Written last, so its timings include the report stage.
    report.write_results(out / "results.json", results, questions, predictions,
                         stages.timings, config, dialogues=cater.dialogue_counts(dialogues))

    print(report.format_tables(results))
    print()
    print(f"dialogues: {dialogues.summary.line()}")
    total = sum(stages.timings.values())
    print("time per stage: " + ", ".join(f"{k} {v:.1f} s" for k, v in stages.timings.items())
          + f"; total {total:.1f} s")
    print(f"benchmark, scenes/, dialogues.json, results.json and report.html: {shown}")
    return 0


def _dialogues(out: Path, bench, args: argparse.Namespace, bar):
    """Every video as a CATER scene (``out/scenes/<video>.json``) and a few
    DVD-style dialogues for them, seeded by ``--seed``
    (``out/dialogues.json``, the released DVD layout). Returns
    :class:`fastvqa.demo.cater.DemoDialogues`."""
    from fastvqa.demo import cater
    from fastvqa.generate.dvd import write_dialogues

    scenes = cater.write_scenes(out / "scenes", bench.scenes, args.duration)
    result = cater.demo_dialogues(scenes, seed=args.seed)
    write_dialogues(result.dialogues, out / "dialogues.json")
    bar.update(len(scenes))
    return result


def _run_devi_in(out: Path, args: argparse.Namespace, shown: Path) -> int:
    """``--pipeline devi``: generate, then DeVi through chat-completions
    clients: the captions from the demo's pixel-reading vision model
    (:class:`fastvqa.demo.vision_server.DemoVisionModel`) on a local server,
    sent the paper's caption prompt with each segment's frames as images;
    the reasoning from the demo's rule-following model on a second local
    server, or ``--llm-url``. Caches under ``out/cache``; score, print, write
    ``results.json``."""
    from fastvqa.demo import devi_models, options, report, synth
    from fastvqa.demo.vision_server import DemoVisionModel
    from fastvqa.devi import Components, run_devi
    from fastvqa.devi import prompts as devi_prompts
    from fastvqa.devi.runner import score
    from fastvqa.llm import ChatCompletionsClient, serve_chat_model
    from fastvqa.llm.vision import ChatCaptioner

    stages = _Stages(not args.no_progress)
    config = {"videos": args.videos, "duration": args.duration, "seed": args.seed,
              "pipeline": "devi", "backend": "pyav",
              "hierarchy": {"lengths": list(devi_models.DEMO_HIERARCHY.lengths),
                            "frames": list(devi_models.DEMO_HIERARCHY.frames)},
              "llm": args.llm_url or "the demo's rule-following model on 127.0.0.1",
              "captioner": "the demo's pixel-reading vision model on 127.0.0.1 (PNG frames)"}
    with stages.stage("generate", args.videos, "video") as bar:
        bench = synth.generate(out, videos=args.videos, duration=args.duration, seed=args.seed,
                               add_options=options.add_options, progress=bar.update)
    with stages.stage("dialogues", args.videos, "scene") as bar:
        dialogues = _dialogues(out, bench, args, bar)
    questions = [q for q in bench.annotations["questions"] if "options" in q]
    videos = {vid: path for vid, path in zip(bench.annotations["videos"], bench.videos)}
    with contextlib.ExitStack() as stack:
        if args.llm_url is None:
            served = stack.enter_context(serve_chat_model(devi_models.DemoLanguageModel()))
            url, model = served.base_url, DEMO_LLM_MODEL
        else:
            url, model = args.llm_url, args.llm_model
        client = ChatCompletionsClient(url, model, api_key=os.environ.get("OPENAI_API_KEY"),
                                       cache_dir=out / LLM_CACHE,
                                       max_total_seconds=getattr(args, "llm_deadline", None))
        vision = stack.enter_context(serve_chat_model(DemoVisionModel()))
        # one reply cache for both models (the key is the whole request, model included)
        vlm = ChatCompletionsClient(vision.base_url, DEMO_VLM_MODEL, cache_dir=out / LLM_CACHE)
        parts = Components(ChatCaptioner(vlm, devi_prompts.CAPTION, format="png"), client,
                           devi_models.DemoEncoder(devi_models.FEATURE_FPS))
        # show_bar=False: run_devi draws one bar per DeVi stage
        with stages.stage("devi", len(questions), "question", show_bar=False):
            result = run_devi(videos, questions, parts, cache_dir=out / "cache",
                              progress=None if not args.no_progress else False,
                              hierarchy=devi_models.DEMO_HIERARCHY)
    with stages.stage("evaluate", 1, "step") as bar:
        results = _devi_metrics(questions, result, score)
        bar.update()
    for row in result.latency.rows:
        if row.kind == "stage":
            stages.timings[f"devi: {row.name}"] = row.seconds
    from fastvqa.demo import cater

    report.write_devi_results(out / "results.json", results, questions, result,
                              stages.timings, config, dialogues=cater.dialogue_counts(dialogues))
    print(report.format_tables(results, report.DEVI_GROUPS))
    print()
    print("== Latency (the DeVE-QA paper's Table 15 kind)")
    print(result.latency.format_table())
    print()
    print(result.consistency.format())
    print()
    print(f"dialogues: {dialogues.summary.line()}")
    print(f"benchmark, scenes/, dialogues.json and results.json: {shown}")
    return 0


def _devi_metrics(questions: list, result, score) -> dict:
    from fastvqa.metrics import multiple_choice_accuracy

    preds = result.predictions
    return {
        "grounded_qa": score(questions, preds, result.durations),
        "multiple_choice": multiple_choice_accuracy(
            [preds[q["id"]].option if preds[q["id"]].option >= 0 else None for q in questions],
            ([q["options"] for q in questions], [q["answer_index"] for q in questions]),
            question_types=[q["kind"] for q in questions]),
    }
