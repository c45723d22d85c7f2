# SPDX-License-Identifier: Apache-2.0
"""``fastvqa.parse`` on a table of real-looking model responses.

Every expected value is written by hand from the rules in the module's
docstrings (the option a human reads in the response, the seconds a human
computes from the timestamps); each case is checked exactly: index or spans,
``how`` and ``error``. The responses imitate what chat LLMs and video-LLMs
emit: chatty preambles, markdown, JSON (bare and fenced), timestamps with
hours and milliseconds, the "20.8 - 30.0 seconds" strings temporal-grounding
evaluations (lmms-eval's Charades-STA / TimeChat parsers) read, refusals and
ambiguous answers.
"""

from __future__ import annotations

import pytest

from fastvqa.errors import InputError, InputTypeError
from fastvqa.parse import OptionParse, SpanParse, parse_option, parse_response, parse_spans

# NExT-QA-style options (five, A-E).
OPTS = ["pick up the ball", "wave his hand", "run away", "sit down", "laugh"]
# Options where one is inside another, and counting options.
NESTED = ["red", "a red car", "blue", "green"]
COUNTS = ["1", "2", "3", "4"]
NO_OPTION = "no option found in the response"
DECLINES = "the response declines to choose an option"

# (response, options, keywords, (index, how, error))
OPTION_CASES = [
    # bare labels
    ("B", OPTS, {}, (1, "whole_label", None)),
    ("(B)", OPTS, {}, (1, "whole_label", None)),
    ("B.", OPTS, {}, (1, "whole_label", None)),
    ("(b)", OPTS, {}, (1, "whole_label", None)),
    ("e", OPTS, {}, (4, "whole_label", None)),
    (" [C] ", OPTS, {}, (2, "whole_label", None)),
    ("D)", OPTS, {}, (3, "whole_label", None)),
    ("**B**", OPTS, {}, (1, "whole_label", None)),
    ("`A`", OPTS, {}, (0, "whole_label", None)),
    # numbers: 1-based by default, 0-based on request
    ("2", OPTS, {}, (1, "whole_label", None)),
    ("2", OPTS, {"index_base": 0}, (2, "whole_label", None)),
    ("0", OPTS, {"index_base": 0}, (0, "whole_label", None)),
    ("0", OPTS, {}, (None, "", "option number 0 is out of range for 5 options (1-based)")),
    ("5.", OPTS, {}, (4, "whole_label", None)),
    ("(3)", OPTS, {}, (2, "whole_label", None)),
    ("Answer: 7", OPTS, {}, (None, "", "option number 7 is out of range for 5 options (1-based)")),
    ("Answer: 5", OPTS, {"index_base": 0},
     (None, "", "option number 5 is out of range for 5 options (0-based)")),
    # answer phrases
    ("Answer: B", OPTS, {}, (1, "answer_phrase", None)),
    ("The answer is (B)", OPTS, {}, (1, "answer_phrase", None)),
    ("The answer is (B).", OPTS, {}, (1, "answer_phrase", None)),
    ("**Answer:** C", OPTS, {}, (2, "answer_phrase", None)),
    ("**Final Answer:** (D) sit down", OPTS, {}, (3, "answer_phrase", None)),
    ("Based on the video, the man first looks around and then sits. The answer is D.", OPTS, {},
     (3, "answer_phrase", None)),
    ("Sure! Let me think step by step.\n1. The boy holds a ball.\n2. He throws it.\n"
     "Final answer: A", OPTS, {}, (0, "answer_phrase", None)),
    ("The correct option is 3.", OPTS, {}, (2, "answer_phrase", None)),
    ("The correct answer is option E.", OPTS, {}, (4, "answer_phrase", None)),
    ("The best answer would be (c) run away", OPTS, {}, (2, "answer_phrase", None)),
    ("I choose B because he raises his arm.", OPTS, {}, (1, "answer_phrase", None)),
    ("I would go with option d.", OPTS, {}, (3, "answer_phrase", None)),
    ("answer: e", OPTS, {}, (4, "answer_phrase", None)),
    ("The answer is a.", OPTS, {}, (0, "answer_phrase", None)),
    ("The answer is a man who waves.", OPTS, {}, (None, "", NO_OPTION)),
    ("Answer - A", OPTS, {}, (0, "answer_phrase", None)),
    ("Option A is wrong because he never touches the ball. The correct option is C.", OPTS, {},
     (2, "answer_phrase", None)),
    ("The answer is B, not A.", OPTS, {}, (1, "answer_phrase", None)),
    ("ANSWER: (E)", OPTS, {}, (4, "answer_phrase", None)),
    ("The answer is 2", OPTS, {"index_base": 0}, (2, "answer_phrase", None)),
    # ambiguous: never a guess
    ("A or B", OPTS, {}, (None, "", "ambiguous: label_list names options A, B")),
    ("B/C", OPTS, {}, (None, "", "ambiguous: label_list names options B, C")),
    ("The answer is B or C.", OPTS, {}, (None, "", "ambiguous: answer_phrase names options B, C")),
    ("Answer: A and D", OPTS, {}, (None, "", "ambiguous: answer_phrase names options A, D")),
    ("The answer is A. Actually, the answer is B.", OPTS, {},
     (None, "", "ambiguous: answer_phrase names options A, B")),
    ("Option A and option C both seem plausible.", OPTS, {},
     (None, "", "ambiguous: option_keyword names options A, C")),
    ("He could (A) pick up the ball or (B) wave his hand.", OPTS, {},
     (None, "", "ambiguous: bracket_label names options A, B")),
    ("He picks up the ball and then he starts to laugh.", OPTS, {}, (4, "option_text", None)),
    ("He may pick up the ball and then laugh.", OPTS, {},
     (None, "", "ambiguous: option_text names options A, E")),
    # refusals and nothing
    ("I cannot determine the answer from the video.", OPTS, {}, (None, "", DECLINES)),
    ("Sorry, I can't tell what happens after the man stands up.", OPTS, {}, (None, "", DECLINES)),
    ("There is not enough information to answer.", OPTS, {}, (None, "", DECLINES)),
    ("None of the options match what happens.", OPTS, {}, (None, "", DECLINES)),
    ("", OPTS, {}, (None, "", NO_OPTION)),
    ("The video shows a park on a sunny day.", OPTS, {}, (None, "", NO_OPTION)),
    ("I", OPTS, {}, (None, "", "letter I is beyond the 5 options (A-E)")),
    ("F", OPTS, {}, (None, "", "letter F is beyond the 5 options (A-E)")),
    ("The answer is a dog.", ["a cat", "a bird"], {}, (None, "", NO_OPTION)),
    # leading labels
    ("B. wave his hand", OPTS, {}, (1, "leading_label", None)),
    ("(C) run away, since he is scared", OPTS, {}, (2, "leading_label", None)),
    ("D) sit down", OPTS, {}, (3, "leading_label", None)),
    ("B, because he greets his friend.", OPTS, {}, (1, "leading_label", None)),
    ("[A] pick up the ball", OPTS, {}, (0, "leading_label", None)),
    ("2. wave his hand", OPTS, {}, (1, "leading_label", None)),
    # option keywords and bracketed capitals anywhere
    ("I think option b fits best.", OPTS, {}, (1, "option_keyword", None)),
    ("Looks like choice 4 to me.", OPTS, {}, (3, "option_keyword", None)),
    ("My pick: the man would (D), as he is tired.", OPTS, {}, (3, "bracket_label", None)),
    # option text
    ("wave his hand", OPTS, {}, (1, "option_text", None)),
    ("Wave his hand.", OPTS, {}, (1, "option_text", None)),
    ("He would most likely run away from the dog.", OPTS, {}, (2, "option_text", None)),
    ("a red car", NESTED, {}, (1, "option_text", None)),
    ("It is a red car parked outside.", NESTED, {}, (1, "option_text", None)),
    ("Green.", NESTED, {}, (3, "option_text", None)),
    ("red or blue", NESTED, {}, (None, "", "ambiguous: option_text names options A, C")),
    # the whole text is a label and an option's text: both readings must agree
    ("2", COUNTS, {}, (1, "whole_label", None)),
    ("2", COUNTS, {"index_base": 0},
     (None, "", "ambiguous: the response is label C and the text of option B")),
    ("There are 3 people.", COUNTS, {}, (2, "option_text", None)),
    # JSON, bare and fenced
    ('{"answer": "B"}', OPTS, {}, (1, "json", None)),
    ('{"answer": 2}', OPTS, {}, (1, "json", None)),
    ('{"answer": 2}', OPTS, {"index_base": 0}, (2, "json", None)),
    ('```json\n{"answer": "C", "reason": "he runs"}\n```', OPTS, {}, (2, "json", None)),
    ('Here is my answer:\n```json\n{"option": "(D)"}\n```', OPTS, {}, (3, "json", None)),
    ('{"answer": "sit down", "confidence": 0.8}', OPTS, {}, (3, "json", None)),
    ('Result: {"final_answer": "E"} (I am fairly sure)', OPTS, {}, (4, "json", None)),
    ('{"answer": "A or B"}', OPTS, {}, (None, "", "ambiguous: label_list names options A, B")),
    ('{"answer": 9}', OPTS, {}, (None, "", "option number 9 is out of range for 5 options (1-based)")),
    ('{"reason": "The answer is C"}', OPTS, {}, (2, "answer_phrase", None)),
    # reasoning models: only the <answer> content; never the <think> block
    ("<think>Maybe the answer is A, but he waves.</think>\nThe answer is B.", OPTS, {},
     (1, "answer_phrase", None)),
    ("<think>A? C?</think><answer>C</answer>", OPTS, {}, (2, "whole_label", None)),
    ("<think>The answer is A... no, it is B.", OPTS, {}, (None, "", NO_OPTION)),
    # options given as a count: labels only
    ("C", 4, {}, (2, "whole_label", None)),
    ("E", 4, {}, (None, "", "letter E is beyond the 4 options (A-D)")),
    ("run away", 5, {}, (None, "", NO_OPTION)),
]

