"""The gateway's request compaction (csum.serve.compaction, conversation, apis, config):
core code, no serve extra needed. The HTTP side is in test_serve.py."""

from __future__ import annotations

import io
import json
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cast import Message, Role, TextPart, lint, parse_chain
from cast.codecs import anthropic, claude_code, openai
from cast.codecs import openai_responses as responses
from csum.clearing import CLEARED_PREFIX
from csum.cli import main
from csum.config import SUMMARY_ONLY, Budget
from csum.plan import is_summarized
from csum.serve import INSTALL_HINT, ServeConfig
from csum.serve.apis import APIS, api_for
from csum.serve.compaction import OutcomeKind, Rewriter
from csum.serve.conversation import (
    KEY_PREFIX,
    STATE_VERSION,
    ConversationState,
    ConversationStates,
    chain_hash,
    conversation_key,
    dumps,
)
from csum.stores import MemoryStore, RedisStore, SQLiteStore
from tests.conftest import CLAUDE_CODE

pytestmark = pytest.mark.anyio

CHAT = APIS[0]
MESSAGES = APIS[2]
SYSTEM = "You are a coding agent working in a large repository."


def chat_turns(turns: int, result_bytes: int = 600) -> list[dict[str, Any]]:
    """A tool-heavy Chat Completions history of ``turns`` tool calls."""
    items: list[dict[str, Any]] = [
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": "Find why the importer fails on empty files."},
    ]
    for i in range(turns):
        call = {
            "id": f"call_{i:04d}",
            "type": "function",
            "function": {"name": "read_file", "arguments": json.dumps({"path": f"src/m{i}.py"})},
        }
        items.append({"role": "assistant", "content": None, "tool_calls": [call]})
        text = f"src/m{i}.py line {i}: def load_{i}(path): return parse(path) " * 40
        items.append(
            {"role": "tool", "tool_call_id": f"call_{i:04d}", "content": text[:result_bytes]}
        )
    return items


def body(items: list[dict[str, Any]], **extra: Any) -> bytes:
    return json.dumps({"model": "gpt-4o", "messages": items, **extra}).encode()


def rewriter(budget: int = 8192, store: Any = None) -> Rewriter:
    config = ServeConfig(upstream="http://127.0.0.1:9", budget=Budget.bytes(budget))
    return Rewriter(config, store if store is not None else MemoryStore())


def sent_messages(data: bytes) -> list[Message]:
    return openai.decode(json.loads(data))


async def test_a_request_within_budget_is_forwarded_as_it_came() -> None:
    outcome = await rewriter().rewrite(CHAT, body(chat_turns(3)), None)
    assert outcome.kind is OutcomeKind.WITHIN_BUDGET
    assert outcome.body is None


async def test_an_over_budget_request_is_compacted_within_budget_and_lint_clean() -> None:
    items = chat_turns(30)
    outcome = await rewriter().rewrite(CHAT, body(items, temperature=0.2), None)
    assert outcome.kind is OutcomeKind.COMPACTED
    assert outcome.body is not None
    payload = json.loads(outcome.body)
    assert list(payload) == ["model", "messages", "temperature"]  # other fields kept, in order
    messages = openai.decode(payload)
    assert sum(m.size for m in messages) <= 8192
    assert lint(messages, "openai") == []
    assert payload["messages"][-1] == items[-1]  # the newest turn is kept verbatim
    assert outcome.bytes_before > outcome.bytes_after


async def test_summary_only_turns_the_clearing_stage_off_in_the_gateway() -> None:
    """``--summary-only`` (``ServeConfig.summary_only``) is SUMMARY_ONLY's summary stage:
    the request's old tool results are summarized, never replaced by placeholders; the
    defaults give the Compactor's own stages."""
    items = chat_turns(30)
    budget = Budget.bytes(16_384)
    only = ServeConfig(upstream="http://127.0.0.1:9", budget=budget, summary_only=True)
    outcome = await Rewriter(only, MemoryStore()).rewrite(CHAT, body(items), None)
    assert outcome.kind is OutcomeKind.COMPACTED
    assert outcome.body is not None
    texts = [r.content for m in sent_messages(outcome.body) for r in m.tool_results]
    assert not any(text.startswith(CLEARED_PREFIX) for text in texts)
    assert Rewriter(only, MemoryStore()).stage_options() == {
        "clearing": None,
        "summary_ratio": SUMMARY_ONLY.summary_ratio,
    }
    plain = ServeConfig(upstream="http://127.0.0.1:9", budget=budget)
    assert Rewriter(plain, MemoryStore()).stage_options() == {}


