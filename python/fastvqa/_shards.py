# SPDX-License-Identifier: Apache-2.0
"""``--shard i/n``: one reading for every command that splits its work
(``fastvqa extract``, ``fastvqa generate dvd``), and torchrun's
``RANK``/``WORLD_SIZE`` when none is given.

>>> parse_shard("1/4"), shard_of(list("abcdefg"), (1, 4))
((1, 4), ['b', 'f'])
"""

from __future__ import annotations

import argparse
import os
from typing import Union

from fastvqa.errors import InputError


def parse_shard(shard: Union[str, tuple, None]) -> tuple:
    """``(i, n)`` from ``"i/n"`` or a pair (``0 <= i < n``); ``None``: the
    ``RANK``/``WORLD_SIZE`` of a torchrun launch when set, else ``(0, 1)``."""
    if shard is None:
        world = os.environ.get("WORLD_SIZE")
        if world is None:
            return 0, 1
        shard = (os.environ.get("RANK", "0"), world)
        what = f"RANK={shard[0]} WORLD_SIZE={shard[1]}"
    else:
        what = f"shard {shard!r}"
    try:
        i, n = (shard.split("/") if isinstance(shard, str) else shard)
        i, n = int(i), int(n)
    except (ValueError, TypeError):
        raise InputError(f"{what}: expected i/n with integers, e.g. 0/4") from None
    if n < 1 or not 0 <= i < n:
        raise InputError(f"{what}: need 0 <= i < n")
    return i, n


def shard_of(videos: list, shard: tuple) -> list:
    """The videos of shard ``(i, n)``: every n-th of the id-sorted list,
    starting at the i-th. The n shards partition the list, so their union is
    one run over all of it."""
    i, n = shard
    return videos[i::n]


def shard_argument(text: str) -> tuple:
    """:func:`parse_shard` as an argparse ``type=`` (its error as argparse's)."""
    try:
        return parse_shard(text)
    except InputError as err:
        raise argparse.ArgumentTypeError(str(err)) from None
