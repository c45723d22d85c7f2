# SPDX-License-Identifier: Apache-2.0
"""fastvqa.generate.events: DeVE-QA- and SOK-Bench-style questions from
event captions, fully offline (a deterministic language model as a Python
function, and once behind a real local chat-completions server)."""

from __future__ import annotations

import argparse
import json
import re
from collections import Counter

import numpy as np
import pytest

from fastvqa.data import load_deveqa, load_sokbench
from fastvqa.errors import InputError
from fastvqa.generate.events import captions as C
from fastvqa.generate.events import deveqa as D
from fastvqa.generate.events import sokbench as S

PEOPLE = ["man", "woman", "boy", "girl", "chef", "dancer", "athlete", "student", "farmer",
          "teacher", "singer", "painter"]
COLOURS = ["red", "blue", "green", "yellow", "black", "white", "orange", "purple", "grey",
           "brown", "pink", "golden"]
ACTS = [("juggling", "balls"), ("slicing", "tomatoes"), ("throwing", "darts"),
        ("folding", "towels"), ("washing", "plates"), ("stacking", "boxes"),
        ("painting", "fences"), ("kicking", "footballs"), ("carrying", "buckets")]
PLACES = ["fountain", "river", "market", "garage", "stadium", "library", "bakery", "harbour",
          "bridge"]


def caption_text(v: int, e: int) -> str:
    k = 3 * v + e
    person, colour = PEOPLE[k % len(PEOPLE)], COLOURS[(k * 5) % len(COLOURS)]
    verb, obj = ACTS[k % len(ACTS)]
    return (f"A {person} in a {colour} shirt is {verb} {2 + k % 4} {obj} near the "
            f"{PLACES[k % len(PLACES)]} today")


def activitynet(n_videos: int = 4) -> dict:
    """n_videos fully covered videos of 3 events (60 s), plus one video of
    each kind the filter drops."""
    doc = {}
    for v in range(n_videos):
        doc[f"v{v}"] = {"duration": 60.0, "timestamps": [[0, 20], [20, 40], [40, 60]],
                        "sentences": [caption_text(v, e) for e in range(3)]}
    # covered 0.5: both captions dropped as low_coverage
    doc["low"] = {"duration": 40.0, "timestamps": [[0, 10], [10, 20]],
                  "sentences": [caption_text(20, 0), caption_text(20, 1)]}
    # one short caption, one with a pronoun, one fine; covered 1.0
    doc["mixed"] = {"duration": 30.0, "timestamps": [[0, 10], [10, 20], [20, 30]],
                    "sentences": ["A man waves.", caption_text(21, 1).replace("A ", "His ", 1),
                                  caption_text(21, 2)]}
    return doc


_DESC = re.compile(r"Here are the descriptions: (.*?)\n")
_CAPTION = re.compile(r"A (\w+) in a (\w+) shirt is (\w+) (\d) (\w+) near the (\w+) today")


class DeterministicLM:
    """A rule-following question generator: three pairs per caption, read off
    the caption's words. ``calls`` counts the replies it wrote; ``bad``
    maps a word of a caption to a crafted reply for it."""

    def __init__(self, bad=None):
        self.calls = 0
        self.bad = dict(bad or {})

    def __call__(self, messages) -> str:
        self.calls += 1
        desc = _DESC.search(messages[-1]["content"]).group(1)
        for word, reply in self.bad.items():
            if word in desc.split():
                return reply
        person, colour, verb, n, obj, place = _CAPTION.search(desc).groups()
        return json.dumps([
            {"question": f"What is the {person} in the {colour} shirt doing?",
             "answer": f"{verb.capitalize()} {obj}"},
            {"question": f"Where is the {person} {verb} the {obj}?",
             "answer": f"Near the {place}"},
            {"question": f"How many {obj} does the {person} in {colour} handle?",
             "answer": f"{n} {obj}"},
        ])


def write_captions(tmp_path, doc=None):
    path = tmp_path / "captions.json"
    path.write_text(json.dumps(doc or activitynet()), encoding="utf-8")
    return path


# ------------------------------------------------------------ caption filter

def test_coverage_hand_values():
    assert C.coverage([[0, 6], [4, 10]], 10) == pytest.approx(1.0)
    assert C.coverage([[0, 6], [4, 10]], 10, "sum") == pytest.approx(1.2)
    assert C.coverage([[0, 2], [5, 7]], 10) == pytest.approx(0.4)
    assert C.coverage([[5, 7], [0, 2], [1, 3]], 10) == pytest.approx(0.5)  # unsorted, nested
    assert C.coverage([[8, 12]], 10) == pytest.approx(0.2)  # clipped to the video
    assert C.coverage(np.zeros((0, 2)), 10) == 0.0


