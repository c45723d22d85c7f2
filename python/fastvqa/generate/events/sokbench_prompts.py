# SPDX-License-Identifier: Apache-2.0
"""The prompts of fastvqa's SOK-Bench builder, as data (docs/papers/sokbench.md
§2.1-§2.4), each marked with where its words come from.

Every prompt is a :class:`fastvqa.llm.prompts.Prompt`: ``source`` says where
the system text comes from, ``user_source`` where the user template comes
from, ``notes`` what fastvqa changed or added. "The paper" is SOK-Bench
(Wang, Wu et al., CVPR 2024, arXiv 2405.09713); "F4" is its Figure 4, whose
prompt excerpts elide parts with "…" (left out here, never guessed).

- :data:`SITUATION`: timed steps -> JSON lists of actions and objects (the
  paper describes the step, without printing its prompt);
- :data:`VISUAL_OBJECTS` and :data:`ATTRIBUTE`: the vision-language model's
  keyframe prompts (objects and spatial relations: fastvqa's words;
  attributes: the paper's, verbatim);
- :data:`GKG_SYSTEM`, :data:`GKG_PROMPTS`, :data:`GKG_EXAMPLES`: general
  knowledge, the paper's triplet <examples, goal, output format>;
- :data:`SCKG_SYSTEM`, :data:`SCKG_GOALS`, :data:`SCKG_FORMAT`: situated
  commonsense knowledge, the paper's five parts <video content, general
  knowledge, examples, goal, format>;
- :data:`QA_SYSTEM`, :data:`QA_USER`, :data:`QA_EXAMPLES`: the question
  stage, the paper's top-down parts <video content, integrated graph, QA
  examples, goal, format>.
"""

from __future__ import annotations

from fastvqa.llm.prompts import OURS, Prompt

PAPER = "SOK-Bench paper (arXiv 2405.09713)"

# ------------------------------------------------------------ the situation

SITUATION = Prompt(
    name="sokbench_situation",
    system=("You convert timed step descriptions of a video into organized lists of actions and "
            "objects, along with their corresponding timestamps."),
    user=("The video is {duration:g} seconds long. Its steps:\n{steps}\n\n"
          'Reply with JSON only: {{"actions": [{{"start": seconds, "end": seconds, '
          '"action": "the step", "objects": ["object", ...]}}, ...]}}, one entry per '
          "step, objects as short lower-case names."),
    source=f"fastvqa, after the paper's §3.2 sentence 'The LLMs systematically convert the "
           "sentences into organized lists of objects and actions, along with their "
           "corresponding timestamps' (its prompt is not printed)",
    notes="The JSON layout is fastvqa's, so that every entry and span can be validated.",
)

# ----------------------------------------------------- the keyframes (vision)

VISUAL_OBJECTS = Prompt(
    name="sokbench_visual_objects",
    system="You find the objects an image shows and how they are placed relative to each other.",
    user=("The image is a frame of the step '{step}' of a video. Objects the step names: "
          "{named}.\nList the objects you can see in the image (short lower-case names; use the "
          "step's name for an object it names) and the spatial relations between them.\n"
          'Reply with JSON only: {{"objects": ["name", ...], "relations": '
          '[["name", "relation", "name"], ...]}}'),
    source=OURS,
    notes=("The paper's BLIP2 recognises objects in keyframes (§3.2) and MiniGPT4 gives spatial "
           "relations under 'a designated goal prompt' that is not printed: one fastvqa prompt "
           "asks a vision-language model for both. The step's own object names are given so "
           "that the objects seen join the captions' objects."),
)

#: The paper's attribute prompt (§3.2), verbatim; ``{object}`` stands where
#: the paper's example has "tofu". Sent with one keyframe as the image and no
#: system message (the paper shows none).
ATTRIBUTE = Prompt(
    name="sokbench_attribute",
    system="",
    user=("Please describe the {object} in the image in terms of size, shape, color, and "
          "texture in one short sentence within 10 words."),
    source="none: the paper shows no system text for its vision model",
    user_source=f"{PAPER}, §3.2, verbatim ('tofu' made the field {{object}})",
    notes="The reply's 10-word limit is the paper's and is checked.",
)

# ------------------------------------------------------ general knowledge

