# SPDX-License-Identifier: Apache-2.0
"""Images in chat messages: encoding and decoding (fastvqa.llm.images), the
client's and the server's content parts, and the cache key covering pixels.
Real parts only: a real server on 127.0.0.1, real Pillow files."""

from __future__ import annotations

import base64
import http.client
import io
import json
import struct
import zlib

import numpy as np
import pytest

pytest.importorskip("PIL")
from PIL import Image

from fastvqa.errors import InputError
from fastvqa.llm import ChatCompletionsClient, serve_chat_model
from fastvqa.llm.images import (
    decode_image_url,
    encode_image,
    frames_content,
    image_part,
    message_images,
    message_text,
)


def _random_frame(rng, h=17, w=23):
    return rng.integers(0, 256, size=(h, w, 3), dtype=np.uint8)


def _url(data: bytes, media: str = "image/png") -> str:
    return f"data:{media};base64,{base64.b64encode(data).decode()}"


def _saved(image, fmt: str) -> bytes:
    out = io.BytesIO()
    image.save(out, format=fmt)
    return out.getvalue()


def _png_header_only(width: int, height: int) -> bytes:
    """A PNG signature and IHDR chunk (RGB, 8 bits) claiming ``width x height``,
    then an empty IDAT and IEND: a header a decoder would trust."""
    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(
            ">I", zlib.crc32(kind + data) & 0xFFFFFFFF)
    ihdr = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", zlib.compress(b""))
            + chunk(b"IEND", b""))


# Encoding and decoding ---------------------------------------------------------------

def test_png_round_trip_is_exact():
    frame = _random_frame(np.random.default_rng(0))
    url = image_part(frame, format="png")["image_url"]["url"]
    assert url.startswith("data:image/png;base64,")
    out = decode_image_url(url)
    assert out.dtype == np.uint8 and np.array_equal(out, frame)


def test_jpeg_round_trip_is_close():
    yy, xx = np.mgrid[0:48, 0:64]
    frame = np.stack([xx * 4, yy * 5, (xx + yy) * 2], axis=-1).astype(np.uint8)  # smooth
    url = image_part(frame, format="jpeg", quality=90)["image_url"]["url"]
    assert url.startswith("data:image/jpeg;base64,")
    out = decode_image_url(url)
    assert out.shape == frame.shape
    assert np.abs(out.astype(int) - frame.astype(int)).mean() < 3.0


@pytest.mark.parametrize("shape, max_side, expected", [
    ((60, 100), 50, (30, 50)),     # landscape: the width becomes max_side
    ((100, 40), 25, (25, 10)),     # portrait: the height does
    ((60, 100), 100, (60, 100)),   # not longer than max_side: untouched
    ((60, 100), None, (60, 100)),
    ((3, 200), 10, (1, 10)),       # the short side rounds to at least 1 px
])
def test_max_side_resizes_keeping_the_aspect_ratio(shape, max_side, expected):
    frame = np.full(shape + (3,), 200, dtype=np.uint8)
    out = decode_image_url(_url(encode_image(frame, format="png", max_side=max_side)))
    assert out.shape == expected + (3,)
    assert (out == 200).all()  # a flat image stays flat under bilinear resizing


@pytest.mark.parametrize("kwargs, match", [
    ({"format": "gif"}, "format must be one of jpeg, png"),
    ({"quality": 0}, "quality must be >= 1"),
    ({"quality": 96}, "quality must be <= 95"),
    ({"max_side": 0}, "max_side must be >= 1"),
])
def test_encode_options_are_checked(kwargs, match):
    with pytest.raises(InputError, match=match):
        encode_image(np.zeros((2, 2, 3), np.uint8), **kwargs)


@pytest.mark.parametrize("frame", [np.zeros((2, 2, 3), np.float32), np.zeros((2, 2), np.uint8),
                                   np.zeros((2, 2, 4), np.uint8), np.zeros((0, 2, 3), np.uint8)])
def test_encode_refuses_what_is_not_an_rgb_frame(frame):
    with pytest.raises(InputError, match=r"\(H, W, 3\) uint8 RGB"):
        encode_image(frame)


