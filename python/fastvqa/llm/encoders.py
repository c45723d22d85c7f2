# SPDX-License-Identifier: Apache-2.0
"""Image-text encoders (CLIP and its kin) behind
:class:`~fastvqa.llm.protocols.ImageTextEncoder`, offline only.

- :class:`OpenClipEncoder`: an `open_clip <https://github.com/mlfoundations/open_clip>`_
  architecture with a local checkpoint file (or random weights, for tests);
- :class:`HFClipEncoder`: a ``transformers`` ``CLIPModel`` saved in a local
  folder (``save_pretrained``), with its tokenizer and
  ``preprocessor_config.json``;
- :func:`load_encoder`: either, from the command-line spec
  ``open_clip:ARCH@CHECKPOINT``, ``open_clip:ARCH`` or ``hf:FOLDER``.

Both take ``(N, H, W, 3)`` uint8 RGB images and return ``(N, D)`` float32
rows of norm 1 (``encode_frames`` is ``encode_images``, the former name).
Images are preprocessed in torch, a batch at a time, on the model's device
(:func:`preprocess`: resize, centre crop, the model's mean and std): the
steps of the model's own pipeline, which takes one PIL image at a time; a
resized pixel can differ from PIL's by one level of 255.

``device`` is fastvqa's one vocabulary (:func:`fastvqa._device.parse_device`):
``"cpu"``, ``"cuda"``, ``"cuda:K"``, a ``torch.device``; ``None`` picks
``cuda:0`` when torch sees a GPU, else the CPU. Asking for a GPU torch does
not see is an :class:`~fastvqa.errors.InputError`.

Nothing is downloaded: a checkpoint is a local file, a folder is read with
``local_files_only=True``, and an open_clip architecture that would fetch
its tokenizer or text tower from the Hugging Face hub is refused unless
``HF_HUB_OFFLINE=1`` is set (the hub then reads its local cache only).
torch, open_clip and transformers are imported when an encoder is built:
``pip install "fastvqa[models]"`` installs them (open_clip also needs the
torchvision built for your torch).

>>> parse_spec("open_clip:ViT-B-32@/models/clip.safetensors")
('open_clip', 'ViT-B-32', '/models/clip.safetensors')
>>> parse_spec("hf:/models/clip-vit-base-patch32")
('hf', '/models/clip-vit-base-patch32', None)
"""

from __future__ import annotations

import importlib
import json
import os
import warnings
from pathlib import Path
from typing import Any, Optional, Sequence

import numpy as np

from fastvqa._device import parse_device
from fastvqa.errors import InputError, InputTypeError

MODELS_PIP = 'pip install "fastvqa[models]"'

#: seed of random weights, as fastvqa.extract builds its random models: every
#: process and rerun gets the same encoder
SEED = 0

SPECS = "open_clip:ARCH@CHECKPOINT, open_clip:ARCH (random weights) or hf:FOLDER"


def _import(module: str, who: str) -> Any:
    """``import module`` with an ImportError that names the ``pip install``."""
    try:
        return importlib.import_module(module)
    except ImportError as err:
        raise ImportError(f"{who} needs {module}, which is not installed: {MODELS_PIP}") from err
    except Exception as err:  # installed but broken, e.g. torchvision built for another torch
        raise ImportError(f"{who}: {module} is installed but does not import "
                          f"({str(err).splitlines()[0] if str(err) else type(err).__name__}); "
                          f"reinstall it for this torch: {MODELS_PIP} (open_clip also needs the "
                          "torchvision release built for your torch)") from err


