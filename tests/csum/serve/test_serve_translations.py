"""Translation end to end, real processes on 127.0.0.1 only: ``csum serve`` under
uvicorn in a subprocess, the scripted upstream in another, the official ``openai`` and
``anthropic`` SDKs as clients, multi-turn tool loops, streamed and not.

OpenAI Chat Completions client -> Anthropic upstream, OpenAI Responses client -> Chat
Completions upstream and -> Anthropic upstream, and the reasoning of an
OpenAI-compatible upstream reaching an Anthropic client: every upstream request is in
the upstream's API, within the budget and passes ``cast.lint`` for its provider; the
client's SDK reads text, tool calls, reasoning, stop reasons and usage as the upstream
sent them. Same-provider traffic is never translated. Skipped without the serve extra
or an SDK.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

for _module in ("starlette", "uvicorn", "httpx", "prometheus_client"):
    pytest.importorskip(_module, reason="the serve extra is not installed: pip install '.[serve]'")
openai_sdk = pytest.importorskip("openai", reason="the openai SDK is not installed")
anthropic_sdk = pytest.importorskip("anthropic", reason="the anthropic SDK is not installed")

import httpx  # noqa: E402

from cast import lint  # noqa: E402
from cast.codecs import anthropic, openai  # noqa: E402
from serve_clients import (  # noqa: E402
    API_KEY,
    CHAT_READ_FILE,
    READ_FILE_SCHEMA,
    SYSTEM,
    anthropic_http,
    tool_output,
)
from serve_payloads import REASONER  # noqa: E402
from serve_processes import (  # noqa: E402
    Process,
    metric,
    recorded,
    reset,
    sse_data,
    start_gateway,
    start_upstream,
)

BUDGET = 16384

Calls = list[tuple[str, str, str]]  # (id, name, arguments as normalized JSON)


def _json(arguments: str) -> str:
    return json.dumps(json.loads(arguments or "{}"))


@dataclass
class Seen:
    """One answer as the client's SDK gave it."""

    calls: Calls
    text: str
    reasoning: str
    finish: str
    cached: int | None = None


@dataclass
class Run:
    seen: list[Seen] = field(default_factory=list)
    bodies: list[bytes] = field(default_factory=list)

    def hook(self, request: httpx.Request) -> None:
        if request.url.path.startswith("/v1/"):
            self.bodies.append(request.content)


def _extra(model: Any, name: str) -> str:
    return str((model.model_extra or {}).get(name) or "")


def chat_conversation(base: str, turns: int) -> Run:
    """The openai SDK on Chat Completions, every other turn streamed (with usage)."""
    run = Run()
    http = httpx.Client(event_hooks={"request": [run.hook]})
    client = openai_sdk.OpenAI(
        base_url=base + "/v1", api_key=API_KEY, http_client=http, max_retries=0
    )
    tools = [CHAT_READ_FILE]
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": "Refactor the request handlers."},
    ]
    for turn in range(turns):
        options: dict[str, Any] = {"model": "gpt-4o", "messages": messages, "tools": tools}
        if turn % 2:
            calls: dict[int, list[str]] = {}
            text = reasoning = finish = ""
            cached = None
            details: dict[int, dict[str, Any]] = {}  # reasoning_details pieces by index
            stream = client.chat.completions.create(
                **options, stream=True, stream_options={"include_usage": True}
            )
            for chunk in stream:
                if chunk.usage is not None and chunk.usage.prompt_tokens_details is not None:
                    cached = chunk.usage.prompt_tokens_details.cached_tokens
                if not chunk.choices:
                    continue
                choice = chunk.choices[0]
                finish = choice.finish_reason or finish
                delta = choice.delta
                text += delta.content or ""
                reasoning += _extra(delta, "reasoning_content")
                for piece in (delta.model_extra or {}).get("reasoning_details") or []:
                    merged = details.setdefault(piece["index"], {})
                    for key, value in piece.items():
                        fixed = key in ("type", "index")
                        merged[key] = value if fixed else merged.get(key, "") + value
                for call in delta.tool_calls or []:
                    entry = calls.setdefault(call.index, ["", "", ""])
                    entry[0] += call.id or ""
                    entry[1] += (call.function.name or "") if call.function else ""
                    entry[2] += (call.function.arguments or "") if call.function else ""
            found = [(c[0], c[1], _json(c[2])) for _, c in sorted(calls.items())]
            signed = [d for _, d in sorted(details.items())]
        else:
            completion = client.chat.completions.create(**options)
            message = completion.choices[0].message
            finish = completion.choices[0].finish_reason
            text = message.content or ""
            reasoning = _extra(message, "reasoning_content")
            signed = (message.model_extra or {}).get("reasoning_details") or []
            found = [
                (c.id, c.function.name, _json(c.function.arguments))
                for c in message.tool_calls or []
                if c.type == "function"
            ]
            details = completion.usage.prompt_tokens_details if completion.usage else None
            cached = details.cached_tokens if details is not None else None
        run.seen.append(Seen(found, text, reasoning, finish, cached))
        if found:
            messages.append(
                {
                    "role": "assistant",
                    "content": None,
                    "reasoning_content": reasoning,  # as DeepSeek clients send it back
                    "reasoning_details": signed,  # as OpenRouter clients send it back
                    "tool_calls": [
                        {"id": i, "type": "function", "function": {"name": n, "arguments": a}}
                        for i, n, a in found
                    ],
                }
            )
            messages.extend(
                {"role": "tool", "tool_call_id": i, "content": tool_output(a)} for i, _, a in found
            )
        else:
            messages.append({"role": "assistant", "content": text})
            messages.append({"role": "user", "content": f"Good. Now step {turn + 1}."})
    http.close()
    return run


