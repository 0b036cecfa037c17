"""What model calls cost: list prices per million tokens, and a session's or a judge call's cost.

The table holds the public list prices of the model families the engines run by default;
eval-config `prices` adds or overrides any model (`{"my-model": {"input": 1.0, "output": 4.0}}`,
USD per million tokens). A model matches the longest family name it starts with. Cached input
is charged at a tenth of the input price and cache writes at 1.25 times it, as the providers
bill them; a CLI that reports its own cost (Claude Code) is taken at its word.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from aam_eval_action.session import Usage


@dataclass(frozen=True)
class Price:
    """USD per million tokens."""

    input: float
    output: float


LIST_PRICES: dict[str, Price] = {
    "claude-opus": Price(5.0, 25.0),
    "claude-sonnet": Price(3.0, 15.0),
    "claude-haiku": Price(1.0, 5.0),
    "gpt-5": Price(1.25, 10.0),
    "gpt-5-mini": Price(0.25, 2.0),
    "gpt-5-nano": Price(0.05, 0.4),
    "gpt-4.1": Price(2.0, 8.0),
    "o3": Price(2.0, 8.0),
    "o4-mini": Price(1.1, 4.4),
    "gemini-3-pro": Price(2.0, 12.0),
    "gemini-2.5-pro": Price(1.25, 10.0),
    "gemini-2.5-flash": Price(0.3, 2.5),
    "gemini-3-flash": Price(0.5, 3.0),
}
CACHE_READ = 0.1
CACHE_WRITE = 1.25


def price_of(model: str, overrides: Mapping[str, Price] | None = None) -> Price | None:
    """The model's price: eval-config's own first, else the longest family it belongs to."""
    if overrides and model in overrides:
        return overrides[model]
    families = {**LIST_PRICES, **(overrides or {})}
    found = [name for name in families if model.startswith(name)]
    return families[max(found, key=len)] if found else None


def tokens_cost(usage: Usage, price: Price, provider: str) -> float:
    """What these tokens cost. OpenAI counts cached input inside `input_tokens`; Anthropic and
    Google count it apart."""
    fresh = usage.input_tokens
    if provider == "openai":
        fresh = max(0, fresh - usage.cache_read_input_tokens)
    total = (fresh * price.input + usage.cache_read_input_tokens * price.input * CACHE_READ
             + usage.cache_creation_input_tokens * price.input * CACHE_WRITE
             + usage.output_tokens * price.output)
    return total / 1_000_000


def usage_of(counts: Mapping[str, int]) -> Usage:
    """A Usage from token counts as the APIs name them (summed traffic usage, a judge's usage)."""
    return Usage(
        input_tokens=int(counts.get("input_tokens", 0) or counts.get("prompt_token_count", 0)
                         or counts.get("promptTokenCount", 0)),
        output_tokens=int(counts.get("output_tokens", 0) or counts.get("candidates_token_count", 0)
                          or counts.get("candidatesTokenCount", 0)),
        cache_read_input_tokens=int(counts.get("cache_read_input_tokens", 0)
                                    or counts.get("cached_tokens", 0)),
        cache_creation_input_tokens=int(counts.get("cache_creation_input_tokens", 0)),
    )
