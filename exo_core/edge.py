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
from pathlib import Path
from typing import Any

from exo_core.seams.edge import EdgeKit, ProposalStore
from exo_core.seams.home import ExoHome

__all__ = [
    "EDGE_MODULE",
    "installed_edge",
    "queue_drainer_service",
    "edge_or_installed",
    "open_proposal_queue",
]

# The edge package's kit module; the one place the core names it, as a setting rather than an import.
EDGE_MODULE = "exo_edge.kit"


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