def parse_spec(spec: str) -> tuple:
    """``(kind, name, checkpoint)`` of an encoder spec: ``("open_clip", ARCH,
    CHECKPOINT or None)`` or ``("hf", FOLDER, None)``; an
    :class:`~fastvqa.errors.InputError` listing the accepted forms otherwise."""
    if not isinstance(spec, str):
        raise InputTypeError(f"encoder spec must be a string ({SPECS}), got {type(spec).__name__}")
    kind, sep, body = spec.partition(":")
    if sep and kind == "open_clip" and body and not body.startswith("@"):
        arch, at, checkpoint = body.partition("@")
        if not at or checkpoint:
            return "open_clip", arch, checkpoint or None
    if sep and kind == "hf" and body:
        return "hf", body, None
    raise InputError(f"encoder {spec!r}: use {SPECS}")


def load_encoder(spec: str, *, device: Any = None) -> Any:
    """The encoder a spec names (:func:`parse_spec`), on ``device`` (module doc).

    ``open_clip:ARCH@CHECKPOINT``: :class:`OpenClipEncoder` with the local
    checkpoint file; ``open_clip:ARCH``: random weights, with a warning;
    ``hf:FOLDER``: :class:`HFClipEncoder`."""
    kind, name, checkpoint = parse_spec(spec)
    if kind == "open_clip":
        return OpenClipEncoder(name, checkpoint, device=device)
    return HFClipEncoder(name, device=device)


# --------------------------------------------------------------------- shared


def torch_device(device: Any) -> Any:
    """The ``torch.device`` for fastvqa's ``device`` (module doc): ``None`` is
    ``cuda:0`` when torch sees a GPU, else ``cpu``; a GPU torch cannot use is
    an :class:`~fastvqa.errors.InputError`."""
    torch = _import("torch", "an image-text encoder")
    parsed = parse_device(device)
    if parsed is None:
        return torch.device("cuda:0" if torch.cuda.is_available() else "cpu")
    if parsed.is_cuda:
        if not torch.cuda.is_available():
            raise InputError(f"device {str(parsed)!r}: torch {torch.__version__} sees no GPU "
                             "(torch.cuda.is_available() is False); use device='cpu'")
        if parsed.ordinal >= torch.cuda.device_count():
            raise InputError(f"device {str(parsed)!r}: torch sees {torch.cuda.device_count()} "
                             "GPU(s)")
    return torch.device(str(parsed))


