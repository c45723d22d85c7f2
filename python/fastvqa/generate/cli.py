# SPDX-License-Identifier: Apache-2.0
"""``fastvqa generate dvd|events``: the benchmark builders' command line
(:mod:`fastvqa.generate.dvd.cli`, :mod:`fastvqa.generate.events.cli`)."""

from __future__ import annotations

import argparse

DESCRIPTION = ("Build a benchmark the way its paper built it: DVD-style diagnostic dialogues "
               "from CATER scene graphs (fastvqa generate dvd), or DeVE-QA- and SOK-Bench-style "
               "multiple-choice questions from timed event captions through a language model "
               "(fastvqa generate events). Each writes a file the benchmark's loader and "
               "fastvqa eval / fastvqa audit read, and a summary of what it rejected and why.")


def add_arguments(p: argparse.ArgumentParser) -> None:
    """``dvd`` and ``events`` subcommands under ``p`` (each sets ``func``)."""
    from fastvqa.generate.dvd import cli as dvd_cli
    from fastvqa.generate.events import cli as events_cli

    sub = p.add_subparsers(dest="builder", metavar="BUILDER", required=True)
    dvd = sub.add_parser("dvd", help="DVD-style dialogues from CATER scene JSON files",
                         description=dvd_cli.DESCRIPTION)
    dvd_cli.add_arguments(dvd)
    dvd.set_defaults(func=dvd_cli.run)
    events = sub.add_parser("events", help="DeVE-QA/SOK-Bench-style questions from event "
                                           "captions, through a language model",
                            description=events_cli.__doc__.split("\n\n")[0].replace("\n", " "))
    events_cli.add_arguments(events)
