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

from fastvqa.evaluation import CommandError

LIST_SUFFIXES = (".txt", ".lst", ".list")
FORMATS = ("npz", "png", "jpg")
CHUNK = 16  # videos decoded (and held in memory) at a time


def _size(text: str):
    """``256`` (shorter side) or ``224x224`` / ``224,224`` (height x width)."""
    for sep in ("x", ","):
        if sep in text:
            h, w = text.split(sep, 1)
            return int(h), int(w)
    return int(text)


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("input", help="a video file, or a list file (.txt/.lst/.list: one path per "
                                 "line, # comments; relative paths are relative to the list)")
    p.add_argument("--sampler", required=True,
                   help="fps:1 | uniform:16 | clips:16,4,1 | seconds:16 | "
                        "hierarchical:15,35,65/5,7,13 | outside:10,20,8 (optionally @START-END)")
    p.add_argument("--size", type=_size, help="shorter side (256) or HxW (224x224)")
    p.add_argument("--crop", type=_size, help="centre crop after resizing: 224 or HxW")
    p.add_argument("--out", required=True,
                   help="FILE.npz (one video) or a new folder: images (one video) or one "
                        "<name>.npz / <name>/ per video (a list)")
    p.add_argument("--format", choices=FORMATS,
                   help="npz, png or jpg (default: npz for FILE.npz, png for a folder with one "
                        "video, npz for a folder with a list)")
    p.add_argument("--backend", choices=("auto", "pyav", "dali"), default="auto",
                   help="decoder (default auto: DALI on a GPU where present, else PyAV)")
    p.add_argument("--workers", type=int, default=None, help="decoding threads on the CPU")
    p.add_argument("--no-progress", action="store_true", help="no progress bar on many files")


def _read_list(path: Path) -> list:
    base = path.parent
    out = []
    for line in path.read_text().splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        p = Path(line)
        out.append(p if p.is_absolute() else base / p)
    if not out:
        raise CommandError(f"{path}: the list names no video")
    return out


def _names(paths: list) -> list:
    stems = [p.stem for p in paths]
    if len(set(stems)) == len(stems):
        return stems
    return [f"{k:05d}_{s}" for k, s in enumerate(stems)]


def _write_npz(path: Path, frames, video: Path) -> None:
    np.savez(path, frames=frames.frames, timestamps=frames.timestamps, indices=frames.indices,
             path=np.array(str(video)))


def _write_images(folder: Path, frames, fmt: str) -> None:
    import av

    folder.mkdir(parents=True)
    codec, pix_fmt = ("png", "rgb24") if fmt == "png" else ("mjpeg", "yuvj420p")
    with (folder / "frames.csv").open("w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["file", "frame_index", "seconds"])
        for k, (img, idx, ts) in enumerate(zip(frames.frames, frames.indices, frames.timestamps)):
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


def run(args: argparse.Namespace) -> int:
    try:
        from fastvqa.video import from_spec, read_batch
        from fastvqa._progress import Progress
        from fastvqa.video.index import import_av

        import_av()
    except ImportError as err:
        raise CommandError(str(err)) from None
    sampler = from_spec(args.sampler)
    src, out = Path(args.input), Path(args.out)
    if out.exists():
        raise CommandError(f"{out} exists; refusing to overwrite it (choose another path)")
    is_list = src.suffix.lower() in LIST_SUFFIXES
    if is_list and not src.is_file():
        raise CommandError(f"{src}: no such list file")
    videos = _read_list(src) if is_list else [src]
    to_npz_file = out.suffix.lower() == ".npz"
    fmt = args.format or ("npz" if to_npz_file or is_list else "png")
    if to_npz_file and (is_list or fmt != "npz"):
        raise CommandError("--out FILE.npz takes one video in npz format; give a folder for a "
                           "list or for images")
    show = not args.no_progress and len(videos) > 1
    progress = Progress(len(videos), show)
    kwargs = dict(size=args.size, crop=args.crop, backend=args.backend, workers=args.workers,
                  progress=False, on_error="raise" if not is_list else "return")
    failed = 0
    names = _names(videos)
    if not to_npz_file and (is_list or fmt == "npz"):
        out.mkdir(parents=True)
    try:
        for lo in range(0, len(videos), CHUNK):
            chunk = videos[lo:lo + CHUNK]
            for k, result in enumerate(read_batch(chunk, sampler, **kwargs)):
                video, name = chunk[k], names[lo + k]
                progress.update()
                if isinstance(result, Exception):
                    failed += 1
                    print(f"fastvqa decode: skipped {result}", file=sys.stderr)
                    continue
                if to_npz_file:
                    _write_npz(out, result, video)
                elif fmt == "npz":
                    _write_npz(out / f"{name}.npz", result, video)
                elif is_list:
                    _write_images(out / name, result, fmt)
                else:
                    _write_images(out, result, fmt)
    finally:
        progress.close()
    done = len(videos) - failed
    print(f"decoded {done} of {len(videos)} video(s) with {args.sampler} into {out}",
          file=sys.stderr)
    return 1 if failed else 0
