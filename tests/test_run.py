# SPDX-License-Identifier: Apache-2.0
"""``fastvqa run vlm``: the demo benchmark's videos through a real local
OpenAI-compatible server whose model reads the pixels it receives
(:class:`fastvqa.demo.vision_server.DemoVisionModel`), to the files
``fastvqa eval`` reads and its scores; resumed after a failure without
repeating a request; sharded."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("av")
pytest.importorskip("PIL")
pytest.importorskip("sklearn")

from fastvqa.cli import main  # noqa: E402
from fastvqa.llm import Reply, serve_chat_model  # noqa: E402

FILES = ("responses.jsonl", "outcomes.jsonl", "ground.json", "qa.json", "run.json")


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    """Three 8-s demo videos and their multiple-choice questions as a DeVE-QA file."""
    from fastvqa.demo import export, options, synth

    root = tmp_path_factory.mktemp("demo")
    bench = synth.generate(root, videos=3, duration=8.0, seed=0, add_options=options.add_options)
    export.write_deveqa(bench.annotations, root / "deveqa.json")
    return root, bench


def _argv(root, out, url, *extra):
    return ["run", "vlm", "deveqa", "--gt", str(root / "deveqa.json"), "--videos",
            str(root / "videos"), "--out", str(out), "--vlm-url", url, "--vlm-model", "demo",
            "--image-format", "png", "--frames", "8", "--no-progress", *extra]


def _questions(root) -> list:
    return json.loads((root / "deveqa.json").read_text())


def test_run_vlm_scores_the_demo_and_matches_eval(demo, tmp_path, capsys):
    from fastvqa.demo.vision_server import DemoVisionModel
    from fastvqa.video import Uniform, VideoDecoder

    root, bench = demo
    model = DemoVisionModel()
    with serve_chat_model(model) as served:
        assert main(_argv(root, tmp_path / "run", served.base_url)) == 0
        requests = served.stats.requests
    n = len(_questions(root))
    assert requests == n
    err = capsys.readouterr().err
    # the counts, latency and the tokens the server reports (its usage: word counts)
    assert f"{n} questions, {n} replies fully parsed" in err
    assert f"vlm: {n} requests, 0 from the cache, 0 retries" in err
    assert "s per request" in err and "completion tokens" in err
    # per stage: the frames decoded and the answers asked once per question
    rows = {line.split()[0]: line.split()[1:] for line in
            err.split("latency per stage (seconds summed over questions):\n")[1].splitlines()[1:4]}
    assert {k: v[0] for k, v in rows.items()} == {"decode": str(n), "answer": str(n),
                                                  "parse": str(n)}
    for name in FILES:
        assert (tmp_path / "run" / name).is_file(), name
    # the frames that travelled are the decoder's, at the sampler's times
    with VideoDecoder(bench.videos[0]) as dec:
        want = dec.read(Uniform(8))
    # the prompt states times to 0.01 s
    firsts = [i for i, (t, _) in enumerate(model.received)
              if len(t) == 8 and np.allclose(t, want.pts_seconds, atol=0.005)]
    assert firsts, "no request carried the first video's sampled frames"
    assert any(np.array_equal(model.received[i][1], np.asarray(want.data)) for i in firsts)
    # the run's scores are fastvqa eval's on the files it wrote
    record = json.loads((tmp_path / "run" / "run.json").read_text())
    capsys.readouterr()
    assert main(["eval", "deveqa", "--gt", str(root / "deveqa.json"), "--pred",
                 str(tmp_path / "run" / "ground.json"), "--qa", str(tmp_path / "run" / "qa.json"),
                 "--json"]) == 0
    evaluated = json.loads(capsys.readouterr().out)
    assert evaluated["metrics"] == record["scores"]["grounded QA"]
    # a model that reads the pixels answers most of the demo's three-option
    # questions (chance: 33 %); the gold answers come from the generator
    assert record["scores"]["grounded QA"]["Acc@QA"] >= 60.0
    assert record["summary"]["questions"] == n


def test_run_resumes_without_repeating_a_request(demo, tmp_path):
    from fastvqa.demo.vision_server import DemoVisionModel

    root, _ = demo
    n = len(_questions(root))
    model, lock, answered = DemoVisionModel(), threading.Lock(), []

    def failing_after_half(messages):
        with lock:
            if len(answered) >= n // 2:
                return Reply(500, {"error": {"message": "the server went down"}})
            answered.append(1)
        return model(messages)

    out = tmp_path / "run"
    with serve_chat_model(failing_after_half) as served:
        assert main(_argv(root, out, served.base_url, "--concurrency", "1")) == 2
    assert not (out / "qa.json").exists()  # nothing half-written
    assert (out / "cache").is_dir()
    with serve_chat_model(model) as served:
        assert main(_argv(root, out, served.base_url)) == 0
        # only the questions not answered before the failure
        assert served.stats.requests == n - len(answered)
    first = {name: (out / name).read_bytes() for name in FILES}
    with serve_chat_model(model) as served:
        assert main(_argv(root, out, served.base_url)) == 0
        assert served.stats.requests == 0
    assert {name: (out / name).read_bytes() for name in FILES} == first


def test_run_shards_then_assembles_from_the_cache(demo, tmp_path):
    from fastvqa.demo.vision_server import DemoVisionModel

    root, _ = demo
    n = len(_questions(root))
    out = tmp_path / "run"
    model = DemoVisionModel()
    with serve_chat_model(model) as served:
        for i in (0, 1):
            assert main(_argv(root, out, served.base_url, "--shard", f"{i}/2")) == 0
        assert served.stats.requests == n
        shard_keys = [json.loads(line)["key"] for i in (0, 1) for line in
                      (out / f"shard-{i}-of-2" / "responses.jsonl").read_text().splitlines()]
        assert len(shard_keys) == n and len(set(shard_keys)) == n  # a partition
        assert main(_argv(root, out, served.base_url)) == 0
        assert served.stats.requests == n  # the assembling run asked nothing
    assert (out / "run.json").is_file()


def test_run_refuses_to_overwrite_other_files(demo, tmp_path, capsys):
    from fastvqa.demo.vision_server import DemoVisionModel

    root, _ = demo
    out = tmp_path / "run"
    out.mkdir()
    (out / "qa.json").write_text("mine\n")
    with serve_chat_model(DemoVisionModel()) as served:
        assert main(_argv(root, out, served.base_url, "--limit", "2")) == 2
    assert "exists with other contents" in capsys.readouterr().err
    assert (out / "qa.json").read_text() == "mine\n"


def test_run_devi_through_two_servers(demo, tmp_path, capsys):
    """DeVi with its captions from the pixel-reading server (the paper's caption
    prompt, with each segment's span and frame count, sent with the frames)
    and its reasoning from the demo's language model behind a second server."""
    from fastvqa.demo.devi_models import DemoLanguageModel
    from fastvqa.demo.vision_server import DemoVisionModel

    root, _ = demo
    n = len(_questions(root))
    vision, seen = DemoVisionModel(), []

    def captioner(messages):
        seen.append(messages)
        return vision(messages)

    out = tmp_path / "run"
    with serve_chat_model(captioner) as vlm, serve_chat_model(DemoLanguageModel()) as llm:
        argv = ["run", "devi", "deveqa", "--gt", str(root / "deveqa.json"), "--videos",
                str(root / "videos"), "--out", str(out), "--vlm-url", vlm.base_url,
                "--vlm-model", "demo-vision", "--llm-url", llm.base_url, "--llm-model", "demo",
                "--encoder", "demo", "--segment-lengths", "2.5,5,10",
                "--segment-frames", "5,7,13", "--image-format", "png", "--no-progress"]
        assert main(argv) == 0
        assert llm.stats.requests >= n  # at least one answer per question
    # 8-s videos: 4 + 2 + 1 segments per video, each one caption request
    assert vlm.stats.requests == 3 * (4 + 2 + 1)
    from fastvqa.llm.images import message_text

    user = message_text(seen[0][-1])
    assert "Clip from 0.0 s to 2.5 s (5 frames)." in user
    record = json.loads((out / "run.json").read_text())
    assert record["pipeline"] == "devi" and record["summary"]["questions"] == n
    assert record["scores"]["grounded QA"]["Acc@QA"] >= 60.0


def test_self_consistency_fires_changes_answers_and_is_counted(demo, tmp_path, capsys):
    """A language model that first answers the option its own evidence
    supports least: the encoder's score (the frames of the span it gave
    against the option's text) is below the threshold, DeVi re-asks with the
    paper's verification prompt, the model reconsiders and changes to the
    right answer, and the report and run.json count each change. One video's
    visual memory comes from a feature store (``--store``)."""
    from fastvqa.demo.devi_models import LETTERS, _PREVIOUS, DemoLanguageModel
    from fastvqa.demo.vision_server import DemoVisionModel
    from tests.test_devi import demo_feature_store

    class Hasty(DemoLanguageModel):
        def _answer(self, user):
            found = self._evidence(user)
            if found is None or _PREVIOUS.search(user) is not None:
                return super()._answer(user)  # re-asked: reconsiders as the demo model does
            scores, spans = found
            worst = int(np.argmin(scores))
            a, b = spans[worst] or (0.0, 0.0)
            return f"The answer is ({LETTERS[worst]}). The supporting event is at {a:.1f}s - {b:.1f}s."

    root, bench = demo
    qs = _questions(root)
    first = sorted({q["video_id"] for q in qs})[0]
    files = {Path(p).stem: p for p in bench.videos}
    demo_feature_store(tmp_path / "store", {first: files[first]})
    out = tmp_path / "run"
    with serve_chat_model(DemoVisionModel()) as vlm, serve_chat_model(Hasty()) as llm:
        argv = ["run", "devi", "deveqa", "--gt", str(root / "deveqa.json"), "--videos",
                str(root / "videos"), "--out", str(out), "--vlm-url", vlm.base_url,
                "--vlm-model", "demo-vision", "--llm-url", llm.base_url, "--llm-model", "hasty",
                "--encoder", "demo", "--segment-lengths", "2.5,5,10",
                "--segment-frames", "5,7,13", "--image-format", "png", "--no-progress",
                "--store", str(tmp_path / "store")]
        assert main(argv) == 0
        verify_requests = llm.stats.requests - 3 * len(qs)  # context, synopsis, answer each
    err = capsys.readouterr().err
    assert "visual memory: 1 of 3 videos read from" in err
    assert "latency per stage" in err and "verify" in err
    c = json.loads((out / "run.json").read_text())["consistency"]
    assert c["questions"] == len(qs) and c["prompts"] == verify_requests >= c["reasked"] >= 1
    assert c["changed"] >= 1 and c["helped"] >= 1 and c["hurt"] == 0
    assert c["final"]["Acc@QA"] > c["initial"]["Acc@QA"]
    assert f"self-consistency (threshold 0.6): {c['reasked']} of {len(qs)} questions re-asked" \
        in err
    outcomes = [json.loads(line) for line in (out / "outcomes.jsonl").read_text().splitlines()]
    assert sum("self-consistency re-asks" in o["parse"] for o in outcomes) == c["reasked"]


def _benchmark_files(root, bench, name):
    """The demo's multiple-choice questions written in benchmark ``name``'s
    released layout (video ids = the demo's), under ``root / name``."""
    import csv

    qs = [q for q in bench.annotations["questions"] if "options" in q]
    folder = root / name
    folder.mkdir(exist_ok=True)
    if name == "nextgqa":
        extra = ["jumps", "waves", "sinks", "spins"]  # NExT-GQA has five options
        gsub, rows = {}, []
        for k, q in enumerate(q for q in qs if len(q["options"]) <= 5):
            entry = gsub.setdefault(q["video"], {"duration": bench.annotations["duration"],
                                                 "fps": 10, "location": {}})
            entry["location"][str(k)] = q["spans"]
            opts = (list(q["options"]) + [e for e in extra if e not in q["options"]])[:5]
            rows.append([q["video"], 80, 320, 240, q["text"], opts[q["answer_index"]], k, "TN",
                         *opts])
        (folder / "gsub_test.json").write_text(json.dumps(gsub))
        with open(folder / "test.csv", "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(["video_id", "frame_count", "width", "height", "question", "answer",
                        "qid", "type", "a0", "a1", "a2", "a3", "a4"])
            w.writerows(rows)
        return folder
    if name == "sokbench":
        items = [{"video": q["video"], "question": q["text"],
                  "answer": {"direct": q["options"][q["answer_index"]], "choices": q["options"],
                             "right_choice": q["answer_index"]}} for q in qs]
        (folder / "mc.json").write_text(json.dumps({"Action": items}))
        return folder / "mc.json"
    items = [{"question": q["text"], "answer": q["options"][q["answer_index"]],
              "evidences": [{"0": q["spans"][0]}], "duration": bench.annotations["duration"],
              "video_id": q["video"]} for q in qs]
    (folder / "test.json").write_text(json.dumps(items))
    return folder


