# SPDX-License-Identifier: Apache-2.0
"""The DALI backend: exact frames, pixels close to PyAV, shapes, errors.

CPU tests use DALI's CPU decoder on VP9 and MJPEG (the only codecs it has
besides VP8); H.264 is GPU-only in DALI and is checked under the ``cuda``
marker. Everything skips where ``nvidia.dali`` (or PyAV) is not installed.
"""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("av")
pytest.importorskip("nvidia.dali")

from fastvqa.video.dali_backend import decode_dali, read_batch_dali
from fastvqa.video.geometry import output_geometry

from ._fixtures import HEIGHT, WIDTH, decode_all_pyav, probe, read_indices, write_video

N = 48
CPU_KINDS = {"vp9": ("libvpx-vp9", "webm"), "mjpeg": ("mjpeg", "avi")}


@pytest.fixture(scope="module")
def videos(tmp_path_factory):
    root = tmp_path_factory.mktemp("dali_videos")
    paths = {}
    for kind, (codec, ext) in {**CPU_KINDS, "h264": ("libx264", "mp4")}.items():
        paths[kind] = root / f"clip_{kind}.{ext}"
        write_video(paths[kind], codec, n=N, gop=12)
    return paths


PATTERNS = {
    "uniform": np.linspace(0, N - 1, 8).round().astype(np.int64),
    "strided": np.arange(1, N, 7),
    "first_last": np.array([0, N - 1]),
    "single": np.array([17]),
    "unsorted_repeats": np.array([30, 2, 2, 45, 11, 30]),
    "across_keyframes": np.array([11, 12, 13, 23, 24]),
}


def geo(index, size=None, crop=None):
    """The geometry the API layer hands the backend for ``size``/``crop``."""
    return output_geometry(index.height, index.width, size, crop)


@pytest.mark.parametrize("kind", sorted(CPU_KINDS))
@pytest.mark.parametrize("pattern", sorted(PATTERNS))
def test_cpu_frames_are_exactly_the_requested_ones(videos, kind, pattern):
    index = probe(videos[kind])
    assert len(index.timestamps) == N
    want = PATTERNS[pattern]
    frames = decode_dali(index, want, device="cpu")
    assert isinstance(frames, np.ndarray)
    assert frames.shape == (len(want), HEIGHT, WIDTH, 3) and frames.dtype == np.uint8
    np.testing.assert_array_equal(read_indices(frames), want)


@pytest.mark.parametrize("kind", sorted(CPU_KINDS))
def test_cpu_pixels_match_pyav_within_codec_rounding(videos, kind):
    want = np.arange(0, N, 5)
    ours = decode_dali(probe(videos[kind]), want, device="cpu").astype(np.int16)
    ref = decode_all_pyav(videos[kind])[want].astype(np.int16)
    diff = np.abs(ours - ref)
    # Different YUV->RGB code (DALI vs swscale): chroma upsampling differs at the
    # sharp bar edges, elsewhere the values agree to a few levels.
    assert diff.mean() < 2.0
    assert np.percentile(diff, 99) <= 12


@pytest.mark.parametrize(
    ("size", "crop", "shape"),
    [
        (None, None, (HEIGHT, WIDTH)),
        (48, None, (48, 80)),          # shorter side 96 -> 48, longer 160 -> 80
        (64, None, (64, 106)),         # 160 * 64 / 96 = 106.67 -> 106 (torchvision truncates)
        ((50, 70), None, (50, 70)),
        (64, 56, (56, 56)),
        (None, (80, 120), (80, 120)),
        ((72, 128), (64, 100), (64, 100)),
    ],
)
def test_cpu_size_and_crop_shapes(videos, size, crop, shape):
    want = np.array([3, 40, 9])
    index = probe(videos["vp9"])
    frames = decode_dali(index, want, geometry=geo(index, size, crop), device="cpu")
    assert frames.shape == (3, *shape, 3)
    if crop is None:  # the bars span the full width, so a plain resize keeps them readable
        np.testing.assert_array_equal(read_indices(frames), want)


