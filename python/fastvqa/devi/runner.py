# SPDX-License-Identifier: Apache-2.0
""":func:`run_devi`: DeVi's stages (:mod:`fastvqa.devi.pipeline`) over many
videos and questions, with caches, progress, a latency report per stage and
per component, and a report of what self-consistency checking changed."""

from __future__ import annotations

import hashlib
import io
import json
import math
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Callable, Mapping, NamedTuple, Optional, Sequence

import numpy as np

from fastvqa.devi import pipeline as S
from fastvqa.devi.protocols import Components
from fastvqa.llm.protocols import embeddings
from fastvqa.errors import InputError

#: the stages in run order, as the latency report names them.
STAGES = ("caption", "visual memory", "contextualise", "synopsis", "answer", "verify")
COMPONENTS = ("captioner", "encoder", "llm")
#: the span scored for an answer without one: a point before the video, overlapping nothing.
_NO_SPAN = (-1.0, -1.0)


class Question(NamedTuple):
    """One question: ``id``, ``video`` (a key of ``videos``), ``text``,
    ``options`` (empty for an open question, such as WildQA's: answered in
    free text); with ground truth, ``answer`` (0-based index; None for an
    open question) and ``spans`` (gold ``[start, end]`` seconds)."""

    id: str
    video: str
    text: str
    options: list
    answer: Optional[int] = None
    spans: Optional[list] = None


def as_question(q: Any) -> Question:
    """A :class:`Question` from itself, a loader's
    :class:`~fastvqa.data.QARecord` (``id`` = its ``key``, ``"<video_id>_<question_id>"``;
    an answer that is no option index is left out) or a dict (``id``,
    ``video``, ``text`` or ``question``, ``options``; optional
    ``answer_index`` or ``answer`` (an index), ``spans``). No options: an
    open question."""
    if isinstance(q, Question):
        return q
    from fastvqa.data.record import QARecord

    if isinstance(q, QARecord):
        answer = q.answer if isinstance(q.answer, (int, np.integer)) and \
            not isinstance(q.answer, bool) else None
        q = {"id": q.key, "video": q.video_id, "text": q.question, "options": list(q.options),
             "answer": answer, "spans": [list(map(float, s)) for s in q.spans]}
    if not isinstance(q, Mapping):
        raise InputError(f"a question must be a dict or a Question, got {type(q).__name__}")
    missing = [k for k in ("id", "video", "options") if k not in q]
    if missing or ("text" not in q and "question" not in q):
        raise InputError(f"question {q.get('id', '?')!r}: missing "
                         f"{', '.join(missing or ['text'])}")
    options = list(q["options"])
    if len(options) == 1 or not all(isinstance(o, str) for o in options):
        raise InputError(f"question {q['id']!r}: options must be two or more strings "
                         "(or none, for an open question)")
    answer = q.get("answer_index", q.get("answer"))
    if answer is not None and not (isinstance(answer, (int, np.integer))
                                   and 0 <= answer < len(options)):
        raise InputError(f"question {q['id']!r}: the answer must be an option index in "
                         f"[0, {len(options)}), got {answer!r}")
    return Question(str(q["id"]), str(q["video"]), str(q.get("text", q.get("question"))),
                    options, None if answer is None else int(answer), q.get("spans"))


class Prediction(NamedTuple):
    """One question's outcome: the final ``option`` and ``spans``, the
    ``initial`` and ``final`` :class:`~fastvqa.devi.pipeline.Answer`,
    ``rounds`` ``[(option, spans, score), ...]`` of the consistency checks
    and ``reasked`` (verification prompts sent)."""

    option: int
    spans: list
    initial: Any
    final: Any
    rounds: list
    reasked: int

    def to_dict(self) -> dict:
        return {"option": self.option, "spans": [list(s) for s in self.spans],
                "answer_text": self.final.text, "initial_answer_text": self.initial.text,
                "initial_option": self.initial.option,
                "initial_spans": [list(s) for s in self.initial.spans],
                "rounds": [{"option": o, "spans": [list(x) for x in sp],
                            "score": None if not math.isfinite(r) else r} for o, sp, r in self.rounds],
                "reasked": self.reasked, "raw": self.final.raw, "parse_error": self.final.error}


