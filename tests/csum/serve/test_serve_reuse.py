"""A reused request recognised by the raw text of its items (csum.serve.reuse, body,
conversation): the same bytes as the full path, on real sessions replayed as growing
requests, and the full path wherever the history changed."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cast import lint
from cast.codecs import anthropic, claude_code
from cast.codecs import openai_responses as responses
from csum.config import Budget
from csum.serve import ServeConfig
from csum.serve.apis import APIS, Api
from csum.serve.body import RefusedError, scan, skim, with_offsets
from csum.serve.compaction import Outcome, OutcomeKind, Rewriter
from csum.stores import MemoryStore, RedisStore, SummaryStore
from tests.conftest import CLAUDE_CODE, CORPUS, TAUBENCH, needs

pytestmark = pytest.mark.anyio

CHAT, RESPONSES, MESSAGES = APIS
CODEX = CORPUS / "payloads" / "set4" / "openai_responses" / "codex_rollout_tui_0125.json"
TOOLS = [{"name": "Read", "description": "Read a file.", "input_schema": {"type": "object"}}]


class Counted(Rewriter):
    """A Rewriter that counts the requests its raw-prefix path sent (or, with
    ``fast=False``, never takes it: the full path alone)."""

    def __init__(self, config: ServeConfig, store: SummaryStore, *, fast: bool = True) -> None:
        super().__init__(config, store)
        self.fast = fast
        self.spliced = 0

    async def _reused(self, request: Any, read: Any) -> Outcome | None:
        if not self.fast:
            return None
        found = await super()._reused(request, read)
        self.spliced += found is not None
        return found


def config(budget: int) -> ServeConfig:
    return ServeConfig(upstream="http://127.0.0.1:9", budget=Budget.bytes(budget))


def dumps(payload: dict[str, Any]) -> bytes:
    return json.dumps(payload, ensure_ascii=False, separators=(",", ":")).encode()


def claude_code_requests(path: Path, limit: int = 70) -> list[bytes]:
    """A Claude Code session as the growing requests Claude Code sends: its system
    prompt and tools, thinking on, the newest user turn marked for the cache."""
    turns = claude_code.to_api_messages(json.loads(path.read_text()))
    out = []
    for end in range(1, min(len(turns), limit) + 1):
        if turns[end - 1]["role"] != "user":
            continue
        items = json.loads(json.dumps(turns[:end]))
        last = items[-1]
        if isinstance(last.get("content"), list) and last["content"]:
            last["content"][-1]["cache_control"] = {"type": "ephemeral"}
        marker = {"type": "ephemeral"}
        system = [{"type": "text", "text": "You are Claude Code.", "cache_control": marker}]
        out.append(
            dumps(
                {
                    "model": "claude-sonnet-4-5",
                    "system": system,
                    "tools": TOOLS,
                    "thinking": {"type": "enabled", "budget_tokens": 1024},
                    "messages": items,
                }
            )
        )
    return out


def codex_requests(limit: int = 120) -> list[bytes]:
    """The Codex session as growing Responses requests: its instructions, then its
    items up to each user message or the last tool output of a turn."""
    session = json.loads(CODEX.read_text())
    items = session["input"]
    out = []
    outputs = ("function_call_output", "custom_tool_call_output")
    for end in range(1, min(len(items), limit) + 1):
        last, after = items[end - 1], items[end] if end < len(items) else {}
        if (last.get("type") in outputs and after.get("type") not in outputs) or (
            last.get("role") == "user" and after.get("role") != "user"
        ):
            payload = {"model": "gpt-5", "instructions": session["instructions"]}
            out.append(dumps({**payload, "input": items[:end], "store": False}))
    return out


def chat_requests(path: Path) -> list[bytes]:
    turns = json.loads(path.read_text())
    return [
        dumps({"model": "gpt-4o", "messages": turns[:end]})
        for end in range(2, len(turns) + 1)
        if turns[end - 1]["role"] in ("user", "tool")
    ]


async def replay(
    api: Api, requests: list[bytes], budget: int, store: SummaryStore, other: SummaryStore
) -> tuple[list[Outcome], int]:
    """Each request through a Rewriter with the raw-prefix path and one without, each
    on its own store: the bodies sent must be the same bytes."""
    fast = Counted(config(budget), store)
    full = Counted(config(budget), other, fast=False)
    outcomes = []
    for n, request in enumerate(requests):
        got = await fast.rewrite(api, request, None)
        want = await full.rewrite(api, request, None)
        assert got.kind == want.kind, n
        assert got.body == want.body, n
        assert (got.bytes_before, got.bytes_after) == (want.bytes_before, want.bytes_after), n
        assert got.tokens_saved == want.tokens_saved, n
        outcomes.append(got)
    return outcomes, fast.spliced


def violations(payload: dict[str, Any]) -> set[str]:
    """The rules an Anthropic request with thinking on breaks (the session's own
    requests break some: its logged turns lost their thinking blocks)."""
    return {v.rule for v in lint(anthropic.decode(payload), "anthropic", thinking=True)}


def kinds(outcomes: list[Outcome]) -> set[OutcomeKind]:
    return {o.kind for o in outcomes}


@needs(CLAUDE_CODE)
@pytest.mark.parametrize("session", ["claudecode_spotter_8463c716", "claudecode_spotter_ae4a77f8"])
async def test_a_real_claude_code_session_sends_the_full_paths_bytes(session: str) -> None:
    requests = claude_code_requests(CLAUDE_CODE / f"{session}.json")
    outcomes, spliced = await replay(MESSAGES, requests, 48 * 1024, MemoryStore(), MemoryStore())
    assert OutcomeKind.COMPACTED in kinds(outcomes)
    reused = [o for o in outcomes if o.kind is OutcomeKind.REUSED]
    assert spliced >= len(reused) * 3 // 4 > 0  # most reused requests skip the decoding
    for request, outcome in zip(requests, outcomes, strict=True):
        if outcome.kind is not OutcomeKind.REUSED:
            continue
        assert outcome.body is not None
        sent = json.loads(outcome.body)
        assert sent["tools"] == TOOLS
        assert violations(sent) <= violations(json.loads(request))


@needs(CODEX)
async def test_a_real_codex_session_sends_the_full_paths_bytes() -> None:
    outcomes, spliced = await replay(
        RESPONSES, codex_requests(), 96 * 1024, MemoryStore(), MemoryStore()
    )
    assert OutcomeKind.COMPACTED in kinds(outcomes)
    reused = [o for o in outcomes if o.kind is OutcomeKind.REUSED]
    assert spliced >= len(reused) * 3 // 4 > 0
    for outcome in reused:
        assert outcome.body is not None
        sent = json.loads(outcome.body)
        assert lint(responses.decode(sent), "openai-responses") == []


@needs(TAUBENCH)
async def test_real_chat_sessions_send_the_full_paths_bytes() -> None:
    spliced_all = 0
    for path in sorted(TAUBENCH.glob("*.json"))[:6]:
        requests = chat_requests(path)
        _, spliced = await replay(CHAT, requests, 12 * 1024, MemoryStore(), MemoryStore())
        spliced_all += spliced
    assert spliced_all > 0


@needs(CLAUDE_CODE)
async def test_state_in_redis_serves_the_raw_prefix_too(redis_url: str) -> None:
    requests = claude_code_requests(CLAUDE_CODE / "claudecode_spotter_8463c716.json", 50)
    fast = RedisStore(redis_url, prefix="reuse-a:")
    full = RedisStore(redis_url, prefix="reuse-b:")
    try:
        _, spliced = await replay(MESSAGES, requests, 48 * 1024, fast, full)
    finally:
        await fast.aclose()
        await full.aclose()
    assert spliced > 0


# -- every change to the history takes the full path -----------------------------------


@pytest.fixture
def compacted() -> tuple[list[bytes], int]:
    """A Claude Code session's requests and the index of one reused after a compaction."""
    if not CLAUDE_CODE.is_dir():
        pytest.skip(f"real recorded data not found: {CLAUDE_CODE}")
    return claude_code_requests(CLAUDE_CODE / "claudecode_spotter_8463c716.json", 40), 48 * 1024


