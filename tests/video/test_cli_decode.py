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
    np.testing.assert_allclose(data["pts_seconds"], h264_video.timestamps[expected], atol=1e-3)
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
        want = SecondWindows(4).indices(probe(path))
        assert data["indices"].shape == (len(want) // 4, 4)  # windows keep their axis
        assert data["frames"].shape[:2] == (len(want) // 4, 4)
        assert data["indices"].reshape(-1).tolist() == want.tolist()
        frames = data["frames"].reshape((-1,) + data["frames"].shape[2:])
        assert [read_index(f) for f in frames] == want.tolist()


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


def test_out_name_is_exactly_the_one_checked(h264_video, tmp_path, capsys):
    """NumPy appends .npz to a name without it (case-sensitively): --out clip.NPZ
    used to overwrite an existing clip.NPZ.npz."""
    theirs = tmp_path / "clip.NPZ.npz"
    theirs.write_bytes(b"the user's file")
    out = tmp_path / "clip.NPZ"
    assert main(["decode", str(h264_video.path), "--sampler", "uniform:3", "--out", str(out)]) == 0
    assert theirs.read_bytes() == b"the user's file"
    data = np.load(out)
    assert [read_index(f) for f in data["frames"]] == data["indices"].tolist()
    assert main(["decode", str(h264_video.path), "--sampler", "uniform:3", "--out", str(out)]) == 2
    assert "refusing to overwrite" in capsys.readouterr().err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["clip.NPZ", "clip.NPZ.npz"]


def _leftovers(folder):
    return sorted(p.name for p in folder.iterdir())


@pytest.mark.parametrize("sampler, extra, message", [
    ("uniform:4", ["--crop", "5000"], "does not fit"),
    ("fps:1e9", [], "frame indices"),
    ("uniform:4@99-100", [], "outside"),
])
def test_a_list_that_cannot_be_decoded_writes_nothing(videos, tmp_path, capsys, sampler, extra,
                                                      message):
    """``--crop 5000`` on a list used to leave an empty folder behind."""
    listing = tmp_path / "videos.txt"
    listing.write_text(f"{videos['h264-cfr-gop12'].path}\n{videos['vp9-cfr-gop5'].path}\n")
    before = _leftovers(tmp_path)
    argv = ["decode", str(listing), "--sampler", sampler, "--out", str(tmp_path / "out"),
            "--no-progress", *extra]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert message in err and "nothing written" in err
    assert _leftovers(tmp_path) == before  # no folder, no temporary


@pytest.mark.parametrize("argv, message", [
    (["--sampler", "fps:1e9"], "frame indices (1e+09 fps over 3.200 s) exceed the limit"),
    (["--sampler", "uniform:4", "--size", "100000"], "argument --size"),
    (["--sampler", "uniform:4", "--size", "0x10"], "argument --size"),
    (["--sampler", "uniform:4", "--size", "big"], "argument --size"),
    (["--sampler", "uniform:4", "--crop", "5000"], "does not fit"),
    (["--sampler", "uniform:4", "--workers", "0"], "argument --workers"),
])
def test_one_line_errors_and_nothing_written(h264_video, tmp_path, capsys, argv, message):
    out = tmp_path / "o.npz"
    with pytest.raises(SystemExit) if "argument" in message else _no_raise():
        assert main(["decode", str(h264_video.path), *argv, "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err
    # One error line (argparse prints its usage above it).
    assert err.strip().splitlines()[-1].startswith("fastvqa decode: error: ")
    assert sum("error" in line for line in err.splitlines()) == 1
    assert _leftovers(tmp_path) == []


class _no_raise:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def test_frames_that_do_not_fit_in_memory_are_refused_first(h264_video, tmp_path, capsys,
                                                            monkeypatch):
    from fastvqa.video import api

    monkeypatch.setattr(api, "available_memory", lambda: 10 * 2**20)
    out = tmp_path / "o.npz"
    # 96 frames x 64x48 RGB = 864 KiB: fine; fps:400 = 1280 frames = 11.2 MiB: refused.
    assert main(["decode", str(h264_video.path), "--sampler", "fps:400", "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert "1,280 frames of 64x48 (WxH) RGB uint8 need 11.2 MiB" in err
    assert "10.0 MiB of memory available" in err
    assert _leftovers(tmp_path) == []
    with pytest.raises(ValueError, match="11.2 MiB"):
        from fastvqa.video import Fps, read_frames

        read_frames(h264_video.path, Fps(400))


def test_odd_list_entries(videos, tmp_path, capsys):
    import shutil

    odd = tmp_path / "..mp4"
    shutil.copy(videos["h264-cfr-gop12"].path, odd)
    (tmp_path / "sub").mkdir()
    listing = tmp_path / "videos.lst"
    listing.write_text("..mp4\nsub/\nmissing.mp4\n..mp4\n" + str(videos["vp9-cfr-gop5"].path)
                       + "\n")
    for fmt in ("png", "npz"):
        out = tmp_path / f"out-{fmt}"
        assert main(["decode", str(listing), "--sampler", "uniform:2", "--out", str(out),
                     "--format", fmt, "--no-progress"]) == 1
        err = capsys.readouterr().err
        assert "sub: is a directory" in err and "missing.mp4: no such file" in err
        assert "decoded 3 of 5" in err
        suffix = "" if fmt == "png" else ".npz"
        assert _leftovers(out) == [f"00000_video{suffix}", f"00003_video{suffix}",
                                   f"00004_vp9-cfr-gop5{suffix}"]
    (tmp_path / "bin.txt").write_bytes(b"\xff\xfe\x00garbage")
    assert main(["decode", str(tmp_path / "bin.txt"), "--sampler", "uniform:2", "--out",
                 str(tmp_path / "o3")]) == 2
    assert "not a text list" in capsys.readouterr().err


@pytest.mark.parametrize("target", ["new/deeper/o.npz", "new/deeper/imgs"])
def test_a_failure_while_decoding_leaves_nothing(h264_video, tmp_path, monkeypatch, target):
    """Nothing half-written: no temporary, no output, not even the folders made for it."""
    from fastvqa.video import VideoError
    from fastvqa.video import api

    def broken(paths, sampler, **kwargs):
        raise VideoError(paths[0], "decoder exploded")

    import fastvqa.video as video_pkg

    # The package first: its lazy ``read_batch`` resolves from ``api`` on first
    # access, so patching ``api`` first would let the package cache (and the
    # undo restore) the broken one.
    monkeypatch.setattr(video_pkg, "read_batch", broken)
    monkeypatch.setattr(api, "read_batch", broken)
    assert main(["decode", str(h264_video.path), "--sampler", "uniform:2",
                 "--out", str(tmp_path / target)]) == 2
    assert _leftovers(tmp_path) == []


def test_rotate_flag(tmp_path):
    from tests.video.test_decode import _rotated_video

    path = _rotated_video(tmp_path / "r.mp4", 90)
    out = tmp_path / "r.npz"
    assert main(["decode", str(path), "--sampler", "uniform:3", "--rotate", "--crop", "60x40",
                 "--out", str(out)]) == 0
    assert np.load(out)["frames"].shape == (3, 60, 40, 3)  # 64 high, 48 wide once turned
    assert main(["decode", str(path), "--sampler", "uniform:3", "--rotate", "--backend", "dali",
                 "--out", str(tmp_path / "d.npz")]) == 2


def test_rerun_removes_what_a_killed_run_left(h264_video, tmp_path):
    # A killed decode leaves its staging names beside --out: a folder
    # (.<name>.<12 hex>.<mkdtemp suffix>.part) or a file (.<name>.<12 hex>.part).
    folder_out, file_out = tmp_path / "frames", tmp_path / "one.npz"
    stale_dir = tmp_path / ".frames.0123456789ab.k2j4_x9q.part"
    stale_dir.mkdir()
    (stale_dir / "000000.png").write_bytes(b"half")
    stale_file = tmp_path / ".one.npz.0123456789ab.part"
    stale_file.write_bytes(b"half")
    others = [tmp_path / ".frames.notmine.part", tmp_path / "frames.part"]
    for p in others:
        p.write_bytes(b"keep")
    assert main(["decode", str(h264_video.path), "--sampler", "uniform:2", "--size", "24",
                 "--out", str(folder_out)]) == 0
    assert main(["decode", str(h264_video.path), "--sampler", "uniform:2", "--size", "24",
                 "--out", str(file_out)]) == 0
    assert not stale_dir.exists() and not stale_file.exists()
    assert all(p.read_bytes() == b"keep" for p in others)
