# SPDX-License-Identifier: Apache-2.0
"""fastvqa._outputs, the one staged-write mechanism: checks before any work,
temporaries beside the output, placing without overwriting (also in a race),
nothing left behind on failure."""

from __future__ import annotations

import os

import numpy as np
import pytest

from fastvqa import _outputs
from fastvqa._outputs import (OutputError, OutputExistsError, OutputFiles, check_new,
                              new_folder, numpy_name, open_new, write_new)
from fastvqa.errors import InputError


def listing(folder):
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*"))


def test_errors_are_user_errors_and_file_exists_errors():
    assert issubclass(OutputError, InputError) and issubclass(OutputError, ValueError)
    assert issubclass(OutputExistsError, FileExistsError)


# ----------------------------------------------------------------- one file

def test_write_new_writes_exactly_and_leaves_no_temporary(tmp_path):
    out = tmp_path / "a" / "b" / "x.json"
    assert write_new(out, "héllo\n") == out
    assert out.read_bytes() == "héllo\n".encode("utf-8")
    assert listing(tmp_path) == ["a", "a/b", "a/b/x.json"]


def test_write_new_refuses_an_existing_file_and_a_dangling_link(tmp_path):
    out = tmp_path / "x.txt"
    out.write_text("keep")
    with pytest.raises(FileExistsError, match="refusing to overwrite"):
        write_new(out, "new")
    assert out.read_text() == "keep"
    link = tmp_path / "dangling"
    link.symlink_to(tmp_path / "nowhere")
    with pytest.raises(OutputExistsError):
        write_new(link, "new")
    assert not (tmp_path / "nowhere").exists()
    assert listing(tmp_path) == ["dangling", "x.txt"]


def test_open_new_failure_leaves_nothing(tmp_path):
    out = tmp_path / "made" / "deeper" / "x.bin"
    with pytest.raises(RuntimeError, match="half way"):
        with open_new(out, "xb") as f:
            f.write(b"partial")
            raise RuntimeError("half way")
    assert listing(tmp_path) == []  # no file, no temporary, no folder made for it


