"""Retrieval (docs/retrieval.md): hybrid BM25 + embeddings, fused, filtered, graph-expanded, packed under a budget.

One concept per module:

* :mod:`.docs`     — :class:`Doc`: nodes, items and past turns as retrievable documents;
* :mod:`.lexical`  — :class:`DocIndex`: the document table and its weighted FTS5 BM25 index;
* :mod:`.rank`     — fusion of the two lists, priors, filters, graph expansion;
* :mod:`.pack`     — packing under a token budget with degrading forms;
* :mod:`.pipeline` — :class:`Retriever`: the stages in order, indexes as views;
* :mod:`.memory`   — :class:`StoreMemory`: the memory provider and ``recall`` backend.

The embedding side (int8 ONNX embedder, vector index) lives in ``exo_edge``;
without it the pipeline runs on BM25 alone.
"""

from exo_core.retrieval.docs import Doc
from exo_core.retrieval.lexical import DocIndex
from exo_core.retrieval.memory import StoreMemory
from exo_core.retrieval.pack import Block, Packed, estimate_tokens, pack
from exo_core.retrieval.pipeline import Recalled, RetrievalSettings, Retriever, open_dense
from exo_core.retrieval.rank import fuse

__all__ = [
    "Doc",
    "DocIndex",
    "StoreMemory",
    "Block",
    "Packed",
    "estimate_tokens",
    "pack",
    "Recalled",
    "RetrievalSettings",
    "Retriever",
    "open_dense",
    "fuse",
]
