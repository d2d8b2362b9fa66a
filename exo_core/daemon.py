"""exod: the core daemon, assembled. One core over the Unix socket, optionally TCP and stdio.

This module is exod's composition (docs/architecture.md, "Layers"): it opens the
:class:`~exo_core.engine.core.Core` on the home, serves the commands over the
person's store folder (taste rows for the web page, the onboarding interview:
:func:`~exo_core.engine.handlers.store_handlers`), and hands the engine and its
hub to the transports (:func:`~exo_core.server.transports.serve_transports`),
which know nothing of how the core was built. ``exo serve``
(:mod:`exo_core.cli.serve_cmd`) builds the core's options and calls
:func:`run_daemon`.

Shutdown on SIGTERM or SIGINT: listeners stop, running turns are interrupted
(their partial text kept), pending events are flushed, the database closed.
A SIGKILL loses nothing that was acknowledged: every event is committed before
it is sent, and ``session.resume`` repairs the half-finished turn.

While a sync conflict is open in the store, every screen gets a ``notice``
naming it and the ``exo store resolve`` command (:class:`~exo_core.store.conflicts.ConflictWatch`).

``taste.list``/``taste.edit`` are served over the store's taste nodes when a
store is configured, and ``store.onboard`` runs the onboarding interview
(:mod:`exo_core.store.onboard`).
"""

from __future__ import annotations

import asyncio
import logging
import signal
from pathlib import Path
from typing import TYPE_CHECKING

from exo_core.bootstrap import refresh_abilities_note
from exo_core.engine.core import Core, CoreOptions
from exo_core.engine.handlers import store_handlers
from exo_core.engine.onboarding import Onboarding
from exo_core.errors import ExoError
from exo_core.learning.service import ReviewService
from exo_core.protocol.events import Notice
from exo_core.seams.home import ExoHome
from exo_core.seams.model import ModelTransport
from exo_core.server.transports import TransportSettings, serve_transports
from exo_core.store.conflicts import ConflictWatch

if TYPE_CHECKING:
    from exo_core.learning.learner import Learner

__all__ = ["run_daemon"]

log = logging.getLogger(__name__)


async def run_daemon(
    home: ExoHome,
    model: ModelTransport,
    transports: TransportSettings,
    options: CoreOptions | None = None,
    *,
    store: Path | None = None,
    ready: asyncio.Event | None = None,
) -> None:
    """Run exod until SIGTERM/SIGINT (or stdin closes in stdio-only mode).

    ``store`` is the person's store folder (the home's configured one when None);
    ``ready`` is set once every listener accepts connections.
    """
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    from exo_core.web import TasteRows

    async with Core.open(home, model=model, options=options) as core:
        store_root = store or home.store_path()
        await _refresh_abilities(home, store_root, core)
        learner = _learner(core)
        taste = TasteRows(store_root, core.hub, core.options.recorder, learner)
        onboarding = Onboarding(store_root, core)
        core.engine.serve(store_handlers(taste, onboarding))
        watch = asyncio.create_task(_watch_conflicts(store_root, core))
        try:
            await serve_transports(
                core.engine,
                core.hub,
                home,
                transports,
                stop=stop,
                store_root=store_root,
                ready=ready,
                closing=(onboarding.aclose,),  # a running interview stops before the streams and listeners do
            )
        finally:
            watch.cancel()
            await asyncio.gather(watch, return_exceptions=True)


async def _watch_conflicts(store_root: Path, core: Core) -> None:
    """A notice on every screen while a sync conflict is open in the store (exo_core/store/conflicts.py)."""

    async def tell(text: str) -> None:
        await core.hub.emit(None, "notice", Notice(text=text, level="warning"))

    await ConflictWatch(store_root, tell).run()


async def _refresh_abilities(home: ExoHome, store_root: Path, core: Core) -> None:
    """The store's note of what this Exo can do, from the tools this core offers (plugins' included).

    Before the listeners start, so the first question about Exo reads it (exo_core/store/abilities.py).
    """
    if not (store_root / "STORE.toml").is_file():
        return
    specs = core.options.tools.specs()
    try:
        done = await asyncio.to_thread(refresh_abilities_note, home, store_root, specs)
    except ExoError as exc:  # exod serves without it; the note is an answer's help, not a dependency
        log.warning("could not write the note of what this Exo can do: %s", exc.message)
        return
    log.info("%s", done)


def _learner(core: Core) -> Learner | None:
    """The learner of the core's review service, if it runs one (taste edits then teach it)."""
    for service in core.services:
        if isinstance(service, ReviewService):
            return service.learner
    return None