def test_filter_reasons_hand_checked(tmp_path):
    events = C.load_events(write_captions(tmp_path))
    f = C.filter_captions(events)
    assert f.total == 4 * 3 + 2 + 3
    assert f.counts == {"empty_span": 0, "low_coverage": 2, "too_short": 1, "pronoun": 1,
                        "subsampled": 0}
    by = {(d.video_id, d.index): d.reason for d in f.dropped}
    assert by == {("low", 0): "low_coverage", ("low", 1): "low_coverage",
                  ("mixed", 0): "too_short", ("mixed", 1): "pronoun"}
    assert [(e.video_id, e.index) for e in f.kept] == \
        [(f"v{v}", e) for v in range(4) for e in range(3)] + [("mixed", 2)]
    assert f.coverage["low"] == pytest.approx(0.5)
    # exactly 10 words is too short ("more than 10"), 11 is enough
    ten = C.Event("x", 0, " ".join(["word"] * 10), 0, 1, 1)
    eleven = C.Event("x", 1, " ".join(["word"] * 11), 0, 1, 1)
    g = C.filter_captions([ten, eleven])
    assert [e.index for e in g.kept] == [1] and g.counts["too_short"] == 1
    # an empty span comes first; a union-covered video can fail on "sum"? no: sum >= union
    empty = C.Event("y", 0, " ".join(["word"] * 12), 5, 5, 10)
    assert C.filter_captions([empty]).dropped[0].reason == "empty_span"


def test_filter_subsampling_seeded(tmp_path):
    events = C.load_events(write_captions(tmp_path))
    a = C.filter_captions(events, max_captions=5, seed=3)
    b = C.filter_captions(events, max_captions=5, seed=3)
    c = C.filter_captions(events, max_captions=5, seed=4)
    assert len(a.kept) == 5 and a.counts["subsampled"] == 13 - 5
    assert a.kept == b.kept and a.kept != c.kept
    positions = [events.index(e) for e in a.kept]
    assert positions == sorted(positions)  # file order kept
    assert len(a.kept) + len(a.dropped) == a.total


# ------------------------------------------------------------ reply parsing

@pytest.mark.parametrize("reply, reason", [
    ('[{"question": "What is he doing?", "answer": "Running"', "malformed_json"),
    ("I cannot help with that.", "malformed_json"),
    ('{"note": "no pairs here"}', "bad_structure"),
    ('["What?", "Why?"]', "bad_structure"),
    ('[{"question": "What is the man doing?"}]', "missing_field"),
    ('[{"question": "  ", "answer": "Running"}]', "missing_field"),
    ('[{"question": "What is the man doing?", "answer": 3}]', "missing_field"),
    (json.dumps([{"question": " ".join(["word"] * 23) + "?", "answer": "Yes"}]),
     "over_word_limit"),
    (json.dumps([{"question": "What is it?", "answer": "one two three four five six seven"}]),
     "over_word_limit"),
    ('[{"question": "What is it?", "answer": "A dog", "span": [10, 75]}]', "span_outside_video"),
    ('[{"question": "What is it?", "answer": "A dog", "span": [-1, 5]}]', "span_outside_video"),
    ('[{"question": "What is it?", "answer": "A dog", "span": [30, 20]}]', "bad_span"),
    ('[{"question": "What is it?", "answer": "A dog", "span": "early"}]', "bad_span"),
])
def test_bad_replies_rejected_with_reason(reply, reason):
    parsed = D.parse_qa_reply(reply, 60.0)
    assert parsed.pairs == []
    assert [r for r, _ in parsed.problems] == [reason] * (2 if reply.startswith('["') else 1)


def test_reply_formats_and_limits():
    exact = json.dumps([{"question": " ".join(["w"] * 21) + " end?",
                         "answer": "one two three four five six"}])
    p = D.parse_qa_reply(exact, 60.0)
    assert len(p.pairs) == 1 and p.problems == [] and p.how == "json"  # 22 and 6 words pass
    fenced = 'Sure!\n```json\n{"qa_pairs": [{"question": "Why?", "answer": "To win", ' \
             '"span": [0, 60]}]}\n```'
    p = D.parse_qa_reply(fenced, 60.0)
    assert p.pairs == [D.QAPair("Why?", "To win", (0.0, 60.0))]
    lines = "1. Q: What is the man doing? A: Playing the piano.\n2. Q: Why? A: To rest."
    p = D.parse_qa_reply(lines, 60.0)
    assert p.how == "qa_lines"
    assert [(q.question, q.answer) for q in p.pairs] == [
        ("What is the man doing?", "Playing the piano."), ("Why?", "To rest.")]
    four = json.dumps([{"question": f"Q{i}?", "answer": "A"} for i in range(4)])
    p = D.parse_qa_reply(four, 60.0)
    assert len(p.pairs) == 3 and [r for r, _ in p.problems] == ["too_many_pairs"]


