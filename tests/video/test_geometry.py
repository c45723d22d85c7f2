# SPDX-License-Identifier: Apache-2.0
"""One definition of resize and crop (fastvqa.video.geometry), handed to every backend.

PyAV used to truncate the resized longer side while DALI rounded it half up
(640x480 at 224: 298 vs 299 wide), and their crop offsets rounded
differently, so ``backend="auto"`` gave shapes that changed from machine to
machine. The references here are torchvision's formulas, written out by hand.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fastvqa.video.geometry import Geometry, crop_box, output_geometry, output_size


def ref_resize(height, width, size):
    """torchvision ``Resize(int)``: shorter side to ``size``, the longer to
    ``int(size * long / short)``."""
    if width <= height:
        return int(size * height / width), size
    return size, int(size * width / height)


def ref_offset(full, part):
    """torchvision ``CenterCrop``: ``round((full - part) / 2)``, ties to even, by hand."""
    d = full - part
    if d % 2 == 0:
        return d // 2
    low = d // 2  # d / 2 = low + 0.5: the even one of low, low + 1
    return low if low % 2 == 0 else low + 1


def test_known_cases():
    assert output_size(480, 640, 224) == (224, 298)  # PyAV's old result; DALI gave 299
    assert output_size(720, 1280, 256) == (256, 455)
    assert output_size(48, 64, (10, 20)) == (10, 20)
    assert output_size(100, 50, 25) == (50, 25)
    assert output_size(50, 50, 7) == (7, 7)
    assert crop_box(256, 455, 224) == (16, 116, 224, 224)
    assert crop_box(10, 11, (4, 4)) == (3, 4, 4, 4)  # round(3.5) = 4
    assert crop_box(10, 13, (4, 4)) == (3, 4, 4, 4)  # round(4.5) = 4 (half to even)
    assert output_geometry(480, 640, 224, 200) == Geometry((224, 298), (12, 49, 200, 200),
                                                           (200, 200))
    assert output_geometry(48, 64) == Geometry(None, None, (48, 64))
    assert output_geometry(48, 64, (48, 64)) == Geometry(None, None, (48, 64))


@settings(max_examples=300, deadline=None)
@given(height=st.integers(1, 4000), width=st.integers(1, 4000), size=st.integers(1, 1000),
       crop=st.integers(1, 1000))
def test_geometry_matches_torchvision_for_many_sizes(height, width, size, crop):
    want = ref_resize(height, width, size)
    if max(want) > 16384:
        with pytest.raises(ValueError, match="largest side"):
            output_size(height, width, size)
        return
    assert output_size(height, width, size) == want
    h, w = want
    if crop > min(h, w):
        with pytest.raises(ValueError, match="does not fit"):
            output_geometry(height, width, size, crop)
        return
    geo = output_geometry(height, width, size, crop)
    assert geo.crop == (ref_offset(h, crop), ref_offset(w, crop), crop, crop)
    assert geo.shape == (crop, crop)


@pytest.mark.parametrize("bad, error", [(0, ValueError), (-3, ValueError), (True, TypeError),
                                        (2.5, TypeError), ((3,), TypeError), ((3, 0), ValueError),
                                        ("224", TypeError)])
def test_bad_size_and_crop(bad, error):
    with pytest.raises(error):
        output_size(48, 64, bad)
    with pytest.raises(error):
        crop_box(48, 64, bad)


@settings(max_examples=60, deadline=None)
@given(height=st.integers(2, 2000), width=st.integers(2, 2000), size=st.integers(1, 600),
       crop=st.one_of(st.none(), st.integers(1, 600)))
def test_the_dali_backend_executes_the_api_geometry(tmp_path_factory, height, width, size, crop):
    """DALI gets the geometry and derives nothing itself (needs no DALI to check)."""
    from types import SimpleNamespace

    from fastvqa.video.dali_backend import _Request

    h, w = ref_resize(height, width, size)
    if max(h, w) > 16384 or (crop is not None and crop > min(h, w)):
        return
    path = tmp_path_factory.getbasetemp() / "one_byte.mp4"
    path.write_bytes(b"\0")
    index = SimpleNamespace(path=str(path), codec="h264", width=width, height=height,
                            timestamps=np.arange(3, dtype=np.float64))
    geo = output_geometry(height, width, size, crop)
    req = _Request.make(index, [0, 2], geo, "gpu")
    assert req.out_hw == ((crop, crop) if crop else (h, w))
    assert req.resize_hw == (None if (h, w) == (height, width) else (h, w))
    if crop:
        assert req.crop_anchor == (ref_offset(h, crop), ref_offset(w, crop))


@pytest.mark.parametrize("size, crop", [(24, None), (31, None), (25, 21), ((30, 17), (29, 9)),
                                        (None, (47, 63)), (17, 15)])
def test_pyav_output_shapes_follow_the_geometry(h264_video, size, crop):
    pytest.importorskip("av")
    from fastvqa.video import read_frames

    out = read_frames(h264_video.path, np.array([0, 5]), size=size, crop=crop, backend="pyav")
    height, width = h264_video.height, h264_video.width
    h, w = (size if isinstance(size, tuple) else
            ref_resize(height, width, size) if size else (height, width))
    if crop is not None:
        h, w = (crop, crop) if isinstance(crop, int) else crop
    assert out.data.shape == (2, h, w, 3)


@pytest.mark.parametrize("backend", ["dali_backend", "pyav_backend"])
def test_backends_do_not_import_the_api_layer(backend):
    """dali_backend used to import api._finish/_indices (and api imported it back)."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    import fastvqa

    root = Path(fastvqa.__file__).resolve().parents[1]
    code = (f"import sys, fastvqa.video.{backend}; "
            "print(sorted(m for m in sys.modules if m.startswith('fastvqa.video.')))")
    env = {**os.environ, "PYTHONPATH": str(root)}
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "fastvqa.video.api" not in proc.stdout, proc.stdout
    assert f"fastvqa.video.{backend}" in proc.stdout


@pytest.mark.parametrize("backend", ["dali_backend", "pyav_backend"])
def test_no_backend_code_path_imports_the_api_layer(backend):
    """Not even inside a function (the cycle was a function-level import)."""
    import ast
    from pathlib import Path

    import fastvqa.video

    source = Path(fastvqa.video.__file__).with_name(f"{backend}.py").read_text()
    named = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and node.module:
            named.add(node.module)
            named.update(f"{node.module}.{a.name}" for a in node.names)
        elif isinstance(node, ast.Import):
            named.update(a.name for a in node.names)
    assert not {n for n in named if n in ("fastvqa.video.api", "fastvqa.video")
                or n.startswith("fastvqa.video.api.")}, sorted(named)