def responses_conversation(base: str, turns: int) -> Run:
    """The openai SDK on Responses: ``create``, ``responses.stream`` and
    ``create(stream=True)`` in turn; output items are sent back as input (reasoning
    items included), as the Agents SDK and Codex do."""
    run = Run()
    http = httpx.Client(event_hooks={"request": [run.hook]})
    client = openai_sdk.OpenAI(
        base_url=base + "/v1", api_key=API_KEY, http_client=http, max_retries=0
    )
    tools = [{"type": "function", "name": "read_file", "parameters": READ_FILE_SCHEMA}]
    items: list[dict[str, Any]] = [{"role": "user", "content": "Refactor the request handlers."}]
    for turn in range(turns):
        options: dict[str, Any] = {
            "model": "gpt-4o",
            "instructions": SYSTEM,
            "input": items,
            "tools": tools,
        }
        mode = turn % 3
        if mode == 0:
            response = client.responses.create(**options)
        elif mode == 1:
            with client.responses.stream(**options) as stream:
                deltas = "".join(
                    e.delta for e in stream if e.type == "response.function_call_arguments.delta"
                )
                response = stream.get_final_response()
            called = "".join(o.arguments for o in response.output if o.type == "function_call")
            assert deltas == called  # the deltas add up to the final arguments
        else:
            events = list(client.responses.create(**options, stream=True))
            assert events[0].type == "response.created"
            assert [e.sequence_number for e in events] == list(range(len(events)))
            response = events[-1].response
        found = [
            (o.call_id, o.name, _json(o.arguments))
            for o in response.output
            if o.type == "function_call"
        ]
        reasoning = "".join(  # raw reasoning text, or a summary (Anthropic's thinking)
            c.text
            for o in response.output
            if o.type == "reasoning"
            for c in [*(o.content or []), *o.summary]
        )
        cached = response.usage.input_tokens_details.cached_tokens if response.usage else None
        finish = "tool_calls" if found else response.status or ""
        run.seen.append(Seen(found, response.output_text, reasoning, finish, cached))
        items.extend(o.model_dump(exclude_none=True) for o in response.output)
        if found:
            items.extend(
                {"type": "function_call_output", "call_id": i, "output": tool_output(a)}
                for i, _, a in found
            )
        else:
            items.append({"role": "user", "content": f"Good. Now step {turn + 1}."})
    http.close()
    return run


def messages_conversation(base: str, turns: int) -> Run:
    """The anthropic SDK, every other turn streamed; thinking blocks sent back."""
    run = Run()
    http = anthropic_http(event_hooks={"request": [run.hook]})
    client = anthropic_sdk.Anthropic(
        base_url=base, api_key=API_KEY, http_client=http, max_retries=0
    )
    tools = [{"name": "read_file", "description": "read a file", "input_schema": READ_FILE_SCHEMA}]
    messages: list[dict[str, Any]] = [{"role": "user", "content": "Refactor the request handlers."}]
    for turn in range(turns):
        options: dict[str, Any] = {
            "model": "claude-sonnet-4-6",
            "max_tokens": 1024,
            "system": SYSTEM,
            "messages": messages,
            "tools": tools,
        }
        if turn % 2:
            with client.messages.stream(**options) as events:
                final = events.get_final_message()
        else:
            final = client.messages.create(**options)
        found = [(b.id, b.name, json.dumps(b.input)) for b in final.content if b.type == "tool_use"]
        text = "".join(b.text for b in final.content if b.type == "text")
        reasoning = "".join(b.thinking for b in final.content if b.type == "thinking")
        cached = final.usage.cache_read_input_tokens
        run.seen.append(Seen(found, text, reasoning, final.stop_reason or "", cached))
        messages.append({"role": "assistant", "content": [b.model_dump() for b in final.content]})
        if found:
            messages.append(
                {
                    "role": "user",
                    "content": [
                        {"type": "tool_result", "tool_use_id": i, "content": tool_output(a)}
                        for i, _, a in found
                    ],
                }
            )
        else:
            messages.append({"role": "user", "content": f"Good. Now step {turn + 1}."})
    http.close()
    return run


