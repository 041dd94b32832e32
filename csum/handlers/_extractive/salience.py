"""Format-free position prior for the extractive handler: a line that opens a section.

Whatever prints it, a text is cut into sections by blank lines and headings: a
paragraph of an answer, a block of a report, a group of a tool's findings. The line that
opens a section says what the section is about (its topic sentence, its title, the
first finding of a group), so it is worth a little more than the lines that go on with
it. This holds for outputs no rule of the handler knows, and needs no name of a tool.
The handler adds the weight ``section`` to such a line when some rule or identifier
already scored it and it is shown whole (a window of a long line may have left out what
it was about).

Measured on the fidelity set (see ``docs/handlers.md``), it is the one format-free
selection signal of those tried that helped there; rarity of a line's words within its
output, words shared with the call's arguments, a coverage re-ranking of the packing
and a noise penalty were measured and dropped.
"""

from __future__ import annotations

__all__ = ["opens_section"]

"""Score added to a line (other than a text's first) that opens a section; below the
handler's early-line bonus of a text's first lines, so it orders lines more than it
overrules what they hold."""


def opens_section(line: str) -> bool:
    """Whether the line after ``line`` opens a section: ``line`` is blank or a Markdown
    heading (``# Results``)."""
    text = line.strip()
    return not text or text.startswith("#")
