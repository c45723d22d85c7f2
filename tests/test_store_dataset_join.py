# SPDX-License-Identifier: Apache-2.0
"""StoreDataset joining a video store, a query store and a benchmark's
records into padded training batches: every key of a batch checked against
values worked out by hand from a small hand-made video store (2-s and 1-s
steps) and a query store of one row per word."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

pytest.importorskip("safetensors")
torch = pytest.importorskip("torch")

from fastvqa.data import QARecord  # noqa: E402
from fastvqa.errors import InputError  # noqa: E402
from fastvqa.extract import (  # noqa: E402
    TEXT_RECIPES,
    FeatureStore,
    Recipe,
    StoreDataset,
    run_text,
)

NAN = math.nan
KEYS = {"features", "lengths", "mask", "start", "end", "gold", "gold_mask", "gold_spans",
        "gold_cw", "duration", "saliency", "saliency_mask", "videos", "records", "ids"}
QUERY_KEYS = {"query", "query_lengths", "query_mask"}

VIDEO_RECIPE = Recipe(name="hand-2s", sampler="fps:0.5", time="grid", model="hand")

# video id: (start, end) of each step, in seconds; feature row t = [t, 10 * (video no.)]
STEPS = {"v1": ([0, 2, 4, 6, 8], [2, 4, 6, 8, 10]),  # five 2-s clips
         "v2": ([0, 2, 4], [2, 4, 5]),  # a 5-s video: its last step is cut at 5
         "v3": ([0, 1, 2, 3], [1, 2, 3, 4])}  # 1-s steps


def _video_store(path, recipe=VIDEO_RECIPE):
    store = FeatureStore.create(path, {"recipe": recipe.to_dict(), "recipe_hash": recipe.hash,
                                       "model": "hand", "model_sha256": None,
                                       "weights": "none"})
    for k, (video, (start, end)) in enumerate(STEPS.items(), 1):
        feats = np.stack([np.arange(len(start)), np.full(len(start), 10 * k)], 1)
        store.write(video, feats.astype(np.float32), np.array(start, np.float64),
                    np.array(end, np.float64), {"recipe": recipe.name,
                                                "recipe_hash": recipe.hash, "model": "hand"})
    return path


def words(texts):
    """One query row per word: [its length, its place]."""
    return [np.array([[len(w), i] for i, w in enumerate(t.split())], np.float32) for t in texts]


R1 = QARecord("v1", "1", "a red cup", spans=np.array([[3.0, 7.0]]), duration=10.0,
              extra={"relevant_clip_ids": [1, 2, 3],
                     "saliency_scores": [[4, 4, 4], [2, 3, 4], [0, 0, 3]]})
R2 = QARecord("v2", "2", "dog", spans=np.array([[0.0, 1.0], [4.0, 6.0]]))  # no duration
R3 = QARecord("v3", "3", "two words", spans=np.array([[1.5, 2.5]]), duration=4.0,
              extra={"relevant_clip_ids": [0, 1], "saliency_scores": [[1, 2, 3], [4, 4, 4]]})
GONE = QARecord("gone", "4", "no video")
NO_QUERY = QARecord("v1", "5", "not encoded")


@pytest.fixture
def stores(tmp_path):
    video = _video_store(tmp_path / "video")
    query = tmp_path / "query"
    run_text([R1, R2, R3, GONE], "question-clip", out=query, model=words, model_name="words",
             pair_with=video, progress=False)
    return video, query


def _batch(data):
    loader = torch.utils.data.DataLoader(data, batch_size=3, collate_fn=StoreDataset.collate)
    return next(iter(loader))


def _equal(got, want):
    np.testing.assert_array_equal(got.numpy(), np.array(want, dtype=got.numpy().dtype))


def test_a_joined_batch_by_hand(stores):
    video, query = stores
    with pytest.warns(UserWarning) as caught:
        data = StoreDataset(video, [R1, R2, R3, GONE, NO_QUERY], query_store=query)
    assert sorted(str(w.message).split(" records")[0] for w in caught) == ["1 of 5", "1 of 5"]
    assert any("have no query features" in str(w.message) for w in caught)
    assert len(data) == 3
    batch = _batch(data)
    assert set(batch) == KEYS | QUERY_KEYS

    # video steps: v1 5, v2 3, v3 4; T = 5
    _equal(batch["lengths"], [5, 3, 4])
    assert batch["lengths"].dtype == torch.int64
    _equal(batch["mask"], [[1, 1, 1, 1, 1], [1, 1, 1, 0, 0], [1, 1, 1, 1, 0]])
    assert batch["features"].dtype == torch.float32 and batch["features"].shape == (3, 5, 2)
    _equal(batch["features"][:, :, 0], [[0, 1, 2, 3, 4], [0, 1, 2, 0, 0], [0, 1, 2, 3, 0]])
    _equal(batch["features"][:, :, 1], [[10] * 5, [20, 20, 20, 0, 0], [30, 30, 30, 30, 0]])
    _equal(batch["start"], [[0, 2, 4, 6, 8], [0, 2, 4, NAN, NAN], [0, 1, 2, 3, NAN]])
    _equal(batch["end"], [[2, 4, 6, 8, 10], [2, 4, 5, NAN, NAN], [1, 2, 3, 4, NAN]])
    assert batch["start"].dtype == torch.float64

    # queries: "a red cup" 3 words, "dog" 1, "two words" 2; L = 3
    _equal(batch["query_lengths"], [3, 1, 2])
    _equal(batch["query_mask"], [[1, 1, 1], [1, 0, 0], [1, 1, 0]])
    _equal(batch["query"], [[[1, 0], [3, 1], [3, 2]], [[3, 0], [0, 0], [0, 0]],
                            [[3, 0], [5, 1], [0, 0]]])
    assert batch["query"].dtype == torch.float32

    # [3, 7] on 2-s steps: steps 1..3; [0, 1] -> step 0; [4, 6] on v2 -> step 2
    # (the only one with start < 6 and end > 4); [1.5, 2.5] on 1-s steps -> 1..2
    _equal(batch["gold"], [[[1, 3], [-1, -1]], [[0, 0], [2, 2]], [[1, 2], [-1, -1]]])
    _equal(batch["gold_mask"], [[1, 0], [1, 1], [1, 0]])
    _equal(batch["gold_spans"], [[[3, 7], [NAN, NAN]], [[0, 1], [4, 6]],
                                 [[1.5, 2.5], [NAN, NAN]]])
    assert batch["gold_spans"].dtype == torch.float64
    # durations: 10 (record), 5 (v2's last end: the record has none), 4 (record);
    # [3, 7]/10 -> centre .5, width .4; [0, 1]/5 -> .1, .2; [4, 6] clipped to
    # [4, 5] -> .9, .2; [1.5, 2.5]/4 -> .5, .25
    _equal(batch["duration"], [10.0, 5.0, 4.0])
    assert batch["duration"].dtype == torch.float64
    np.testing.assert_allclose(batch["gold_cw"].numpy(),
                               [[[0.5, 0.4], [0, 0]], [[0.1, 0.2], [0.9, 0.2]],
                                [[0.5, 0.25], [0, 0]]], rtol=1e-6)
    assert batch["gold_cw"].dtype == torch.float32

    # saliency: mean of the annotators. v1's 2-s steps are clips 0..4: clip 1 ->
    # 4, clip 2 -> 3, clip 3 -> 1, the rest 0; v3's 1-s steps have midpoints .5,
    # 1.5, 2.5, 3.5: clips 0, 0, 1, 1 -> 2, 2, 4, 4; v2's record has none
    _equal(batch["saliency"], [[0, 4, 3, 1, 0], [0, 0, 0, 0, 0], [2, 2, 4, 4, 0]])
    _equal(batch["saliency_mask"], [[1, 1, 1, 1, 1], [0, 0, 0, 0, 0], [1, 1, 1, 1, 0]])
    assert batch["saliency"].dtype == torch.float32

    assert batch["videos"] == ["v1", "v2", "v3"]
    assert batch["ids"] == ["v1_1", "v2_2", "v3_3"]
    assert batch["records"] == [R1, R2, R3]
    assert data.recipe_hashes == {"video": VIDEO_RECIPE.hash,
                                  "query": FeatureStore(query).header["recipe_hash"]}


def test_without_a_query_store_there_are_no_query_keys(stores):
    video, _ = stores
    data = StoreDataset(video, [R2, R3])
    batch = StoreDataset.collate([data[0], data[1]])
    assert set(batch) == KEYS
    assert data.recipe_hashes == {"video": VIDEO_RECIPE.hash, "query": None}
    every = StoreDataset(video)  # one item per video, no records
    batch = StoreDataset.collate([every[0]])
    assert batch["ids"] == [None] and batch["gold"].shape == (1, 0, 2)
    _equal(batch["duration"], [10.0])  # the store's last end
    assert not batch["saliency_mask"].any()


def test_a_query_store_of_another_video_recipe_is_refused(stores, tmp_path):
    video, _ = stores
    other_recipe = VIDEO_RECIPE.replace(name="hand-1s", sampler="fps:1")
    other = _video_store(tmp_path / "other", other_recipe)
    query = tmp_path / "q-other"
    run_text([R1], "question-clip", out=query, model=words, model_name="words",
             pair_with=other, progress=False)
    with pytest.raises(InputError) as err:
        StoreDataset(video, [R1], query_store=query)
    message = str(err.value)
    assert "\n" not in message
    assert other_recipe.hash in message and VIDEO_RECIPE.hash in message
    assert "--pair-with" in message
    # A recipe without a pairing pairs with any video store
    free = tmp_path / "q-free"
    unpaired = TEXT_RECIPES["question-clip"].replace(name="free", pair=None)
    run_text([R1], unpaired, out=free, model=words, model_name="words", progress=False)
    assert len(StoreDataset(other, [R1], query_store=free)) == 1


def test_stores_in_the_wrong_places_and_missing_parts(stores):
    video, query = stores
    with pytest.raises(InputError, match="is a query store; give the video store first"):
        StoreDataset(query, [R1])
    with pytest.raises(InputError, match="is a video store, not a query store"):
        StoreDataset(video, [R1], query_store=video)
    with pytest.raises(InputError, match="give the records"):
        StoreDataset(video, query_store=query)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(InputError, match="none of the 1 records has both"):
            StoreDataset(video, [NO_QUERY], query_store=query)


def test_a_query_encoded_from_other_text_is_refused_on_access(stores):
    video, query = stores
    changed = QARecord("v1", "1", "a blue cup", spans=R1.spans, duration=10.0)
    data = StoreDataset(video, [changed], query_store=query)
    with pytest.raises(InputError, match="encoded from other text than record 'v1_1'"):
        data[0]


def test_malformed_saliency_names_the_record(stores):
    video, _ = stores
    bad = QARecord("v1", "9", "x", extra={"relevant_clip_ids": [1, 2],
                                          "saliency_scores": [[4, 4, 4]]})
    with pytest.raises(InputError, match="record 'v1_9': relevant_clip_ids and saliency_scores"):
        StoreDataset(video, [bad])
