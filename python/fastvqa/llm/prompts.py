# SPDX-License-Identifier: Apache-2.0
"""A prompt as data: its messages and where its words come from.

Every prompt a fastvqa pipeline sends (DeVi's in :mod:`fastvqa.devi.prompts`,
the question generators' in :mod:`fastvqa.generate.events`) is a
:class:`Prompt`, so that a run can record which words were the paper's and
which fastvqa added.
"""

from __future__ import annotations

from dataclasses import dataclass

#: ``user_source`` of a template fastvqa wrote (the usual case for templates)
OURS = "fastvqa (the paper does not give this prompt)"


@dataclass(frozen=True)
class Prompt:
    """One prompt: a system message and a user message template.

    ``system``: the instruction (the paper's words where it gives them);
    ``user``: a :meth:`str.format` template whose fields the pipeline fills;
    ``source``: where ``system`` comes from; ``user_source``: where the user
    template comes from; ``notes``: what was changed or added and why.

    >>> p = Prompt("caption", "You describe videos.", "Describe {what}.", source="fastvqa")
    >>> p.messages(what="the first scene")  # doctest: +NORMALIZE_WHITESPACE
    [{'role': 'system', 'content': 'You describe videos.'},
     {'role': 'user', 'content': 'Describe the first scene.'}]
    """

    name: str
    system: str
    user: str
    source: str
    user_source: str = OURS
    notes: str = ""

    def messages(self, **fields) -> list:
        """``[{"role": "system", ...}, {"role": "user", ...}]`` with ``fields`` filled in."""
        return [{"role": "system", "content": self.system},
                {"role": "user", "content": self.user.format(**fields)}]