async def test_the_next_request_reuses_the_compacted_prefix_byte_for_byte() -> None:
    gateway = rewriter()
    items = chat_turns(30)
    first = await gateway.rewrite(CHAT, body(items), None)
    assert first.body is not None
    sent_first = json.loads(first.body)["messages"]
    more = chat_turns(31)[-2:]
    second = await gateway.rewrite(CHAT, body(items + more), None)
    assert second.kind is OutcomeKind.REUSED
    assert second.body is not None
    sent_second = json.loads(second.body)["messages"]
    assert sent_second == sent_first + more
    # byte for byte: the first request's messages are a prefix of the second's text
    head = json.dumps(sent_first, ensure_ascii=False, separators=(",", ":"))[:-1]
    assert second.body.decode().find(head) > 0


async def test_another_conversation_with_the_same_opening_is_compacted_afresh() -> None:
    gateway = rewriter()
    items = chat_turns(30)
    await gateway.rewrite(CHAT, body(items), None)
    other = chat_turns(30, result_bytes=500)  # same opening, other history
    outcome = await gateway.rewrite(CHAT, body(other), None)
    assert outcome.kind is OutcomeKind.COMPACTED
    assert outcome.body is not None
    assert sent_messages(outcome.body)[-1] == openai.decode({"messages": other})[-1]


async def test_the_conversation_header_separates_identical_openings() -> None:
    messages = openai.decode({"messages": chat_turns(2)})
    assert conversation_key("chat", messages, "a") != conversation_key("chat", messages, "b")
    assert conversation_key("chat", messages, None) == conversation_key("chat", messages[:2], None)


async def test_a_store_that_fails_never_fails_the_request(tmp_path: Path) -> None:
    broken = SQLiteStore(tmp_path)  # a directory: every operation fails
    gateway = rewriter(store=broken)
    outcome = await gateway.rewrite(CHAT, body(chat_turns(30)), None)
    assert outcome.kind is OutcomeKind.COMPACTED
    assert outcome.store_failures >= 2  # state read and state write at least
    assert outcome.body is not None
    assert sum(m.size for m in sent_messages(outcome.body)) <= 8192
    await broken.aclose()


@pytest.mark.parametrize(
    ("data", "kind"),
    [
        (b"not json", OutcomeKind.NOT_COMPACTABLE),
        (b"[1, 2]", OutcomeKind.NOT_COMPACTABLE),
        (json.dumps({"model": "gpt-4o"}).encode(), OutcomeKind.NOT_COMPACTABLE),
        (
            json.dumps({"model": "gpt-4o", "messages": [{"role": "wizard"}] * 3}).encode(),
            OutcomeKind.FAILED,
        ),
    ],
)
async def test_bad_bodies_are_forwarded_as_they_came(data: bytes, kind: OutcomeKind) -> None:
    outcome = await rewriter(budget=2).rewrite(CHAT, data, None)  # past the size bound
    assert (outcome.kind, outcome.body) == (kind, None)


async def test_without_a_budget_the_model_window_decides() -> None:
    config = ServeConfig(upstream="http://127.0.0.1:9", window_share=0.01)
    gateway = Rewriter(config, MemoryStore())
    short = await gateway.rewrite(CHAT, body(chat_turns(1)), None)
    assert short.kind is OutcomeKind.WITHIN_BUDGET  # 1 % of gpt-4o's window: 1,280 tokens
    small = json.loads(body(chat_turns(30)))
    outcome = await gateway.rewrite(CHAT, json.dumps(small).encode(), None)
    assert outcome.kind is OutcomeKind.COMPACTED
    small["model"] = "no-such-model"
    outcome = await gateway.rewrite(CHAT, json.dumps(small).encode(), None)
    assert outcome.kind is OutcomeKind.NOT_COMPACTABLE