def test_cpu_centre_crop_matches_cropping_by_hand(videos):
    index = probe(videos["mjpeg"])
    full = decode_dali(index, [5, 6], device="cpu")
    cropped = decode_dali(index, [5, 6], geometry=geo(index, crop=(41, 77)), device="cpu")
    top, left = round((HEIGHT - 41) / 2), round((WIDTH - 77) / 2)  # torchvision's CenterCrop
    np.testing.assert_array_equal(cropped, full[:, top:top + 41, left:left + 77])


def test_cpu_empty_request_and_bad_arguments(videos):
    index = probe(videos["vp9"])
    empty = decode_dali(index, np.array([], np.int64), geometry=geo(index, 32), device="cpu")
    assert empty.shape == (0, 32, 53, 3)
    with pytest.raises(ValueError, match="out of range"):
        decode_dali(index, [0, N], device="cpu")
    with pytest.raises(ValueError, match="out of range"):
        decode_dali(index, [-1], device="cpu")
    # One device vocabulary: DALI's own word "gpu" is not it.
    with pytest.raises(ValueError, match=r"device 'gpu'.*'cuda'"):
        decode_dali(index, [0], device="gpu")
    with pytest.raises(TypeError, match="integers"):
        decode_dali(index, [0.5], device="cpu")


def test_cpu_h264_names_the_codec_and_the_alternatives(videos):
    index = probe(videos["h264"])
    with pytest.raises(ValueError, match=r"'h264'.*VP8, VP9 and MJPEG.*GPU.*PyAV") as err:
        decode_dali(index, [0], device="cpu")
    assert str(videos["h264"]) in str(err.value)


def test_cpu_corrupt_file_raises_naming_it(videos, tmp_path):
    index = probe(videos["vp9"])
    bad = tmp_path / "truncated.webm"
    bad.write_bytes(videos["vp9"].read_bytes()[:600])
    index.path = str(bad)
    with pytest.raises(ValueError, match="truncated.webm: DALI failed"):
        decode_dali(index, [0, N - 1], device="cpu")
    # The pipeline that failed is rebuilt: the next call works.
    good = decode_dali(probe(videos["vp9"]), [4], device="cpu")
    np.testing.assert_array_equal(read_indices(good), [4])


def test_cpu_batch_of_files(videos, tmp_path):
    indexes = [probe(videos["vp9"]), probe(videos["mjpeg"]), probe(videos["vp9"])]
    wants = [np.array([1, 20]), np.array([47, 0, 3]), np.array([], np.int64)]
    outs = read_batch_dali(indexes, wants, geometries=[geo(ix, 48) for ix in indexes],
                           device="cpu", batch_size=2)
    assert [o.shape for o in outs] == [(2, 48, 80, 3), (3, 48, 80, 3), (0, 48, 80, 3)]
    for out, want in zip(outs[:2], wants[:2]):
        np.testing.assert_array_equal(read_indices(out), want)
    junk = tmp_path / "junk.webm"
    junk.write_bytes(b"\x1a\x45\xdf\xa3" + bytes(range(256)) * 2)
    bad = probe(videos["vp9"])
    bad.path = str(junk)
    with pytest.raises(ValueError, match="junk.webm"):
        read_batch_dali([indexes[0], bad], [[0], [0]], device="cpu")


def test_read_batch_goes_through_one_dali_pipeline_and_keeps_errors_per_file(videos, tmp_path):
    from fastvqa.video import Uniform, read_batch
    from fastvqa.video import probe as video_probe

    bad = tmp_path / "bad.mp4"
    bad.write_text("not a video")
    paths = [videos["vp9"], videos["mjpeg"], bad]
    out = read_batch(paths, Uniform(6), backend="dali", device="cpu", on_error="return")
    for path, frames in zip(paths[:2], out[:2]):
        want = Uniform(6).indices(video_probe(path))
        np.testing.assert_array_equal(frames.indices, want)
        np.testing.assert_array_equal(read_indices(frames.data), want)
    assert type(out[2]).__name__ == "VideoError" and "bad.mp4" in str(out[2])
    with pytest.raises(ValueError, match="bad.mp4"):
        read_batch(paths, Uniform(6), backend="dali", device="cpu")