@pytest.mark.parametrize("name", ["nextgqa", "sokbench", "wildqa"])
def test_run_vlm_reads_every_benchmark_through_its_loader(demo, tmp_path, capsys, name):
    """The loaders' records feed the harness for every benchmark, and the
    files it writes are the ones ``fastvqa eval`` scores."""
    from fastvqa.data.benchmarks import load_benchmark
    from fastvqa.demo.vision_server import DemoVisionModel

    root, bench = demo
    gt = _benchmark_files(tmp_path, bench, name)
    n = len(load_benchmark(name, gt))
    out = tmp_path / "run"
    with serve_chat_model(DemoVisionModel()) as served:
        argv = ["run", "vlm", name, "--gt", str(gt), "--videos", str(root / "videos"),
                "--out", str(out), "--vlm-url", served.base_url, "--vlm-model", "demo",
                "--no-progress"]
        assert main(argv) == 0
        assert served.stats.requests == n
    record = json.loads((out / "run.json").read_text())
    assert record["summary"]["questions"] == n
    capsys.readouterr()
    if name == "nextgqa":
        assert main(["eval", "nextgqa", "--gt", str(gt), "--pred", str(out / "ground.json"),
                     "--qa", str(out / "qa.json"), "--json"]) == 0
        assert json.loads(capsys.readouterr().out)["metrics"] == \
            record["scores"]["grounded QA"]
        assert record["scores"]["grounded QA"]["Acc@QA"] >= 60.0  # chance: 20 %
    elif name == "sokbench":
        assert main(["eval", "sokbench", "--gt", str(gt), "--pred", str(out / "pred.json"),
                     "--json"]) == 0
        assert json.loads(capsys.readouterr().out)["metrics"] == \
            record["scores"]["multiple choice"]
        # the same as SOK-Bench's rule over the raw replies (parse, else BLEU)
        assert main(["eval", "sokbench", "--gt", str(gt), "--pred-text",
                     str(out / "responses.jsonl"), "--json"]) == 0
        assert json.loads(capsys.readouterr().out)["metrics"] == \
            record["scores"]["multiple choice"]
    else:
        answers = json.loads((out / "answers.json").read_text())
        evidence = json.loads((out / "evidence.json").read_text())
        assert len(answers) == len(evidence) == n
        assert set(record["scores"]) == {"answers", "evidence"}