async def test_anthropic_requests_keep_their_system_and_fields() -> None:
    messages = openai.decode({"messages": chat_turns(30)})
    payload = {"model": "claude-sonnet-4", "max_tokens": 512, **anthropic.encode(messages)}
    payload["system"] = [{"type": "text", "text": SYSTEM, "cache_control": {"type": "ephemeral"}}]
    outcome = await rewriter().rewrite(MESSAGES, json.dumps(payload).encode(), None)
    assert outcome.body is not None
    sent = json.loads(outcome.body)
    assert list(sent) == list(payload)  # fields kept, in their order
    assert sent["system"] == payload["system"]
    chain = anthropic.decode(sent)
    assert sum(m.size for m in chain) <= 8192
    assert lint(chain, "anthropic") == []


def test_cache_markers_do_not_change_a_conversation() -> None:
    plain = {"role": "user", "content": [{"type": "text", "text": "hello"}]}
    marked = {
        "role": "user",
        "content": [{"type": "text", "text": "hello", "cache_control": {"type": "ephemeral"}}],
    }
    a = anthropic.decode({"messages": [plain]})
    b = anthropic.decode({"messages": [marked]})
    assert a != b
    assert chain_hash(a) == chain_hash(b)


@settings(max_examples=30, deadline=None)
@given(st.lists(st.text(max_size=40), min_size=1, max_size=6), st.integers(0, 6))
def test_state_round_trips_and_rebuilds_only_its_own_history(texts: list[str], cut: int) -> None:
    history = [Message.human(t) if i % 2 == 0 else Message.ai(t) for i, t in enumerate(texts)]
    cut = min(cut, len(history))
    state = ConversationState.after(history[:cut], [Message.human("summary")])
    again = ConversationState.from_record(json.loads(dumps(state.record())))
    assert again == state
    assert again is not None
    assert again.rebuilt(history) == [Message.human("summary"), *history[cut:]]
    if cut:
        changed = [Message.human(history[0].text + "!"), *history[1:]]
        assert again.rebuilt(changed) is None


def test_a_damaged_state_record_is_an_error() -> None:
    with pytest.raises(ValueError, match="damaged"):
        ConversationState.from_record({"v": STATE_VERSION, "n": "x", "h": 1, "sent": "[]"})
    with pytest.raises(ValueError, match="bad n, h or sent field"):
        ConversationState.from_record({"v": STATE_VERSION, "n": 1, "h": "x", "sent": []})
    with pytest.raises(ValueError, match="bad d field"):
        ConversationState.from_record({"v": STATE_VERSION, "n": 1, "h": "x", "sent": "[]"})
    assert ConversationState.from_record({"v": 1, "n": 1, "h": "x", "sent": []}) is None
    assert ConversationStates.from_bytes(b'{"v": 1, "n": 1, "h": "x", "sent": []}').states == ()


def test_api_paths() -> None:
    assert [api_for(a.path) for a in APIS] == list(APIS)
    assert api_for("/v1/messages/count_tokens") is None
    assert api_for("/v1/models") is None


@pytest.mark.parametrize(
    ("options", "wrong"),
    [
        ({"upstream": "ftp://x"}, "http"),
        ({"upstream": "http://x?a=1"}, "query"),
        ({"upstream": "http://x", "window_share": 0}, "window share"),
        ({"upstream": "http://x", "max_body_bytes": 0}, "max body"),
        ({"upstream": "http://x", "timeout": 0}, "timeout"),
        ({"upstream": "http://x", "gateway_key": ""}, "key"),
        ({"upstream": "http://x", "summarizer": "gpt"}, "summarizer must be one of"),
        ({"upstream": "http://x", "summarizer": "openai"}, "needs a summarizer model"),
        (
            {"upstream": "http://x", "summarizer": "upstream", "summarizer_key_env": "K"},
            "key variable goes with",
        ),
        (
            {"upstream": "http://x", "summarizer": "upstream", "summarizer_url": "http://y"},
            "summarizer url goes with",
        ),
        (
            {
                "upstream": "http://x",
                "summarizer": "openai",
                "summarizer_model": "m",
                "summarizer_url": "y",
            },
            "summarizer url must be",
        ),
        ({"upstream": "http://x", "archive": ""}, "archive"),
        ({"upstream": "http://x", "archive_reinsert_bytes": -1}, "reinsert"),
    ],
)
def test_config_refuses_bad_values(options: dict[str, Any], wrong: str) -> None:
    with pytest.raises(ValueError, match=wrong):
        ServeConfig(**options)


