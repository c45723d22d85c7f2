# SPDX-License-Identifier: Apache-2.0
"""``fastvqa decode``: videos to the frames a sampler picks, as .npz or images.

Kept beside the video package so ``fastvqa/cli.py`` only wires the command;
nothing here imports PyAV until the command runs.
"""

from __future__ import annotations

import argparse
import csv
import sys
from fractions import Fraction
from pathlib import Path

import numpy as np

from fastvqa._argtypes import int_at_least
from fastvqa.errors import CommandError

LIST_SUFFIXES = (".txt", ".lst", ".list")
FORMATS = ("npz", "png", "jpg")
CHUNK = 16  # videos decoded (and held in memory) at a time


def _size(text: str):
    """``256`` (shorter side) or ``224x224`` / ``224,224`` (height x width),
    each between 1 and ``MAX_SIDE`` pixels."""
    from fastvqa.video.geometry import MAX_SIDE

    parts = [text]
    for sep in ("x", ","):
        if sep in text:
            parts = text.split(sep, 1)
            break
    try:
        values = [int(v) for v in parts]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected N or HxW (positive integers), got {text!r}") \
            from None
    for v in values:
        if not 1 <= v <= MAX_SIDE:
            raise argparse.ArgumentTypeError(f"sides must lie in [1, {MAX_SIDE}] pixels, "
                                             f"got {text!r}")
    return values[0] if len(values) == 1 else tuple(values)


def description() -> str:
    """``fastvqa decode``'s description, listing the registered samplers."""
    from fastvqa.video.samplers import spec_examples

    return (f"Decode the frames a sampler picks ({spec_examples()}; append @START-END to "
            "restrict) into an .npz or a folder of images.")


def add_arguments(p: argparse.ArgumentParser) -> None:
    from fastvqa.video.device import BACKENDS
    from fastvqa.video.samplers import spec_help

    p.add_argument("input", help="a video file, or a list file (.txt/.lst/.list: one path per "
                                 "line, # comments; relative paths are relative to the list)")
    p.add_argument("--sampler", required=True,
                   help=f"{spec_help()} (optionally @START-END)")
    p.add_argument("--size", type=_size, help="shorter side (256) or HxW (224x224)")
    p.add_argument("--crop", type=_size, help="centre crop after resizing: 224 or HxW")
    p.add_argument("--out", required=True,
                   help="FILE.npz (one video) or a new folder: images (one video) or one "
                        "<name>.npz / <name>/ per video (a list)")
    p.add_argument("--format", choices=FORMATS,
                   help="output format of --out: npz, png or jpg (when omitted: npz for "
                        "FILE.npz, png for a folder with one video, npz for a folder with a "
                        "list)")
    p.add_argument("--backend", choices=BACKENDS, default="auto",
                   help="decoder (auto: DALI on a GPU where present, else PyAV)")
    p.add_argument("--workers", type=int_at_least(1), default=None,
                   help="decoding threads on the CPU")
    p.add_argument("--rotate", action="store_true",
                   help="apply rotation metadata (the display matrix) as players do; default: "
                        "frames in coded orientation. PyAV only")
    p.add_argument("--no-progress", action="store_true", help="no progress bar on many files")


def check_backend(backend: str) -> None:
    """``--backend dali`` (which decodes on the GPU, NVDEC): DALI installed
    and a GPU visible, else CommandError before any work (DALI would fail
    only once decoding starts, with a RuntimeError). Other backends pass."""
    if backend != "dali":
        return
    from fastvqa.video import api, device

    if not api._dali_available():
        raise CommandError("--backend dali needs NVIDIA DALI: pip install 'fastvqa[dali]' "
                           "(or use --backend pyav)")
    if not device.gpu_visible():
        raise CommandError("--backend dali decodes H.264 on the GPU (NVDEC), and no GPU is "
                           "visible; use --backend pyav or auto")


def _read_list(path: Path) -> list:
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise CommandError(f"{path}: not a text list of video paths (not UTF-8)") from None
    except OSError as err:
        raise CommandError(f"{path}: cannot read the list ({err.strerror or err})") from None
    base = path.parent
    out = []
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        p = Path(line)
        out.append(p if p.is_absolute() else base / p)
    if not out:
        raise CommandError(f"{path}: the list names no video")
    return out