@pytest.mark.parametrize("name", ["nextgqa", "sokbench", "wildqa"])
def test_run_devi_reads_every_other_benchmark(demo, tmp_path, name):
    """DeVi over NExT-GQA's, SOK-Bench's and WildQA's records (their loaders,
    their files), scored by fastvqa eval's rules; WildQA's open questions are
    answered in free text (fastvqa's open answer prompt) and grounded."""
    from fastvqa.data.benchmarks import load_benchmark
    from fastvqa.demo.devi_models import DemoLanguageModel
    from fastvqa.demo.vision_server import DemoVisionModel

    root, bench = demo
    gt = _benchmark_files(tmp_path, bench, name)
    n = len(load_benchmark(name, gt))
    out = tmp_path / "run"
    with serve_chat_model(DemoVisionModel()) as vlm, \
            serve_chat_model(DemoLanguageModel()) as llm:
        argv = ["run", "devi", name, "--gt", str(gt), "--videos", str(root / "videos"),
                "--out", str(out), "--vlm-url", vlm.base_url, "--vlm-model", "demo-vision",
                "--llm-url", llm.base_url, "--llm-model", "demo", "--encoder", "demo",
                "--segment-lengths", "2.5,5,10", "--segment-frames", "5,7,13",
                "--image-format", "png", "--no-progress"]
        assert main(argv) == 0
    record = json.loads((out / "run.json").read_text())
    assert record["summary"]["questions"] == record["consistency"]["questions"] == n
    if name == "wildqa":
        gold = [item["answer"] for item in json.loads((gt / "test.json").read_text())]
        said = json.loads((out / "answers.json").read_text())
        assert sum(a == g for a, g in zip(said, gold)) >= 0.6 * n  # the gold option's words
        assert all(spans for spans in json.loads((out / "evidence.json").read_text()))
        assert set(record["scores"]) == {"answers", "evidence"}
        return
    task = "grounded QA" if name == "nextgqa" else "multiple choice"
    assert record["scores"][task]["Acc@QA" if name == "nextgqa" else "Acc"] >= 60.0