def test_gpu_request_without_a_gpu_is_a_clear_error(videos):
    torch = pytest.importorskip("torch")
    if torch.cuda.device_count() > 0:
        pytest.skip("a GPU is visible here; the no-GPU error cannot be provoked")
    with pytest.raises(RuntimeError, match="no CUDA GPU is visible"):
        decode_dali(probe(videos["vp9"]), [0], device="cuda")


# ---------------------------------------------------------------------------------
# GPU (NVDEC): run where a GPU is.


@pytest.mark.cuda
@pytest.mark.parametrize("kind", ["h264", "vp9", "mjpeg"])
@pytest.mark.parametrize("pattern", sorted(PATTERNS))
def test_gpu_frames_are_exactly_the_requested_ones(videos, kind, pattern):
    import torch

    want = PATTERNS[pattern]
    frames = decode_dali(probe(videos[kind]), want, device="cuda")
    assert isinstance(frames, torch.Tensor) and frames.is_cuda
    assert frames.dtype == torch.uint8 and tuple(frames.shape) == (len(want), HEIGHT, WIDTH, 3)
    np.testing.assert_array_equal(read_indices(frames.cpu().numpy()), want)


@pytest.mark.cuda
@pytest.mark.parametrize("kind", ["h264", "vp9"])
def test_gpu_pixels_match_pyav_and_resize_crop_on_gpu(videos, kind):
    want = np.arange(0, N, 5)
    ours = decode_dali(probe(videos[kind]), want, device="cuda").cpu().numpy().astype(np.int16)
    ref = decode_all_pyav(videos[kind])[want].astype(np.int16)
    assert np.abs(ours - ref).mean() < 3.0
    index = probe(videos[kind])
    small = decode_dali(index, want, geometry=geo(index, 64, 56), device="cuda")
    assert tuple(small.shape) == (len(want), 56, 56, 3) and small.is_cuda


@pytest.mark.cuda
def test_gpu_results_survive_later_calls(videos):
    index = probe(videos["h264"])
    first = decode_dali(index, [0, 1, 2], device="cuda")  # sorted and unique: shares DALI's buffer
    kept = first.clone()
    for _ in range(3):
        decode_dali(index, [40, 41, 42], device="cuda")
    assert bool((first == kept).all())


@pytest.mark.cuda
def test_gpu_batch_matches_single_calls(videos):
    indexes = [probe(videos["h264"]), probe(videos["vp9"])]
    wants = [np.array([5, 1, 5]), np.array([47])]
    outs = read_batch_dali(indexes, wants, geometries=[geo(ix, 48) for ix in indexes],
                           device="cuda")
    for out, index, want in zip(outs, indexes, wants):
        single = decode_dali(index, want, geometry=geo(index, 48), device="cuda")
        assert bool((out == single).all())
        np.testing.assert_array_equal(read_indices(out.cpu().numpy()), want)


@pytest.mark.parametrize("kind", sorted(CPU_KINDS))
@pytest.mark.parametrize(("size", "crop"), [(64, None), (50, 45), ((40, 90), (33, 61)), (None, 77)])
def test_cpu_backends_agree_on_shapes_and_pixels(videos, kind, size, crop):
    """One geometry for both backends: read_frames gives the same shape with
    PyAV and DALI, and the same pixels within decoder (and resampling) tolerance."""
    from fastvqa.video import read_frames

    want = np.array([2, 30, 17])
    pyav = read_frames(videos[kind], want, size=size, crop=crop, backend="pyav")
    dali = read_frames(videos[kind], want, size=size, crop=crop, backend="dali", device="cpu")
    assert dali.data.shape == pyav.data.shape
    diff = np.abs(dali.data.astype(np.int16) - pyav.data.astype(np.int16))
    assert diff.mean() < 4.0