def preprocess(images: Any, size: tuple, mean: Sequence[float], std: Sequence[float], *,
               interpolation: str = "bicubic", resize: Any = "shortest", fill: int = 0) -> Any:
    """A CLIP model's input: ``(B, H, W, 3)`` uint8 torch tensor -> ``(B, 3,
    h, w)`` float32 on the same device, ``size = (h, w)``.

    ``resize``: ``"shortest"`` scales the image just enough to cover
    ``size`` (for a square ``size``, the shorter side becomes ``h`` and the
    longer ``int(h * long / short)``, torchvision's rule); ``"longest"``
    fits it inside ``size``; ``"squash"`` resizes to ``size``; an int ``s``
    makes the shorter side ``s`` (torchvision's rule); a pair ``(h', w')``
    resizes to that. Resizing is ``interpolation`` (``"bicubic"`` or
    ``"bilinear"``) with antialiasing, rounded to whole 0..255 levels as a
    resized uint8 image is. Then the centre ``size`` is cropped (top-left
    corner ``round((H - h) / 2)``, torchvision's rule), padding with
    ``fill`` (0..255) where the image is smaller, and the result is
    ``x / 255``, minus ``mean``, over ``std`` (per channel, RGB)."""
    import torch
    import torch.nn.functional as F

    if interpolation not in ("bicubic", "bilinear"):
        raise InputError(f"interpolation {interpolation!r}: use 'bicubic' or 'bilinear'")
    th, tw = size
    x = images.permute(0, 3, 1, 2).to(torch.float32)
    h, w = x.shape[-2:]
    if resize == "shortest":  # the side that needs more scaling lands exactly on size
        new = (th, max(tw, int(th * w / h))) if th * w >= tw * h else (max(th, int(tw * h / w)), tw)
    elif resize == "longest":
        scale = min(th / h, tw / w)
        new = (max(1, round(h * scale)), max(1, round(w * scale)))
    elif resize == "squash":
        new = (th, tw)
    elif isinstance(resize, int) and resize > 0:
        new = (resize, int(resize * w / h)) if h <= w else (int(resize * h / w), resize)
    elif isinstance(resize, tuple) and len(resize) == 2:
        new = (int(resize[0]), int(resize[1]))
    else:
        raise InputError(f"resize {resize!r}: use 'shortest', 'longest', 'squash', an int or "
                         "a pair (h, w)")
    if new != (h, w):
        x = F.interpolate(x, size=new, mode=interpolation, align_corners=False, antialias=True)
        x = x.round_().clamp_(0, 255)
    pad_h, pad_w = max(th - new[0], 0), max(tw - new[1], 0)
    if pad_h or pad_w:
        x = F.pad(x, (pad_w // 2, pad_w - pad_w // 2, pad_h // 2, pad_h - pad_h // 2),
                  value=float(fill))
    top, left = int(round((x.shape[-2] - th) / 2.0)), int(round((x.shape[-1] - tw) / 2.0))
    x = x[..., top:top + th, left:left + tw]
    mean = torch.tensor(mean, dtype=torch.float32, device=x.device).view(1, 3, 1, 1)
    std = torch.tensor(std, dtype=torch.float32, device=x.device).view(1, 3, 1, 1)
    return (x / 255.0 - mean) / std


def _check_images(images: Any) -> Any:
    """``images`` as a ``(N, H, W, 3)`` uint8 array, or a list of ``(H, W, 3)``
    uint8 arrays of different sizes."""
    if isinstance(images, np.ndarray):
        arr = images
    else:
        items = [np.asarray(im) for im in images]
        if len({im.shape for im in items}) > 1:
            for im in items:
                _check_images(im[None])
            return items
        arr = np.stack(items) if items else np.zeros((0, 1, 1, 3), np.uint8)
    if arr.dtype != np.uint8:
        raise InputTypeError(f"encode_images: images must be uint8 RGB (0..255), got {arr.dtype}")
    if arr.ndim != 4 or arr.shape[-1] != 3:
        raise InputError(f"encode_images: images must be (N, H, W, 3) uint8 RGB, got shape "
                         f"{arr.shape}")
    return arr


def _check_texts(texts: Any) -> list:
    if isinstance(texts, (str, bytes)):
        raise InputTypeError("encode_texts: texts must be a list of strings, not one string")
    texts = list(texts)
    for i, t in enumerate(texts):
        if not isinstance(t, str):
            raise InputTypeError(f"encode_texts: texts[{i}] must be a string, got "
                                 f"{type(t).__name__}")
    return texts


class _ClipEncoder:
    """What both encoders share: batching, devices, the output's shape and
    norm. A subclass sets ``model``, ``device``, ``dim``, ``name`` and the
    preprocessing (``_size``, ``_mean``, ``_std``, ``_interpolation``,
    ``_resize``, ``_fill``: :func:`preprocess`'s arguments), and implements
    ``_image_features(pixels)`` and ``_text_features(texts)`` (one batch
    each, unnormalised torch)."""

    batch_size: int
    random_weights = False

    def _set_batch_size(self, batch_size: Any) -> None:
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
            raise InputError(f"batch_size must be a positive integer, got {batch_size!r}")
        self.batch_size = batch_size

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name!r}, device={str(self.device)!r})"

    def _pixels(self, chunk: Any) -> Any:
        import torch

        if isinstance(chunk, list):  # images of different sizes: one at a time
            return torch.cat([self._pixels(im[None]) for im in chunk])
        x = torch.from_numpy(np.ascontiguousarray(chunk)).to(self.device)
        return preprocess(x, self._size, self._mean, self._std, interpolation=self._interpolation,
                          resize=self._resize, fill=self._fill)

    def _run(self, items: Any, n: int, features: Any) -> np.ndarray:
        import torch
        import torch.nn.functional as F

        out = np.zeros((n, self.dim), dtype=np.float32)
        with torch.inference_mode():
            for start in range(0, n, self.batch_size):
                y = features(items[start:start + self.batch_size]).float()
                out[start:start + len(y)] = F.normalize(y, dim=-1).cpu().numpy()
        return out

    def encode_images(self, images: Any) -> np.ndarray:
        """``(N, H, W, 3)`` uint8 RGB (or a list of ``(H, W, 3)`` of different
        sizes) -> ``(N, dim)`` float32, rows of norm 1; ``batch_size`` images
        per forward pass."""
        images = _check_images(images)
        return self._run(images, len(images),
                         lambda chunk: self._image_features(self._pixels(chunk)))

    encode_frames = encode_images  # the former name (fastvqa.devi, user code)

    def encode_texts(self, texts: Sequence[str]) -> np.ndarray:
        """``M`` strings -> ``(M, dim)`` float32, rows of norm 1; each text
        truncated to the model's context length, ``batch_size`` per pass."""
        texts = _check_texts(texts)
        return self._run(texts, len(texts), self._text_features)