def test_csum_serve_without_the_extra_says_how_to_install_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "uvicorn", None)  # import uvicorn raises ImportError
    err = io.StringIO()
    code = main(["serve", "--upstream", "http://127.0.0.1:9"], stderr=err)
    assert code == 2
    assert "pip install 'chaincast[serve]'" in err.getvalue()
    assert "pip install '.[serve]'" in err.getvalue()
    assert INSTALL_HINT in err.getvalue()


def test_csum_serve_refuses_bad_flags() -> None:
    err = io.StringIO()
    code = main(["serve", "--upstream", "http://x", "--tokens"], stderr=err)
    assert code == 2
    assert "--tokens needs --budget" in err.getvalue()


def test_csum_serve_says_at_once_when_the_summarizer_key_is_missing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    pytest.importorskip("openai", reason="the openai SDK is not installed")
    monkeypatch.delenv("CSUM_TEST_NO_SUCH_KEY", raising=False)
    err = io.StringIO()
    args = ["serve", "--upstream", "http://x", "--summarizer", "openai"]
    args += ["--summarizer-model", "m", "--summarizer-key-env", "CSUM_TEST_NO_SUCH_KEY"]
    assert main(args, stderr=err) == 2
    assert "CSUM_TEST_NO_SUCH_KEY is unset" in err.getvalue()


def test_the_clients_key_comes_from_either_header_as_its_provider_reads_it() -> None:
    from csum.serve.tenant import client_key

    assert client_key({"authorization": "Bearer sk-secret"}, "anthropic") == "sk-secret"
    assert client_key({"x-api-key": "sk-other"}, "openai") == "sk-other"
    both = {"authorization": "Bearer sk-bearer", "x-api-key": "sk-keyed"}
    assert client_key(both, "openai") == "sk-bearer"
    assert client_key(both, "anthropic") == "sk-keyed"
    assert client_key({"authorization": "Basic abc"}, "openai") is None
    assert client_key({"authorization": "Bearer  ", "x-api-key": ""}, "anthropic") is None


async def test_without_offload_the_request_is_compacted_the_same() -> None:
    items = body(chat_turns(30))
    offloaded = await rewriter().rewrite(CHAT, items, None)
    config = ServeConfig(upstream="http://127.0.0.1:9", budget=Budget.bytes(8192), offload=False)
    inline = await Rewriter(config, MemoryStore()).rewrite(CHAT, items, None)
    assert inline.kind is offloaded.kind is OutcomeKind.COMPACTED
    assert inline.body == offloaded.body


_TEXT = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=30)


@st.composite
def chat_payloads(draw: st.DrawFn) -> dict[str, Any]:
    """Chat Completions histories without media: text, tool calls and results."""
    items: list[dict[str, Any]] = [{"role": "system", "content": draw(_TEXT)}]
    for i in range(draw(st.integers(0, 6))):
        items.append({"role": "user", "content": draw(_TEXT)})
        if draw(st.booleans()):
            name = draw(st.text("abcdefghijklmnopqrstuvwxyz_", min_size=1, max_size=40))
            arguments = json.dumps({"q": draw(_TEXT)}, ensure_ascii=draw(st.booleans()))
            call = {
                "id": f"c{i}",
                "type": "function",
                "function": {"name": name, "arguments": arguments},
            }
            items.append({"role": "assistant", "content": None, "tool_calls": [call]})
            items.append({"role": "tool", "tool_call_id": f"c{i}", "content": draw(_TEXT)})
        items.append({"role": "assistant", "content": draw(_TEXT)})
    return {"model": "gpt-4o", "messages": items}


