# SPDX-License-Identifier: Apache-2.0
"""Prints the commands of the README's quick start, one a line, for .ci/run
to run in a fresh environment exactly as a newcomer would.

    python scripts/quickstart_commands.py README.md [--registry-only]

The quick start is the first ```bash block under the "## Quick start"
heading; comment lines and trailing comments are dropped. --registry-only
removes --index-url / --extra-index-url options (and their URL), for a runner
that reaches only the default package registry: pip then resolves every
package, torch included, from there, which is the newest-versions case.
"""

from __future__ import annotations

import argparse
import re
import shlex
import sys
from pathlib import Path

_INDEX_OPTION = re.compile(r"\s--(?:extra-)?index-url(?:=|\s+)\S+")


def quickstart_commands(readme: str, registry_only: bool = False) -> list[str]:
    section = re.search(r"^## Quick start\s*$(.*?)(?=^## )", readme, re.M | re.S)
    if section is None:
        raise SystemExit("README has no '## Quick start' section")
    block = re.search(r"^```bash\n(.*?)^```", section.group(1), re.M | re.S)
    if block is None:
        raise SystemExit("the quick start has no ```bash block")
    commands = []
    for line in block.group(1).splitlines():
        # shlex drops a trailing "# comment" without touching a quoted '#'.
        words = shlex.split(line, comments=True)
        if not words:
            continue
        command = shlex.join(words)
        if registry_only:
            command = _INDEX_OPTION.sub("", command)
        commands.append(command)
    if not commands:
        raise SystemExit("the quick start's bash block has no command")
    return commands


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("readme", type=Path)
    parser.add_argument("--registry-only", action="store_true")
    args = parser.parse_args(argv)
    print("\n".join(quickstart_commands(args.readme.read_text(), args.registry_only)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