def test_options_problem():
    assert D.options_problem("Playing piano", ["Running", "playing  piano."]) is not None
    assert D.options_problem("a", ["b", "B"]) == "two distractors are the same"
    assert D.options_problem("a", ["b", "c"]) is None


def test_prompt_is_the_papers():
    m = D.qa_messages("A man plays.")
    assert "limit the generated questions to a maximal 22 words while the answers to a " \
           "maximal 6 words" in m[0]["content"]
    assert "Please generate up to 3 QA pairs for each description" in m[0]["content"]
    assert m[1]["content"].startswith("Here are the descriptions: A man plays.")


# -------------------------------------------------------- DeVE-QA pipeline

def _events(tmp_path, n_videos=4):
    return C.filter_captions(C.load_events(write_captions(tmp_path, activitynet(n_videos))))


def _write_and_load(tmp_path, questions, name="out.json"):
    path = D.write_records(questions, tmp_path / name)
    return path, load_deveqa(path)


def test_deveqa_end_to_end_loads(tmp_path):
    f = _events(tmp_path)
    lm = DeterministicLM()
    result = D.generate_deveqa(f.kept, lm, seed=0)
    assert lm.calls == len(f.kept) == 13 and result.calls == 13
    assert result.rejections == [] and len(result.questions) == 3 * 13
    _, records = _write_and_load(tmp_path, result.questions)
    assert len(records) == 39
    ev = {(e.video_id, e.index): e for e in f.kept}
    for q, r in zip(result.questions, records):
        e = ev[(q["video_id"], q["event_index"])]
        # the span is the source event's, the answer the model's
        np.testing.assert_array_equal(r.spans, [[e.start, e.end]])
        assert r.duration == e.duration
        m = _CAPTION.search(e.text)
        assert r.options[r.answer] in {f"{m.group(3).capitalize()} {m.group(5)}",
                                       f"Near the {m.group(6)}", f"{m.group(4)} {m.group(5)}"}
        assert len(r.options) == 5
        norm = [" ".join(o.casefold().split()).rstrip(".") for o in r.options]
        assert len(set(norm)) == 5  # the answer is no distractor, no two the same
        assert q["option_sources"][r.answer] == "correct"
        assert sorted(q["option_sources"]).count("correct") == 1
        assert r.extra["event_count"] == len([k for k in ev if k[0] == q["video_id"]])
    # options come from the recipe's pools first: other_time x2, segment_wrong, top-10
    sources = Counter(s for q in result.questions for s in q["option_sources"])
    assert sources["other_time"] >= 2 * 36  # every video with 3 events fills it
    assert sources["segment_wrong"] >= 36
    # position balance of the written answers: counts differ by at most one
    counts = np.bincount([r.answer for r in records], minlength=5)
    assert counts.sum() == 39 and counts.max() - counts.min() <= 1


def test_deveqa_other_time_and_segment_pools_hand_checked(tmp_path):
    f = _events(tmp_path, 2)
    result = D.generate_deveqa(f.kept, DeterministicLM(), seed=1)
    by_qid = {q["qid"]: q for q in result.questions}
    q = by_qid["v0_e1_q0"]  # about event 1 of video 0
    opts = list(q["options"].values())
    answers = {(x["video_id"], x["event_index"]): set() for x in result.questions}
    for x in result.questions:
        answers[(x["video_id"], x["event_index"])].add(x["options"][x["answer"]])
    for o, src in zip(opts, q["option_sources"]):
        if src == "other_time":
            assert o in answers[("v0", 0)] | answers[("v0", 2)]
        if src == "segment_wrong":
            assert o in answers[("v0", 1)] - {q["options"][q["answer"]]}


def test_deveqa_rejections_recorded(tmp_path):
    f = _events(tmp_path, 3)
    dup = json.dumps([{"question": "What happens in the video?", "answer": "Something moves"}])
    bad = {"man": '[{"question": "Broken"',                                         # v0 e0
           "woman": json.dumps([{"question": "Where?", "answer": "At the river",
                                 "span": [50, 90]}]),                               # v0 e1
           "boy": json.dumps([{"question": "What?", "answer": " ".join(["x"] * 7)},
                              {"question": "Which?"}]),                             # v0 e2
           "girl": dup, "chef": dup}                                                # v1 e0, e1
    lm = DeterministicLM(bad)
    result = D.generate_deveqa(f.kept, lm, seed=0)
    got = Counter((r.reason, r.video_id, r.source) for r in result.rejections)
    assert got == Counter({("malformed_json", "v0", "0"): 1, ("span_outside_video", "v0", "1"): 1,
                           ("over_word_limit", "v0", "2"): 1, ("missing_field", "v0", "2"): 1,
                           ("duplicate_question", "v1", "1"): 1})
    assert result.counts()["malformed_json"] == 1
    assert all(r.response for r in result.rejections if r.stage == "generate")
    # what was kept: v1 e0's one pair, then 3 pairs each from v1 e2, v2 x3 and mixed e2
    assert len(result.questions) == 1 + 3 + 9 + 3


