# SPDX-License-Identifier: Apache-2.0
"""Multiple-choice options for the demo's questions, through fastvqa.retrieval.

The recipe follows DeVE-QA's spirit (``docs/papers``: answers that fit the
video at another time, plus answers of similar questions): for each question

- ``other_time``: what the same object does at other times (``what``,
  ``first``), or the other objects that do the asked action at another time
  (``which``);
- ``similar``: :func:`fastvqa.retrieval.mine_distractors` over the bank of
  all generated question-answer pairs (TF-IDF question similarity);
- ``vocab`` (fallback): any other answer of the right type.

Every pool is filtered to answers that are *wrong* for the question (an
action the object does not do over the asked interval, an object that does
not do the action there), so exactly one option is correct.
"""

from __future__ import annotations

import numpy as np

from fastvqa.demo.synth import ACTION_VERBS, PALETTE, SHAPES, wrong_objects

#: options per question kind (``first`` asks among the three movements).
N_OPTIONS = {"what": 4, "first": 3, "which": 4}


def _pools(q: dict, objects: list, similar: list) -> dict:
    kind = q["kind"]
    if kind == "which":
        start, end = q["interval"]
        wrong = set(wrong_objects(objects, q["action"], start, end))
        movers = {f"the {o.name}" for o in objects
                  if any(s.action == q["action"] for s in o.segments)}
        everyone = [f"the {c} {s}" for c in PALETTE for s in SHAPES]
        # Objects absent from the video are wrong too.
        present = {f"the {o.name}" for o in objects}
        valid = wrong | (set(everyone) - present)
        return {"other_time": sorted(movers & wrong),
                "similar": [a for a in similar if a in valid],
                "vocab": [a for a in everyone if a in valid]}
    obj = next(o for o in objects if o.name == q["object"])
    verbs = [v for a, v in ACTION_VERBS.items() if kind != "first" or a != "rest"]
    valid = set(verbs) - {q["answer"]}
    done = {ACTION_VERBS[s.action] for s in obj.segments}
    return {"other_time": [v for v in verbs if v in done and v in valid],
            "similar": [a for a in similar if a in valid],
            "vocab": [v for v in verbs if v in valid]}


def add_options(questions: list, scenes: dict, rng: np.random.Generator) -> None:
    """Set ``options``, ``answer_index`` and ``option_sources`` on every
    multiple-choice question (kinds ``first``, ``what``, ``which``), in place.

    ``scenes``: video id -> its :class:`~fastvqa.demo.synth.SceneObject` list.
    The correct option's position is balanced within each kind
    (:func:`fastvqa.retrieval.build_options`); everything is drawn from ``rng``.
    """
    from fastvqa.retrieval import build_options, mine_distractors
    from fastvqa.retrieval.options import Recipe

    mc = [q for q in questions if q["kind"] in N_OPTIONS]
    if not mc:
        return
    texts, answers = [q["text"] for q in mc], [q["answer"] for q in mc]
    similar = mine_distractors(texts, answers, texts, answers, k=3, encoder="tfidf")
    recipe = Recipe((("other_time", 2), ("similar", 1)), fallback=("similar", "vocab"))
    for kind, n_options in N_OPTIONS.items():
        items = [(q, s) for q, s in zip(mc, similar) if q["kind"] == kind]
        if not items:
            continue
        pools = [_pools(q, scenes[q["video"]], s) for q, s in items]
        built = build_options([q["answer"] for q, _ in items], pools, recipe,
                              n_options=n_options, seed=int(rng.integers(2**31)))
        for (q, _), opts, ans, src in zip(items, built.options, built.answer, built.sources):
            q["options"], q["answer_index"], q["option_sources"] = opts, int(ans), src
