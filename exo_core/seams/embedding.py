"""The embedding seams: a sentence embedder and the dense index built on it (the edge implements both).

The core ranks with BM25 alone when it has neither (docs/retrieval.md); the edge's ``OnnxEmbedder`` and
``VectorIndex`` implement them on a small board.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    import numpy as np

__all__ = ["VECTOR_FILE", "TextEmbedder", "IdentifiedEmbedder", "DenseSync", "DenseIndex"]

# The dense index's file in a store's ``indexes/`` folder (derived; deleted and rebuilt at will).
VECTOR_FILE = "vectors.sqlite"


class TextEmbedder(Protocol):
    """Unit sentence vectors (the edge's ``OnnxEmbedder``): one row per text."""

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """A ``(len(texts), dims)`` float matrix of unit rows."""
        ...


class IdentifiedEmbedder(TextEmbedder, Protocol):
    """An embedder that names its model and width, so a stored vector can be checked against it."""

    dims: int

    @property
    def model_id(self) -> str: ...


class DenseSync(Protocol):
    """What one :meth:`DenseIndex.sync` did, as far as the pipeline cares."""

    @property
    def pending(self) -> int:
        """Documents left to embed at the next refresh (``max_new`` was reached)."""
        ...


class DenseIndex(Protocol):
    """The embedding side of retrieval (the edge's ``VectorIndex`` implements it)."""

    def sync(
        self, docs: Iterable[tuple[str, str, str]], *, prune: bool = True, max_new: int | None = None
    ) -> DenseSync: ...

    def search(self, query: str, limit: int) -> list[tuple[str, float]]: ...

    def close(self) -> None: ...
