"""The edge seam: the implementations the core plugs in and never imports (docs/architecture.md, "Layers").

``exo_core`` defines the seams (a model transport, a dense index, a decision provider, the proposal
queue); ``exo_edge`` implements them for a small board (the local GGUF model, the int8 ONNX
embedder, the hosted-provider transports). The core never imports the edge package, and a test
(``tests/test_layers.py``) fails on any such import. The edge hands its implementations over as one
:class:`EdgeKit`, which the composition root (the ``exo`` command, :func:`exo_core.cli.main.main`)
takes from :func:`installed_edge` and which core functions accept as their keyword-only ``edge``
argument; each field left ``None`` is a part this core runs without (BM25-only retrieval, no local
model, no hosted routes), each failing with a clear reason where it is needed.

:func:`installed_edge` finds the installed edge by the module name in :data:`EDGE_MODULE` (the
``EXO_EDGE`` environment variable overrides it; ``EXO_EDGE=none`` runs the bare core). That module's
``edge_kit()`` builds the kit, and must import nothing heavy: each part imports its runtime when first
called (docs/architecture.md, "Small board first").
"""

from __future__ import annotations

import functools
import importlib
import os
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from exo_core.agent.model import ModelTransport

if TYPE_CHECKING:
    from exo_core.decisions.neighbours import TextEmbedder
    from exo_core.decisions.question import DecisionProvider
    from exo_core.home import ExoHome
    from exo_core.models.catalog import Timeouts

__all__ = [
    "LocalFactory",
    "HostedFactory",
    "DenseIndex",
    "DenseSync",
    "EdgeKit",
    "ProposalStore",
    "EDGE_MODULE",
    "installed_edge",
    "queue_drainer_service",
    "edge_or_installed",
    "open_proposal_queue",
]

# The edge package's kit module; the one place the core names it, as a setting rather than an import.
EDGE_MODULE = "exo_edge.kit"


# Makes the transport of a local route from its model name (exo_edge provides one).
LocalFactory = Callable[[str], ModelTransport]


class HostedFactory(Protocol):
    """Makes hosted-provider transports and closes what they share (the edge's ``HostedTransports``)."""

    def transport(
        self, kind: str, *, base_url: str, model: str, api_key: str | None, provider: str, judge_calls: bool = False
    ) -> ModelTransport:
        """The transport of one route and credential of a provider of ``kind``.

        ``judge_calls``: the provider's ``judge_calls`` setting (the core's judge rules on its tool calls).
        """
        ...

    async def aclose(self) -> None:
        """Close what the transports share (an HTTP session)."""
        ...


class DenseSync(Protocol):
    """What one :meth:`DenseIndex.sync` did, as far as the pipeline cares."""

    @property
    def pending(self) -> int:
        """Documents left to embed at the next refresh (``max_new`` was reached)."""
        ...


class DenseIndex(Protocol):
    """The embedding side (the edge's ``VectorIndex`` implements it)."""

    def sync(
        self, docs: Iterable[tuple[str, str, str]], *, prune: bool = True, max_new: int | None = None
    ) -> DenseSync: ...

    def search(self, query: str, limit: int) -> list[tuple[str, float]]: ...

    def close(self) -> None: ...


class ProposalStore(Protocol):
    """The durable proposal queue for a larger model (``exo_edge.proposal_queue.ProposalQueue``)."""

    def put(self, kind: str, inputs: dict[str, Any], *, key: str) -> bool:
        """Queue a job once per ``key``; ``False`` when it was already queued."""
        ...

    def counts(self) -> Mapping[str, int]:
        """Jobs by state."""
        ...

    def spent(self) -> float:
        """Dollars spent on drained jobs this month."""
        ...

    def close(self) -> None:
        """Close the queue's database."""
        ...


