"""Rebuild ``items_fresh.jsonl``: part E of the fidelity set (maintainers only).

Part E is a second fresh held-out set: real tool results and answers from a transcript
no earlier item came from, collected and labelled after parts A to D were tuned on,
and committed before any summarizer was run on them (sources in SOURCES.md). Outputs are
copied unchanged but for the chat log's own markup (see :func:`_unquote`); the facts
below were written down by reading each item. Fact patterns follow ``build_items.py``:
a plain string must appear as is, ``re:...`` is a regular expression, and all patterns
of one fact must be found near each other.

The texts are read from a local git mirror (``git --git-dir ... show commit:path``):

    PYTHONPATH=. python benchmarks/fidelity/build_fresh.py [--aider GIT_DIR] [--dump DIR]

``--dump DIR`` also writes each item's text to ``DIR/<id>.txt`` (for reading and
labelling).
"""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path
from typing import Any

from build_heldout import _source, _write_items
from build_items import _git_show

HERE = Path(__file__).resolve().parent
AIDER_GIT = Path("/work/.mirror/Aider-AI+aider/repo")
AIDER_COMMIT = "5dc9490bb35f9729ef2c95d00a19ccd30c26339c"
_HISTORY = "tests/fixtures/chat-history.md"

Fact = tuple[str, list[str]]