#: F4's system text, verbatim (``{entity}`` where F4 has "cornstarch").
GKG_SYSTEM = "You are a helpful, pattern-following assistant. You know a lot about {entity}."

#: The goal and output format of each general-knowledge aspect (one user
#: message each): ``usage`` is F4's verbatim (its "…" elisions left out);
#: the other aspects follow its pattern in fastvqa's words (F4 lists
#: "Physical, chemical, cultural, usage, …" for objects and "Things related
#: to, general purpose, ways of …" for actions; the released example holds
#: "interact with other object" too).
GKG_PROMPTS = {
    "usage": Prompt(
        name="sokbench_gkg_usage", system=GKG_SYSTEM,
        user=("Please tell me 5 usages of {entity}. Format: The answer should follow format "
              "'<the thing applied on>: <how to apply>'. The answer is a list in JSON."),
        source=f"{PAPER}, Fig. 4, verbatim",
        user_source=f"{PAPER}, Fig. 4, verbatim (its '…' elisions left out)"),
    "physical": Prompt(
        name="sokbench_gkg_physical", system=GKG_SYSTEM,
        user=("Please tell me the physical properties of {entity}. Format: The answer should "
              "follow format '<property>: <value>', with properties such as color, shape, size, "
              "state and texture. The answer is an object in JSON."),
        source=f"{PAPER}, Fig. 4, verbatim",
        notes="fastvqa's goal and format, patterned on the paper's usage prompt"),
    "interact": Prompt(
        name="sokbench_gkg_interact", system=GKG_SYSTEM,
        user=("Please tell me 5 things that {entity} interacts with. Format: The answer should "
              "follow format '<the other thing>: <how they interact>'. The answer is a list in "
              "JSON."),
        source=f"{PAPER}, Fig. 4, verbatim",
        notes=("fastvqa's goal and format for the released data's 'interact with other object' "
               "aspect, patterned on the paper's usage prompt")),
    "action": Prompt(
        name="sokbench_gkg_action", system=GKG_SYSTEM,
        user=("Please tell me the things related to, the general purpose of, and the ways of the "
              "action '{entity}'. Format: The answer is an object in JSON with the keys 'things "
              "related', 'purpose' and 'ways of', each a short phrase within 10 words."),
        source=f"{PAPER}, Fig. 4, verbatim",
        notes=("fastvqa's goal and format for F4's action aspects, with the keys of the released "
               "example's actions")),
}

#: The demonstration of each aspect (the paper's examples part), given as a
#: prior dialogue turn as in F4: ``(entity, reply)``. ``usage`` is F4's water
#: example (written with JSON's double quotes); the others are fastvqa's.
GKG_EXAMPLES = {
    "usage": ("water", '[{"human": "hydration"}, {"dirt": "cleaning"}, {"food": "cooking"}, '
                       '{"crop": "irrigation"}, {"electricity": "power generation"}]'),
    "physical": ("water", '{"color": "colorless", "state": "liquid", "odor": "odorless", '
                          '"texture": "wet and runny"}'),
    "interact": ("water", '[{"salt": "dissolving"}, {"flour": "forming a dough with"}, '
                          '{"oil": "not mixing with"}, {"rice": "cooking"}, '
                          '{"sugar": "dissolving"}]'),
    "action": ("boil water", '{"things related": "pot, stove, water", "purpose": "to heat water '
                             'until it bubbles", "ways of": "heating a kettle or a pot on a '
                             'stove"}'),
}
#: where each example of :data:`GKG_EXAMPLES` comes from.
GKG_EXAMPLE_SOURCES = {"usage": f"{PAPER}, Fig. 4", "physical": OURS, "interact": OURS,
                       "action": OURS}

# ----------------------------------------- situated commonsense knowledge

