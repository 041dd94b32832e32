"""What one ``Compactor.compact`` call goes through: the csum modules it enters and how
often it parses the chain, on a real Claude Code session with every stage on
(clearing, a summary, the history archive with re-insertion, cache breakpoints).

Run: python -m benchmarks.compactor_trace [--corpus PATH]

Modules are counted by the files of the frames entered (``sys.setprofile``) while the
call runs; ``csum/handlers/`` and ``csum/stores/`` (the handler and the archive's store,
back ends a user may replace) are counted apart.
Parses are calls of ``cast.parse.parse_chain`` (what ``ChainAST.from_messages`` runs).
Not measured: time (see ``bench_csum`` and the policies benchmark).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from typing import Any
from unittest import mock

import anyio

import cast.parse
import csum
from benchmarks.policies.corpus import CLAUDE_CODE_FOLDER, find_corpus, load_folder
from cast import Message
from csum import Budget, Clearing, Compactor, HistoryArchive, Stores

__all__ = ["Trace", "trace_compact", "traced_compactor"]

CSUM = Path(csum.__file__ or "csum").resolve().parent
BACK_ENDS = (CSUM / "handlers", CSUM / "stores")
BUDGET = 32 * 1024


@dataclass(frozen=True, slots=True)
class Trace:
    """The csum modules one call entered (paths relative to csum/, in first-entry order),
    the back ends' modules apart, and the parses it ran."""

    modules: tuple[str, ...]
    back_end_modules: tuple[str, ...]
    reentries: int
    """Calls into compactor.py from another csum module (a stage calling back)."""
    parses: int
    compacted: bool
    summary_needed: bool
    cleared_results: int
    reinserted_bytes: int
    breakpoints: int


@contextmanager
def _recorded(entered: dict[str, None], reentries: list[int]) -> Iterator[None]:
    """Record the file of every Python frame called while the block runs, and count the
    calls into compactor.py from another csum module."""
    compactor = str(CSUM / "compactor.py")
    csum_root = str(CSUM)

    def profile(frame: FrameType, event: str, _arg: Any) -> None:
        if event != "call":
            return
        name = frame.f_code.co_filename
        entered.setdefault(name, None)
        caller = frame.f_back
        if name == compactor and caller is not None:
            source = caller.f_code.co_filename
            if source.startswith(csum_root) and source != compactor:
                reentries[0] += 1

    previous = sys.getprofile()
    sys.setprofile(profile)
    try:
        yield
    finally:
        sys.setprofile(previous)


def traced_compactor(folder: Path) -> Compactor:
    """A Compactor with every stage on, its archive in ``folder``."""
    archive = HistoryArchive(folder / "archive.sqlite", session="trace", reinsert_bytes=2000)
    return Compactor(
        budget=Budget(BUDGET),
        target="anthropic",
        clearing=Clearing(keep=3),
        stores=Stores(archive=archive),
        cache_breakpoints=True,
    )


async def trace_compact(
    compactor: Compactor, messages: list[Message], *, force: bool = True
) -> Trace:
    """Run one call of ``compactor`` on ``messages`` (forced: a compaction) and trace it."""
    entered: dict[str, None] = {}
    reentries = [0]
    importers = _importers()
    with mock.patch.object(cast.parse, "parse_chain", wraps=cast.parse.parse_chain) as counted:
        patched = [mock.patch(f"{name}.parse_chain", counted) for name in importers]
        for patch in patched:
            patch.start()
        try:
            with _recorded(entered, reentries):
                result = await compactor.run(messages, force=force)
        finally:
            for patch in patched:
                patch.stop()
    files = [Path(name).resolve() for name in entered if name.endswith(".py")]
    ours = [f for f in files if f.is_relative_to(CSUM)]
    back = [f for f in ours if any(f.is_relative_to(folder) for folder in BACK_ENDS)]
    modules = [str(f.relative_to(CSUM)) for f in ours if f not in back]
    marks = sum(
        1 for m in result.messages for p in m.parts if getattr(p, "kind", None) == "cache_control"
    )
    return Trace(
        tuple(modules),
        tuple(str(f.relative_to(CSUM)) for f in back),
        reentries[0],
        counted.call_count,
        result.compacted,
        result.summary_needed,
        result.cleared_results,
        result.reinserted_bytes,
        marks,
    )


def _importers() -> list[str]:
    """The loaded csum and cast modules that hold ``parse_chain`` under that name."""
    return [
        name
        for name, module in list(sys.modules.items())
        if (name.startswith(("csum", "cast")) and name != "cast.parse")
        and getattr(module, "parse_chain", None) is cast.parse.parse_chain
    ]


def session_chain(corpus: Path) -> list[Message]:
    """The largest main Claude Code session of the corpus (not a sub-agent's)."""
    chains = [c for c in load_folder(corpus, CLAUDE_CODE_FOLDER) if "sub_agent" not in c.name]
    return chains[-1].messages


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.compactor_trace")
    parser.add_argument("--corpus", type=Path, help="corpus folder (default ../shared/corpus)")
    args = parser.parse_args(argv)
    corpus = find_corpus(args.corpus)
    if corpus is None:
        print("corpus not found: nothing measured")
        return 1
    messages = session_chain(corpus)
    with tempfile.TemporaryDirectory() as folder:
        trace = anyio.run(trace_compact, traced_compactor(Path(folder)), messages)
    print(f"one forced compact of {len(messages)} messages at {BUDGET} bytes:")
    print(
        f"  compacted {trace.compacted}, summary {trace.summary_needed}, "
        f"cleared {trace.cleared_results}, re-inserted {trace.reinserted_bytes} B, "
        f"cache points {trace.breakpoints}"
    )
    back_ends = len(trace.back_end_modules)
    print(f"  csum modules entered: {len(trace.modules)} (back ends apart: {back_ends})")
    for name in trace.modules:
        print(f"    {name}")
    print(f"  calls into compactor.py from other csum modules: {trace.reentries}")
    print(f"  parses of the chain: {trace.parses}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
