# SPDX-License-Identifier: Apache-2.0
"""fastvqa.llm is the one home of model access: DeVi and the question
generators import it, it imports neither of them (nor torch), and the names
that lived in fastvqa.devi still resolve to the same objects."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import fastvqa

PACKAGE_ROOT = Path(fastvqa.__file__).resolve().parents[1]


def test_llm_imports_no_pipeline_and_no_torch():
    code = textwrap.dedent("""
        import sys
        import fastvqa.llm as llm
        for name in llm.__all__:
            getattr(llm, name)
        loaded = sorted(m for m in sys.modules if m.startswith("fastvqa."))
        bad = [m for m in loaded if m.startswith(("fastvqa.devi", "fastvqa.generate",
                                                  "fastvqa.demo"))]
        assert not bad, bad
        assert "torch" not in sys.modules
        print("ok")
    """)
    env = {**os.environ, "PYTHONPATH": str(PACKAGE_ROOT)}
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "ok"


def test_former_devi_names_are_the_llm_objects():
    import fastvqa.devi as devi
    import fastvqa.llm as llm
    from fastvqa.devi import openai_client, protocols, serve

    assert devi.ChatCompletionsClient is llm.ChatCompletionsClient
    assert devi.LanguageModelError is llm.LanguageModelError
    assert devi.serve_chat_model is llm.serve_chat_model
    assert devi.LanguageModel is llm.LanguageModel
    assert devi.Prompt is llm.Prompt
    assert openai_client.request_key is llm.request_key
    assert serve.Reply is llm.Reply
    assert protocols.as_language_model is llm.as_language_model
    assert llm.ChatCompletionsClient.__module__ == "fastvqa.llm.client"


def test_the_pipelines_import_llm():
    root = PACKAGE_ROOT / "fastvqa"
    for path in [*root.glob("devi/*.py"), *root.glob("generate/**/*.py"), *root.glob("demo/*.py")]:
        if path.name in ("openai_client.py", "serve.py"):  # the former homes, re-exporting
            continue
        text = path.read_text()
        assert "devi.openai_client" not in text and "devi.serve" not in text, path
