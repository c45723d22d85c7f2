# SPDX-License-Identifier: Apache-2.0
"""DVD-style diagnostic video dialogues from CATER-format scene graphs
(Le et al., ACL 2021; ``docs/papers/dvd.md`` §2-§3).

- :mod:`~fastvqa.generate.dvd.scene`: the scene-graph model, the CATER scene
  JSON loader/writer and :func:`synthetic_scene`;
- :mod:`~fastvqa.generate.dvd.intervals`: events, atomic and compositional
  periods, containment, the spatial rule;
- :mod:`~fastvqa.generate.dvd.executor`: DVD's functional modules and
  :func:`execute`;
- :mod:`~fastvqa.generate.dvd.templates`: the 26 question templates as data;
- :mod:`~fastvqa.generate.dvd.dialogue`: :class:`DialogueGenerator` /
  :func:`generate_dialogues`, 10-turn dialogues with cross-turn relations,
  balancing and filters, written in the released DVD JSON layout
  (:func:`fastvqa.data.load_dvd` reads it); it drives
  :mod:`~fastvqa.generate.dvd.candidates` (drafting one candidate turn),
  :mod:`~fastvqa.generate.dvd.filters` (the acceptance filters: answer
  balancing, redundancy, dependencies), :mod:`~fastvqa.generate.dvd.render`
  (question text and the JSON layout) over
  :mod:`~fastvqa.generate.dvd.state` (the dialogue being drafted);
- :mod:`~fastvqa.generate.dvd.history`: the dialogue state a written turn's
  cross-turn modules read (:func:`turn_state`);
- :mod:`~fastvqa.generate.dvd.cli`: ``fastvqa generate dvd``.

Every name below is imported on first use.
"""

from __future__ import annotations

from fastvqa._lazy import lazy_exports

_EXPORTS = {
    # scene.py
    "Movement": "scene", "SceneObject": "scene", "Scene": "scene",
    "load_cater_scene": "scene", "scene_from_dict": "scene", "scene_to_dict": "scene",
    "synthetic_scene": "scene",
    # intervals.py
    "Event": "intervals", "Containment": "intervals", "events": "intervals",
    "containment_periods": "intervals", "atomic_periods": "intervals",
    "compositional_periods": "intervals", "period_frames": "intervals",
    "period_to_json": "intervals", "spatial_relation": "intervals",
    "relative_length": "intervals", "active_parts": "intervals", "actions_in": "intervals",
    "is_static": "intervals", "contained_in": "intervals",
    # executor.py
    "MODULES": "executor", "PAPER_MODULES": "executor", "ModuleSpec": "executor",
    "ProgramError": "executor", "DialogueState": "executor", "execute": "executor",
    "with_outputs": "executor", "to_answer": "executor", "answer": "executor",
    # templates.py
    "Template": "templates", "TEMPLATES": "templates", "TEMPLATES_BY_NAME": "templates",
    "expand_program": "templates",
    # dialogue.py
    "DialogueGenerator": "dialogue", "GenerationSummary": "dialogue",
    "generate_dialogues": "dialogue", "shard_scenes": "dialogue", "scene_seed": "dialogue",
    "GenerationResult": "dialogue",
    # filters.py
    "passes_dependency_filter": "filters", "AnswerBalancer": "filters",
    "REJECTION_REASONS": "filters", "Fact": "filters", "is_redundant": "filters",
    # render.py
    "dialogues_to_json": "render", "write_dialogues": "render",
    # history.py
    "turn_state": "history", "singled_out": "history", "counted_group": "history",
}

__getattr__, __dir__ = lazy_exports(
    __name__, _EXPORTS,
    submodules=("scene", "intervals", "executor", "templates", "dialogue", "candidates",
                "filters", "render", "state", "history", "cli"))

__all__ = sorted(_EXPORTS)
