"""Rebuild ``items_dev.jsonl``: part D of the fidelity set, for tuning (maintainers only).

Part D is a development set of real tool results and answers of the kinds the handler
does worst on (file edits and reads, directory listings, web searches and fetches,
answers, script runs), from transcripts and recordings no item of parts A, B or C came
from (sources in SOURCES.md). Unlike part C it may be used to tune the handler. Outputs
are copied unchanged; the facts below were written down by reading each item before any
summarizer was run on it. Fact patterns follow ``build_items.py``: a plain string must
appear as is, ``re:...`` is a regular expression, and all patterns of one fact must be
found near each other.

The texts are read from local git mirrors (``git --git-dir ... show commit:path``):

    PYTHONPATH=. python benchmarks/fidelity/build_dev.py [--pydantic-ai GIT_DIR]
        [--claude-reliability GIT_DIR]
        [--openhands GIT_DIR] [--swe-agent GIT_DIR] [--dump DIR]

``--dump DIR`` also writes each item's text to ``DIR/<id>.txt`` (for reading and
labelling).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import yaml
from build_heldout import OPENHANDS_GIT, _from_claude_code_log, _from_openhands, _write_items
from build_items import SWE_AGENT_GIT, _from_swe_agent, _git_show

HERE = Path(__file__).resolve().parent
PYDANTIC_AI_GIT = Path("/work/.mirror/pydantic+pydantic-ai/repo")
PYDANTIC_AI_COMMIT = "4fda38988f2939fa6ea9cdefcf120693e10ef491"
_GROQ = "tests/models/cassettes/test_groq/"
_ANTHROPIC = "tests/models/cassettes/test_anthropic/"
_TAVILY = "tests/cassettes/test_tavily/"
_TEMPORAL = "tests/cassettes/test_temporal/"
_CODE_FILES = "tests/cassettes/test_code_execution_files_vcr/"
_MARSHMALLOW = "trajectories/demonstrations/replay__marshmallow-code__marshmallow-1867__"
_CURSORS = (
    f"{_MARSHMALLOW}default_sys-env_cursors_window100__t-0.20__p-0.95__c-2.00__install-1/"
    "marshmallow-code__marshmallow-1867.traj"
)
_FROM_SOURCE = (
    f"{_MARSHMALLOW}function_calling_replace_from_source/marshmallow-code__marshmallow-1867.traj"
)
_TEST_REPO_URL = (
    "tests/test_data/trajectories/gpt4__swe-agent-test-repo__default_from_url__t-0.00__p-0.95"
    "__c-3.00__install-1/6e44b9__sweagenttestrepo-1c2844.traj"
)
_TEST_REPO_I1 = (
    "tests/test_data/trajectories/gpt4__swe-agent__test-repo__default_from_url__t-0.00__p-0.95"
    "__c-3.00__install-1/swe-agent__test-repo-i1.traj"
)
_BASIC_INTERACTIONS = "tests/runtime/trajs/basic_interactions.json"
RELIABILITY_GIT = Path("/work/.mirror/DRMacIver+claude-reliability/repo")
RELIABILITY_COMMIT = "4e49f16a86de76d9b0dc3ea2b8526677abe89f52"
_COVERAGE = "snapshot-tests/tests/coverage-test-fix/transcript.jsonl"
_RUST_PORT = "snapshot-tests/tests/python-to-rust-port/transcript.jsonl"
_FIRST_STOP = "snapshot-tests/tests/stop-hook-reflection-first-stop/transcript.jsonl"

Fact = tuple[str, list[str]]

# (id, kind, source, facts). Sources:
#   "pai:<path>:<interaction>:<what>"  a pydantic-ai test cassette (a recorded HTTP
#        exchange with a provider) and the index of an interaction in it; <what> is
#        "block<i>" (content block i of an Anthropic response: a server tool's result or
#        the model's text), "groq<i>" (tool i the Groq API ran, with its output),
#        "groq-answer" (the Groq model's answer), "http" (the whole exchange: the
#        request as the call, the response body as the result) or "message" (the
#        answer message of an OpenAI Responses API output)
#   "cc:<path>:<line>"                 a line of a recorded Claude Code session of
#        DRMacIver/claude-reliability's snapshot tests (read as in build_heldout.py)
#   "oh:<path>:<line>:<event>"         an OpenHands run (as in build_heldout.py)
#   "swe:<path>:<step>"                a SWE-agent trajectory step (as in build_items.py)
# fmt: off
SPECS: list[tuple[str, str, str, list[Fact]]] = [
    # --- pydantic-ai cassettes: provider-run tools (web search and fetch, code) -------
    ("pai-groq-search-weather", "web search",
     f"pai:{_GROQ}test_groq_model_web_search_tool.yaml:0:groq0", [
        ("the query", ["What is the weather in San Francisco today?"]),
        ("the top result", ["Title: Weather in San Francisco\nURL: https://www.weatherapi.com/"]),
        ("the current temperature", ["'temp_c': 17.0", "'temp_f': 62.6"]),
        ("the condition", ["'localtime': '2025-09-17 14:19'", "'text': 'Partly cloudy'"]),
        ("the day's forecast", ["Day 75°. Night 59°"]),
        ("the storm with its source", ["sfgate.com", "Tropical Storm Mario"]),
    ]),
    ("pai-groq-answer-weather", "answer",
     f"pai:{_GROQ}test_groq_model_web_search_tool.yaml:0:groq-answer", [
        ("the place and date", ["San Francisco today, September 17, 2025"]),
        ("the current temperature", ["partly cloudy", "17°C (62.6°F)"]),
        ("the wind", ["7.8 mph (12.6 kph)"]),
        ("the humidity", ["humidity is 94%"]),
        ("the day's range", ["high of 75°F (24°C)", "low of 59°F (15°C)"]),
        ("the storm", ["Tropical Storm Mario"]),
    ]),
    ("pai-groq-search-python", "web search",
     f"pai:{_GROQ}test_groq_web_search_tool_domain_filters.yaml:0:groq0", [
        ("the query", ["latest stable version of Python"]),
        ("3.14.0 with its date", ["# Python 3.14.0", "Release date: Oct. 7, 2025"]),
        ("3.13.0 with its date", ["Python 3.13.0", "Release date: Oct. 7, 2024"]),
        ("the what's new page",
         ["https://docs.python.org/3/whatsnew/3.14.html", "latest stable release"]),
        ("the old forum answer", ["3.11.2 is the latest"]),
    ]),
    ("pai-groq-visit-python", "web fetch",
     f"pai:{_GROQ}test_groq_web_search_tool_domain_filters.yaml:0:groq1", [
        ("the page", ["visit", "https://www.python.org/downloads/"]),
        ("the release schedules listed",
         ["Python 3.15 release schedule", "Python 3.14 release schedule"]),
        ("Sigstore signing since", ["Starting with the Python 3.11.0", "signed with Sigstore"]),
        ("OpenPGP dropped", ["PEP 761", "OpenPGP key verification was dropped in Python 3.14"]),
    ]),
    ("pai-groq-answer-python", "answer",
     f"pai:{_GROQ}test_groq_web_search_tool_domain_filters.yaml:0:groq-answer", [
        ("the answer", ["latest stable release", "Python 3.14.0", "released October 7 2025"]),
        ("the previous release", ["Python 3.13.0", "October 7 2024"]),
        ("where it was checked", ["https://www.python.org/downloads/"]),
        ("why no newer one", ["No newer stable version (e.g., 3.15) is listed as released"]),
    ]),
    ("pai-fetch-anthropic", "web fetch",
     f"pai:{_ANTHROPIC}test_anthropic_web_fetch_tool.yaml:0:block2", [
        ("the url", ["web_fetch", "https://ai.pydantic.dev"]),
        ("the page title", ["\"title\": \"Pydantic AI\""]),
        ("what it is", ["Python agent framework"]),
        ("the aim", ["to bring that FastAPI feeling to GenAI app and agent development"]),
        ("the model of the first example", ["Hello World Example", "anthropic:claude-sonnet-4-0"]),
        ("when it was fetched", ["\"retrieved_at\": \"2025-11-14T23:34:21"]),
    ]),
    ("pai-fetch-answer", "answer",
     f"pai:{_ANTHROPIC}test_anthropic_web_fetch_tool.yaml:1:block1", [
        ("the answer", ["main framework", "**FastAPI**"]),
        ("the quote", ["to bring that FastAPI feeling to GenAI app and agent development"]),
        ("other libraries named", ["LangChain", "LlamaIndex"]),
        ("what they share",
         ["virtually every Python agent framework and LLM library", "Pydantic Validation"]),
    ]),
    ("pai-tavily-basic", "web search", f"pai:{_TAVILY}test_basic_search.yaml:0:http", [
        ("the request", ["POST https://api.tavily.com/search", "What is Pydantic AI?"]),
        ("the official site with its title",
         ["\"title\": \"Pydantic AI - Pydantic AI\", \"url\": \"https://ai.pydantic.dev/\""]),
        ("what it is",
         ["Python agent framework designed to help you quickly", "production grade applications"]),
        ("the request id", ["\"request_id\": \"3b2f7385-b01d-479e-9825-1ce0f8c59b93\""]),
        ("the response time", ["\"response_time\": 0.89"]),
    ]),
    ("pai-tavily-domains", "web search",
     f"pai:{_TAVILY}test_search_with_include_domains.yaml:0:http", [
        ("the request",
         [
             "POST https://api.tavily.com/search",
             "transformer architectures",
             "\"include_domains\": [\"arxiv.org\"]",
         ]),
        ("the top paper", ["\"url\": \"https://arxiv.org/abs/2507.13043\""]),
        ("a paper with its id", ["2505.13499", "Optimal Control for Transformer Architectures"]),
        ("a paper with its id",
         ["2601.03290", "Lightweight Transformer Architectures for Edge Devices"]),
        ("the request id", ["\"request_id\": \"5219ceb5-6bd9-4d38-b675-2fb7b8a887f2\""]),
    ]),
    ("pai-tavily-bound", "web search",
     f"pai:{_TAVILY}test_factory_with_bound_params.yaml:0:http", [
        ("the request",
         ["POST https://api.tavily.com/search", "attention mechanisms", "\"max_results\": 2"]),
        ("the first paper",
         ["\"title\": \"[2601.03329] Attention mechanisms in neural networks\""]),
        ("the survey with its url",
         ["A General Survey on Attention Mechanisms in Deep", "https://arxiv.org/abs/2203.14263"]),
        ("the survey's authors", ["Gianni Brauwers and Flavius Frasincar"]),
        ("the request id", ["\"request_id\": \"139680ef-e03d-48c8-a3bc-950081750288\""]),
    ]),
    ("pai-news-answer-durable", "answer",
     f"pai:{_TEMPORAL}test_durability_web_search_in_workflow.yaml:0:message", [
        ("the decision", ["cut its benchmark interest rate by 25 basis points to 6.50%"]),
        ("who", ["Mexico's central bank"]),
        ("when", ["May 8, 2026"]),
        ("the source", ["banxico.org.mx"]),
    ]),
    ("pai-news-answer-workflow", "answer",
     f"pai:{_TEMPORAL}test_web_search_agent_run_in_workflow.yaml:0:message", [
        ("where", ["Veracruz, Hidalgo, and Puebla"]),
        ("what happened", ["floods and landslides", "dozens dead and many missing"]),
        ("the source", ["apnews.com/article/5d036e18057361281e984b44402d3b1b"]),
    ]),
    ("pai-csv-script", "script run",
     f"pai:{_CODE_FILES}test_anthropic_code_execution_files_multi_turn.yaml:1:block1", [
        ("the tool and file", ["bash_code_execution", "data.csv"]),
        ("what it sums", ["total += float(row['value'])"]),
        ("the result", ["Sum of value column: 100.0"]),
        ("the exit code", ["\"return_code\": 0"]),
    ]),
    ("pai-csv-answer", "answer",
     f"pai:{_CODE_FILES}test_anthropic_code_execution_files.yaml:1:block2", [
        ("the answer", ["`value` column in **data.csv** is **100.0**"]),
        ("how the file was parsed", ["csv.DictReader"]),
        ("the conversion", ["converting it to a float"]),
    ]),
    # --- SWE-agent: other trajectories of the marshmallow issue, the test repository ---
    ("swed-ls-cursors", "directory listing", f"swe:{_CURSORS}:3", [
        ("the command", ["ls -F"]),
        ("the sources", ["re:(?m)^src/$"]),
        ("the tests", ["re:(?m)^tests/$"]),
        ("the build files", ["re:(?m)^setup\\.py$", "re:(?m)^pyproject\\.toml$"]),
        ("the reproduction script", ["re:(?m)^reproduce\\.py$"]),
    ]),
    ("swed-ls-source", "directory listing", f"swe:{_FROM_SOURCE}:0", [
        ("the command", ["ls -F"]),
        ("the sources", ["re:\\ssrc/"]),
        ("the tests", ["re:\\stests/"]),
        ("the build files", ["re:\\ssetup\\.py", "re:\\spyproject\\.toml"]),
        ("the tox config", ["re:\\stox\\.ini"]),
    ]),
    ("swed-open-fields-window", "file read", f"swe:{_CURSORS}:5", [
        ("the file and its length", ["src/marshmallow/fields.py (1997 lines total)"]),
        ("the class with its line", ["1421:class TimeDelta(Field):"]),
        ("the constructor with its line",
         ["1450:    def __init__(self, precision: str = SECONDS, **kwargs):"]),
        ("the truncating line",
         ["1475:        return int(value.total_seconds() / base_unit.total_seconds())"]),
        ("where the window starts", ["(1373 more lines above)"]),
    ]),
    ("swed-open-missing-colon", "file read", f"swe:{_TEST_REPO_I1}:1", [
        ("the file and its length", ["tests/missing_colon.py (10 lines total)"]),
        ("the broken line", ["4:def division(a: float, b: float) -> float\n"]),
        ("what it returns", ["5:    return a/b"]),
        ("the call", ["9:    print(division(123, 15))"]),
    ]),
    ("swed-edit-reproduce", "file edit", f"swe:{_CURSORS}:1", [
        ("the file and its length", ["reproduce.py (9 lines total)"]),
        ("the field", ["4:td_field = TimeDelta(precision=\"milliseconds\")"]),
        ("the value", ["7:obj[\"td_field\"] = timedelta(milliseconds=345)"]),
        ("the call", ["9:print(td_field.serialize(\"td_field\", obj))"]),
        ("the outcome", ["File updated"]),
    ]),
    ("swed-edit-syntax", "file edit", f"swe:{_CURSORS}:7", [
        ("the error", ["E999 IndentationError: unexpected indent"]),
        ("the file and its length", ["src/marshmallow/fields.py (1997 lines total)"]),
        ("the proposed line",
         ["1475:return int(round(value.total_seconds() / base_unit.total_seconds()))"]),
        ("the original line",
         ["1475:        return int(value.total_seconds() / base_unit.total_seconds())"]),
        ("not applied", ["Your changes have NOT been applied"]),
    ]),
    ("swed-edit-applied", "file edit", f"swe:{_CURSORS}:8", [
        ("the file and its length", ["src/marshmallow/fields.py (1997 lines total)"]),
        ("the new line",
         ["1475:        return int(round(value.total_seconds() / base_unit.total_seconds()))"]),
        ("the class it is in", ["1421:class TimeDelta(Field):"]),
        ("the outcome", ["File updated"]),
    ]),
    ("swed-edit-division", "file edit", f"swe:{_TEST_REPO_URL}:2", [
        ("the edit", ["'def division(a: float, b: float) -> float:'"]),
        ("the outcome", ["Replaced 1 occurrences"]),
        ("the file and its length", ["tests/missing_colon.py (10 lines total)"]),
        ("the fixed line", ["4:def division(a: float, b: float) -> float:"]),
    ]),
    # --- Claude Code sessions recorded by claude-reliability's snapshot tests ----------
    ("cr-glob-py", "directory listing", f"cc:{_COVERAGE}:4", [
        ("the pattern", ["**/*.py"]),
        ("the module", ["/tmp/tmpw6sk2trg/src/math_utils.py"]),
        ("the test file", ["/tmp/tmpw6sk2trg/tests/test_math_utils.py"]),
        ("the plugin's coverage script", ["scripts/check-coverage.py"]),
    ]),
    ("cr-read-math-utils", "file read", f"cc:{_COVERAGE}:7", [
        ("the file", ["/tmp/tmpw6sk2trg/src/math_utils.py"]),
        ("the function with its line", ["re:4→def add_numbers\\(a: int, b: int\\) -> int:"]),
        ("what it returns", ["re:6→ +return a \\+ b"]),
        ("the file's length", ["re:7→\\n"]),
    ]),
    ("cr-read-test-math", "file read", f"cc:{_COVERAGE}:8", [
        ("the file", ["/tmp/tmpw6sk2trg/tests/test_math_utils.py"]),
        ("the import", ["re:3→from src\\.math_utils import add_numbers"]),
        ("the test with its line", ["re:6→def test_add_numbers\\(\\):"]),
        ("an assertion", ["re:8→ +assert add_numbers\\(2, 3\\) == 5"]),
    ]),
    ("cr-edit-multiply", "file edit", f"cc:{_COVERAGE}:12", [
        ("the file", ["/tmp/tmpw6sk2trg/src/math_utils.py has been updated"]),
        ("the new function with its line",
         ["re:9→def multiply_numbers\\(a: int, b: int\\) -> int:"]),
        ("what it returns", ["re:11→ +return a \\* b"]),
        ("the edit kept add_numbers", ["re:4→def add_numbers"]),
    ]),
    ("cr-edit-test-multiply", "file edit", f"cc:{_COVERAGE}:13", [
        ("the file", ["/tmp/tmpw6sk2trg/tests/test_math_utils.py has been updated"]),
        ("the new import", ["re:3→from src\\.math_utils import add_numbers, multiply_numbers"]),
        ("the new test with its line", ["re:13→def test_multiply_numbers\\(\\):"]),
        ("an assertion", ["re:15→ +assert multiply_numbers\\(2, 3\\) == 6"]),
        ("the negative case", ["re:16→ +assert multiply_numbers\\(-1, 1\\) == -1"]),
    ]),
    ("cr-answer-multiply", "answer", f"cc:{_COVERAGE}:14", [
        ("the function with its place", ["multiply_numbers", "src/math_utils.py:9"]),
        ("the test with its place", ["test_multiply_numbers", "tests/test_math_utils.py:13"]),
        ("what the test covers", ["positive numbers, negative numbers, and zero"]),
    ]),
    ("cr-git-status-untracked", "git status", f"cc:{_COVERAGE}:18", [
        ("the command", ["git status"]),
        ("the branch", ["On branch master"]),
        ("modified files",
         ["modified:   src/math_utils.py", "modified:   tests/test_math_utils.py"]),
        ("untracked files", ["Untracked files", ".coverage"]),
        ("nothing staged", ["no changes added to commit"]),
    ]),
    ("cr-pytest-multiply", "test run", f"cc:{_COVERAGE}:20", [
        ("the command", ["python -m pytest tests/test_math_utils.py -v"]),
        ("the counts", ["2 passed"]),
        ("the new test passed", ["test_multiply_numbers PASSED"]),
        ("the versions", ["Python 3.12.3", "pytest-9.0.2"]),
    ]),
    ("cr-read-cargo-toml", "file read", f"cc:{_RUST_PORT}:10", [
        ("the file", ["/tmp/tmpqwh7888i/Cargo.toml"]),
        ("the crate name", ["re:2→name = \"python_utils\""]),
        ("the version", ["re:3→version = \"0\\.1\\.0\""]),
        ("the edition", ["re:4→edition = \"2024\""]),
        ("no dependencies", ["re:6→\\[dependencies\\]"]),
    ]),
    ("cr-cargo-test", "test run", f"cc:{_RUST_PORT}:43", [
        ("the command", ["cargo test"]),
        ("the crate with its version", ["Compiling python_utils v0.1.0"]),
        ("the unit test counts", ["test result: ok. 29 passed; 0 failed"]),
        ("the doc test counts", ["test result: ok. 5 passed; 0 failed"]),
        ("a doc test with its line",
         ["src/math_utils.rs - math_utils::factorial (line 31) ... ok"]),
    ]),
    ("cr-llvm-cov", "build run", f"cc:{_RUST_PORT}:48", [
        ("the command", ["cargo llvm-cov --fail-under-lines 100"]),
        ("the test counts", ["29 passed; 0 failed"]),
        ("the one partly covered file", ["re:math_utils\\.rs +55 +1 +98\\.18%"]),
        ("the totals", ["re:TOTAL +346 +1 +99\\.71%"]),
        ("line coverage", ["re:188 +0 +100\\.00%"]),
    ]),
    ("cr-read-justfile", "file read", f"cc:{_RUST_PORT}:56", [
        ("the file", ["/tmp/tmpqwh7888i/Justfile"]),
        ("the check recipe with its line",
         ["re:3→ +uv run pytest --cov=src --cov-report=term-missing --cov-fail-under=100"]),
        ("the test recipe", ["re:7→ +uv run pytest"]),
        ("the format recipe", ["re:11→ +uv run ruff format \\."]),
        ("the lint recipe", ["re:15→ +uv run ruff check \\."]),
    ]),
    ("cr-glob-py-port", "directory listing", f"cc:{_RUST_PORT}:63", [
        ("the pattern", ["**/*.py"]),
        ("a source module", ["/tmp/tmpqwh7888i/src/validation.py"]),
        ("a source module", ["/tmp/tmpqwh7888i/src/dict_utils.py"]),
        ("a test module", ["/tmp/tmpqwh7888i/tests/test_list_utils.py"]),
        ("the plugin's scripts", ["claude-reliability/scripts/release.py"]),
    ]),
    ("cr-just-check", "build run", f"cc:{_RUST_PORT}:74", [
        ("the command", ["just check"]),
        ("what it runs", ["cargo llvm-cov --fail-under-lines 100"]),
        ("the test counts", ["29 passed; 0 failed"]),
        ("the one partly covered file", ["re:math_utils\\.rs +55 +1 +98\\.18%"]),
        ("the totals", ["re:TOTAL +346 +1 +99\\.71%"]),
    ]),
    ("cr-find-rs", "directory listing", f"cc:{_RUST_PORT}:84", [
        ("the command", ["find /tmp/tmpqwh7888i -type f"]),
        ("the manifest", ["/tmp/tmpqwh7888i/Cargo.toml"]),
        ("the crate root", ["/tmp/tmpqwh7888i/src/lib.rs"]),
        ("a module", ["/tmp/tmpqwh7888i/src/string_utils.rs"]),
        ("the Justfile", ["/tmp/tmpqwh7888i/Justfile"]),
    ]),
    ("cr-answer-port", "answer", f"cc:{_RUST_PORT}:85", [
        ("the outcome", ["ported the Python utility library to Rust"]),
        ("the error type", ["factorial()", "NegativeInputError"]),
        ("the enum for nested lists", ["flatten()", "NestedItem<T>"]),
        ("the test counts", ["29 unit tests", "5 doctests"]),
        ("the coverage", ["100% line coverage", "cargo llvm-cov"]),
        ("what was deleted", ["Deleted `pyproject.toml` and `uv.lock`"]),
    ]),
    ("cr-git-status-port", "git status", f"cc:{_RUST_PORT}:89", [
        ("the command", ["git status"]),
        ("the modified file", ["modified:   Justfile"]),
        ("deleted Python files", ["deleted:    src/math_utils.py", "deleted:    pyproject.toml"]),
        ("new Rust files, untracked", ["Untracked files", "src/lib.rs", "Cargo.toml"]),
        ("nothing staged", ["no changes added to commit"]),
    ]),
    ("cr-git-commit-port", "git commit", f"cc:{_RUST_PORT}:93", [
        ("the command", ["git add -A && git commit"]),
        ("the commit with its message", ["master 7e2d976", "Port Python utility library to Rust"]),
        ("the counts", ["23 files changed, 448 insertions(+), 378 deletions(-)"]),
        ("a created file", ["create mode 100644 src/lib.rs"]),
        ("a deleted file", ["delete mode 100644 uv.lock"]),
    ]),
    ("cr-git-init-status", "git status", f"cc:{_FIRST_STOP}:8", [
        ("the command", ["git init && git add test.txt && git status"]),
        ("the new repository", ["Initialized empty Git repository in /tmp/tmpcy4oc572/.git/"]),
        ("the staged file", ["new file:   test.txt"]),
        ("no commits yet", ["No commits yet"]),
        ("untracked", ["Untracked files", ".gitignore"]),
    ]),
    # --- OpenHands: a recorded chat replayed by the runtime tests ----------------------
    ("ohd-answer-goldbach", "answer", f"oh:{_BASIC_INTERACTIONS}:-1:3", [
        ("the conjecture", ["every even integer greater than 2", "sum of two prime numbers"]),
        ("why it does not apply", ["1 is not considered a prime number"]),
        ("its status", ["unsolved problem in number theory"]),
    ]),
]
# fmt: on


def _load_cassette(git_dir: Path, path: str) -> dict[str, Any]:
    loaded = yaml.safe_load(_git_show(git_dir, PYDANTIC_AI_COMMIT, path))
    assert isinstance(loaded, dict), path
    return loaded


def _from_pydantic_ai(git_dir: Path, ref: str) -> dict[str, Any]:
    """One tool result or answer of a pydantic-ai cassette (see the sources above).
    Structured results are the recorded body's part as JSON (keys as recorded)."""
    _, path, interaction, what = ref.split(":")
    exchange = _load_cassette(git_dir, path)["interactions"][int(interaction)]
    request, body = exchange["request"], exchange["response"]["parsed_body"]
    source = {
        "repo": "pydantic/pydantic-ai",
        "commit": PYDANTIC_AI_COMMIT,
        "path": path,
        "license": "MIT",
        "where": f"interactions[{interaction}]: {what}",
    }
    if what == "http":
        call = {
            "name": f"{request['method']} {request['uri']}",
            "arguments": json.dumps(request["parsed_body"], ensure_ascii=False),
        }
        output = json.dumps(body, ensure_ascii=False)
        return {"source": source, "call": call, "output_role": "tool", "output": output}
    if what == "message":
        message = next(o for o in body["output"] if o["type"] == "message")
        text = "".join(part["text"] for part in message["content"])
        return {"source": source, "call": None, "output_role": "ai", "output": text}
    if what.startswith("groq"):
        message = body["choices"][0]["message"]
        if what == "groq-answer":
            return {
                "source": source,
                "call": None,
                "output_role": "ai",
                "output": message["content"],
            }
        tool = message["executed_tools"][int(what[4:])]
        call = {"name": tool["type"], "arguments": tool["arguments"]}
        return {"source": source, "call": call, "output_role": "tool", "output": tool["output"]}
    assert what.startswith("block"), ref
    blocks = body["content"]
    block = blocks[int(what[5:])]
    if block["type"] == "text":
        return {"source": source, "call": None, "output_role": "ai", "output": block["text"]}
    use = next(b for b in blocks if b.get("id") == block["tool_use_id"])
    call = {"name": use["name"], "arguments": json.dumps(use["input"], ensure_ascii=False)}
    output = json.dumps(block["content"], ensure_ascii=False)
    return {"source": source, "call": call, "output_role": "tool", "output": output}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--pydantic-ai", type=Path, default=PYDANTIC_AI_GIT)
    parser.add_argument("--claude-reliability", type=Path, default=RELIABILITY_GIT)
    parser.add_argument("--openhands", type=Path, default=OPENHANDS_GIT)
    parser.add_argument("--swe-agent", type=Path, default=SWE_AGENT_GIT)
    parser.add_argument("--dump", type=Path)
    args = parser.parse_args()
    bodies: list[dict[str, Any]] = []
    for _, _, ref, _ in SPECS:
        if ref.startswith("pai:"):
            bodies.append(_from_pydantic_ai(args.pydantic_ai, ref))
        elif ref.startswith("cc:"):
            _, path, line = ref.split(":")
            bodies.append(
                _from_claude_code_log(
                    args.claude_reliability,
                    "DRMacIver/claude-reliability",
                    RELIABILITY_COMMIT,
                    path,
                    int(line),
                )
            )
        elif ref.startswith("oh:"):
            bodies.append(_from_openhands(args.openhands, ref))
        else:
            bodies.append(_from_swe_agent(args.swe_agent, ref))
    _write_items(HERE / "items_dev.jsonl", SPECS, bodies, args.dump)


if __name__ == "__main__":
    main()
