"""The extractive handler's numbers: scores, shares of the budget and sizes, in one place."""

from __future__ import annotations

_THREAD_THRESHOLD = 64 * 1024  # characters of prompt from which a worker thread is used


_CHECK_EVERY = 256  # lines between two cancellation checkpoints


_TOKEN_CAP = 256  # longer tokens are not classified (bounded work per token)


_CACHED_TOKEN = 64  # tokens up to this long have their class cached


_CACHED_LINE = 400  # lines up to this long have their signals cached


_LINE_SCAN = 2048  # characters of a line examined by the line-level patterns


_LINE_WINDOW = 220  # a longer line is cut to this many characters around what matters


_MIN_WINDOW = 80  # ... or fewer under a small budget, never below this


_DEFINITION_BONUS = 3.0  # score added to a file listing's definitions (def, class, fn) ...


_WRITTEN_BONUS = 6.0  # ... to its lines the call wrote (an edit's new lines) ...


_LISTING_EDGE_BONUS = 6.0  # ... and to its unnumbered first and last lines (file, outcome)


_RISING_SHARE = 0.9  # share of a listing's numbers that rise from line to line


_WRITTEN_MIN = 8  # characters a line of a call's arguments needs to be matched as written


_RANK_BONUS = 4.0  # score added to a list's first record, fading: 4, 2, 1.3 ...


_RECORD_LABEL = 40  # characters a label may take before a line's JSON list of records


_PROSE_SHARE = 0.8  # share of letters and spaces from which a tool's line reads as prose


_SENTENCE_MIN = 80  # a prose line longer than this is split into its sentences


_SENTENCE_PIECE = 12  # ... at sentence ends at least this far apart ("Edit applied.")


_CUT_SHARE = 0.9  # a line that does not fit is cut to the room if this share of it fits


_MIN_PIECE = 16  # below this many bytes of room, a cut line says too little


_ARG_CAP = 200


_CALL_SHARE = 0.5  # share of the budget the call line may take (it still comes first)


_MIN_CALL = 24  # ... but never less than this many bytes


_MIN_SHARED_CALL = 48  # ... nor, for each of several calls sharing a quarter, than this


_CALLS_SHARE = 0.25  # share of the budget the call lines of many calls share


_CODE_WEIGHT = 3.0  # score a call's code (a booking, an order) gives its best result line


_COST_BASE = 48  # bytes added to every line's cost when ranking: favours full lines a little


_FIELD_COST_BASE = 8  # ... and to a JSON field's: the fields of an open record come cheap


_JSON_LINE = 60  # characters of key=value pairs per line of a flattened JSON object


_JSON_RECORD = 400  # ... and of a record in a list, kept whole up to this


_PRIOR_SHARE = 0.6  # share of the budget earlier summaries may take before anything else


_PRIOR_KEEP_SCORE = 4.0  # an earlier summary's line scoring this keeps its place first ...


_PRIOR_SCORE = 100.0  # ... with this score (above any new line)


_USER_BONUS = 3.0  # score added to what the user said (requests, constraints)


_IDENT_WEIGHT = 1.5  # score per identifier in a line ...


_IDENT_CAP = 6.0  # ... up to this


_NAME_REPEAT = 1.0  # an identifier seen N times above counts 1 / (1 + this * N)


_PATH_WEIGHTS = (0, 1, 2)  # identifiers a path counts for: without, with a line number


_ERROR_SCORE = 6.0  # score added to a line with a strict error signal ...


_ERROR_CONTEXT = 3  # ... and to the next lines: 3, 2, 1


_HUNK_CONTEXT = 40  # bytes of a diff hunk header's context (the enclosing function) kept


_LOCATION_ABOVE = 2  # lines above an error looked at for its place (a path with a line)


_FIELD_REPEAT = 0.5  # a field's score is divided by 1 + this times its key's repeats


_OPENER_SHARE = 0.75  # a field opens its record's line if worth this share of the best


_FIELD_EARLY_BONUS = 1.0  # ... and, fading, to a JSON result's early fields


_EMPTY_FIELD = 0.2  # weight of a JSON field saying nothing (null, "", a relevance score)


_FILLER_SCORE = 0.1  # score of a line with nothing in it (read only to use the budget)


_EMPTY_EDGE_SCORE = 0.5  # ... or of such a line at an output's start or end


_FILLER_MAX = _EMPTY_EDGE_SCORE  # lines up to this score only take what is left at the end


_PENDING_SCORE = 3.0  # score added to a line saying what is still to do, and below it ...


_PENDING_LINES = 8  # ... to this many lines


_SAME_START = 32  # characters two lines share at their start to count as one repeated


_EDGE_BONUS = 0.5  # score added to an output's first and last two lines


_EARLY_BONUS = 3.0  # ... and, fading, to its early lines


_LOCATION_TAIL = 48  # characters a location line may hold after its place


_LOCATION_WORDS = 2  # ... and words: more is a message of its own (grep's match)


_REPACKS = 3  # packings again with the bytes rendering saved


_COMPACT_SHARE = 0.5  # an answer's line longer than this share of the window is compacted


_COMPACT_RATIO = 2.0  # ... when the prompt is more than this many times the budget


_CLASS_BONUS = 3.0  # score added to a pin, a named measurement or a "line N of FILE"


_RECORD_BONUS = 1.5  # ... and to a one-line JSON record (its fields count too)
