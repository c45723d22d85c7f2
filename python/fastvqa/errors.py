# SPDX-License-Identifier: Apache-2.0
"""fastvqa's one vocabulary for mistakes in what the user gave.

:class:`InputError` is the base of every error that describes the user's
input rather than a fault of fastvqa: a bad option value, a malformed or
unreadable file, an undecodable video, a damaged index folder, an output path
that is taken. It is a ``ValueError``, so library callers that catch
``ValueError`` keep working. Its family:

- :class:`fastvqa.evaluation.CommandError`: a command-line option or input
  that cannot be used (and its subclass :class:`fastvqa._outputs.OutputError`);
- :class:`fastvqa.video.VideoError`: a video that cannot be read;
- :class:`fastvqa.retrieval.IndexFileError`: a damaged or foreign index file;
- :class:`fastvqa.data.DataFormatError`: a file that does not hold what its
  format requires (a ``ValueError`` defined beside the loaders; counted in
  :data:`USER_ERRORS`).

:func:`fastvqa.cli.main` prints an error of this family as one line,
``fastvqa <command>: error: <message>``, and exits with status 2. Any other
exception, a plain ``ValueError`` or ``TypeError`` from deep inside fastvqa
included, is a bug and keeps its traceback. So a validator on a path the
command line reaches raises :class:`InputError` (or a class of its family),
never a plain ``ValueError``, for what the user can fix.
"""

from __future__ import annotations


class InputError(ValueError):
    """The user's input cannot be used; the message says what and why, in one
    line. See the module notes."""


def user_error_classes() -> tuple:
    """The classes that describe user input (the :class:`InputError` family
    and the loaders' ``DataFormatError``), for ``except`` clauses and the
    command line's one-line errors."""
    from fastvqa.data.errors import DataFormatError

    return (InputError, DataFormatError)
