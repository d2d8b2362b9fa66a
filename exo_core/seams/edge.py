"""The edge kit: the implementations of the core's seams that the edge package hands over as one value.

``exo_edge`` builds an :class:`EdgeKit` (``exo_edge/kit.py``); the core takes it from
:func:`exo_core.edge.installed_edge` and never imports the edge package (docs/architecture.md, "Layers").
Each field left ``None`` is a part this core runs without (BM25-only retrieval, no local model, no hosted
routes), each failing with a clear reason where it is needed.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from exo_core.seams.decision import DecisionProvider
from exo_core.seams.embedding import DenseIndex, TextEmbedder
from exo_core.seams.home import ExoHome
from exo_core.seams.model import ModelTransport, Timeouts

__all__ = ["LocalFactory", "HostedFactory", "ProposalStore", "LocalDecider", "EdgeKit"]


# Makes the transport of a local route from its model name (exo_edge provides one).
LocalFactory = Callable[[str], ModelTransport]


class HostedFactory(Protocol):
    """Makes hosted-provider transports and closes what they share (the edge's ``HostedTransports``)."""

    def transport(
        self,
        kind: str,
        *,
        base_url: str,
        model: str,
        api_key: str | None,
        provider: str,
        judge_calls: bool = False,
        tls_cert: str = "",
        serial: bool = False,
    ) -> ModelTransport:
        """The transport of one route and credential of a provider of ``kind``.

        ``judge_calls``: the provider's ``judge_calls`` setting (the core's judge rules on its tool calls);
        ``tls_cert``: the PEM certificate its TLS must present ("": the system's CAs); ``serial``: one
        request at a time to this engine from the whole process, a person's request first.
        """
        ...

    async def aclose(self) -> None:
        """Close what the transports share (an HTTP session)."""
        ...


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