@settings(max_examples=200, deadline=None)
@given(chat_payloads(), st.sampled_from([0, 1, 2]))
def test_the_size_bound_never_lets_an_over_budget_history_through(
    payload: dict[str, Any], which: int
) -> None:
    """fits_by_size says "fits" only when the Compactor measures the history within the
    budget: bytes never exceed the JSON text, estimated tokens never exceed its third."""
    from csum.serve.compaction import fits_by_size
    from csum.tokens import EstimatedTokens

    messages = openai.decode(payload)
    if which == 1:
        payload = {"model": "m", **anthropic.encode(messages)}
        messages = anthropic.decode(payload)
    elif which == 2:
        from cast.codecs import openai_responses

        payload = {"model": "m", **openai_responses.encode(messages)}
        messages = openai_responses.decode(payload)
    data = json.dumps(payload, ensure_ascii=False, separators=(",", ":")).encode()
    size = sum(m.size for m in messages)
    tokens = sum(EstimatedTokens().count(m) for m in messages)
    assert fits_by_size(data, Budget.bytes(len(data)))
    assert size <= len(data)
    # (text that looks like media may turn the token bound off: it only errs that way)
    assert tokens <= len(data) // 3 + 1
    # the same for the history's own JSON, what the gateway measures once it has parsed
    # the body (so a request's tools never count)
    api = APIS[which if which == 0 else (2 if which == 1 else 1)]
    history = api.history(payload)
    assert history is not None
    own = json.dumps(history, ensure_ascii=False, separators=(",", ":")).encode()
    assert size <= len(own)
    assert tokens <= len(own) // 3 + 1
    # and for the share of the body the gateway measures: the body less the other
    # fields' most compact JSON (however the body is written)
    spaced = json.dumps(payload, ensure_ascii=True, indent=1).encode()
    other = {k: v for k, v in payload.items() if k not in api.history_keys}
    share = len(spaced) - len(json.dumps(other, ensure_ascii=False, separators=(",", ":")))
    assert size <= share
    assert tokens <= share // 3 + 1
    assert fits_by_size(spaced, Budget.bytes(share), size=share)


async def test_a_body_over_the_size_bound_is_measured_not_guessed() -> None:
    items = chat_turns(3)
    data = body(items)
    outcome = await rewriter(budget=len(data) - 1).rewrite(CHAT, data, None)
    assert outcome.kind is OutcomeKind.WITHIN_BUDGET  # decoded and measured: it fits
    assert outcome.bytes_before < len(data) - 1


def test_the_token_shortcut_is_off_for_bodies_that_may_hold_media() -> None:
    from csum.serve.compaction import fits_by_size

    image = {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}}
    data = body([{"role": "user", "content": [image]}])
    assert not fits_by_size(data, Budget.tokens(10**6))
    assert fits_by_size(body(chat_turns(1)), Budget.tokens(10**6))
    assert not fits_by_size(body(chat_turns(1)), Budget.tokens(10))


def test_log_lines_are_json_with_the_fields_and_nothing_else() -> None:
    import logging

    from csum.serve.logs import configure

    stream = io.StringIO()
    handler = configure("info", stream)
    try:
        logging.getLogger("csum.serve").info(
            "POST /v1/messages -> 200",
            extra={"endpoint": "messages", "status": 200, "outcome": "reused", "other": "x"},
        )
        logging.getLogger("csum.serve").debug("not shown")
    finally:
        logging.getLogger("csum.serve").removeHandler(handler)
    (line,) = stream.getvalue().splitlines()
    record = json.loads(line)
    assert record["message"] == "POST /v1/messages -> 200"
    assert (record["endpoint"], record["status"], record["outcome"]) == ("messages", 200, "reused")
    assert "other" not in record
    assert record["level"] == "info"


def test_csum_serve_refuses_an_unknown_summarizer() -> None:
    err = io.StringIO()
    code = main(["serve", "--upstream", "http://x", "--summarizer", "oracle"], stderr=err)
    assert code == 2
    assert "--summarizer: invalid choice: 'oracle'" in err.getvalue()


def test_csum_serve_has_one_option_for_who_summarizes() -> None:
    """``--summarizer`` alone says who writes the summaries (``--handler`` was the
    second spelling of it, and is gone)."""
    err = io.StringIO()
    code = main(["serve", "--upstream", "http://x", "--handler", "openai:m"], stderr=err)
    assert code == 2
    assert "unrecognized arguments: --handler" in err.getvalue()


async def test_summary_depth_is_carried_from_request_to_request() -> None:
    """Each request gets a fresh keeper; the depth of the summaries it sends again comes
    from the conversation state, so the depth limit (3) is reached and a summary at it
    is kept verbatim (the next summary starts again at 1) instead of being summarized
    again forever at depth 2."""
    gateway = rewriter()
    depths = []
    for turns in range(20, 80, 2):
        outcome = await gateway.rewrite(CHAT, body(chat_turns(turns)), None)
        if outcome.kind is OutcomeKind.COMPACTED:
            depths.append(outcome.depth)
    assert depths[:4] == [1, 2, 3, 1]
    assert max(depths) == 3