def test_deveqa_cache_rerun_costs_nothing(tmp_path):
    f = _events(tmp_path)
    cache = tmp_path / "cache.jsonl"
    lm = DeterministicLM()
    first = D.generate_deveqa(f.kept, lm, seed=2, cache=cache)
    assert lm.calls == 13 and first.calls == 13 and first.cache_hits == 0
    assert len(cache.read_text().splitlines()) == 13
    lm2 = DeterministicLM()
    again = D.generate_deveqa(f.kept, lm2, seed=2, cache=D.ResponseCache(cache))
    assert lm2.calls == 0 and again.calls == 0 and again.cache_hits == 13
    assert again.questions == first.questions
    # a line cut short by a kill is skipped (counted) and the next append starts a new line
    with open(cache, "a", encoding="utf-8") as fh:
        fh.write('{"key": "abc", "cont')
    c = D.ResponseCache(cache)
    assert len(c) == 13 and c.skipped_lines == 1
    c.put("k2", {"m": 1}, "reply")
    reread = D.ResponseCache(cache)
    assert reread.get("k2") == "reply" and len(reread) == 14 and reread.skipped_lines == 1
    # another file is never taken for a cache (nor appended to)
    other = write_captions(tmp_path)
    before = other.read_bytes()
    with pytest.raises(InputError, match="no cache entry"):
        D.ResponseCache(other)
    assert other.read_bytes() == before



def test_a_deeply_nested_cache_line_is_skipped_not_fatal(tmp_path):
    """A damaged cache line nested too deeply for json is skipped and
    counted like a line cut short, never a RecursionError."""
    cache = tmp_path / "cache.jsonl"
    D.ResponseCache(cache).put("k1", {"m": 1}, "reply one")
    with open(cache, "a", encoding="utf-8") as fh:
        fh.write("[" * 100_000 + "\n")
    c = D.ResponseCache(cache)
    assert c.get("k1") == "reply one" and len(c) == 1 and c.skipped_lines == 1

def test_deveqa_deterministic_per_seed(tmp_path):
    f = _events(tmp_path)
    a = D.generate_deveqa(f.kept, DeterministicLM(), seed=5)
    b = D.generate_deveqa(f.kept, DeterministicLM(), seed=5)
    c = D.generate_deveqa(f.kept, DeterministicLM(), seed=6)
    assert json.dumps(a.questions) == json.dumps(b.questions)
    threaded = D.generate_deveqa(f.kept, DeterministicLM(), seed=5, workers=4)
    assert threaded.questions == a.questions and threaded.calls == 13
    assert json.dumps(a.questions) != json.dumps(c.questions)
    assert [q["question"] for q in a.questions] == [q["question"] for q in c.questions]


def test_deveqa_through_a_local_server(tmp_path):
    from fastvqa.llm import ChatCompletionsClient, serve_chat_model

    f = _events(tmp_path, 2)
    cache = tmp_path / "served.jsonl"
    with serve_chat_model(DeterministicLM()) as served:
        client = ChatCompletionsClient(served.base_url, "det-lm", max_retries=0)
        result = D.generate_deveqa(f.kept, client, seed=0, cache=cache)
        assert served.stats.requests == len(f.kept) == 7
        assert client.stats.calls == 7 and result.calls == 7
        again = D.generate_deveqa(f.kept, ChatCompletionsClient(served.base_url, "det-lm"),
                                  seed=0, cache=cache, workers=3)
        assert served.stats.requests == 7 and again.calls == 0 and again.cache_hits == 7
    direct = D.generate_deveqa(f.kept, DeterministicLM(), seed=0)
    assert result.questions == again.questions
    assert [q["question"] for q in result.questions] == [q["question"] for q in direct.questions]
    entry = json.loads(cache.read_text().splitlines()[0])
    assert entry["request"]["model"] == "det-lm"  # the client's exact body is the key


def test_audit_runs_on_generated_set(tmp_path):
    from fastvqa.audit import audit

    f = _events(tmp_path)
    result = D.generate_deveqa(f.kept, DeterministicLM(), seed=0)
    _, records = _write_and_load(tmp_path, result.questions, "set.jsonl")
    report = audit(records, benchmark="deveqa", folds_k=2)
    assert report.kind == "multiple_choice" and report.n_questions == 39
    assert report.position.n_options == 5 and sum(report.position.counts) == 39
    assert max(report.position.counts) - min(report.position.counts) <= 1