async def reused_at(requests: list[bytes], budget: int) -> tuple[Counted, int]:
    """A Rewriter that has seen ``requests`` up to the first one sent spliced."""
    fast = Counted(config(budget), MemoryStore())
    for n, request in enumerate(requests):
        before = fast.spliced
        await fast.rewrite(MESSAGES, request, None)
        if fast.spliced > before:
            return fast, n
    raise AssertionError("no request was sent spliced")


def edited(request: bytes, change: Any) -> bytes:
    payload = json.loads(request)
    change(payload)
    return dumps(payload)


def _edit_first_answer(payload: dict[str, Any]) -> None:
    for item in payload["messages"]:
        if item["role"] == "assistant":
            item["content"] = [{"type": "text", "text": "An answer the model never gave."}]
            return


@pytest.mark.parametrize(
    "change",
    [
        pytest.param(_edit_first_answer, id="edited-history"),
        pytest.param(lambda p: p["messages"].pop(1), id="removed-turn"),
        pytest.param(
            lambda p: p["system"][0].update(text="Another system prompt."), id="system-prompt"
        ),
        pytest.param(lambda p: p.update(system="You are Claude Code."), id="system-as-string"),
    ],
)
async def test_a_changed_history_takes_the_full_path(
    compacted: tuple[list[bytes], int], change: Any
) -> None:
    requests, budget = compacted
    fast, n = await reused_at(requests, budget)
    full = Counted(config(budget), MemoryStore(), fast=False)
    for request in requests[: n + 1]:
        await full.rewrite(MESSAGES, request, None)
    changed = edited(requests[n + 1], change)
    before = fast.spliced
    got = await fast.rewrite(MESSAGES, changed, None)
    assert fast.spliced == before
    want = await full.rewrite(MESSAGES, changed, None)
    assert (got.kind, got.body) == (want.kind, want.body)