def _names(paths: list) -> list:
    """One output name per video: its file name without the suffix, made safe
    (no leading dots, never empty: ``..mp4`` is ``video``), prefixed with its
    position in the list when two would collide (also up to case, for
    case-insensitive file systems)."""
    stems = [p.stem.lstrip(".").strip() or "video" for p in paths]
    folded = [s.casefold() for s in stems]
    if len(set(folded)) == len(folded):
        return stems
    return [f"{k:05d}_{s}" for k, s in enumerate(stems)]


def _write_npz(path: Path, frames, video: Path) -> None:
    # Through a file object: NumPy appends ".npz" to a name that lacks it
    # (case-sensitively), so the name written is exactly the one checked.
    with open(path, "xb") as f:
        np.savez(f, frames=_numpy(frames.data), pts_seconds=frames.pts_seconds,
                 duration_seconds=frames.duration_seconds, indices=frames.indices,
                 path=np.array(str(video)))


def _numpy(data):
    """Frames as NumPy (a CUDA tensor from DALI is copied to the host)."""
    return data if isinstance(data, np.ndarray) else data.cpu().numpy()


def _write_images(folder: Path, frames, fmt: str) -> None:
    import av

    folder.mkdir(parents=True, exist_ok=True)
    codec, pix_fmt = ("png", "rgb24") if fmt == "png" else ("mjpeg", "yuvj420p")
    with (folder / "frames.csv").open("x", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["file", "frame_index", "seconds"])
        data = _numpy(frames.data)
        data = data.reshape((-1,) + data.shape[-3:])  # clips: one image per frame, in order
        for k, (img, idx, ts) in enumerate(zip(data, frames.indices.reshape(-1),
                                               frames.pts_seconds.reshape(-1))):
            name = f"{k:06d}.{fmt}"
            ctx = av.CodecContext.create(codec, "w")
            ctx.width, ctx.height, ctx.pix_fmt = img.shape[1], img.shape[0], pix_fmt
            ctx.time_base = Fraction(1, 25)
            if codec == "mjpeg":
                ctx.options = {"qscale": "2"}
            frame = av.VideoFrame.from_ndarray(np.ascontiguousarray(img), format="rgb24")
            packets = ctx.encode(frame.reformat(format=pix_fmt)) + ctx.encode(None)
            (folder / name).write_bytes(b"".join(bytes(p) for p in packets))
            writer.writerow([name, int(idx), f"{float(ts):.6f}"])


def _plan(videos: list, names: list, sampler, args, is_list: bool) -> tuple:
    """Probe and sample every video and check its output before anything is
    written. Returns ``(ok, failed)``: ``[(video, name, bytes)]`` and
    ``[message]``. A single video that fails is a :class:`CommandError`."""
    from fastvqa.errors import InputError
    from fastvqa.video import VideoError, display_rotation, probe
    from fastvqa.video.api import available_memory, check_output_size

    budget = available_memory()
    ok, failed = [], []
    for video, name in zip(videos, names):
        try:
            index = probe(video)
            idx = sampler.indices(index)
            rotation = display_rotation(video, index.stream_index) if args.rotate else 0
            need = check_output_size(index, len(idx), size=args.size, crop=args.crop,
                                     budget=budget, rotation=rotation)
        except InputError as err:  # a bug (any other error) keeps its traceback
            message = str(err) if isinstance(err, VideoError) else f"{video}: {err}"
            if not is_list:
                raise CommandError(message) from None
            failed.append(message)
            continue
        ok.append((video, name, need))
    return ok, failed


def _chunks(plan: list, budget) -> list:
    """Consecutive groups of at most ``CHUNK`` videos whose frames together
    take at most half the memory available (at least one video each)."""
    limit = None if budget is None else budget // 2
    groups, current, held = [], [], 0
    for item in plan:
        if current and (len(current) >= CHUNK or (limit is not None and held + item[2] > limit)):
            groups.append(current)
            current, held = [], 0
        current.append(item)
        held += item[2]
    if current:
        groups.append(current)
    return groups


