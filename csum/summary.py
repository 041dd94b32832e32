"""The summary stage of a compaction: one summary of what the plan evicts.

The questions that leave the chain are summarized in their place among their turns'
messages (the user's requests and constraints are gone from the chain afterwards, so
the summary must say them); only the question of the turn the cut falls in stays, and
is context. One prompt when it fits the handler's ``max_prompt_bytes``, else pieces that
fit, merged (:mod:`csum._pieces`): the prompt of it all is never built. With clearing,
the handler reads the evicted tool results as their placeholders. The one-prompt request
carries the conversation the Compactor was called with and how many of its last
messages stay (:attr:`csum.prompt.SummaryRequest.conversation`), so a continuation
handler can send it as the provider's cached prefix; pieces are fresh prompts.
"""

from __future__ import annotations

from dataclasses import replace

from cast import ChainAST, Message
from csum._calls import HandlerCalls
from csum._pieces import question_context, summarize_in_pieces
from csum._robust import RobustHandler
from csum.clearing import clear_evicted
from csum.config import Clearing
from csum.plan import Plan, Turn
from csum.reinsert import own_question

__all__ = ["kept_after", "summarize_plan"]


async def summarize_plan(
    calls: HandlerCalls,
    plan: Plan,
    *,
    handler: RobustHandler,
    clearing: Clearing | None,
    focus: str | None,
    conversation: tuple[Message, ...] = (),
    kept: int = 0,
) -> str:
    """The summary of what ``plan`` evicts: one prompt when its messages fit the
    handler's ``max_prompt_bytes`` (the robust handler still splits a prompt their
    tags make too long), else pieces that fit, merged. With ``clearing``, the handler
    reads the evicted tool results as their placeholders
    (:func:`~csum.clearing.clear_evicted`). ``conversation`` and ``kept`` go with the
    one prompt (:attr:`~csum.prompt.SummaryRequest.conversation`)."""
    if clearing is not None:
        plan = _cleared(plan, clearing)
    limit = handler.max_prompt_bytes
    evicted = sum(m.size for m in plan.humans) + sum(m.size for m in plan.summarized)
    if limit is not None and evicted > limit:
        staying, turns = _turns_in_place(plan)
        text = await summarize_in_pieces(
            calls,
            turns,
            staying=staying,
            max_bytes=limit,
            concurrency=handler.max_concurrency,
            phase="compaction",
            section=plan.section,
            focus=focus,
        )
        return await calls.archived(text, plan.replaced)
    context, summarized = _in_chain_order(plan)
    return await calls.summarize(
        context,
        summarized,
        phase="compaction",
        section=plan.section,
        replaced=plan.replaced,
        focus=focus,
        conversation=conversation,
        kept=kept,
    )


def kept_after(chain: ChainAST, plan: Plan) -> int:
    """How many of ``chain``'s last messages ``plan`` keeps after what it evicts: the
    kept pairs of its section (with the section's question when the cut is at its
    start) and every later section. What stays before the cut (the system prompt, the
    question of the turn the cut falls in, pinned pairs) is not counted: a continuation
    summary covers it too, as the one prompt gives that question as context."""
    section = chain.sections[plan.section]
    kept = sum(1 + len(pair.tool_messages) for pair in section.body[plan.pair :])
    if plan.pair == 0:
        kept += len(section.header.messages())
    return kept + sum(len(later.messages()) for later in chain.sections[plan.section + 1 :])


def _cleared(plan: Plan, options: Clearing) -> Plan:
    """``plan`` with the messages its summary reads cleared (what the archive stores,
    ``plan.replaced``, stays whole)."""
    summarized = clear_evicted(plan.summarized, options)
    if all(a is b for a, b in zip(summarized, plan.summarized, strict=True)):
        return plan
    # the turns hold the same messages: each is cleared (and gisted) once
    done = {id(a): b for a, b in zip(plan.summarized, summarized, strict=True)}
    turns = [
        (q, [done[id(m)] if id(m) in done else clear_evicted([m], options)[0] for m in ms])
        for q, ms in plan.turns
    ]
    return replace(plan, summarized=summarized, turns=turns)


def _in_chain_order(plan: Plan) -> tuple[list[Message], list[Message]]:
    """(context, summarized) of one summary prompt: the questions that leave the chain
    in their place among the turns' messages; the question that stays is context."""
    staying, turns = _turns_in_place(plan)
    summarized: list[Message] = []
    for question, messages in turns:
        if question is not None:
            summarized.append(question)
        summarized.extend(messages)
    return ([question_context(staying)] if staying is not None else []), summarized


def _turns_in_place(plan: Plan) -> tuple[Message | None, list[Turn]]:
    """(the question that stays, the turns summarized): the question of the turn the cut
    falls in stays in the chain; the others leave it, each summarized in its place as
    its own text (:func:`csum.reinsert.own_question`)."""
    staying: Message | None = None
    turns: list[Turn] = []
    last = len(plan.turns) - 1
    for index, (question, messages) in enumerate(plan.turns):
        if question is not None and index == last and plan.pair > 0:
            staying = question
            turns.append((None, messages))
        else:
            turns.append((None if question is None else own_question(question), messages))
    return staying, turns
