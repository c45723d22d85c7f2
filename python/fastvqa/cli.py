# SPDX-License-Identifier: Apache-2.0
"""The ``fastvqa`` command line."""

from __future__ import annotations

import argparse
import importlib.util
import inspect
import json
import os
import shutil
import subprocess
import sys
from typing import Optional, Sequence

from fastvqa._argtypes import int_at_least, int_in_range
# Imported from its one home, so every command module raises the very class
# caught here, also when this file runs as __main__.
from fastvqa.errors import CommandError

# Optional backends, by the import name fastvqa would use and the extra that installs it.
_BACKENDS = (
    ("torch", "torch", "fastvqa[torch]"),
    ("DALI", "nvidia.dali", "fastvqa[dali]"),
    ("FAISS", "faiss", "fastvqa[faiss]"),
    ("PyAV", "av", "fastvqa[video]"),
    ("sentence-transformers", "sentence_transformers", "fastvqa[text]"),
)


class HelpFormatter(argparse.ArgumentDefaultsHelpFormatter):
    """The one help layout of every ``fastvqa`` command: each option's help
    ends with its default, ``(default: X)``, written by argparse from the
    option itself (never by hand). Left out where there is nothing to show: a
    default of None (the help says what its absence means) and an on/off flag
    (off by default)."""

    def _get_help_string(self, action: argparse.Action) -> str:
        if action.default is None or action.nargs == 0 or getattr(action, "shown_as_flag",
                                                                  False):
            return action.help or ""
        return super()._get_help_string(action)

    # --json and BENCHMARK accept old spellings for one release; the help
    # shows only the new grammar (fastvqa._cli_grammar.help_view).
    def _format_usage(self, usage, actions, groups, prefix):
        from fastvqa._cli_grammar import help_view

        with help_view(actions):
            return super()._format_usage(usage, actions, groups, prefix)

    def _format_action_invocation(self, action: argparse.Action) -> str:
        from fastvqa._cli_grammar import help_view

        with help_view([action]):
            return super()._format_action_invocation(action)


class _Parser(argparse.ArgumentParser):
    """An ArgumentParser with :class:`HelpFormatter`; ``add_subparsers`` makes
    every subcommand's parser one too."""

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("formatter_class", HelpFormatter)
        super().__init__(*args, **kwargs)


def _importable(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):  # a parent package missing or broken
        return False


def _gpu_report(info: dict) -> dict:
    """GPU visibility without importing torch: our own runtime when built with
    CUDA, otherwise whether nvidia-smi lists a device."""
    from fastvqa._ext import _C

    report = {"visible_to_fastvqa": _C.cuda_device_count(), "driver_version": None}
    if info["cuda"]:
        version = _C.cuda_driver_version()
        report["driver_version"] = f"{version // 1000}.{version % 1000 // 10}" if version else None
    smi = shutil.which("nvidia-smi")
    listed = None
    if smi:
        try:
            proc = subprocess.run([smi, "-L"], capture_output=True, text=True, timeout=10)
            listed = [ln for ln in proc.stdout.splitlines() if ln.startswith("GPU ")]
        except (OSError, subprocess.SubprocessError):
            listed = None
    report["nvidia_smi"] = listed
    report["compute_capabilities"] = _smi_capabilities(smi) if listed else None
    return report


def _smi_capabilities(smi: str) -> Optional[list]:
    """Each listed GPU's compute capability as an int (9.0 -> 90), or None
    where this nvidia-smi cannot say."""
    try:
        proc = subprocess.run([smi, "--query-gpu=compute_cap", "--format=csv,noheader"],
                              capture_output=True, text=True, timeout=10)
        caps = [ln.strip().split(".") for ln in proc.stdout.splitlines() if ln.strip()]
        return sorted({int(major) * 10 + int(minor) for major, minor in caps})
    except (OSError, subprocess.SubprocessError, ValueError):
        return None


def _coverage_text(info: dict) -> str:
    """What GPUs a CUDA build runs on, from its SASS and PTX lists."""
    from fastvqa import _arch_coverage

    cov = _arch_coverage(info["cuda_archs"])
    sass = ", ".join(f"sm_{c}" for c in cov["cuda_sass"]) or "none"
    if cov["cuda_ptx"]:
        low = min(cov["cuda_ptx"])
        return (f"real code for {sass}; PTX compute_{low}, so every GPU of compute "
                f"capability >= {low // 10}.{low % 10} runs the kernels (JIT-compiled once "
                "where there is no real code)")
    return f"real code for {sass} only (no PTX: other GPUs cannot run the kernels)"


