# SPDX-License-Identifier: Apache-2.0
"""Query stores (``fastvqa extract BENCHMARK --text-recipe NAME``): text
recipes, a tiny random-init CLIP saved in a local folder (``hf:FOLDER``) and
a ``module:function`` encoder, resumption, shards, failures and pairing.
Expected token ids and positions are counted by hand; CLIP's vectors are the
model's own forward pass on those ids, run here without fastvqa."""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("safetensors")
torch = pytest.importorskip("torch")

from fastvqa.cli import main  # noqa: E402
from fastvqa.data import QARecord  # noqa: E402
from fastvqa.errors import InputError  # noqa: E402
from fastvqa.extract import (  # noqa: E402
    RECIPES,
    TEXT_RECIPES,
    FeatureStore,
    Recipe,
    StoreError,
    TextRecipe,
    run_text,
)

# The tiny CLIP's hand-written vocabulary (tests/test_llm_encoders.py): the
# letters 0-25, "<letter></w>" 26-51, "ca" 52, "cat</w>" 53, start 54, end 55.
SOT, EOT, CAT, A_END = 54, 55, 53, 26

QUERIES = [
    {"qid": 1, "query": "a cat", "vid": "v1", "duration": 10},
    {"qid": 2, "query": "cat cat cat", "vid": "v2", "duration": 8},
    {"qid": 3, "query": "zebra", "vid": "v1", "duration": 10},
]

ENCODER = '''
import numpy as np

CALLS = []


def words(texts):
    """One row per word: [its length, its place in the text]."""
    CALLS.append(list(texts))
    return [np.array([[len(w), i] for i, w in enumerate(t.split())], np.float32) for t in texts]


def pooled(texts):
    """One vector per text: [its length, its spaces]."""
    CALLS.append(list(texts))
    return np.array([[len(t), t.count(" ")] for t in texts], np.float32)
'''


@pytest.fixture(scope="module")
def hf_folder(tmp_path_factory):
    pytest.importorskip("transformers")
    from tests.test_llm_encoders import _tiny_hf_clip

    return _tiny_hf_clip(tmp_path_factory.mktemp("tiny-clip"))


@pytest.fixture
def encoder(tmp_path, monkeypatch):
    """The module ``fake_text_encoder`` (its CALLS emptied), importable by name."""
    (tmp_path / "fake_text_encoder.py").write_text(ENCODER)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "fake_text_encoder", raising=False)
    import fake_text_encoder

    yield fake_text_encoder
    sys.modules.pop("fake_text_encoder", None)


@pytest.fixture
def gt(tmp_path):
    path = tmp_path / "val.jsonl"
    path.write_text("".join(json.dumps(q) + "\n" for q in QUERIES))
    return path


def _files(store: Path) -> dict:
    return {p.relative_to(store).as_posix(): p.read_bytes()
            for p in sorted(store.rglob("*")) if p.is_file()}


def _clip(folder):
    from transformers import CLIPModel

    return CLIPModel.from_pretrained(folder).eval()


def _hidden(model, ids):
    """The text model's last hidden state for one text's token ids."""
    with torch.no_grad():
        return model.text_model(input_ids=torch.tensor([ids])).last_hidden_state[0].numpy()


def _pooled(model, ids):
    with torch.no_grad():
        out = model.get_text_features(input_ids=torch.tensor([ids]))
        out = (out if torch.is_tensor(out) else out.pooler_output)[0].numpy().astype(np.float64)
    return out / np.linalg.norm(out)


def _cli(capsys, *args):
    code = main([str(a) for a in args])
    out, err = capsys.readouterr()
    return code, out, err


# ------------------------------------------------------------------ recipes