def _remove_leftovers(out: Path) -> None:
    """Remove what a killed ``decode`` into ``out`` left beside it: its
    staging file or folder (:func:`fastvqa._outputs.leftover_temporaries`).
    A decode is redone whole, so nothing in them is reusable."""
    from fastvqa._outputs import leftover_temporaries, remove_path

    for tmp in leftover_temporaries(out) + leftover_temporaries(out, folders=True):
        remove_path(tmp)


def run(args: argparse.Namespace) -> int:
    """``fastvqa decode``: validate everything (sampler, size, crop, the list
    and every video in it, the output's size in memory), then decode into a
    temporary name beside ``--out`` that is moved into place only when the run
    succeeds; a failed run leaves nothing behind."""
    try:
        from fastvqa._outputs import OutputFiles
        from fastvqa._progress import Progress
        from fastvqa.video import from_spec, read_batch
        from fastvqa.video.api import available_memory
        from fastvqa.video.index import import_av

        import_av()
    except ImportError as err:
        raise CommandError(str(err)) from None
    sampler = from_spec(args.sampler)  # an InputError names a bad spec
    if args.rotate and args.backend == "dali":
        raise CommandError("--rotate is implemented by the PyAV backend only (--backend pyav)")
    check_backend(args.backend)
    src, out = Path(args.input), Path(args.out)
    to_npz_file = out.suffix.lower() == ".npz"
    outputs = OutputFiles()
    outputs.add(out, "--out", folder=not to_npz_file)  # written as named: see _write_npz
    is_list = src.suffix.lower() in LIST_SUFFIXES
    if is_list and not src.is_file():
        raise CommandError(f"{src}: no such list file")
    videos = _read_list(src) if is_list else [src]
    fmt = args.format or ("npz" if to_npz_file or is_list else "png")
    if to_npz_file and (is_list or fmt != "npz"):
        raise CommandError("--out FILE.npz takes one video in npz format; give a folder for a "
                           "list or for images")
    names = _names(videos)
    plan, failed = _plan(videos, names, sampler, args, is_list)
    for message in failed:
        print(f"fastvqa decode: skipped {message}", file=sys.stderr)
    if not plan:
        raise CommandError(f"none of the {len(videos)} video(s) in {src} can be decoded with "
                           f"these options; nothing written")

    show = not args.no_progress and len(plan) > 1
    from fastvqa.video import resolve_backend

    # auto: DALI on the GPU where present (then copied back for writing), else PyAV
    backend = "pyav" if args.rotate else resolve_backend(args.backend, "cuda")
    kwargs = dict(size=args.size, crop=args.crop, backend=backend, workers=args.workers,
                  device="cuda" if backend == "dali" else "cpu", progress=False,
                  on_error="raise" if not is_list else "return", rotate=args.rotate)
    progress = Progress(len(plan), show)
    done = 0
    _remove_leftovers(out)
    try:
        with outputs:  # a failed run leaves neither a partial file nor a folder made for it
            tmp = outputs.temp(out)
            for chunk in _chunks(plan, available_memory()):
                results = read_batch([video for video, _, _ in chunk], sampler, **kwargs)
                for (video, name, _), result in zip(chunk, results):
                    progress.update()
                    if isinstance(result, Exception):
                        failed.append(str(result))
                        print(f"fastvqa decode: skipped {result}", file=sys.stderr)
                        continue
                    if to_npz_file:
                        _write_npz(tmp, result, video)
                    elif fmt == "npz":
                        _write_npz(tmp / f"{name}.npz", result, video)
                    elif is_list:
                        _write_images(tmp / name, result, fmt)
                    else:
                        _write_images(tmp, result, fmt)
                    done += 1
            if done == 0:
                raise CommandError(f"none of the {len(videos)} video(s) in {src} could be "
                                   "decoded; nothing written")
            outputs.commit()  # never over something made while we decoded
    finally:
        progress.close()
    print(f"decoded {done} of {len(videos)} video(s) with {args.sampler} into {out}",
          file=sys.stderr)
    return 1 if failed else 0
