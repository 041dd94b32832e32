"""What an agent loop pays for its input, with prompt caching, from the payloads it sent.

A replay sends one payload (a list of messages) at every model call. :class:`CacheMeter`
takes them in order and prices each against the one before it, in three styles:

* **Anthropic, prefix** — the cached part of a request is the longest common prefix of
  it and the previous request, compared message by message and, inside the first
  message that differs, content block by content block (a changed block ends it).
  Cached tokens are read at ``cache_read`` (0.1x the base input price), the rest is
  written to the cache at ``cache_write`` (1.25x, the 5-minute TTL): the client marks
  the last message of every request as a cache breakpoint, so all of it is written.
  A request under ``min_cached_tokens`` (1,024) is neither read nor written (1x).
* **Anthropic, strict blocks** — a hit only at a cache breakpoint the previous request
  set, as Claude Code and the Anthropic SDK examples place them: the end of the system
  prompt and the end of the previous request's last message. A changed block before a
  breakpoint invalidates it and everything after it, so a request whose prefix is not
  the whole previous request reads at most its system prompt.
* **OpenAI** — automatic caching of the common prefix for prompts of 1,024 tokens and
  more, hits in 128-token increments (``increment``), cached tokens at ``cache_read``
  (0.1x for the gpt-5 family), no write premium.

Tokens are UTF-8 bytes / 4 (``BYTES_PER_TOKEN``); no tokenizer is used. Only the
input side is priced, plus the summarizer's calls: the agent's own answers (output
tokens) are the same messages for every policy of a replay, so they cancel out of every
comparison. A summarizer call is priced as a fresh (uncached) prompt at the base input
price and its summary at ``output`` times it, at the main model's rate or at a model
``CHEAP_SUMMARIZER`` times cheaper; or, for a policy whose handler sends it as a
continuation of the conversation (:meth:`CacheMeter.continuation`, issue 36), as one
more request of the conversation: its prefix read from the cache, the instruction
the handler sends after it (measured on the requests:
:class:`benchmarks.policies.policy.MeteredHandler`) and what is new written, the
summary at the main model's output price (a cache is per model). Costs are in
millions of base input tokens of the main model (multiply by its price per million
tokens for dollars).

Sources of the ratios (checked 2026-11-26; cited in docs/cost.md):
Anthropic pricing https://platform.claude.com/docs/en/about-claude/pricing and prompt
caching https://platform.claude.com/docs/en/build-with-claude/prompt-caching (5-minute
write 1.25x, read 0.1x, up to 4 breakpoints, 1,024-token minimum for Sonnet / Opus;
Sonnet 4.x $3 input / $15 output per MTok: output 5x); OpenAI prompt caching
https://platform.openai.com/docs/guides/prompt-caching (automatic from 1,024 tokens,
128-token increments) and pricing https://platform.openai.com/docs/pricing (gpt-5
$1.25 input / $0.125 cached / $10 output per MTok: cached 0.1x, output 8x; gpt-4.1
$2.00 / $0.50 / $8.00: cached 0.25x).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from cast import Message, Role

__all__ = [
    "ANTHROPIC",
    "ANTHROPIC_STRICT",
    "BYTES_PER_TOKEN",
    "CHEAP_SUMMARIZER",
    "OPENAI",
    "OPENAI_GPT41",
    "STYLES",
    "CacheMeter",
    "Pricing",
    "cache_read_tokens",
    "common_prefix_bytes",
    "request_cost",
    "starts_with",
]

BYTES_PER_TOKEN = 4
CHEAP_SUMMARIZER = 5.0
"""How many times cheaper the second summarizer model is (input and output)."""


@dataclass(frozen=True, slots=True)
class Pricing:
    """Price ratios of one provider style, relative to the base input token price."""

    name: str
    cache_read: float
    cache_write: float
    output: float
    """Output tokens' price / base input price (the summarizer's summary)."""
    min_cached_tokens: int = 1024
    increment: int = 1
    """Cached tokens come in multiples of this (OpenAI: 128)."""
    strict_blocks: bool = False
    """Hits only at the previous request's breakpoints (system prompt, its end)."""