def test_other_modes_are_read_as_rgb():
    grey = np.arange(12, dtype=np.uint8).reshape(3, 4) * 20
    out = decode_image_url(_url(_saved(Image.fromarray(grey), "PNG")))
    assert out.shape == (3, 4, 3) and np.array_equal(out, np.repeat(grey[..., None], 3, axis=-1))
    rgba = np.zeros((3, 4, 4), np.uint8)
    rgba[..., 0], rgba[..., 3] = 255, 128
    out = decode_image_url(_url(_saved(Image.fromarray(rgba), "PNG")))
    assert out.shape == (3, 4, 3) and (out == [255, 0, 0]).all()  # alpha dropped
    pal = Image.new("P", (4, 3), 1)
    pal.putpalette([0, 0, 0, 90, 91, 92])
    assert (decode_image_url(_url(_saved(pal, "PNG"))) == [90, 91, 92]).all()
    webp = _saved(Image.fromarray(np.full((8, 8, 3), 60, np.uint8)), "WEBP")
    assert decode_image_url(_url(webp, "image/webp")).shape == (8, 8, 3)


def _gif() -> bytes:
    return _saved(Image.fromarray(np.zeros((4, 4, 3), np.uint8)), "GIF")


def _bmp() -> bytes:
    return _saved(Image.fromarray(np.zeros((4, 4, 3), np.uint8)), "BMP")


def _png(h=4, w=4) -> bytes:
    return _saved(Image.fromarray(np.zeros((h, w, 3), np.uint8)), "PNG")


def _noise_png() -> bytes:
    """A 32 x 32 PNG of noise (about 3 kB: its pixels do not compress)."""
    noise = np.random.default_rng(0).integers(0, 256, size=(32, 32, 3), dtype=np.uint8)
    return _saved(Image.fromarray(noise), "PNG")


@pytest.mark.parametrize("url, kwargs, match", [
    ("http://example.com/frame.png", {}, "URLs are not fetched"),
    ("https://example.com/frame.png", {}, "URLs are not fetched"),
    ("frame.png", {}, "expected a data:image"),
    ("data:image/png;base64,@@@@", {}, "base64 is malformed"),
    ("data:image/png;base64,AAA", {}, "base64 is malformed"),  # bad padding
    ("data:image/png,rawbytes", {}, "not base64-encoded"),
    (_url(b"hello, I am text", "text/plain"), {}, "'text/plain'"),
    (_url(b"hello, I am text"), {}, "not a JPEG, PNG or WebP image"),
    (_url(_gif(), "image/gif"), {}, "'image/gif'"),
    (_url(_gif()), {}, "not a JPEG, PNG or WebP image"),   # a GIF sent as image/png
    (_url(_bmp()), {}, "not a JPEG, PNG or WebP image"),
    (_url(_png()), {"max_bytes": 10}, "over 10 bytes"),
    (_url(_png_header_only(20000, 20000)), {}, "over the limit of 16777216 pixels"),
    (_url(_png_header_only(5000, 5000)), {}, "5000x5000 px, over the limit"),
    (_url(_png(8, 8)), {"max_pixels": 63}, "8x8 px, over the limit of 63"),
    (_url(_noise_png()[:400]), {}, "the PNG image cannot be decoded"),  # cut mid-pixels
])
def test_bad_image_urls_are_one_clear_input_error(url, kwargs, match):
    with pytest.raises(InputError, match=match) as info:
        decode_image_url(url, **kwargs)
    message = str(info.value)
    assert "\n" not in message and len(message) < 300
    assert message.startswith("decode_image_url: ")


def test_oversized_base64_is_refused_before_decoding(monkeypatch):
    """The length of the text decides: b64decode is never called."""
    import fastvqa.llm.images as images

    calls = []
    monkeypatch.setattr(images.base64, "b64decode", lambda *a, **k: calls.append(1))
    with pytest.raises(InputError, match="over 1000 bytes"):
        decode_image_url("data:image/png;base64," + "A" * 2000, max_bytes=1000)
    assert calls == []


def test_a_huge_header_is_refused_before_its_pixels_are_decoded(monkeypatch):
    """A 20000 x 20000 PNG header is refused by its size alone: nothing is loaded."""
    loads = []
    monkeypatch.setattr(Image.Image, "load", lambda self: loads.append(1))
    for w, h in ((20000, 20000), (5000, 5000)):
        with pytest.raises(InputError, match="over the limit"):
            decode_image_url(_url(_png_header_only(w, h)))
    assert loads == []