class LatencyRow(NamedTuple):
    """``kind`` ("stage" or "component"), ``name``, ``seconds`` (a stage: wall
    time; a component: the sum of its calls' times, which exceeds the wall
    time when calls overlap), ``calls`` (component calls; for a stage those
    made during it) and ``mean`` seconds per call (NaN without calls)."""

    kind: str
    name: str
    seconds: float
    calls: int
    mean: float


class LatencyReport(NamedTuple):
    """Rows for every stage and component, ``questions``, ``per_question``
    (the paper's Table 15: seconds per question for QA = contextualise +
    synopsis + answer, and GQA = QA + verify, the shared captioning and visual memory
    left out as the paper's timing appears to), and ``http`` (the
    chat-completions client's counts: calls made, cache hits, retries;
    None when the language model is not one)."""

    rows: list
    questions: int
    per_question: dict
    http: Optional[dict]

    def format_table(self) -> str:
        lines = [f"{'':9} {'name':14} {'seconds':>9} {'calls':>7} {'s/call':>9}"]
        for r in self.rows:
            mean = "-" if math.isnan(r.mean) else f"{r.mean:.4f}"
            lines.append(f"{r.kind:9} {r.name:14} {r.seconds:9.3f} {r.calls:7d} {mean:>9}")
        pq = self.per_question
        lines.append(f"per question ({self.questions}): QA {pq['QA']:.4f} s, "
                     f"GQA {pq['GQA']:.4f} s")
        if self.http is not None:
            h = self.http
            lines.append(f"language model over HTTP: {h['calls']} calls made, {h['cache_hits']} "
                         f"cache hits, {h['retries']} retries")
        return "\n".join(lines)

    def to_dict(self) -> dict:
        return {"rows": [{**r._asdict(), "mean": None if math.isnan(r.mean) else r.mean}
                         for r in self.rows],
                "questions": self.questions, "per_question_s": self.per_question,
                "http": self.http}


class ConsistencyReport(NamedTuple):
    """What self-consistency checking did over ``questions``: ``reasked``
    (questions re-asked at least once), ``prompts`` (verification prompts
    sent), ``changed`` (final option differs from the initial one),
    ``still_low`` (final score still below the threshold). With ground truth
    (``None`` otherwise): ``helped`` (changed from wrong to right), ``hurt``
    (right to wrong), ``neutral`` (changed, wrong both times), and
    ``initial`` / ``final``: Acc@QA and Acc@GQA (NExT-GQA rules) of the
    initial and the final answers."""

    threshold: float
    questions: int
    reasked: int
    prompts: int
    changed: int
    still_low: int
    helped: Optional[int]
    hurt: Optional[int]
    neutral: Optional[int]
    initial: Optional[dict]
    final: Optional[dict]

    def format(self) -> str:
        out = (f"self-consistency (threshold {self.threshold:g}): {self.reasked} of "
               f"{self.questions} questions re-asked ({self.prompts} prompts), {self.changed} "
               f"answers changed, {self.still_low} still below the threshold")
        if self.helped is not None:
            out += (f"; changes: {self.helped} helped (wrong -> right), {self.hurt} hurt, "
                    f"{self.neutral} neutral")
        if self.initial is not None:
            out += (f"; Acc@QA {self.initial['Acc@QA']:.1f} -> {self.final['Acc@QA']:.1f}, "
                    f"Acc@GQA {self.initial['Acc@GQA']:.1f} -> {self.final['Acc@GQA']:.1f}")
        return out

    def to_dict(self) -> dict:
        return self._asdict()


class DeViResult(NamedTuple):
    """:func:`run_devi`'s result: ``predictions`` (question id ->
    :class:`Prediction`), ``captions`` (video id -> captions), ``durations``
    (video id -> seconds), ``latency`` and ``consistency`` reports, and
    ``stored``: the videos whose visual memory came from the feature store."""

    predictions: dict
    captions: dict
    durations: dict
    latency: LatencyReport
    consistency: ConsistencyReport
    stored: tuple = ()


# Timing --------------------------------------------------------------------------

class _Meter:
    def __init__(self):
        self.calls, self.seconds, self._lock = 0, 0.0, threading.Lock()

    def time(self, fn: Callable, *args):
        start = time.perf_counter()
        try:
            return fn(*args)
        finally:
            with self._lock:
                self.calls += 1
                self.seconds += time.perf_counter() - start


