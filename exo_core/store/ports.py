"""The narrow view of the ledger that the store needs.

The store does not import :mod:`exo_core.ledger` at module level: it codes
against these protocols, which the real ``Ledger`` satisfies (``append`` with
``refs``/``scope``/``idem`` keywords returning an entry with an ``id``;
``entries`` filtered by kind and scope). Tests and tools may pass any object
of the same shape.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any, Protocol

__all__ = ["EntryLike", "LedgerWriter", "LedgerReader", "LedgerLike"]


class EntryLike(Protocol):
    """What the store reads from a stored ledger entry."""

    @property
    def id(self) -> str: ...

    @property
    def kind(self) -> str: ...

    @property
    def scope(self) -> str: ...

    @property
    def body(self) -> dict[str, Any]: ...


class LedgerWriter(Protocol):
    """Appends signed entries; ``idem`` makes a retried append a no-op."""

    def append(
        self,
        kind: str,
        body: Mapping[str, Any],
        *,
        refs: Sequence[str] = (),
        scope: str | None = None,
        idem: str | None = None,
    ) -> EntryLike: ...


class LedgerReader(Protocol):
    """Reads entries in arrival order."""

    def entries(self, *, kind: str | None = None, scope: str | None = None) -> Iterator[EntryLike]: ...


class LedgerLike(LedgerWriter, LedgerReader, Protocol):
    """Both halves: what items and importers use."""