def _torch_report() -> dict:
    """The installed torch: ``{"version", "build": "cpu"|"cuda"|"rocm",
    "cuda": its CUDA version or None, "gpu_visible": bool}``, all None where
    torch is not installed. torch is imported only where it is installed
    (about a second), so ``fastvqa info`` stays fast without it."""
    report = {"version": None, "build": None, "cuda": None, "gpu_visible": None}
    if not _importable("torch"):
        return report
    try:
        import torch
    except Exception as err:  # installed but broken: say so rather than fail
        report["version"] = f"unimportable ({type(err).__name__}: {err})"
        return report
    cuda = getattr(torch.version, "cuda", None)
    hip = getattr(torch.version, "hip", None)
    report.update(version=str(torch.__version__), cuda=cuda,
                  build="cuda" if cuda else "rocm" if hip else "cpu")
    try:
        report["gpu_visible"] = bool(torch.cuda.is_available())
    except Exception:  # a driver problem is "no GPU visible" here
        report["gpu_visible"] = False
    return report


def _torch_text(report: dict) -> str:
    """One line for ``fastvqa info``: ``2.13.0+cpu (CPU build); no GPU
    visible to torch``."""
    if report["version"] is None:
        return "not installed (fastvqa[torch])"
    if report["build"] is None:
        return report["version"]
    build = {"cpu": "CPU build", "rocm": "ROCm build"}.get(report["build"],
                                                          f"CUDA {report['cuda']} build")
    gpu = "a GPU visible to torch" if report["gpu_visible"] else "no GPU visible to torch"
    return f"{report['version']} ({build}); {gpu}"


def _cmd_info(args: argparse.Namespace) -> int:
    import fastvqa

    info = fastvqa.build_info()
    backends = {name: _importable(module) for name, module, _ in _BACKENDS}
    gpu = _gpu_report(info)
    torch_info = _torch_report()
    if args.json:
        print(json.dumps({"build": info, "backends": backends, "gpu": gpu, "torch": torch_info},
                         indent=2))
        return 0
    rows = [
        ("fastvqa", f"{info['version']} ({info['distribution']})"),
        ("python", sys.version.split()[0]),
        ("compiler", info["compiler"]),
        ("cpu threads", f"{info['threads']} (fastvqa's own pool; FASTVQA_NUM_THREADS)"),
        (
            "cuda kernels",
            f"yes (CUDA {info['cuda_version']}, archs {';'.join(info['cuda_archs'])}, "
            f"{info['cuda_runtime']} runtime, needs driver >= {info['cuda_min_driver']})"
            if info["cuda"]
            else "no (CPU-only build; install fastvqa-cu12/-cu13 or build with nvcc on PATH)",
        ),
    ]
    if info["cuda"]:
        rows.append(("cuda coverage", _coverage_text(info)))
        count = gpu["visible_to_fastvqa"]
        driver = f", driver {gpu['driver_version']}" if gpu["driver_version"] else ""
        # driver_version is the newest CUDA the driver supports ("13.0"); minor
        # version compatibility needs only the build's major.
        driver_major = int(gpu["driver_version"].split(".")[0]) if gpu["driver_version"] else None
        if driver_major and info["cuda_major"] and driver_major < info["cuda_major"]:
            driver += f" (too old: this CUDA {info['cuda_major']} build needs >= {info['cuda_min_driver']})"
        # A too-old driver hides every device, so the driver note is shown either way.
        rows.append(("gpu", f"{count} visible{driver}" if count else f"none visible (CPU path only){driver}"))
    else:
        listed = gpu["nvidia_smi"]
        rows.append(("gpu", f"{len(listed)} listed by nvidia-smi" if listed else "none found"))
    if info["cuda"]:
        for cap in gpu.get("compute_capabilities") or []:
            how = fastvqa.cuda_runs_on(cap, info["cuda_archs"])
            rows.append((f"sm_{cap} gpu", {"sass": "native code in this build",
                                           "ptx": "runs by JIT-compiling this build's PTX (first call slower)",
                                           None: "NOT covered by this build: rebuild with FASTVQA_CUDA_ARCHS=auto on it"}[how]))
    for name, module, extra in _BACKENDS:
        if name == "torch":  # which build, and whether it sees a GPU
            rows.append((name, _torch_text(torch_info)))
            continue
        rows.append((name, "importable" if backends[name] else f"not installed ({extra})"))
    width = max(len(k) for k, _ in rows)
    for key, value in rows:
        print(f"{key:<{width}}  {value}")
    return 0