class _Timed:
    """The components behind meters (one per component)."""

    def __init__(self, parts: Components):
        self.parts = parts
        self.meters = {name: _Meter() for name in COMPONENTS}
        self.max_concurrency = int(getattr(parts.llm, "max_concurrency", 1) or 1)

    def caption(self, frames, timestamps, start=None, end=None):
        if start is None or end is None:
            return self.meters["captioner"].time(self.parts.captioner.caption, frames, timestamps)
        return self.meters["captioner"].time(S.segment_caption, self.parts.captioner, frames,
                                             timestamps, start, end)

    def complete(self, messages):
        return self.meters["llm"].time(self.parts.llm.complete, messages)

    def encode_frames(self, frames):
        return self.meters["encoder"].time(self.parts.encoder.encode_frames, frames)

    def encode_texts(self, texts):
        return self.meters["encoder"].time(self.parts.encoder.encode_texts, texts)

    def calls(self) -> int:
        return sum(m.calls for m in self.meters.values())


class _Stages:
    def __init__(self, timed: _Timed, progress: Optional[bool]):
        self.timed, self.progress, self.rows = timed, progress, {}

    @contextmanager
    def stage(self, name: str, total: int, unit: str):
        from fastvqa._progress import Progress

        bar = Progress(total, self.progress is not False, desc=name, unit=unit,
                       force=self.progress is True)
        calls, start = self.timed.calls(), time.perf_counter()
        try:
            yield bar
        finally:
            bar.close()
            self.rows[name] = (time.perf_counter() - start, self.timed.calls() - calls)


def _parallel(fn: Callable, items: list, workers: int, tick: Callable) -> list:
    """``[fn(x) for x in items]`` on ``workers`` threads, in order; ``tick()``
    after each. The first failure cancels the items not yet started (a server
    found down is not asked again for each of them) and is raised once those
    in flight have ended."""
    first: list = []  # the first failure; the items after it are not attempted

    def one(x):
        if first:
            raise first[0]
        try:
            return fn(x)
        except BaseException as err:
            first.append(err)
            raise
        finally:
            tick()

    if workers <= 1 or len(items) <= 1:
        return [one(x) for x in items]
    pool = ThreadPoolExecutor(max_workers=workers)
    try:
        futures = [pool.submit(one, x) for x in items]
        return [f.result() for f in futures]
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


# Caches of the local stages --------------------------------------------------------

def _file_key(video: Any, **parts) -> str:
    path = Path(video).resolve()
    st = path.stat()
    spec = {"video": str(path), "size": st.st_size, "mtime_ns": st.st_mtime_ns, **parts}
    return hashlib.sha256(json.dumps(spec, sort_keys=True, default=str).encode()).hexdigest()


def _component_name(obj: Any) -> str:
    return str(getattr(obj, "name", None) or type(obj).__qualname__)


def _cached_captions(cache: Optional[Path], video, hierarchy, timed: _Timed, backend: str):
    if cache is None:
        return S.hierarchical_captions(video, hierarchy, timed, backend=backend)
    key = _file_key(video, hierarchy=repr(hierarchy),
                    captioner=_component_name(timed.parts.captioner))
    path = cache / "captions" / f"{key}.json"
    if path.is_file():
        return _read_cached_captions(path)
    captions = S.hierarchical_captions(video, hierarchy, timed, backend=backend)
    _write_once(path, json.dumps({"video": str(video), "captions": [list(c) for c in captions]},
                                 ensure_ascii=False))
    return captions


def _read_cached_captions(path: Path) -> list:
    """The captions a run cached in ``path``; a damaged entry is a one-line
    :class:`~fastvqa.errors.InputError` naming it (the cache is the run's
    own, but a disk or a hand can damage it, and a traceback helps no one)."""
    try:
        rows = json.loads(path.read_text(encoding="utf-8"))["captions"]
        return [S.Caption(int(a), float(b), float(c), str(d)) for a, b, c, d in rows]
    except (OSError, ValueError, RecursionError, KeyError, TypeError) as err:
        why = "JSON nested too deeply" if isinstance(err, RecursionError) else \
            f"{type(err).__name__}: {str(err)[:120]}"
        raise InputError(f"cached captions {path} cannot be read ({why}); remove it to "
                         "caption that video again") from None