def test_text_recipe_hash_is_sha256_of_the_canonical_json():
    recipe = TextRecipe(name="t", text="question+option", output="pooled", model="hf:x",
                        max_tokens=32, batch=8, pair="ab" * 32, source="a citation")
    fields = {"name": "t", "text": "question+option", "output": "pooled", "model": "hf:x",
              "max_tokens": 32, "dtype": "float32", "batch": 8, "pair": "ab" * 32}
    text = json.dumps(fields, sort_keys=True, separators=(",", ":"))
    assert recipe.hash == hashlib.sha256(text.encode()).hexdigest()
    assert TextRecipe.from_dict(recipe.to_dict()) == recipe
    assert recipe.replace(source="another").hash == recipe.hash
    assert recipe.replace(pair="cd" * 32).hash != recipe.hash  # the pairing is hashed


@pytest.mark.parametrize("changes, message", [
    ({"text": "answer"}, "text must be one of question, question\\+option"),
    ({"output": "mean"}, "output must be one of tokens, pooled"),
    ({"max_tokens": 0}, "max_tokens must be an integer >= 1"),
    ({"batch": True}, "batch must be an integer >= 1"),
    ({"pair": "qvhighlights-clip"}, "pair must be a video recipe's hash"),
])
def test_text_recipe_refuses_bad_fields(changes, message):
    with pytest.raises(InputError, match=message):
        TextRecipe(name="t", **changes)


def test_builtin_text_recipes_pair_with_the_papers_video_recipes():
    q = TEXT_RECIPES["question-clip"]
    assert (q.text, q.output, q.model, q.max_tokens) == ("question", "tokens",
                                                          "open_clip:ViT-B-32", 77)
    assert q.pair == RECIPES["qvhighlights-clip"].hash
    assert TEXT_RECIPES["question-clip-pooled"].output == "pooled"
    assert TEXT_RECIPES["options-clip-pooled"].pair == RECIPES["devi-clip"].hash
    for recipe in TEXT_RECIPES.values():
        assert recipe.source and TextRecipe.from_dict(recipe.to_dict()).hash == recipe.hash


# ------------------------------------------------------------ CLIP (hf:FOLDER)


def test_cli_hf_clip_tokens_are_the_models_hidden_states(hf_folder, gt, tmp_path, capsys):
    out = tmp_path / "q"
    code, stdout, _ = _cli(capsys, "extract", "qvhighlights", "--text-recipe", "question-clip",
                           "--gt", gt, "--out", out, "--model", f"hf:{hf_folder}", "--split",
                           "val")
    assert code == 0 and "3 records encoded" in stdout
    store = FeatureStore(out)
    assert store.videos() == ["v1_1", "v1_3", "v2_2"]  # record keys, sorted
    model = _clip(hf_folder)
    # "a cat": start, "a</w>", "cat</w>", end; "zebra": start, z e b r a</w>, end
    for key, ids in (("v1_1", [SOT, A_END, CAT, EOT]), ("v2_2", [SOT, CAT, CAT, CAT, EOT]),
                     ("v1_3", [SOT, 25, 4, 1, 17, A_END, EOT])):
        got = store.load(key)
        n = len(ids)
        assert got.features.shape == (n, 32) and got.features.dtype == np.float32
        np.testing.assert_array_equal(got.start, np.arange(n))  # token positions
        np.testing.assert_array_equal(got.end, np.arange(1, n + 1))
        np.testing.assert_allclose(got.features, _hidden(model, ids), atol=1e-5)
        assert got.record["text_tokens"] == [n] and got.record["texts"] == 1
    rec = store.load("v1_1").record
    assert rec["text_sha256"] == hashlib.sha256(b'["a cat"]').hexdigest()
    assert (rec["benchmark"], rec["video_id"], rec["question_id"]) == ("qvhighlights", "v1", "1")
    head = store.header
    assert head["kind"] == "text" and head["model"] == f"hf:{hf_folder.name}"
    assert head["weights"].startswith("folder ") and len(head["weights"]) == 7 + 64
    # no --pair-with: the recipe's own pairing, Moment-DETR's 2-s CLIP clips
    assert head["pair"] == {"video_recipe": "qvhighlights-clip",
                            "video_recipe_hash": RECIPES["qvhighlights-clip"].hash}
    assert head["recipe"]["pair"] == RECIPES["qvhighlights-clip"].hash


