# SPDX-License-Identifier: Apache-2.0
"""fastvqa.llm.encoders: open_clip (random weights, a small architecture) and
a tiny transformers CLIPModel built and saved here, behind ImageTextEncoder.
Numbers are checked against independent computations: the model's own
forward pass on inputs normalised here in float64 NumPy, and a NumPy
antialiased resize. Nothing is downloaded (sockets are refused where a
download could be tried)."""

from __future__ import annotations

import doctest
import json
import socket
import warnings
from pathlib import Path

import numpy as np
import pytest

from fastvqa.errors import InputError
from fastvqa.llm import HFClipEncoder, OpenClipEncoder, as_encoder, load_encoder
from fastvqa.llm.encoders import parse_spec, preprocess, torch_device
from fastvqa.llm.protocols import CallableEncoder, EncoderAdapter, ImageTextEncoder

#: the smallest CLIP architecture open_clip has with its own tokenizer
ARCH = "ViT-S-32-alt"
OPENAI_MEAN = np.array([0.48145466, 0.4578275, 0.40821073])
OPENAI_STD = np.array([0.26862954, 0.26130258, 0.27577711])


def _open_clip():
    try:
        import open_clip
    except Exception as err:  # torchvision of another torch raises RuntimeError, not ImportError
        pytest.skip(f"open_clip does not import here ({type(err).__name__}: "
                    f"{str(err).splitlines()[0] if str(err) else ''})")
    return open_clip


def _images(n, h, w, seed=0):
    return np.random.default_rng(seed).integers(0, 256, (n, h, w, 3), dtype=np.uint8)


def _unit(x):
    x = np.asarray(x, dtype=np.float64)
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def _check_embeddings(x, n, dim):
    assert x.shape == (n, dim) and x.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(x, axis=1), 1.0, atol=1e-5)


@pytest.fixture
def no_network(monkeypatch):
    """Every socket connection or name lookup fails, and is recorded."""
    attempts = []

    def refuse(*args, **kwargs):
        attempts.append(args)
        raise OSError("network access refused by the test")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket.socket, "connect_ex", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    monkeypatch.setattr(socket, "getaddrinfo", refuse)
    return attempts


# ------------------------------------------------------------- no library


def test_specs():
    assert parse_spec("open_clip:ViT-B-32@/m/c.pt") == ("open_clip", "ViT-B-32", "/m/c.pt")
    assert parse_spec("open_clip:ViT-B-32") == ("open_clip", "ViT-B-32", None)
    assert parse_spec("hf:/models/clip") == ("hf", "/models/clip", None)
    for bad in ("clip:ViT-B-32", "open_clip:", "open_clip:@/m/c.pt", "open_clip:ViT-B-32@",
                "hf:", "ViT-B-32", "/models/clip"):
        with pytest.raises(InputError, match="open_clip:ARCH@CHECKPOINT") as err:
            load_encoder(bad)
        assert "\n" not in str(err.value)


@pytest.mark.parametrize("checkpoint", ["openai", "laion2b_s34b_b79k",
                                        "https://example.com/clip.pt", "missing.pt"])
