# SPDX-License-Identifier: Apache-2.0
"""``fastvqa decode``: npz and image outputs, lists with failures, refusing to overwrite."""

from __future__ import annotations

import csv

import numpy as np
import pytest

pytest.importorskip("av")

from fastvqa.cli import main  # noqa: E402
from fastvqa.video import SecondWindows, Uniform, probe  # noqa: E402
from tests.video.fixtures import read_index  # noqa: E402


def test_decode_one_video_to_npz(h264_video, tmp_path, capsys):
    out = tmp_path / "frames.npz"
    rc = main(["decode", str(h264_video.path), "--sampler", "uniform:6", "--size", "24",
               "--crop", "20x24", "--out", str(out)])
    assert rc == 0
    data = np.load(out)
    assert data["frames"].shape == (6, 20, 24, 3)
    expected = Uniform(6).indices(probe(h264_video.path))
    assert data["indices"].tolist() == expected.tolist()
    np.testing.assert_allclose(data["timestamps"], h264_video.timestamps[expected], atol=1e-3)
    assert "decoded 1 of 1" in capsys.readouterr().err
    # Never overwrites.
    assert main(["decode", str(h264_video.path), "--sampler", "fps:1", "--out", str(out)]) == 2
    assert "refusing to overwrite" in capsys.readouterr().err


@pytest.mark.parametrize("fmt", ["png", "jpg"])
def test_decode_one_video_to_images(videos, tmp_path, fmt):
    import av

    spec = videos["vp9-vfr-gop5"]
    out = tmp_path / "imgs"
    assert main(["decode", str(spec.path), "--sampler", "fps:2", "--out", str(out),
                 "--format", fmt, "--backend", "pyav"]) == 0
    with (out / "frames.csv").open() as f:
        rows = list(csv.DictReader(f))
    assert rows and all((out / r["file"]).is_file() for r in rows)
    for r in rows:
        with av.open(str(out / r["file"])) as c:
            img = next(c.decode(video=0)).to_ndarray(format="rgb24")
        assert read_index(img) == int(r["frame_index"])
        assert float(r["seconds"]) == pytest.approx(spec.timestamps[int(r["frame_index"])], abs=1e-3)


def test_decode_list_with_a_bad_file(videos, tmp_path, capsys):
    good = [videos["h264-vfr-gop12"].path, videos["mjpeg-cfr-gop1"].path]
    (tmp_path / "empty.mp4").write_bytes(b"")
    listing = tmp_path / "videos.txt"
    listing.write_text(f"# two good, one empty\n{good[0]}\n\n{good[1]}\nempty.mp4\n")
    out = tmp_path / "out"
    rc = main(["decode", str(listing), "--sampler", "seconds:4", "--out", str(out),
               "--no-progress"])
    assert rc == 1
    err = capsys.readouterr().err
    assert "empty.mp4: empty file" in err and "decoded 2 of 3" in err
    for path in good:
        data = np.load(out / f"{path.stem}.npz")
        assert data["indices"].tolist() == SecondWindows(4).indices(probe(path)).tolist()
        assert [read_index(f) for f in data["frames"]] == data["indices"].tolist()


def test_decode_errors(h264_video, tmp_path, capsys):
    (tmp_path / "tone.txt").write_text("\n")
    cases = [
        ([str(h264_video.path), "--sampler", "bogus:1"], "unknown sampler"),
        ([str(tmp_path / "missing.mp4"), "--sampler", "fps:1"], "no such file"),
        ([str(tmp_path / "tone.txt"), "--sampler", "fps:1"], "names no video"),
        ([str(h264_video.path), "--sampler", "fps:1", "--crop", "999"], "does not fit"),
    ]
    for k, (argv, message) in enumerate(cases):
        assert main(["decode", *argv, "--out", str(tmp_path / f"o{k}.npz")]) == 2
        assert message in capsys.readouterr().err
        assert not (tmp_path / f"o{k}.npz").exists()
