"""The assembled core: sessions database, hub, turn runner and engine, as one resource.

``async with Core.open(home, model=...) as core:`` gives an engine that any
transport can serve. Everything the loop uses is injected here, with real
defaults; tests pass a scripted model through the same ``model`` argument a
provider would use.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from exo_core.agent.approvals import ApprovalBroker
from exo_core.agent.loop import LoopDeps, LoopSettings
from exo_core.agent.output import OutputLimits
from exo_core.agent.questions import AskPersonTool, QuestionBroker
from exo_core.agent.redaction import Redactor, SecretRedactor
from exo_core.agent.runner import TurnRunner
from exo_core.agent.seams import (
    ClosingContextEngine,
    ContextEngine,
    DraftStyle,
    FactTaker,
    Gate,
    MemoryProvider,
    NullMemory,
    StartingContextEngine,
    ToolsetChooser,
)
from exo_core.clock import Clock, SystemClock
from exo_core.context.config import ContextConfig
from exo_core.context.engine import SummaryTreeContext  # exo_core.engine.settings imports it anyway
from exo_core.engine.dispatch import Engine
from exo_core.engine.handlers import core_handlers
from exo_core.errors import ConfigError
from exo_core.events.hub import Hub
from exo_core.gate import ConsequenceGate, Policy
from exo_core.hooks import HookRegistry
from exo_core.ids import IdFactory, RandomIds
from exo_core.plugins import PluginHost
from exo_core.sandbox import ExodFiles, Sandbox
from exo_core.seams.home import ExoHome
from exo_core.seams.model import ModelTransport
from exo_core.seams.recorder import NullRecorder, Recorder
from exo_core.sessions.facade import AsyncSessions
from exo_core.sessions.session_store import SessionStore
from exo_core.sessions.worker import DbWorker
from exo_core.tools import ToolRegistry, builtin_tools
from exo_core.tools.snapshots import FileSnapshots

__all__ = ["Core", "CoreOptions"]


@dataclass(slots=True)
class CoreOptions:
    """Pluggable parts of the core; every field has a working default."""

    tools: ToolRegistry = field(default_factory=builtin_tools)
    # None: the consequence gate under the policy in $EXO_HOME/gate.toml (the default policy if absent).
    gate: Gate | None = None
    hooks: HookRegistry = field(default_factory=HookRegistry)
    # Plugin folders to load (exod passes $EXO_HOME/plugins) and whether to load `exo.plugins` entry points.
    plugin_dirs: tuple[Path, ...] = ()
    entry_point_plugins: bool = False
    memory: MemoryProvider = field(default_factory=NullMemory)
    # None: the summary-tree engine (exo_core.context), built over this core's
    # database and hub with ``summarizer`` (default: the core's model, aux role).
    context: ContextEngine | None = None
    summarizer: ModelTransport | None = None
    context_config: ContextConfig | None = None
    recorder: Recorder = field(default_factory=NullRecorder)
    clock: Clock = field(default_factory=SystemClock)
    ids: IdFactory = field(default_factory=RandomIds)
    settings: LoopSettings = field(default_factory=LoopSettings)
    workspace: Path = field(default_factory=Path.cwd)
    synchronous: str = "FULL"
    queue_limit: int = 1024
    # Background services started with the core and closed before it: each factory takes the Core and
    # returns an object with ``async start()`` and ``async aclose()`` (exod's learning reviewer is one).
    services: tuple[Callable[[Core], Any], ...] = ()
    # The toolset decision (exo_core.decisions); None offers every tool each turn.
    toolsets: ToolsetChooser | None = None
    # Store folders the file tools may not touch the private files of (default: the home's store).
    stores: tuple[Path, ...] = ()
    # None: redact the leak shapes and this home's own secrets (seed, token) from tool results.
    redactor: Redactor | None = None
    # None: the caps of config.toml's [output] table (the defaults when it has none).
    output: OutputLimits | None = None
    # Stated facts into the store (exo_core.learning.facts), built over this core's question broker.
    facts: Callable[[QuestionBroker], FactTaker] | None = None
    # The person's enforced taste applied to each reply (exo_core.learning.enforce); None: as written.
    style: DraftStyle | None = None
    # None: bubblewrap over this home, the stores and the workspace (exo_core.sandbox); tools' processes run in it.
    sandbox: Sandbox | None = None


class Core:
    """Owns the database thread, the hub and the runner; closes them in order."""

    def __init__(self, home: ExoHome, model: ModelTransport, options: CoreOptions) -> None:
        self.home = home
        self.model = model
        self.plugins: PluginHost | None = None
        self.services: list[Any] = []
        if options.plugin_dirs or options.entry_point_plugins:
            self.plugins = PluginHost.loaded(
                options.tools, options.hooks, options.plugin_dirs, entry_points=options.entry_point_plugins
            )
            options = self.plugins.apply(options)
        self.options = options
        self.worker = DbWorker(home.sessions_db, synchronous=options.synchronous)
        self.hub = Hub(self.worker, clock=options.clock, ids=options.ids, queue_limit=options.queue_limit)
        # Every sessions-store call of the agent and the engine goes through this facade, on the worker's thread.
        self.sessions = AsyncSessions(
            self.worker, store=SessionStore(self.worker, clock=options.clock, ids=options.ids)
        )
        self.approvals = ApprovalBroker(self.hub, self.sessions)
        self.questions = QuestionBroker(self.hub, options.ids, clock=options.clock)
        if options.tools.get("ask_person") is None:
            options.tools.add(AskPersonTool(self.questions))
        # The gate keeps the file tools away from this home's keys, token, sockets, policy and store ledgers.
        stores = options.stores or (_default_store(home),)
        gate = options.gate or ConsequenceGate(
            Policy.load(home.root / "gate.toml"),
            workspace=options.workspace,
            exo_home=home.root,
            stores=stores,
        )
        # What the gate lets through runs where exod's files are not: the sandbox hides the home and the stores'
        # private files from every tool process, and the file tools refuse them.
        sandbox = options.sandbox or Sandbox(ExodFiles.of(home.root, stores=stores, workspaces=(options.workspace,)))
        context_config = options.context_config or ContextConfig.from_config(home.config())
        self.context: ContextEngine = options.context or SummaryTreeContext(
            worker=self.worker,
            store=self.sessions.store,
            hub=self.hub,
            clock=options.clock,
            summarizer=options.summarizer or model,
            config=context_config,
        )
        self.deps = LoopDeps(
            hub=self.hub,
            sessions=self.sessions,
            model=model,
            tools=options.tools,
            approvals=self.approvals,
            gate=gate,
            memory=options.memory,
            context=self.context,
            recorder=options.recorder,
            hooks=options.hooks,
            clock=options.clock,
            settings=replace(options.settings, layout=context_config.layout),
            workspace=options.workspace,
            toolsets=options.toolsets,
            redactor=options.redactor or SecretRedactor.for_home(home.root),
            output=options.output or OutputLimits.from_config(home.config()),
            facts=options.facts(self.questions) if options.facts is not None else None,
            style=options.style,
            sandbox=sandbox,
            snapshots=FileSnapshots(home.snapshots_dir),
        )
        self.runner = TurnRunner(self.deps)
        self.engine = Engine(
            hub=self.hub,
            sessions=self.sessions,
            runner=self.runner,
            approvals=self.approvals,
            snapshots=self.deps.snapshots,
        )
        self.engine.serve(core_handlers(self))

    @classmethod
    def open(cls, home: ExoHome, *, model: ModelTransport, options: CoreOptions | None = None) -> Core:
        """A core for ``home``; use it as an async context manager."""
        return cls(home, model, options or CoreOptions())

    async def __aenter__(self) -> Core:
        self.home.root.mkdir(parents=True, exist_ok=True)
        await self.worker.__aenter__()
        await self.hub.start()
        # Optional engine capabilities (a plugin's engine may have neither): restart
        # summaries a crash left pending, and stop them before the database closes.
        if isinstance(self.context, StartingContextEngine):
            await self.context.start()
        self.services = [make(self) for make in self.options.services]
        for service in self.services:
            await service.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        for service in reversed(self.services):
            await service.aclose()
        await self.runner.close()
        if isinstance(self.context, ClosingContextEngine):
            await self.context.close()
        await self.hub.close()
        await self.worker.close()


def _default_store(home: ExoHome) -> Path:
    """The home's store folder; ``<home>/store`` when config.toml cannot say (exod reports that elsewhere)."""
    try:
        return home.store_path()
    except ConfigError:
        return home.root / "store"
