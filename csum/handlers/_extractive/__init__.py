"""The offline extractive handler, as a package (see :mod:`.entry` for what it does).

Modules, in the order they build on each other: ``weights`` (the numbers), ``patterns``
(the regular expressions), ``tokens`` and ``text`` (identifiers, cuts), ``features``
(what a line says, as scores), ``reading`` and ``fields`` (a text or a JSON result as
units), ``lines`` (a text's scored lines), ``calls`` (a call's line), ``rendering``
(the summary format, written and read back), ``collect`` (the prompt as blocks),
``packing`` (the budget filled), ``entry`` (the handler). The rules for code tools,
prose, records, command runs and sections are in ``code_tools``, ``prose``,
``results``, ``runs`` and ``salience``.
"""

from __future__ import annotations

from csum.handlers._extractive.entry import ExtractiveHandler, extractive, summarize_extractive

__all__ = ["ExtractiveHandler", "extractive", "summarize_extractive"]
