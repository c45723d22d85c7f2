# SPDX-License-Identifier: Apache-2.0
"""Text encoders for query stores (:func:`fastvqa.extract.text.run_text`).

``resolve_text_model`` takes the specs of fastvqa's one encoder interface
(:func:`fastvqa.llm.load_encoder`), offline only:

- ``open_clip:ARCH@CHECKPOINT`` (a local file), ``open_clip:ARCH`` (RANDOM
  weights, seeded; said aloud), ``hf:FOLDER`` (a ``transformers`` CLIP saved
  with ``save_pretrained``): their text tower, as every token's vector or the
  pooled one (:class:`~fastvqa.extract.recipes.TextRecipe`'s ``output``);
- ``fastvqa:tiny-text``: a small random-init text encoder, torch only, for
  tests and demos (:func:`_tiny_text`);
- ``module:function``: a Python function from a list of ``M`` strings to
  ``M`` arrays: ``[n_i, D]`` token rows each (or one ``[M, L, D]`` array)
  for a ``tokens`` recipe, ``[D]`` vectors (or one ``[M, D]`` array) for a
  ``pooled`` one.

From Python, an :class:`~fastvqa.llm.HFClipEncoder` /
:class:`~fastvqa.llm.OpenClipEncoder` or such a function is taken as it is.

Every encoder gives, per text, ``(rows, n)``: the rows to store (float32)
and ``n``, how many token positions they stand for (tokens: one each;
pooled: the tokens the model read; a function's pooled vector: 1).
"""

from __future__ import annotations

import warnings
from typing import Any, Callable, NamedTuple, Optional, Sequence

import numpy as np

from fastvqa.errors import InputError

TEXT_SPECS = ("open_clip:ARCH@CHECKPOINT, open_clip:ARCH (random weights), hf:FOLDER, "
              "fastvqa:tiny-text (random weights) or module:function")


class TextModel(NamedTuple):
    """A resolved text encoder: ``encode(texts, output, max_tokens)`` gives
    one ``(rows, n)`` per text (module doc); ``name`` is what the store
    records; ``module`` the ``nn.Module`` (for the weights' sha256) or
    ``None``; ``weights``: ``"random"``, ``"checkpoint <sha256 of the
    file>"``, ``"folder <sha256 of the state dict>"`` or ``"callable"``."""

    encode: Callable
    name: str
    module: Any
    weights: str
    module_sha256: Optional[str] = None   # the module's weights_sha256 where already known


def resolve_text_model(model: Any, name: Optional[str] = None, device: Any = "cpu") -> TextModel:
    """A :class:`TextModel` from a spec string, a CLIP encoder of
    :mod:`fastvqa.llm.encoders` or a function (module doc); ``name`` is
    recorded for a function given from Python (default: its qualified name).

    >>> m = resolve_text_model(lambda texts: [np.ones((len(t), 2)) for t in texts], "ones")
    >>> [(rows.shape, n) for rows, n in m.encode(["ab", "c"], "tokens", 77)]
    [((2, 2), 1), ((1, 2), 1)]
    """
    if isinstance(model, str):
        kind, sep, rest = model.partition(":")
        if kind in ("open_clip", "hf"):
            from fastvqa.llm.encoders import load_encoder

            with warnings.catch_warnings():  # random weights: said by the run, on stderr
                warnings.simplefilter("ignore", UserWarning)
                return _clip(load_encoder(model, device=device))
        if model == "fastvqa:tiny-text":
            return _tiny_text()
        if not sep or not kind or not rest or kind in ("torchvision", "fastvqa"):
            raise InputError(f"unknown text model {model!r}: use {TEXT_SPECS}")
        return _callable(_import(model), model)
    from fastvqa.llm.encoders import HFClipEncoder, OpenClipEncoder

    if isinstance(model, (HFClipEncoder, OpenClipEncoder)):
        return _clip(model)
    if not callable(model):
        raise InputError(f"text model must be a spec ({TEXT_SPECS}), a CLIP encoder or a "
                         f"function of a list of strings, got {type(model).__name__}")
    return _callable(model, name or getattr(model, "__qualname__", type(model).__name__))


def _import(spec: str) -> Callable:
    """The function ``module:function`` names
    (:func:`fastvqa._callables.load_callable`)."""
    from fastvqa._callables import load_callable

    return load_callable(spec, f"text model {spec!r}", expected=TEXT_SPECS)


# ------------------------------------------------------------------ functions


def _callable(fn: Callable, name: str) -> TextModel:
    def encode(texts: Sequence[str], output: str, max_tokens: int) -> list:
        got = fn(list(texts))
        rows = list(got) if isinstance(got, (list, tuple)) or getattr(got, "ndim", 0) >= 2 \
            else None
        if rows is None or len(rows) != len(texts):
            raise InputError(f"text model {name!r} gave {_shape(got)} for {len(texts)} texts; "
                             "expected one array per text")
        out = []
        for r in rows:
            r = _array(r, name)
            want = 2 if output == "tokens" else 1
            if r.ndim != want:
                raise InputError(
                    f"text model {name!r} gave an array of shape {r.shape} for a text; a "
                    f"{output} recipe needs " + ("[n_tokens, D] token rows per text" if want == 2
                                                 else "one [D] vector per text"))
            out.append((r[:max_tokens], 1) if want == 2 else (r[None], 1))
        return out

    return TextModel(encode, name, None, "callable")


def _array(x: Any, name: str) -> np.ndarray:
    if hasattr(x, "detach"):  # a torch tensor, perhaps on a GPU or needing grad
        x = x.detach().cpu()
    try:
        return np.asarray(x, dtype=np.float32)
    except (TypeError, ValueError) as err:
        raise InputError(f"text model {name!r} gave {type(x).__name__} for a text, not numbers "
                         f"({err})") from None


