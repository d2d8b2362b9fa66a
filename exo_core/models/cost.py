"""Cost (design paper §12.5): price usage from the catalog; running session totals.

When a provider reports token usage without a cost, the router prices it from
the catalog's list prices: uncached input, cache reads and cache writes each at
their own rate (a missing cache rate falls back to the input rate), output at
the output rate. :class:`CostMeter` keeps the running total per session that
``usage.updated`` events carry.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, replace

from exo_core.agent.model import UsageChunk
from exo_core.models.catalog import ModelPrice

__all__ = ["usage_cost", "priced", "SessionUsage", "CostMeter"]

_PER = 1_000_000.0


def usage_cost(price: ModelPrice, usage: UsageChunk) -> float:
    """Dollars for ``usage`` at ``price`` (``input_tokens`` includes cache reads/writes)."""
    cached = usage.cache_read_tokens + usage.cache_write_tokens
    fresh = max(0, usage.input_tokens - cached)
    read_rate = price.input if price.cache_read is None else price.cache_read
    write_rate = price.input if price.cache_write is None else price.cache_write
    return (fresh * price.input + usage.cache_read_tokens * read_rate
            + usage.cache_write_tokens * write_rate + usage.output_tokens * price.output) / _PER


def priced(usage: UsageChunk, price: ModelPrice | None, model: str = "") -> UsageChunk:
    """``usage`` with its cost filled in from ``price`` when the provider gave none."""
    out = usage if usage.model or not model else replace(usage, model=model)
    if out.cost or price is None:
        return out
    return replace(out, cost=usage_cost(price, out))


@dataclass(frozen=True, slots=True)
class SessionUsage:
    """Running totals for one session (what ``usage.updated`` reports)."""

    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    cost: float = 0.0
    calls: int = 0

    def to_wire(self) -> dict[str, float | int]:
        """The totals as a JSON-able dict."""
        return {"input_tokens": self.input_tokens, "output_tokens": self.output_tokens,
                "cache_read_tokens": self.cache_read_tokens,
                "cache_write_tokens": self.cache_write_tokens,
                "cost": round(self.cost, 8), "calls": self.calls}


class CostMeter:
    """Per-session running totals of priced usage. Thread-safe."""

    def __init__(self) -> None:
        self._totals: dict[str, SessionUsage] = {}
        self._lock = threading.Lock()

    def add(self, session: str, usage: UsageChunk) -> SessionUsage:
        """Add one call's usage to ``session`` and return the new total."""
        with self._lock:
            t = self._totals.get(session, SessionUsage())
            t = SessionUsage(t.input_tokens + usage.input_tokens,
                             t.output_tokens + usage.output_tokens,
                             t.cache_read_tokens + usage.cache_read_tokens,
                             t.cache_write_tokens + usage.cache_write_tokens,
                             t.cost + usage.cost, t.calls + 1)
            self._totals[session] = t
            return t

    def total(self, session: str) -> SessionUsage:
        """The running total of ``session`` (zero when unseen)."""
        with self._lock:
            return self._totals.get(session, SessionUsage())
