"""Rebuild ``items_heldout.jsonl``: part C of the fidelity set (maintainers only).

Part C is a fresh set of real tool results and answers, labelled after the handler was
tuned on parts A and B, from transcripts no earlier item came from (sources in
SOURCES.md). Outputs are copied unchanged; the facts below were written down by reading
each item before any summarizer was run on it. Fact patterns follow ``build_items.py``:
a plain string must appear as is, ``re:...`` is a regular expression, and all patterns
of one fact must be found near each other.

The texts are read from local git mirrors (``git --git-dir ... show commit:path``):

    PYTHONPATH=. python benchmarks/fidelity/build_heldout.py [--openhands GIT_DIR]
        [--spotter GIT_DIR] [--swe-agent GIT_DIR] [--dump DIR]

``--dump DIR`` also writes each item's text to ``DIR/<id>.txt`` (for reading and
labelling).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from build_items import SWE_AGENT_GIT, _from_swe_agent, _git_show

HERE = Path(__file__).resolve().parent
OPENHANDS_GIT = Path("/work/.mirror/All-Hands-AI+OpenHands/repo")
OPENHANDS_COMMIT = "156d0686c46aafb0fa9d291da6421fb6f64dddc0"
SPOTTER_GIT = Path("/work/.mirror/marot+spotter/repo")
SPOTTER_COMMIT = "8cc42b0bd39d04e71e509d7d58e6782ab435329f"
_MULTI_SWE = "evaluation/benchmarks/multi_swe_bench/examples/output.jsonl"
_RESOLVER = "tests/unit/resolver/mock_output/output.jsonl"
_TRAJS = "tests/runtime/trajs/"
_SUBAGENT = "test/fixtures/transcripts/subagent.jsonl"
_TOOL_HEAVY = "test/fixtures/transcripts/tool_heavy.jsonl"
_CTF = "trajectories/demonstrations/ctf/"
_MARSHMALLOW_SOURCE = (
    "trajectories/demonstrations/replay__marshmallow-code__marshmallow-1867__default__t-0.20"
    "__p-0.95__c-2.00__install-1___install_from_source/marshmallow-code__marshmallow-1867.traj"
)

Fact = tuple[str, list[str]]

# (id, kind, source, facts). Sources:
#   "oh:<path>:<line>:<event>"  an OpenHands run (line of a .jsonl, or -1 for a .json
#                                list of events) and the index of an event in its history
#   "cc:<path>:<line>"          a Claude Code log line of marot/spotter (a tool result or
#                                an assistant text block)
#   "swe:<path>:<step>"         a SWE-agent trajectory step (read as in build_items.py)
# fmt: off
SPECS: list[tuple[str, str, str, list[Fact]]] = [
    # --- OpenHands on Multi-SWE-bench (ponyc issues; Llama 4 Maverick) -----------------
    ("oh-ls-ponyc", "directory listing", f"oh:{_MULTI_SWE}:0:5", [
        ("the command", ["ls -l /workspace/ponylang__ponyc__0.1"]),
        ("the make build file", ["re:(?m) Makefile$"]),
        ("the cmake build file", ["re:(?m) CMakeLists\\.txt$"]),
        ("the sources", ["re:(?m)^drwx.* src$"]),
        ("the tests", ["re:(?m)^drwx.* test$"]),
    ]),
    ("oh-ls-ast", "directory listing", f"oh:{_MULTI_SWE}:0:11", [
        ("the command", ["ls -l /workspace/ponylang__ponyc__0.1/src/libponyc/ast"]),
        ("the parser with its size", ["re:32720 .{0,20}parser\\.c"]),
        ("the parser API with its size", ["re:17084 .{0,20}parserapi\\.c"]),
        ("the AST with its size", ["re:51200 .{0,20}ast\\.c"]),
        ("the lexer with its size", ["re:31208 .{0,20}lexer\\.c"]),
    ]),
    ("oh-read-parser-c", "file read", f"oh:{_MULTI_SWE}:0:13", [
        ("the file", ["/workspace/ponylang__ponyc__0.1/src/libponyc/ast/parser.c"]),
        ("the output is cut", ["only part of this file has been shown"]),
        ("the tuple rule with its line", ["re:465\tDEF\\(tuple\\);"]),
        ("grouped expressions set the parens flag",
         ["re:474\tDEF\\(groupedexpr\\);", "re:480\t  SET_FLAG\\(AST_FLAG_IN_PARENS\\);"]),
        ("grouped types set the parens flag",
         ["re:219\tDEF\\(groupedtype\\);", "re:225\t  SET_FLAG\\(AST_FLAG_IN_PARENS\\);"]),
    ]),
    ("oh-edit-no-match", "file edit", f"oh:{_MULTI_SWE}:0:27", [
        ("the operation and file", ["str_replace", "src/libponyc/ast/parser.c"]),
        ("the outcome", ["No replacement was performed"]),
        ("the cause", ["did not appear verbatim"]),
        ("the rule it targets", ["DEF(idseqsingle);"]),
        ("the intended change", ["SET_FLAG(AST_FLAG_IN_PARENS);"]),
    ]),
    ("oh-answer-4595", "answer", f"oh:{_MULTI_SWE}:0:48", [
        ("the problem", ["segfaulting", "single-element tuple"]),
        ("the change with its place", ["idseqsingle", "parser.c"]),
        ("the flag set", ["AST_FLAG_IN_PARENS"]),
        ("not verified", ["was not built successfully"]),
        ("what is pending", ["need to successfully build and run the `ponyc` compiler"]),
    ]),
    ("oh-read-command-parser", "file read", f"oh:{_MULTI_SWE}:1:40", [
        ("the file", ["/workspace/ponylang__ponyc__0.1/packages/cli/command_parser.pony"]),
        ("the parse method with its line", ["re:50\t  fun _parse_command\\("]),
        ("the subcommand dispatch with its line",
         ["re:101\t +return CommandParser\\._sub\\(cs, this\\)"]),
        ("where defaults are filled",
         ["re:146\t +// Fill in option values from env or from coded defaults"]),
        ("the default assignment",
         ["re:165\t.*options\\.update\\(os\\.name\\(\\), "
          "Option\\(os, os\\._default_p\\(\\)\\)\\)"]),
        ("the missing-subcommand error", ["re:196\t.*\"missing subcommand\""]),
    ]),
    ("oh-insert-command-parser", "file edit", f"oh:{_MULTI_SWE}:1:64", [
        ("the operation and line", ["insert", "\"insert_line\": 102"]),
        ("the file", ["packages/cli/command_parser.pony"]),
        ("the inserted line with its number",
         ["103", "// Correctly handle parent default options"]),
        ("the code around it", ["re:101\t +return CommandParser\\._sub\\(cs, this\\)"]),
        ("the outcome", ["has been edited"]),
    ]),
    ("oh-answer-4593", "answer", f"oh:{_MULTI_SWE}:1:69", [
        ("the file", ["packages/cli/command_parser.pony"]),
        ("the outcome", ["unable to make the necessary changes"]),
        ("the tool that failed", ["str_replace_editor"]),
    ]),
    ("oh-edit-match-c", "file edit", f"oh:{_MULTI_SWE}:2:43", [
        ("the file", ["src/libponyc/expr/match.c"]),
        ("the inserted line with its number",
         ["318\tif(ast_id(pattern_type) == TK_ISO) pattern_type = "
          "set_cap_and_ephemeral(pattern_type, TK_TRN, TK_EPHEMERAL);"]),
        ("a duplicate of it below", ["319\tif(ast_id(pattern_type) == TK_ISO){pattern_type"]),
        ("it follows a return", ["317\t      return pattern_type;"]),
        ("the case it sits in", ["315\t    case TK_MATCH_CAPTURE:"]),
    ]),
    ("oh-grep-builddir", "grep", f"oh:{_MULTI_SWE}:2:76", [
        ("the search", ["grep -n", "buildDir", "ponylang__ponyc__0.1/Makefile"]),
        ("the definition with its line", ["78:buildDir := $(srcDir)/build/build_$(config)"]),
        ("the configure step with its line", ["187:", "cmake -B '$(buildDir)' -S '$(srcDir)'"]),
        ("the build step with its line", ["192:", "--target all"]),
        ("the clean step with its line", ["278:", "rm -rf $(buildDir)"]),
    ]),
    ("oh-cmake-configure", "build run", f"oh:{_MULTI_SWE}:2:88", [
        ("the command", ["cmake -B . -S /workspace/ponylang__ponyc__0.1"]),
        ("the compiler", ["C compiler identification is GNU 11.4.0"]),
        ("the error with its place", ["CMake Error at CMakeLists.txt:27 (find_package)"]),
        ("the cause", ["provided by \"LLVM\"", "LLVMConfig.cmake"]),
        ("the fix it suggests", ["re:set\\s+\"LLVM_DIR\""]),
        ("the outcome", ["Configuring incomplete, errors occurred!"]),
    ]),
    ("oh-apt-llvm-dev", "dependency install", f"oh:{_MULTI_SWE}:2:90", [
        ("the command", ["apt-get install -y llvm-dev"]),
        ("the outcome", ["E: Unable to locate package llvm-dev"]),
        ("the cause", ["Temporary failure resolving 'sys-proxy-rd-relay.byted.org'"]),
        ("the index was not updated", ["W: Some index files failed to download"]),
    ]),
    ("oh-apt-cache-llvm", "package search", f"oh:{_MULTI_SWE}:2:92", [
        ("the command", ["apt-cache search llvm"]),
        ("the development package", ["llvm-14-dev", "libraries and headers"]),
        ("the tools package", ["re:(?m)^llvm-14-tools "]),
        ("the compiler", ["re:(?m)^clang-14 "]),
        ("a newer runtime", ["re:(?m)^libllvm15 "]),
    ]),
    ("oh-cmake-ffi", "build run", f"oh:{_MULTI_SWE}:2:100", [
        ("the command", ["cmake -DLLVM_DIR=/usr/lib/llvm-14/cmake"]),
        ("FFI found", ["Found FFI: /usr/lib/x86_64-linux-gnu/libffi.so"]),
        ("zlib missing", ["Could NOT find ZLIB", "ZLIB_LIBRARY"]),
        ("libxml2 with its version", ["Found LibXml2", "2.9.13"]),
        ("the error with its place", ["CMake Error at CMakeLists.txt:28", "\"GTest\""]),
        ("the outcome", ["Configuring incomplete, errors occurred!"]),
    ]),
    # --- OpenHands resolver runs and runtime test trajectories -----------------------------
    ("ohr-ls-workspace", "directory listing", f"oh:{_RESOLVER}:1:2", [
        ("the command", ["ls -R /workspace"]),
        ("the component", ["PullRequestViewer.tsx"]),
        ("its test", ["PullRequestViewer.test.tsx"]),
        ("the app", ["App.tsx"]),
        ("the build config", ["vite.config.ts"]),
    ]),
    ("ohr-syntax-error", "type check", f"oh:{_RESOLVER}:1:10", [
        ("the edit and file", ["edit_file_by_replace", "/workspace/src/App.tsx"]),
        ("the outcome", ["introduced new syntax error"]),
        ("where", ["/workspace/src/App.tsx:22"]),
        ("not applied", ["Your changes have NOT been applied"]),
        ("the intended change", ["const [darkMode, setDarkMode] = useState(false);"]),
    ]),
    ("ohr-no-exact-match", "file edit", f"oh:{_RESOLVER}:1:28", [
        ("the edit and file", ["edit_file_by_replace", "/workspace/src/PullRequestViewer.tsx"]),
        ("the outcome", ["No exact match found in /workspace/src/PullRequestViewer.tsx"]),
        ("the intended change", ["const [darkMode, setDarkMode] = useState(false);"]),
        ("the component", ["const PullRequestViewer: React.FC"]),
    ]),
    ("ohr-license", "file read", f"oh:{_RESOLVER}:0:6", [
        ("the command", ["cat LICENSE"]),
        ("the license", ["MIT License"]),
        ("the placeholder holder", ["Copyright (c) 2024 [Your Name or Organization Name]"]),
    ]),
    ("oht-2048-create", "diff", f"oh:{_TRAJS}basic.json:-1:2", [
        ("the file created", ["\"command\": \"create\"", "/workspace/game_2048.py"]),
        ("the dependency", ["+import keyboard"]),
        ("the class", ["+class Game2048:"]),
        ("the hunk", ["@@ -1,0 +4,114 @@"]),
        ("the spawn rule", ["2 if random.random() < 0.9 else 4"]),
        ("the quit key", ["if event.name == 'q'"]),
    ]),
    ("oht-2048-answer", "answer", f"oh:{_TRAJS}basic.json:-1:3", [
        ("the board", ["4x4 game board"]),
        ("the dependency to install", ["pip install keyboard"]),
        ("a requirement", ["sudo privileges"]),
        ("the controls", ["arrow keys", "'q' to quit"]),
        ("new tiles", ["(2 or 4)"]),
    ]),
    ("oht-todo-answer", "answer", f"oh:{_TRAJS}basic_gui_mode.json:-1:15", [
        ("what was built", ["Vue.js todo application"]),
        ("where it runs", ["port 8000", "http://localhost:8000"]),
        ("the storage", ["localStorage"]),
        ("the styling", ["Bootstrap"]),
        ("due dates", ["optional due dates"]),
    ]),
    # --- Claude Code sessions of marot/spotter not in the corpus ----------------------------
    ("ccx-webfetch-marketplace", "web fetch", f"cc:{_SUBAGENT}:12", [
        ("the page", ["https://github.com/bradleygolden/claude-marketplace-elixir"]),
        ("the recommended plugin", ["elixir@elixir", "Recommended"]),
        ("older plugins are deprecated", ["being phased out"]),
        ("the audit plugin", ["mix_audit", "Dependency security auditing"]),
        ("setup step 1", ["/plugin marketplace add bradleygolden/claude-marketplace-elixir"]),
        ("setup step 2", ["/plugin install elixir@elixir"]),
    ]),
    ("ccx-websearch-dialyxir", "web search", f"cc:{_SUBAGENT}:13", [
        ("the query", ["dialyxir igniter install elixir"]),
        ("the dependency line", ["{:dialyxir, \"~> 1.4\", only: [:dev, :test], runtime: false}"]),
        ("the igniter install command", ["mix igniter.install <package>"]),
        ("the finding", ["doesn't appear to be a specific pre-built installer for dialyxir"]),
        ("dialyxir's version", ["Dialyxir v1.4.7"]),
    ]),
    ("ccx-websearch-mix-audit", "web search", f"cc:{_SUBAGENT}:14", [
        ("the query", ["mix_audit hex elixir setup"]),
        ("the task it adds", ["mix deps.audit"]),
        ("the dependency line", ["{:mix_audit, \"~> 2.1\", only: [:dev, :test], runtime: false}"]),
        ("the global install", ["mix escript.install hex mix_audit"]),
        ("the current version", ["mix_audit v2.1.5"]),
        ("the requirements", ["Git and Elixir ~1.8"]),
    ]),
    ("ccx-glob-mix-exs", "find", f"cc:{_SUBAGENT}:20", [
        ("the pattern", ["**/mix.exs"]),
        ("the project's own file", ["re:(?m)^/home/marco/projects/spotter/mix\\.exs$"]),
        ("igniter is already a dependency", ["deps/igniter/mix.exs"]),
        ("ash is a dependency", ["deps/ash/mix.exs"]),
    ]),
    ("ccx-websearch-sobelow", "web search", f"cc:{_SUBAGENT}:22", [
        ("the query", ["sobelow igniter install elixir phoenix security"]),
        ("what it is", ["Sobelow is a security-focused static analysis tool"]),
        ("the install command", ["mix escript.install hex sobelow"]),
        ("saving options", ["--save-config", ".sobelow-conf"]),
        ("a release", ["Sobelow 0.12.1", "LiveView Support"]),
        ("no igniter integration found",
         ["don't contain specific information about integration with Sobelow"]),
    ]),
    ("ccx-answer-beads-plan", "answer", f"cc:{_SUBAGENT}:56", [
        ("the epic", ["Epic: Setup Code Quality Tools (Credo, Dialyxir, mix_audit)"]),
        ("a dependency to add", ["{:credo, \"~> 1.7\", only: [:dev, :test], runtime: false}"]),
        ("a dependency to add", ["{:dialyxir, \"~> 1.4\""]),
        ("a dependency to add", ["{:mix_audit, \"~> 2.1\""]),
        ("the install command", ["mix igniter.install credo dialyxir mix_audit"]),
        ("the alias", ["quality: [\"credo\", \"dialyzer\", \"deps.audit\"]"]),
        ("a no-go", ["No CI/CD integration yet"]),
        ("a constraint",
         ["Credo may report style issues in existing code", "don't fix in this task"]),
    ]),
    ("ccx-bd-create-epic", "issue tracker record", f"cc:{_SUBAGENT}:75", [
        ("the command", ["bd create", "--type=epic"]),
        ("the new issue", ["Created issue: spotter-0p7"]),
        ("its title", ["Title: Setup Code Quality Tools (Credo, Dialyxir, mix_audit)"]),
        ("its priority", ["Priority: P2"]),
        ("how to install", ["Install via mix igniter.install"]),
        ("a no-go", ["No CI/CD integration yet"]),
        ("a no-go", ["No fixing existing code to satisfy checkers"]),
    ]),
    ("ccx-answer-beads-created", "answer", f"cc:{_SUBAGENT}:91", [
        ("the epic", ["spotter-0p7", "Setup Code Quality Tools"]),
        ("task 1", ["spotter-0p7.1", "Install quality tools and configure Credo"]),
        ("task 2 and its dependency",
         ["re:spotter-0p7\\.2 \\| Add mix quality alias \\| spotter-0p7\\.1"]),
        ("the next command", ["bd ready"]),
    ]),
    ("ccx-read-app-js", "file read", f"cc:{_TOOL_HEAVY}:35", [
        ("the file", ["/home/marco/projects/spotter/assets/js/app.js"]),
        ("the terminal library", ["re:4→import \\{ Terminal \\} from \"@xterm/xterm\""]),
        ("the hook with its line", ["9→Hooks.Terminal"]),
        ("the scrollback with its line", ["re:21→\\s+scrollback: 10000"]),
        ("the channel with its line", ["re:44→.*terminal:\\$\\{paneId\\}"]),
        ("fonts awaited before open", ["re:32→\\s+document\\.fonts\\.ready"]),
    ]),
    ("ccx-webfetch-xterm", "web fetch", f"cc:{_TOOL_HEAVY}:37", [
        ("the page", ["https://github.com/xtermjs/xterm.js/issues/1343"]),
        ("the problem", ["capturing all scroll events"]),
        ("the fix", ["PR #2388", "bubbling scroll events to parent(s)"]),
        ("the version with the fix", ["milestone 4.0.0"]),
        ("no workaround given", ["doesn't explicitly detail alternative workarounds"]),
    ]),
    ("ccx-websearch-xterm", "web search", f"cc:{_TOOL_HEAVY}:32", [
        ("the query", ["xterm.js scroll not working embedded page captures scroll events"]),
        ("the matching issue", ["Improve Scrolling Experience", "issues/1343"]),
        ("onScroll's behaviour", ["onScroll event is only fired when new lines are introduced"]),
        ("an error seen", ["Unable to preventDefault inside passive event listener invocation"]),
        ("a workaround", ["xterm-viewport absolute positioning", "z-index of 1"]),
        ("the cause", ["prevent scroll events from bubbling up to parent elements"]),
    ]),
    # --- SWE-agent trajectories not used before -------------------------------------------
    ("swex-baby-traceback", "script run", f"swe:{_CTF}crypto/BabyEncryption.traj:3", [
        ("the command", ["python decrypt.py"]),
        ("the error", ["TypeError: integer argument expected, got float"]),
        ("where", ["decrypt.py\", line 5"]),
        ("the offending expression", ["123**(-1)"]),
    ]),
    ("swex-baby-syntax", "file edit", f"swe:{_CTF}crypto/BabyEncryption.traj:7", [
        ("the edit", ["edit 2:2", "binascii.unhexlify(f.read())"]),
        ("the error", ["E999 IndentationError: unexpected indent"]),
        ("the file it hit", ["chall.py (15 lines total)"]),
        ("the line it would replace", ["2:from secret import MSG"]),
        ("the cipher", ["(123 * char + 18) % 256"]),
        ("not applied", ["Your changes have NOT been applied"]),
    ]),
    ("swex-eps-file", "file types", f"swe:{_CTF}crypto/eps.traj:2", [
        ("the command", ["file ./*"]),
        ("a file and its type",
         ["re:eps1\\.1_ones-and-zer0es_c4368e65e1883044f3917485ec928173\\.mpeg:\\s+ASCII text"]),
        ("a file and its type",
         ["re:eps1\\.7_wh1ter0se_2b007cf0ba9881d954e85eb475d0d5e4\\.m4v:\\s+ASCII text"]),
        ("a file and its type",
         ["re:eps1\\.9_zer0-day_b7604a922c8feef666a957933751a074\\.avi:\\s+ASCII text"]),
    ]),
    ("swex-marshmallow-pip", "dependency install", f"swe:{_MARSHMALLOW_SOURCE}:2", [
        ("the command", ["pip install -e .[dev]"]),
        ("the outcome", ["Successfully installed marshmallow-3.13.0"]),
        ("a pinned tool", ["mypy==0.910"]),
        ("a pinned tool", ["flake8==4.0.1"]),
        ("pytest with its version", ["re:satisfied: pytest in \\S+ \\(8\\.1\\.1\\)"]),
        ("the Python version", ["lib/python3.9"]),
    ]),
    ("swex-marshmallow-setup", "file read", f"swe:{_MARSHMALLOW_SOURCE}:1", [
        ("the file and its length", ["setup.py (94 lines total)"]),
        ("the test extra with its line", ['5:    "tests": ["pytest", "pytz", "simplejson"]']),
        ("a lint pin with its line", ['7:        "mypy==0.910"']),
        ("a lint pin with its line", ['8:        "flake8==4.0.1"']),
        ("what the dev extra is",
         ['20:EXTRAS_REQUIRE["dev"] = EXTRAS_REQUIRE["tests"] + EXTRAS_REQUIRE["lint"] + ["tox"]']),
        ("where the version comes from",
         ['48:    version=find_version("src/marshmallow/__init__.py")']),
        ("the Python requirement", ['75:    python_requires=">=3.6"']),
    ]),
]
# fmt: on


def _source(repo: str, commit: str, path: str, where: str) -> dict[str, str]:
    return {"repo": repo, "commit": commit, "path": path, "license": "MIT", "where": where}


def _openhands_call(history: list[dict[str, Any]], index: int) -> dict[str, str]:
    """The call an observation answers: the action its ``cause`` names (or the event
    before it), as the model sent it when recorded, else as the run logged it."""
    cause = history[index].get("cause")
    action = next((e for e in history if cause is not None and e.get("id") == cause), None)
    if action is None:
        action = history[index - 1]
    meta = action.get("tool_call_metadata")
    if meta is not None:
        message = meta["model_response"]["choices"][0]["message"]
        for call in message.get("tool_calls") or []:
            if call["id"] == meta["tool_call_id"]:
                function = call["function"]
                return {"name": function["name"], "arguments": function["arguments"]}
    args = action.get("args", action)
    key = "command" if "command" in args else "code"
    return {"name": action["action"], "arguments": json.dumps({key: args[key]})}


def _from_openhands(git_dir: Path, ref: str) -> dict[str, Any]:
    _, path, line, event = ref.split(":")
    raw = _git_show(git_dir, OPENHANDS_COMMIT, path).decode("utf-8")
    if int(line) < 0:
        history = json.loads(raw)
        where = f"event {event}"
    else:
        history = json.loads(raw.splitlines()[int(line)])["history"]
        where = f"line {line}, history event {event}"
    entry = history[int(event)]
    source = _source("All-Hands-AI/OpenHands", OPENHANDS_COMMIT, path, where)
    if entry.get("action") in ("finish", "message"):  # the agent's final message
        return {"source": source, "call": None, "output_role": "ai", "output": entry["message"]}
    assert "observation" in entry, ref
    return {
        "source": source,
        "call": _openhands_call(history, int(event)),
        "output_role": "tool",
        "output": entry["content"],
    }


def _from_spotter(git_dir: Path, ref: str) -> dict[str, Any]:
    _, path, line = ref.split(":")
    return _from_claude_code_log(git_dir, "marot/spotter", SPOTTER_COMMIT, path, int(line))


def _from_claude_code_log(
    git_dir: Path, repo: str, commit: str, path: str, line: int
) -> dict[str, Any]:
    """One line of a recorded Claude Code session log (``.jsonl``): a tool result with
    the ``tool_use`` block it answers, or an assistant text block (an answer)."""
    entries = [
        json.loads(text) for text in _git_show(git_dir, commit, path).decode("utf-8").splitlines()
    ]
    blocks = entries[line]["message"]["content"]
    source = _source(repo, commit, path, f"log line {line}")
    text = next((b for b in blocks if b["type"] == "text"), None)
    if text is not None:
        return {"source": source, "call": None, "output_role": "ai", "output": text["text"]}
    result = next(b for b in blocks if b["type"] == "tool_result")
    assert isinstance(result["content"], str), (path, line)
    call = next(
        block
        for entry in reversed(entries[:line])
        if isinstance(entry.get("message"), dict)
        and isinstance(entry["message"].get("content"), list)
        for block in entry["message"]["content"]
        if block.get("type") == "tool_use" and block["id"] == result["tool_use_id"]
    )
    return {
        "source": source,
        "call": {"name": call["name"], "arguments": json.dumps(call["input"])},
        "output_role": "tool",
        "output": result["content"],
    }


def _text(body: dict[str, Any]) -> str:
    call = body["call"]
    if call is None:
        return str(body["output"])
    return f"{call['name']}({call['arguments']})\n{body['output']}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--openhands", type=Path, default=OPENHANDS_GIT)
    parser.add_argument("--spotter", type=Path, default=SPOTTER_GIT)
    parser.add_argument("--swe-agent", type=Path, default=SWE_AGENT_GIT)
    parser.add_argument("--dump", type=Path)
    args = parser.parse_args()
    bodies: list[dict[str, Any]] = []
    for _, _, ref, _ in SPECS:
        if ref.startswith("oh:"):
            bodies.append(_from_openhands(args.openhands, ref))
        elif ref.startswith("cc:"):
            bodies.append(_from_spotter(args.spotter, ref))
        else:
            bodies.append(_from_swe_agent(args.swe_agent, ref))
    _write_items(HERE / "items_heldout.jsonl", SPECS, bodies, args.dump)


def _write_items(
    target: Path,
    specs: list[tuple[str, str, str, list[Fact]]],
    bodies: list[dict[str, Any]],
    dump: Path | None,
) -> None:
    """Write one JSON line per spec (id, kind, its body, its facts) to ``target``; with
    ``dump``, each item's text to ``dump/<id>.txt`` as well."""
    lines: list[str] = []
    for (item_id, kind, _, facts), body in zip(specs, bodies, strict=True):
        if dump is not None:
            dump.mkdir(parents=True, exist_ok=True)
            (dump / f"{item_id}.txt").write_text(_text(body), encoding="utf-8")
        item = {
            "id": item_id,
            "kind": kind,
            **body,
            "facts": [{"what": what, "match": match} for what, match in facts],
        }
        lines.append(json.dumps(item, ensure_ascii=False))
    target.write_text("\n".join(lines) + "\n", encoding="utf-8")
    print(f"wrote {len(lines)} items")


if __name__ == "__main__":
    main()
