# SPDX-License-Identifier: Apache-2.0
"""Models for :mod:`fastvqa.extract`: any ``torch.nn.Module`` or callable from
a float32 batch to vectors, or a spec string naming one that needs no network.

Specs (:func:`resolve`):

- ``"torchvision:NAME"``: ``torchvision.models.get_model(NAME, weights=None)``
  (image and video models: ``resnet50``, ``r3d_18``, ``r2plus1d_18``, ...),
  randomly initialised from seed 0, so that every process, shard and rerun
  builds the same weights; ``"torchvision:NAME@PATH"`` then loads the local
  checkpoint ``PATH`` (a state dict, read with ``weights_only=True``).
- ``"open_clip:ARCH@PATH"``: ``open_clip.create_model(ARCH, pretrained=PATH)``
  from a local checkpoint; its ``encode_image`` is the model.
- ``"fastvqa:tiny-frames"``, ``"fastvqa:tiny-clips"``: small random-init
  (seed 0) convolutional nets for frames and clips, 16-d out, for tests and
  demos on machines without torchvision.

A spec that would download weights (a torchvision weights name, an open_clip
model without a local checkpoint) is refused with the reason: this machine,
and many clusters, have no internet.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any, Callable, NamedTuple, Optional

from fastvqa.errors import InputError

SEED = 0


class Model(NamedTuple):
    """A resolved model: ``fn`` maps a float32 ``(B, 3, H, W)`` or
    ``(B, 3, T, H, W)`` tensor to ``(B, ...)`` outputs; ``name`` is what the
    store records; ``module`` is the ``nn.Module`` (for ``layer`` hooks and
    the weights' sha256), or ``None`` for a plain callable; ``weights`` says
    where the weights come from, as the store records it: ``"random"``
    (built from :data:`SEED`), ``"checkpoint <sha256 of the file>"``, or
    ``None`` for a module or callable given from Python."""

    fn: Callable
    name: str
    module: Any
    weights: Optional[str] = None


def _torch():
    try:
        import torch
    except ImportError:
        raise InputError("fastvqa extract needs torch: pip install torch") from None
    return torch


def _seeded(build: Callable) -> Any:
    torch = _torch()
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(SEED)
        return build()


def _checkpoint(path: str, what: str) -> Path:
    p = Path(path).expanduser()
    if not p.is_file():
        raise InputError(f"{what}: checkpoint {path!r} is not a file")
    return p


def _torchvision(spec: str) -> Model:
    body = spec[len("torchvision:"):]
    name, _, path = body.partition("@")
    if ":" in name:
        raise InputError(f"model {spec!r}: torchvision weights would be downloaded; give a "
                         f"local checkpoint instead: torchvision:{name.split(':')[0]}@PATH")
    try:
        import torchvision
    except ImportError:
        raise InputError(f"model {spec!r} needs torchvision, which fastvqa's extras do not "
                         f"install (it must match torch's build exactly): "
                         f"{_torchvision_pip()}; or try the pipeline with --model "
                         "fastvqa:tiny-frames / fastvqa:tiny-clips") from None
    except Exception as err:  # installed for another torch: its C++ ops fail to load
        raise InputError(f"model {spec!r}: torchvision does not load beside torch "
                         f"{_torch().__version__} ({str(err).splitlines()[0]}); install "
                         f"the matching build: {_torchvision_pip()}") from None
    try:
        module = _seeded(lambda: torchvision.models.get_model(name, weights=None))
    except ValueError:
        raise InputError(f"model {spec!r}: torchvision has no model {name!r}") from None
    if path:
        state = _torch().load(_checkpoint(path, f"model {spec!r}"), map_location="cpu",
                              weights_only=True)
        module.load_state_dict(state.get("state_dict", state) if isinstance(state, dict)
                               else state)
        return Model(module.eval(), spec, module, f"checkpoint {_file_sha256(path)}")
    return Model(module.eval(), spec, module, "random")


def _file_sha256(path: str) -> str:
    from fastvqa._digests import sha256_file

    return sha256_file(Path(path).expanduser())


def _torchvision_pip() -> str:
    """The pip command that installs the torchvision built for this torch:
    torchvision 0.(m+15) goes with torch 2.m (0.28 with 2.13), from
    PyTorch's index for the same CPU or CUDA build."""
    torch = _torch()
    major, minor = (int(x) for x in torch.__version__.split("+")[0].split(".")[:2])
    pin = f"torchvision=={major - 2}.{minor + 15}.*" if major == 2 else "torchvision"
    cuda = getattr(torch.version, "cuda", None)
    index = "cpu" if not cuda else "cu" + cuda.replace(".", "")
    return f"pip install '{pin}' --index-url https://download.pytorch.org/whl/{index}"


def _open_clip(spec: str) -> Model:
    arch, _, path = spec[len("open_clip:"):].partition("@")
    if not path:
        raise InputError(f"model {spec!r}: open_clip would download the weights; give a "
                         f"local checkpoint: open_clip:{arch}@PATH")
    try:
        import open_clip
    except ImportError:
        raise InputError(f"model {spec!r} needs open_clip: pip install open_clip_torch") from None
    module = open_clip.create_model(arch, pretrained=str(_checkpoint(path, f"model {spec!r}")))
    return Model(module.eval().encode_image, spec, module, f"checkpoint {_file_sha256(path)}")


def _tiny(kind: str) -> Any:
    """A small conv net; its pooling module is named ``avgpool``, as in
    torchvision's models, so that recipes taking that layer accept it."""
    from collections import OrderedDict

    nn = _torch().nn

    def build():  # the layers draw their initial weights here, under the seed
        if kind == "frames":
            layers = [("conv1", nn.Conv2d(3, 8, 5, stride=4)), ("relu1", nn.ReLU()),
                      ("conv2", nn.Conv2d(8, 16, 3, stride=2)), ("relu2", nn.ReLU()),
                      ("avgpool", nn.AdaptiveAvgPool2d(1)), ("flatten", nn.Flatten())]
        else:
            layers = [("conv1", nn.Conv3d(3, 8, (3, 5, 5), stride=(1, 4, 4))),
                      ("relu1", nn.ReLU()), ("conv2", nn.Conv3d(8, 16, 3, stride=2)),
                      ("relu2", nn.ReLU()), ("avgpool", nn.AdaptiveAvgPool3d(1)),
                      ("flatten", nn.Flatten())]
        return nn.Sequential(OrderedDict(layers))

    return _seeded(build).eval()


def resolve(model: Any, name: Optional[str] = None) -> Model:
    """A :class:`Model` from an ``nn.Module``, a callable or a spec string
    (module doc). ``name``: what the store records for a module or callable
    (default: its class name)."""
    if isinstance(model, str):
        if model.startswith("torchvision:"):
            return _torchvision(model)
        if model.startswith("open_clip:"):
            return _open_clip(model)
        if model in ("fastvqa:tiny-frames", "fastvqa:tiny-clips"):
            module = _tiny(model.split("-")[1])
            return Model(module, model, module, "random")
        raise InputError(f"unknown model {model!r}: use torchvision:NAME[@CHECKPOINT], "
                         "open_clip:ARCH@CHECKPOINT, fastvqa:tiny-frames, fastvqa:tiny-clips, "
                         "or pass an nn.Module or callable from Python")
    if not callable(model):
        raise InputError(f"model must be a spec string, an nn.Module or a callable, got "
                         f"{type(model).__name__}")
    torch = _torch()
    module = model if isinstance(model, torch.nn.Module) else None
    if module is not None:
        module.eval()
    return Model(model, name or type(model).__name__, module)


def weights_sha256(module: Any) -> Optional[str]:
    """sha256 over the module's state dict (names, dtypes, shapes and bytes, in
    order); ``None`` for a plain callable. Two processes that built the same
    weights agree on it, so a store refuses features of other weights."""
    if module is None:
        return None
    h = hashlib.sha256()
    for key, value in module.state_dict().items():
        t = value.detach().to("cpu").contiguous()
        h.update(f"{key}:{t.dtype}:{tuple(t.shape)};".encode())
        h.update(t.view(-1).view(_torch().uint8).numpy().tobytes() if t.numel() else b"")
    return h.hexdigest()