def test_check_new_refuses_a_parent_that_is_a_file(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("")
    with pytest.raises(OutputError, match=f"{blocker} is not a folder"):
        check_new(blocker / "x.json", "--out")
    with pytest.raises(OutputError, match="not a file name"):
        check_new(tmp_path / "..", "--out")


def test_the_numpy_suffix_name_is_the_one_checked(tmp_path):
    """NumPy appends .npz to a name that lacks it (case-sensitively): the
    name it writes for clip.NPZ is clip.NPZ.npz, and that is what must not
    exist."""
    assert numpy_name(tmp_path / "clip.NPZ") == tmp_path / "clip.NPZ.npz"
    assert numpy_name(tmp_path / "clip.npz") == tmp_path / "clip.npz"
    assert numpy_name(tmp_path / "e", ".npy") == tmp_path / "e.npy"
    # The reference: what NumPy itself writes.
    np.savez(tmp_path / "clip.NPZ", a=np.zeros(1))
    assert listing(tmp_path) == ["clip.NPZ.npz"]
    with pytest.raises(OutputExistsError):
        check_new(numpy_name(tmp_path / "clip.NPZ"))


# --------------------------------------------------------------- several files

def test_two_outputs_on_one_path_are_refused(tmp_path):
    outputs = OutputFiles()
    outputs.add(tmp_path / "x", "--per-question")
    with pytest.raises(OutputError, match="--plot and --per-question name the same file"):
        outputs.add(tmp_path / "sub" / ".." / "x", "--plot")


def test_commit_places_all_or_nothing(tmp_path):
    outputs = OutputFiles()
    a = outputs.add(tmp_path / "a.txt", "a")
    b = outputs.add(tmp_path / "new" / "b.txt", "b")
    with outputs:
        outputs.temp(a).write_text("A")
        outputs.temp(b).write_text("B")
        outputs.commit()
    assert a.read_text() == "A" and b.read_text() == "B"
    assert listing(tmp_path) == ["a.txt", "new", "new/b.txt"]


def test_an_output_not_written_keeps_nothing(tmp_path):
    outputs = OutputFiles()
    a = outputs.add(tmp_path / "a.txt", "a")
    b = outputs.add(tmp_path / "new" / "b.txt", "b")
    with pytest.raises(OutputError, match="was not written"):
        with outputs:
            outputs.temp(a).write_text("A")
            outputs.temp(b)
            outputs.commit()
    assert listing(tmp_path) == []


def test_a_file_created_between_check_and_commit_is_not_overwritten(tmp_path):
    """The race: someone else creates the output while the run works. The
    commit must neither overwrite it nor keep the run's other outputs."""
    outputs = OutputFiles()
    a = outputs.add(tmp_path / "a.txt", "a")
    b = outputs.add(tmp_path / "b.txt", "b")
    with pytest.raises(OutputExistsError, match="appeared while this command ran"):
        with outputs:
            outputs.temp(a).write_text("mine A")
            outputs.temp(b).write_text("mine B")
            b.write_text("theirs")  # after every check, before the commit
            outputs.commit()
    assert b.read_text() == "theirs"
    assert listing(tmp_path) == ["b.txt"]  # a.txt, placed first, was taken back


def test_a_file_created_at_the_last_moment_is_not_overwritten(tmp_path, monkeypatch):
    """Even when the name appears after commit's own checks, right before
    the file is placed: os.link never replaces."""
    outputs = OutputFiles()
    a = outputs.add(tmp_path / "a.txt", "a")
    real_link = os.link

    def racing_link(src, dst, **kw):
        if str(dst) == str(a):
            a.write_text("theirs")
        return real_link(src, dst, **kw)

    monkeypatch.setattr(_outputs.os, "link", racing_link)
    with pytest.raises(OutputExistsError):
        with outputs:
            outputs.temp(a).write_text("mine")
            outputs.commit()
    assert a.read_text() == "theirs"
    assert listing(tmp_path) == ["a.txt"]


def test_without_hard_links_a_rename_still_refuses(tmp_path, monkeypatch):
    """A file system without hard links (os.link fails with EPERM): the file
    is renamed instead, still never over an existing name."""
    def no_links(src, dst, **kw):
        raise PermissionError(1, "Operation not permitted")

    monkeypatch.setattr(_outputs.os, "link", no_links)
    out = tmp_path / "x.txt"
    write_new(out, "A")
    assert out.read_text() == "A" and listing(tmp_path) == ["x.txt"]
    outputs = OutputFiles()
    b = outputs.add(tmp_path / "b.txt", "b")
    with pytest.raises(OutputExistsError):
        with outputs:
            outputs.temp(b).write_text("mine")
            b.write_text("theirs")
            outputs.commit()
    assert b.read_text() == "theirs" and listing(tmp_path) == ["b.txt", "x.txt"]


# ------------------------------------------------------------------- folders

def test_new_folder_appears_whole(tmp_path):
    seen = []

    def fill(folder):
        seen.append(folder)
        assert folder.parent == tmp_path / "p" and folder.name.startswith(".ix.")
        (folder / "a.txt").write_text("A")
        (folder / "sub").mkdir()
        (folder / "sub" / "b.txt").write_text("B")

    out = new_folder(tmp_path / "p" / "ix", fill)
    assert listing(tmp_path) == ["p", "p/ix", "p/ix/a.txt", "p/ix/sub", "p/ix/sub/b.txt"]
    assert not seen[0].exists()
    # mkdir's permissions, not mkdtemp's private 0700
    umask = os.umask(0)
    os.umask(umask)
    assert (out.stat().st_mode & 0o777) == (0o777 & ~umask)


def test_new_folder_failure_leaves_nothing(tmp_path):
    def fill(folder):
        (folder / "a.txt").write_text("A")
        raise RuntimeError("half way")

    with pytest.raises(RuntimeError, match="half way"):
        new_folder(tmp_path / "p" / "q" / "ix", fill)
    assert listing(tmp_path) == []


def test_new_folder_refuses_an_existing_path_before_fill(tmp_path):
    (tmp_path / "ix").mkdir()
    called = []
    with pytest.raises(OutputExistsError, match="refusing to overwrite"):
        new_folder(tmp_path / "ix", called.append)
    assert called == []


@pytest.mark.parametrize("with_renameat2", [True, False])
def test_a_folder_created_between_check_and_commit_is_not_replaced(tmp_path, monkeypatch,
                                                                   with_renameat2):
    """A plain rename would silently replace an empty folder that appeared
    meanwhile; the commit refuses instead (renameat2's RENAME_NOREPLACE, or
    the re-check where the system lacks it) and keeps what appeared."""
    if not with_renameat2:
        monkeypatch.setattr(_outputs, "_renameat2", None)
    elif _outputs._renameat2 is None:
        pytest.skip("no renameat2 on this system")
    out = tmp_path / "ix"

    def fill(folder):
        (folder / "mine.txt").write_text("A")
        out.mkdir()  # theirs, empty, after the check

    with pytest.raises(OutputExistsError, match="appeared while this command ran"):
        new_folder(out, fill)
    assert listing(tmp_path) == ["ix"]


def test_a_folder_at_the_last_moment_is_not_replaced(tmp_path, monkeypatch):
    """renameat2(RENAME_NOREPLACE): an empty folder appearing right before
    the rename itself, after every check, is still not replaced."""
    if _outputs._renameat2 is None:
        pytest.skip("no renameat2 on this system")
    out = tmp_path / "ix"
    real = _outputs._renameat2

    def racing(*args):
        out.mkdir()
        return real(*args)

    monkeypatch.setattr(_outputs, "_renameat2", racing)
    with pytest.raises(OutputExistsError):
        new_folder(out, lambda folder: (folder / "mine.txt").write_text("A"))
    assert listing(tmp_path) == ["ix"]


def test_discard_keeps_a_made_folder_that_someone_else_wrote_into(tmp_path):
    outputs = OutputFiles()
    a = outputs.add(tmp_path / "made" / "a.txt", "a")
    with pytest.raises(RuntimeError):
        with outputs:
            outputs.temp(a).write_text("A")
            (tmp_path / "made" / "theirs.txt").write_text("keep")
            raise RuntimeError
    assert listing(tmp_path) == ["made", "made/theirs.txt"]


def test_a_missing_folder_made_meanwhile_by_another_writer_is_used_and_kept(tmp_path,
                                                                            monkeypatch):
    # Threads of one cache write into the same missing folder: the one that
    # loses the race to make it finds it made (mkdir raises FileExistsError).
    real_mkdir = type(tmp_path).mkdir

    def raced(self, *args, **kwargs):
        real_mkdir(self, *args, **kwargs)  # the other writer, first
        raise FileExistsError(17, "File exists", str(self))

    monkeypatch.setattr(type(tmp_path), "mkdir", raced)
    write_new(tmp_path / "cache" / "ab" / "key.json", "{}")
    monkeypatch.undo()
    assert (tmp_path / "cache" / "ab" / "key.json").read_text() == "{}"
    outputs = OutputFiles()
    b = outputs.add(tmp_path / "cache" / "cd" / "b.json", "b")
    monkeypatch.setattr(type(tmp_path), "mkdir", raced)
    with pytest.raises(RuntimeError):
        with outputs:
            outputs.temp(b).write_text("B")
            raise RuntimeError
    monkeypatch.undo()
    # "cd" was the other writer's: a failure here does not remove it.
    assert listing(tmp_path / "cache") == ["ab", "ab/key.json", "cd"]


def test_a_file_where_a_folder_is_needed_is_a_one_line_error(tmp_path):
    (tmp_path / "cache").write_text("not a folder")
    with pytest.raises(OutputError, match="is not a folder"):
        write_new(tmp_path / "cache" / "ab" / "key.json", "{}")