def upstream_answer(answer: str) -> tuple[Calls, str, str]:
    """(calls, text, reasoning) of a recorded upstream answer: Chat Completions or
    Messages, a JSON body or an SSE stream."""
    if not answer.startswith(("data:", "event:")):
        body = json.loads(answer)
        if "choices" in body:
            message = body["choices"][0]["message"]
            calls = [
                (c["id"], c["function"]["name"], _json(c["function"]["arguments"]))
                for c in message.get("tool_calls") or []
            ]
            return calls, message.get("content") or "", message.get("reasoning_content") or ""
        blocks = body["content"]
        calls = [
            (b["id"], b["name"], json.dumps(b["input"])) for b in blocks if b["type"] == "tool_use"
        ]
        text = "".join(b["text"] for b in blocks if b["type"] == "text")
        return calls, text, "".join(b["thinking"] for b in blocks if b["type"] == "thinking")
    events = sse_data(answer)
    text = reasoning = ""
    if "choices" in answer:
        pieces: dict[int, list[str]] = {}
        for event in events:
            for choice in event["choices"]:
                delta = choice["delta"]
                text += delta.get("content") or ""
                reasoning += delta.get("reasoning_content") or ""
                for call in delta.get("tool_calls") or []:
                    entry = pieces.setdefault(call["index"], ["", "", ""])
                    entry[0] += call.get("id") or ""
                    entry[1] += call.get("function", {}).get("name") or ""
                    entry[2] += call.get("function", {}).get("arguments") or ""
        return [(c[0], c[1], _json(c[2])) for _, c in sorted(pieces.items())], text, reasoning
    found: list[list[str]] = []
    for event in events:
        if event["type"] == "content_block_start" and event["content_block"]["type"] == "tool_use":
            found.append([event["content_block"]["id"], event["content_block"]["name"], ""])
        elif event["type"] == "content_block_delta":
            delta = event["delta"]
            if delta["type"] == "input_json_delta":
                found[-1][2] += delta["partial_json"]
            elif delta["type"] == "text_delta":
                text += delta["text"]
            elif delta["type"] == "thinking_delta":
                reasoning += delta["thinking"]
    return [(i, n, _json(a)) for i, n, a in found], text, reasoning


@pytest.fixture(scope="module")
def logs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("serve-translation-logs")


@pytest.fixture(scope="module")
def upstream(logs: Path) -> Iterator[Process]:
    server = start_upstream(logs)
    yield server
    server.stop()


def _gateway(upstream: Process, logs: Path, api: str) -> Process:
    flags = ("--budget", str(BUDGET), "--upstream-api", api, "--upstream-model", REASONER)
    return start_gateway(upstream.url, logs, *flags)


@dataclass(frozen=True)
class Case:
    name: str
    client: str  # the endpoint the client calls (metrics label)
    upstream_api: str
    path: str  # what the upstream receives
    provider: str
    turns: int


