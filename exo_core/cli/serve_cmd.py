"""``exo serve``: run exod (Unix socket; ``--tcp HOST:PORT``; ``--stdio``)."""

from __future__ import annotations

import argparse
import logging
from typing import TYPE_CHECKING, Any

from exo_core.cli.args import add_command, home_of

if TYPE_CHECKING:
    from pathlib import Path

    from exo_core.ledger import LedgerRecorder
    from exo_core.seams.home import ExoHome


def register(sub: argparse._SubParsersAction) -> None:
    """Add ``exo serve``."""
    parser = add_command(sub, "serve", _serve, "run the core daemon exod", home=True)
    parser.add_argument("--store", default=None, help="store folder (default from config.toml)")
    parser.add_argument("--tcp", default=None, metavar="HOST:PORT", help="also listen on TCP (bearer token required)")
    parser.add_argument("--stdio", action="store_true", help="serve JSON lines on stdin/stdout")
    parser.add_argument("--no-unix", action="store_true", help="do not listen on the Unix socket")
    parser.add_argument("--model", default=None, help="model spec: local | none | scripted:PATH (default from config)")
    parser.add_argument(
        "--summarizer",
        default=None,
        help="model spec for history summaries (default: [context] summarizer, else the main model)",
    )
    parser.add_argument("--workspace", default=None, help="folder the file and shell tools work in (default: cwd)")
    parser.add_argument("--allow-host", action="append", default=[], help="extra Host name accepted on TCP")
    parser.add_argument("--keepalive", type=float, default=15.0, help=argparse.SUPPRESS)
    parser.add_argument(
        "--tcp-max-connections", type=int, default=256, metavar="N", help="open TCP connections at most (all sources)"
    )
    parser.add_argument(
        "--tcp-max-per-address", type=int, default=32, metavar="N", help="open TCP connections at most per source"
    )
    parser.add_argument(
        "--tcp-header-timeout",
        type=float,
        default=10.0,
        metavar="S",
        help="close a TCP connection that sends no complete request within S seconds",
    )
    parser.add_argument(
        "--tcp-body-timeout", type=float, default=30.0, metavar="S", help="a request body must arrive within S seconds"
    )
    parser.add_argument(
        "--durability",
        choices=("full", "normal"),
        default="full",
        help="fsync every event commit (full, default) or only checkpoint (normal)",
    )
    parser.add_argument(
        "--warm-delay",
        type=float,
        default=10.0,
        metavar="S",
        help="read the prompt's fixed head into the model S seconds after start (negative: never)",
    )
    parser.add_argument("--log-level", default="INFO")


def _serve(args: argparse.Namespace) -> int:
    from exo_core.heap import one_malloc_arena

    one_malloc_arena()  # before any thread starts: idle exod's budget (exo_core/heap.py)
    import asyncio
    import logging
    import sys
    from pathlib import Path

    from exo_core.context.summarizer import resolve_summarizer
    from exo_core.daemon import run_daemon
    from exo_core.decisions.setup import DecisionSettings, ToolsetNarrowing, build_decider
    from exo_core.engine.core import CoreOptions
    from exo_core.engine.models import model_spec, resolve_model
    from exo_core.gate.policy_file import record_found_change
    from exo_core.ledger import HomeWitness, LedgerRecorder, load_signing_key
    from exo_core.retrieval.memory import open_store_memory
    from exo_core.seams.recorder import NullRecorder
    from exo_core.server.limits import ConnectionLimits
    from exo_core.server.listeners import parse_hostport
    from exo_core.server.transports import TransportSettings
    from exo_core.tools import builtin_tools

    logging.basicConfig(
        level=args.log_level.upper(), stream=sys.stderr, format="%(asctime)s exod %(levelname)s %(name)s: %(message)s"
    )
    home = home_of(args)
    home.root.mkdir(parents=True, exist_ok=True)
    model = resolve_model(home, model_spec(home, args.model))
    store = home.store_path(args.store)
    ledger = None  # turns are recorded in the person's store's ledger, when there is a store
    if (store / "STORE.toml").is_file():
        # The home's witness signs every head exod commits, so a rolled-back store fails verify.
        ledger = LedgerRecorder.for_store(store, load_signing_key(home.keys_dir), witness=HomeWitness(home.root))
        # The policy exod runs under is in the ledger; one changed by hand since is recorded now.
        record_found_change(home.root, ledger.ledger)
    else:
        logging.getLogger("exo_core.serve").warning(
            "no store at %s: turns are not recorded in a ledger; run `exo init` to create one", store
        )
    recorder = ledger if ledger is not None else NullRecorder()
    memory = open_store_memory(home, args.store, log=ledger.record if ledger is not None else None)
    toolsets = None
    if DecisionSettings.from_config(home.config()).toolsets:  # [decisions] toolsets = true in config.toml
        decider = build_decider(home, store=store, recorder=recorder, model=model)
        toolsets = ToolsetNarrowing(decider)
    options = CoreOptions(
        services=_learning_services(home, store, ledger) if ledger is not None else (),
        toolsets=toolsets,
        workspace=Path(args.workspace).resolve() if args.workspace else Path.cwd(),
        stores=(store,),
        synchronous=args.durability.upper(),
        summarizer=resolve_summarizer(home, args.summarizer),
        recorder=recorder,
        plugin_dirs=(home.root / "plugins",),
        entry_point_plugins=True,
    )
    if ledger is not None:  # facts the person states become beliefs in the store
        options.facts = _stated_facts(store)
        options.style = _enforced_taste(store)
    if memory is not None:  # the store's retrieval is the default memory provider and the recall tool
        options.memory, options.tools = memory, builtin_tools(memory)
    if args.warm_delay >= 0 and _laid_out_for_reuse(home):  # the model reads the fixed head before the first question
        options.services = (*options.services, _prefix_warmup(args.warm_delay))
    transports = TransportSettings(
        tcp=parse_hostport(args.tcp) if args.tcp else None,
        stdio=args.stdio,
        unix=not args.no_unix,
        allowed_hosts=tuple(args.allow_host),
        keepalive=args.keepalive,
        limits=ConnectionLimits(
            max_total=args.tcp_max_connections,
            max_per_address=args.tcp_max_per_address,
            header_timeout=args.tcp_header_timeout,
            body_timeout=args.tcp_body_timeout,
        ),
    )
    try:
        asyncio.run(run_daemon(home, model, transports, options, store=store))
    finally:
        if memory is not None:
            memory.close()
        if ledger is not None:
            ledger.close()
    return 0


