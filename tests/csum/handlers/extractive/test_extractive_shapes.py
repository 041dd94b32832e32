"""Shapes of tool output the offline handler reads from the output itself: a numbered
file listing (its definitions, the lines the call wrote, its unnumbered first and last
lines), a long directory listing (names only), a JSON list of records on one line (a
web search's links) and a tool's prose (split into sentences)."""

from __future__ import annotations

import json

from cast.messages import ToolCall
from csum.handlers import summarize_extractive
from tests.csum.handlers.extractive.test_extractive_room import one_call, shell, utf8

LS_LONG = """\
total 64
drwxr-xr-x  9 ann  staff   288 Mar 14 09:12 .
drwxr-xr-x 31 ann  staff   992 Mar  2 17:40 ..
-rw-r--r--  1 ann  staff  1071 Jan  8  2024 LICENSE
-rw-r--r--  1 ann  staff  4410 Mar 14 09:12 README.md
drwxr-xr-x  4 ann  staff   128 Mar 10 11:03 benches
-rw-r--r--  1 ann  staff   912 Mar 14 09:12 Cargo.toml
-rw-r--r--  1 ann  staff 23318 Mar 14 09:12 Cargo.lock
drwxr-xr-x  6 ann  staff   192 Mar 13 16:21 src
drwxr-xr-x  5 ann  staff   160 Mar 12 08:55 tests
lrwxr-xr-x  1 ann  staff    11 Mar  1 10:00 docs -> ../site/doc"""

SEARCH = 'Web search results for query: "tokio 1.38 release notes"\n\nLinks: ' + json.dumps(
    [
        {"title": "tokio - crates.io", "url": "https://crates.io/crates/tokio"},
        {
            "title": "Release tokio-1.38.0 · tokio-rs/tokio",
            "url": "https://github.com/tokio-rs/tokio/releases/tag/tokio-1.38.0",
        },
        {"title": "Tokio - An asynchronous Rust runtime", "url": "https://tokio.rs/"},
        {
            "title": "tokio/CHANGELOG.md at master · tokio-rs/tokio",
            "url": "https://github.com/tokio-rs/tokio/blob/master/tokio/CHANGELOG.md",
        },
    ],
    separators=(",", ":"),
)

# A sub-agent's report, returned to the parent agent as a tool result.
REPORT = (
    "I looked through the repository to understand how sessions expire. Overall the code "
    "is fairly well organised and easy to follow, and the tests are reasonably complete. "
    "The expiry check lives in src/session/store.rs:142 and compares against "
    "SESSION_TTL_SECS = 1800 from config/defaults.toml. It is worth noting that there "
    "are a few other places that touch sessions, but they only read them."
)


def test_a_long_directory_listing_keeps_names_with_directories_marked() -> None:
    summary = shell("ls -la", LS_LONG, 2000)
    lines = [line.strip() for line in summary.splitlines()[1:]]
    assert {"src/", "tests/", "benches/", "Cargo.toml", "README.md"} <= set(lines)
    assert "docs -> ../site/doc" in lines
    assert not any(word in summary for word in ("rw-r--r--", "staff", "total 64", "Mar 14"))
    assert "./" not in lines
    assert "../" not in lines


def test_a_long_directory_listing_says_more_names_in_a_small_budget() -> None:
    summary = shell("ls -la", LS_LONG, 120)
    assert utf8(summary) <= 120
    assert sum(name in summary for name in ("src/", "tests/", "Cargo.toml", "README.md")) >= 3


def test_a_line_of_json_records_is_one_record_per_line_with_its_keys() -> None:
    call = ToolCall(id="c", name="WebSearch", arguments=json.dumps({"query": "tokio 1.38"}))
    summary = summarize_extractive(one_call(call, SEARCH), 600)
    assert (
        "title=Release tokio-1.38.0 · tokio-rs/tokio "
        "url=https://github.com/tokio-rs/tokio/releases/tag/tokio-1.38.0"
    ) in summary
    assert '{"title"' not in summary


def test_a_tools_prose_keeps_the_sentence_with_identifiers_without_the_filler() -> None:
    call = ToolCall(
        id="c", name="Task", arguments=json.dumps({"prompt": "How do sessions expire?"})
    )
    summary = summarize_extractive(one_call(call, REPORT), 320)
    assert utf8(summary) <= 320
    assert "src/session/store.rs:142" in summary
    assert "SESSION_TTL_SECS = 1800" in summary
    assert "fairly well organised" not in summary


# Claude Code's Edit: the call carries the old and new text; the result echoes a
# numbered snippet under a sentence naming the file.
EDIT_CALL = {
    "replace_all": False,
    "file_path": "/srv/shop/src/pricing.py",
    "old_string": "def total(cart):\n    return sum(i.price for i in cart)",
    "new_string": (
        "def total(cart):\n    return sum(i.price * i.qty for i in cart)\n\n\n"
        "def tax(cart, rate):\n    return total(cart) * rate"
    ),
}
EDIT_RESULT = """\
The file /srv/shop/src/pricing.py has been updated. Here's the result of running \
`cat -n` on a snippet of the edited file:
    10→
    11→def total(cart):
    12→    return sum(i.price * i.qty for i in cart)
    13→
    14→
    15→def tax(cart, rate):
    16→    return total(cart) * rate
    17→"""


def test_an_edit_call_line_names_the_file_not_the_text_it_writes() -> None:
    call = ToolCall(id="c", name="Edit", arguments=json.dumps(EDIT_CALL))
    summary = summarize_extractive(one_call(call, EDIT_RESULT), 300)
    head = summary.splitlines()[0]
    assert "/srv/shop/src/pricing.py" in head
    assert "def total" not in head
    assert "return sum" not in head


# An editor's refusal of an edit (SWE-agent style): the linter's error, then the numbered
# preview of the file as the edit would have left it.
REJECTED_EDIT = """\
Your proposed edit has introduced new syntax error(s). Please read the errors below.

ERRORS:
- E999 SyntaxError: unterminated string literal

This is how your edit would have looked if applied
-------------------------------------------------
[File: /repo/src/fetch/client.py (412 lines total)]
(38 more lines above)
39:    def get(self, url: str) -> bytes:
40:        for attempt in range(self.max_attempts):
41:            try:
42:                return self._session.get(url, timeout=self.timeout).content
43:            except ConnectionError:
44:                time.sleep(self.backoff * attempt)
45:        raise FetchError(f"gave up on {url} after {retries} attempts")
46:
47:    def close(self) -> None:
48:        self._session.close()
(364 more lines below)
-------------------------------------------------"""


def test_an_error_beside_a_numbered_listing_is_an_error() -> None:
    """The lines around a listing's numbered ones are the tool's own words, not the
    file's code: the linter's error among them ranks as an error (read as code, it
    ranked below the preview's lines and was left out at this budget)."""
    command = "edit 45:45\n        raise FetchError(f'gave up on {url} after {retries} attempts')"
    call = ToolCall(id="c", name="bash", arguments=json.dumps({"command": command + "\nend"}))
    summary = summarize_extractive(one_call(call, REJECTED_EDIT), 160)
    assert utf8(summary) <= 160
    assert "E999 SyntaxError: unterminated string literal" in summary, summary