def test_a_state_record_keeps_its_depths() -> None:
    state = ConversationState.after([Message.human("q")], [Message.human("q")], {"k": 2})
    record = state.record()
    assert record["d"] == {"k": 2}
    again = ConversationState.from_record(json.loads(json.dumps(record)))
    assert again is not None
    assert again.depths == {"k": 2}
    del record["d"]
    with pytest.raises(ValueError, match="bad d field"):
        ConversationState.from_record(json.loads(json.dumps(record)))
    record["d"] = {"k": 0}
    with pytest.raises(ValueError, match="bad d field"):
        ConversationState.from_record(json.loads(json.dumps(record)))


def responses_body(turns: int, **extra: Any) -> bytes:
    items: list[dict[str, Any]] = [{"role": "user", "content": "Find the importer bug."}]
    for i in range(turns):
        items.append(
            {"type": "function_call", "call_id": f"c{i}", "name": "read", "arguments": "{}"}
        )
        items.append({"type": "function_call_output", "call_id": f"c{i}", "output": "x" * 600})
    return json.dumps({"model": "gpt-4o", "input": items, **extra}).encode()


@pytest.mark.parametrize("field", ["previous_response_id", "conversation"])
async def test_a_responses_request_on_provider_state_goes_uncompacted(field: str) -> None:
    """With ``previous_response_id`` (or a ``conversation``) the provider holds the
    history the gateway cannot see: compacting the visible items would cut a history
    that is not all there, so the request goes as it came, counted apart."""
    gateway = rewriter()
    responses = APIS[1]
    assert (await gateway.rewrite(responses, responses_body(30), None)).kind is (
        OutcomeKind.COMPACTED
    )
    outcome = await gateway.rewrite(responses, responses_body(30, **{field: "resp_1"}), None)
    assert outcome.kind is OutcomeKind.PROVIDER_STATE
    assert outcome.body is None
    small = responses_body(1, **{field: "resp_1"})  # even within the budget: counted
    assert (await gateway.rewrite(responses, small, None)).kind is OutcomeKind.PROVIDER_STATE
    assert (await gateway.rewrite(responses, responses_body(1), None)).kind is (
        OutcomeKind.WITHIN_BUDGET
    )


async def test_compaction_runs_off_the_event_loop_and_the_store_on_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The CPU-bound work (decode, Compactor, encode) runs in a worker thread, so a large
    request does not stall the gateway's other requests; the store is called on the
    gateway's own loop thread, where its connections live."""
    import threading

    import csum.serve.compaction as compaction

    seen: dict[str, set[int]] = {"compactor": set(), "store": set()}

    class Watched(compaction.Compactor):
        async def run(self, *args: Any, **kwargs: Any) -> Any:
            seen["compactor"].add(threading.get_ident())
            return await super().run(*args, **kwargs)

    class WatchedStore(MemoryStore):
        async def get(self, key: str) -> bytes | None:
            seen["store"].add(threading.get_ident())
            return await super().get(key)

        async def set(self, key: str, value: bytes, ttl: float | None = None) -> None:
            seen["store"].add(threading.get_ident())
            await super().set(key, value, ttl)

    monkeypatch.setattr(compaction, "Compactor", Watched)
    gateway = rewriter(store=WatchedStore())
    loop_thread = threading.get_ident()
    for turns in (30, 31):
        outcome = await gateway.rewrite(CHAT, body(chat_turns(turns)), None)
        assert outcome.kind in (OutcomeKind.COMPACTED, OutcomeKind.REUSED)
    assert seen["compactor"]
    assert loop_thread not in seen["compactor"]
    assert seen["store"] == {loop_thread}


async def test_a_store_that_fails_off_the_loop_never_fails_the_request(tmp_path: Path) -> None:
    """A store error raised on the loop reaches the worker as an exception, absorbed."""

    class Down(MemoryStore):
        async def get(self, key: str) -> bytes | None:
            raise ConnectionError("store down")

        async def set(self, key: str, value: bytes, ttl: float | None = None) -> None:
            raise ConnectionError("store down")

    outcome = await rewriter(store=Down()).rewrite(CHAT, body(chat_turns(30)), None)
    assert outcome.kind is OutcomeKind.COMPACTED
    assert outcome.store_failures >= 2


