# SPDX-License-Identifier: Apache-2.0
"""``fastvqa demo``: generate the synthetic benchmark, run the pipeline, evaluate, report."""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path

from fastvqa._argtypes import int_at_least, positive_float
from fastvqa.evaluation import CommandError

STAGES = ("generate", "decode", "features", "ground", "answer", "evaluate", "report")

DESCRIPTION = """\
Generate a small synthetic grounded video-QA benchmark (coloured shapes that
slide, rotate, fly or rest over known intervals, as in DVD's CATER scenes),
then run fastvqa's pipeline on it: decode with fastvqa.video, per-colour
motion features, grounding with the span-scoring kernel (top_spans), answers
to multiple-choice questions whose wrong options come from fastvqa.retrieval's
distractor mining, and the NExT-GQA / WildQA / multiple-choice metrics. Prints
the tables and writes videos/, annotations.json, results.json and
report.html into the output folder. Needs PyAV, scikit-learn and matplotlib:
pip install 'fastvqa[demo]'."""


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--videos", type=int_at_least(1), default=12,
                   help="number of synthetic videos (default 12)")
    p.add_argument("--duration", type=positive_float, default=20.0,
                   help="seconds per video, >= 5 and a multiple of 0.5 (default 20)")
    p.add_argument("--fps", type=positive_float, default=5.0,
                   help="decoding rate in frames per second; the videos are 10 fps "
                        "(default 5)")
    p.add_argument("--backend", choices=("auto", "pyav", "dali"), default="auto",
                   help="decoder: pyav (CPU), dali (NVDEC on a GPU) or auto (DALI when it "
                        "and a GPU are usable, else PyAV; default)")
    p.add_argument("--out", metavar="DIR",
                   help="output folder, kept (must not exist or be empty); default: a new "
                        "temporary folder, also kept, whose path is printed")
    p.add_argument("--seed", type=int_at_least(0), default=0,
                   help="seed of the benchmark (scenes, questions, options); the same seed "
                        "gives the same annotations (default 0)")
    p.add_argument("--no-progress", action="store_true", help="no progress bars")


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


def _out_folder(out) -> Path:
    if out is None:
        return Path(tempfile.mkdtemp(prefix="fastvqa-demo-"))
    path = Path(out)
    if path.exists():
        if not path.is_dir():
            raise CommandError(f"{path} exists and is not a folder; choose another --out")
        if any(path.iterdir()):
            raise CommandError(f"{path} is not empty; refusing to write into it "
                               "(choose a new or empty --out folder)")
    else:
        path.mkdir(parents=True)
    return path


class _Stages:
    """Times each stage and turns an unexpected failure into one CommandError line."""

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
        try:
            yield bar
        except CommandError:
            raise
        except Exception as err:  # any failure ends the demo with one line
            if os.environ.get("FASTVQA_DEBUG"):
                raise
            raise CommandError(f"{name} failed: {type(err).__name__}: {err}") from err
        finally:
            bar.close()
            self.timings[name] = time.perf_counter() - start


def run(args: argparse.Namespace) -> int:
    from fastvqa.demo import synth

    _check_dependencies()
    grid = args.duration / synth.GRID
    if args.duration < synth.MIN_DURATION or abs(grid - round(grid)) > 1e-9:
        raise CommandError(f"--duration must be >= {synth.MIN_DURATION:g} s and a multiple of "
                           f"{synth.GRID:g} s, got {args.duration:g}")
    existed = args.out is not None and Path(args.out).exists()
    out = _out_folder(args.out)
    try:
        return _run_in(out, args)
    except CommandError as err:
        # The folder was new or empty: what is in it now is the demo's own
        # partial output, which would only make a rerun refuse the folder.
        _clear_folder(out, remove=not existed)
        raise CommandError(f"{err} (partial output removed from {out})") from err


def _clear_folder(folder: Path, remove: bool) -> None:
    import shutil

    if remove:
        shutil.rmtree(folder, ignore_errors=True)
        return
    for child in folder.iterdir():
        if child.is_dir() and not child.is_symlink():
            shutil.rmtree(child, ignore_errors=True)
        else:
            child.unlink(missing_ok=True)


def _run_in(out: Path, args: argparse.Namespace) -> int:
    from fastvqa.demo import options, pipeline, report, synth

    stages = _Stages(not args.no_progress)
    config = {"videos": args.videos, "duration": args.duration, "fps": args.fps,
              "backend": args.backend, "seed": args.seed}

    with stages.stage("generate", args.videos, "video") as bar:
        bench = synth.generate(out, videos=args.videos, duration=args.duration, seed=args.seed,
                               add_options=options.add_options, progress=bar.update)
        questions = bench.annotations["questions"]
    with stages.stage("decode", args.videos, "video", show_bar=False):  # read_batch draws it
        from fastvqa.video import resolve_backend

        config["backend"] = resolve_backend(args.backend)
        decoded = pipeline.decode(bench.videos, args.fps, config["backend"],
                                  progress=not args.no_progress)
    with stages.stage("features", args.videos, "video") as bar:
        features = {}
        for vid, (frames, timestamps) in zip(bench.annotations["videos"], decoded):
            features[vid] = pipeline.video_features(frames, timestamps, 1.0 / args.fps)
            bar.update()
        del decoded
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
                            stages.timings, config)
        bar.update()
    # Written last, so its timings include the report stage.
    report.write_results(out / "results.json", results, questions, predictions,
                         stages.timings, config)

    print(report.format_tables(results))
    print()
    total = sum(stages.timings.values())
    print("time per stage: " + ", ".join(f"{k} {v:.1f} s" for k, v in stages.timings.items())
          + f"; total {total:.1f} s")
    print(f"benchmark, results.json and report.html: {out}")
    return 0