# --------------------------------------------------------- SOK-Bench pipeline

STEPS = {"v1": (119.0, [(16, 30, "cut tofu into square pieces"),
                        (32, 40, "put cornstarch in a small bowl and mix with water"),
                        (41, 60, "heat oil in a pan and fry the onion and garlic"),
                        (61, 80, "add pork and salt and stir well")]),
         "v2": (50.0, [(0, 10, "whisk egg with milk and sugar"),
                       (10, 20, "mix flour and butter into the egg"),
                       (20, 45, "bake the dough with cheese")])}


def step_events():
    return [C.Event(v, i, text, float(s), float(e), d)
            for v, (d, steps) in STEPS.items() for i, (s, e, text) in enumerate(steps)]


def test_situation_graph_hand_checked():
    g = S.situations_from_events(step_events())
    assert [x.video_id for x in g] == ["v1", "v2"]
    v1 = g[0]
    assert [a.objects for a in v1.actions] == [("tofu",), ("cornstarch", "water"),
                                               ("oil", "onion", "garlic"), ("pork", "salt")]
    assert v1.objects == ("tofu", "cornstarch", "water", "oil", "onion", "garlic", "pork", "salt")
    edges = set(v1.edges)
    assert ("time:32-40", "at", "action:1") in edges
    assert ("action:1", "uses", "water") in edges and ("cornstarch", "with", "water") in edges
    assert ("action:0", "before", "action:1") in edges
    assert ("action:3", "before", "action:0") not in edges
    assert sum(1 for e in v1.edges if e[1] == "before") == 3
    assert v1.time_slot == (16, 80)
    prev, nxt = v1.neighbours(v1.actions[0])
    assert prev is None and nxt.text.startswith("put cornstarch")
    with pytest.raises(Exception, match="not within"):
        S.situation_graph("x", 10, [S.TimedAction(0, 5, 12, "late", ())])


def test_mask_entities():
    assert S.mask_entities("Add the Tofu and tomatoes to tofu", ["tofu", "tomato"]) == \
        "Add the something and something to something"
    assert S.mask_entities("soy sauce and soy", ["soy sauce", "soy"]) == "something and something"


def _sok(seed=0, **kw):
    return S.generate_sokbench(S.situations_from_events(step_events()), seed=seed, **kw)


def test_sokbench_end_to_end_loads(tmp_path):
    result = _sok(cross_video_distractors=True)
    assert result.rejections == []
    assert list(result.data) == list(S.QUESTION_TYPES)  # all twelve, OI and APO included
    path = S.write_sokbench(result.data, tmp_path / "sok.json")
    records = load_sokbench(path)
    assert len(records) == result.n_questions > 0
    table = S.COMMONSENSE
    v_objects = {v: {o for _, _, t in steps for o in S._find_objects(t, list(table["objects"]))}
                 for v, (_, steps) in STEPS.items()}
    for r in records:
        qtype = r.extra["question_type"]
        assert len(r.options) == 4 and 0 <= r.answer < 4
        assert r.extra["direct_matches_choice"]
        assert r.spans.shape == (1, 2)
        qt = S.QUESTION_TYPES[qtype]
        names = v_objects[r.video_id]
        if qt.relation == "what_if_no_obj":
            # same category: every option is some object's counterfactual, masked
            pool = {S.mask_entities(table["objects"][o]["what_if_no_obj"], list(names))
                    for o in table["objects"]}
            assert set(r.options) <= pool
        if qt.relation == "object_name":
            assert set(r.options) <= names  # other objects of the same video
        if qt.relation != "object_name":
            for o in r.options:
                assert not any(re.search(rf"\b{n}\b", o, re.I) for n in names)
    # OCT: the answer is the asked object's counterfactual (masked)
    oct_ = [r for r in records if r.extra["question_type"] == "OCT"]
    for r in oct_:
        obj = re.search(r"did not use (.+)\?$", r.question).group(1)
        want = S.mask_entities(table["objects"][obj]["what_if_no_obj"],
                               list(v_objects[r.video_id]))
        assert r.options[r.answer] == want
    from fastvqa.audit import audit

    report = audit(records, benchmark="sokbench", folds_k=2)
    assert report.position.n_options == 4 and report.n_questions == len(records)
    # positions balanced within each type
    for qtype, items in result.data.items():
        counts = np.bincount([q["answer"]["right_choice"] for q in items], minlength=4)
        assert counts.max() - counts.min() <= 1, qtype