ANTHROPIC = Pricing("Anthropic prefix", cache_read=0.1, cache_write=1.25, output=5.0)
ANTHROPIC_STRICT = Pricing(
    "Anthropic strict blocks", cache_read=0.1, cache_write=1.25, output=5.0, strict_blocks=True
)
OPENAI = Pricing("OpenAI gpt-5", cache_read=0.1, cache_write=1.0, output=8.0, increment=128)
OPENAI_GPT41 = Pricing(
    "OpenAI gpt-4.1", cache_read=0.25, cache_write=1.0, output=4.0, increment=128
)
STYLES: tuple[Pricing, ...] = (ANTHROPIC, ANTHROPIC_STRICT, OPENAI)
"""The styles every report prices (gpt-4.1 is available for a second OpenAI figure)."""


def _same(a: Message, b: Message) -> bool:
    return a is b or a == b


def starts_with(payload: Sequence[Message], previous: Sequence[Message]) -> bool:
    """Whether ``payload`` begins with every message of ``previous``, unchanged."""
    if len(payload) < len(previous):
        return False
    return all(_same(a, b) for a, b in zip(payload, previous, strict=False))


def common_prefix_bytes(previous: Sequence[Message], payload: Sequence[Message]) -> int:
    """Bytes of the longest common prefix of two payloads: whole equal messages, then
    the equal leading content blocks of the first message that differs (same role)."""
    size = 0
    for old, new in zip(previous, payload, strict=False):
        if _same(old, new):
            size += new.size
            continue
        if old.role is new.role:
            for a, b in zip(old.parts, new.parts, strict=False):
                if a != b:
                    break
                size += b.size
        break
    return size