def test_hf_clip_pooled_row_and_max_tokens(hf_folder, tmp_path):
    records = [QARecord("v1", "1", "a cat"), QARecord("v2", "2", "cat cat cat")]
    run_text(records, "question-clip-pooled", out=tmp_path / "p", model=f"hf:{hf_folder}",
             progress=False)
    model = _clip(hf_folder)
    got = FeatureStore(tmp_path / "p").load("v1_1")
    assert got.features.shape == (1, 16)
    np.testing.assert_array_equal(got.start, [0.0])
    np.testing.assert_array_equal(got.end, [4.0])  # the one row stands for the 4 tokens read
    np.testing.assert_allclose(got.features[0], _pooled(model, [SOT, A_END, CAT, EOT]),
                               atol=1e-5)
    # max_tokens 3: the tokenizer keeps the start and end tokens around one "cat"
    short = TEXT_RECIPES["question-clip"].replace(name="short", max_tokens=3)
    run_text(records, short, out=tmp_path / "s", model=f"hf:{hf_folder}", progress=False)
    got = FeatureStore(tmp_path / "s").load("v2_2")
    np.testing.assert_allclose(got.features, _hidden(model, [SOT, CAT, EOT]), atol=1e-5)
    np.testing.assert_array_equal(got.end, [1.0, 2.0, 3.0])


def test_hf_shards_union_equals_one_run_byte_for_byte(hf_folder, tmp_path):
    records = [QARecord(f"v{i}", str(i), q) for i, q in
               enumerate(["a cat", "cat", "zebra", "a", "cat cat", "bat"])]
    recipe = TEXT_RECIPES["question-clip"].replace(name="pairs", batch=2)
    run_text(records, recipe, out=tmp_path / "whole", model=f"hf:{hf_folder}", progress=False)
    union, written = {}, []
    for i in range(2):
        part = tmp_path / f"shard{i}"
        summary = run_text(records, recipe, out=part, model=f"hf:{hf_folder}",
                           shard=f"{i}/2", progress=False)
        written.append(summary.written)
        union.update(_files(part))
    # groups of 2 in id order: [v0_0 v1_1] [v2_2 v3_3] [v4_4 v5_5]; shard 0 takes the 1st and 3rd
    assert written == [4, 2]
    assert union == _files(tmp_path / "whole")


# ------------------------------------------------------ module:function encoders


def test_cli_module_function_tokens_by_hand(encoder, gt, tmp_path, capsys):
    out = tmp_path / "q"
    code, _, err = _cli(capsys, "extract", "qvhighlights", "--text-recipe", "question-clip",
                        "--gt", gt, "--out", out, "--model", "fake_text_encoder:words")
    assert code == 0, err
    assert encoder.CALLS == [["a cat", "zebra", "cat cat cat"]]  # one batch, id order
    store = FeatureStore(out)
    got = store.load("v2_2")
    np.testing.assert_array_equal(got.features, [[3, 0], [3, 1], [3, 2]])
    np.testing.assert_array_equal(got.start, [0, 1, 2])
    np.testing.assert_array_equal(got.end, [1, 2, 3])
    assert store.header["weights"] == "callable" and store.header["model_sha256"] is None
    assert store.header["model"] == "fake_text_encoder:words"
    # a second run encodes nothing
    code, stdout, _ = _cli(capsys, "extract", "qvhighlights", "--text-recipe", "question-clip",
                           "--gt", gt, "--out", out, "--model", "fake_text_encoder:words")
    assert code == 0 and len(encoder.CALLS) == 1
    assert "0 records encoded" in stdout and "3 already in the store" in stdout
    # the shards of the CLI cover the records once
    for i in range(2):
        _cli(capsys, "extract", "qvhighlights", "--text-recipe", "question-clip", "--gt", gt,
             "--out", tmp_path / "sharded", "--model", "fake_text_encoder:words",
             "--shard", f"{i}/2")
    assert _files(tmp_path / "sharded") == _files(out)


