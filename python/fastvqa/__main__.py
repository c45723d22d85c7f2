# SPDX-License-Identifier: Apache-2.0
"""``python -m fastvqa ...`` is ``fastvqa ...`` (``torchrun -m fastvqa train``
needs a module to run)."""

import sys

from fastvqa.cli import main

sys.exit(main())