async def test_other_tools_are_the_requests_own(compacted: tuple[list[bytes], int]) -> None:
    requests, budget = compacted
    fast, n = await reused_at(requests, budget)
    tools = [*TOOLS, {"name": "Write", "input_schema": {"type": "object"}}]
    changed = edited(requests[n + 1], lambda p: p.update(tools=tools))
    before = fast.spliced
    got = await fast.rewrite(MESSAGES, changed, None)
    assert fast.spliced == before + 1
    assert got.body is not None
    assert json.loads(got.body)["tools"] == tools


async def test_another_tenant_or_conversation_finds_no_prefix(
    compacted: tuple[list[bytes], int],
) -> None:
    requests, budget = compacted
    fast, n = await reused_at(requests, budget)
    before = fast.spliced
    other = await fast.rewrite(MESSAGES, requests[n + 1], None, tenant="t-other")
    named = await fast.rewrite(MESSAGES, requests[n + 1], "another-conversation")
    assert fast.spliced == before
    assert other.kind is not OutcomeKind.REUSED
    assert named.kind is not OutcomeKind.REUSED


async def test_a_moved_cache_marker_still_matches(compacted: tuple[list[bytes], int]) -> None:
    requests, budget = compacted
    fast, n = await reused_at(requests, budget)

    def marked_everywhere(payload: dict[str, Any]) -> None:
        for item in payload["messages"][:-1]:
            if isinstance(item["content"], list):
                item["content"][0]["cache_control"] = {"type": "ephemeral"}

    before = fast.spliced
    await fast.rewrite(MESSAGES, edited(requests[n + 1], marked_everywhere), None)
    assert fast.spliced == before + 1


def test_scan_reads_what_json_loads_reads() -> None:
    text = b'{"a": [1, {"b": 2}] , "messages" :[ {"role":"user"} ,{"x":[]}],"z":null}'
    scanned = scan(text, "messages", 100)
    assert scanned.payload == json.loads(text)
    assert scanned.items is not None
    assert scanned.fields is not None
    assert [scanned.text[s:e] for s, e in scanned.items] == ['{"role":"user"}', '{"x":[]}']
    assert scanned.text[slice(*scanned.fields["z"])] == "null"
    repeated = scan(b'{"messages":[1],"messages":[2]}', "messages", 100)
    assert repeated.payload == {"messages": [2]}
    assert repeated.fields is None
    for bad in (b'{"a":1,}', b'{"a" 1}', b"[1,2", b'{"a":1} x', b""):
        with pytest.raises(ValueError, match=r"Expecting|Extra data"):
            scan(bad, "messages", 100)


async def test_a_deep_new_item_is_refused_on_the_raw_prefix_path(
    compacted: tuple[list[bytes], int],
) -> None:
    requests, budget = compacted
    fast, n = await reused_at(requests, budget)
    deep: Any = "x"
    for _ in range(150):
        deep = [deep]
    payload = json.loads(requests[n])
    payload["messages"].append({"role": "assistant", "content": [{"type": "text", "text": "a"}]})
    payload["messages"].append({"role": "user", "content": [{"type": "text", "text": "b"}]})
    payload["messages"][-1]["content"][0]["deep"] = deep
    outcome = await fast.rewrite(MESSAGES, dumps(payload), None)
    assert outcome.kind is OutcomeKind.REFUSED
    assert outcome.status == 400


