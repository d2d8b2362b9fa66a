"""Cost (docs/models.md §3): price usage from the catalog.

When a provider reports token usage without a cost, the router prices it from
the catalog's list prices: uncached input, cache reads and cache writes each at
their own rate (a missing cache rate falls back to the input rate), output at
the output rate. The session's running total is the sessions database's
(``usage.updated`` carries it as ``session_cost``).
"""

from __future__ import annotations

from dataclasses import replace

from exo_core.models.catalog import ModelPrice
from exo_core.seams.model import UsageChunk

__all__ = ["usage_cost", "priced"]

_PER = 1_000_000.0


def usage_cost(price: ModelPrice, usage: UsageChunk) -> float:
    """Dollars for ``usage`` at ``price`` (``input_tokens`` includes cache reads/writes)."""
    fresh = max(0, usage.input_tokens - usage.cache_read_tokens - usage.cache_write_tokens)
    read_rate = price.input if price.cache_read is None else price.cache_read
    write_rate = price.input if price.cache_write is None else price.cache_write
    return (
        fresh * price.input
        + usage.cache_read_tokens * read_rate
        + usage.cache_write_tokens * write_rate
        + usage.output_tokens * price.output
    ) / _PER


def priced(usage: UsageChunk, price: ModelPrice | None, model: str = "") -> UsageChunk:
    """``usage`` with its cost filled in from ``price`` when the provider gave none."""
    out = usage if usage.model or not model else replace(usage, model=model)
    return out if out.cost or price is None else replace(out, cost=usage_cost(price, out))
