"""A compacted Responses history written back as the client sent what it kept: its
``instructions``, the items a merged message was made of, its calls with their ids and
statuses; what the compaction wrote (summaries, cleared results) goes as encoded."""

from __future__ import annotations

from typing import Any

__all__ = ["as_sent"]

_SYSTEM_ROLES = frozenset({"system", "developer"})
_TEXT_TYPES = frozenset({"input_text", "output_text", "text"})
_CALL_FIELDS = ("name", "arguments", "output", "input", "namespace")


def as_sent(original: dict[str, Any], encoded: dict[str, Any]) -> dict[str, Any]:
    """``encoded`` with the client's own items from ``original`` wherever unchanged."""
    items = list(encoded.get("input") or [])
    out: dict[str, Any] = {}
    instructions = original.get("instructions")
    if isinstance(instructions, str) and items and _role(items[0]) == "system":
        parts = _parts(items[0])
        if parts and parts[0] == ("text", instructions):
            out["instructions"] = instructions
            rest = _content_list(items[0])[1:]
            items = ([{**items[0], "content": rest}] if rest else []) + items[1:]
    given = original.get("input")
    sent = items if not isinstance(given, list) else _restored(given, items)
    return {**out, **{k: v for k, v in encoded.items() if k != "input"}, "input": sent}


def _restored(given: list[Any], items: list[Any]) -> list[Any]:
    out: list[Any] = []
    at = 0  # the compaction keeps order: look for each item after the last one found
    for item in items:
        found = _message_run(given, at, item) if _role(item) else _same_call(given, at, item)
        if found is None:
            out.append(item)
            continue
        start, end = found
        out.extend(given[start:end])
        at = end
    return out


def _message_run(given: list[Any], at: int, item: dict[str, Any]) -> tuple[int, int] | None:
    """The client's consecutive message items (same role) whose parts are ``item``'s."""
    wanted = _parts(item)
    family = _role(item)
    for start in range(at, len(given)):
        if _role(given[start]) != family:
            continue
        end, matched = start, 0
        while end < len(given) and matched < len(wanted) and _role(given[end]) == family:
            parts = _parts(given[end])
            if wanted[matched : matched + len(parts)] != parts:
                break
            matched += len(parts)
            end += 1
        if matched == len(wanted) and end > start:
            return start, end
    return None


def _same_call(given: list[Any], at: int, item: dict[str, Any]) -> tuple[int, int] | None:
    """The client's item with ``item``'s type and ``call_id`` and the same fields."""
    call_id = item.get("call_id") if isinstance(item, dict) else None
    if call_id is None:
        return None
    for index in range(at, len(given)):
        other = given[index]
        if (
            isinstance(other, dict)
            and other.get("call_id") == call_id
            and other.get("type") == item.get("type")
        ):
            same = all(other.get(k) == item.get(k) for k in _CALL_FIELDS)
            return (index, index + 1) if same else None
    return None


def _role(item: object) -> str | None:
    """A message item's role (developer's is system's); None for any other item."""
    if not isinstance(item, dict) or item.get("type", "message") != "message" or "role" not in item:
        return None
    role = str(item["role"])
    return "system" if role in _SYSTEM_ROLES else role


def _content_list(item: dict[str, Any]) -> list[Any]:
    content = item.get("content")
    if isinstance(content, str):
        return [{"type": "input_text", "text": content}]
    return list(content) if isinstance(content, list) else []


def _parts(item: dict[str, Any]) -> list[Any]:
    """Each content part as ``("text", text)``, or the part itself when not text."""
    return [
        ("text", part.get("text"))
        if isinstance(part, dict) and part.get("type") in _TEXT_TYPES
        else part
        for part in _content_list(item)
    ]
