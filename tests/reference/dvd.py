# SPDX-License-Identifier: Apache-2.0
"""Loop reference for DVD accuracy breakdowns, written from dvd.md §4.1.

Plain Python over per-turn dicts; nothing here calls fastvqa. Accuracy is the
share of turns with ``str(pred) == str(gt)`` (percent); transferability for a
topic-transfer kind is, over transfer turns whose previous turn in the same
dialogue exists and was answered correctly, the share answered correctly (0
when there is none, as the official ``get_transfer_accuracies``).
"""

from __future__ import annotations


def dvd_reference(turns: list[dict], preds: list) -> dict[str, float]:
    """``turns[i]``: dict with ``answer``, ``video``, ``dialogue``, ``turn``
    (0-based), ``type``, ``subtype``, ``interval``, ``transfer`` (list), and
    ``or_distance``; ``preds[i]``: the prediction (None = missing)."""
    ok = []
    for t, p in zip(turns, preds):
        ok.append(p is not None and str(p) == str(t["answer"]))

    def acc(indices: list[int]) -> float:
        hits = 0.0
        for i in indices:
            if ok[i]:
                hits += 1.0
        return 100.0 * hits / float(len(indices))

    out = {"Acc": acc(list(range(len(turns))))}
    for name, field in (("type", "type"), ("subtype", "subtype"), ("interval", "interval"),
                        ("turn", "turn_position"), ("or_distance", "or_distance")):
        groups: dict[str, list[int]] = {}
        for i, t in enumerate(turns):
            value = t["turn"] + 1 if field == "turn_position" else t[field]
            if field == "or_distance" and value < 0:
                continue
            groups.setdefault(str(value), []).append(i)
        for label, indices in groups.items():
            out[f"Acc/{name}={label}"] = acc(indices)

    for kind in ("attribute", "spatial", "temporal"):
        carriers = [i for i, t in enumerate(turns) if kind in t["transfer"]]
        if not carriers:
            continue
        den = num = 0
        counted = 0
        for i in carriers:
            prev = None
            for j, u in enumerate(turns):
                if (u["video"], u["dialogue"], u["turn"]) == (
                        turns[i]["video"], turns[i]["dialogue"], turns[i]["turn"] - 1):
                    prev = j
            if prev is None:
                continue
            counted += 1
            if ok[prev]:
                den += 1
                if ok[i]:
                    num += 1
        if counted:
            out[f"Transfer/{kind}"] = 100.0 * num / den if den else 0.0
    return out