def test_question_and_option_texts_pooled_positions(encoder, tmp_path):
    records = [QARecord("v1", "1", "why", ["rain", "a sun"]),
               QARecord("v2", "2", "who", [])]  # no options: recorded as failed
    summary = run_text(records, "options-clip-pooled", out=tmp_path / "o",
                       model="fake_text_encoder:pooled", progress=False)
    assert (summary.written, summary.failed) == (1, 1)
    assert encoder.CALLS == [["why rain", "why a sun"]]
    store = FeatureStore(tmp_path / "o")
    got = store.load("v1_1")
    np.testing.assert_array_equal(got.features, [[8, 1], [9, 2]])
    # a function's vector reports no token count: each text stands for one position
    np.testing.assert_array_equal(got.start, [0, 1])
    np.testing.assert_array_equal(got.end, [1, 2])
    assert got.record["texts"] == 2 and got.record["text_tokens"] == [1, 1]
    assert "no answer options" in store.failures()["v2_2"]["error"]


def test_a_killed_run_resumes_and_encodes_only_what_is_left(tmp_path):
    calls = []

    def words(texts):
        calls.append(list(texts))
        if len(calls) == 3 and stop:
            raise KeyboardInterrupt  # as a kill between two batches would
        return [np.full((len(t.split()), 2), float(len(t))) for t in texts]

    records = [QARecord(f"v{i}", str(i), "x " * (i + 1)) for i in range(5)]
    recipe = TEXT_RECIPES["question-clip"].replace(name="one-by-one", batch=1)
    stop = False
    run_text(records, recipe, out=tmp_path / "clean", model=words, model_name="words",
             progress=False)
    calls.clear()
    stop = True
    with pytest.raises(KeyboardInterrupt):
        run_text(records, recipe, out=tmp_path / "q", model=words, model_name="words",
                 progress=False)
    assert FeatureStore(tmp_path / "q").videos() == ["v0_0", "v1_1"]
    (tmp_path / "q" / "features" / ".v3_3.safetensors.0123456789ab.part").write_bytes(b"half")
    calls.clear()
    stop = False
    again = run_text(records, recipe, out=tmp_path / "q", model=words, model_name="words",
                     progress=False)
    assert calls == [["x x x "], ["x x x x "], ["x x x x x "]]
    assert (again.written, again.existing) == (3, 2)
    assert _files(tmp_path / "q") == _files(tmp_path / "clean")  # leftover removed too
    calls.clear()
    last = run_text(records, recipe, out=tmp_path / "q", model=words, model_name="words",
                    progress=False)
    assert calls == [] and (last.written, last.existing) == (0, 5)


def test_failures_are_recorded_skipped_and_retried(encoder, tmp_path, capsys):
    path = tmp_path / "val.jsonl"
    path.write_text("".join(json.dumps(q) + "\n" for q in
                            [QUERIES[0], {**QUERIES[1], "query": "  "}]))
    args = ["extract", "qvhighlights", "--text-recipe", "question-clip", "--gt", path,
            "--out", tmp_path / "q", "--model", "fake_text_encoder:words", "--no-progress"]
    code, stdout, _ = _cli(capsys, *args)
    assert code == 1 and "1 failed" in stdout  # a failure sets the exit status
    store = FeatureStore(tmp_path / "q")
    assert store.failures()["v2_2"]["error"] == "no question text to encode"
    code, stdout, _ = _cli(capsys, *args)
    assert code == 0 and "1 skipped as failed before" in stdout
    done = (tmp_path / "q" / "features" / "v1_1.safetensors").read_bytes()
    code, stdout, _ = _cli(capsys, *args, "--retry-failed")
    assert code == 1 and "1 failed" in stdout
    # An empty question never reaches the model; a retry encodes its group of
    # records again (a record is always encoded beside the same others) but
    # writes only the retried one.
    assert encoder.CALLS == [["a cat"], ["a cat"]]
    assert (tmp_path / "q" / "features" / "v1_1.safetensors").read_bytes() == done


