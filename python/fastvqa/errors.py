# SPDX-License-Identifier: Apache-2.0
"""fastvqa's one vocabulary for mistakes in what the user gave.

:class:`InputError` is the base of every error that describes the user's
input rather than a fault of fastvqa: a bad option value, a malformed or
unreadable file, an undecodable video, a damaged index folder, an output path
that is taken. It is a ``ValueError``, so library callers that catch
``ValueError`` keep working. Its family:

- :class:`CommandError`: a command-line option or input that cannot be used
  (and its subclass :class:`fastvqa._outputs.OutputError`);
- :class:`fastvqa.video.VideoError`: a video that cannot be read;
- :class:`fastvqa.retrieval.IndexFileError`: a damaged or foreign index file;
- :class:`fastvqa.data.DataFormatError`: a file that does not hold what its
  format requires;
- :class:`InputTypeError`: an argument of the wrong kind (also a ``TypeError``).

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


class InputTypeError(InputError, TypeError):
    """An argument of the wrong kind (a string where spans are expected, a
    float prediction...): an :class:`InputError` that is also a
    ``TypeError``, as the docstrings of the functions raising it promise."""


class CommandError(InputError):
    """A mistake the user can fix (a bad option, an unusable file, nothing to
    score): :func:`fastvqa.cli.main` prints it as one line, ``fastvqa
    <command>: error: <message>``, and exits with status 2, no traceback.

    The command modules' and the evaluation functions' validation error, of the
    :class:`InputError` family (a ``ValueError``); see the module notes for the family
    (``VideoError``, ``IndexFileError``, ``DataFormatError``,
    :class:`fastvqa._outputs.OutputError`). ``main`` treats only that family,
    ``FileNotFoundError``/``IsADirectoryError``/``NotADirectoryError``/
    ``FileExistsError``/``PermissionError`` (a path) and an ``ImportError``
    whose message names the ``pip install`` that fixes it as the user's;
    anything else, a plain ``ValueError`` or ``TypeError`` from inside
    fastvqa included, is a bug and shows its traceback."""


__all__ = ["CommandError", "InputError", "InputTypeError"]