def chat_history(turns: int) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = [
        {"role": "system", "content": "You are a coding agent."},
        {"role": "user", "content": "Find why the importer fails on empty files."},
    ]
    for i in range(turns):
        call = {"id": f"c{i}", "type": "function", "function": {"name": "read", "arguments": "{}"}}
        items.append({"role": "assistant", "content": None, "tool_calls": [call]})
        items.append({"role": "tool", "tool_call_id": f"c{i}", "content": f"line {i} " * 80})
    return items


async def test_a_translated_request_is_compacted_in_the_clients_own_api() -> None:
    """Compacted on the client's chain (Chat), placed for the upstream's rules
    (Anthropic), handed back as an object for the translation: parsed once."""
    rewriter = Counted(config(8192), MemoryStore())
    history = chat_history(30)
    first = await rewriter.rewrite(
        CHAT, dumps({"model": "gpt-4o", "messages": history}), None, upstream=MESSAGES
    )
    assert first.kind is OutcomeKind.COMPACTED
    assert first.payload is not None
    assert first.body is not None
    assert json.loads(first.body) == first.payload
    assert first.payload["messages"][0] == history[0]  # the client's API, its system kept
    grown = [*history, *chat_history(31)[-2:]]
    again = await rewriter.rewrite(
        CHAT, dumps({"model": "gpt-4o", "messages": grown}), None, upstream=MESSAGES
    )
    assert again.kind is OutcomeKind.REUSED
    assert rewriter.spliced == 1
    assert again.payload is not None
    assert again.body is not None
    assert json.loads(again.body) == again.payload
    assert again.payload["messages"][-2:] == grown[-2:]
    within = await rewriter.rewrite(
        CHAT, dumps({"model": "gpt-4o", "messages": history[:3]}), None, upstream=MESSAGES
    )
    assert within.kind is OutcomeKind.WITHIN_BUDGET
    assert within.payload == {"model": "gpt-4o", "messages": history[:3]}


# -- a request read against the conversation's last one (csum.serve.body.skim) ----------


class Skimming(Counted):
    """A Counted Rewriter that counts the requests read against an earlier one."""

    skimmed = 0

    def _scanned(self, request: Any) -> Any:
        scanned, known = super()._scanned(request)
        self.skimmed += known is not None
        return scanned, known


def skim_checked(body: bytes, earlier: list[bytes], list_key: str) -> tuple[int, int] | None:
    """``skim`` of ``body`` against ``earlier``, checked to read what ``scan`` reads:
    which of ``earlier`` it was read against and how many items are fresh."""
    scans = [with_offsets(scan(e, list_key, 100, 20_000), e, list_key) for e in earlier]
    got = skim(body, scans, list_key, 20_000)
    if got is None:
        return None
    scanned, index, fresh = got
    assert scanned == scan(body, list_key, 100, 20_000)
    return index, fresh


@needs(CLAUDE_CODE)
def test_skim_reads_what_scan_reads_on_a_real_claude_code_session() -> None:
    requests = claude_code_requests(CLAUDE_CODE / "claudecode_spotter_8463c716.json", 60)
    for n in range(len(requests) - 3):
        for later in (n + 1, n + 3):
            got = skim_checked(requests[later], [requests[n]], "messages")
            assert got is not None, (n, later)
            # the item before the new ones lost its marker (when it had one): parsed
            # again, the earlier ones not
            assert len(json.loads(requests[n])["messages"]) - 1 <= got[1]
        skim_checked(requests[n], [requests[n + 1]], "messages")  # shorter: read as scan reads


@needs(CODEX)
def test_skim_reads_what_scan_reads_on_a_real_codex_session() -> None:
    requests = codex_requests(80)
    for n in range(1, len(requests) - 1):
        got = skim_checked(requests[n + 1], [requests[0], requests[n]], "input")
        assert got is not None
        assert got[0] == 1  # the one it shares the longest start with
        assert got[1] == len(json.loads(requests[n])["input"])  # all but the new


JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner),
    max_leaves=6,
)
ITEMS = st.lists(
    st.fixed_dictionaries({"role": st.sampled_from(["user", "assistant"]), "content": JSON_VALUES})
    | st.integers(),
    max_size=5,
)
SEPARATORS = st.sampled_from([(",", ":"), (", ", ": "), (" ,", " :")])