class LocalDecider(Protocol):
    """Makes the local decision model's provider (``exo_edge.decide_local.local_decision_provider``)."""

    def __call__(
        self, home: ExoHome, *, name: str, transport: Any, timeout: float, model_file: str
    ) -> DecisionProvider: ...


@dataclass(frozen=True, slots=True)
class EdgeKit:
    """The edge implementations of the core's seams; ``None`` where this core has none.

    ``local_factory(home)`` is the model router's ``local=`` factory; ``hosted(timeouts)`` makes the
    hosted-provider transports; ``dense(index_dir, home)`` opens the vector index (``None`` when the
    embedder's files are absent); ``local_decider`` makes the local decision model's provider;
    ``proposal_queue(path)`` opens the learning queue and ``drain`` sends its jobs to a larger model;
    ``queue_drainer(home, store, settings)`` is exod's service that drains it whenever the route answers;
    ``embedder(home)`` is the sentence embedder (``None`` when its runtime or files are absent), which picks
    a decision's worked examples for the message (docs/decisions.md §3); ``commands`` are the modules of
    the ``exo`` subcommands the edge adds (each has ``register``);
    ``footprint(argv)`` runs the footprint audit and ``retrieval_bench`` scores the retrieval benchmark
    (``exo bench footprint``, ``exo bench retrieval``).
    """

    local_factory: Callable[[ExoHome], LocalFactory] | None = None
    hosted: Callable[[Timeouts], HostedFactory] | None = None
    dense: Callable[[Path, ExoHome | None], DenseIndex | None] | None = None
    local_decider: LocalDecider | None = None
    embedder: Callable[[ExoHome | None], TextEmbedder | None] | None = None
    proposal_queue: Callable[[Path], ProposalStore] | None = None
    drain: Callable[..., Any] | None = None
    queue_drainer: Callable[..., Callable[[Any], Any]] | None = None
    commands: tuple[str, ...] = ()
    footprint: Callable[[list[str]], int] | None = None
    retrieval_bench: Callable[..., dict[str, Any]] | None = None


@functools.cache
def installed_edge() -> EdgeKit:
    """The installed edge's kit (found once per process), or an empty kit when there is none."""
    name = os.environ.get("EXO_EDGE", EDGE_MODULE)
    if name == "none":
        return EdgeKit()
    try:
        module = importlib.import_module(name)
    except ModuleNotFoundError as exc:
        if exc.name is None or not name.startswith(exc.name):
            raise  # the edge is there but something it needs is missing: say so rather than run without it
        return EdgeKit()
    kit = module.edge_kit()
    if not isinstance(kit, EdgeKit):
        raise TypeError(f"{name}.edge_kit() returned {type(kit).__name__}, not an EdgeKit")
    return kit


def edge_or_installed(edge: EdgeKit | None) -> EdgeKit:
    """``edge`` when the caller injected one, else the installed edge (a function's real default)."""
    if edge is not None:
        return edge
    return installed_edge()


def open_proposal_queue(path: Path, *, edge: EdgeKit | None = None) -> ProposalStore:
    """The learning queue at ``path`` (docs/learning.md); a :class:`ConfigError` when the edge has none."""
    from exo_core.errors import ConfigError

    open_queue = edge_or_installed(edge).proposal_queue
    if open_queue is None:
        raise ConfigError(
            "a [learning] route queues jobs in exo_edge's proposal queue, which is not installed in this core; "
            "install the edge extras or remove the route from config.toml"
        )
    return open_queue(path)


def queue_drainer_service(home: ExoHome, store: Path, settings: Any, *, edge: EdgeKit | None = None) -> Any:
    """exod's service factory that drains the learning queue to ``settings.route`` (docs/learning.md §10)."""
    from exo_core.errors import ConfigError

    make = edge_or_installed(edge).queue_drainer
    if make is None:
        raise ConfigError(
            "a [learning] route is drained by exo_edge's queue drainer, which is not installed in this core; "
            "install the edge extras or remove the route from config.toml"
        )
    return make(home, store, settings)
