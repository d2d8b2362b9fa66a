"""The edge's implementations of the core's seams, handed over as one :class:`~exo_core.seams.edge.EdgeKit`.

The core finds this module by name (:data:`exo_core.edge.EDGE_MODULE`) and never imports the edge
itself (docs/architecture.md, "Layers"). Importing this module imports nothing heavy: each part
imports its runtime when first called, so ``exo --help`` stays fast on a small board.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from exo_core.seams.edge import EdgeKit, HostedFactory, LocalFactory
from exo_core.seams.embedding import DenseIndex

if TYPE_CHECKING:
    from exo_core.seams.decision import DecisionProvider
    from exo_core.seams.home import ExoHome
    from exo_core.seams.model import Timeouts
    from exo_edge.embedder import OnnxEmbedder
    from exo_edge.proposal_queue import ProposalQueue

__all__ = ["edge_kit"]


def _local_factory(home: ExoHome) -> LocalFactory:
    from exo_edge.local import local_factory

    return local_factory(home)


def _hosted(timeouts: Timeouts) -> HostedFactory:
    from exo_edge.hosted import HostedTransports

    return HostedTransports(timeouts)


def _dense(index_dir: Path, home: ExoHome | None) -> DenseIndex | None:
    """The vector index over the int8 embedder; ``None`` when onnxruntime, tokenizers or the files are absent."""
    from exo_core.seams.embedding import VECTOR_FILE

    try:
        from exo_edge.embedder import OnnxEmbedder
        from exo_edge.vectors import VectorIndex
    except ImportError:
        return None
    embedder = OnnxEmbedder.from_home(home)
    if embedder is None:
        return None
    return VectorIndex(index_dir / VECTOR_FILE, embedder)


def _local_decider(home: ExoHome, *, name: str, transport: Any, timeout: float, model_file: str) -> DecisionProvider:
    from exo_edge.decide_local import local_decision_provider

    return local_decision_provider(home, name=name, transport=transport, timeout=timeout, model_file=model_file)


def _embedder(home: ExoHome | None) -> OnnxEmbedder | None:
    """The int8 sentence embedder; ``None`` when onnxruntime, tokenizers or the model files are absent."""
    from exo_edge.embedder import OnnxEmbedder

    return OnnxEmbedder.from_home(home)


def _proposal_queue(path: Path) -> ProposalQueue:
    from exo_edge.proposal_queue import ProposalQueue

    return ProposalQueue(path)


async def _drain(*args: Any, **kwargs: Any) -> Any:
    from exo_edge.proposal_queue import drain

    return await drain(*args, **kwargs)


def _queue_drainer(home: ExoHome, store: Path, settings: Any) -> Any:
    from exo_edge.queue_drainer import drainer_service

    return drainer_service(home, store, settings)


def _footprint(argv: list[str]) -> int:
    from exo_edge.footprint import main

    return int(main(argv))


def _retrieval_bench(home: ExoHome, *, locomo: Path | None, longmemeval: Path | None, which: str) -> dict[str, Any]:
    from exo_edge.retrieval_eval import run_benchmarks

    return run_benchmarks(home, locomo=locomo, longmemeval=longmemeval, which=which)


def edge_kit() -> EdgeKit:
    """Every seam this package implements."""
    return EdgeKit(
        local_factory=_local_factory,
        hosted=_hosted,
        dense=_dense,
        local_decider=_local_decider,
        embedder=_embedder,
        proposal_queue=_proposal_queue,
        drain=_drain,
        queue_drainer=_queue_drainer,
        commands=("exo_edge.models_cmd",),
        footprint=_footprint,
        retrieval_bench=_retrieval_bench,
    )
