"""Responses tools on a Chat Completions upstream, there and back: a ``function`` stays
one, a ``custom`` tool becomes a function of one string argument ``input``, a
``namespace`` group its member functions (``NAMESPACE__NAME`` when a name is taken); a
built-in tool is dropped and named in :data:`DROPPED_TOOLS_HEADER` (or refused, 400)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import cast.codecs.openai_responses as responses_codec
from cast import Message, ProviderPart, Role, TextPart, ToolCall, ToolResult
from csum.serve.translate import TranslationError, tools_of

__all__ = ["DROPPED_TOOLS_HEADER", "ChatTools", "chat_tools", "custom_input", "function_messages"]

_CUSTOM_INPUT = "input"
"""The one argument of the function a ``custom`` tool becomes."""
DROPPED_TOOLS_HEADER = "x-csum-dropped-tools"
"""Response header naming the built-in tools left out of a translated request
(comma-separated ``type`` or ``type:name``)."""
_CHAT_NAME_LIMIT = 64
_PROVIDER = "openai-responses"
_CALL_FIELDS = "call_fields"  # the codec's part of a call's other fields (``namespace``)
_KEPT = ("custom_tool_call", "custom_tool_call_output", _CALL_FIELDS)  # items kept whole


@dataclass(frozen=True, slots=True)
class ChatTools:
    """A request's tools for Chat: the function tools, what each function name stands
    for, and the built-in tools dropped."""

    functions: list[dict[str, Any]]
    origins: dict[str, tuple[str, str, str | None]]
    """Chat function name -> (``function`` or ``custom``, client's name, namespace or None)."""
    dropped: list[str]

    def chat_name(self, name: str, namespace: str | None = None) -> str:
        """The Chat function name of the client's tool ``name`` (in ``namespace``)."""
        chats = (c for c, (_, n, space) in self.origins.items() if (n, space) == (name, namespace))
        return next(chats, name)

    def client_item(self, call_id: str, name: str, arguments: str, status: str) -> dict[str, Any]:
        """The Responses output item for a Chat tool call of ``name``."""
        kind, client_name, namespace = self.origins.get(name) or ("function", name, None)
        if kind == "custom":
            head = {"type": "custom_tool_call", "id": f"ctc_{call_id}", "call_id": call_id}
            return {**head, "name": client_name, "input": custom_input(arguments), "status": status}
        head = {"type": "function_call", "id": f"fc_{call_id}", "call_id": call_id}
        item = {**head, "name": client_name, "arguments": arguments, "status": status}
        return item if namespace is None else {**item, "namespace": namespace}


def custom_input(arguments: str) -> str:
    """A custom tool's input from the arguments of the function it became (the raw
    arguments when the model did not write that object)."""
    try:
        parsed = json.loads(arguments) if arguments else {}
    except ValueError:
        return arguments
    if isinstance(parsed, dict) and isinstance(parsed.get(_CUSTOM_INPUT), str):
        return str(parsed[_CUSTOM_INPUT])
    return arguments


def chat_tools(request: dict[str, Any]) -> ChatTools:
    """The Chat form of a Responses ``request``'s tools (see the module docstring)."""
    out = ChatTools([], {}, [])
    for i, tool in enumerate(tools_of(request)):
        if not isinstance(tool, dict):
            raise TranslationError(f"tools[{i}]: expected a tool object")
        kind = tool.get("type")
        if kind in ("function", "custom"):
            function = (_function if kind == "function" else _custom)(tool, f"tools[{i}]")
            _add(out, function, kind)
        elif kind == "namespace":
            _namespace(out, tool, f"tools[{i}]")
        else:
            name = tool.get("name")
            out.dropped.append(f"{kind}:{name}" if isinstance(name, str) else str(kind))
    return out


def _add(out: ChatTools, function: dict[str, Any], kind: str, namespace: str | None = None) -> None:
    name = origin = function["name"]
    if name in out.origins and namespace is not None:
        name = f"{namespace}__{name}"[:_CHAT_NAME_LIMIT]
        function = {**function, "name": name}
    out.origins[name] = (kind, origin, namespace)
    out.functions.append({"type": "function", "function": function})


def _function(tool: dict[str, Any], where: str) -> dict[str, Any]:
    if not isinstance(tool.get("name"), str):
        raise TranslationError(f"{where}.name: expected a string")
    keys = ("name", "description", "parameters", "strict")
    return {k: tool[k] for k in keys if tool.get(k) is not None}


def _custom(tool: dict[str, Any], where: str) -> dict[str, Any]:
    if not isinstance(tool.get("name"), str):
        raise TranslationError(f"{where}.name: expected a string")
    about = "The tool's whole input, as freeform text."
    fmt = tool.get("format")
    if isinstance(fmt, dict) and fmt.get("type") == "grammar":
        syntax, grammar = fmt.get("syntax", ""), fmt.get("definition", "")
        about += f" It must match this {syntax} grammar:\n{grammar}"
    function: dict[str, Any] = {
        "name": tool["name"],
        "parameters": {
            "type": "object",
            "properties": {_CUSTOM_INPUT: {"type": "string", "description": about}},
            "required": [_CUSTOM_INPUT],
            "additionalProperties": False,
        },
    }
    if isinstance(tool.get("description"), str):
        function["description"] = tool["description"]
    return function


def _namespace(out: ChatTools, tool: dict[str, Any], where: str) -> None:
    space = tool.get("name")
    members = tool.get("tools")
    if not isinstance(space, str) or not isinstance(members, list):
        raise TranslationError(f"{where}: a namespace needs a name and a tools array")
    for j, member in enumerate(members):
        here = f"{where}.tools[{j}]"
        if not isinstance(member, dict) or member.get("type") != "function":
            kind = member.get("type") if isinstance(member, dict) else member
            out.dropped.append(f"{space}.{kind}")
            continue
        _add(out, _function(member, here), "function", space)


def function_messages(chain: list[Message], tools: ChatTools) -> list[Message]:
    """The decoded Responses history ``chain`` with custom tool calls and outputs as
    function calls and results, and namespaced calls named as their Chat functions."""
    out: list[Message] = []
    names: dict[str, str] = {}
    for message in chain:
        if message.role is not Role.AI:
            out.append(message)
            continue
        segment: list[Any] = []
        for part in message.parts:
            kind, item = _kept(part)
            if kind == "custom_tool_call":
                segment.append(_custom_call(item, segment, tools, names))
            elif kind == "custom_tool_call_output":
                if segment:
                    out.append(message.model_copy(update={"parts": tuple(segment)}))
                segment = []
                out.append(_custom_output(item, names))
            elif (
                kind == _CALL_FIELDS
                and isinstance(item.get("namespace"), str)
                and segment
                and type(segment[-1]) is ToolCall
            ):
                call = segment[-1]
                name = tools.chat_name(call.name, item.pop("namespace"))
                segment[-1] = call.model_copy(update={"name": name})
                names[call.id] = name
                if item:
                    data = json.dumps(item, ensure_ascii=False, separators=(",", ":"))
                    segment.append(ProviderPart(provider=_PROVIDER, kind=_CALL_FIELDS, data=data))
            else:
                if type(part) is ToolCall:
                    names[part.id] = part.name
                segment.append(part)
        if segment:
            out.append(message.model_copy(update={"parts": tuple(segment)}))
    return out


def _kept(part: object) -> tuple[str, dict[str, Any]]:
    """(kind, item) of a Responses item the codec keeps whole as a part (("", {}): none)."""
    if type(part) is not ProviderPart or part.provider != _PROVIDER or part.kind not in _KEPT:
        return "", {}
    item = json.loads(part.data)
    return (part.kind, item) if isinstance(item, dict) else ("", {})


def _custom_call(
    item: dict[str, Any], segment: list[Any], tools: ChatTools, names: dict[str, str]
) -> ToolCall:
    """A custom tool call as its function's call, with the reasoning part before it."""
    reasoning = None
    last = segment[-1] if segment else None
    if type(last) is TextPart and not last.text and last.reasoning is not None:
        reasoning = segment.pop().reasoning
    name = tools.chat_name(str(item.get("name", "")))
    arguments = json.dumps({_CUSTOM_INPUT: item.get("input", "")}, ensure_ascii=False)
    call = ToolCall(id=item.get("call_id"), name=name, arguments=arguments, reasoning=reasoning)
    names[call.id] = name
    return call


def _custom_output(item: dict[str, Any], names: dict[str, str]) -> Message:
    """A custom tool call's output as its function's result."""
    call_id, output = item.get("call_id"), item.get("output", "")
    if isinstance(output, str) and isinstance(call_id, str):
        result = ToolResult(tool_call_id=call_id, name=names.get(call_id, ""), content=output)
        return Message(role=Role.TOOL, parts=(result,))
    # content parts (or a bad call id): read as the codec reads a function call's output
    read = responses_codec.decode(
        [{"type": "function_call_output", "call_id": call_id, "output": output}]
    )
    first = read[0].parts[0]
    named = first.model_copy(update={"name": names.get(str(call_id), "")})
    return read[0].model_copy(update={"parts": (named, *read[0].parts[1:])})