def test_a_checkpoint_that_is_not_a_file_is_refused_offline(checkpoint, no_network, tmp_path,
                                                            monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(InputError, match="is not a file.*never downloads"):
        OpenClipEncoder(ARCH, checkpoint)
    with pytest.raises(InputError, match="is not a file"):
        load_encoder(f"open_clip:{ARCH}@{checkpoint}")
    assert no_network == []


def test_bad_arguments_are_refused_before_anything_loads():
    with pytest.raises(InputError, match="precision 'fp64'"):
        OpenClipEncoder(ARCH, precision="fp64")
    for bad in (0, -1, 2.0, True):
        with pytest.raises(InputError, match="batch_size"):
            OpenClipEncoder(ARCH, batch_size=bad)


def test_hf_folder_must_be_a_local_folder(tmp_path, no_network):
    with pytest.raises(InputError, match="not a folder"):
        HFClipEncoder("openai/clip-vit-base-patch32")
    with pytest.raises(InputError, match="preprocessor_config.json"):
        HFClipEncoder(tmp_path)
    assert no_network == []


def test_missing_library_names_the_pip_install(monkeypatch):
    monkeypatch.setitem(__import__("sys").modules, "open_clip", None)  # import raises ImportError
    monkeypatch.setitem(__import__("sys").modules, "transformers", None)
    with pytest.raises(ImportError, match=r'pip install "fastvqa\[models\]"'):
        OpenClipEncoder(ARCH, device="cpu")
    with pytest.raises(ImportError, match=r'pip install "fastvqa\[models\]"'):
        load_encoder(f"open_clip:{ARCH}")


class _FramesOnly:  # the former interface (fastvqa.demo.DemoEncoder's shape)
    name = "frames-only/1"
    dim = 2

    def encode_frames(self, frames):
        return np.ones((len(frames), 2), np.float32) / np.sqrt(2)

    def encode_texts(self, texts):
        return np.ones((len(texts), 2), np.float32) / np.sqrt(2)


class _ImagesOnly:
    def encode_images(self, images):
        return np.ones((len(images), 2), np.float32) / np.sqrt(2)

    def encode_texts(self, texts):
        return np.ones((len(texts), 2), np.float32) / np.sqrt(2)


def test_as_encoder_gives_both_names():
    frames = np.zeros((3, 4, 4, 3), np.uint8)
    old = as_encoder(_FramesOnly())
    assert isinstance(old, EncoderAdapter) and isinstance(old, ImageTextEncoder)
    assert old.name == "frames-only/1" and old.dim == 2  # the cache key and attributes stay
    assert old.encode_images(frames).shape == old.encode_frames(frames).shape == (3, 2)
    new = as_encoder(_ImagesOnly())
    assert new.name == "_ImagesOnly" and new.encode_frames(frames).shape == (3, 2)
    pair = as_encoder((lambda x: np.zeros((len(x), 2)), lambda t: np.zeros((len(t), 2))))
    assert isinstance(pair, CallableEncoder)
    assert pair.encode_images(frames).shape == pair.encode_frames(frames).shape == (3, 2)
    with pytest.raises(TypeError, match="encode_images"):
        as_encoder(object())


# ------------------------------------------------------------------ torch


def test_devices():
    torch = pytest.importorskip("torch")
    assert torch_device("cpu") == torch.device("cpu")
    assert torch_device(None).type == ("cuda" if torch.cuda.is_available() else "cpu")
    with pytest.raises(InputError, match="not a device fastvqa understands"):
        torch_device("gpu")
    if not torch.cuda.is_available():
        with pytest.raises(InputError, match="sees no GPU"):
            torch_device("cuda:0")
        with pytest.raises(InputError, match="sees no GPU"):
            OpenClipEncoder(ARCH, device="cuda:0")


def _aa_linear_resize_1d(x, out, axis):
    """Antialiased linear (triangle filter) resize along ``axis``, float64:
    output pixel i is centred at (i + 0.5) * scale in input coordinates; the
    filter is stretched by the scale when shrinking; weights renormalised at
    the borders."""
    n = x.shape[axis]
    scale = n / out
    support = max(scale, 1.0)
    rows = []
    for i in range(out):
        centre = (i + 0.5) * scale
        j = np.arange(n)
        w = np.clip(1 - np.abs(j + 0.5 - centre) / support, 0, None)
        rows.append(w / w.sum())
    return np.moveaxis(np.tensordot(np.array(rows), np.moveaxis(x, axis, 0), axes=1), 0, axis)


def test_preprocess_matches_a_numpy_reference():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(1)
    img = rng.integers(0, 256, (2, 6, 8, 3), dtype=np.uint8)
    mean, std = (0.5, 0.4, 0.3), (0.2, 0.25, 0.3)
    got = preprocess(torch.from_numpy(img), (3, 3), mean, std, interpolation="bilinear").numpy()
    # shorter side 6 -> 3, longer 8 -> int(3 * 8 / 6) = 4; then the centre 3 x 3
    ref = _aa_linear_resize_1d(_aa_linear_resize_1d(img.astype(np.float64), 3, 1), 4, 2)
    ref = np.clip(np.round(ref), 0, 255)[:, :, 0:3]  # left = round((4 - 3) / 2) = 0
    ref = (ref / 255 - np.array(mean)) / np.array(std)
    np.testing.assert_allclose(got, ref.transpose(0, 3, 1, 2), atol=1e-5)
    # no resize, a crop only
    got = preprocess(torch.from_numpy(img), (6, 6), mean, std).numpy()
    ref = (img[:, :, 1:7] / 255 - np.array(mean)) / np.array(std)
    np.testing.assert_allclose(got, ref.transpose(0, 3, 1, 2), atol=1e-5)
    # squash and longest (padding with fill)
    assert preprocess(torch.from_numpy(img), (5, 5), mean, std, resize="squash").shape \
        == (2, 3, 5, 5)
    pad = preprocess(torch.from_numpy(img), (8, 8), mean, std, resize="longest", fill=0).numpy()
    np.testing.assert_allclose(pad[:, :, 0], ((0 - np.array(mean)) / np.array(std))[None, :, None]
                               .repeat(8, 2).repeat(2, 0), atol=1e-6)


# -------------------------------------------------------------- open_clip


@pytest.fixture(scope="module")
def oc():
    _open_clip()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        enc = OpenClipEncoder(ARCH, device="cpu")
    return enc, caught


def test_open_clip_random_weights_warn(oc):
    enc, caught = oc
    random = [w for w in caught if issubclass(w.category, UserWarning)
              and "RANDOM weights" in str(w.message)]
    assert len(random) == 1 and "mean nothing" in str(random[0].message)
    assert enc.random_weights and enc.name == f"open_clip:{ARCH}@random"
    assert enc.device.type == "cpu" and isinstance(enc, ImageTextEncoder)
    assert as_encoder(enc) is enc


def test_open_clip_shapes_dtype_norms(oc):
    enc, _ = oc
    assert enc.dim == 256
    _check_embeddings(enc.encode_images(_images(5, 48, 64)), 5, enc.dim)
    _check_embeddings(enc.encode_frames(_images(2, 30, 20)), 2, enc.dim)
    _check_embeddings(enc.encode_texts(["a red cone", "a blue cube", "x " * 200]), 3, enc.dim)
    _check_embeddings(enc.encode_images(np.zeros((0, 10, 10, 3), np.uint8)), 0, enc.dim)
    _check_embeddings(enc.encode_texts([]), 0, enc.dim)
    mixed = enc.encode_images([_images(1, 40, 40)[0], _images(1, 50, 30)[0]])
    _check_embeddings(mixed, 2, enc.dim)
    with pytest.raises(TypeError, match="uint8"):
        enc.encode_images(np.zeros((1, 8, 8, 3), np.float32))
    with pytest.raises(InputError, match=r"\(N, H, W, 3\)"):
        enc.encode_images(np.zeros((8, 8, 3), np.uint8))
    with pytest.raises(TypeError, match="not one string"):
        enc.encode_texts("a cat")


def test_open_clip_is_seeded_and_batching_does_not_change_embeddings(oc):
    enc, _ = oc
    with pytest.warns(UserWarning, match="RANDOM weights"):
        small = load_encoder(f"open_clip:{ARCH}", device="cpu")
    small.batch_size = 2
    images, texts = _images(5, 64, 48, seed=3), ["one", "two", "three", "four", "five"]
    np.testing.assert_allclose(small.encode_images(images), enc.encode_images(images), atol=1e-5)
    np.testing.assert_allclose(small.encode_texts(texts), enc.encode_texts(texts), atol=1e-5)


def test_open_clip_matches_the_model_on_inputs_normalised_here(oc):
    import torch

    open_clip = _open_clip()
    enc, _ = oc
    img = _images(3, 224, 224, seed=4)  # the model's size: no resize, no crop
    x = (img / 255.0 - OPENAI_MEAN) / OPENAI_STD
    with torch.inference_mode():
        ref = enc.model.encode_image(torch.from_numpy(x.transpose(0, 3, 1, 2)).float()).numpy()
        texts = ["a photo of a cat", "a dog"]
        ref_t = enc.model.encode_text(open_clip.tokenize(texts)).numpy()
    np.testing.assert_allclose(enc.encode_images(img), _unit(ref), atol=1e-5)
    np.testing.assert_allclose(enc.encode_texts(texts), _unit(ref_t), atol=1e-5)


def test_open_clip_different_images_differ(oc):
    enc, _ = oc
    a, b = enc.encode_images(np.stack([np.zeros((64, 64, 3), np.uint8), _images(1, 64, 64)[0]]))
    assert not np.allclose(a, b, atol=1e-3)
    t = enc.encode_texts(["a red cone", "a blue cube"])
    assert not np.allclose(t[0], t[1], atol=1e-3)


def test_open_clip_local_checkpoint(oc, tmp_path, no_network):
    import torch

    enc, _ = oc
    path = tmp_path / "clip.pt"
    torch.save(enc.model.state_dict(), path)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # weights from a checkpoint: no warning
        loaded = load_encoder(f"open_clip:{ARCH}@{path}", device="cpu")
    assert not loaded.random_weights and loaded.name == f"open_clip:{ARCH}@clip.pt"
    images = _images(2, 32, 32, seed=5)
    np.testing.assert_allclose(loaded.encode_images(images), enc.encode_images(images), atol=1e-5)
    assert no_network == []


def test_open_clip_low_precision_weights_give_float32_rows(oc):
    enc, _ = oc
    with pytest.warns(UserWarning, match="RANDOM weights"):
        half = OpenClipEncoder(ARCH, device="cpu", precision="bf16")
    images = _images(2, 40, 40, seed=8)
    x = half.encode_images(images)
    _check_embeddings(x, 2, enc.dim)
    cos = np.sum(x * enc.encode_images(images), axis=1)
    assert (cos > 0.9).all(), cos  # the same weights, rounded to bfloat16


def test_preprocess_agrees_with_open_clips_pil_pipeline():
    """The batched torch preprocessing against open_clip's own (PIL, one
    image at a time): at most one level of 255 apart after resizing."""
    _open_clip()
    import torch
    from open_clip.transform import PreprocessCfg, image_transform_v2
    from PIL import Image

    cfg = PreprocessCfg()  # 224, bicubic, shorter side, OpenAI mean and std
    transform = image_transform_v2(cfg, is_train=False)
    rng = np.random.default_rng(9)
    for h, w in [(240, 320), (100, 150), (300, 224)]:
        yy, xx = np.mgrid[0:h, 0:w]
        img = np.stack([127 + 100 * np.sin(xx / 17 + c) * np.cos(yy / 23) for c in range(3)], -1)
        img = np.clip(img + rng.normal(0, 10, img.shape), 0, 255).astype(np.uint8)
        ref = transform(Image.fromarray(img)).numpy()
        got = preprocess(torch.from_numpy(img[None]), (224, 224), cfg.mean, cfg.std).numpy()[0]
        levels = np.abs(got - ref) * np.array(cfg.std)[:, None, None] * 255
        assert levels.max() <= 1.0 + 1e-3, ((h, w), levels.max())


def test_open_clip_refuses_unknown_and_hub_architectures(no_network, tmp_path):
    _open_clip()
    with pytest.raises(InputError, match="not an open_clip architecture"):
        OpenClipEncoder("ViT-X-99", device="cpu")
    with pytest.raises(InputError, match="not an open_clip architecture"):
        OpenClipEncoder("hf-hub:timm/ViT-B-16-SigLIP", device="cpu")
    assert no_network == []


def test_open_clip_refuses_a_hub_tokenizer_when_online(monkeypatch):
    open_clip = _open_clip()
    hub = [m for m in open_clip.list_models()
           if open_clip.get_model_config(m).get("text_cfg", {}).get("hf_tokenizer_name")]
    if not hub:
        pytest.skip("this open_clip has no architecture with a Hugging Face tokenizer")
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    with pytest.raises(InputError, match="HF_HUB_OFFLINE=1"):
        OpenClipEncoder(hub[0], device="cpu")


def test_open_clip_docstring_examples_run():
    """The class's examples are marked SKIP (the doc-examples test runs
    them where open_clip is missing); here they run for real."""
    _open_clip()
    import fastvqa.llm.encoders as module

    test = doctest.DocTestFinder().find(OpenClipEncoder, "OpenClipEncoder",
                                        globs={"np": np, "OpenClipEncoder": OpenClipEncoder})[0]
    for example in test.examples:
        example.options.pop(doctest.SKIP, None)
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = runner.run(test)
    assert result.attempted == 3 and result.failed == 0, module.__name__


# ------------------------------------------------------------ transformers


def _tiny_hf_clip(folder):
    """A 2-layer CLIPModel with 32-pixel images and a hand-written BPE
    vocabulary (letters, two merges, the two special tokens), saved with its
    tokenizer and preprocessor_config.json; nothing is downloaded."""
    import torch
    from transformers import CLIPConfig, CLIPModel, CLIPTokenizer

    letters = [chr(c) for c in range(ord("a"), ord("z") + 1)]
    tokens = letters + [c + "</w>" for c in letters] + ["ca", "cat</w>"]
    tokens += ["<|startoftext|>", "<|endoftext|>"]
    vocab = {t: i for i, t in enumerate(tokens)}
    (folder / "vocab.json").write_text(json.dumps(vocab))
    (folder / "merges.txt").write_text("#version: 0.2\nc a\nca t</w>\n")
    tok = CLIPTokenizer.from_pretrained(folder)
    tok.save_pretrained(folder)
    bos, eos = vocab["<|startoftext|>"], vocab["<|endoftext|>"]
    config = CLIPConfig(
        text_config=dict(vocab_size=len(vocab), hidden_size=32, intermediate_size=37,
                         num_hidden_layers=2, num_attention_heads=2, max_position_embeddings=16,
                         bos_token_id=bos, eos_token_id=eos, pad_token_id=eos),
        vision_config=dict(hidden_size=32, intermediate_size=37, num_hidden_layers=2,
                           num_attention_heads=2, image_size=32, patch_size=8),
        projection_dim=16)
    torch.manual_seed(0)
    CLIPModel(config).save_pretrained(folder)
    pp = {"image_processor_type": "CLIPImageProcessor", "size": {"shortest_edge": 32},
          "crop_size": {"height": 32, "width": 32}, "do_resize": True, "do_center_crop": True,
          "do_rescale": True, "rescale_factor": 1 / 255, "do_normalize": True, "resample": 3,
          "image_mean": [0.5, 0.4, 0.3], "image_std": [0.2, 0.25, 0.3]}
    (folder / "preprocessor_config.json").write_text(json.dumps(pp))
    return folder


@pytest.fixture(scope="module")
def hf_folder(tmp_path_factory):
    try:
        import transformers  # noqa: F401
    except Exception as err:
        pytest.skip(f"transformers does not import here ({type(err).__name__}: {err})")
    return _tiny_hf_clip(tmp_path_factory.mktemp("tiny-clip"))


@pytest.fixture(scope="module")
def hf(hf_folder):
    return HFClipEncoder(hf_folder, device="cpu")


def test_hf_loads_offline(hf_folder, no_network):
    enc = load_encoder(f"hf:{hf_folder}", device="cpu")
    assert enc.name == f"hf:{hf_folder.name}" and enc.device.type == "cpu"
    assert not enc.random_weights and as_encoder(enc) is enc
    assert no_network == []


def test_hf_shapes_dtype_norms(hf):
    assert hf.dim == 16
    _check_embeddings(hf.encode_images(_images(5, 40, 56)), 5, 16)
    _check_embeddings(hf.encode_frames(_images(1, 100, 20)), 1, 16)
    _check_embeddings(hf.encode_texts(["a cat", "cat cat", "zzz " * 50]), 3, 16)  # truncated
    _check_embeddings(hf.encode_images(np.zeros((0, 4, 4, 3), np.uint8)), 0, 16)
    _check_embeddings(hf.encode_texts([]), 0, 16)


def test_hf_batching_does_not_change_embeddings(hf, hf_folder):
    small = HFClipEncoder(hf_folder, device="cpu", batch_size=2)
    images, texts = _images(5, 36, 32, seed=6), ["a cat", "b", "cat cat cat", "xyz", "q"]
    np.testing.assert_allclose(small.encode_images(images), hf.encode_images(images), atol=1e-5)
    np.testing.assert_allclose(small.encode_texts(texts), hf.encode_texts(texts), atol=1e-5)


def test_hf_matches_the_model_on_inputs_normalised_here(hf):
    import torch

    img = _images(2, 32, 40, seed=7)  # shorter side is 32 already: only the centre crop
    x = (img[:, :, 4:36] / 255.0 - np.array([0.5, 0.4, 0.3])) / np.array([0.2, 0.25, 0.3])
    with torch.inference_mode():
        out = hf.model.get_image_features(
            pixel_values=torch.from_numpy(x.transpose(0, 3, 1, 2)).float())
        ref = (out if torch.is_tensor(out) else out.pooler_output).numpy()
        batch = hf.tokenizer(["a cat", "cat"], padding=True, return_tensors="pt")
        out = hf.model.get_text_features(**batch)
        ref_t = (out if torch.is_tensor(out) else out.pooler_output).numpy()
    np.testing.assert_allclose(hf.encode_images(img), _unit(ref), atol=1e-5)
    np.testing.assert_allclose(hf.encode_texts(["a cat", "cat"]), _unit(ref_t), atol=1e-5)


def test_hf_different_inputs_differ(hf):
    a, b = hf.encode_images(np.stack([np.zeros((32, 32, 3), np.uint8), _images(1, 32, 32)[0]]))
    assert not np.allclose(a, b, atol=1e-3)
    t = hf.encode_texts(["a cat", "zebra"])
    assert not np.allclose(t[0], t[1], atol=1e-3)


def test_a_store_of_the_encoders_own_weights_serves_devi_and_others_are_refused(
        oc, tmp_path, no_network):
    """``fastvqa extract --recipe devi-clip`` with the encoder's checkpoint
    writes a store DeVi reads its visual memory from (the weights compared by
    their sha256, not by file name); a checkpoint of other weights is refused."""
    import torch

    pytest.importorskip("av")
    pytest.importorskip("safetensors")
    from fastvqa.demo import synth
    from fastvqa.devi.stored_memory import StoredMemory
    from fastvqa.extract import run as extract

    enc, _ = oc
    mine, other = tmp_path / "clip.pt", tmp_path / "other.pt"
    torch.save(enc.model.state_dict(), mine)
    changed = {k: v + 0.01 if v.is_floating_point() else v
               for k, v in enc.model.state_dict().items()}
    torch.save(changed, other)
    bench = synth.generate(tmp_path / "demo", videos=1, duration=5.0, seed=0)
    extract(bench.videos, "devi-clip", out=tmp_path / "store", model=f"open_clip:{ARCH}@{mine}",
            progress=False)
    (video,) = [Path(p).stem for p in bench.videos]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        same = load_encoder(f"open_clip:{ARCH}@{mine}", device="cpu")
        differs = load_encoder(f"open_clip:{ARCH}@{other}", device="cpu")
    memory = StoredMemory(tmp_path / "store", same)
    times, feats = memory.load(video)
    np.testing.assert_array_equal(times, [0.0, 1.0, 2.0, 3.0, 4.0])  # 1 fps on the grid
    _check_embeddings(feats, 5, same.dim)
    with pytest.raises(InputError, match="whose weights differ from the encoder's"):
        StoredMemory(tmp_path / "store", differs)
    assert no_network == []
