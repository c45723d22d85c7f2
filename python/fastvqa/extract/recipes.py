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
from typing import Any, Optional, Union

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


class _Hashed:
    """What every recipe kind shares: its fields as JSON, back, and the hash
    of every field but ``source`` (a citation, which decides no number)."""

    def to_dict(self) -> dict:
        """The fields as JSON values (tuples as lists)."""
        return json.loads(json.dumps(dataclasses.asdict(self)))

    @classmethod
    def from_dict(cls, data: dict) -> "_Hashed":
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

    def replace(self, **changes) -> "_Hashed":
        """A copy with some fields changed (a new hash)."""
        return dataclasses.replace(self, **changes)


@dataclass(frozen=True)
class Recipe(_Hashed):
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


RECIPES: dict = {}


def _register(registry: dict, recipe: Any) -> Any:
    if recipe.name in registry:
        raise ValueError(f"a recipe named {recipe.name!r} exists already")
    registry[recipe.name] = recipe
    return recipe


def _get(registry: dict, kind: type, recipe: Any, what: str) -> Any:
    if isinstance(recipe, kind):
        return recipe
    if not isinstance(recipe, str) or recipe not in registry:
        raise InputError(f"unknown {what} {recipe!r}; known: {', '.join(sorted(registry))}")
    return registry[recipe]


def register_recipe(recipe: Recipe) -> Recipe:
    """Add ``recipe`` to :data:`RECIPES` under its name (a name is taken once)."""
    return _register(RECIPES, recipe)


def get_recipe(recipe: Union[str, Recipe]) -> Recipe:
    """A :class:`Recipe` as given, or the built-in one of that name."""
    return _get(RECIPES, Recipe, recipe, "recipe")


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


# ------------------------------------------------------------------ text recipes

#: what a text recipe encodes of each record (:class:`TextRecipe`)
TEXTS = ("question", "question+option")
#: what a text recipe stores per text
OUTPUTS = ("tokens", "pooled")


@dataclass(frozen=True)
class TextRecipe(_Hashed):
    """How a query store's features are made from a benchmark's records
    (``fastvqa extract BENCHMARK --text-recipe NAME``). Every field but
    ``source`` takes part in :attr:`hash`, the pairing included.

    Attributes:
        name: the recipe's name.
        text: ``"question"``: one text per record, its question;
            ``"question+option"``: one text per answer option,
            ``"<question> <option>"`` (a record without options fails).
        output: ``"tokens"``: every token's vector (CLIP: the text
            transformer's last layer after its final layer norm, start and
            end tokens included: Moment-DETR's query features); ``"pooled"``:
            one vector per text (CLIP: the end token's, projected into the
            joint space and L2-normalised: what
            :meth:`fastvqa.llm.HFClipEncoder.encode_texts` returns).
        model: the default encoder spec (``--model`` replaces it):
            ``open_clip:ARCH@CHECKPOINT``, ``open_clip:ARCH`` (random
            weights), ``hf:FOLDER`` or ``module:function``
            (:func:`fastvqa.extract.text_models.resolve_text_model`).
        max_tokens: the tokenizer's length limit, start and end tokens
            included (capped at the model's context length: 77 for CLIP);
            a callable's token rows are cut to it.
        dtype: stored dtype, ``"float32"`` or ``"float16"``.
        batch: records per model call (their texts go together). Records are
            grouped by this many in id order before sharding, so a record is
            always encoded beside the same others (padding and matrix shapes
            can change float rounding).
        pair: the :attr:`Recipe.hash` of the video recipe the features are
            made to be used with, or ``None`` (pairs with any). ``--pair-with
            VIDEO_STORE`` sets it to that store's recipe;
            :class:`~fastvqa.extract.StoreDataset` refuses a video store of
            another recipe.
        source: where the setup comes from, for the docs.
    """

    name: str
    text: str = "question"
    output: str = "tokens"
    model: str = ""
    max_tokens: int = 77
    dtype: str = "float32"
    batch: int = 64
    pair: Optional[str] = None
    source: str = ""

    def __post_init__(self):
        where = f"text recipe {self.name!r}"
        for field, choices in (("text", TEXTS), ("output", OUTPUTS), ("dtype", DTYPES)):
            _checks.choice(getattr(self, field), where, field, choices)
        for field in ("max_tokens", "batch"):
            value = getattr(self, field)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise InputError(f"{where}: {field} must be an integer >= 1, got {value!r}")
        if self.pair is not None and not (isinstance(self.pair, str) and len(self.pair) == 64
                                          and all(c in "0123456789abcdef" for c in self.pair)):
            raise InputError(f"{where}: pair must be a video recipe's hash (64 hex digits) or "
                             f"None, got {self.pair!r}")


TEXT_RECIPES: dict = {}


def register_text_recipe(recipe: TextRecipe) -> TextRecipe:
    """Add ``recipe`` to :data:`TEXT_RECIPES` under its name (a name is taken once)."""
    return _register(TEXT_RECIPES, recipe)


def get_text_recipe(recipe: Union[str, TextRecipe]) -> TextRecipe:
    """A :class:`TextRecipe` as given, or the built-in one of that name."""
    return _get(TEXT_RECIPES, TextRecipe, recipe, "text recipe")


def video_recipe_name(recipe_hash: Optional[str]) -> Optional[str]:
    """The name of the built-in video recipe with this hash, else ``None``."""
    return next((r.name for r in RECIPES.values() if r.hash == recipe_hash), None)


_MOMENT_DETR = ("Moment-DETR (Lei et al., NeurIPS 2021) run_on_video: the query through CLIP "
                "ViT-B/32's text tower")

register_text_recipe(TextRecipe(
    name="question-clip",
    text="question", output="tokens", model="open_clip:ViT-B-32", max_tokens=77,
    pair=RECIPES["qvhighlights-clip"].hash,
    source=_MOMENT_DETR + ", every token's last hidden state after ln_final (512-d, start "
           "and end tokens included, unprojected, unnormalised; the model normalises them); "
           "training then keeps the first 32 (max_q_l)"))

register_text_recipe(TextRecipe(
    name="question-clip-pooled",
    text="question", output="pooled", model="open_clip:ViT-B-32", max_tokens=77,
    pair=RECIPES["qvhighlights-clip"].hash,
    source=_MOMENT_DETR + ", its pooled output: the end token's state projected into CLIP's "
           "joint space, L2-normalised (one row per query)"))

register_text_recipe(TextRecipe(
    name="options-clip-pooled",
    text="question+option", output="pooled", model="open_clip:ViT-L-14", max_tokens=77,
    pair=RECIPES["devi-clip"].hash,
    source="DeVE-QA / DeVi (docs/papers/deveqa.md): answer texts as CLIP ViT-L/14 text "
           "embeddings, L2-normalised, one per option (here with the question before it), "
           "beside the 1 fps CLIP ViT-L/14 frame features"))