def _print_warnings(result, command: str) -> None:
    """The result's ``info["warnings"]`` (partial coverage and the like), one
    line each on stderr: the numbers stay the official ones, the user is told."""
    for text in result.info.get("warnings", ()):
        print(f"fastvqa {command}: warning: {text}", file=sys.stderr)


#: ``fastvqa eval --out``: suffix -> format (json: what --json prints; else
#: the table, as MetricResult.format_table writes it).
EVAL_OUT = {".json": "json", ".txt": "plain", ".md": "markdown", ".tex": "latex",
            ".csv": "csv"}
EVAL_OUT_HELP = {".json": "what --json prints", ".txt": "plain table", ".md": "Markdown",
                 ".tex": "LaTeX", ".csv": "CSV"}


def _cmd_eval(args: argparse.Namespace) -> int:
    from fastvqa._cli_grammar import out_files
    from fastvqa._outputs import OutputFiles
    from fastvqa.evaluation import keywords, run_benchmark, run_record
    from fastvqa.metrics.result import per_question_format, table_format

    bench = args.entry  # the registered Benchmark this parser was built for
    # Every check before any work: the outputs (nothing the user has is
    # overwritten, no two outputs share a file), then the options.
    outputs = OutputFiles()
    per_question = outputs.add(args.per_question, "--per-question")
    plot = outputs.add(args.plot, "--plot")
    # Each output's format is the one its name says, or the run is refused now
    # (the old --table FILE never wrote JSON, so it keeps refusing .json).
    old_table = table_format(args.table) if args.table is not None else None
    files = [(outputs.add(path, option), fmt, option) for path, fmt, option in
             out_files(args, "eval", EVAL_OUT,
                       [("--table", args.table, old_table, ".txt, .md, .tex or .csv")])]
    if plot is not None and bench.plot is None:
        raise CommandError(f"{bench.name} has no plot")
    pq_format = per_question_format(per_question) if per_question is not None else None
    if args.json and args.table_format != "plain":
        raise CommandError("--table-format formats the printed table; --json prints JSON "
                           "instead (write a table file with --out FILE)")
    if bench.check is not None:
        bench.check(**keywords(bench.check, args))
    # The command line only translates its options into the library's keywords
    # (run_benchmark: the library's own call, which names swapped --gt/--pred).
    result = run_benchmark(bench, keywords(bench.evaluate, args))
    doc = None
    if args.json or any(fmt == "json" for _, fmt, _ in files):
        # The result, and how it was made: version, mode, command, input sha256s.
        doc = json.dumps({**result.to_dict(),
                          **run_record(bench, args, result, getattr(args, "_argv", None))},
                         indent=2)
    table = doc if args.json else result.format_table(decimals=args.decimals,
                                                      fmt=args.table_format)
    # Written through temporary names, moved into place only when all are
    # written: a failed plot leaves no per-question file behind.
    with outputs:
        if per_question is not None:
            result.write_per_question(outputs.temp(per_question), fmt=pq_format)
        for path, fmt, _ in files:
            text = doc if fmt == "json" else result.format_table(decimals=args.decimals,
                                                                 fmt=fmt)
            with outputs.temp(path).open("x") as f:
                f.write(text + "\n")
        if plot is not None:
            bench.plot(result, str(outputs.temp(plot)), **keywords(bench.plot, args))
        outputs.commit()
    print(table)
    _print_warnings(result, "eval")
    if per_question is not None:
        print(f"per-question results: {per_question}", file=sys.stderr)
    for path, fmt, _ in files:
        print(f"{'json' if fmt == 'json' else 'table'}: {path}", file=sys.stderr)
    if plot is not None:
        print(f"plot: {plot}", file=sys.stderr)
    return 0


def _cmd_baseline(args: argparse.Namespace) -> int:
    from fastvqa._outputs import OutputFiles
    from fastvqa.evaluation import keywords

    baseline = args.entry  # the registered Baseline this parser was built for
    outputs = OutputFiles()
    out = outputs.add(args.out, "--out")
    run = baseline.run
    predictions = run(**keywords(run, args))
    with outputs:
        with outputs.temp(out).open("x") as f:
            json.dump(predictions, f)
        outputs.commit()
    print(f"wrote {baseline.key} baseline '{baseline.name}' predictions to {out}", file=sys.stderr)
    return 0