async def test_the_archive_keeps_each_conversation_in_its_own_session(tmp_path: Path) -> None:
    """--archive: the messages a compaction summarizes away go to the archive under the
    conversation's key as the session; two conversations never see each other's."""
    from csum.archive import HistoryArchive
    from csum.stores import SQLiteArchiveStore

    store = SQLiteArchiveStore(tmp_path / "archive.db")
    config = ServeConfig(
        upstream="http://127.0.0.1:9", budget=Budget.bytes(8192), archive=str(tmp_path)
    )
    gateway = Rewriter(config, MemoryStore(), store)
    try:
        mine = chat_turns(30)
        theirs = [dict(m) for m in chat_turns(30, result_bytes=500)]
        theirs[1] = {"role": "user", "content": "Another tenant's question."}
        for items in (mine, theirs):
            outcome = await gateway.rewrite(CHAT, body(items), None)
            assert outcome.kind is OutcomeKind.COMPACTED
            assert outcome.archived > 0
            assert outcome.body is not None
            assert "[archived:" in outcome.body.decode()
        my_key = conversation_key("chat", openai.decode({"messages": mine}), None)
        their_key = conversation_key("chat", openai.decode({"messages": theirs}), None)
        assert my_key != their_key
        my_archive = HistoryArchive(store, session=my_key)
        their_archive = HistoryArchive(store, session=their_key)
        assert await my_archive.search("src/m3.py line 3", limit=5)
        hits = await their_archive.search("src/m3.py line 3", limit=5)
        assert hits
        assert all("Another" not in h.message.text for h in await my_archive.search("tenant"))
        assert await HistoryArchive(store, session="other").search("src/m3.py", limit=5) == []
    finally:
        await store.aclose()


def test_summary_depths_are_checked_when_restored() -> None:
    from csum.compactor import Compactor

    keeper = Compactor(budget=Budget.bytes(8192))
    assert dict(keeper.summary_depths) == {}
    keeper.restore_summary_depths({"abc": 2})
    assert dict(keeper.summary_depths) == {"abc": 2}
    with pytest.raises(TypeError, match="not a str: int pair"):
        keeper.restore_summary_depths({"abc": True})
    with pytest.raises(ValueError, match="at least 1"):
        keeper.restore_summary_depths({"abc": 0})
    assert dict(keeper.summary_depths) == {"abc": 2}  # a refused mapping changes nothing


def _thinking_first(messages: list[Message]) -> bool:
    found = lint(messages, "anthropic", thinking=True)
    return not any(v.rule == "thinking-not-first" for v in found)


@pytest.mark.skipif(not CLAUDE_CODE.is_dir(), reason="shared corpus (Claude Code sessions) absent")
async def test_compacted_claude_code_requests_open_with_thinking_and_copy_none() -> None:
    """A real Claude Code session with thinking on: every request whose final assistant
    turn opens with thinking still does once compacted (Anthropic merges a summary turn
    into the next assistant turn, which then opens with text: a 400), and no thinking
    text is copied into plain text."""
    entries = json.loads((CLAUDE_CODE / "claudecode_spotter_258c7280.json").read_text("utf-8"))
    chain = claude_code.decode(entries)
    thoughts = {
        line
        for m in chain
        for p in m.parts
        if (r := getattr(p, "reasoning", None)) is not None
        for line in r.content.splitlines()
        if len(line) > 40
    }
    keeper = rewriter(48 * 1024)
    checked = compacted = 0
    for end in range(2, len(chain) + 1):
        prefix = chain[:end]
        if prefix[-1].role is not Role.TOOL or not _thinking_first(prefix):
            continue
        payload = {
            "model": "claude-sonnet-4-5",
            "max_tokens": 4096,
            "thinking": {"type": "enabled", "budget_tokens": 2048},
            **anthropic.encode(prefix),
        }
        outcome = await keeper.rewrite(MESSAGES, json.dumps(payload).encode(), None)
        assert outcome.kind is not OutcomeKind.FAILED
        if outcome.body is None:
            continue
        sent = anthropic.decode(json.loads(outcome.body))
        checked += 1
        compacted += outcome.kind is OutcomeKind.COMPACTED
        assert _thinking_first(sent), end
        plain = "\n".join(p.text for m in sent for p in m.parts if type(p) is TextPart)
        assert not [line for line in thoughts if line in plain and line not in _texts(prefix)]
    assert compacted >= 2
    assert checked >= 5


def _texts(messages: list[Message]) -> str:
    return "\n".join(p.text for m in messages for p in m.parts if type(p) is TextPart)


