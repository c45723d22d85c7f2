# SPDX-License-Identifier: Apache-2.0
"""DeVi's prompts, as data, each with where it comes from.

The DeVE-QA paper (``docs/papers/deveqa.md`` §4) prints the captioning
prompt (Table 11), the contextualisation prompt (Table 12) and the
verification prompt (Table 14) in full; they are used verbatim below and
marked ``DeVE-QA paper``. The event-grounded QA prompt (Table 13) has a
caption but no body in the paper; its main text quotes one sentence of it,
which :data:`ANSWER` uses, completed by fastvqa. The synopsis prompt is not
given at all. Every sentence fastvqa adds (the layout of the captions,
options and events, and what shape the reply should have, so that replies
can be parsed) is in a field marked ``fastvqa``.

The paper also curates in-context examples for the contextualisation
prompt; they are not published, so none are used.
"""

from __future__ import annotations

from typing import Optional

from fastvqa.llm.prompts import OURS, Prompt

PAPER = "DeVE-QA paper (arXiv 2409.04388)"


CAPTION = Prompt(
    name="caption",
    system=("You are a helpful expert in dense event video analysis. Given multiple clips "
            "{video.clips} of different temporal length from a video, please provide a caption "
            "for each clip, focusing on capturing all the dense events and activities occurring "
            "within it. Your caption should succinctly describe the sequence of actions, "
            "highlighting key movements, interactions, and significant moments. Be detailed and "
            "descriptive, providing context for the viewer to understand the intensity and "
            "intricacy of the events unfolding."),
    user="Clip from {start:.1f} s to {end:.1f} s ({frames} frames).",
    source=f"{PAPER}, Table 11 (Appendix B), verbatim",
    notes=("For a vision-language captioner behind a chat API. The paper designs one prompt "
           "per length level but prints only this one; '{video.clips}' is the paper's own "
           "placeholder, kept as text. The deterministic demo captioner reads frames, not "
           "prompts."),
)

CONTEXTUALISE = Prompt(
    name="contextualise",
    system=("You are a highly intelligent language agent in improving the quality of video "
            "captions. Given a set of captions (each representing a different time segment of a "
            "video) and a question of a video, you are required to refine each caption by "
            "incorporating contextual information from all the other captions and question via "
            "analyzing the overall narrative, identifying relevant context and incorporate "
            "context with coherence."),
    user=("Captions (number, scale, time segment, caption):\n{captions}\n\n"
          "Question: {question}\n\n"
          "Reply with one line per caption, '(number) refined caption', in the same order."),
    source=f"{PAPER}, Table 12, verbatim",
    notes=("The user template is fastvqa's. The synopsis is a call of its own "
           "(:data:`SYNOPSIS`), after this one, as the paper's pipeline orders them. The "
           "paper's curated in-context examples are not published."),
)

SYNOPSIS = Prompt(
    name="synopsis",
    system=("You are a helpful expert in dense event video analysis. Articulate all the events "
            "of a video, given as captions of its time segments, into a synopsis which serves "
            "as a global event for the entire video."),
    user=("Captions (number, scale, time segment, caption):\n{captions}\n\n"
          "Question: {question}\n\n"
          "Reply with one line 'Synopsis: ...' that articulates all the events above, with their "
          "times in seconds."),
    source=(f"{PAPER}, main text (temporal event memory): 'we prompt GPT-4o to articulate all "
            "events into a synopsis e_y which serves as a global event for the entire video'; "
            "the prompt itself is not printed"),
    notes=("The system text restates the paper's sentence; the layout and the reply format "
           "are fastvqa's. It reads the refined captions of the contextualisation call, so the "
           "synopsis is per (video, question) like them."),
)

