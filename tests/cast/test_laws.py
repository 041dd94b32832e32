"""Algebraic laws of cast: round trips, repair, sizes, purity and idempotence of transforms."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import TypeAdapter

from cast import ChainAST, ChainError, IdTemplate, Message, diagnose
from strategies import mutilated_chains, valid_chains

MESSAGES: TypeAdapter[list[Message]] = TypeAdapter(list[Message])

TEMPLATES = st.sampled_from(
    [
        "toolu_{r:24:b}",
        "call_{r:24:x}",
        "{f}_{r:6:d}",
        "call_{r:1:x}",  # fits some of the strategy's pool ("call_1", "call_2", ...)
        "a",  # fits only the id "a": a one-id template, see the capacity check below
    ]
)


def utf8_size(value: Any) -> int:
    """Size of a dumped part, computed independently: UTF-8 bytes of every string and the
    length of every bytes value, over all fields but ``type`` (nested reasoning too)."""
    if isinstance(value, str):
        return len(value.encode("utf-8"))
    if isinstance(value, bytes):
        return len(value)
    if isinstance(value, dict):
        return sum(utf8_size(v) for k, v in value.items() if k != "type")
    return 0  # None (no reasoning)


def check_sizes(ast: ChainAST) -> None:
    def total(messages: list[Message]) -> int:
        return sum(m.size for m in messages)

    for section in ast.sections:
        assert section.header.size == total(section.header.messages())
        for pair in section.body:
            assert pair.size == total(pair.messages())
        assert section.size == total(section.messages())
    assert ast.size == total(ast.to_messages())


def pairing(ast: ChainAST) -> list[tuple[str, str, str, str]]:
    """(call name, call arguments, result name, result content) for every result, in chain
    order; the k-th result for an id answers the k-th call with that id in its pair."""
    out = []
    for section in ast.sections:
        for pair in section.body:
            calls: dict[str, list[Any]] = {}
            for call in pair.tool_calls:
                calls.setdefault(call.id, []).append(call)
            for message in pair.tool_messages:
                for result in message.tool_results:
                    call = calls[result.tool_call_id].pop(0)
                    out.append((call.name, call.arguments, result.name, result.content))
    return out


# -- round trips ---------------------------------------------------------------------------------


@given(valid_chains())
def test_valid_chains_round_trip(chain: list[Message]) -> None:
    ast = ChainAST.from_messages(chain)
    assert ast.to_messages() == chain
    assert diagnose(chain) == []
    assert ChainAST.from_messages(chain, repair=True) == ast
    dicts = [m.model_dump() for m in chain]
    assert ChainAST.from_messages(dicts).to_messages() == chain


@given(valid_chains())
def test_messages_json_round_trip(chain: list[Message]) -> None:
    assert MESSAGES.validate_json(MESSAGES.dump_json(chain)) == chain
    dumped = [m.model_dump(mode="json") for m in chain]
    back = [Message.model_validate(d) for d in dumped]
    assert back == chain
    assert [m.size for m in back] == [m.size for m in chain]
    assert [Message.model_validate_json(m.model_dump_json()) for m in chain] == chain


# -- repair --------------------------------------------------------------------------------------


@given(mutilated_chains())
def test_repair_of_a_mutilated_chain_parses_strictly(chain: list[Message]) -> None:
    repaired = ChainAST.from_messages(chain, repair=True)
    assert ChainAST.from_messages(repaired.to_messages()) == repaired
    check_sizes(repaired)
    issues = diagnose(chain)
    if issues:
        with pytest.raises(ChainError) as info:
            ChainAST.from_messages(chain)
        assert (info.value.index, info.value.rule) == (issues[0].index, issues[0].rule)
    else:
        assert ChainAST.from_messages(chain).to_messages() == chain
        assert repaired.to_messages() == chain


# -- sizes ---------------------------------------------------------------------------------------


@given(st.one_of(valid_chains(), mutilated_chains()))
def test_sizes_are_sums_of_utf8_lengths(chain: list[Message]) -> None:
    for message in chain:
        dumped = message.model_dump()
        assert message.size == sum(utf8_size(part) for part in dumped["parts"])
        assert message.size == sum(part.size for part in message.parts)
    check_sizes(ChainAST.from_messages(chain, repair=True))


# -- transforms ----------------------------------------------------------------------------------


def _transforms(ast: ChainAST, template: str) -> list[Callable[[], ChainAST]]:
    calls = [c for m in ast.to_messages() for c in m.tool_calls]
    out: list[Callable[[], ChainAST]] = [
        lambda: ast.normalize_tool_call_ids(template),
        ast.clear_reasoning,
        ast.sanitize_tool_call_arguments,
        lambda: ast.append_human_message("more é"),
    ]
    if calls:
        out.append(lambda: ast.add_tool_response(calls[-1].id, calls[-1].name, "new 😀"))
    return out


def _capacity_ok(ast: ChainAST, template: str) -> bool:
    capacity = IdTemplate(template).capacity
    calls = sum(len(m.tool_calls) for m in ast.to_messages())
    return capacity is None or capacity >= calls


@given(valid_chains(), TEMPLATES)
def test_transforms_never_change_their_receiver(chain: list[Message], template: str) -> None:
    ast = ChainAST.from_messages(chain)
    twin = ChainAST.from_messages(list(chain))
    hash_before = hash(ast)
    for transform in _transforms(ast, template):
        if not _capacity_ok(ast, template):
            continue
        result = transform()
        assert ast.to_messages() == chain
        assert ast == twin
        assert hash(ast) == hash_before
        check_sizes(result)
        assert ChainAST.from_messages(result.to_messages()) == result


@given(valid_chains(), TEMPLATES)
def test_normalize_is_idempotent_unique_and_keeps_the_pairing(
    chain: list[Message], template: str
) -> None:
    ast = ChainAST.from_messages(chain)
    if not _capacity_ok(ast, template):
        return
    once = ast.normalize_tool_call_ids(template)
    assert once.normalize_tool_call_ids(template) == once
    ids = [c.id for m in once.to_messages() for c in m.tool_calls]
    assert len(ids) == len(set(ids))
    tmpl = IdTemplate(template)
    assert all(tmpl.matches(c.id, c.name) for m in once.to_messages() for c in m.tool_calls)
    assert ChainAST.from_messages(once.to_messages()) == once
    assert pairing(once) == pairing(ast)
    # Ids that already fit and were first used are kept.
    first_fitting = {}
    for message in chain:
        for c in message.tool_calls:
            if tmpl.matches(c.id, c.name):
                first_fitting.setdefault(c.id, c)
    assert set(first_fitting) <= set(ids)


@given(valid_chains())
def test_clear_reasoning_is_idempotent(chain: list[Message]) -> None:
    once = ChainAST.from_messages(chain).clear_reasoning()
    assert once.clear_reasoning() == once
    parts = [p for m in once.to_messages() for p in m.parts]
    assert all(getattr(p, "reasoning", None) is None for p in parts)