# ------------------------------------------------------------------ open_clip


def _hub_offline() -> bool:
    return os.environ.get("HF_HUB_OFFLINE", "").strip().upper() in ("1", "ON", "YES", "TRUE")


class OpenClipEncoder(_ClipEncoder):
    """An open_clip model: ``open_clip.create_model(arch, pretrained=checkpoint)``.

    Args:
        arch: an open_clip architecture (``open_clip.list_models()``), e.g.
            ``"ViT-B-32"``, ``"ViT-L-14"``.
        checkpoint: the path of a local checkpoint file (``.pt``, ``.bin``,
            ``.safetensors``), or ``None`` for RANDOM weights (seeded, so
            reproducible): for tests; a ``UserWarning`` says so and
            ``random_weights`` is True. A pretrained tag (``"openai"``) or a
            URL is refused: nothing is downloaded.
        device: module doc; ``None`` is ``cuda:0`` when there is a GPU.
        batch_size: images or texts per forward pass.
        precision: ``"fp32"``, ``"fp16"`` or ``"bf16"`` weights (outputs are
            float32 either way).

    Attributes: ``model`` (the open_clip model, eval mode), ``dim``,
    ``name`` (``"open_clip:ARCH@FILE"`` or ``"open_clip:ARCH@random"``),
    ``device`` (a ``torch.device``), ``random_weights``.

    >>> enc = OpenClipEncoder("ViT-B-32")  # doctest: +SKIP
    >>> enc.encode_images(np.zeros((2, 240, 320, 3), np.uint8)).shape  # doctest: +SKIP
    (2, 512)
    >>> enc.encode_texts(["a cat", "a dog", "a car"]).dtype  # doctest: +SKIP
    dtype('float32')
    """

    def __init__(self, arch: str, checkpoint: Optional[str] = None, *, device: Any = None,
                 batch_size: int = 64, precision: str = "fp32"):
        who = f"open_clip encoder {arch!r}"
        self._set_batch_size(batch_size)
        if precision not in ("fp32", "fp16", "bf16"):
            raise InputError(f"{who}: precision {precision!r}: use 'fp32', 'fp16' or 'bf16'")
        path = None
        if checkpoint is not None:
            path = Path(os.fspath(checkpoint)).expanduser()
            if not path.is_file():
                raise InputError(f"{who}: checkpoint {str(checkpoint)!r} is not a file; give the "
                                 "path of a local checkpoint (fastvqa never downloads weights: "
                                 "a pretrained tag such as 'openai' or a URL is refused)")
        self.device = torch_device(device)
        torch = _import("torch", who)
        open_clip = _import("open_clip", who)
        # list_models() is local; get_model_config would fetch an 'hf-hub:' name
        if arch not in open_clip.list_models():
            raise InputError(f"{who}: not an open_clip architecture (open_clip.list_models() "
                             "lists them; hf-hub: and local-dir: names are not accepted)")
        cfg = open_clip.get_model_config(arch)
        text_cfg = cfg.get("text_cfg", {})
        hub = text_cfg.get("hf_tokenizer_name") or text_cfg.get("hf_model_name")
        if hub and not _hub_offline():
            raise InputError(f"{who}: its tokenizer or text tower comes from the Hugging Face "
                             f"hub ({hub!r}), which fastvqa does not download at run time; set "
                             "HF_HUB_OFFLINE=1 to use a copy in the local Hugging Face cache")
        if not hub and "siglip" in arch.lower():  # SigLipTokenizer fetches its vocabulary
            raise InputError(f"{who}: its tokenizer downloads a vocabulary; not supported offline")
        try:  # before the model, which costs more; CLIP's BPE ships with open_clip,
            # a hub tokenizer comes from the local cache only
            self.tokenizer = (open_clip.get_tokenizer(arch, local_files_only=True) if hub
                              else open_clip.get_tokenizer(arch))
        except (OSError, ValueError) as err:
            raise InputError(f"{who}: tokenizer {hub!r} is not in the local Hugging Face cache "
                             f"({str(err).splitlines()[0]})") from err
        self.arch, self.checkpoint = arch, None if path is None else str(path)
        self.random_weights = path is None
        self.name = f"open_clip:{arch}@{'random' if path is None else path.name}"
        self.dim = int(cfg["embed_dim"])
        try:
            if path is None:
                with torch.random.fork_rng(devices=[]):
                    torch.manual_seed(SEED)
                    model = open_clip.create_model(arch, pretrained=None, precision=precision)
            else:  # an absolute path: a file named like a tag ('openai') must not be read as one
                model = open_clip.create_model(arch, pretrained=str(path.resolve()),
                                               precision=precision)
        except (RuntimeError, KeyError, OSError) as err:
            raise InputError(f"{who}: cannot build it ({self.checkpoint or 'random weights'}): "
                             f"{str(err).splitlines()[0] if str(err) else type(err).__name__}"
                             ) from err
        self.model = model.to(self.device).eval()
        pp = self.model.visual.preprocess_cfg
        size = pp["size"]
        self._size = (size, size) if isinstance(size, int) else tuple(size)
        self._mean, self._std = tuple(pp["mean"]), tuple(pp["std"])
        self._interpolation = "bilinear" if pp.get("interpolation") == "bilinear" else "bicubic"
        self._resize = pp.get("resize_mode", "shortest")
        self._fill = int(pp.get("fill_color", 0))
        # the dtype open_clip gave the convolution and linear weights (not every parameter)
        self._dtype = {"fp32": torch.float32, "fp16": torch.float16,
                       "bf16": torch.bfloat16}[precision]
        if self.random_weights:
            warnings.warn(f"{self.name} has RANDOM weights (no checkpoint given, built from seed "
                          f"{SEED}): its embeddings carry no learned meaning and scores computed "
                          f"from them mean nothing; for real ones give a local checkpoint: "
                          f"open_clip:{arch}@PATH", UserWarning, stacklevel=2)

    def _image_features(self, pixels: Any) -> Any:
        return self.model.encode_image(pixels.to(self._dtype))

    def _text_features(self, texts: list) -> Any:
        return self.model.encode_text(self.tokenizer(texts).to(self.device))


