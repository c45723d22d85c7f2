# SPDX-License-Identifier: Apache-2.0
"""Recipes: everything that decides the numbers of a feature store.

A :class:`Recipe` is data (a frozen dataclass of strings, numbers and tuples):
which frames (a :mod:`fastvqa.video` sampler spec), how they are resized,
cropped and normalised, what the model sees (frames or clips), which model and
layer, the stored dtype, and how each feature maps to time. Its
:attr:`Recipe.hash` (sha256 of its canonical JSON) is stored with every
feature it produced, so a store never mixes recipes.

The built-in recipes (:data:`RECIPES`) reproduce the published setups of the
benchmarks' papers and the common grounding codebases; each cites its source.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from dataclasses import dataclass
from typing import Optional, Union

from fastvqa import _checks
from fastvqa.errors import InputError

Size = Union[int, tuple, None]

#: what the model receives per item
INPUTS = ("frames", "clips")
#: how an item maps to time (see :class:`Recipe`)
TIMES = ("frames", "grid")
DTYPES = ("float32", "float16")

IMAGENET_MEAN = (0.485, 0.456, 0.406)
IMAGENET_STD = (0.229, 0.224, 0.225)
CLIP_MEAN = (0.48145466, 0.4578275, 0.40821073)
CLIP_STD = (0.26862954, 0.26130258, 0.27577711)
KINETICS_MEAN = (0.43216, 0.394666, 0.37645)  # torchvision's video models
KINETICS_STD = (0.22803, 0.22145, 0.216989)


@dataclass(frozen=True)
class Recipe:
    """How a store's features are made. Every field but ``source`` (a citation,
    which decides no number) takes part in :attr:`hash`.

    Attributes:
        name: the recipe's name (``fastvqa extract --recipe NAME``).
        sampler: a :func:`fastvqa.video.samplers.from_spec` spec: ``"fps:1"``
            (one frame per item), ``"clips:16,4"`` or ``"seconds:16"`` (one
            clip per item).
        size: resize before the crop: shorter side (int) or ``(H, W)``, as
            :class:`fastvqa.video.VideoDecoder`'s ``size`` (bilinear,
            antialiased when shrinking); ``None`` keeps the decoded size.
        crop: centre crop after the resize (int or ``(H, W)``), or ``None``.
        mean, std: per-channel normalisation of RGB values scaled to [0, 1]:
            ``(x / 255 - mean) / std``.
        input: ``"frames"``: the model gets ``(B, 3, H, W)`` float32 batches
            of frames; ``"clips"``: ``(B, 3, T, H, W)`` batches of clips (the
            layout of torchvision's and PyTorchVideo's video models).
        model: the default model spec (:func:`fastvqa.extract.models.resolve`),
            e.g. ``"torchvision:r3d_18"``; ``--model`` replaces it (and the
            store records the model actually used).
        layer: the name of the module (``model.get_submodule``) whose output
            is the feature, e.g. ``"avgpool"``; ``None``: the model's output.
            Either way the output of each item is flattened to one vector.
        dtype: stored dtype of the features, ``"float32"`` or ``"float16"``
            (the model runs in float32; the cast is the last step).
        batch: items per model call. Part of the recipe because a CPU or GPU
            matrix product can round differently at another batch size.
        time: ``"frames"``: item ``k`` covers ``[t_first, t_last + d_last)``,
            the display time of the frames it was made of (seconds from the
            video's first frame, which is 0); ``"grid"``: item ``k`` covers
            ``[offset + k / fps, offset + (k + 1) / fps)`` of an ``fps:`` or
            ``seconds:`` sampler, clipped to the video's duration (one
            feature per second at 1 fps, as WildQA and DeVi index them).
        source: where the setup comes from (paper, code), for the docs.
    """

    name: str
    sampler: str
    size: Size = None
    crop: Size = None
    mean: tuple = (0.0, 0.0, 0.0)
    std: tuple = (1.0, 1.0, 1.0)
    input: str = "frames"
    model: str = ""
    layer: Optional[str] = None
    dtype: str = "float32"
    batch: int = 16
    time: str = "frames"
    source: str = ""

    def __post_init__(self):
        from fastvqa.video.samplers import from_spec

        where = f"recipe {self.name!r}"
        for field, choices in (("input", INPUTS), ("time", TIMES), ("dtype", DTYPES)):
            _checks.choice(getattr(self, field), where, field, choices)
        sampler = from_spec(self.sampler)  # raises on a bad spec
        clips = sampler.clip_length is not None
        if clips != (self.input == "clips"):
            raise InputError(f"{where}: sampler {self.sampler!r} gives "
                             f"{'clips' if clips else 'frames'}, but input is {self.input!r}")
        if self.time == "grid" and not hasattr(sampler, "fps"):
            raise InputError(f"{where}: time 'grid' needs an fps: or seconds: sampler, "
                             f"got {self.sampler!r}")
        for field in ("mean", "std"):
            value = getattr(self, field)
            if len(value) != 3 or not all(isinstance(v, (int, float)) for v in value):
                raise InputError(f"{where}: {field} must be 3 numbers, got {value!r}")
        if any(v <= 0 for v in self.std):
            raise InputError(f"{where}: std must be > 0, got {self.std!r}")
        if isinstance(self.batch, bool) or not isinstance(self.batch, int) or self.batch < 1:
            raise InputError(f"{where}: batch must be an integer >= 1, got {self.batch!r}")

    def to_dict(self) -> dict:
        """The fields as JSON values (tuples as lists)."""
        return json.loads(json.dumps(dataclasses.asdict(self)))

    @classmethod
    def from_dict(cls, data: dict) -> "Recipe":
        """The recipe :meth:`to_dict` wrote (lists back to tuples)."""
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise InputError(f"recipe: unknown fields {unknown}")

        def back(v):
            return tuple(v) if isinstance(v, list) else v

        return cls(**{k: back(v) for k, v in data.items()})

    @property
    def hash(self) -> str:
        """sha256 (hex) of the canonical JSON of every field but ``source``
        (sorted keys, no spaces): equal recipes, equal hashes, on every
        machine; editing a recipe's citation does not orphan its stores."""
        fields = {k: v for k, v in self.to_dict().items() if k != "source"}
        text = json.dumps(fields, sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(text.encode("utf-8")).hexdigest()

    def replace(self, **changes) -> "Recipe":
        """A copy with some fields changed (a new hash)."""
        return dataclasses.replace(self, **changes)


RECIPES: dict = {}


def register_recipe(recipe: Recipe) -> Recipe:
    """Add ``recipe`` to :data:`RECIPES` under its name (a name is taken once)."""
    if recipe.name in RECIPES:
        raise ValueError(f"a recipe named {recipe.name!r} exists already")
    RECIPES[recipe.name] = recipe
    return recipe


def get_recipe(recipe: Union[str, Recipe]) -> Recipe:
    """A :class:`Recipe` as given, or the built-in one of that name."""
    if isinstance(recipe, Recipe):
        return recipe
    if not isinstance(recipe, str) or recipe not in RECIPES:
        raise InputError(f"unknown recipe {recipe!r}; known: {', '.join(sorted(RECIPES))}")
    return RECIPES[recipe]


register_recipe(Recipe(
    name="wildqa-i3d",
    sampler="seconds:16", size=256, crop=224, input="clips",
    model="torchvision:r3d_18", layer="avgpool", time="grid",
    source="WildQA (Castro et al., COLING 2022) code: ffmpeg -r 1 frames, Resize(256), "
           "CenterCrop(224), values in [0, 1] without normalisation; for each second t the "
           "16 one-fps frames [t-8, t+7] with edge replication into I3D RGB, output after "
           "avg_pool; one feature per second. I3D is not in torchvision: the default model "
           "is r3d_18, pass --model for piergiaj's I3D checkpoint"))

register_recipe(Recipe(
    name="dvd-resnext3d",
    sampler="clips:16,4", size=(112, 112), input="clips",
    mean=KINETICS_MEAN, std=KINETICS_STD,
    model="torchvision:r3d_18", layer="avgpool", time="frames",
    source="DVD (Le et al., ACL 2021): videos resized to 112x112, clips of 16 frames with a "
           "stride of 4 (clip k = frames [4k, 4k+15]), 3-D ResNeXt-101 features (the "
           "release's dvd_resnext101; normalisation not stated, Kinetics statistics here). "
           "ResNeXt-101 3-D is not in torchvision: the default model is r3d_18"))

register_recipe(Recipe(
    name="devi-clip",
    sampler="fps:1", size=224, crop=224, mean=CLIP_MEAN, std=CLIP_STD,
    model="open_clip:ViT-L-14", time="grid", dtype="float16",
    source="DeVE-QA / DeVi (docs/papers/deveqa.md): frames at 1 fps into CLIP ViT-L/14 "
           "(224 px) image features, kept in the temporal event memory; CLIP's "
           "preprocessing (resize shorter side 224, centre crop, CLIP mean and std)"))

register_recipe(Recipe(
    name="qvhighlights-clip",
    sampler="fps:0.5", size=224, crop=224, mean=CLIP_MEAN, std=CLIP_STD,
    model="open_clip:ViT-B-32", time="grid", dtype="float16",
    source="QVHighlights / Moment-DETR (Lei et al., NeurIPS 2021): CLIP ViT-B/32 image "
           "features of 2-second clips, one frame every 2 s (0.5 fps); clip k = [2k, 2k+2) s"))

register_recipe(Recipe(
    name="imagenet-frames-1fps",
    sampler="fps:1", size=256, crop=224, mean=IMAGENET_MEAN, std=IMAGENET_STD,
    model="torchvision:resnet50", layer="avgpool", time="grid",
    source="The common 2-D CNN baseline of grounding code (e.g. NExT-GQA's and TVQA's "
           "ResNet features): 1 fps, Resize(256), CenterCrop(224), ImageNet statistics, "
           "ResNet-50 pooled features"))
