# SPDX-License-Identifier: Apache-2.0
"""Benchmark training steps per second: fastvqa's data path (the one
fastvqa.train.fit uses) against the plain Python data path of Moment-DETR-style
code, feeding the same model the same batches.

Data: ``fastvqa demo --videos N --duration S --fps 5 --store`` (synthetic
videos, their feature store, QVHighlights-layout questions with their
moments) and ``fastvqa extract qvhighlights --text-recipe question-clip
--model fastvqa:tiny-text --pair-with`` (the question store), made once in a
temporary folder; not timed.

fastvqa: ``StoreDataset(video_store, records, query_store=...)`` in a
``DataLoader`` with ``GlobalBatchSampler`` batches and
``StoreDataset.collate`` (``fastvqa.train.loop._loader``, as ``fit`` builds
it). Baseline, as Moment-DETR's and lighthouse's datasets keep and read
features: setup writes one ``{vid}.npz`` per video (``features``) and one
``qid{qid}.npz`` per question (``last_hidden_state``), the layout of the
released QVHighlights features; per item the dataset opens both files, reads
the record's windows from its JSON line, computes the targets (clipped
``(centre, width)``, inclusive steps from the fixed step length, per-step
saliency) in Python, and the collate pads with Python lists and per-item
copies. Same ``DataLoader`` (same batches, same ``--workers``). Decoding the
frames again per item was not chosen: no training code does it, and it would
only measure the decoder.

Both rows then run the same step on their own copy of one model
(``MomentDETR`` of ``--hidden``, seeded identically): forward, loss, backward,
gradient norm clipped to 0.1, AdamW step. Before timing, every batch of the
epoch must be equal on both paths (every tensor the model and its loss read,
and the question order); otherwise the script exits 1. One call is one epoch;
reported: steps/s of each and the ratio fastvqa / baseline, plus the data
path alone (load + collate, no model) for where the difference comes from. No
target: the ratio is the result.

Usage: python benchmarks/bench_train.py [--videos 24] [--duration 20] [--batch-size 16]
       [--hidden 64] [--workers 0] [--repeats 5] [--busy N]
"""

from __future__ import annotations

import contextlib
import io
import json
import math
import shutil
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import numpy as np  # noqa: E402

import _harness as H  # noqa: E402
from fastvqa._argtypes import int_at_least, positive_float  # noqa: E402

NAME = "train"
FPS = 5.0            # the demo's feature rate: step k covers [k / FPS, (k + 1) / FPS)
CLIP_SECONDS = 2.0   # QVHighlights' saliency clip length
GRAD_CLIP = 0.1      # fit's default
#: the batch entries the model and its loss read, compared before timing
COMPARED = ("features", "mask", "query", "query_mask", "gold", "gold_mask", "gold_cw",
            "saliency", "saliency_mask", "duration")


# ------------------------------------------------------------------- setup


def make_data(work: Path, args) -> tuple:
    """The demo's video store, question store and moments file under ``work``."""
    from fastvqa.cli import main as cli

    demo, questions = work / "demo", work / "questions"
    commands = [
        ["demo", "--videos", str(args.videos), "--duration", f"{args.duration:g}",
         "--fps", f"{FPS:g}", "--seed", str(args.seed), "--out", str(demo), "--store",
         "--no-progress"],
        ["extract", "qvhighlights", "--text-recipe", "question-clip", "--gt",
         str(demo / "moments.jsonl"), "--model", "fastvqa:tiny-text", "--pair-with",
         str(demo / "features"), "--out", str(questions), "--no-progress"]]
    for argv in commands:
        said = io.StringIO()
        with contextlib.redirect_stdout(said), contextlib.redirect_stderr(said):
            rc = cli(argv)
        if rc != 0:  # a bad --videos / --duration for the demo: exit 2, as bad arguments
            print(said.getvalue().rstrip(), file=sys.stderr)
            print(f"bench_train: setup `fastvqa {argv[0]}` exited {rc}", file=sys.stderr)
            raise SystemExit(2)
    return demo / "features", questions, demo / "moments.jsonl"


def write_per_item_files(dataset, folder: Path) -> tuple:
    """The baseline's files: ``videos/{vid}.npz`` and ``queries/qid{qid}.npz``
    with the same float32 features as the stores."""
    videos, queries = folder / "videos", folder / "queries"
    videos.mkdir(parents=True)
    queries.mkdir()
    for i in range(len(dataset)):
        item = dataset[i]
        path = videos / f"{item['video']}.npz"
        if not path.exists():
            np.savez(path, features=item["features"].numpy())
        np.savez(queries / f"qid{item['record'].question_id}.npz",
                 last_hidden_state=item["query"].numpy())
    return videos, queries


# ---------------------------------------------------------------- baseline


