# SPDX-License-Identifier: Apache-2.0
"""The code in README.md and docs/*.md runs as written.

Every fenced ```python block is executed in a fresh temporary folder (so
files a snippet writes, e.g. ``bank.idx``, never collide). The few inputs a
reader brings are provided there, exactly where the snippet names them:

- ``clip.mp4``: a 20-s, 10 fps, 320x240 H.264 video made with PyAV;
- ``data/<benchmark>``: the real annotation files (``shared_data``; the
  snippet is skipped where they are absent).

A block preceded by ``<!-- snippet: skip REASON -->`` is a template, not a
program, and is skipped with that reason. The README's ``fastvqa baseline`` /
``fastvqa eval`` shell block is run too, and its printed table must be the
one the README shows (the official NExT-GQA numbers in docs/evaluation.md).
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

import pytest

ROOT = Path(__file__).resolve().parents[1]
#: Documents whose ```python blocks must run (docs/packaging.md belongs to the
#: packaging work and holds shell only).
DOCUMENTS = ["README.md", *sorted(str(p.relative_to(ROOT)) for p in (ROOT / "docs").glob("*.md"))]

_FENCE = re.compile(r"^```(\w*)[^\n]*\n(.*?)^```", re.S | re.M)
_SKIP = re.compile(r"<!--\s*snippet:\s*skip\s+(.+?)\s*-->\s*$")
_HEADING = re.compile(r"^#+\s+(.*)$", re.M)


@dataclass
class Snippet:
    document: str
    heading: str
    language: str
    code: str
    skip_reason: Optional[str]

    @property
    def id(self) -> str:
        slug = re.sub(r"[^a-z0-9]+", "-", self.heading.lower()).strip("-")
        return f"{self.document}:{slug}"


def snippets(document: str, language: str) -> list[Snippet]:
    text = (ROOT / document).read_text()
    out = []
    for m in _FENCE.finditer(text):
        if m.group(1) != language:
            continue
        before = text[: m.start()]
        headings = _HEADING.findall(before)
        last_line = before.rstrip("\n").rsplit("\n", 1)[-1]
        skip = _SKIP.search(last_line)
        out.append(Snippet(document, headings[-1] if headings else "top", language, m.group(2),
                           skip.group(1) if skip else None))
    return out


def _unique_ids(items: list[Snippet]) -> list[str]:
    seen: dict[str, int] = {}
    ids = []
    for s in items:
        seen[s.id] = seen.get(s.id, 0) + 1
        ids.append(s.id if seen[s.id] == 1 else f"{s.id}-{seen[s.id]}")
    return ids


PYTHON = [s for doc in DOCUMENTS for s in snippets(doc, "python")]


def _requirements(code: str) -> list[str]:
    """Optional packages a snippet needs, from what it uses."""
    needs = []
    if "torch" in code or "fastvqa.nn" in code:
        needs.append("torch")
    if "fastvqa.video" in code:
        needs.append("av")
    if "fastvqa.retrieval" in code:
        needs += ["faiss", "sklearn"]
    if "SentenceEncoder" in code:
        needs.append("sentence_transformers")
    if "rouge(" in code:
        needs.append("rouge_score")
    return needs


def _prepare(folder: Path, code: str, request) -> None:
    """Put the inputs the snippet names into its working folder."""
    if "clip.mp4" in code:
        from tests.video.fixtures import make_video

        make_video(folder / "clip.mp4", "h264", n=200, fps=10, gop=10, width=320, height=240)
    if "data/" in code:
        shared = request.getfixturevalue("shared_data")
        (folder / "data").symlink_to(shared, target_is_directory=True)


def test_documents_have_python_snippets():
    """The README tour is code, not prose: one runnable block per module at least."""
    readme = [s for s in PYTHON if s.document == "README.md"]
    headings = {s.heading for s in readme}
    for module in ("fastvqa.ops", "fastvqa.nn", "fastvqa.metrics", "fastvqa.data",
                   "fastvqa.video", "fastvqa.retrieval"):
        assert any(module in h for h in headings), f"no README snippet under a {module} heading"
    assert all(s.skip_reason is None for s in readme), "README snippets must all run"


@pytest.mark.parametrize("snippet", PYTHON, ids=_unique_ids(PYTHON))
def test_python_snippet_runs(snippet: Snippet, tmp_path, monkeypatch, request):
    if snippet.skip_reason:
        pytest.skip(snippet.skip_reason)
    for module in _requirements(snippet.code):
        pytest.importorskip(module, reason=f"the snippet needs {module}")
    _prepare(tmp_path, snippet.code, request)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("FASTVQA_CACHE", str(tmp_path / "cache"))
    code = compile(snippet.code, f"{snippet.document} ({snippet.heading})", "exec")
    namespace = {"__name__": "__snippet__"}
    exec(code, namespace)  # an exception anywhere in the snippet fails the test
    # Every documented snippet binds at least one name the reader goes on to use.
    assert set(namespace) - {"__name__", "__builtins__"}, "the snippet ran but defined nothing"


def _eval_block() -> Snippet:
    (block,) = [s for s in snippets("README.md", "bash") if "fastvqa eval nextgqa" in s.code]
    return block


def test_readme_eval_commands_print_the_documented_table(tmp_path, shared_data):
    """Runs the README's baseline + eval commands; the table printed must be
    the one the README shows under them (centre-half on NExT-GQA test:
    22.8 / 28.2 / 14.8 / 18.9 / 25.2 / 12.0, docs/evaluation.md)."""
    block = _eval_block()
    commands = [ln for ln in block.code.splitlines() if ln.strip() and not ln.startswith("#")]
    expected = [ln[2:] for ln in block.code.splitlines() if ln.startswith("# ")]
    (tmp_path / "data").symlink_to(shared_data, target_is_directory=True)
    env = dict(os.environ)
    stdout = ""
    for line in commands:
        argv = shlex.split(line)
        assert argv[0] == "fastvqa", line
        done = subprocess.run([sys.executable, "-m", "fastvqa.cli", *argv[1:]], cwd=tmp_path,
                              capture_output=True, text=True, env=env)
        assert done.returncode == 0, done.stderr
        stdout = done.stdout
    assert stdout.splitlines() == expected
    assert "22.8" in expected[2] and "12.0" in expected[2]  # the documented numbers themselves