# (response, keywords, (spans, how, error))
SPAN_CASES = [
    ("10.2s - 34.5s", {}, ([(10.2, 34.5)], "unit_range", None)),
    ("The event happens at 10.2s-34.5s.", {}, ([(10.2, 34.5)], "unit_range", None)),
    ("20.8 - 30.0 seconds", {}, ([(20.8, 30.0)], "unit_range", None)),
    ("A specific example is : 20.8 - 30.0 seconds", {}, ([(20.8, 30.0)], "unit_range", None)),
    ("12-15s", {}, ([(12.0, 15.0)], "unit_range", None)),
    ("10.2 seconds to 34.5 seconds", {}, ([(10.2, 34.5)], "unit_range", None)),
    ("It lasts 3 sec ~ 7.5 sec", {}, ([(3.0, 7.5)], "unit_range", None)),
    ("1 to 2 minutes into the video", {}, ([(60.0, 120.0)], "unit_range", None)),
    ("1500ms - 2500ms", {}, ([(1.5, 2.5)], "unit_range", None)),
    ("[10.2, 34.5]", {}, ([(10.2, 34.5)], "json", None)),
    ("The relevant moment is [10.2, 34.5].", {}, ([(10.2, 34.5)], "bracket_pair", None)),
    ("Evidence: (12s - 15s)", {}, ([(12.0, 15.0)], "bracket_pair", None)),
    ("00:01:18 to 00:01:23", {}, ([(78.0, 83.0)], "clock_range", None)),
    ("00:01:18.500 - 00:01:23.250", {}, ([(78.5, 83.25)], "clock_range", None)),
    ("00:01:18,500 --> 00:01:23,250", {}, ([(78.5, 83.25)], "clock_range", None)),
    ("1:05-1:20", {}, ([(65.0, 80.0)], "clock_range", None)),
    ("at 0:12-0:15", {}, ([(12.0, 15.0)], "clock_range", None)),
    ("1:02:03 - 1:02:10", {}, ([(3723.0, 3730.0)], "clock_range", None)),
    ("from 12 to 15 seconds", {}, ([(12.0, 15.0)], "from_to", None)),
    ("From 0:45 until 1:10 the dog runs.", {}, ([(45.0, 70.0)], "from_to", None)),
    ("from 3.5s to 9s", {}, ([(3.5, 9.0)], "from_to", None)),
    ("between 1:05 and 1:20", {}, ([(65.0, 80.0)], "between_and", None)),
    ("It happens between 4 and 8 seconds.", {}, ([(4.0, 8.0)], "between_and", None)),
    ("start: 3.0, end: 7.5", {}, ([(3.0, 7.5)], "start_end", None)),
    ("Start time: 00:01:18\nEnd time: 00:01:23", {}, ([(78.0, 83.0)], "start_end", None)),
    ("start_time=2.5s end_time=4s", {}, ([(2.5, 4.0)], "start_end", None)),
    # the phrasings lmms-eval's Charades-STA time parser reads
    ("Starting time: 0.8 seconds\nEnding time: 1.1 seconds", {},
     ([(0.8, 1.1)], "start_end", None)),
    ("The start time for this event is 0 seconds, and the end time is 12 seconds.", {},
     ([(0.0, 12.0)], "start_end", None)),
    ("The event 'person flipped the light switch near the door' starts at 00:00:18 and "
     "ends at 00:00:23.", {}, ([(18.0, 23.0)], "start_end", None)),
    ("It starts at 3.5s and ends at 7s.", {}, ([(3.5, 7.0)], "start_end", None)),
    ("The action began at 1:05 and ended at 1:20.", {}, ([(65.0, 80.0)], "start_end", None)),
    ("The clip starts with a man. He ends up sitting.", {},
     ([], "", "no time span found in the response")),
    ("It starts at the beginning and ends at 12s.", {},
     ([], "", "no time span found in the response")),
    # several spans in one response
    ("The man waves at 2.0s - 4.0s and again at 10.0s - 12.5s.", {},
     ([(2.0, 4.0), (10.0, 12.5)], "unit_range", None)),
    ("First [1, 2], then from 5 to 6 seconds.", {},
     ([(1.0, 2.0), (5.0, 6.0)], "bracket_pair+from_to", None)),
    ("0:05-0:08; 0:20-0:25", {}, ([(5.0, 8.0), (20.0, 25.0)], "clock_range", None)),
    # the same span twice is kept once
    ("It happens at 10s-20s. So the evidence is [10, 20].", {},
     ([(10.0, 20.0)], "unit_range+bracket_pair", None)),
    # reversed: swapped, noted
    ("[20, 10]", {}, ([(10.0, 20.0)], "json; swapped reversed span", None)),
    ("from 30s to 25s", {}, ([(25.0, 30.0)], "from_to; swapped reversed span", None)),
    # clamped to the video
    ("50s - 70s", {"duration": 60.0}, ([(50.0, 60.0)], "unit_range; clamped to duration", None)),
    ("50s - 70s", {}, ([(50.0, 70.0)], "unit_range", None)),
    ("[70, 80]", {"duration": 60.0}, ([(60.0, 60.0)], "json; clamped to duration", None)),
    ("[20, 10]", {"duration": 15.0},
     ([(10.0, 15.0)], "json; swapped reversed span; clamped to duration", None)),
    # frame indices
    ("frames 30 to 90", {"fps": 30.0}, ([(1.0, 3.0)], "frame_range; frames at 30 fps", None)),
    ("From frame 12 to frame 18.", {"fps": 4.0},
     ([(3.0, 4.5)], "frame_range; frames at 4 fps", None)),
    ("between frames 5 and 10", {"fps": 1.0}, ([(5.0, 10.0)], "frame_range; frames at 1 fps", None)),
    ("frames 30 to 90", {}, ([], "", "frame indices need the frame rate (fps) or the frames' times")),
    # fractions of the video
    ("0.25 to 0.5 (normalized)", {"duration": 100.0},
     ([(25.0, 50.0)], "fraction_range; fractions of the video", None)),
    ("The normalized span is [0.1, 0.3].", {"duration": 50.0},
     ([(5.0, 15.0)], "bracket_pair; fractions of the video", None)),
    ("0.2 - 0.4", {"duration": 10.0, "normalized": True},
     ([(2.0, 4.0)], "fraction_range; fractions of the video", None)),
    ('{"start": 0.5, "end": 1.0}', {"duration": 30.0, "normalized": True},
     ([(15.0, 30.0)], "json; fractions of the video", None)),
    ("25% to 50% of the video", {"duration": 200.0},
     ([(50.0, 100.0)], "percent_range; fractions of the video", None)),
    ("25% to 50% of the video", {}, ([], "", "fractions of the video need the video's duration")),
    ("As a fraction: 0.5 to 1.5", {"duration": 10.0},
     ([], "", "1.5 is not a fraction of the video (above 1)")),
    ("0.2 - 0.4", {"duration": 10.0}, ([], "", "no time span found in the response")),
    # JSON
    ('{"start": 1, "end": 2}', {}, ([(1.0, 2.0)], "json", None)),
    ('{"spans": [[1, 2], [5, 6]]}', {}, ([(1.0, 2.0), (5.0, 6.0)], "json", None)),
    ("[[1,2]]", {}, ([(1.0, 2.0)], "json", None)),
    ('```json\n{"timestamps": [[12.5, 18.0]]}\n```', {}, ([(12.5, 18.0)], "json", None)),
    ('{"start_time": "00:00:12", "end_time": "00:00:18.5"}', {}, ([(12.0, 18.5)], "json", None)),
    ('{"span": ["12.5s", "18s"]}', {}, ([(12.5, 18.0)], "json", None)),
    ('{"start": "soon", "end": 3}', {}, ([], "", "'soon' is not a time")),
    ("<think>Is it 1s-2s? No.</think><answer>[3.5, 6]</answer>", {},
     ([(3.5, 6.0)], "json", None)),
    # markdown
    ("**Evidence:** 00:00:05 - 00:00:09", {}, ([(5.0, 9.0)], "clock_range", None)),
    # durations in several units (hand-computed: 1 min 5 s = 65 s)
    ("from 1 min 5 s to 1 min 20 s", {}, ([(65.0, 80.0)], "from_to", None)),
    ("1m30s - 2m5s", {}, ([(90.0, 125.0)], "unit_range", None)),
    ("from 1 minute and 5 seconds to 1 minute and 20.5 seconds", {},
     ([(65.0, 80.5)], "from_to", None)),
    ("1h 2m 3s to 1h 2m 9s", {}, ([(3723.0, 3729.0)], "unit_range", None)),
    ("between 2 min 10 s and 2 min 40 s", {}, ([(130.0, 160.0)], "between_and", None)),
    ('{"start": "1m 5s", "end": "1m 9s"}', {}, ([(65.0, 69.0)], "json", None)),
    # start and end named by two different event verbs
    ("The red cone starts sliding at 3.5 s and stops at 7 s.", {},
     ([(3.5, 7.0)], "start_end", None)),
    ("It begins to rotate at 2s and finishes rotating at 6.5s", {},
     ([(2.0, 6.5)], "start_end", None)),
    ("The ball commences rolling at 0:04 and halts at 0:09", {},
     ([(4.0, 9.0)], "start_end", None)),
    # frames numbered as the prompt showed them, at the sampler's own times
    ("from frame 2 to frame 3", {"frame_times": [0.5, 4.0, 9.25]},
     ([(4.0, 9.25)], "frame_range; frames at their timestamps", None)),
    ("frames 3-1", {"frame_times": [0.5, 4.0, 9.25]},
     ([(0.5, 9.25)], "frame_range; frames at their timestamps; swapped reversed span", None)),
    ("frames 2 to 7", {"frame_times": [0.5, 4.0, 9.25]},
     ([], "", "frame 7 is not one of the 3 frames shown (numbered from 1)")),
    ("frames 0 to 2", {"frame_times": [0.5, 4.0]},
     ([], "", "frame 0 is not one of the 2 frames shown (numbered from 1)")),
    # nothing
    ("I cannot determine when this happens.", {}, ([], "", "no time span found in the response")),
    ("The man waves at the camera.", {}, ([], "", "no time span found in the response")),
    ("It happens at 12s.", {}, ([], "", "no time span found in the response")),
    ("There are 3-4 people in the room.", {}, ([], "", "no time span found in the response")),
    ("", {}, ([], "", "no time span found in the response")),
]