def test_other_recipe_model_pairing_or_changed_text_is_refused(encoder, tmp_path, capsys):
    records = [QARecord("v1", "1", "a cat")]
    out = tmp_path / "q"
    run_text(records, "question-clip", out=out, model="fake_text_encoder:words",
             progress=False)
    before = _files(out)
    with pytest.raises(StoreError, match="another recipe"):
        run_text(records, "question-clip-pooled", out=out, model="fake_text_encoder:pooled",
                 progress=False)
    with pytest.raises(StoreError, match="another model"):
        run_text(records, "question-clip", out=out, model="fake_text_encoder:pooled",
                 progress=False)
    video = _video_store(tmp_path / "video", Recipe(name="other", sampler="fps:1",
                                                    time="grid", model="hand"))
    with pytest.raises(StoreError, match="another recipe.*pair"):
        run_text(records, "question-clip", out=out, model="fake_text_encoder:words",
                 pair_with=video, progress=False)
    assert _files(out) == before
    changed = [QARecord("v1", "1", "a dog")]
    with pytest.raises(StoreError, match="encoded from other text.*--repair"):
        run_text(changed, "question-clip", out=out, model="fake_text_encoder:words",
                 progress=False)
    fixed = run_text(changed, "question-clip", out=out, model="fake_text_encoder:words",
                     repair=True, progress=False)
    assert fixed.written == 1 and list((out / "quarantine" / "features").iterdir())
    assert FeatureStore(out).load("v1_1").record["text_sha256"] == \
        hashlib.sha256(b'["a dog"]').hexdigest()


def _video_store(path: Path, recipe: Recipe) -> Path:
    FeatureStore.create(path, {"recipe": recipe.to_dict(), "recipe_hash": recipe.hash,
                               "model": "hand", "model_sha256": None, "weights": "none"})
    return path


def test_pair_with_records_the_video_store_and_refuses_a_query_store(encoder, gt, tmp_path,
                                                                      capsys):
    recipe = Recipe(name="hand-2s", sampler="fps:0.5", time="grid", model="hand")
    video = _video_store(tmp_path / "video", recipe)
    code, _, err = _cli(capsys, "extract", "qvhighlights", "--text-recipe", "question-clip",
                        "--gt", gt, "--out", tmp_path / "q", "--model",
                        "fake_text_encoder:words", "--pair-with", video)
    assert code == 0, err
    head = FeatureStore(tmp_path / "q").header
    assert head["pair"] == {"video_recipe": "hand-2s", "video_recipe_hash": recipe.hash}
    assert head["recipe"]["pair"] == recipe.hash
    assert head["recipe_hash"] != TEXT_RECIPES["question-clip"].hash
    code, _, err = _cli(capsys, "extract", "qvhighlights", "--text-recipe", "question-clip",
                        "--gt", gt, "--out", tmp_path / "q2", "--model",
                        "fake_text_encoder:words", "--pair-with", tmp_path / "q")
    assert code == 2 and "is a query store" in err and len(err.strip().splitlines()) == 1


# ---------------------------------------------------------------- the command