#: F4's system text with its two elided parts filled in by fastvqa: the video
#: content (the timed steps) and the general knowledge of the video's
#: objects. F4's "introducing 6 cooking steps of cooking mapo tofu in kitchen"
#: becomes "introducing {n_steps} steps" (captions name no dish).
SCKG_SYSTEM = Prompt(
    name="sokbench_sckg",
    system=("You are a helpful, pattern-following assistant. As a commonsense-driven assistant, "
            "your task is to analyze a video (length: {length:g} seconds) that showcases a "
            "person introducing {n_steps} steps. The steps are described in a specific format "
            "'<start>s - <end>s: <step>':\n{steps}\n"
            "The background knowledge of the objects appeared in the video is:\n{knowledge}"),
    user="{goal} {format}",
    source=(f"{PAPER}, Fig. 4, verbatim but for the dish ('of cooking mapo tofu in kitchen' left "
            "out) and the parts F4 elides (the step format line, fastvqa's)"),
    user_source="the goal (SCKG_GOALS) and the paper's format (SCKG_FORMAT)",
    notes=("Few-Shot Self-Prompting: earlier generated answers about the video's other entities "
           "are given as prior dialogue turns (the examples part), two iterations. The "
           "knowledge part lists the objects' general knowledge, then the steps' (fastvqa adds "
           "the steps', which the purpose and possibility perspectives rest on)."),
)

#: The goal of each situated perspective. ``what_if_no_obj`` is F4's words;
#: the rest are fastvqa's (the paper names the perspectives "counterfactual
#: scenarios, understanding the purpose of an action, and recognizing an
#: object's contribution"; ``interaction`` and ``possibility`` are fastvqa's
#: reading of the types OI and APO). ``{a}``/``{b}``: a pair's objects.
SCKG_GOALS = {
    "what_if_no_obj": "What would happen if the person did not use {entity}?",
    "contribution": "What does {entity} contribute to the result in this video?",
    "interaction": "What do {a} and {b} do together in this video?",
    "purpose": "What is the purpose of the step '{entity}'?",
    "what_if_no_act": "What would happen if the person skipped the step '{entity}'?",
    "possibility": "In what other way could the person have done the step '{entity}'?",
}
SCKG_GOAL_SOURCES = {k: (f"{PAPER}, Fig. 4, verbatim" if k == "what_if_no_obj" else OURS)
                     for k in SCKG_GOALS}
#: F4's format clause, verbatim (its "…" left out).
SCKG_FORMAT = "Format: The answer should be short and within 20 words."
#: fastvqa's additions to the format (a contribution fills "What did the
#: person use to <contribution>?").
SCKG_FORMAT_EXTRA = {"contribution": " Start with a verb, as in 'thicken the sauce'."}

# ------------------------------------------------------ the question stage

#: The paper's top-down prompt parts (§3.5: "video content, integrated graph,
#: QA examples, generation goal, output format"); the paper prints no words
#: for it, so the wording is fastvqa's. Video content and the graph go in the
#: system message, examples, goal and format in the user message, in order.
QA_SYSTEM = Prompt(
    name="sokbench_question",
    system=("You are a helpful, pattern-following assistant. You write questions about a video "
            "that need both what the video shows and commonsense knowledge.\n"
            "Video content (length: {length:g} seconds; steps '<start>s - <end>s: <step>'):\n"
            "{steps}\n"
            "Integrated graph of the video (situated, general and situated commonsense "
            "knowledge; one edge '<head> | <relation> | <tail>' a line):\n{graph}"),
    user=("Examples of questions and answers:\n{examples}\n\n"
          "Goal: {goal}\n\n"
          'Format: Reply with JSON only: {{"question": "..."}}. The question is one sentence '
          "ending with '?', within {max_words} words{forbid}."),
    source=OURS,
    user_source=OURS,
    notes=("The five parts are the paper's (§3.5, its top-down generation); their words are "
           "fastvqa's. The goal fixes the type's hops and the correct answer (an edge of the "
           "graph), so that answers and distractors stay in one knowledge category."),
)
QA_USER = QA_SYSTEM.user

