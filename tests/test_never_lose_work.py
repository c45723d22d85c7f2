# SPDX-License-Identifier: Apache-2.0
"""No failure deletes a cache of model replies, and a rerun resumes from it:
``fastvqa demo --pipeline devi`` and ``fastvqa generate events`` against a
server (on 127.0.0.1) that answers N requests and then fails; the leftovers
of a killed demo run are cleaned by the next run of the same command, their
cached replies kept."""

from __future__ import annotations

import json
import threading

import pytest

from fastvqa.llm import serve_chat_model
from fastvqa.llm.serve import Reply


class Counting:
    """Answers through ``fn``; from the ``fail_after``-th request on (None:
    never) says 400, a failure no retry can mend (so the tests stay quick)."""

    def __init__(self, fn, fail_after=None):
        self.fn, self.fail_after, self.answered = fn, fail_after, 0
        self._lock = threading.Lock()

    def __call__(self, messages):
        with self._lock:
            if self.fail_after is not None and self.answered >= self.fail_after:
                return Reply(400, {"error": {"message": "quota exceeded"}})
            self.answered += 1
        return self.fn(messages)


def _replies(folder):
    return sorted(p.name for p in folder.rglob("*.json"))


# fastvqa demo --pipeline devi ------------------------------------------------------------------

#: caption replies of the demo's one 5-s video (2.5/5/10-s segments: 2 + 1 + 1)
CAPTIONS = 4


def _demo(out, url, capsys):
    from fastvqa.cli import main

    rc = main(["demo", "--pipeline", "devi", "--videos", "1", "--duration", "5",
               "--out", str(out), "--no-progress", "--llm-url", url, "--llm-model", "m"])
    return rc, capsys.readouterr().err.strip()


def test_a_failed_demo_keeps_its_replies_and_a_rerun_resumes(tmp_path, capsys):
    pytest.importorskip("av")
    pytest.importorskip("sklearn")
    pytest.importorskip("matplotlib")
    from fastvqa.demo import devi_models

    model = devi_models.DemoLanguageModel()
    with serve_chat_model(Counting(model)) as served:  # how many calls a whole run makes
        rc, _ = _demo(tmp_path / "fresh", served.base_url, capsys)
        assert rc == 0
        total = served.stats.requests
    n = 3
    assert total > n + 1

    out = tmp_path / "o"
    with serve_chat_model(Counting(model, fail_after=n)) as served:
        rc, err = _demo(out, served.base_url, capsys)
    assert rc == 2 and len(err.splitlines()) == 1, err
    assert "HTTP 400" in err and "quota exceeded" in err
    # The captions came first, from the demo's vision server: one per segment of
    # the 5-s video in 2.5/5/10-s tiles (2 + 1 + 1, by hand), then n answers.
    kept = n + CAPTIONS
    assert f"the {kept} model replies received are kept in {out / 'cache' / 'llm'}" in err
    # Only the reply cache is left, holding those replies.
    assert [p.name for p in out.iterdir()] == ["cache"]
    assert [p.name for p in (out / "cache").iterdir()] == ["llm"]
    assert len(_replies(out / "cache" / "llm")) == kept

    # A killed run's temporary folder, as OutputFiles names it, holding those replies.
    leftover = tmp_path / ".o2.0123456789ab.k1ll3d_x.part"
    out.rename(leftover)
    out2 = tmp_path / "o2"
    with serve_chat_model(Counting(model)) as served:
        rc, err = _demo(out2, served.base_url, capsys)
        assert rc == 0, err
        assert served.stats.requests == total - n  # only the missing calls
    assert not leftover.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["fresh", "o2"]

    # A rerun into the folder a failed run kept (only cache/llm) is accepted.
    with serve_chat_model(Counting(model, fail_after=n)) as served:
        rc, err = _demo(out, served.base_url, capsys)
    assert rc == 2 and len(_replies(out / "cache" / "llm")) == kept
    with serve_chat_model(Counting(model)) as served:
        rc, err = _demo(out, served.base_url, capsys)
        assert rc == 0, err
        assert served.stats.requests == total - n
    assert (out / "results.json").is_file()


def test_a_demo_whose_language_model_fails_at_once_keeps_only_the_captions(tmp_path, capsys):
    pytest.importorskip("av")
    pytest.importorskip("sklearn")
    pytest.importorskip("matplotlib")
    with serve_chat_model(Counting(lambda m: "x", fail_after=0)) as served:
        rc, err = _demo(tmp_path / "o", served.base_url, capsys)
    assert rc == 2 and "partial output removed" in err
    assert f"the {CAPTIONS} model replies received are kept" in err
    assert [p.name for p in (tmp_path / "o").iterdir()] == ["cache"]
    assert len(_replies(tmp_path / "o" / "cache" / "llm")) == CAPTIONS


def test_llm_deadline_needs_the_devi_pipeline(tmp_path, capsys):
    from fastvqa.cli import main

    assert main(["demo", "--out", str(tmp_path / "o"), "--llm-deadline", "5"]) == 2
    assert "--llm-deadline needs --pipeline devi" in capsys.readouterr().err


# fastvqa generate events ---------------------------------------------------------------------

def _captions(tmp_path, n=6):
    doc = {f"v{k}": {"duration": 10.0, "timestamps": [[0, 10]],
                     "sentences": [f"A person in shirt number {k} is juggling three red balls "
                                   "near the old fountain today"]} for k in range(n)}
    path = tmp_path / "captions.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    return path


def _events_args(**kw):
    import argparse

    from fastvqa.generate.events import cli

    p = argparse.ArgumentParser()
    cli.add_arguments(p)
    argv = []
    for k, v in kw.items():
        argv += [f"--{k.replace('_', '-')}", str(v)]
    return p.parse_args(argv + ["--no-progress"])


OBJECTS = ["balls", "plates", "knives", "rings", "clubs", "apples"]


def _pairs(messages):
    """One pair per caption, its answer read off the caption's shirt number."""
    k = int(messages[-1]["content"].split("shirt number ")[1].split()[0])
    return json.dumps([{"question": f"What does the person in shirt {k} juggle?",
                        "answer": f"Some {OBJECTS[k]}"}])


def test_generate_events_keeps_its_cache_and_a_rerun_makes_only_the_missing_calls(tmp_path):
    from fastvqa.llm import LanguageModelError
    from fastvqa.generate.events import cli

    caps, cache = _captions(tmp_path), tmp_path / "cache.jsonl"
    with serve_chat_model(Counting(_pairs, fail_after=2)) as served:
        with pytest.raises(LanguageModelError, match="HTTP 400") as err:
            cli.run(_events_args(captions=caps, llm=served.base_url, model="m",
                                 out=tmp_path / "q.json", cache=cache))
    assert "\n" not in str(err.value)
    assert not (tmp_path / "q.json").exists()
    assert len(cache.read_text().splitlines()) == 2
    with serve_chat_model(Counting(_pairs)) as served:
        assert cli.run(_events_args(captions=caps, llm=served.base_url, model="m",
                                    out=tmp_path / "q.json", cache=cache)) == 0
        assert served.stats.requests == 6 - 2
    assert len(cache.read_text().splitlines()) == 6


def test_generate_events_deadline_goes_to_the_client(tmp_path):
    from fastvqa.errors import CommandError
    from fastvqa.generate.events import cli

    llm = cli.language_model("http://127.0.0.1:9/v1", "m", 2.5)
    assert llm.max_total_seconds == 2.5
    with pytest.raises(CommandError, match="--llm-deadline"):
        cli.language_model("json:dumps", None, 2.5)