ANSWER = Prompt(
    name="answer",
    system=("You are a helpful expert in dense event video analysis. Select a correct answer "
            "from the options to the question based on the events, and also output the time "
            "span [t_s, t_e] of the event that carries the correct answer."),
    user=("Events:\n{events}\n\nQuestion: {question}\nOptions:\n{options}\n\n"
          "Reply as 'The answer is (X).' followed by the time span in seconds, e.g. "
          "'The supporting event is at 12.0s - 15.5s.'"),
    source=(f"{PAPER}, main text (event-grounded QA): one quoted sentence, '... select a "
            "correct answer from {C} to the question {q} based on the events {E} and also "
            "output the time span [t_s, t_e] of the event that carries the correct answer "
            "...'; Table 13, the full prompt, has no body in the paper"),
    notes=("The opening sentence and the reply format are fastvqa's; the quoted sentence is "
           "the paper's with its placeholders moved into the user message."),
)

ANSWER_OPEN = Prompt(
    name="answer_open",
    system=("You are a helpful expert in dense event video analysis. Answer the question in a "
            "short phrase based on the events, and also output the time span [t_s, t_e] of "
            "the event that carries the answer."),
    user=("Events:\n{events}\n\nQuestion: {question}\n\n"
          "Reply as 'Answer: <a short phrase>' followed by the time span in seconds, e.g. "
          "'The supporting event is at 12.0s - 15.5s.'"),
    source="fastvqa (DeVi's answer prompt for open questions, such as WildQA's)",
    notes=("The paper asks only multiple-choice questions; this is its answer sentence "
           "without options, in the same reply format."),
)

VERIFY = Prompt(
    name="verify",
    system=("You are a helpful expert in dense event video analysis. You have been provided "
            "with video descriptions and one multiple-choice question about the video and gave "
            "out your answer and the minimum frame(s) interval to support. However, after our "
            "professional check, we consider your answer inconsistent because the "
            "self-similarity between your previous answer {previous_answer} and "
            "{supportive_frames} is only {score}. On this premise, I want you to answer this "
            "question again: {qa_prompt} and judge whether your answer is consistent with the "
            "previous one. If no, analyze the inconsistency in detail. If yes, explain how the "
            "answer relates to the video frames."),
    user=("{qa_prompt}\n\nYour previous answer: {previous_answer}\n"
          "Supportive frames: {supportive_frames}\nSelf-consistency score: {score}"),
    source=f"{PAPER}, Table 14, verbatim (placeholders renamed)",
    notes=("The paper's placeholders {Previous Answer}, {Supportive Frames}, {Self Consistency "
           "Score} and {Prompts for Event-Grounded QA} are filled by the pipeline; since the "
           "QA prompt is long it is given in the user message and the system message names "
           "it 'the question below'. The user layout is fastvqa's."),
)

VERIFY_OPEN = Prompt(
    name="verify_open",
    system=VERIFY.system.replace("one multiple-choice question", "one open-ended question"),
    user=VERIFY.user,
    source=f"{PAPER}, Table 14, for an open question (fastvqa)",
    notes="Table 14 with 'one open-ended question' for 'one multiple-choice question'.",
)

#: every prompt by name
PROMPTS = {p.name: p for p in (CAPTION, CONTEXTUALISE, ANSWER, ANSWER_OPEN, VERIFY,
                               VERIFY_OPEN)}


def verify_messages(qa_prompt: str, previous_answer: str, supportive_frames: str,
                    score: str, prompt: Optional[Prompt] = None) -> list:
    """:data:`VERIFY` filled in: the system message gets the previous answer,
    frames and score; the QA prompt is named there ("the question below")
    and given in full in the user message."""
    p = prompt or VERIFY
    system = p.system.format(previous_answer=previous_answer, supportive_frames=supportive_frames,
                             score=score, qa_prompt="(the question below)")
    user = p.user.format(qa_prompt=qa_prompt, previous_answer=previous_answer,
                         supportive_frames=supportive_frames, score=score)
    return [{"role": "system", "content": system}, {"role": "user", "content": user}]