@settings(max_examples=300, deadline=None)
@given(
    head=st.dictionaries(st.sampled_from(["model", "system", "tools"]), JSON_VALUES),
    items=ITEMS,
    added=ITEMS,
    edit=st.sampled_from(["none", "marker", "item", "tools", "model", "spacing", "digits"]),
    separators=SEPARATORS,
    list_first=st.booleans(),
)
def test_skim_reads_what_scan_reads_or_nothing(
    head: dict[str, Any],
    items: list[Any],
    added: list[Any],
    edit: str,
    separators: tuple[str, str],
    list_first: bool,
) -> None:
    """A later body with items added and one edit of any kind: skim reads it as scan
    does, or gives up (never a different reading)."""

    def body(messages: list[Any], fields: dict[str, Any], spacing: tuple[str, str]) -> bytes:
        payload = (
            {"messages": messages, **fields} if list_first else {**fields, "messages": messages}
        )
        return json.dumps(payload, separators=spacing).encode()

    earlier = body(items, head, separators)
    later_items, later_head, spacing = (
        json.loads(json.dumps([*items, *added])),
        dict(head),
        separators,
    )
    if edit == "marker" and later_items and isinstance(later_items[0], dict):
        later_items[0]["cache_control"] = {"type": "ephemeral"}
    elif edit == "item" and later_items:
        later_items[0] = {"role": "user", "content": "edited"}
    elif edit in ("tools", "model"):
        later_head[edit] = ["changed"]
    elif edit == "spacing":
        spacing = (", ", ": ") if separators == (",", ":") else (",", ":")
    elif edit == "digits" and items and isinstance(items[-1], int):
        later_items[len(items) - 1] = items[-1] * 10 + 7  # the new text runs on
    got = skim_checked(body(later_items, later_head, spacing), [earlier], "messages")
    if edit == "none":
        assert got is not None
        assert got[1] >= len(items) - 1


def test_skim_counts_roles_as_a_full_scan_does() -> None:
    earlier = dumps({"messages": [{"role": "user", "content": "a"}]})
    later = dumps({"messages": [{"role": "user", "content": "a"}] * 4})
    with pytest.raises(RefusedError) as refused:
        skim(
            later,
            [with_offsets(scan(earlier, "messages", 100, 3), earlier, "messages")],
            "messages",
            3,
        )
    assert refused.value.status == 413


def _mark_early(payload: dict[str, Any]) -> None:
    """A cache marker on the first turn with content blocks (the client moved one)."""
    for item in payload["messages"]:
        if isinstance(item["content"], list):
            item["content"][0]["cache_control"] = {"type": "ephemeral"}
            return


def _unchanged(payload: dict[str, Any]) -> None:
    return None


@pytest.mark.parametrize(
    ("change", "skims"),
    [
        pytest.param(_unchanged, True, id="grown"),
        pytest.param(_mark_early, True, id="marker-moved-early"),
        pytest.param(lambda p: p.update(tools=[*TOOLS, {"name": "W"}]), False, id="tools"),
        pytest.param(lambda p: p["system"][0].update(text="Other."), False, id="system"),
        pytest.param(None, False, id="whitespace"),
    ],
)
async def test_a_request_is_read_against_the_last_one_only_where_the_same(
    compacted: tuple[list[bytes], int], change: Any, skims: bool
) -> None:
    """Grown or with a marker moved, a request is read against the conversation's last
    one; with other tools, another system prompt or other whitespace it is read whole;
    either way the body sent is the full path's."""
    requests, budget = compacted
    fast = Skimming(config(budget), MemoryStore())
    full = Counted(config(budget), MemoryStore(), fast=False)
    n = -1
    for request in requests:
        n += 1
        await full.rewrite(MESSAGES, request, None)
        if (await fast.rewrite(MESSAGES, request, None)).kind is OutcomeKind.REUSED:
            break
    if change is None:
        changed = json.dumps(json.loads(requests[n + 1]), indent=1).encode()
    else:
        changed = edited(requests[n + 1], change)
    before = fast.skimmed
    got = await fast.rewrite(MESSAGES, changed, None)
    want = await full.rewrite(MESSAGES, changed, None)
    assert fast.skimmed == before + skims
    assert (got.kind, got.body, got.bytes_after) == (want.kind, want.body, want.bytes_after)
    # and the next request goes as the full path sends it too
    following = edited(requests[n + 2], change or _unchanged)
    got = await fast.rewrite(MESSAGES, following, None)
    want = await full.rewrite(MESSAGES, following, None)
    assert (got.kind, got.body) == (want.kind, want.body)