def test_random_bytes_and_mutations_raise_only_input_errors():
    """Fuzz (no hypothesis): random bytes, random text, and valid PNG/JPEG/WebP
    files with random bytes changed or cut; each either decodes to (H, W, 3)
    uint8 or raises InputError, nothing else."""
    rng = np.random.default_rng(12345)
    seeds = [_png(9, 7), encode_image(_random_frame(rng), format="jpeg"),
             encode_image(_random_frame(rng), format="png"),
             _saved(Image.fromarray(_random_frame(rng)), "WEBP")]
    media = ["image/png", "image/jpeg", "image/webp"]
    decoded = refused = 0
    for i in range(400):
        kind = i % 4
        if kind == 0:
            data = rng.integers(0, 256, size=int(rng.integers(0, 300)), dtype=np.uint8).tobytes()
        elif kind in (1, 2):
            data = bytearray(seeds[int(rng.integers(len(seeds)))])
            for _ in range(int(rng.integers(1, 8))):
                data[int(rng.integers(len(data)))] = int(rng.integers(256))
            if kind == 2:
                data = data[:int(rng.integers(1, len(data)))]
            data = bytes(data)
        else:
            url = "".join(map(chr, rng.integers(32, 127, size=int(rng.integers(0, 80)))))
            data = None
        if data is not None:
            url = _url(data, media[int(rng.integers(len(media)))])
        try:
            out = decode_image_url(url)
        except InputError:
            refused += 1
        else:
            assert out.dtype == np.uint8 and out.ndim == 3 and out.shape[2] == 3
            decoded += 1
    assert refused > 100  # the loop did exercise the refusals


def test_frames_content_layout_and_numbering():
    frames = np.stack([np.full((4, 5, 3), k, np.uint8) for k in range(3)])
    parts = frames_content("Describe.", frames, [0.0, 1.25, 12.5], format="png")
    texts = [p["text"] for p in parts if p["type"] == "text"]
    assert texts == ["Frame 1 at 0.00 s:", "Frame 2 at 1.25 s:", "Frame 3 at 12.50 s:",
                     "Describe."]
    assert [p["type"] for p in parts] == ["text", "image_url"] * 3 + ["text"]
    msg = {"role": "user", "content": parts}
    assert message_text(msg) == "\n".join(texts)
    assert [int(im[0, 0, 0]) for im in message_images(msg)] == [0, 1, 2]
    assert message_images({"role": "user", "content": "just text"}) == []
    with pytest.raises(InputError, match=r"timestamps must have shape \(3,\)"):
        frames_content("x", frames, [0.0, 1.0])
    with pytest.raises(InputError, match="finite"):
        frames_content("x", frames, [0.0, np.nan, 1.0])
    with pytest.raises(InputError, match=r"\(N, H, W, 3\) uint8"):
        frames_content("x", frames[:0], [])


# The client and the server -----------------------------------------------------------

class Recorder:
    """A served model that keeps every request's messages and decoded images."""

    def __init__(self):
        self.messages, self.images = [], []

    def __call__(self, messages):
        self.messages.append(messages)
        self.images.append(message_images(messages[-1]))
        return f"{len(self.images[-1])} images"


def _user(frames, times, text="What is shown?"):
    return [{"role": "system", "content": "You look at frames."},
            {"role": "user", "content": frames_content(text, frames, times, format="png")}]


def test_images_reach_the_server_pixel_for_pixel():
    rng = np.random.default_rng(1)
    frames = np.stack([_random_frame(rng, 24, 32) for _ in range(3)])
    model = Recorder()
    with serve_chat_model(model) as served:
        client = ChatCompletionsClient(served.base_url, "vlm", max_retries=0)
        assert client.complete(_user(frames, [0.5, 1.5, 2.5])) == "3 images"
    got = model.images[0]
    assert len(got) == 3 and all(np.array_equal(a, b) for a, b in zip(got, frames))
    assert model.messages[0][0] == {"role": "system", "content": "You look at frames."}
    assert message_text(model.messages[0][1]).splitlines() == [
        "Frame 1 at 0.50 s:", "Frame 2 at 1.50 s:", "Frame 3 at 2.50 s:", "What is shown?"]