def _cached_features(cache: Optional[Path], video, timed: _Timed, fps: float, backend: str):
    if cache is None:
        return S.visual_memory(video, timed, fps=fps, backend=backend)
    key = _file_key(video, fps=fps, encoder=_component_name(timed.parts.encoder))
    path = cache / "features" / f"{key}.npz"
    if path.is_file():
        import zipfile

        try:
            # Opened here: np.load leaves its own handle open when the zip is bad.
            with open(path, "rb") as fh, np.load(fh) as z:
                return np.asarray(z["times"]), np.asarray(z["features"])
        except (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile) as err:
            raise InputError(f"cached features {path} cannot be read ({type(err).__name__}: "
                             f"{str(err)[:120]}); remove it to encode that video "
                             "again") from None
    times, feats = S.visual_memory(video, timed, fps=fps, backend=backend)
    buf = io.BytesIO()
    np.savez(buf, times=times, features=feats)
    _write_once(path, buf.getvalue())
    return times, feats


def _write_once(path: Path, data) -> None:
    from fastvqa._outputs import OutputExistsError, write_new

    try:
        write_new(path, data, "cache entry")
    except OutputExistsError:
        pass  # written by a concurrent run: same key, same content


# The runner -------------------------------------------------------------------------

def run_devi(videos: Mapping[str, Any], questions: Sequence[Any], components: Any, *,
             cache_dir: Any = None, progress: Optional[bool] = None, hierarchy: Any = None,
             threshold: float = S.THRESHOLD, max_verify: int = S.MAX_VERIFY,
             pool: str = "cos_of_mean", rescale: str = "affine01",
             consistency_text: str = "question+answer", feature_fps: float = S.FEATURE_FPS,
             per_question_memory: bool = True, backend: str = "pyav",
             store: Any = None) -> DeViResult:
    """DeVi end to end.

    Args:
        videos: video id -> file.
        questions: :class:`Question`\\ s or dicts (:func:`as_question`); each
            ``video`` must be a key of ``videos``.
        components: :class:`~fastvqa.devi.protocols.Components`, or a
            ``(captioner, llm, encoder)`` triple of objects or callables
            (:func:`fastvqa.devi.protocols.components`).
        cache_dir: a folder for the local stages' caches (captions per video,
            frame embeddings per video; keyed by the file's path, size and
            mtime and the component's ``name``), so a rerun skips them; the
            language model's per-call cache is the client's own
            (:class:`~fastvqa.llm.ChatCompletionsClient` ``cache_dir``).
        progress: a bar per stage (None: on a terminal only).
        hierarchy: the :class:`fastvqa.video.Hierarchical` of the captions
            (default :func:`~fastvqa.devi.pipeline.paper_hierarchy`).
        threshold, max_verify, pool, rescale, consistency_text: the
            self-consistency loop (:func:`~fastvqa.devi.pipeline.self_consistency`).
        feature_fps: rate of the frame embeddings (the paper: 1).
        per_question_memory: one contextualisation per (video, question), as
            the paper conditions it on the question; False: one per video.
        backend: the decoder.
        store: a :class:`~fastvqa.extract.FeatureStore` (or its folder) of
            the encoder's image features (``fastvqa extract --recipe
            devi-clip``): the visual memory of every video it holds is read
            from it, at the store's own rate, and only the other videos are
            decoded and encoded (:class:`~fastvqa.devi.stored_memory.StoredMemory`,
            which refuses a store of another model).

    Language model calls of one stage run concurrently up to the model's
    ``max_concurrency`` (1 for a plain callable). An error (a
    :class:`~fastvqa.devi.LanguageModelError` after the client's retries)
    stops the run; with caches a rerun resumes where it stopped.
    """
    parts = _components_from(components)  # Components is a triple too: adapted either way
    qs = [as_question(q) for q in questions]
    unknown = sorted({q.video for q in qs} - set(videos))
    if unknown:
        raise InputError(f"run_devi: questions name videos not given: {', '.join(unknown[:5])}")
    if len({q.id for q in qs}) != len(qs):
        raise InputError("run_devi: question ids must be unique")
    from fastvqa._checks import choice

    choice(pool, "run_devi", "pool", S.POOLS)
    choice(rescale, "run_devi", "rescale", S.RESCALES)
    choice(consistency_text, "run_devi", "consistency_text", S.CONSISTENCY_TEXTS)
    hierarchy = S.paper_hierarchy() if hierarchy is None else hierarchy
    cache = None if cache_dir is None else Path(cache_dir)
    timed = _Timed(parts)
    stages = _Stages(timed, progress)
    used = list(dict.fromkeys(q.video for q in qs))
    workers = timed.max_concurrency

    from fastvqa.video import probe

    durations = {v: float(probe(videos[v]).duration) for v in used}
    captions, visual = {}, {}
    with stages.stage("caption", len(used), "video") as bar:
        for v in used:
            captions[v] = _cached_captions(cache, videos[v], hierarchy, timed, backend)
            bar.update()
    memory = None
    if store is not None:
        from fastvqa.devi.stored_memory import StoredMemory

        memory = StoredMemory(store, parts.encoder)
    stored = tuple(v for v in used if memory is not None and v in memory)
    with stages.stage("visual memory", len(used), "video") as bar:
        for v in used:
            visual[v] = memory.load(v) if v in stored else \
                _cached_features(cache, videos[v], timed, feature_fps, backend)
            bar.update()

    keys = [(q.video, q.text if per_question_memory else None) for q in qs]
    distinct = list(dict.fromkeys(keys))
    with stages.stage("contextualise", len(distinct), "call") as bar:
        replies = _parallel(lambda k: timed.complete(S.contextualise_messages(captions[k[0]], k[1])),
                            distinct, workers, bar.update)
    refined = {k: S.parse_contextualised(reply, captions[k[0]])[0]
               for k, reply in zip(distinct, replies)}
    with stages.stage("synopsis", len(distinct), "call") as bar:
        synopses = _parallel(lambda k: timed.complete(S.synopsis_messages(refined[k], k[1])),
                             distinct, workers, bar.update)
    memories = {}
    for (v, text), reply, synopsis in zip(distinct, replies, synopses):
        times, feats = visual[v]
        memories[(v, text)] = S.event_memory(captions[v], None, question=text, features=feats,
                                             times=times, reply=reply, synopsis_reply=synopsis)

    with stages.stage("answer", len(qs), "question") as bar:
        initial = _parallel(lambda iq: S.parse_answer(
            timed.complete(S.answer_messages(iq[1].text, iq[1].options, memories[keys[iq[0]]])),
            iq[1].options, durations[iq[1].video]), list(enumerate(qs)), workers, bar.update)

    with stages.stage("verify", len(qs), "question") as bar:
        # an open question's answer text is embedded round by round (self_consistency)
        texts = [S.consistency_text(q.text, o, consistency_text) for q in qs for o in q.options]
        table = embeddings(timed.encode_texts(texts), len(texts), "encode_texts") if texts else None
        offsets = np.cumsum([0] + [len(q.options) for q in qs])

        def verify(iq):
            i, q = iq
            return S.self_consistency(
                initial[i], q.text, q.options, memories[keys[i]], timed,
                encoder=timed if not q.options else None,
                option_embeddings=table[offsets[i]:offsets[i + 1]] if q.options else None,
                threshold=threshold,
                max_verify=max_verify, pool=pool, rescale=rescale, text=consistency_text,
                duration=durations[q.video])

        verified = _parallel(verify, list(enumerate(qs)), workers, bar.update)

    predictions = {}
    for q, first, ver in zip(qs, initial, verified):
        predictions[q.id] = Prediction(ver.answer.option, list(ver.answer.spans), first,
                                       ver.answer, [(r.answer.option, list(r.answer.spans),
                                                     r.score) for r in ver.rounds], ver.reasked)
    latency = _latency(stages, timed, len(qs))
    consistency = _consistency(qs, predictions, durations, threshold)
    return DeViResult(predictions, captions, durations, latency, consistency, stored)