def _add_eval_parser(sub, word: str, bench) -> None:
    """``fastvqa eval <word>``'s parser, for the registered ``bench``."""
    from fastvqa._cli_grammar import add_old, add_out
    from fastvqa.metrics.result import TABLE_FORMATS

    p = sub.add_parser(word, help=bench.help, description=bench.help)
    takes = inspect.signature(bench.evaluate).parameters
    if "pred_text" in takes:
        from fastvqa.evaluation import text_predictions

        # A prediction file or raw responses: exactly one.
        source = p.add_mutually_exclusive_group(required=True)
        source.add_argument("--pred", help="prediction file")
        text_predictions.add_arguments(p, source, fps="pred_fps" in takes)
    else:
        p.add_argument("--pred", required=True, help="prediction file")
    p.add_argument("--gt", required=True, metavar="PATH", help=bench.gt_help)
    if bench.modes:
        p.add_argument("--mode", choices=bench.modes, default=bench.default_mode,
                       help="evaluation rules")
    p.add_argument("--json", action="store_true", help="print JSON instead of a table")
    # More digits than a float64 holds are noise.
    p.add_argument("--decimals", type=int_in_range(0, 20), default=1,
                   help="decimals in the table, 0 to 20")
    p.add_argument("--per-question", metavar="FILE",
                   help="write per-question results, in the format the suffix names: "
                        ".csv, .json, .jsonl or .md")
    p.add_argument("--table-format", choices=TABLE_FORMATS, default="plain",
                   help="format of the printed table")
    add_out(p, EVAL_OUT_HELP, "the results")
    add_old(p, "--table", metavar="FILE")  # now --out FILE
    p.add_argument("--plot", metavar="FILE.png", help="draw a plot of the results")
    bench.add_arguments(p)
    p.set_defaults(func=_cmd_eval, entry=bench)


def _add_baseline_parsers(sub, baselines: list, benchmarks: dict) -> None:
    """One ``fastvqa baseline ... <name>`` parser per baseline."""
    for baseline in baselines:
        p = sub.add_parser(baseline.name, help=baseline.help, description=baseline.help)
        bench = benchmarks.get(baseline.key)
        p.add_argument("--gt", required=True, metavar="PATH",
                       help=baseline.gt_help or (bench.gt_help if bench else "ground truth"))
        p.add_argument("--out", required=True, help="where to write the predictions (JSON)")
        if baseline.seeded:
            p.add_argument("--seed", type=int_at_least(0), default=0,
                           help="random seed, an integer >= 0")
        baseline.add_arguments(p)
        p.set_defaults(func=_cmd_baseline, entry=baseline)


def _cmd_decode(args: argparse.Namespace) -> int:
    from fastvqa.video import cli as video_cli

    return video_cli.run(args)


def _cmd_extract(args: argparse.Namespace) -> int:
    from fastvqa.extract import cli as extract_cli

    return extract_cli.run(args)


def _cmd_store(args: argparse.Namespace) -> int:
    from fastvqa.extract import cli as extract_cli

    return extract_cli.run_store(args)


def _cmd_demo(args: argparse.Namespace) -> int:
    from fastvqa.demo import cli as demo_cli

    return demo_cli.run(args)


def _cmd_stats(args: argparse.Namespace) -> int:
    from fastvqa import stats

    return stats.run(args)


def _build_info(p: argparse.ArgumentParser) -> None:
    p.add_argument("--json", action="store_true", help="print machine-readable JSON")
    p.set_defaults(func=_cmd_info)


def _build_eval(p: argparse.ArgumentParser) -> None:
    from fastvqa.data.benchmarks import benchmark_choices
    from fastvqa.evaluation import BENCHMARKS, load_all

    load_all()
    ev_sub = p.add_subparsers(dest="benchmark", metavar="BENCHMARK", required=True)
    by_name: dict[str, list] = {}
    for bench in BENCHMARKS.values():
        by_name.setdefault(bench.name, []).append(bench)
    for name in benchmark_choices(by_name):
        entries = by_name[name]
        if entries[0].task is None:
            _add_eval_parser(ev_sub, name, entries[0])
            continue
        tasks_text = ", ".join(sorted(b.task for b in entries))
        tp = ev_sub.add_parser(name, help=f"{name}, by task: {tasks_text}",
                               description=f"Evaluate one task of {name}: {tasks_text}.")
        tasks = tp.add_subparsers(dest="task", metavar="TASK", required=True)
        for bench in sorted(entries, key=lambda b: b.task):
            _add_eval_parser(tasks, bench.task, bench)