CASES = [
    Case("chat-to-anthropic", "chat", "anthropic", "/v1/messages", "anthropic", 16),
    Case("responses-to-chat", "responses", "openai", "/v1/chat/completions", "openai", 15),
    Case("responses-to-anthropic", "responses", "anthropic", "/v1/messages", "anthropic", 15),
    Case("messages-to-chat", "messages", "openai", "/v1/chat/completions", "openai", 16),
]
SIGNED_BACK = ("chat-to-anthropic", "responses-to-anthropic")
"""Where the upstream's signed thinking comes back to it on the next turns."""
CONVERSATIONS = {
    "chat": chat_conversation,
    "responses": responses_conversation,
    "messages": messages_conversation,
}
FINISH = {  # what each client API calls the upstream's two stop reasons (tool, text)
    "chat": ("tool_calls", "stop"),
    "responses": ("tool_calls", "completed"),
    "messages": ("tool_use", "end_turn"),
}


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_a_tool_loop_is_translated_both_ways(case: Case, upstream: Process, logs: Path) -> None:
    server = _gateway(upstream, logs, case.upstream_api)
    try:
        reset(upstream)
        run = CONVERSATIONS[case.client](server.url, case.turns)
        got = recorded(upstream)
        compactions = metric(server, "csum_serve_compactions_total", endpoint=case.client)
        log = server.log_text()
    finally:
        server.stop()
    assert len(got) == len(run.seen) == case.turns
    decode = anthropic.decode if case.provider == "anthropic" else openai.decode
    signatures: list[str] = []  # the upstream's thinking signatures so far
    returned = 0
    for i, (seen, entry) in enumerate(zip(run.seen, got, strict=True)):
        assert entry["path"] == case.path, f"turn {i}"
        payload = json.loads(entry["body"])
        assert payload["model"] == REASONER
        chain = decode(payload)
        assert sum(m.size for m in chain) <= BUDGET, f"turn {i}"
        assert lint(chain, case.provider) == [], f"turn {i}"
        headers = entry["headers"]
        if case.provider == "anthropic":  # the key where Anthropic reads it
            assert headers["x-api-key"] == API_KEY
            assert "authorization" not in headers
            assert headers["anthropic-version"]
            assert payload["tools"][0]["name"] == "read_file"
        else:
            assert headers["authorization"] == f"Bearer {API_KEY}"
            assert "x-api-key" not in headers
            assert payload["tools"][0]["function"]["name"] == "read_file"
        calls, text, reasoning = upstream_answer(entry["answer"])
        assert (seen.calls, seen.text, seen.reasoning) == (calls, text, reasoning), f"turn {i}"
        assert reasoning  # the reasoner always reasons: the client saw it
        assert seen.finish == FINISH[case.client][0 if calls else 1], f"turn {i}"
        assert seen.cached == 64, f"turn {i}"  # cached prompt tokens reported
        reasonings = [
            p.reasoning for m in chain for p in m.parts if getattr(p, "reasoning", None) is not None
        ]
        if case.name in SIGNED_BACK:
            # the signatures went to the client (Responses: encrypted_content; Chat:
            # reasoning_details) and came back
            assert {r.signature.decode() for r in reasonings} <= set(signatures)
            assert len(reasonings) >= min(i, 1), f"turn {i}"
            returned += len(reasonings)
        else:  # reasoning never goes back to another provider
            assert reasonings == [], f"turn {i}"
        signatures.extend(re.findall(r"c2lnbmF0dXJl\d{4}", entry["answer"]))
    assert compactions >= 1  # kept under the budget, counted under the client's endpoint
    if case.name in SIGNED_BACK:
        assert returned >= case.turns - 1
    assert API_KEY not in log


def test_same_provider_traffic_is_never_translated(upstream: Process, logs: Path) -> None:
    """With --upstream-api anthropic an Anthropic client's requests, and with
    --upstream-api openai a Chat client's, go through byte for byte, answers too."""
    for api, client in (("anthropic", "messages"), ("openai", "chat")):
        server = _gateway(upstream, logs, api)
        try:
            reset(upstream)
            run = CONVERSATIONS[client](server.url, 3)
            got = recorded(upstream)
        finally:
            server.stop()
        assert [entry["path"] for entry in got] == [
            "/v1/messages" if client == "messages" else "/v1/chat/completions"
        ] * 3
        assert [e["body"].encode() for e in got] == run.bodies  # within budget: untouched
        assert all(json.loads(e["body"])["model"] != REASONER for e in got)


def test_what_cannot_be_translated_is_a_400_naming_the_field(upstream: Process, logs: Path) -> None:
    server = _gateway(upstream, logs, "anthropic")
    try:
        reset(upstream)
        client = openai_sdk.OpenAI(base_url=server.url + "/v1", api_key=API_KEY, max_retries=0)
        with pytest.raises(openai_sdk.BadRequestError, match=r"tools\[0\]\.name"):
            client.responses.create(
                model="gpt-4o",
                input="hi",
                tools=[{"type": "function"}],
            )
        with pytest.raises(openai_sdk.BadRequestError, match="previous_response_id"):
            client.responses.create(model="gpt-4o", input="hi", previous_response_id="resp_1")
        with pytest.raises(openai_sdk.BadRequestError, match=r"messages\[0\]\.role"):
            client.chat.completions.create(
                model="gpt-4o", messages=[{"role": "wizard", "content": "x"}]
            )
        assert recorded(upstream) == []  # nothing reached the upstream
    finally:
        server.stop()
