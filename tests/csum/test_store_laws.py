"""Laws of the summary cache and the history archive on any valid chain and config:
a cache never changes the output and a warm one calls the handler zero times; with an
archive the output keeps every summarizer invariant, stays idempotent, and every
message summarized away can be recalled through the references the summaries carry."""

from __future__ import annotations

import tempfile
from pathlib import Path

import anyio
from hypothesis import given

from archive_recall import recall_all
from cast import Message, Role
from csum import HistoryArchive, Stores, Summarizer, SummarizerConfig, SummaryCache
from csum_builders import FakeHandler, check_output
from strategies import valid_chains
from tests.csum.test_agent_loop import CONFIGS


@given(chain=valid_chains(), config=CONFIGS)
def test_a_cache_never_changes_the_output(
    chain: list[Message], config: SummarizerConfig, anyio_backend: str
) -> None:
    async def check() -> None:
        plain = await Summarizer(config).summarize(FakeHandler(), chain)
        cached = Summarizer(config, stores=Stores(cache=SummaryCache()))
        first = await cached.summarize(FakeHandler(), chain)
        assert first.messages == plain.messages
        assert first.handler_calls + first.cache_hits == plain.handler_calls
        warm = FakeHandler()
        second = await cached.summarize(warm, chain)
        assert warm.calls == 0
        assert second.messages == plain.messages

    anyio.run(check, backend=anyio_backend)


@given(chain=valid_chains(), config=CONFIGS)
def test_the_archive_keeps_every_message_and_the_invariants(
    chain: list[Message], config: SummarizerConfig, anyio_backend: str
) -> None:
    async def check(folder: Path) -> None:
        archive = HistoryArchive(folder / "archive.sqlite", session="test")
        summarizer = Summarizer(config, stores=Stores(archive=archive))
        result = await summarizer.summarize(FakeHandler(), chain)
        check_output(chain, result.messages, config)
        kept = set(result.messages) | set(await recall_all(archive, result.messages))
        # QA without a human summary merges the folded questions into one message:
        # their parts are kept, in the chain.
        parts = {part for message in result.messages for part in message.parts}
        for message in chain:
            assert message in kept or (
                message.role is Role.HUMAN and all(p in parts for p in message.parts)
            )
        again = FakeHandler()
        second = await summarizer.summarize(again, result.messages)
        assert again.calls == 0
        assert second.messages == result.messages
        await archive.aclose()

    with tempfile.TemporaryDirectory() as folder:
        anyio.run(check, Path(folder), backend=anyio_backend)