def _build_baseline(p: argparse.ArgumentParser) -> None:
    from fastvqa.data.benchmarks import benchmark_choices
    from fastvqa.evaluation import BASELINES, BENCHMARKS, load_all

    load_all()
    bl_sub = p.add_subparsers(dest="benchmark", metavar="BENCHMARK", required=True)
    tree: dict[str, dict[Optional[str], list]] = {}
    for (_, _), baseline in sorted(BASELINES.items()):
        tree.setdefault(baseline.benchmark, {}).setdefault(baseline.task, []).append(baseline)
    for name in benchmark_choices(tree):
        by_task = tree[name]
        bp = bl_sub.add_parser(name, help=f"baselines for {name}")
        if None in by_task:
            names = bp.add_subparsers(dest="baseline", metavar="NAME", required=True)
            _add_baseline_parsers(names, by_task[None], BENCHMARKS)
            continue
        tasks = bp.add_subparsers(dest="task", metavar="TASK", required=True)
        for task in sorted(by_task):
            tp = tasks.add_parser(task, help=f"baselines for {name} {task}")
            names = tp.add_subparsers(dest="baseline", metavar="NAME", required=True)
            _add_baseline_parsers(names, by_task[task], BENCHMARKS)


def _build_decode(p: argparse.ArgumentParser) -> None:
    from fastvqa.video.cli import add_arguments, description

    p.description = description()
    add_arguments(p)
    p.set_defaults(func=_cmd_decode)


def _build_index(p: argparse.ArgumentParser) -> None:
    from fastvqa.retrieval.cli import add_arguments

    p.description = ("Build (fastvqa index build --texts FILE --out DIR) or search (fastvqa "
                     "index search DIR --query TEXT) a text index; needs the faiss and text "
                     "extras.")
    add_arguments(p)


def _build_distractors(p: argparse.ArgumentParser) -> None:
    from fastvqa.retrieval.cli import add_distractor_arguments

    p.description = ("Mine distractors for a benchmark's questions from the answers of similar "
                     "questions (the same records, or --bank), optionally building balanced "
                     "options; needs the faiss and text extras.")
    add_distractor_arguments(p)


def _build_demo(p: argparse.ArgumentParser) -> None:
    from fastvqa.demo.cli import DESCRIPTION, add_arguments

    p.description = DESCRIPTION
    add_arguments(p)
    p.set_defaults(func=_cmd_demo)


def _build_duplicates(p: argparse.ArgumentParser) -> None:
    from fastvqa.retrieval.cli import add_duplicates_arguments

    p.description = ("Count exact, normalised and (--threshold) near-duplicate questions, as "
                     "DVD Table 1's '# unique questions'.")
    add_duplicates_arguments(p)


def _build_extract(p: argparse.ArgumentParser) -> None:
    from fastvqa.extract import cli as extract_cli

    p.description = extract_cli.DESCRIPTION
    extract_cli.add_arguments(p)
    p.set_defaults(func=_cmd_extract)


def _build_store(p: argparse.ArgumentParser) -> None:
    from fastvqa.extract import cli as extract_cli

    extract_cli.add_store_arguments(p)
    p.set_defaults(func=_cmd_store)


def _build_stats(p: argparse.ArgumentParser) -> None:
    from fastvqa import stats

    p.description = stats.DESCRIPTION
    stats.add_arguments(p)
    p.set_defaults(func=_cmd_stats)


def _build_audit(p: argparse.ArgumentParser) -> None:
    from fastvqa.audit import cli as audit_cli

    p.description = audit_cli.DESCRIPTION
    audit_cli.add_arguments(p)  # sets func: fastvqa.audit.cli.run


def _build_generate(p: argparse.ArgumentParser) -> None:
    from fastvqa.generate import cli as generate_cli

    p.description = generate_cli.DESCRIPTION
    generate_cli.add_arguments(p)  # each builder sets func


def _build_train(p: argparse.ArgumentParser) -> None:
    from fastvqa.train import cli as train_cli

    p.description = train_cli.DESCRIPTION
    train_cli.add_arguments(p)


def _build_run(p: argparse.ArgumentParser) -> None:
    from fastvqa.run import cli as run_cli

    p.description = run_cli.DESCRIPTION
    run_cli.add_arguments(p)  # each pipeline sets func