def _laid_out_for_reuse(home: Any) -> bool:
    """Whether the prompt keeps a fixed head to read ahead (``[context] layout = "reuse"``, docs/context.md)."""
    from exo_core.context.config import ContextConfig

    return ContextConfig.from_config(home.config()).layout == "reuse"


def _prefix_warmup(delay: float) -> Any:
    """The service that has the model read the prompt's fixed head ahead (exo_core.agent.warmup)."""
    from exo_core.agent.warmup import PrefixWarmup

    return lambda core: PrefixWarmup(core.deps, delay=delay)


def _stated_facts(store: Path) -> Any:
    """The loop's facts seam over the store, asking through the core's question broker."""
    from exo_core.learning.facts import StatedFacts
    from exo_core.store import Store

    opened = Store.open(store)
    return lambda questions: StatedFacts(opened, questions)


def _enforced_taste(store: Path) -> Any:
    """The pack's enforced taste with a mechanical fix, applied to each reply (exo_core.learning.enforce)."""
    from exo_core.learning.enforce import TasteStyle
    from exo_core.store import Store

    return TasteStyle(Store.open(store))


def _learning_services(home: ExoHome, store: Path, ledger: LedgerRecorder) -> tuple[Any, ...]:
    """The learning reviewer over the store's ledger."""
    from exo_core.edge import open_proposal_queue, queue_drainer_service
    from exo_core.learning.learner import Learner
    from exo_core.learning.service import LearningSettings, ReviewService
    from exo_core.store import Store

    queue = None
    drainer: tuple[Any, ...] = ()
    settings = LearningSettings.from_config(home.config())
    if settings.route:
        queue = open_proposal_queue(home.root / "learning" / "queue.sqlite")  # the edge holds the queue
        drainer = (queue_drainer_service(home, store, settings),)  # exod drains the queue to the larger model
    learner = Learner(Store.open(store), ledger.ledger, queue=queue)
    return (lambda core: ReviewService(core.hub, learner, core.questions), _chat_signals(home, store, ledger), *drainer)


def _chat_signals(home: ExoHome, store: Path, ledger: LedgerRecorder) -> Any:
    """Drafts and person messages as learning signals, read by the signal decision.

    An abstaining decision goes to the larger model, the person or the proposal queue.
    The decider, its settler and the queue are made for the first message that needs a decision,
    not at start-up: an idle exod does not hold them (docs/benchmarks.md §2, "Idle exod").
    """
    from exo_core.edge import installed_edge
    from exo_core.learning.chat_signals import ChatSignals

    queued = installed_edge().proposal_queue is not None
    if not queued:
        logging.getLogger("exo_core.serve").warning(
            "no proposal queue (exo_edge is not installed): an unsure signal nobody settles is not kept"
        )

    def make(core: Any) -> ChatSignals:
        lazy = _LazySettler(home, store, ledger, core, queued=queued)

        async def decide(text: str, session: str, draft: str | None, draft_text: str | None) -> Any:
            return await lazy.settler().decide(text, session, draft, draft_text)

        return ChatSignals(core.hub, ledger, decide, closing=lazy.aclose)

    return make


class _LazySettler:
    """The signal decision's settler and its proposal queue, made for the first message that needs them."""

    def __init__(self, home: ExoHome, store: Path, ledger: LedgerRecorder, core: Any, *, queued: bool) -> None:
        self._home, self._store, self._ledger, self._core = home, store, ledger, core
        self._queued = queued
        self._settler: Any = None
        self._queue: Any = None

    def settler(self) -> Any:
        """The settler, made (with the decider and the queue) on the first call."""
        if self._settler is not None:
            return self._settler
        from exo_core.decisions.setup import build_decider
        from exo_core.decisions.signal_escalation import build_signal_settler
        from exo_core.edge import open_proposal_queue

        decider = build_decider(self._home, store=self._store, recorder=self._ledger, model=self._core.model)
        queue = None
        if self._queued:  # the edge holds the queue
            queue = open_proposal_queue(self._home.root / "learning" / "queue.sqlite")
        try:
            self._settler = build_signal_settler(self._home, decider, queue=queue, asker=self._core.questions)
        except BaseException:
            if queue is not None:
                queue.close()
            raise
        self._queue = queue
        return self._settler

    async def aclose(self) -> None:
        """Close what was made; nothing when no message needed a decision."""
        if self._settler is None:
            return
        await self._settler.aclose()
        if self._queue is not None:
            self._queue.close()