def test_sokbench_same_video_distractors_by_default():
    """v2 has three steps: two same-video answers per action category, one
    short of three distractors. Off by default, a question on its steps is
    rejected (too_few_distractors); every option kept is from its own video."""
    result = _sok()
    short = [r for r in result.rejections if r.reason == "too_few_distractors"]
    assert {r.video_id for r in short} == {"v2"}
    assert all(r.source in [t for _, _, t in STEPS["v2"][1]] for r in short)
    assert len(short) == 13  # APU, ACT, APO: 3 steps each; APU+ST, ACT+ST: 2 each
    for items in result.data.values():
        for q in items:
            assert set(q["option_sources"]) <= {"correct", "same_video"}
            assert q["question_source"] == "template"


def test_sokbench_deterministic_per_seed():
    assert json.dumps(_sok(3).data) == json.dumps(_sok(3).data)
    assert json.dumps(_sok(3).data) != json.dumps(_sok(4).data)


def test_sokbench_masked_answer_never_a_distractor():
    # masked, "lack tofu" and "lack pork" read the same: neither may be the
    # other's distractor (nor two of one question's distractors)
    table = {"objects": {"tofu": {"what_if_no_obj": "The dish would lack tofu."},
                         "pork": {"what_if_no_obj": "The dish would lack pork."},
                         "salt": {"what_if_no_obj": "It would be bland."},
                         "oil": {"what_if_no_obj": "It would stick."},
                         "onion": {"what_if_no_obj": "It would be less sweet."}},
             "actions": {}}
    vocab = ["tofu", "pork", "salt", "oil", "onion"]
    g = S.situations_from_events(step_events()[:4], vocabulary=vocab)
    result = S.generate_sokbench(g, S.table_knowledge(table), types=["OCT"], seed=0)
    kept = result.data["OCT"]
    asked = {re.search(r"use (\w+)\?", q["question"]).group(1) for q in kept}
    assert asked == set(vocab)
    lack = "The dish would lack something."
    for q in kept:
        choices = q["answer"]["choices"]
        assert len({c.casefold() for c in choices}) == 4
        assert choices.count(lack) <= 1
    # the guard every option set passes (an answer among the distractors)
    assert D.options_problem(lack, [lack.lower(), "x", "y"]) is not None


def test_sokbench_too_few_distractors_and_duplicates():
    one = [C.Event("solo", 0, "cut tofu", 0.0, 5.0, 10.0),
           C.Event("solo", 1, "cut tofu", 5.0, 9.0, 10.0)]
    g = S.situations_from_events(one)
    result = S.generate_sokbench(g, types=["APU", "OCT"], seed=0)
    reasons = Counter(r.reason for r in result.rejections)
    # the second "cut tofu" step asks the same question; one object has no
    # other same-category answers anywhere (and the only action neither)
    assert reasons["duplicate_question"] >= 1
    assert reasons["too_few_distractors"] >= 1
    assert result.n_questions == 0


class SokLM:
    """Deterministic model for the SOK-Bench style: parses the step list
    (the situation prompt), answers the general- and situated-knowledge
    prompts from the built-in table and writes a question naming its type
    (``kinds`` counts the prompts by kind); ``bad_span_video`` /
    ``long_entity`` craft bad replies."""

    GOALS = {  # the situated-knowledge goals, as the prompts word them
        "what_if_no_obj": r"What would happen if the person did not use (.+)\?",
        "contribution": r"What does (.+) contribute to the result in this video\?",
        "purpose": r"What is the purpose of the step '(.+)'\?",
        "what_if_no_act": r"What would happen if the person skipped the step '(.+)'\?",
        "possibility": r"In what other way could the person have done the step '(.+)'\?",
    }

    def __init__(self, bad_span_video=None, long_entity=None):
        self.calls = 0
        self.kinds = Counter()
        self.bad_span_video, self.long_entity = bad_span_video, long_entity
        self.knowledge = S.table_knowledge()

    def __call__(self, messages):
        self.calls += 1
        user, system = messages[-1]["content"], messages[0]["content"]
        if user.startswith("The video is"):
            self.kinds["situation"] += 1
            duration = float(re.search(r"is (\S+) seconds", user).group(1))
            acts = []
            for s, e, text in re.findall(r"(\S+)s - (\S+)s: (.+)", user):
                objs = S._find_objects(text, list(S.COMMONSENSE["objects"]))
                acts.append({"start": float(s), "end": float(e), "action": text,
                             "objects": list(objs)})
            if self.bad_span_video is not None and duration == self.bad_span_video:
                acts[0]["end"] = duration + 5
                acts[1].pop("objects")
            return json.dumps({"actions": acts})
        if "You know a lot about" in system:
            self.kinds["general"] += 1
            entity = system.rsplit("about ", 1)[1].rstrip(".")
            if user.startswith("Please tell me 5 usages of"):
                usage = self.knowledge(entity, "usage") or "nothing useful"
                how, _, thing = usage.rpartition(" ")
                return json.dumps([{thing: how}])
            if user.startswith("Please tell me the physical properties of"):
                return json.dumps({"look": self.knowledge(entity, "physical") or "plain"})
            return "[]"  # no interactions, no action knowledge: rejected, counted
        if "commonsense-driven assistant" in system:
            self.kinds["situated"] += 1
            goal = user.split(" Format:")[0]
            for rel, pattern in self.GOALS.items():
                m = re.fullmatch(pattern, goal)
                if m:
                    if m.group(1) == self.long_entity:
                        return " ".join(["very"] * 25)
                    return self.knowledge(m.group(1), rel) or ""
            m = re.fullmatch(r"What do (.+) and (.+) do together in this video\?", goal)
            return self.knowledge(f"{m.group(1)}<AND>{m.group(2)}", "interaction") or ""
        if "You write questions about a video" in system:
            self.kinds["question"] += 1
            key = re.search(r"Write one question of type (\S+)", user).group(1)
            step = re.search(r"The correct answer is: (.+)", user).group(1)
            return json.dumps({"question": f"Which {key} answer is '{step}'?"})
        raise AssertionError(user)