#: Every command: (name, the one-line help ``fastvqa --help`` lists, the
#: function that adds its options). The help is written here, not taken from
#: the command's module, so listing the commands imports none of them.
_COMMANDS = (
    ("info", "show what this build contains and which backends exist", _build_info),
    ("eval", "evaluate predictions with a benchmark's official rules", _build_eval),
    ("baseline", "write a trivial baseline's predictions", _build_baseline),
    ("decode", "decode the frames a sampler picks from videos", _build_decode),
    ("index", "build or search a nearest-neighbour index over texts", _build_index),
    ("distractors", "mine wrong options from similar questions' answers", _build_distractors),
    ("demo", "generate a synthetic grounded video-QA benchmark, run the pipeline on it and "
             "report the scores", _build_demo),
    ("duplicates", "count unique and near-duplicate questions", _build_duplicates),
    ("extract", "extract per-video features into a resumable store", _build_extract),
    ("store", "inspect or verify a feature store (fastvqa store info|verify STORE)",
     _build_store),
    ("stats", "print a benchmark paper's dataset table from its files", _build_stats),
    ("audit", "what a model can score on a benchmark without the video (blind baselines, "
              "biases, leakage)", _build_audit),
    ("generate", "build a benchmark as its paper did (DVD dialogues from scene graphs; "
                 "DeVE-QA/SOK-Bench questions from captions)", _build_generate),
    ("run", "run a vision-language model or DeVi over a benchmark, to its official scores",
     _build_run),
    ("train", "train a grounding model from feature stores, scored each epoch with the "
              "benchmark's exact metrics", _build_train),
)


def _command_in(argv: Sequence[str]) -> Optional[str]:
    """The command ``argv`` runs: its first word that is not an option (the
    top-level parser's options, ``-h`` and ``--version``, take no value)."""
    return next((a for a in argv if not a.startswith("-")), None)


def build_parser(command: Optional[str] = None, *, all_commands: bool = True
                 ) -> argparse.ArgumentParser:
    """The ``fastvqa`` parser.

    Every command is listed (``fastvqa --help``); the options of a command are
    added only where asked for, since adding them imports the command's
    modules (the evaluation registry, retrieval, ...): all of them with
    ``all_commands`` (the default, for tools that walk the whole tree), else
    only those of ``command`` (``None``: none), which is what :func:`main`
    builds, so a run imports only what its command needs.
    """
    parser = _Parser(
        prog="fastvqa", description="fast, exact tools for grounded video question answering"
    )
    from fastvqa import __version__

    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, help_text, build in _COMMANDS:
        p = sub.add_parser(name, help=help_text)
        if all_commands or name == command:
            build(p)
    return parser


def _is_user_error(err: BaseException) -> bool:
    """Whether ``err`` describes the user's input rather than a fastvqa bug:
    the :mod:`fastvqa.errors` family (:class:`~fastvqa.errors.InputError`:
    ``CommandError``, ``OutputError``, ``VideoError``, ``IndexFileError``;
    and the loaders' ``DataFormatError``), a path the user named that is
    missing, taken or not readable, or an ``ImportError`` naming the ``pip
    install`` that fixes it. Nothing else: a plain ``ValueError`` or
    ``TypeError`` is a bug, whichever command raised it."""
    from fastvqa.errors import InputError

    user = (InputError, FileNotFoundError, IsADirectoryError, NotADirectoryError,
            FileExistsError, PermissionError)
    if isinstance(err, user):
        return True
    if isinstance(err, ImportError):  # a missing extra, whose message says what to install
        return "pip install" in str(err)
    return False


def main(argv: Optional[Sequence[str]] = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser(_command_in(argv), all_commands=False)
    args = parser.parse_args(argv)
    args._argv = argv  # for the run record of `eval --json`
    if not hasattr(args, "func"):
        parser.print_help()
        return 2
    from fastvqa._cli_grammar import flush_notices

    flush_notices(False)  # none left from an earlier main() in this process
    try:
        code = args.func(args)
        flush_notices()  # old spellings used: said once the run has succeeded
        return code
    except BrokenPipeError:
        # The reader went away (e.g. `| head`): not an error of ours. Point
        # stdout at devnull so the interpreter's final flush stays quiet.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except Exception as err:
        # Bad files and arguments are the user's to fix: one line, no traceback
        # (FASTVQA_DEBUG=1 shows it, for reporting a fastvqa bug). Anything
        # else is a bug of fastvqa's and keeps its traceback.
        if os.environ.get("FASTVQA_DEBUG") or not _is_user_error(err):
            raise
        print(f"fastvqa {args.command}: error: {err}", file=sys.stderr)
        return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
