"""Rebuild ``items.jsonl`` from the recorded sources (maintainers only; needs the sources).

Each item is one real tool result (with the call that produced it) or one real answer,
copied unchanged, and the key facts a person needs to continue the task, written down by
reading it. The facts are below, next to the item they belong to; the texts are read
from ``../shared/corpus`` and from a local git mirror of SWE-agent (see SOURCES.md).

Fact patterns: a plain string must appear as is; ``re:...`` is a regular expression. All
patterns of one fact must be found near each other in a summary (see
``fact_kept`` in ``benchmarks/fidelity.py``), so a value only counts with its subject.

    PYTHONPATH=. python benchmarks/fidelity/build_items.py [--corpus DIR] [--swe-agent GIT_DIR]
        [--mini-swe-agent GIT_DIR]
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
from pathlib import Path
from typing import Any

from benchmarks.policies.corpus import load_folder

HERE = Path(__file__).resolve().parent
CORPUS = Path("/work/shared/corpus")
SWE_AGENT_GIT = Path("/work/.mirror/SWE-agent+SWE-agent/repo")
SWE_AGENT_COMMIT = "3ea751c087f32b16e039a2233dd6eefecef325d5"
CORPUS_SOURCES = {
    "openai_taubench": (
        "sierra-research/tau-bench",
        "59a200c6d575",
        "historical_trajectories/gpt-4o-airline.json",
    ),
    "anthropic_claudecode": (
        "marot/spotter",
        "8cc42b0bd39d",
        "test/fixtures/transcripts/**/*.jsonl",
    ),
}
_PYDICOM = (
    "tests/test_data/trajectories/gpt4__swe-bench-dev-easy_first_only__default__t-0.00__"
    "p-0.95__c-3.00__install-1/pydicom__pydicom-1458.traj"
)
_MARSHMALLOW = (
    "trajectories/demonstrations/replay__marshmallow-code__marshmallow-1867__function_"
    "calling_replace__install-1/marshmallow-code__marshmallow-1867.traj"
)
_CTF = "trajectories/demonstrations/ctf/"
_HUMANEVALFIX = (
    "trajectories/demonstrations/human_thought__swe-bench-HumanEvalFix-python__lcb__t-0.00__"
    "p-0.95__c-4.00__install-0/humanevalfix-python-0.traj"
)
MINI_SWE_AGENT_GIT = Path("/work/.mirror/SWE-agent+mini-swe-agent/repo")
MINI_SWE_AGENT_COMMIT = "a83fcae82d2a08f0ee0c688f9d137b3566c097f8"
_MINI_ISSUE = "tests/test_data/github_issue.traj.json"
_MINI_COMMAND = re.compile(r"```mswea_bash_command\n(.*?)\n```", re.DOTALL)

Fact = tuple[str, list[str]]

# (id, kind, source: "corpus chain:message index" or "swe:path:step", facts)
# fmt: off
SPECS: list[tuple[str, str, str, list[Fact]]] = [
    # --- Claude Code sessions (spotter) -------------------------------------------------
    ("cc-deps-get-otel", "dependency install", "claudecode_spotter_ae4a77f8:29", [
        ("the command", ["mix deps.get"]),
        ("new package opentelemetry", ["re:\\bopentelemetry[ =:@]+1\\.7\\.0"]),
        ("new package opentelemetry_api", ["re:opentelemetry_api[ =:@]+1\\.5\\.0"]),
        ("new package opentelemetry_exporter", ["re:opentelemetry_exporter[ =:@]+1\\.10\\.0"]),
        ("new package opentelemetry_phoenix", ["re:opentelemetry_phoenix[ =:@]+2\\.0\\.1"]),
        ("new package opentelemetry_ash", ["re:opentelemetry_ash[ =:@]+0\\.1\\.3"]),
        ("new package opentelemetry_bandit", ["re:opentelemetry_bandit[ =:@]+0\\.3\\.0"]),
    ]),
    ("cc-test-otel-crash", "test run", "claudecode_spotter_ae4a77f8:73", [
        ("the command", ["mix test --seed 0"]),
        ("what failed", ["Could not start application opentelemetry"]),
        ("the cause", ["BadMapError", "expected a map"]),
        ("the offending config", ["exporter", "otel_exporter_stdout"]),
        ("where", ["otel_configuration.erl:213"]),
    ]),
    ("cc-test-secret-key-base", "test run", "claudecode_spotter_258c7280:177", [
        ("the command", ["mix test test/spotter_web/live/project_review_live_test.exs"]),
        ("the counts", ["5 tests, 5 failures"]),
        ("the error", ["RuntimeError", "no :secret_key_base configuration found"]),
        ("which endpoint", ["secret_key_base", "SpotterWeb.Endpoint"]),
        ("a failing test with its line", ["project_review_live_test.exs:58"]),
    ]),
    ("cc-issue-epic-4te", "issue tracker record", "claudecode_spotter_ae4a77f8:2", [
        ("the issue id and title", ["spotter-4te", "OpenTelemetry tracing"]),
        ("a prohibition", ["re:Do not use `?ash_opentelemetry"]),
        ("the library to use instead", ["re:use `?opentelemetry_ash"]),
        ("the tracer config", ["config :ash, :tracer, [OpentelemetryAsh]"]),
        ("the default exporter", ["console exporter", "otel_exporter_stdout"]),
        ("a constraint", ["No schema migrations and no API route changes"]),
        ("a constraint", ["traceparent", "must never cause 4xx/5xx"]),
        ("the first subtask", ["spotter-4te.1", "OTEL dependencies"]),
    ]),
    ("cc-test-373-pass", "test run", "claudecode_spotter_fa812bfe:89", [
        ("the command", ["mix test"]),
        ("the counts", ["14 doctests, 373 tests, 0 failures"]),
        ("a compiler warning with its place", ["create_heatmap/3", "heatmap_live_test.exs:22"]),
    ]),
    ("cc-credo", "lint run", "claudecode_spotter_ae4a77f8:95", [
        ("the command", ["mix credo --strict"]),
        ("finding 1 with its place", ["lib/spotter/application.ex:9:5"]),
        ("finding 2 with its place", ["re:implicit `?try", "lib/spotter/telemetry/otel.ex:39:5"]),
        ("the counts", ["found 1 code readability issue, 1 software design suggestion"]),
    ]),
    ("cc-dialyzer", "type check", "claudecode_spotter_4d5611e5:222", [
        ("the command", ["mix dialyzer"]),
        ("warning 1", ["lib/spotter/services/waiting_summary.ex:112", "pattern_match"]),
        ("warning 2", ["slice_builder.ex:40:22", "call_without_opaque"]),
        ("warning 3", ["lib/spotter_web/live/subagent_live.ex:25", "guard_fail"]),
    ]),
    ("cc-migrate", "database migration", "claudecode_spotter_258c7280:43", [
        ("the command", ["mix ecto.migrate"]),
        ("the migration", ["20260211203856", "AddAnnotationMessageRefsAndSource"]),
        ("the new table", ["CREATE TABLE annotation_message_refs"]),
        ("the unique index", ["annotation_message_refs_unique_annotation_message_index"]),
        ("the outcome", ["Migrated 20260211203856"]),
    ]),
    ("cc-commit-hook-failed", "git commit", "claudecode_spotter_ae4a77f8:222", [
        ("the command", ["git commit"]),
        ("the outcome", ["Pre-commit validation failed"]),
        ("credo finding", ["cyclomatic complexity is 13, max is 9"]),
        ("its place", ["hooks_controller.ex:144:7"]),
        ("dialyzer finding with its place", ["otel_trace_helpers.ex:57:13", "pattern_match"]),
        ("dialyzer count", ["Total errors: 3"]),
    ]),
    ("cc-vitest-persisted", "test run", "claudecode_spotter_8463c716:235", [
        ("the command", ["npx vitest run"]),
        ("why the output is elided", ["Output too large (141KB)"]),
        ("where the full output is", ["toolu_019CpL49DWBenUxVVCWEXz3L.txt"]),
        ("vitest version", ["re:v4\\.0\\.18"]),
    ]),
    ("cc-websearch-otel-api", "web search", "claudecode_spotter_ae4a77f8_sub_agent-aac57f5:2", [
        ("the query", ["opentelemetry_api elixir latest version"]),
        ("version on hex.pm", ["re:1\\.4\\.1"]),
        ("version on hexdocs", ["re:1\\.5\\.0"]),
        ("the package page", ["https://hex.pm/packages/opentelemetry_api"]),
    ]),
    ("cc-read-mix-exs", "file read", "claudecode_spotter_6c2214d7_sub_agent-afc096d:4", [
        ("the file", ["spotter-0rt/mix.exs"]),
        ("elixir version", ["re:elixir:?\\W+~> 1\\.19"]),
        ("a pinned dependency", ["re::ash,\\W+~> 3\\.0"]),
        ("a pinned dependency", ["re::oban,\\W+~> 2\\.0"]),
        ("a pinned dependency", ["re::ash_sqlite,\\W+~> 0\\.2"]),
        ("the test alias", ["ash.setup --quiet"]),
    ]),
    ("cc-read-router", "file read", "claudecode_spotter_fa812bfe_sub_agent-a93ccab:4", [
        ("the file", ["lib/spotter_web/router.ex"]),
        ("a route with its controller", ["/hooks/session-start", "SessionHookController"]),
        ("a route with its controller", ["/hooks/tool-call", "HooksController"]),
        ("a route with its controller", ["/review-context/:token", "ReviewContextController"]),
        ("a live route", ["/sessions/:session_id", "SessionLive"]),
    ]),
    ("cc-read-config", "file read", "claudecode_spotter_6c2214d7_sub_agent-afc096d:5", [
        ("the file", ["config/config.exs"]),
        ("Oban engine", ["engine", "Oban.Engines.Lite"]),
        ("queue size", ["re:queues:?\\W+\\[?default: 10"]),
        ("LiveView salt", ["signing_salt", "spotter_lv_salt"]),
        ("Ash page type", ["default_page_type", ":keyset"]),
    ]),
    ("cc-deps-get-lazy-html", "dependency install", "claudecode_spotter_8463c716:272", [
        ("the command", ["mix deps.get"]),
        ("new package", ["re:lazy_html[ =:@]+0\\.1\\.10"]),
        ("new package", ["re:\\bfine[ =:@]+0\\.1\\.4"]),
        ("phoenix_live_view version", ["re:phoenix_live_view[ =:@]+1\\.1\\.22"]),
    ]),
    ("cc-git-log", "git log", "claudecode_spotter_258c7280:3", [
        ("the command", ["git log --oneline -20"]),
        ("the newest commit", ["0629d16", "auto-cleanup review tmux sessions"]),
        ("a revert", ["525f299", "Revert"]),
        ("a fix", ["29d0b84", "remove invalid keyset? page option"]),
    ]),
    ("cc-git-status", "git status", "claudecode_spotter_258c7280:90", [
        ("the branch", ["On branch spotter-gqc"]),
        ("a modified file", ["modified", "lib/spotter/transcripts/annotation.ex"]),
        ("the new migration", ["20260211203856_add_annotation_message_refs_and_source.exs"]),
        ("a new resource", ["lib/spotter/transcripts/annotation_message_ref.ex"]),
    ]),
    ("cc-grep-otel", "grep", "claudecode_spotter_ae4a77f8:39", [
        ("the search", ["grep -r", "set_text_map"]),
        ("where it is defined",
         ["deps/opentelemetry_api/src/opentelemetry.erl", "set_text_map_propagator"]),
    ]),
    ("cc-test-idempotent", "test run", "claudecode_spotter_fa812bfe:177", [
        ("the command", ["mix test test/spotter/transcripts/jobs/sync_transcripts_test.exs"]),
        ("the counts", ["13 tests, 1 failure"]),
        ("the failing test with its line", ["sync_transcripts_test.exs:142"]),
        ("the assertion", ["assert length(db_messages) == result.ingested_messages"]),
        ("left and right", ["re:left:\\s+4", "re:right:\\s+2"]),
    ]),
    ("cc-test-lazy-html", "test run", "claudecode_spotter_8463c716:264", [
        ("the command", ["mix test test/spotter_web/live/session_live_test.exs"]),
        ("the counts", ["12 tests, 12 failures"]),
        ("the cause", ["requires lazy_html as a test dependency"]),
        ("the fix it asks for", ["re:\\{:lazy_html, \">= 0\\.1\\.0\", only: :test\\}"]),
    ]),
    ("cc-answer-otel-versions", "answer", "claudecode_spotter_ae4a77f8_sub_agent-aac57f5:15", [
        ("a version with its package", ["opentelemetry_api", "1.5.0"]),
        ("a constraint with its package", ["re::?opentelemetry_api\\b.{0,40}~> 1\\.5"]),
        ("a constraint with its package", ["re::?opentelemetry_exporter\\b.{0,40}~> 1\\.10"]),
        ("a constraint with its package", ["re::?opentelemetry_phoenix\\b.{0,40}~> 2\\.0"]),
        ("a constraint with its package", ["re::?opentelemetry_ash\\b.{0,40}~> 0\\.1"]),
        ("a decision", ["opentelemetry_exporter", "re:(?i)not deprecated"]),
    ]),
    ("cc-answer-gqc-done", "answer", "claudecode_spotter_258c7280:336", [
        ("the epic", ["spotter-gqc"]),
        ("the new endpoint", ["GET /api/review-context/:token"]),
        ("the env switch", ["SPOTTER_REVIEW_MODE=1"]),
        ("a new function", ["Tmux.launch_project_review/3"]),
        ("a new module", ["ReviewTokenStore"]),
        ("the tests added", ["6 new builder tests, 4 controller tests, 1 LiveView test"]),
    ]),
    ("cc-answer-4te-progress", "answer", "claudecode_spotter_ae4a77f8:287", [
        ("the test result", ["297 tests passing with 0 failures"]),
        ("a known issue", ["Dialyzer false positive"]),
        ("the new helper script", ["spotter-plugin/scripts/lib/trace_context.sh"]),
        ("pending task", ["spotter-4te.4", "opentelemetry_ash"]),
        ("pending task", ["spotter-4te.5", "LiveView"]),
        ("pending task", ["spotter-4te.6"]),
    ]),
    ("cc-answer-hook-contract", "answer", "claudecode_spotter_258c7280_sub_agent-a881341:5", [
        ("the output field", ["hookSpecificOutput", "additionalContext"]),
        ("an exit-code rule", ["re:(?i)exit(?: with)? code 0"]),
        ("a prohibition", ["re:No `?additionalSystemPrompt`? field"]),
        ("the source values", ["startup", "resume", "compact"]),
        ("exit code 2", ["re:Exit code 2 shows stderr"]),
    ]),
    # --- tau-bench airline runs ---------------------------------------------------------
    ("tb-user-amelia", "booking record", "taubench_gpt4o_airline_task029_trial1:5", [
        ("the user", ["Amelia", "Davis"]),
        ("membership", ["membership", "silver"]),
        ("gift card balance", ["gift_card_7397998", "re:\\b74\\b"]),
        ("gift card balance", ["gift_card_1647044", "re:\\b236\\b"]),
        ("a card", ["credit_card_4074252", "5435"]),
        ("the reservations", ["8C8K4E", "UDMOP1", "4XGCCM"]),
    ]),
    ("tb-res-4NQLHD", "booking record", "taubench_gpt4o_airline_task017_trial2:11", [
        ("the reservation", ["4NQLHD"]),
        ("cabin", ["cabin", "economy"]),
        ("a flight with its date", ["HAT190", "2024-05-23"]),
        ("a flight with its date", ["HAT021", "2024-05-26"]),
        ("a passenger", ["James", "Kim"]),
        ("payment", ["credit_card_7434610", "1671"]),
        ("insurance", ["insurance", "yes"]),
    ]),
    ("tb-search-jfk-dtw", "flight search", "taubench_gpt4o_airline_task021_trial0:19", [
        ("the search", ["JFK", "DTW", "2024-05-17"]),
        ("a flight and its economy price", ["HAT033", "re:economy\\W+135"]),
        ("a flight and its economy price", ["HAT088", "re:economy\\W+172"]),
        ("a flight and its economy price", ["HAT092", "re:economy\\W+175"]),
        ("a flight and its economy price", ["HAT212", "re:economy\\W+178"]),
    ]),
    ("tb-res-cancelled", "booking record", "taubench_gpt4o_airline_task034_trial3:17", [
        ("the reservation", ["XEHM4B"]),
        ("status", ["status", "cancelled"]),
        ("a flight", ["HAT005", "2024-05-20"]),
        ("refund", ["credit_card_2408938", "-296"]),
        ("cabin", ["cabin", "basic_economy"]),
    ]),
    ("tb-bags-FQ8APE", "booking update", "taubench_gpt4o_airline_task004_trial3:21", [
        ("the reservation", ["FQ8APE"]),
        ("bags", ["total_baggages", "3"]),
        ("paid bags", ["nonfree_baggages", "1"]),
        ("the charge", ["credit_card_7407366", "re:\\b50\\b"]),
        ("a flight", ["HAT056", "2024-05-25"]),
    ]),
    ("tb-onestop-atl-phl", "flight search", "taubench_gpt4o_airline_task007_trial2:13", [
        ("the search", ["ATL", "PHL", "2024-05-24"]),
        ("first leg and its economy price", ["HAT110", "re:economy\\W+105"]),
        ("a connection and its economy price", ["HAT132", "re:economy\\W+190"]),
        ("a connection and its economy price", ["HAT172", "re:economy\\W+102"]),
        ("a connection and its economy price", ["HAT206", "re:economy\\W+145"]),
    ]),
    ("tb-cancel-S5IK51", "booking update", "taubench_gpt4o_airline_task047_trial2:13", [
        ("the reservation", ["S5IK51"]),
        ("status", ["status", "cancelled"]),
        ("refund", ["gift_card_1591784", "-3720"]),
        ("cabin", ["cabin", "business"]),
        ("a flight", ["HAT208", "2024-05-15"]),
    ]),
    ("tb-answer-upgrade", "answer", "taubench_gpt4o_airline_task023_trial1:28", [
        ("the limit", ["re:\\$200"]),
        ("the outgoing change", ["HAT072", "Business"]),
        ("the return flight", ["HAT278", "Economy"]),
        ("bags", ["2 checked bags"]),
        ("the total", ["Total Cost Difference", "$105"]),
    ]),
    ("tb-answer-onestop-ewr-ord", "answer", "taubench_gpt4o_airline_task004_trial2:22", [
        ("the route and date", ["EWR", "ORD", "May 25, 2024"]),
        ("an option's flight with its price", ["HAT041", "$110"]),
        ("an option's flight with its price", ["HAT056", "$155"]),
        ("an option's flight with its price", ["HAT166", "$104"]),
        ("the payment to use", ["gift card"]),
    ]),
    ("tb-answer-res-details", "answer", "taubench_gpt4o_airline_task048_trial0:6", [
        ("cabin", ["Basic Economy"]),
        ("a flight", ["HAT238", "2024-05-14"]),
        ("a flight", ["HAT044", "2024-05-16"]),
        ("a passenger", ["Lucas Brown", "1965-01-01"]),
        ("the rule", ["basic economy flights cannot be modified"]),
    ]),
    ("tb-answer-fastest-return", "answer", "taubench_gpt4o_airline_task003_trial2:24", [
        ("the route and date", ["DEN", "IAH", "May 27, 2024"]),
        ("option 1", ["HAT084", "HAT266"]),
        ("option price", ["re:\\$242"]),
        ("option price", ["re:\\$239"]),
        ("option 3", ["HAT290", "HAT175"]),
    ]),
    # --- SWE-agent trajectories -----------------------------------------------------------
    ("swe-pydicom-traceback", "test run", f"swe:{_PYDICOM}:2", [
        ("the command", ["python reproduce_bug.py"]),
        ("the error", ["AttributeError", "required elements are missing"]),
        ("the missing element", ["missing", "PixelRepresentation"]),
        ("where it is raised", ["numpy_handler.py", "293"]),
        ("the caller", ["reproduce_bug.py", "17"]),
    ]),
    ("swe-pydicom-open", "file read", f"swe:{_PYDICOM}:4", [
        ("the file", ["pydicom/pixel_data_handlers/numpy_handler.py"]),
        ("file length", ["372 lines"]),
        ("the list to change, with its line", ["re:28[78]", "required_elements"]),
        ("the raise, with its line", ["re:29[23]", "raise AttributeError"]),
    ]),
    ("swe-pydicom-patch", "diff", f"swe:{_PYDICOM}:11", [
        ("the file", ["pydicom/pixel_data_handlers/numpy_handler.py"]),
        ("the hunk", ["@@ -285,9 +285,10 @@"]),
        ("the change", ["if 'PixelData' in ds"]),
        ("the change", ["required_elements.append('PixelRepresentation')"]),
    ]),
    ("swe-marshmallow-open", "file read", f"swe:{_MARSHMALLOW}:5", [
        ("the file", ["src/marshmallow/fields.py"]),
        ("file length", ["1997 lines"]),
        ("the buggy line with its number",
         ["1475", "int(value.total_seconds() / base_unit.total_seconds())"]),
        ("the method with its line", ["1471", "_serialize"]),
    ]),
    ("swe-marshmallow-patch", "diff", f"swe:{_MARSHMALLOW}:10", [
        ("the file", ["src/marshmallow/fields.py"]),
        ("the hunk", ["@@ -1472,7 +1472,8 @@"]),
        ("the fix", ["int(round(value.total_seconds() / base_unit.total_seconds()))"]),
    ]),
    ("swe-tshark-hierarchy", "packet capture", f"swe:{_CTF}misc/networking_1.traj:0", [
        ("the command", ["tshark -n -r networking.pcap -q -z io,phs"]),
        ("frames", ["tcp", "frames:59"]),
        ("telnet share", ["telnet", "frames:36"]),
        ("malformed", ["_ws.malformed", "frames:1"]),
    ]),
    ("swe-tshark-endpoints", "packet capture", f"swe:{_CTF}misc/networking_1.traj:1", [
        ("the command", ["tshark -n -r networking.pcap -q -z endpoints,ip"]),
        ("endpoint", ["192.168.221.128", "59"]),
        ("endpoint", ["192.168.221.164", "59"]),
    ]),
    ("swe-tshark-telnet", "packet capture", f"swe:{_CTF}misc/networking_1.traj:2", [
        ("the command", ["re:tshark -r networking\\.pcap -Y \\\\?\"telnet"]),
        ("the flag", ["flag{d316759c281bf925d600be698a4973d5}"]),
        ("the host OS", ["Ubuntu 12.04.2 LTS"]),
        ("the login outcome", ["Login incorrect"]),
    ]),
    ("swe-warmup-disassemble", "disassembly", f"swe:{_CTF}pwn/warmup.traj:0", [
        ("the command", ["disassemble warmup"]),
        ("the function", ["FUN_0040061d"]),
        ("the unsafe call", ["re:(?i)gets"]),
        ("the address it prints", ["FUN_0040060d"]),
    ]),
    ("swe-warmup-exploit", "exploit run", f"swe:{_CTF}pwn/warmup.traj:5", [
        ("the command", ["python exploit.py"]),
        ("the target", ["pwn.chal.csaw.io", "8000"]),
        ("the flag", ["FLAG{LET_US_BEGIN_CSAW_2016}"]),
    ]),
    ("swe-igotid-passwd", "http request", f"swe:{_CTF}web/i_got_id_demo.traj:13", [
        ("the request", ["file.pl?/etc/passwd"]),
        ("the upload page", ["Perl File Upload"]),
        ("root entry", ["root:x:0:0:root:/root:/bin/bash"]),
        ("web user", ["www-data:x:33:33"]),
    ]),
    ("swe-rock-run", "binary run", f"swe:{_CTF}rev/rock.traj:9", [
        ("the command", ["./rock"]),
        ("checks passed", ["Pass 29"]),
        ("the flag", ["Flag{IoDJuvwxy\\tuvyxwxvwzx{\\z{vwxyz}"]),
    ]),
    # --- added later (never used to tune the handler): more SWE-agent runs ----------------
    ("swe-flash-strings", "grep", f"swe:{_CTF}forensics/flash.traj:2", [
        ("the command", ["strings flash_c8429a430278283c0e571baebca3d139.img", "grep flag"]),
        ("the flag", ["flag{b3l0w_th3_r4dar}"]),
    ]),
    ("swe-katy-hash", "decompilation", f"swe:{_CTF}crypto/katy.traj:2", [
        ("the command", ["decompile release --function_name _hash"]),
        ("the signature", ["ulong _hash(char *param_1)"]),
        ("the power of a constant", ["pow(DAT_00400a28"]),
        ("the overflow branch", ["DAT_00400a30", "0x8000000000000000"]),
    ]),
    ("swe-katy-random", "exploit run", f"swe:{_CTF}crypto/katy.traj:6", [
        ("the command", ["python retrieve_random_numbers.py"]),
        ("the server", ["crypto.chal.csaw.io", "4242"]),
        ("the repeated number", ["re:\\[0\\] Got random number: 4"]),
        ("the last number", ["re:\\[16\\] Got random number: 1364650861"]),
    ]),
    ("swe-capsule-decrypt", "crypto attack run", f"swe:{_CTF}crypto/BabyTimeCapsule.traj:7", [
        ("the command", ["RsaCtfTool.py --publickey", "pub1.pub,pub2.pub,pub3.pub"]),
        ("the decrypted flag", ["HTB{t3h_FuTUr3_15_bR1ghT_1_H0p3_y0uR3_W34r1nG_5h4d35!}"]),
        ("the attack mode", ["Multikey mode"]),
        ("the run timed out", ["EXECUTION TIMED OUT", "60.0 SECONDS"]),
    ]),
    ("swe-humanevalfix-edit", "file edit", f"swe:{_HUMANEVALFIX}:2", [
        ("the file and its length", ["main.py (23 lines total)"]),
        ("the edited line", ["15:", "distance = abs(elem - elem2)"]),
        ("the function", ["def has_close_elements"]),
        ("the outcome", ["File updated"]),
    ]),
    # --- mini-swe-agent (a model's real run on a test repository) ----------------------------
    ("mswe-zero-division", "test run", f"mswe:{_MINI_ISSUE}:17", [
        ("the command", ["division(23, 0)"]),
        ("the exit status", ["re:returncode>1<"]),
        ("the error", ["ZeroDivisionError", "division by zero"]),
        ("where", ["re:missing_colon\\.py(?:\", line |:)5"]),
    ]),
    ("mswe-answer-zero", "answer", f"mswe:{_MINI_ISSUE}:18", [
        ("the error seen", ["ZeroDivisionError"]),
        ("the decision", ["handle the zero division case"]),
        ("the guard", ["if b == 0"]),
        ("what it raises", ["raise ValueError", "Cannot divide by zero"]),
    ]),
    ("mswe-patch", "diff", f"mswe:{_MINI_ISSUE}:21", [
        ("the file", ["tests/missing_colon.py"]),
        ("the hunk", ["@@ -1,10 +1,11 @@"]),
        ("the fix", ["def division(a: float, b: float) -> float:"]),
        ("the guard", ["raise ValueError(\"Cannot divide by zero\")"]),
    ]),
]
# fmt: on


def _previous_call(messages: list[Any], index: int, call_id: str) -> Any:
    """The call answered at ``index``: the nearest earlier call with that id (tau-bench
    reuses ids, so the first one with the id may be another call)."""
    for message in reversed(messages[:index]):
        for part in message.parts:
            if part.type == "tool_call" and part.id == call_id:
                return part
    return None


def _from_corpus(chains: dict[str, tuple[str, Any]], ref: str) -> dict[str, Any]:
    name, _, where = ref.rpartition(":")
    folder, chain = chains[name]
    index = int(where)
    message = chain.messages[index]
    repo, commit, path = CORPUS_SOURCES[folder]
    source = {
        "repo": repo,
        "commit": commit,
        "path": path,
        "license": "MIT",
        "where": f"corpus {folder}/{name}.json, message {index} as decoded",
    }
    if message.role.value == "ai":
        return {"source": source, "call": None, "output_role": "ai", "output": message.text}
    result = message.tool_results[0]
    call = _previous_call(chain.messages, index, result.tool_call_id)
    return {
        "source": source,
        "call": {"name": call.name, "arguments": call.arguments},
        "output_role": "tool",
        "output": result.content,
    }


def _git_show(git_dir: Path, commit: str, path: str) -> bytes:
    """A file as stored at ``commit`` in a local git mirror."""
    return subprocess.run(
        ["git", "--git-dir", str(git_dir), "show", f"{commit}:{path}"],
        check=True,
        capture_output=True,
    ).stdout


def _from_swe_agent(git_dir: Path, ref: str) -> dict[str, Any]:
    _, path, step = ref.split(":")
    entry = json.loads(_git_show(git_dir, SWE_AGENT_COMMIT, path))["trajectory"][int(step)]
    return {
        "source": {
            "repo": "SWE-agent/SWE-agent",
            "commit": SWE_AGENT_COMMIT,
            "path": path,
            "license": "MIT",
            "where": f"trajectory[{step}]: action and observation",
        },
        "call": {"name": "bash", "arguments": json.dumps({"command": entry["action"].strip()})},
        "output_role": "tool",
        "output": entry["observation"],
    }


def _from_mini_swe_agent(git_dir: Path, ref: str) -> dict[str, Any]:
    """A mini-swe-agent message: a user message is a command's output (the command is the
    code block of the assistant message before it); an assistant message is an answer."""
    _, path, index = ref.split(":")
    messages = json.loads(_git_show(git_dir, MINI_SWE_AGENT_COMMIT, path))
    message = messages[int(index)]
    source = {
        "repo": "SWE-agent/mini-swe-agent",
        "commit": MINI_SWE_AGENT_COMMIT,
        "path": path,
        "license": "MIT",
        "where": f"message {index} ({message['role']})",
    }
    if message["role"] == "assistant":
        return {"source": source, "call": None, "output_role": "ai", "output": message["content"]}
    found = _MINI_COMMAND.search(messages[int(index) - 1]["content"])
    assert found is not None, ref
    return {
        "source": source,
        "call": {"name": "bash", "arguments": json.dumps({"command": found.group(1).strip()})},
        "output_role": "tool",
        "output": message["content"],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--corpus", type=Path, default=CORPUS)
    parser.add_argument("--swe-agent", type=Path, default=SWE_AGENT_GIT)
    parser.add_argument("--mini-swe-agent", type=Path, default=MINI_SWE_AGENT_GIT)
    args = parser.parse_args()
    chains: dict[str, tuple[str, Any]] = {}
    for folder in CORPUS_SOURCES:
        for chain in load_folder(args.corpus, folder):
            chains[chain.name] = (folder, chain)
    lines: list[str] = []
    for item_id, kind, ref, facts in SPECS:
        if ref.startswith("swe:"):
            body = _from_swe_agent(args.swe_agent, ref)
        elif ref.startswith("mswe:"):
            body = _from_mini_swe_agent(args.mini_swe_agent, ref)
        else:
            body = _from_corpus(chains, ref)
        item = {
            "id": item_id,
            "kind": kind,
            **body,
            "facts": [{"what": what, "match": match} for what, match in facts],
        }
        lines.append(json.dumps(item, ensure_ascii=False))
    (HERE / "items.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    print(f"wrote {len(lines)} items")


if __name__ == "__main__":
    main()