ORDINALS = ("first", "second", "third", "fourth", "fifth")


def test_a_judge_model_reads_what_the_rules_cannot_and_is_counted_apart(demo, tmp_path):
    """The vision model names its option as an ordinal ("the second one"),
    which no rule reads; the judge (a server that reads the reply it is shown)
    turns it into a letter. Without --judge-url no option is read."""
    from fastvqa.demo.vision_server import DemoVisionModel
    from fastvqa.llm.images import message_text

    root, _ = demo
    n = len(_questions(root))
    vision = DemoVisionModel()

    def ordinal_replies(messages):
        reply = vision(messages)
        head, _, rest = reply.partition("\n")
        letter = head.split(":")[1].strip()
        return f"I pick the {ORDINALS['ABCDE'.index(letter)]} one.\n{rest}"

    def judge(messages):
        shown = message_text(messages[-1]).split("The model's reply:", 1)[1]
        for k, word in enumerate(ORDINALS):
            if f"the {word} one" in shown:
                return "ABCDE"[k]
        return "none"

    with serve_chat_model(vision) as plain:  # the rules' own reading, for the expected scores
        assert main(_argv(root, tmp_path / "plain", plain.base_url)) == 0
    want = json.loads((tmp_path / "plain" / "run.json").read_text())["scores"]
    with serve_chat_model(ordinal_replies) as vlm, serve_chat_model(judge) as judged:
        assert main(_argv(root, tmp_path / "judged", vlm.base_url, "--judge-url",
                          judged.base_url, "--judge-model", "j")) == 0
        assert judged.stats.requests == n
        assert main(_argv(root, tmp_path / "rules", vlm.base_url)) == 0
    record = json.loads((tmp_path / "judged" / "run.json").read_text())
    assert record["summary"]["judged"] == n
    assert record["scores"] == want
    outcome = json.loads((tmp_path / "judged" / "outcomes.jsonl").read_text().splitlines()[0])
    assert outcome["judged"] and outcome["parse"].startswith("option by the judge model")
    rules = json.loads((tmp_path / "rules" / "run.json").read_text())
    assert rules["summary"]["judged"] == 0 and rules["summary"]["no_option_or_answer"] == n
    assert rules["scores"]["grounded QA"]["Acc@QA"] == 0.0