# (id, kind, source, facts). Sources: "aider:<line>", the 0-based line of the chat log
# holding the user's "#### " message: a "/command" (its output is the item, the command
# its call) or a request (the assistant's answer below it is the item).
# fmt: off
SPECS: list[tuple[str, str, str, list[Fact]]] = [
    # --- aider's chat log: commands it ran for the user (/test, /run, /lint, /tok ...) ---
    ("ae-test-repomap", "test run", "aider:2143", [
        ("the command", ["pytest tests/basic/test_repomap.py"]),
        ("the counts", ["1 failed, 6 passed"]),
        ("the failing test", ["test_get_repo_map_subtree_only"]),
        ("the error", ["NameError: name 'GitRepo' is not defined"]),
        ("where", ["tests/basic/test_repomap.py:332"]),
    ]),
    ("ae-test-main-map-tokens", "test run", "aider:4027", [
        ("the command", ["pytest tests/basic/test_main.py"]),
        ("the counts", ["2 failed, 25 passed"]),
        ("the first failing test", ["test_map_tokens_option"]),
        ("the second failing test", ["test_map_tokens_option_with_non_zero_value"]),
        ("the patch target's error",
         ["AttributeError: module 'aider' has no attribute 'base_coder'"]),
        ("the comparison error with its place",
         ["TypeError: '>' not supported between instances of 'MagicMock' and 'int'"]),
    ]),
    ("ae-test-read-external", "test run", "aider:23501", [
        ("the command", ["test_cmd_read_with_external_file"]),
        ("the counts", ["1 failed, 31 deselected"]),
        ("the assertion's cause: /private prefix", ["re:AssertionError: '/private/var/folders/"]),
        ("where", ["tests/basic/test_commands.py:772"]),
    ]),
    ("ae-test-cmd-ask", "test run", "aider:41434", [
        ("the command", ["pytest tests/basic/test_commands.py"]),
        ("the counts", ["1 failed, 32 passed"]),
        ("the failing test", ["test_cmd_ask"]),
        ("the error", ["AttributeError: 'SwitchCoder' object has no attribute 'edit_format'"]),
        ("where", ["tests/basic/test_commands.py:888"]),
    ]),
    ("ae-run-add-read-only", "test run", "aider:43608", [
        ("the command", ["test_cmd_add_read_only_file"]),
        ("the counts", ["1 failed, 33 deselected"]),
        ("the error", ["AttributeError: 'GitRepo' object has no attribute 'is_tracked_file'"]),
        ("the suggested method", ["Did you mean: 'get_tracked_files'?"]),
        ("where", ["aider/commands.py:595"]),
        ("the user's follow-up", ["fix cmd_add"]),
    ]),
    ("ae-run-yaml-config", "test run", "aider:66833", [
        ("the command", ["test_yaml_config_file_loading"]),
        ("the counts", ["1 failed, 30 deselected"]),
        ("the error", ["KeyError: 'model'"]),
        ("where", ["tests/basic/test_main.py:409"]),
        ("the expected model", ["self.assertEqual(kwargs[\"model\"], \"gpt-4-32k\")"]),
    ]),
    ("ae-test-sonnet-cache", "test run", "aider:83626", [
        ("the command", ["test_sonnet_and_cache_options"]),
        ("the counts", ["1 failed, 32 deselected"]),
        ("the failed check", ["MockRepoMap.assert_called_once_with(refresh=\"files\")"]),
        ("what was expected", ["Expected: RepoMap(refresh='files')"]),
        ("what it got: positional arguments", ["re:Actual: RepoMap\\(1024, "]),
        ("where", ["tests/basic/test_main.py:531"]),
    ]),
    ("ae-run-unittest-main", "test run", "aider:96012", [
        ("the command", ["python -m unittest tests/basic/test_main.py"]),
        ("the count and time", ["Ran 37 tests in 5.663s"]),
        ("the outcome", ["re:(?m)^OK$"]),
        ("the deprecation warnings' source", ["PydanticDeprecatedSince20"]),
        ("the version under test", ["Aider v0.51.2-dev"]),
    ]),
    ("ae-run-scrape", "test run", "aider:29867", [
        ("the command", ["pytest tests/scrape/test_scrape.py"]),
        ("the counts", ["1 failed, 4 passed"]),
        ("the failing test", ["test_scrape_with_playwright_error_handling"]),
        ("the error", ["TypeError: cannot unpack non-iterable NoneType object"]),
        ("where", ["aider/scrape.py:97"]),
        ("the user's question", ["does self.scrape_with_playwright always return the tuple?"]),
    ]),
    ("ae-run-mentions-read-only", "test run", "aider:45477", [
        ("the command", ["test_check_for_file_mentions_read_only"]),
        ("the counts", ["1 failed, 20 deselected"]),
        ("the assertion", ["self.assertIsNone(result)"]),
        ("what came back instead", ["I added these files to the chat: readonly_file.txt"]),
        ("where", ["tests/basic/test_coder.py:213"]),
        ("the user's diagnosis",
         ["get_addable_relative_files needs to exclude the read only files too"]),
    ]),
    ("ae-run-apply-shell", "test run", "aider:97583", [
        ("the test", ["test_apply_shell_commands"]),
        ("the shell command it ran", ["touch file.txt"]),
        ("the count and time", ["Ran 1 test in 0.077s"]),
        ("the outcome", ["re:(?m)^OK$"]),
    ]),
    ("ae-lint-commands", "lint run", "aider:42573", [
        ("the file linted", ["tmp.lint.sh aider/commands.py"]),
        ("the failing hook", ["re:flake8\\.{20,}Failed"]),
        ("the finding with its place", ["aider/commands.py:146:39: F821 undefined name 'Text'"]),
        ("the offending line", ["self.io.console.print(Text(content))"]),
        ("the fix commit", ["Commit ddedd40"]),
    ]),
    ("ae-lint-benchmark", "lint run", "aider:65697", [
        ("the file linted", ["tmp.lint.sh benchmark/benchmark.py"]),
        ("the failing hook", ["re:flake8\\.{20,}Failed"]),
        ("the first finding", ["benchmark/benchmark.py:381:36: E226"]),
        ("the second finding", ["benchmark/benchmark.py:396:31: E226"]),
        ("the third finding", ["benchmark/benchmark.py:399:58: E226"]),
        ("what the rule says", ["missing whitespace around arithmetic operator"]),
        ("the fix commit", ["Commit e377834"]),
    ]),
    ("ae-tok-image", "token report", "aider:9230", [
        ("the image's tokens", ["re:1,105 \\S*tmplacu1lv7\\.png"]),
        ("the total", ["1,769 tokens total"]),
        ("what is left", ["14,616 tokens remaining"]),
        ("the window", ["16,385 tokens max context window size"]),
    ]),
    ("ae-tok-sonnet", "token report", "aider:41049", [
        ("the model", ["claude-3-5-sonnet-20240620"]),
        ("the largest file", ["4,032 aider/args.py"]),
        ("the editblock coder's share", ["3,672 aider/coders/editblock_coder.py"]),
        ("the repository map", ["1,119 repository map"]),
        ("the total with its cost", ["$ 0.0379   12,649 tokens total"]),
        ("what is left", ["187,351 tokens remaining"]),
    ]),
    ("ae-run-pip-compile", "dependency install", "aider:17745", [
        ("the command", ["scripts/pip-compile.sh --upgrade"]),
        ("the package that cannot be installed",
         ["ERROR: Cannot install sentence-transformers because these package versions have "
          "conflicting dependencies"]),
        ("the outcome", ["ResolutionImpossible"]),
        ("the tokenizers pin", ["tokenizers==0.20.0"]),
        ("what transformers needs", ["tokenizers<0.20,>=0.19"]),
        ("the litellm pin", ["litellm==1.43.4"]),
    ]),
    ("ae-run-git-diff-attribute", "diff", "aider:33102", [
        ("the command", ["git diff a162"]),
        ("the option renamed",
         ["-        \"--attribute-commit-message\",",
          "+        \"--attribute-commit-message-author\","]),
        ("the option added", ["+        \"--attribute-commit-message-committer\","]),
        ("the new behaviour in repo.py",
         ["+        elif self.attribute_commit_message_committer:"]),
        ("a file changed", ["diff --git a/aider/repo.py"]),
        ("the docs changed", ["diff --git a/aider/website/docs/git.md"]),
        ("the user's next request", ["update the main branch release notes about that"]),
    ]),
    ("ae-git-diff-pypager", "diff", "aider:24632", [
        ("the file changed", ["requirements/requirements.in"]),
        ("the line added", ["+pypager"]),
        ("where", ["@@ -23,6 +23,7 @@"]),
    ]),
    ("ae-run-testsr-json", "script run", "aider:98873", [
        ("the command", ["./testsr.py tmp.one.md"]),
        ("the request parsed", ["use indent=4 on all json.dump"]),
        ("the block's type", ["re:type.{0,4}search_replace"]),
        ("the wrong filename", ["re:filename.{0,4}<source>python"]),
        ("the user's finding", ["notice it got the filename wrong"]),
    ]),
    ("ae-ls-repo", "directory listing", "aider:14286", [
        ("none of them is in the chat", ["Repo files not in the chat:"]),
        ("a stray nested file", ["aider/coders/aider/commands.py"]),
        ("the Linux CI workflow", [".github/workflows/ubuntu-tests.yml"]),
        ("the Windows CI workflow", [".github/workflows/windows-tests.yml"]),
    ]),
    # --- aider's chat log: the assistant's answers ---------------------------------------
    ("ae-answer-language", "answer", "aider:4685", [
        ("no built-in way", ["there isn't a built-in method"]),
        ("the locale module", ["locale.getlocale()[0]"]),
        ("the environment variables", ["LANG", "LANGUAGE", "LC_ALL", "LC_MESSAGES"]),
        ("the third-party option", ["babel"]),
        ("where to put it", ["add this function to the `utils.py` file"]),
        ("the fallback", ["return 'en'"]),
    ]),
    ("ae-answer-tracked-files", "answer", "aider:6683", [
        ("how get_tracked_files works",
         ["uses GitPython to traverse the tree of the latest commit"]),
        ("what it adds", ["Adds staged files from the index"]),
        ("what it filters", ["Filters out files that are ignored"]),
        ("what git ls-files shows", ["lists the files in the index and the working tree"]),
        ("the caching", ["caching mechanism for commit trees"]),
        ("the suggested refactor",
         ["refactoring `get_tracked_files` to use `git ls-files` via GitPython"]),
    ]),
    ("ae-answer-tokenizers", "answer", "aider:19191", [
        ("the help requirements' constraint",
         ["requirements/requirements-help.in", "tokenizers<0.14,>=0.11.1"]),
        ("what transformers requires", ["transformers", "tokenizers<0.20,>=0.19"]),
        ("the transformers version", ["4.44.0"]),
        ("the cause: no version satisfies both",
         ["no version of `tokenizers` that satisfies both constraints"]),
        ("where transformers comes from", ["llama-index"]),
        ("the first fix", ["Update the `tokenizers` constraint in `requirements-help.in`"]),
    ]),
    ("ae-answer-pypager", "answer", "aider:23933", [
        ("what pypager is", ["pager implementation similar to the Unix 'less' command"]),
        ("what it is part of", ["prompt_toolkit"]),
        ("the feature list", ["Searching within the displayed text"]),
        ("the proposal", ["use pypager instead of the SystemPager we implemented earlier"]),
    ]),
    ("ae-answer-class-attr", "answer", "aider:30502", [
        ("the risk", ["all instances of the class will share the same list"]),
        ("the attribute in question", ["commit_before_message = []"]),
        ("where", ["base_coder.py"]),
        ("the safer form", ["self.commit_before_message = []"]),
        ("the rule", ["it's safer to initialize mutable attributes like lists in `__init__`"]),
    ]),
    ("ae-answer-what-repo", "answer", "aider:40682", [
        ("the project", ["a project called \"aider\""]),
        ("what it is", ["AI-assisted coding"]),
        ("the coders", ["editblock_coder.py", "wholefile_coder.py"]),
        ("git integration", ["integrates with git", "repo.py"]),
        ("voice and scraping", ["voice.py", "scrape.py"]),
    ]),
    ("ae-answer-unbound-local", "answer", "aider:43961", [
        ("the commit", ["0fdc07f"]),
        ("it did not fix the error", ["doesn't directly address an UnboundLocalError"]),
        ("what the commit did",
         ["add JavaScript error handling to the `scrape_with_playwright` function"]),
        ("how errors are shown", ["self.print_error"]),
        ("what is needed next", ["the full error message and the line number"]),
    ]),
    ("ae-answer-refactor-coder", "answer", "aider:53625", [
        ("the file to split", ["aider/coders/base_coder.py"]),
        ("the first extraction", ["aider/coders/commit_handler.py"]),
        ("what moves there", ["auto_commit", "dirty_commit"]),
        ("the file manager module", ["aider/coders/file_manager.py"]),
        ("the LLM module", ["aider/coders/llm_interaction.py"]),
        ("the edit module", ["aider/coders/edit_handler.py"]),
        ("the pending question", ["Would you like me to proceed with this refactoring?"]),
    ]),
    ("ae-answer-analytics", "answer", "aider:61420", [
        ("the recommendation", ["PostHog might be more suitable"]),
        ("why: open source, self-hosting", ["PostHog is open-source"]),
        ("Mixpanel's drawback", ["Does not offer a self-hosted option"]),
        ("the install command", ["pip install posthog"]),
        ("the event call", ["posthog.capture('cli_user', 'app_started')"]),
        ("the shutdown hook", ["atexit.register(posthog.shutdown)"]),
    ]),
    ("ae-answer-format-tokens", "answer", "aider:86653", [
        ("the function", ["format_tokens"]),
        ("it rounds down large counts", ["10000 and above: Rounds down to the nearest thousand"]),
        ("the middle range", ["1000-9999: Rounds to one decimal place"]),
        ("why: integer division", ["count // 1000"]),
        ("the suggested fix", ["round(count / 1000)"]),
    ]),
    ("ae-answer-update-blocks", "answer", "aider:91298", [
        ("the function compared", ["find_original_update_blocks"]),
        ("the original's approach", ["regex-based approach with string splitting"]),
        ("the new version's approach", ["line-by-line parsing approach"]),
        ("shell blocks", ["The original version doesn't handle shell code blocks"]),
        ("the filename carry-over", ["current_filename"]),
        ("the error it avoids", ["Bad/missing filename"]),
    ]),
    ("ae-answer-clipboard", "answer", "aider:47288", [
        ("the verdict",
         ["might not work directly with the terminal built into Visual Studio Code"]),
        ("why: how it grabs images", ["ImageGrab.grabclipboard()"]),
        ("the first workaround", ["Ensure the image is copied to the system clipboard"]),
        ("the second workaround", ["Run aider in an external terminal"]),
        ("text still works", ["pyperclip.paste()"]),
    ]),
]
# fmt: on