def _plain_dataset_class():
    import torch
    from torch.utils.data import Dataset

    class PlainDataset(Dataset):
        """Moment-DETR-style: JSON lines in memory, features read per item
        from one ``.npz`` per video and per question, targets in Python."""

        def __init__(self, jsonl: Path, video_dir: Path, query_dir: Path):
            with open(jsonl) as f:
                self.data = [json.loads(line) for line in f if line.strip()]
            self.video_dir, self.query_dir = video_dir, query_dir

        def __len__(self):
            return len(self.data)

        def __getitem__(self, i):
            meta = self.data[i]
            with np.load(self.video_dir / f"{meta['vid']}.npz") as f:
                video = torch.from_numpy(f["features"].astype(np.float32))
            with np.load(self.query_dir / f"qid{meta['qid']}.npz") as f:
                query = torch.from_numpy(f["last_hidden_state"].astype(np.float32))
            n, duration = len(video), float(meta["duration"])
            gold, cw = [], []
            for s, e in meta["relevant_windows"]:
                first = math.floor(s * FPS)
                if e > s:   # the steps overlapping [s, e)
                    first, last = max(first, 0), min(math.ceil(e * FPS) - 1, n - 1)
                else:       # the step holding s
                    last = first
                gold.append([first, last] if 0 <= first <= last < n else [-1, -1])
                s, e = min(max(s, 0.0), duration), min(max(e, 0.0), duration)
                cw.append([(s + e) / 2 / duration, (e - s) / duration])
            saliency, labelled = [0.0] * n, "saliency_scores" in meta
            if labelled:
                by_clip = {c: sum(r) / len(r) for c, r in
                           zip(meta["relevant_clip_ids"], meta["saliency_scores"])}
                saliency = [by_clip.get(int((k + 0.5) / FPS // CLIP_SECONDS), 0.0)
                            for k in range(n)]
            return {"qid": meta["qid"], "video": video, "query": query, "gold": gold,
                    "gold_cw": cw, "duration": duration, "saliency": saliency,
                    "labelled": labelled}

    return PlainDataset


def _pad(seqs: list):
    """Moment-DETR's ``pad_sequences_1d``: zeros and a mask, one copy per item."""
    import torch

    lengths = [len(s) for s in seqs]
    out = torch.zeros(len(seqs), max(lengths), *seqs[0].shape[1:], dtype=seqs[0].dtype)
    mask = torch.zeros(len(seqs), max(lengths), dtype=torch.bool)
    for i, (s, n) in enumerate(zip(seqs, lengths)):
        out[i, :n] = s
        mask[i, :n] = True
    return out, mask


def plain_collate(items: list) -> dict:
    """The baseline's batch: padded tensors and targets padded as Python lists."""
    import torch

    features, mask = _pad([it["video"] for it in items])
    query, query_mask = _pad([it["query"] for it in items])
    g = max(len(it["gold"]) for it in items)
    t = features.shape[1]
    saliency = [it["saliency"] + [0.0] * (t - len(it["saliency"])) for it in items]
    return {
        "features": features, "mask": mask, "query": query, "query_mask": query_mask,
        "gold": torch.tensor([it["gold"] + [[-1, -1]] * (g - len(it["gold"])) for it in items],
                             dtype=torch.int64),
        "gold_mask": torch.tensor([[k < len(it["gold"]) for k in range(g)] for it in items]),
        "gold_cw": torch.tensor([it["gold_cw"] + [[0.0, 0.0]] * (g - len(it["gold_cw"]))
                                 for it in items], dtype=torch.float32),
        "saliency": torch.tensor(saliency, dtype=torch.float32),
        "saliency_mask": torch.tensor([[it["labelled"] and k < len(it["saliency"])
                                        for k in range(t)] for it in items]),
        "duration": torch.tensor([it["duration"] for it in items], dtype=torch.float64),
        "qids": [it["qid"] for it in items]}


# ------------------------------------------------------------------- check


def first_difference(ours: dict, theirs: dict) -> str:
    """'' when the batches agree on everything the model reads, else what differs."""
    import torch

    if [r.question_id for r in ours["records"]] != theirs["qids"]:
        return f"question order {theirs['qids'][:3]}... against fastvqa's " \
               f"{[r.question_id for r in ours['records']][:3]}..."
    for key in COMPARED:
        a, b = ours[key], theirs[key]
        if a.shape != b.shape or a.dtype != b.dtype or not torch.equal(a, b):
            return (f"{key}: {tuple(b.shape)} {b.dtype} against fastvqa's {tuple(a.shape)} "
                    f"{a.dtype}" + ("" if a.shape != b.shape else " (values differ)"))
    return ""


# -------------------------------------------------------------------- main


def main() -> int:
    p = H.base_parser(__doc__.split("\n\n")[0])
    p.add_argument("--videos", type=int_at_least(1), default=24,
                   help="demo videos (about 10 questions each)")
    p.add_argument("--duration", type=positive_float, default=20.0,
                   help="seconds per demo video (5 feature steps per second)")
    p.add_argument("--batch-size", type=int_at_least(1), default=16,
                   help="questions per training step")
    p.add_argument("--hidden", type=int_at_least(4), default=64,
                   help="MomentDETR width, a multiple of 4 (heads 4, ffn 2 x hidden, "
                        "2 + 2 layers, 10 queries)")
    p.add_argument("--workers", type=int_at_least(0), default=0,
                   help="DataLoader worker processes, both paths (fit's data.workers)")
    p.set_defaults(repeats=5, warmup=1, min_repeat_ms=0.0)
    args = p.parse_args()
    if args.hidden % 4:
        p.error(f"--hidden must be a multiple of 4 (4 attention heads), got {args.hidden}")
    H.require_device(args.device)
    import torch

    from fastvqa.extract.dataset import StoreDataset
    from fastvqa.nn import build_model
    from fastvqa.train import GlobalBatchSampler
    from fastvqa.train.data import load_split
    from fastvqa.train.loop import _loader, _model_inputs, _to

    device = torch.device(args.device)
    spec = {"hidden": args.hidden, "heads": 4, "ffn": 2 * args.hidden, "enc_layers": 2,
            "dec_layers": 2, "num_queries": 10}
    config = {"videos": args.videos, "duration_s": args.duration, "feature_fps": FPS,
              "batch_size": args.batch_size, "model": {"name": "moment_detr", **spec},
              "workers": args.workers, "grad_clip": GRAD_CLIP, "optimizer": "AdamW lr 1e-4",
              "baseline": "per-item .npz (Moment-DETR layout), Python targets and padding",
              "seed": args.seed, "device": args.device, "repeats": args.repeats,
              "warmup": args.warmup, "busy": args.busy}
    env = H.environment(args.device)
    name = f"{NAME}_{args.device}"
    work = Path(tempfile.mkdtemp(prefix="fastvqa-bench-train-"))
    try:
        video_store, question_store, moments = make_data(work, args)
        records = load_split("qvhighlights", str(moments), "train")
        ours = StoreDataset(video_store, records, query_store=question_store)
        theirs = _plain_dataset_class()(moments, *write_per_item_files(ours, work / "npz"))
        sampler = GlobalBatchSampler(len(ours), args.batch_size, seed=args.seed)
        order = list(sampler)            # the baseline draws the same batches
        fv_loader = _loader(ours, sampler, args.workers)
        from torch.utils.data import DataLoader

        plain_loader = DataLoader(theirs, batch_sampler=order, collate_fn=plain_collate,
                                  num_workers=args.workers)
        config.update(records=len(ours), steps_per_epoch=len(order),
                      video_steps=int(ours[0]["features"].shape[0]),
                      video_dim=int(ours[0]["features"].shape[1]),
                      query_dim=int(ours[0]["query"].shape[1]))
        print(f"{len(ours)} questions on {args.videos} demo videos of {args.duration:g} s "
              f"({config['video_steps']} steps x {config['video_dim']}, queries x "
              f"{config['query_dim']}); {len(order)} steps of {args.batch_size} per epoch")

        for k, (a, b) in enumerate(zip(fv_loader, plain_loader)):
            problem = first_difference(a, b)
            if problem:
                H.fail_check(args.out, name, config, env, f"batch {k}: baseline {problem}")
        print(f"check: all {len(order)} batches of the epoch are equal on both paths")

        def trainer(loader):
            torch.manual_seed(args.seed)
            model = build_model("moment_detr", video_dim=config["video_dim"],
                                query_dim=config["query_dim"], **spec).to(device).train()
            optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4, weight_decay=1e-4)

            def epoch():
                for batch in loader:
                    batch = _to(batch, device)
                    terms = model.loss(model(*_model_inputs(batch)), batch)
                    optimizer.zero_grad(set_to_none=True)
                    terms.total.backward()
                    torch.nn.utils.clip_grad_norm_(model.parameters(), GRAD_CLIP)
                    optimizer.step()
            return epoch

        def data_only(loader):
            def epoch():
                for batch in loader:
                    _to(batch, device)
            return epoch

        fv = ("fastvqa: StoreDataset + GlobalBatchSampler", "feature stores")
        plain = ("plain: per-item .npz, Python targets", "npz files")
        impls = [H.Impl("train step", *fv, trainer(fv_loader)),
                 H.Impl("train step", *plain, trainer(plain_loader), ref=fv),
                 H.Impl("data only", *fv, data_only(fv_loader)),
                 H.Impl("data only", *plain, data_only(plain_loader), ref=fv)]
        timed = H.time_all(impls, args)
        title = (f"training, MomentDETR hidden {args.hidden} on {len(ours)} demo questions, "
                 f"batch {args.batch_size}, {args.device}; one epoch ({len(order)} steps) per "
                 "call; ratio column: fastvqa steps/s / baseline steps/s (data only: the "
                 "batches/s each data path delivers alone)")
        H.report(name, title, impls, timed, work=len(order), rate_unit="steps/s",
                 config=config, env=env, out_dir=args.out)
        for impl in (fv, plain):
            share = timed[("data only", *impl)]["median_s"] / \
                timed[("train step", *impl)]["median_s"]
            print(f"data path, share of a training step: {share:.0%} ({impl[0]})")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