def _components_from(triple: Any) -> Components:
    from fastvqa.devi.protocols import components

    if not isinstance(triple, (tuple, list)) or len(triple) != 3:
        raise InputError("run_devi: components must be Components or (captioner, llm, encoder)")
    return components(*triple)


def _latency(stages: _Stages, timed: _Timed, n: int) -> LatencyReport:
    rows = []
    for name in STAGES:
        seconds, calls = stages.rows.get(name, (0.0, 0))
        rows.append(LatencyRow("stage", name, seconds, calls,
                               seconds / calls if calls else math.nan))
    for name in COMPONENTS:
        m = timed.meters[name]
        rows.append(LatencyRow("component", name, m.seconds, m.calls,
                               m.seconds / m.calls if m.calls else math.nan))
    qa = sum(stages.rows.get(s, (0.0, 0))[0] for s in ("contextualise", "synopsis", "answer"))
    gqa = qa + stages.rows.get("verify", (0.0, 0))[0]
    per_q = {"QA": qa / n if n else math.nan, "GQA": gqa / n if n else math.nan}
    stats = getattr(timed.parts.llm, "stats", None)
    http = None
    if stats is not None and hasattr(stats, "cache_hits"):
        http = {"calls": stats.calls, "cache_hits": stats.cache_hits, "retries": stats.retries,
                "seconds": stats.total_seconds}
    return LatencyReport(rows, n, per_q, http)