# --------------------------------------------------------------- transformers


class HFClipEncoder(_ClipEncoder):
    """A ``transformers`` CLIP model saved in ``folder``
    (``CLIPModel.save_pretrained``, with its tokenizer's files and
    ``preprocessor_config.json``), read with ``local_files_only=True``.

    Args:
        folder: the local folder.
        device: module doc; ``None`` is ``cuda:0`` when there is a GPU.
        batch_size: images or texts per forward pass.

    The image preprocessing follows ``preprocessor_config.json``: ``size``
    (``{"shortest_edge": s}`` or ``s`` resizes the shorter side to ``s``;
    ``{"height", "width"}`` resizes to that), ``crop_size`` (the centre
    crop, unless ``do_center_crop`` is false), ``resample`` (2 bilinear, 3
    bicubic), ``image_mean``, ``image_std``; pixels are scaled by 1/255. Texts are
    truncated to ``text_config.max_position_embeddings`` tokens.

    >>> enc = HFClipEncoder("/models/clip-vit-base-patch32")  # doctest: +SKIP
    >>> enc.encode_texts(["a cat"]).shape  # doctest: +SKIP
    (1, 512)
    """

    def __init__(self, folder: Any, *, device: Any = None, batch_size: int = 64):
        who = f"hf encoder {str(folder)!r}"
        self._set_batch_size(batch_size)
        path = Path(os.fspath(folder)).expanduser()
        if not path.is_dir():
            raise InputError(f"{who}: not a folder (a model saved with save_pretrained; fastvqa "
                             "never downloads a model by its hub name)")
        pp_file = path / "preprocessor_config.json"
        if not pp_file.is_file():
            raise InputError(f"{who}: no preprocessor_config.json (save the image processor "
                             "to the same folder)")
        self.device = torch_device(device)
        transformers = _import("transformers", who)
        try:
            model = transformers.CLIPModel.from_pretrained(path, local_files_only=True)
            self.tokenizer = transformers.AutoTokenizer.from_pretrained(path,
                                                                        local_files_only=True)
        except (OSError, ValueError) as err:
            raise InputError(f"{who}: cannot load a CLIP model and tokenizer from it "
                             f"({str(err).splitlines()[0]})") from err
        self.model = model.to(self.device).eval()
        self.folder, self.name = str(path), f"hf:{path.name}"
        self.dim = int(model.config.projection_dim)
        self.context_length = int(model.config.text_config.max_position_embeddings)
        self._read_preprocessing(json.loads(pp_file.read_text()), model.config, who)

    def _read_preprocessing(self, pp: dict, config: Any, who: str) -> None:
        side = int(config.vision_config.image_size)
        size = pp.get("size", side)
        size = {"shortest_edge": size} if isinstance(size, int) else size  # 4.x wrote an int
        if "shortest_edge" in size:
            self._resize = int(size["shortest_edge"])
        elif "height" in size and "width" in size:
            self._resize = (int(size["height"]), int(size["width"]))
        else:
            raise InputError(f"{who}: preprocessor_config.json size {size!r} is not supported")
        crop = pp.get("crop_size", side) if pp.get("do_center_crop", True) else None
        if isinstance(crop, dict):
            self._size = (int(crop["height"]), int(crop["width"]))
        elif crop is not None:
            self._size = (int(crop), int(crop))
        else:
            self._size = self._resize if isinstance(self._resize, tuple) else (side, side)
        resample = pp.get("resample", 3)
        if resample not in (2, 3):
            raise InputError(f"{who}: resample {resample!r}: fastvqa supports 2 (bilinear) and "
                             "3 (bicubic)")
        self._interpolation = "bilinear" if resample == 2 else "bicubic"
        self._mean = tuple(pp.get("image_mean", (0.48145466, 0.4578275, 0.40821073)))
        self._std = tuple(pp.get("image_std", (0.26862954, 0.26130258, 0.27577711)))
        self._fill = 0

    @staticmethod
    def _tensor(out: Any) -> Any:
        # transformers 5 returns the model output (projected pooler_output), 4.x the tensor
        return out if hasattr(out, "dim") else out.pooler_output

    def _image_features(self, pixels: Any) -> Any:
        return self._tensor(self.model.get_image_features(pixel_values=pixels))

    def _text_features(self, texts: list) -> Any:
        batch = self.tokenizer(texts, padding=True, truncation=True,
                               max_length=self.context_length, return_tensors="pt").to(self.device)
        return self._tensor(self.model.get_text_features(input_ids=batch["input_ids"],
                                                         attention_mask=batch["attention_mask"]))