def test_sokbench_reply_without_an_option_goes_to_the_papers_bleu_rule(tmp_path):
    """SOK-Bench scores an output it cannot parse by the option of highest
    BLEU against it (sokbench.md section 3.1): the run keeps such a reply's
    text in pred.json, so fastvqa eval applies that rule, not a zero."""
    from fastvqa.data.benchmarks import load_benchmark
    from fastvqa.evaluation import sokbench
    from fastvqa.run.harness import NO_OPTION, Outcome
    from fastvqa.run.outputs import prediction_texts, write_files

    choices = ["the red cube slides to the left", "the blue ball flies away",
               "nothing moves at all"]
    gt = tmp_path / "mc.json"
    gt.write_text(json.dumps({"Action": [{"video": "v1", "question": "What happens?",
                                          "answer": {"direct": choices[0], "choices": choices,
                                                     "right_choice": 0}}]}))
    record = load_benchmark("sokbench", gt)[0]
    # No option letter or index, and no option's text whole: the parser reads none.
    reply = "Well, the red cube slides slowly to the left side."
    texts = prediction_texts("sokbench", [record], [Outcome(record.key, reply, NO_OPTION, [],
                                                            "", "option: none", False, 0.0)])
    assert json.loads(texts["pred.json"]) == {record.key: reply}
    (tmp_path / "run").mkdir()
    write_files(tmp_path / "run", texts)
    # By hand: only the first choice shares a 4-gram ("the red cube slides") with
    # the reply, so only its unsmoothed BLEU-4 is above zero: it is picked, and right.
    assert sokbench.evaluate(gt=gt, pred=tmp_path / "run" / "pred.json")["Acc"] == 100.0