def _shape(x: Any) -> str:
    shape = getattr(x, "shape", None)
    return f"shape {tuple(shape)}" if shape is not None else type(x).__name__


# ------------------------------------------------------------------------ CLIP


def _clip(enc: Any) -> TextModel:
    from fastvqa._digests import sha256_file
    from fastvqa.extract.models import weights_sha256
    from fastvqa.llm.encoders import HFClipEncoder

    sha = None
    if isinstance(enc, HFClipEncoder):
        forward = _hf_forward(enc)
        sha = weights_sha256(enc.model)
        weights = f"folder {sha}"
    else:
        forward = _open_clip_forward(enc)
        weights = "random" if enc.random_weights else f"checkpoint {sha256_file(enc.checkpoint)}"

    def encode(texts: Sequence[str], output: str, max_tokens: int) -> list:
        import torch

        with torch.inference_mode():
            hidden, lengths, pooled = forward(list(texts), max_tokens)
        if output == "pooled":
            return [(pooled[i:i + 1], int(lengths[i])) for i in range(len(texts))]
        return [(hidden[i, :lengths[i]], 1) for i in range(len(texts))]

    return TextModel(encode, enc.name, enc.model, weights, sha)


#: ``fastvqa:tiny-text``'s sizes: hashed word ids, width.
TINY_VOCAB, TINY_WIDTH = 4096, 32


def _tiny_text() -> TextModel:
    """``fastvqa:tiny-text``: a small random-init (seed 0) text encoder for
    tests and demos without a checkpoint, torch only: lower-case words (runs
    of letters and digits) hashed to ids (sha1, mod :data:`TINY_VOCAB`), an
    embedding and one transformer layer; tokens: every word's row, pooled:
    their mean. Like ``fastvqa:tiny-frames``, its features tell words apart
    but know no meaning."""
    import hashlib
    import re

    import torch

    from fastvqa.extract.models import _seeded

    def build():
        return torch.nn.ModuleDict({
            "embed": torch.nn.Embedding(TINY_VOCAB, TINY_WIDTH),
            "layer": torch.nn.TransformerEncoderLayer(TINY_WIDTH, 4, 2 * TINY_WIDTH, dropout=0.0,
                                                      batch_first=True)})

    module = _seeded(build).eval()
    word = re.compile(r"[a-z0-9]+")

    def ids(text: str, max_tokens: int) -> list:
        words = word.findall(text.lower())[:max_tokens] or [""]
        return [int(hashlib.sha1(w.encode()).hexdigest()[:8], 16) % TINY_VOCAB for w in words]

    def encode(texts: Sequence[str], output: str, max_tokens: int) -> list:
        out = []
        with torch.inference_mode():
            for text in texts:
                rows = module["layer"](module["embed"](torch.tensor([ids(text, max_tokens)])))[0]
                rows = rows.numpy().astype(np.float32)
                out.append((rows.mean(axis=0, keepdims=True), len(rows)) if output == "pooled"
                           else (rows, 1))
        return out

    return TextModel(encode, "fastvqa:tiny-text", module, "random")


def _unit(x: Any) -> np.ndarray:
    import torch.nn.functional as F

    return F.normalize(x.float(), dim=-1).cpu().numpy()


def _hf_forward(enc: Any) -> Callable:
    """``texts, max_tokens -> (hidden [B, L, W], lengths [B], pooled [B, D])``
    of a transformers CLIP: the text model's last hidden state (after its
    final layer norm), the tokens each text has, the projected end-token
    state, L2-normalised."""
    def forward(texts: list, max_tokens: int) -> tuple:
        batch = enc.tokenizer(texts, padding=True, truncation=True,
                              max_length=min(max_tokens, enc.context_length),
                              return_tensors="pt").to(enc.device)
        out = enc.model.text_model(input_ids=batch["input_ids"],
                                   attention_mask=batch["attention_mask"])
        pooled = enc.model.text_projection(out.pooler_output)
        return (out.last_hidden_state.float().cpu().numpy(),
                batch["attention_mask"].sum(1).cpu().numpy(), _unit(pooled))

    return forward


def _open_clip_forward(enc: Any) -> Callable:
    """As :func:`_hf_forward`, for an open_clip CLIP: ``ln_final``'s output
    (hooked) and ``encode_text``'s projected end-token state. Texts are
    tokenized at ``min(max_tokens, context length)`` (the end token kept)
    and padded to the context length the model's positions expect."""
    import torch.nn.functional as F

    model = enc.model
    norm = getattr(model, "ln_final", None) or getattr(getattr(model, "text", None),
                                                       "ln_final", None)
    context = int(getattr(model, "context_length", 77))
    pad = int(getattr(model, "pad_id", 0) or 0)
    def forward(texts: list, max_tokens: int) -> tuple:
        ids = enc.tokenizer(texts, context_length=min(max_tokens, context)).to(enc.device)
        if ids.shape[1] < context:
            ids = F.pad(ids, (0, context - ids.shape[1]), value=pad)
        captured: dict = {}
        # hooked for this call only: the caller's encoder is left as it was
        hook = None if norm is None else norm.register_forward_hook(
            lambda module, inputs, output: captured.update(x=output))
        try:
            pooled = model.encode_text(ids)
        finally:
            if hook is not None:
                hook.remove()
        if "x" not in captured:
            raise InputError(f"{enc.name}: no ln_final output to take token features from "
                             "(not a CLIP text transformer); use a pooled recipe")
        return (captured["x"].float().cpu().numpy(), (ids != pad).sum(1).cpu().numpy(),
                _unit(pooled))

    return forward