def test_sokbench_through_language_model(tmp_path):
    lm = SokLM(bad_span_video=119.0, long_entity="oil")
    cache = tmp_path / "sok.jsonl"
    model = D.cached_model(lm, cache)
    rejected = []
    graphs = S.situations_from_events(step_events(), llm=model, rejections=rejected)
    assert [len(g.actions) for g in graphs] == [2, 3]  # v1 lost 2 steps
    assert Counter(r.reason for r in rejected) == Counter({"span_outside_video": 1,
                                                           "missing_field": 1})
    know = S.language_model_knowledge(model)
    result = S.generate_sokbench(graphs, know, questions=S.language_model_questions(model),
                                 seed=0, model_stats=model, rejections=rejected,
                                 cross_video_distractors=True)
    reasons = Counter((r.stage, r.reason) for r in result.rejections)
    assert reasons[("situation", "span_outside_video")] == 1
    # oil's two situated perspectives, each asked in both iterations
    assert reasons[("knowledge", "over_word_limit")] == 4
    assert result.n_questions > 0 and result.calls == lm.calls
    assert all(q["question_source"] == "language model"
               for items in result.data.values() for q in items)
    path = S.write_sokbench(result.data, tmp_path / "out.json")
    assert len(load_sokbench(path)) == result.n_questions
    calls = lm.calls
    model2 = D.cached_model(lm, cache)
    graphs2 = S.situations_from_events(step_events(), llm=model2, rejections=[])
    again = S.generate_sokbench(graphs2, S.language_model_knowledge(model2),
                                questions=S.language_model_questions(model2), seed=0,
                                model_stats=model2, cross_video_distractors=True)
    assert lm.calls == calls and again.calls == 0 and again.data == result.data


# ------------------------------------------------------------------- CLI

def _args(tmp_path, **kw):
    from fastvqa.generate.events import cli

    p = argparse.ArgumentParser()
    cli.add_arguments(p)
    argv = []
    for k, v in kw.items():
        argv += [f"--{k.replace('_', '-')}", str(v)]
    return p.parse_args(argv)


LM_MODULE = '''
import json, re
CALLS = []
def generate(messages):
    CALLS.append(1)
    desc = re.search(r"Here are the descriptions: (.*?)\\n", messages[-1]["content"]).group(1)
    w = desc.split()
    return json.dumps([{"question": f"What is the {w[1]} in {w[4]} doing?",
                        "answer": f"{w[7]} {w[9]}"},
                       {"question": "Broken", "answer": " ".join(["x"] * 9)}])
'''


def test_cli_deveqa_end_to_end(tmp_path, capsys):
    from fastvqa.errors import CommandError
    from fastvqa.generate.events import cli

    caps = write_captions(tmp_path)
    mod = tmp_path / "lm_mod.py"
    mod.write_text(LM_MODULE, encoding="utf-8")
    out, rej, cache = tmp_path / "q.json", tmp_path / "rej.jsonl", tmp_path / "c.jsonl"
    args = _args(tmp_path, captions=caps, llm=f"{mod}:generate", out=out, seed=1, cache=cache,
                 rejections=rej, workers=2)
    assert cli.run(args) == 0
    err = capsys.readouterr().err
    assert "13 questions from 13 captions" in err and "over_word_limit 13" in err
    records = load_deveqa(out)
    assert len(records) == 13
    rows = [json.loads(x) for x in rej.read_text().splitlines()]
    assert Counter(r["reason"] for r in rows) == Counter(
        {"over_word_limit": 13, "low_coverage": 2, "too_short": 1, "pronoun": 1})
    # nothing overwritten: the same --out is refused before any work
    with pytest.raises(CommandError, match="exists"):
        cli.run(_args(tmp_path, captions=caps, llm=f"{mod}:generate", out=out))
    # a rerun to a new file reads every reply from the cache
    assert cli.run(_args(tmp_path, captions=caps, llm=f"{mod}:generate",
                         out=tmp_path / "q2.jsonl", seed=1, cache=cache)) == 0
    assert "0 model calls, 13 from the cache" in capsys.readouterr().err
    assert [r.options for r in load_deveqa(tmp_path / "q2.jsonl")] == [r.options for r in records]


