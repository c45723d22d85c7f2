# SPDX-License-Identifier: Apache-2.0
"""A prompt as data: its messages and where its words come from.

Every prompt a fastvqa pipeline sends (DeVi's in :mod:`fastvqa.devi.prompts`,
the question generators' in :mod:`fastvqa.generate.events`) is a
:class:`Prompt`, so that a run can record which words were the paper's and
which fastvqa added.
"""

from __future__ import annotations

from dataclasses import dataclass

#: ``user_source`` of a template fastvqa wrote (the usual case for templates)
OURS = "fastvqa (the paper does not give this prompt)"


@dataclass(frozen=True)
class Prompt:
    """One prompt: a system message and a user message template.

    ``system``: the instruction (the paper's words where it gives them);
    ``user``: a :meth:`str.format` template whose fields the pipeline fills;
    ``source``: where ``system`` comes from; ``user_source``: where the user
    template comes from; ``notes``: what was changed or added and why.

    >>> p = Prompt("caption", "You describe videos.", "Describe {what}.", source="fastvqa")
    >>> p.messages(what="the first scene")  # doctest: +NORMALIZE_WHITESPACE
    [{'role': 'system', 'content': 'You describe videos.'},
     {'role': 'user', 'content': 'Describe the first scene.'}]
    """

    name: str
    system: str
    user: str
    source: str
    user_source: str = OURS
    notes: str = ""

    def messages(self, **fields) -> list:
        """``[{"role": "system", ...}, {"role": "user", ...}]`` with ``fields`` filled in."""
        return [{"role": "system", "content": self.system},
                {"role": "user", "content": self.user.format(**fields)}]


# Prompts for a vision-language model shown the frames themselves
# (fastvqa.llm.vision.ChatAnswerer); the frames come first in the user
# message, each after a "Frame k at t s:" line (fastvqa.llm.images.frames_content).

_SEES = ("You answer questions about a video from its frames. Each frame is shown after a line "
         "giving its time in the video, in seconds. ")

VLM_ANSWER = Prompt(
    name="vlm_answer",
    system=(_SEES + "Choose the one option that answers the question, and give the time span, "
            "in seconds, of the frames that show the answer."),
    user=("Question: {question}\nOptions:\n{options}\n\n"
          "Reply in two lines, the letter of the option and the start and end of the span in "
          "seconds, in this form:\nAnswer: B\nSpan: 3.5 s - 7.0 s"),
    source="fastvqa",
    notes=("Multiple choice with grounding. The reply format is read by "
           "fastvqa.parse.parse_response (fastvqa.devi.pipeline.parse_answer): 'Answer: B' by "
           "its answer_phrase rule, '3.5 s - 7.0 s' by unit_range (a span needs its unit)."),
)

VLM_OPEN = Prompt(
    name="vlm_open",
    system=(_SEES + "Answer the question in a few words, and give the time span, in seconds, "
            "of the frames that show the answer."),
    user=("Question: {question}\n\n"
          "Reply in two lines, the answer and the start and end of the span in seconds, in this "
          "form:\nAnswer: the man opens the door\nSpan: 3.5 s - 7.0 s"),
    source="fastvqa",
    notes=("Open questions (WildQA): a free-text answer line and an evidence span line; the "
           "span is read by fastvqa.parse.parse_spans, the answer is the text after 'Answer:'."),
)

JUDGE = Prompt(
    name="judge",
    system=("You read a model's reply to a multiple-choice question and say which option it "
            "chose. You do not answer the question yourself."),
    user=("Question: {question}\nOptions:\n{options}\n\nThe model's reply:\n{reply}\n\n"
          "Which option did the reply choose? Reply with its letter alone, or with 'none' "
          "when the reply chose no option or several."),
    source="fastvqa",
    notes=("The answer extractor of `fastvqa run --judge-url`, used only for replies the "
           "rules of fastvqa.parse cannot read, as VLMEvalKit and lmms-eval use a judge model "
           "(off by default; its extractions are counted apart from rule parses)."),
)