# (response, options, keywords, (index, how), (spans, how))
RESPONSE_CASES = [
    ("Answer: (C). Evidence: 12.0s to 18.5s", OPTS, {},
     (2, "answer_phrase"), ([(12.0, 18.5)], "unit_range")),
    ("Answer: 2. From 10 to 12 seconds", OPTS, {},
     (1, "answer_phrase"), ([(10.0, 12.0)], "from_to")),
    ('{"answer": "B", "start": 12, "end": 18.5}', OPTS, {},
     (1, "json"), ([(12.0, 18.5)], "json")),
    # the span blanked, "B" is all that is left
    ("B [3, 4]", OPTS, {}, (1, "whole_label"), ([(3.0, 4.0)], "bracket_pair")),
    ("The answer is D, seen at 1:05-1:20 in the video.", OPTS, {"duration": 70.0},
     (3, "answer_phrase"), ([(65.0, 70.0)], "clock_range; clamped to duration")),
    ("(A)\nstart: 3, end: 5", OPTS, {}, (0, "whole_label"), ([(3.0, 5.0)], "start_end")),
    ("frames 4 to 8. Answer: E", OPTS, {"fps": 2.0},
     (4, "answer_phrase"), ([(2.0, 4.0)], "frame_range; frames at 2 fps")),
    ("[1, 2]", OPTS, {}, (None, ""), ([(1.0, 2.0)], "json")),
    ("Answer: C. Frames 2 to 4.", OPTS, {"frame_times": [1.0, 3.5, 6.0, 8.5]},
     (2, "answer_phrase"), ([(3.5, 8.5)], "frame_range; frames at their timestamps")),
    ("Answer: B", None, {}, None, ([], "")),
]


