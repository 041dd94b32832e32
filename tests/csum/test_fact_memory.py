"""A compaction's memory of facts (issue 36 item 2): the summary is followed by the
salient tokens of what it replaces that it lacks, newest first, within its share; and,
with a history archive, every fact a real agent reused that the chain no longer holds
is found by the recall tool."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchmarks.policies.corpus import CLAUDE_CODE_FOLDER, find_corpus, load_folder
from benchmarks.policies.needed import message_text, needed_facts, occurs
from cast import Message, Role, ToolCall
from cast.internals import utf8_len
from csum import Budget, Compactor, HistoryArchive, RecallTool, Stores
from csum.prompt import MEMORY_HEADER, fact_memory, message_facts, with_fact_memory
from csum.stores import SQLiteArchiveStore


def _result(call_id: str, text: str) -> list[Message]:
    call = ToolCall(id=call_id, name="bash", arguments='{"command": "run"}')
    return [Message.ai("", call), Message.tool(call_id, "bash", text)]


def test_facts_are_read_by_shape() -> None:
    facts = message_facts(
        Message.tool("c1", "bash", "see src/io_utils.py:42 and read_block() in IoReader v1.2.3")
    )
    assert {"src/io_utils.py:42", "read_block", "IoReader", "v1.2.3"} <= set(facts)


def test_call_arguments_give_their_values_not_their_parameter_names() -> None:
    """opencode's ``edit`` call names ``filePath`` and ``oldString`` every time: the
    parameter names are never facts, the values are; arguments that are not JSON are
    read as they are."""
    arguments = '{"filePath": "/srv/app/notes.txt", "oldString": "TODO", "n": [{"ref": "ab12_x"}]}'
    call = ToolCall(id="c1", name="edit_file", arguments=arguments)
    facts = message_facts(Message.ai("", call))
    assert "/srv/app/notes.txt" in facts
    assert "ab12_x" in facts
    assert not {"filePath", "oldString", "edit_file"} & set(facts)
    raw = ToolCall(id="c2", name="bash", arguments="run lib/io_utils.py")
    assert "lib/io_utils.py" in message_facts(Message.ai("", raw))


def test_newest_first_deduplicated_within_the_limit() -> None:
    old = _result("c1", "old_name in lib/old.py")
    new = _result("c2", "new_name in lib/new.py and lib/old.py")
    memory = fact_memory([*old, *new], known="", limit=1000)
    lines = memory.splitlines()
    assert all(line.startswith(f"{MEMORY_HEADER} ") for line in lines)
    assert lines[0].count("lib/old.py") == 1  # the newest message names it: said there
    assert "lib/old.py" not in lines[1]
    assert memory.index("new_name") < memory.index("old_name")
    assert (
        fact_memory([*old, *new], known="", limit=40) == "Facts: lib/new.py, lib/old.py, new_name"
    )
    assert fact_memory([*old, *new], known="", limit=10) == ""


def test_what_the_summary_holds_is_not_repeated_and_the_archive_line_stays_last() -> None:
    replaced = _result("c1", "ConnectionRefusedError at db/pool.py:88 in open_pool")
    summary = "The pool failed: ConnectionRefusedError.\n[archived: 0123456789abcdef]"
    out = with_fact_memory(summary, replaced, 200)
    body, _, line = out.rpartition("\n")
    assert line == "[archived: 0123456789abcdef]"
    assert "db/pool.py:88" in body
    assert "open_pool" in body
    assert body.count("ConnectionRefusedError") == 1
    assert utf8_len(body) <= 200
    assert with_fact_memory(summary, replaced, 200) == out  # pure: the prefix stays stable


@pytest.mark.anyio
async def test_the_compactor_remembers_an_evicted_path() -> None:
    chain = [Message.system("You fix bugs."), Message.human("Find the failing module.")]
    for i in range(30):
        chain += _result(f"c{i}", f"module_{i} lives in pkg/mod_{i}.py\n" + "x " * 2000)
    compactor = Compactor(budget=Budget.bytes(48 * 1024))
    result = await compactor.run(chain)
    assert result.compacted
    text = "\n".join(message_text(m) for m in result.messages)
    gone = [i for i in range(30) if f"x x module_{i} " not in text and f"pkg/mod_{i}.py" in text]
    assert gone  # evicted turns whose file the facts still name
    assert sum(m.size for m in result.messages) <= 48 * 1024


def _turns(chain: list[Message]) -> list[list[Message]]:
    steps: list[list[Message]] = []
    current: list[Message] = []
    for message in chain:
        if message.role is Role.AI and current:
            steps.append(current)
            current = []
        current.append(message)
    steps.append(current)
    return steps


@pytest.mark.skipif(find_corpus() is None, reason="the shared corpus (../shared/corpus) is missing")
@pytest.mark.anyio
async def test_with_an_archive_every_evicted_fact_is_found_by_recall(tmp_path: Path) -> None:
    """Replayed at the defaults with an archive: at each turn, every fact the agent
    reuses (benchmarks/policies/needed.py) that the chain sent no longer holds is found
    by a ``recall`` query for it."""
    corpus = find_corpus()
    assert corpus is not None
    chains = [c for c in load_folder(corpus, CLAUDE_CODE_FOLDER) if 20 < len(c.messages) < 80]
    checked = 0
    for chain in chains[:3]:
        archive = HistoryArchive(SQLiteArchiveStore(tmp_path / f"{chain.name}.sqlite"), session="t")
        try:
            compactor = Compactor(budget=Budget.bytes(32 * 1024), stores=Stores(archive=archive))
            tool = RecallTool(archive)
            facts = {t.index: t.facts for t in needed_facts(chain.messages)}
            history: list[Message] = []
            at = 0
            for step in _turns(chain.messages):
                at += len(step)
                out = (await compactor.run([*history, *step])).messages
                sent = "\n".join(message_text(m) for m in out)
                for fact in facts.get(at, ()):
                    if occurs(sent, fact.token):
                        continue
                    answer = await tool({"query": fact.token})
                    assert fact.token in answer, (chain.name, at, fact.token, answer[:200])
                    checked += 1
                history = out
        finally:
            await archive.aclose()
    assert checked > 20