async def test_a_request_over_its_floor_is_counted_so_logged_once_and_summarized(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The system prompt alone exceeds the budget: no request is counted within budget,
    the conversation's floor is logged once, and the older turns leave with a summary."""
    items = chat_turns(12)
    items[0] = {"role": "system", "content": SYSTEM + " Follow the house rules." * 400}
    keeper = rewriter(8192)
    kinds = []
    with caplog.at_level("WARNING", logger="csum.serve"):
        for turns in (2, 12, 13):
            data = body(items[: 2 + 2 * turns] if turns < 13 else [*items, *chat_turns(13)[-2:]])
            outcome = await keeper.rewrite(CHAT, data, None)
            kinds.append(outcome.kind)
            assert outcome.floor > 8192
    assert kinds == [OutcomeKind.OVER_FLOOR] * 3
    floors = [r for r in caplog.records if "over the floor" in r.getMessage()]
    assert len(floors) == 1
    assert floors[0].__dict__["budget"] == 8192
    assert floors[0].__dict__["floor"] > 8192
    assert outcome.body is not None
    sent = sent_messages(outcome.body)
    summaries = [p for s in parse_chain(sent).sections for p in s.body if is_summarized(p)]
    assert len(summaries) == 1


async def test_a_compacted_codex_request_keeps_its_instructions_items_ids_and_statuses() -> None:
    """Codex CLI's shape through a compaction (issue #38): ``instructions`` stay
    ``instructions``, its two developer and two user messages stay apart and as sent,
    and every kept call and output goes with its id and status."""
    developer = [
        {"type": "message", "role": "developer",
         "content": [{"type": "input_text", "text": text}]}
        for text in ("You are Codex. " * 200, "<skills_instructions>...</skills_instructions>")
    ]  # fmt: skip
    users = [
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": text}]}
        for text in ("<environment_context>cwd</environment_context>", "Fix the importer.")
    ]
    items: list[dict[str, Any]] = [*developer, *users]
    for i in range(30):
        items.append(
            {"type": "function_call", "id": f"fc_{i}", "call_id": f"call_{i}",
             "name": "exec_command", "arguments": "{}", "status": "completed"}
        )  # fmt: skip
        items.append(
            {"type": "function_call_output", "call_id": f"call_{i}", "output": "ok " * 200}
        )
    data = json.dumps({"model": "gpt-5-codex", "instructions": "Be brief.", "input": items})
    outcome = await rewriter(8192).rewrite(APIS[1], data.encode(), None)
    assert outcome.kind is OutcomeKind.COMPACTED
    assert outcome.body is not None
    sent = json.loads(outcome.body)
    assert list(sent) == ["model", "instructions", "input"]
    assert sent["instructions"] == "Be brief."
    assert sent["input"][:4] == [*developer, *users]
    kept = [item for item in sent["input"] if item.get("call_id", "").startswith("call_2")]
    assert kept
    assert all(item in items for item in kept)  # as the client sent them: ids, statuses
    assert lint(responses.decode(sent), "openai-responses") == []


def test_the_docs_name_the_conversation_keys_redis_holds() -> None:
    keys = f"{RedisStore.default_prefix}{KEY_PREFIX}*"
    assert f"`{keys}`" in (Path(__file__).parents[3] / "docs" / "serve.md").read_text("utf-8")


async def test_a_history_within_budget_is_not_decoded_however_large_its_tools(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Claude Code sends 80 KB of tools with every request: the within-budget path
    measures the history's own JSON, so such a request is never decoded (issue #38)."""
    tools = [
        {"name": f"tool_{i}", "description": "d" * 4000, "input_schema": {"type": "object"}}
        for i in range(20)
    ]
    messages = [{"role": "user", "content": "Fix the importer."}]
    data = json.dumps({"model": "m", "system": SYSTEM, "messages": messages, "tools": tools})

    def decoded(*_: object) -> None:
        raise AssertionError("decoded")

    monkeypatch.setattr(anthropic, "decode", decoded)
    for offload in (True, False):
        config = ServeConfig(
            upstream="http://127.0.0.1:9", budget=Budget.bytes(16384), offload=offload
        )
        outcome = await Rewriter(config, MemoryStore()).rewrite(MESSAGES, data.encode(), None)
        assert outcome.kind is OutcomeKind.WITHIN_BUDGET
        assert outcome.bytes_before < 1024 < 16384 < len(data)
