"""Speed and memory of cast on a ~20,000-message, ~25 MB chain, as ratios to baselines
measured in the same run (best of N; these machines are noisy).

Run: python -m benchmarks.bench_cast [--messages 20000] [--megabytes 25] [--repeat 5]
"""

from __future__ import annotations

import argparse
import gc
import json
import tracemalloc

from benchmarks.chains import build_chain
from benchmarks.timing import best_of
from cast import ChainAST, Message
from cast.messages import MESSAGES_ADAPTER


def memory_ratio(messages: list[Message]) -> tuple[int, int]:
    """Bytes allocated by the messages alone, and by their AST on top of them."""
    dicts = [m.model_dump() for m in messages]
    gc.collect()
    tracemalloc.start()
    built = MESSAGES_ADAPTER.validate_python(dicts)
    messages_bytes, _ = tracemalloc.get_traced_memory()
    ast = ChainAST.from_messages(built)
    total_bytes, _ = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    del ast
    return messages_bytes, total_bytes


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--messages", type=int, default=20_000)
    parser.add_argument("--megabytes", type=float, default=25)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args(argv)

    messages = build_chain(args.messages, int(args.megabytes * 1_000_000))
    dicts = [m.model_dump() for m in messages]
    text = MESSAGES_ADAPTER.dump_json(messages).decode()
    ast = ChainAST.from_messages(messages)
    calls = sum(len(m.tool_calls) for m in messages)
    print(
        f"chain: {len(messages)} messages, {ast.size / 1e6:.1f} MB of content, "
        f"{len(text) / 1e6:.1f} MB of JSON, {len(ast.sections)} sections, {calls} tool calls"
    )

    rows: list[tuple[str, float, float, float]] = []

    t_validate = best_of(args.repeat, lambda: MESSAGES_ADAPTER.validate_python(dicts))
    t_parse = best_of(args.repeat, lambda: ChainAST.from_messages(messages))
    rows.append(("from_messages / pydantic validate_python", t_parse, t_validate, 0.4))

    t_loads = best_of(args.repeat, lambda: json.loads(text))
    t_json_ast = best_of(
        args.repeat, lambda: ChainAST.from_messages(MESSAGES_ADAPTER.validate_json(text))
    )
    rows.append(("JSON text -> ChainAST / json.loads", t_json_ast, t_loads, 3.0))

    t_normalize = best_of(args.repeat, lambda: ast.normalize_tool_call_ids("toolu_{r:24:b}"))
    rows.append(("normalize_tool_call_ids (all ids) / from_messages", t_normalize, t_parse, 1.0))

    print(f"\n{'measure':<52} {'ours':>9} {'baseline':>9} {'ratio':>7} {'goal':>6}")
    for name, ours, base, goal in rows:
        ratio = ours / base
        mark = "ok" if ratio <= goal else "MISS"
        print(
            f"{name:<52} {ours * 1e3:8.1f}ms {base * 1e3:8.1f}ms {ratio:7.2f} {goal:5.1f}x {mark}"
        )

    messages_bytes, total_bytes = memory_ratio(messages)
    ratio = total_bytes / messages_bytes
    mark = "ok" if ratio <= 1.1 else "MISS"
    print(
        f"{'memory: messages + AST / messages alone':<52} {total_bytes / 1e6:7.1f}MB "
        f"{messages_bytes / 1e6:7.1f}MB {ratio:7.3f} {1.1:5.1f}x {mark}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