def test_cli_sokbench_builtin_knowledge(tmp_path, capsys):
    from fastvqa.generate.events import cli

    doc = {v: {"duration": d, "timestamps": [[s, e] for s, e, _ in steps],
               "sentences": [t for _, _, t in steps]} for v, (d, steps) in STEPS.items()}
    caps = write_captions(tmp_path, doc)
    lm = SokLM()
    import sys
    import types
    mod = types.ModuleType("fastvqa_test_soklm")
    mod.generate = lm
    sys.modules["fastvqa_test_soklm"] = mod
    try:
        out = tmp_path / "sok.json"
        assert cli.run(_args(tmp_path, captions=caps, llm="fastvqa_test_soklm:generate",
                             out=out, style="sokbench", knowledge="builtin")) == 0
    finally:
        del sys.modules["fastvqa_test_soklm"]
    # one situation call per video; knowledge from the table; every question
    # worded by the model
    assert lm.kinds["situation"] == 2 and lm.kinds["question"] > 0
    assert lm.kinds["general"] == lm.kinds["situated"] == 0
    assert len(load_sokbench(out)) > 0
    assert "questions" in capsys.readouterr().err


@pytest.mark.parametrize("kw, message", [
    ({"llm": "http://127.0.0.1:9/v1"}, "--model"),
    ({"llm": "nocolon"}, "module:function"),
    ({"llm": "no_such_module_xyz:fn"}, "cannot import"),
    ({"llm": "json:no_such_fn"}, "has no"),
    ({"llm": "json:dumps", "model": "m"}, "goes with an http"),
])
def test_cli_bad_llm_one_line(tmp_path, kw, message):
    from fastvqa.errors import CommandError
    from fastvqa.generate.events import cli

    caps = write_captions(tmp_path)
    with pytest.raises(CommandError, match=message) as info:
        cli.run(_args(tmp_path, captions=caps, out=tmp_path / "o.json", **kw))
    assert "\n" not in str(info.value)
    assert not (tmp_path / "o.json").exists()


def test_cli_missing_captions(tmp_path):
    from fastvqa.errors import CommandError
    from fastvqa.generate.events import cli

    with pytest.raises(CommandError, match="no such file"):
        cli.run(_args(tmp_path, captions=tmp_path / "none.json", llm="json:dumps",
                      out=tmp_path / "o.json"))


def test_cli_lone_surrogate_is_one_line(tmp_path):
    """A JSON "\\ud800" escape decodes to a code point UTF-8 cannot encode: a
    one-line InputError naming the video and caption, not a UnicodeEncodeError."""
    from fastvqa.errors import InputError
    from fastvqa.generate.events import cli

    doc = activitynet(1)
    caps = tmp_path / "captions.json"
    text = json.dumps(doc).replace("today", "today \\ud800", 1)
    caps.write_text(text, encoding="utf-8")
    with pytest.raises(InputError, match=r"video 'v0' caption 0: the caption holds a lone "
                                         r"surrogate") as info:
        cli.run(_args(tmp_path, captions=caps, llm="json:dumps", out=tmp_path / "o.json"))
    assert "\n" not in str(info.value)
    assert not (tmp_path / "o.json").exists()


def test_request_key_refuses_a_lone_surrogate():
    from fastvqa.llm.client import request_key
    from fastvqa.errors import InputError

    with pytest.raises(InputError, match="lone surrogate"):
        request_key({"messages": [{"role": "user", "content": "a\ud800"}]})


def test_cli_nothing_generated_exits_1_with_a_reason(tmp_path, capsys):
    """Every reply an empty list: the outputs are written (empty), the exit
    status is 1 (as generate dvd's) and the reason is one line."""
    from fastvqa.generate.events import cli

    caps = write_captions(tmp_path)
    mod = tmp_path / "empty_lm.py"
    mod.write_text("def generate(messages):\n    return '[]'\n", encoding="utf-8")
    out = tmp_path / "q.json"
    assert cli.run(_args(tmp_path, captions=caps, llm=f"{mod}:generate", out=out)) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].startswith("fastvqa generate events: error: no question was generated")
    assert json.loads(out.read_text()) == []
