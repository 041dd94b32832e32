"""The extractive handler's numbers, as data: what each feature is worth (:data:`WEIGHTS`;
zeroing one turns its feature off, as ``python -m benchmarks.ablation`` does), the shares
of the budget (:data:`SHARES`), then the levels and sizes several modules share."""

from __future__ import annotations

from typing import Final

_FEATURES: Final[dict[str, tuple[float, str]]] = {
    # What a line says (the line features of :mod:`.features`, in their order).
    "diff_file": (9.0, "a diff's `+++ b/file` line: its whole score"),
    "diff_hunk": (4.0, "a diff's hunk header (`@@ -1,2 +1,3 @@`)"),
    "diff_added": (3.5, "a diff's added line"),
    "error": (6.0, "a strict error signal, outside code and warnings"),
    "counts": (5.0, "a count of tests, failures, files changed... (in an answer: of an outcome)"),
    "constraint": (4.0, "a constraint or decision (`never`, `must not`, `decided`), outside code"),
    "pin": (3.0, "a package pinned to a version (`numpy==1.26.4`, a manifest's dependency)"),
    "measurement": (3.0, "a number with a unit, named as a measurement (`p99 latency 12 ms`)"),
    "located": (3.0, "a place in words (`line 12 of src/a.py`)"),
    # Its identifiers.
    "identifier": (
        1.5,
        "per identifier (path, version, code, id, URL, number with a unit), capped",
    ),
    "name_repeat": (1.0, "factor: an identifier seen N times above counts 1 / (1 + w N)"),
    # Where it sits and what is around it.
    "edge": (0.5, "an output's first and last two lines"),
    "early": (3.0, "an output's early lines, fading (w / (1 + line / 10))"),
    "error_context": (3.0, "the lines below an error, fading (w, w-1, ...); a place above it"),
    "section": (0.75, "a section's first line, shown whole"),
    "rank": (4.0, "a list's record by its place, fading (w / (1 + rank))"),
    "user": (3.0, "what the user said (requests, constraints)"),
    "codes_in_call": (3.0, "per code a call names (a booking), to its best result line"),
    # A directory listing's names (:mod:`.code_tools`).
    "listed_name": (2.0, "a directory listing's name of code or build configuration"),
}
"""Feature -> (what it is worth: a score added, or a factor where said; what it rewards)."""

WEIGHTS: dict[str, float] = {name: weight for name, (weight, _) in _FEATURES.items()}
"""Feature -> what it is worth (zeroing one turns its feature off)."""

WHAT: Final[dict[str, str]] = {name: what for name, (_, what) in _FEATURES.items()}
"""What each feature of :data:`WEIGHTS` rewards (the docs' table)."""

SHARES: dict[str, float] = {
    "prior": 0.6,  # earlier summaries' and requests' lines before anything else
    "call": 0.5,  # the call line of a prompt's only call
    "calls": 0.25,  # the call lines of several calls, together
}
"""Shares of the budget."""

# --- the levels and sizes several modules share (the others are their modules') ------
_PRIOR_SCORE = 100.0  # score of an earlier summary's line kept first (above any new line)
_IDENT_CAP = 6.0  # score a line's identifiers give at most
_PATH_WEIGHTS = (0, 1, 2)  # identifiers a path counts for: without, with a line number
_EMPTY_FIELD = 0.2  # weight of a JSON field saying nothing (null, "", a relevance score)
_FILLER_SCORE = 0.1  # score of a line with nothing in it (read only to use the budget)
_EMPTY_EDGE_SCORE = 0.5  # ... or of such a line at an output's start or end
_FILLER_MAX = _EMPTY_EDGE_SCORE  # lines up to this score only take what is left at the end
_TOKEN_CAP = 256  # longer tokens are not classified (bounded work per token)
_LINE_SCAN = 2048  # characters of a line examined by the line-level patterns
_LINE_WINDOW = 220  # a longer line is cut to this many characters around what matters
_COMPACT_SHARE = 0.5  # an answer's line longer than this share of the window is compacted
_COMPACT_RATIO = 2.0  # ... when the prompt is more than this many times the budget