@pytest.mark.parametrize("argv, message", [
    (["qvhighlights", "--gt", "{gt}", "--model", "nothing"], "unknown text model 'nothing'"),
    (["qvhighlights", "--gt", "{gt}", "--model", "fastvqa:tiny-frames"],
     "unknown text model 'fastvqa:tiny-frames'"),
    (["qvhighlights", "--gt", "{gt}", "--model", "no_such_module_zz:f"], "cannot import"),
    (["qvhighlights", "--gt", "{gt}", "--model", "fake_text_encoder:nope"],
     "has no 'nope'"),
    (["qvhighlights", "--gt", "{gt}", "--model", "fake_text_encoder:pooled"],
     "a tokens recipe needs [n_tokens, D] token rows per text"),
    (["qvhighlights"], "--text-recipe needs --gt PATH"),
    (["{gt}", "--gt", "{gt}"], "is not a benchmark"),
    (["qvhighlights", "--gt", "{gt}", "--engine", "ray"], "--engine goes with --recipe"),
    (["qvhighlights", "--gt", "{gt}", "--workers", "2"], "--workers goes with --recipe"),
    (["qvhighlights", "--gt", "{gt}", "--shard", "2/2"], "need 0 <= i < n"),
])
def test_bad_text_arguments_are_one_line_errors(encoder, gt, tmp_path, capsys, argv, message):
    argv = [a.replace("{gt}", str(gt)) for a in argv]
    code, _, err = _cli(capsys, "extract", *argv, "--text-recipe", "question-clip", "--out",
                        tmp_path / "q")
    assert code == 2
    assert len(err.strip().splitlines()) == 1 and message in err, err


def test_text_options_with_a_video_recipe_are_refused(gt, tmp_path, capsys):
    code, _, err = _cli(capsys, "extract", tmp_path, "--recipe", "devi-clip", "--gt", gt,
                        "--out", tmp_path / "q")
    assert code == 2 and "--gt goes with --text-recipe" in err
    code, _, err = _cli(capsys, "extract", "--recipe", "devi-clip", "--out", tmp_path / "q")
    assert code == 2 and "give the videos" in err


def test_old_benchmark_spelling_works_with_its_notice(encoder, gt, tmp_path, capsys):
    code, _, err = _cli(capsys, "extract", "--text-recipe", "question-clip", "--gt", gt,
                        "--benchmark", "qvhighlights", "--out", tmp_path / "q", "--model",
                        "fake_text_encoder:words")
    assert code == 0
    assert "fastvqa extract: --benchmark NAME is now the positional BENCHMARK" in err
    assert FeatureStore(tmp_path / "q").videos() == ["v1_1", "v1_3", "v2_2"]


def test_progress_off_a_terminal_is_a_log_line(encoder, gt, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("FASTVQA_PROGRESS_INTERVAL", "0")
    code, _, err = _cli(capsys, "extract", "qvhighlights", "--text-recipe", "question-clip",
                        "--gt", gt, "--out", tmp_path / "q", "--model",
                        "fake_text_encoder:words")
    assert code == 0
    lines = [line for line in err.splitlines() if line.startswith("encoding:")]
    assert lines and lines[-1].startswith("encoding: 3/3 records, 100.0%")
    assert "\r" not in err


def test_store_info_shows_the_pairing(encoder, gt, tmp_path, capsys):
    _cli(capsys, "extract", "qvhighlights", "--text-recipe", "question-clip", "--gt", gt,
         "--out", tmp_path / "q", "--model", "fake_text_encoder:words")
    code, out, _ = _cli(capsys, "store", "info", tmp_path / "q")
    short = RECIPES["qvhighlights-clip"].hash[:12]
    assert code == 0 and f"pairs     qvhighlights-clip ({short})" in out
    # one row per word: "a cat" 2, "cat cat cat" 3, "zebra" 1
    assert "records   3" in out and "features  6 x [2] float32" in out


def test_open_clip_random_weights_are_said_aloud(tmp_path, capsys):
    try:
        import open_clip  # noqa: F401
    except Exception as err:
        pytest.skip(f"open_clip does not import here ({type(err).__name__})")
    summary = run_text([QARecord("v1", "1", "a cat")], "question-clip", out=tmp_path / "q",
                       model="open_clip:ViT-S-32-alt", progress=False)
    assert summary.written == 1
    assert "RANDOM weights" in capsys.readouterr().err
    store = FeatureStore(tmp_path / "q")
    assert store.header["weights"] == "random"
    got = store.load("v1_1")
    assert got.features.shape[0] == got.record["text_tokens"][0] >= 3