@pytest.mark.parametrize("text, options, kwargs, want", OPTION_CASES)
def test_option_table(text, options, kwargs, want):
    assert parse_option(text, options, **kwargs) == OptionParse(*want)


@pytest.mark.parametrize("text, kwargs, want", SPAN_CASES)
def test_span_table(text, kwargs, want):
    got = parse_spans(text, **kwargs)
    spans, how, error = want
    assert (got.how, got.error) == (how, error)
    assert len(got.spans) == len(spans)
    for span, expected in zip(got.spans, spans):
        assert span == pytest.approx(expected, abs=1e-12)
        assert all(type(v) is float for v in span)


@pytest.mark.parametrize("text, options, kwargs, answer, spans", RESPONSE_CASES)
def test_response_table(text, options, kwargs, answer, spans):
    got = parse_response(text, options, **kwargs)
    if answer is None:
        assert got.answer is None
    else:
        assert (got.answer.index, got.answer.how) == answer
    assert (got.spans.spans, got.spans.how) == spans


def test_table_size():
    assert len(OPTION_CASES) + len(SPAN_CASES) + len(RESPONSE_CASES) >= 100


def test_a_time_is_not_an_option_number():
    # alone, "10" is no option of five; inside a span it is a time, and the
    # answer comes from the phrase
    assert parse_option("10", OPTS).error == "option number 10 is out of range for 5 options (1-based)"
    got = parse_response("Answer: B (between 10 and 12 seconds)", OPTS)
    assert got.answer == OptionParse(1, "answer_phrase", None)
    assert got.spans == SpanParse([(10.0, 12.0)], "between_and", None)


def test_bad_arguments_are_clear_errors():
    with pytest.raises(InputTypeError, match="parse_option: text must be a str"):
        parse_option(None, OPTS)
    with pytest.raises(InputTypeError, match="options must be a sequence"):
        parse_option("B", "ABCDE")
    with pytest.raises(InputError, match="index_base"):
        parse_option("B", OPTS, index_base=2)
    with pytest.raises(InputError, match="parse_spans: fps must be > 0"):
        parse_spans("frames 1 to 2", fps=0)
    with pytest.raises(InputError, match="give fps or frame_times, not both"):
        parse_spans("frames 1 to 2", fps=2.0, frame_times=[0.0, 1.0])
    with pytest.raises(InputError, match="frame_times must be finite seconds"):
        parse_spans("frames 1 to 2", frame_times=[0.0, float("nan")])
    with pytest.raises(InputError, match="duration must be >= 0"):
        parse_spans("1s-2s", duration=-1.0)
    with pytest.raises(InputTypeError, match="parse_spans: text must be a str"):
        parse_spans(b"1s-2s")