def _consistency(qs: list, preds: dict, durations: dict, threshold: float) -> ConsistencyReport:
    reasked = sum(preds[q.id].reasked > 0 for q in qs)
    prompts = sum(preds[q.id].reasked for q in qs)
    changed = sum((preds[q.id].initial.option, preds[q.id].initial.text)
                  != (preds[q.id].final.option, preds[q.id].final.text) for q in qs)
    still_low = sum(not (preds[q.id].rounds[-1][2] >= threshold) for q in qs)
    truth = [q for q in qs if q.answer is not None]
    helped = hurt = neutral = None
    initial = final = None
    if truth:
        helped = hurt = neutral = 0
        for q in truth:
            p = preds[q.id]
            if p.initial.option == p.option:
                continue
            was, now = p.initial.option == q.answer, p.option == q.answer
            helped += (not was) and now
            hurt += was and not now
            neutral += (not was) and not now
        grounded = [q for q in truth if q.spans]
        if grounded:
            initial = _accuracies(grounded, {q.id: preds[q.id].initial for q in grounded},
                                  durations)
            final = _accuracies(grounded, {q.id: preds[q.id].final for q in grounded}, durations)
    return ConsistencyReport(threshold, len(qs), reasked, prompts, changed, still_low,
                             helped, hurt, neutral, initial, final)


def _accuracies(qs: list, answers: dict, durations: dict) -> dict:
    m = score(qs, {k: (a.option, a.spans) for k, a in answers.items()}, durations)
    return {"Acc@QA": float(m["Acc@QA"]), "Acc@GQA": float(m["Acc@GQA"])}


def score(questions: Sequence[Any], predictions: Mapping[str, Any], durations: Mapping[str, float]):
    """:func:`fastvqa.metrics.grounded_qa` (NExT-GQA rules: Acc@QA, Acc@GQA at
    IoP >= 0.5, mIoP, IoP@0.3/0.5, mIoU, IoU@0.3/0.5) over the questions with
    ground truth (answer and spans).

    ``predictions``: question id -> :class:`Prediction` or ``(option,
    spans)``; the best (first) span is scored. Every question stays in every
    denominator: an unparsed option (-1) counts as a wrong answer and a
    missing span as the span ``[-1, -1]``, which overlaps nothing (IoU = IoP
    = 0), rather than being skipped as NExT-GQA skips missing predictions."""
    from fastvqa.data import spans_to_csr
    from fastvqa.metrics import grounded_qa

    qs = [as_question(q) for q in questions]
    qs = [q for q in qs if q.answer is not None and q.spans]
    if not qs:
        raise InputError("score: no question has ground truth (answer and spans)")
    spans, answers = [], []
    for q in qs:
        p = predictions[q.id]
        option, found = (p.option, p.spans) if isinstance(p, Prediction) else p
        spans.append(found[0] if found else _NO_SPAN)
        answers.append(option if option >= 0 else len(q.options))  # an index no gold one has
    gt, offsets = spans_to_csr([q.spans for q in qs])
    return grounded_qa(np.array(spans, dtype=np.float64), (gt, offsets),
                       pred_answers=np.array(answers, dtype=np.int64),
                       gt_answers=np.array([q.answer for q in qs], dtype=np.int64),
                       durations=np.array([durations[q.video] for q in qs]),
                       keys=[q.id for q in qs])