def _unquote(line: str) -> str:
    """A chat log line as the terminal showed it: aider writes tool output as markdown
    quotes (``> ``) with two trailing spaces (a markdown line break)."""
    if line.startswith("> "):
        line = line[2:]
    elif line == ">":
        line = ""
    return line[:-2] if line.endswith("  ") else line


def _command_output(lines: list[str], at: int) -> str:
    """What a ``#### /command`` printed: the lines up to the next message or session.
    A command whose output is also echoed quoted (``/test``, ``/run``: the raw output,
    then the same lines again as ``> `` quotes for the chat) is read up to that echo,
    which starts with its first line quoted again."""
    out: list[str] = []
    first = _unquote(lines[at + 1]).rstrip() if at + 1 < len(lines) else ""
    for index in range(at + 1, len(lines)):
        line = lines[index]
        if line.startswith(("#### ", "# aider chat started")):
            break
        if out and first and line.rstrip() == f"> {first}":
            break  # the quoted echo of the raw output above
        out.append(line)
    return "\n".join(_unquote(line) for line in out).strip("\n")


def _answer(lines: list[str], at: int) -> str:
    """The assistant's answer to the request at ``at``: its lines up to aider's own
    report (``> `` lines), the next message or the next session."""
    out: list[str] = []
    for line in lines[at + 1 :]:
        if line.startswith(("> ", "#### ", "# aider chat")) or line == ">":
            break
        out.append(line)
    return "\n".join(out).strip("\n")


def _from_aider(lines: list[str], ref: str) -> dict[str, Any]:
    at = int(ref.split(":")[1])
    message = lines[at].removeprefix("#### ").rstrip()
    source = _source("Aider-AI/aider", AIDER_COMMIT, _HISTORY, f"line {at + 1}")
    source["license"] = "Apache-2.0"
    match = re.fullmatch(r"/(\w+)\s*(.*)", message)
    if match is None:
        return {"source": source, "call": None, "output_role": "ai", "output": _answer(lines, at)}
    name, rest = match.groups()
    arguments = json.dumps({"command": rest.strip()}) if rest.strip() else "{}"
    return {
        "source": source,
        "call": {"name": name, "arguments": arguments},
        "output_role": "tool",
        "output": _command_output(lines, at),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--aider", type=Path, default=AIDER_GIT)
    parser.add_argument("--dump", type=Path)
    args = parser.parse_args()
    lines = _git_show(args.aider, AIDER_COMMIT, _HISTORY).decode("utf-8").split("\n")
    bodies = [_from_aider(lines, ref) for _, _, ref, _ in SPECS]
    _write_items(HERE / "items_fresh.jsonl", SPECS, bodies, args.dump)


if __name__ == "__main__":
    main()