def cache_read_tokens(total_tokens: float, prefix_tokens: float, pricing: Pricing) -> float:
    """Tokens of a request read from the cache, given its reusable prefix: none under
    the style's minimum, else the prefix rounded down to the style's increment."""
    if total_tokens < pricing.min_cached_tokens:
        return 0.0
    cached = min(prefix_tokens, total_tokens)
    if pricing.increment > 1:
        cached = (cached // pricing.increment) * pricing.increment
    return cached if cached >= pricing.min_cached_tokens else 0.0


def request_cost(total_tokens: float, prefix_tokens: float, pricing: Pricing) -> float:
    """Input cost of one request in base-input-token units: cached tokens at the read
    price, the rest at the write price (no write under the style's minimum)."""
    if total_tokens < pricing.min_cached_tokens:
        return total_tokens
    cached = cache_read_tokens(total_tokens, prefix_tokens, pricing)
    return pricing.cache_read * cached + pricing.cache_write * (total_tokens - cached)


def _strict_cached_bytes(previous: Sequence[Message], payload: Sequence[Message]) -> int:
    if previous and starts_with(payload, previous):
        return sum(m.size for m in previous)
    if previous and payload and payload[0].role is Role.SYSTEM and _same(previous[0], payload[0]):
        return payload[0].size
    return 0


@dataclass
class CacheMeter:
    """Prices every request of one session (a workload) against the one before it.

    ``add`` takes each payload in order with whether the policy reported a compaction
    (or any change) for it; ``summarizer`` adds a step's handler bytes.
    """

    styles: tuple[Pricing, ...] = STYLES
    requests: int = 0
    input_tokens: float = 0.0
    cached_tokens: dict[str, float] = field(default_factory=dict)
    """Style -> tokens read from the cache (after the style's minimum and increments)."""
    input_cost: dict[str, float] = field(default_factory=dict)
    prefix_stable: int = 0
    """Requests that start with the whole previous request unchanged."""
    unstable_without_compaction: int = 0
    """Requests the policy reported unchanged that still change the previous payload."""
    summarizer_input_tokens: float = 0.0
    summarizer_output_tokens: float = 0.0
    continuation_cost: dict[str, float] = field(default_factory=dict)
    """Style -> input cost of summary calls sent as a continuation of the cached prefix."""
    continuation_input_tokens: float = 0.0
    continuation_output_tokens: float = 0.0
    _previous: list[Message] = field(default_factory=list)

    def add(self, payload: Sequence[Message], *, changed: bool) -> None:
        """Price one request (the first of a session has nothing cached)."""
        total = sum(m.size for m in payload) / BYTES_PER_TOKEN
        previous = self._previous
        prefix = common_prefix_bytes(previous, payload) / BYTES_PER_TOKEN
        strict = _strict_cached_bytes(previous, payload) / BYTES_PER_TOKEN
        if self.requests and starts_with(payload, previous):
            self.prefix_stable += 1
        elif self.requests and not changed:
            self.unstable_without_compaction += 1
        self.requests += 1
        self.input_tokens += total
        for style in self.styles:
            cached = strict if style.strict_blocks else prefix
            cost = request_cost(total, cached, style)
            read = cache_read_tokens(total, cached, style)
            self.cached_tokens[style.name] = self.cached_tokens.get(style.name, 0.0) + read
            self.input_cost[style.name] = self.input_cost.get(style.name, 0.0) + cost
        self._previous = list(payload)

    def summarizer(self, input_bytes: int, output_bytes: int) -> None:
        """Add a step's summarizer traffic (prompt and summary bytes)."""
        self.summarizer_input_tokens += input_bytes / BYTES_PER_TOKEN
        self.summarizer_output_tokens += output_bytes / BYTES_PER_TOKEN

    def continuation(
        self,
        history: Sequence[Message],
        calls: int,
        output_bytes: int,
        instruction_bytes: int,
    ) -> None:
        """Add summary calls sent as a continuation of the conversation (call before
        :meth:`add` of the turn's payload): each is ``history`` (the chain the policy was
        given, which starts with the previous request) and an instruction of
        ``instruction_bytes`` (what the continuation handler sends after it), priced like a
        request against the previous one, so its prefix is read from the cache; the
        summary is output of the main model (a cache is per model: no cheaper rate)."""
        if calls <= 0:
            return
        total_bytes = sum(m.size for m in history) + instruction_bytes
        total = total_bytes / BYTES_PER_TOKEN
        previous = self._previous
        prefix = common_prefix_bytes(previous, history) / BYTES_PER_TOKEN
        strict = _strict_cached_bytes(previous, history) / BYTES_PER_TOKEN
        for style in self.styles:
            cached = strict if style.strict_blocks else prefix
            cost = calls * request_cost(total, cached, style)
            self.continuation_cost[style.name] = self.continuation_cost.get(style.name, 0.0) + cost
        self.continuation_input_tokens += calls * total
        self.continuation_output_tokens += output_bytes / BYTES_PER_TOKEN

    def new_session(self) -> None:
        """Forget the previous request (a new workload starts cold)."""
        self._previous = []

    def summarizer_cost(self, style: Pricing, *, cheap: bool = False) -> float:
        """The summarizer's calls at the main model's rate, or ``CHEAP_SUMMARIZER``
        times cheaper."""
        cost = self.summarizer_input_tokens + style.output * self.summarizer_output_tokens
        fresh = cost / CHEAP_SUMMARIZER if cheap else cost
        continued = self.continuation_cost.get(style.name, 0.0)
        return fresh + continued + style.output * self.continuation_output_tokens

    def total_cost(self, style: Pricing, *, cheap: bool = False) -> float:
        """Input side of every request plus the summarizer, base-input-token units."""
        return self.input_cost.get(style.name, 0.0) + self.summarizer_cost(style, cheap=cheap)

    def cached_share(self, style: Pricing) -> float:
        """Share of all input tokens read from the cache."""
        return (
            self.cached_tokens.get(style.name, 0.0) / self.input_tokens
            if self.input_tokens
            else 0.0
        )

    def merge(self, other: CacheMeter) -> None:
        """Add another session's figures (same styles) into this one."""
        self.requests += other.requests
        self.input_tokens += other.input_tokens
        self.prefix_stable += other.prefix_stable
        self.unstable_without_compaction += other.unstable_without_compaction
        self.summarizer_input_tokens += other.summarizer_input_tokens
        self.summarizer_output_tokens += other.summarizer_output_tokens
        self.continuation_input_tokens += other.continuation_input_tokens
        self.continuation_output_tokens += other.continuation_output_tokens
        for mine, theirs in (
            (self.cached_tokens, other.cached_tokens),
            (self.input_cost, other.input_cost),
            (self.continuation_cost, other.continuation_cost),
        ):
            for name, value in theirs.items():
                mine[name] = mine.get(name, 0.0) + value
