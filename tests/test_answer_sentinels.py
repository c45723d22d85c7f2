# SPDX-License-Identifier: Apache-2.0
"""NO_ANSWER / INVALID_ANSWER: one definition (fastvqa.data.answers), the
same objects from every public place that offered them (0.1 had three
separate definitions: evaluation.nextgqa, metrics.grounding, data.deveqa)."""

from __future__ import annotations

import ast
from pathlib import Path

import fastvqa.data
import fastvqa.data.answers as answers
import fastvqa.data.deveqa as deveqa
import fastvqa.evaluation.nextgqa as nextgqa
import fastvqa.metrics.grounding as grounding

PACKAGE = Path(fastvqa.data.__file__).resolve().parents[1]


def test_values():
    # The values the official scorers' conventions need: -1 "no answer
    # entry", -2 "answered with no valid option" (both never a valid index).
    assert answers.NO_ANSWER == -1 and answers.INVALID_ANSWER == -2


def test_same_objects_everywhere():
    for module, names in ((fastvqa.data, ("NO_ANSWER", "INVALID_ANSWER")),
                          (nextgqa, ("NO_ANSWER", "INVALID_ANSWER")),
                          (grounding, ("NO_ANSWER",)), (deveqa, ("INVALID_ANSWER",))):
        for name in names:
            assert getattr(module, name) is getattr(answers, name), (module.__name__, name)
    assert {"NO_ANSWER", "INVALID_ANSWER"} <= set(dir(fastvqa.data))


def test_defined_once():
    """No module but fastvqa/data/answers.py assigns either name (small ints
    are cached, so identity alone would not catch a second `= -1`)."""
    owners = []
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            targets = (node.targets if isinstance(node, ast.Assign)
                       else [node.target] if isinstance(node, ast.AnnAssign) else [])
            for t in targets:
                if isinstance(t, ast.Name) and t.id in ("NO_ANSWER", "INVALID_ANSWER"):
                    owners.append((path.relative_to(PACKAGE).as_posix(), t.id))
    assert sorted(owners) == [("data/answers.py", "INVALID_ANSWER"),
                              ("data/answers.py", "NO_ANSWER")]