#: The goal part for each type (fastvqa's words for the paper's hops,
#: §3.5.1: an identification hop through the situated or general graph,
#: then the asked situated-commonsense edge). ``{about}``: the object, the
#: pair ("a and b") or the step. The goal then lists the edges the hops rest
#: on and the correct answer.
QA_GOALS = {
    "OCT+ST": ("First identify the object through what the video shows of it (the edges "
               "below), without naming it; then ask what would happen if the person did not "
               "use it."),
    "OCB+ST": ("First identify the object through what the video shows of it (the edges "
               "below), without naming it; then ask what it contributes to the result."),
    "OCT+GK": ("First identify the object through its general knowledge (the edges below), "
               "without naming it; then ask what would happen if the person did not use it."),
    "OCB+GK": ("First identify the object through its general knowledge (the edges below), "
               "without naming it; then ask what it contributes to the result."),
    "OCT": "Ask what would happen if the person did not use the {about}.",
    "OCB": ("Ask which object the person used for what it contributes (the edges below), "
            "without naming the object: the answer is the object."),
    "OI": "Ask what the {about} do together in this video.",
    "APU+ST": ("Identify the step through the step right before it (the edges below), without "
               "quoting it; then ask its purpose."),
    "ACT+ST": ("Identify the step through the step right after it (the edges below), without "
               "quoting it; then ask what would happen if the person skipped it."),
    "APU": "Ask the purpose of the step '{about}'.",
    "ACT": "Ask what would happen if the person skipped the step '{about}'.",
    "APO": "Ask in what other way the person could have done the step '{about}'.",
}
QA_GOAL_TEMPLATE = ("Write one question of type {key} ({name}). {goal}\n"
                    "Edges of the graph it rests on:\n{edges}\n"
                    "The correct answer is: {answer}")

#: One example question and answer per type, ``key -> (question, answer,
#: source)``. OCT+ST fills the paper's template ("What would happen if the
#: person did not use the <obj attribute> and <obj-obj relation>?", §3.5.1)
#: with the paper's clues and answer (§3.4); OCB is the paper's §4.1 example
#: verbatim; APU+ST words the paper's Fig. 5 example; the rest are fastvqa's,
#: set in the paper's mapo-tofu video.
QA_EXAMPLES = {
    "OCT+ST": ("What would happen if the person did not use the white substance dissolved in "
               "water in glass?",
               "The sauce would be less thick, and the dish would have a thinner consistency.",
               f"{PAPER}: §3.5.1 template with its §3.4 clues and answer"),
    "OCB+ST": ("What does the soft white cubes cut on the board contribute to the dish?",
               "Give the dish a soft protein base.", OURS),
    "OCT+GK": ("What would happen if the person did not use the ingredient that can thicken "
               "sauces?", "The sauce would stay thin and watery.", OURS),
    "OCB+GK": ("What does the ingredient used for seasoning food contribute to the dish?",
               "Season the tofu and the sauce.", OURS),
    "OCT": ("What would happen if the person did not use ground pork?",
            "The dish would lack meaty flavor, texture, and richness, resulting in a vegetarian "
            "version of mapo tofu.", f"{PAPER}, §3.4 (its self-prompted answer)"),
    "OCB": ("What did the person use to provide a sticky base to hold ingredients for "
            "California Roll?", "Rice", f"{PAPER}, §4.1, verbatim"),
    "OI": ("What do the cornstarch and the water do together in this video?",
           "They form a paste that thickens the sauce.", OURS),
    "APU+ST": ("What is the purpose of the step right after pouring oil?",
               "To enhance the flavor.", f"{PAPER}, Fig. 5 caption, worded by fastvqa"),
    "ACT+ST": ("What would happen if the person skipped the step right before adding the tofu?",
               "The sauce would be thin and would not coat the tofu.", OURS),
    "APU": ("What is the purpose of the step 'cut tofu into square pieces'?",
            "To make pieces that cook evenly and soak up the sauce.", OURS),
    "ACT": ("What would happen if the person skipped the step 'cut tofu into square pieces'?",
            "The tofu would stay in one block and cook unevenly.", OURS),
    "APO": ("In what other way could the person have done the step 'cut tofu into square "
            "pieces'?", "Tear the tofu into rough chunks by hand.", OURS),
}


__all__ = ["ATTRIBUTE", "GKG_EXAMPLES", "GKG_EXAMPLE_SOURCES", "GKG_PROMPTS", "GKG_SYSTEM",
           "PAPER", "QA_EXAMPLES", "QA_GOALS", "QA_GOAL_TEMPLATE", "QA_SYSTEM", "QA_USER",
           "SCKG_FORMAT", "SCKG_FORMAT_EXTRA", "SCKG_GOALS", "SCKG_GOAL_SOURCES", "SCKG_SYSTEM",
           "SITUATION", "VISUAL_OBJECTS"]
