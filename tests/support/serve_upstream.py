"""A scripted upstream for the gateway tests: a Starlette app under uvicorn (run as
``python tests/support/serve_upstream.py PORT``) that records every request it receives and
answers in each API's own format, streaming or not.

Answers are a function of the request's number ``n`` since the last reset (so a run
replayed after a reset gets the same answers, and tool-call ids are unique within a
conversation): it calls the tool ``read_file`` unless ``n`` is a multiple of 4, when
it answers in text. Headers the
tests use: ``x-test-status: N`` answers with that status and a fixed error body;
``x-test-hold: 1`` sends a stream's first event, then waits for ``POST /_release``
(a proxy that buffered the stream would never deliver that first event).
``GET /_recorded`` returns what was received (body as text, headers, the answer sent);
``POST /_reset`` forgets it.
"""

from __future__ import annotations

import json
import sys
from collections.abc import AsyncIterator
from typing import Any

import anyio
import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from serve_payloads import (
    ERROR_BODY,
    chat_body,
    chat_events,
    messages_body,
    messages_events,
    responses_body,
)


class Recorder:
    def __init__(self) -> None:
        self.received: list[dict[str, Any]] = []
        self.release = anyio.Event()


def create_app() -> Starlette:
    recorder = Recorder()

    async def record(request: Request) -> Response:
        body = await request.body()
        entry: dict[str, Any] = {
            "method": request.method,
            "path": request.url.path,
            "raw_path": request.scope["raw_path"].decode("latin-1"),
            "query": request.url.query,
            "headers": dict(request.headers.items()),
            "body": body.decode("utf-8", "surrogateescape"),
        }
        recorder.received.append(entry)
        status = request.headers.get("x-test-status")
        if status is not None:
            entry["answer"] = ERROR_BODY.decode()
            return Response(
                ERROR_BODY,
                int(status),
                media_type="application/json",
                headers={"x-scripted": "yes", "retry-after": "0"},
            )
        path = request.url.path
        if request.method != "POST" or not path.startswith("/v1/"):
            answer = {"path": path, "method": request.method, "query": request.url.query}
            entry["answer"] = json.dumps(answer)
            return JSONResponse(answer)
        payload = json.loads(body)
        n = len(recorder.received)
        model = str(payload.get("model", "m"))
        if path.endswith("/count_tokens"):
            answer = {"input_tokens": len(body) // 4}
        elif path.endswith("/chat/completions"):
            if payload.get("stream"):
                return _stream(chat_events(n, model), entry, request, recorder)
            answer = chat_body(n, model)
        elif path.endswith("/responses"):
            answer = responses_body(n, model)
        elif path.endswith("/messages"):
            if payload.get("stream"):
                return _stream(messages_events(n, model), entry, request, recorder)
            answer = messages_body(n, model)
        else:
            return JSONResponse({"error": {"message": f"no route {path}"}}, 404)
        text = json.dumps(answer)
        entry["answer"] = text
        return Response(text.encode(), media_type="application/json")

    async def recorded(request: Request) -> Response:
        return JSONResponse(recorder.received)

    async def reset(request: Request) -> Response:
        recorder.received.clear()
        recorder.release = anyio.Event()
        return JSONResponse({"ok": True})

    async def release(request: Request) -> Response:
        recorder.release.set()
        return JSONResponse({"ok": True})

    methods = ["GET", "POST", "PUT", "DELETE", "PATCH"]
    return Starlette(
        routes=[
            Route("/_recorded", recorded, methods=["GET"]),
            Route("/_reset", reset, methods=["POST"]),
            Route("/_release", release, methods=["POST"]),
            Route("/{path:path}", record, methods=methods),
        ]
    )


def _stream(
    events: list[bytes], entry: dict[str, Any], request: Request, recorder: Recorder
) -> StreamingResponse:
    entry["answer"] = b"".join(events).decode()
    hold = request.headers.get("x-test-hold") == "1"

    async def body() -> AsyncIterator[bytes]:
        for i, chunk in enumerate(events):
            yield chunk
            if hold and i == 0:
                await recorder.release.wait()

    return StreamingResponse(body(), media_type="text/event-stream")


if __name__ == "__main__":
    uvicorn.run(create_app(), host="127.0.0.1", port=int(sys.argv[1]), log_level="warning")