def test_cache_key_covers_the_pixels(tmp_path):
    """Two calls differing in one pixel of one image are two requests; the
    same call again is a cache hit, no request."""
    rng = np.random.default_rng(2)
    frames = np.stack([_random_frame(rng) for _ in range(2)])
    other = frames.copy()
    other[1, 5, 7, 2] ^= 1
    with serve_chat_model(Recorder()) as served:
        client = ChatCompletionsClient(served.base_url, "vlm", cache_dir=tmp_path / "cache",
                                       max_retries=0)
        client.complete(_user(frames, [0.0, 1.0]))
        client.complete(_user(other, [0.0, 1.0]))
        assert served.stats.requests == 2
        client.complete(_user(frames, [0.0, 1.0]))
        assert served.stats.requests == 2
        assert client.stats.calls == 2 and client.stats.cache_hits == 1
    # A fresh client over the same cache makes no request at all.
    with serve_chat_model(Recorder()) as served:
        again = ChatCompletionsClient(served.base_url, "vlm", cache_dir=tmp_path / "cache")
        again.complete(_user(other, [0.0, 1.0]))
        assert served.stats.requests == 0


def test_body_copies_parts_and_keeps_detail():
    client = ChatCompletionsClient("http://127.0.0.1:9/v1", "vlm")
    part = {"type": "image_url", "image_url": {"url": "https://x/y.png", "detail": "low"}}
    messages = [{"role": "user", "content": [{"type": "text", "text": "hi"}, part]}]
    body = client.body(messages)
    assert body["messages"][0]["content"][1] == part
    part["image_url"]["url"] = "changed"  # the caller's later edit
    assert body["messages"][0]["content"][1]["image_url"]["url"] == "https://x/y.png"


_TEXT = {"type": "text", "text": "ok"}
_IMAGE = {"type": "image_url", "image_url": {"url": "data:image/png;base64,"}}


@pytest.mark.parametrize("content, match", [
    ([], r"messages\[1\]\.content: expected a str or a non-empty list"),
    (5, r"messages\[1\]\.content: expected a str or a non-empty list"),
    ([_TEXT, "text"], r"messages\[1\]\.content\[1\]: expected a dict content part"),
    ([_TEXT, _IMAGE, {"type": "image"}], r"messages\[1\]\.content\[2\]: unknown content part "
                                          "type 'image'"),
    ([{"type": "text", "text": 3}], r"content\[0\]: a text part is"),
    ([{"type": "text", "text": "a", "extra": 1}], r"content\[0\]: a text part is"),
    ([{"type": "image_url", "image_url": "data:image/png;base64,"}], r"content\[0\]: an image "
                                                                       "part is"),
    ([{"type": "image_url", "image_url": {"uri": "x"}}], r"content\[0\]: image_url must hold"),
    ([{"type": "image_url", "image_url": {"url": "x", "detail": 1}}], r"detail must be a str"),
])
def test_a_bad_part_fails_before_any_request(content, match):
    with serve_chat_model(Recorder()) as served:
        client = ChatCompletionsClient(served.base_url, "vlm", max_retries=0)
        with pytest.raises(InputError, match=match):
            client.complete([{"role": "system", "content": "s"},
                             {"role": "user", "content": content}])
        assert served.stats.requests == 0


def _post(base_url: str, body: dict) -> tuple:
    host, port = base_url.split("//")[1].split("/")[0].split(":")
    conn = http.client.HTTPConnection(host, int(port), timeout=10)
    try:
        conn.request("POST", "/v1/chat/completions", body=json.dumps(body),
                     headers={"Content-Type": "application/json"})
        reply = conn.getresponse()
        return reply.status, json.loads(reply.read())
    finally:
        conn.close()


def test_server_refuses_bad_parts_with_400_and_counts_text_words_only():
    model = Recorder()
    with serve_chat_model(model) as served:
        status, reply = _post(served.base_url, {"model": "m", "messages": [
            {"role": "user", "content": [_TEXT, {"type": "video", "video": "x"}]}]})
        assert status == 400
        assert "messages[0].content[1]: unknown content part type 'video'" in \
            reply["error"]["message"]
        assert model.messages == []  # fn never saw it
        frame = np.zeros((2, 2, 3), np.uint8)
        status, reply = _post(served.base_url, {"model": "m", "messages": [
            {"role": "system", "content": "two words"},
            {"role": "user", "content": [{"type": "text", "text": "three more words"},
                                         image_part(frame, format="png")]}]})
    assert status == 200 and reply["choices"][0]["message"]["content"] == "1 images"
    assert reply["usage"]["prompt_tokens"] == 5
    assert model.messages[0][1]["content"][1]["type"] == "image_url"  # as received
