"""The summary-tree context engine: a fresh, complete, bounded model input every turn (docs/context.md).

For each model call :meth:`SummaryTreeContext.build`:

1. *touches* the session: the stored tree is synced with the messages (a
   pending leaf for every full chunk of ``leaf_size`` older than the tail;
   nodes an undo invalidated are dropped), failed jobs with attempts left
   become pending, the session's unfinished import work moves to the live
   lane, and every pending job is queued;
2. *settles*: waits (injectable clock, default 60 s) until the session has no
   live job queued or running; merges queued meanwhile are waited for too;
3. builds the view (:mod:`~exo_core.context.tree`) and renders it
   (:mod:`~exo_core.context.view`);
4. if summaries finished since the session's last build, emits
   ``context.compacted`` with the input's estimated tokens without and with
   them.

A finished job checks the view's budget and, when it is exceeded, queues the
merge of the oldest sibling pair (:func:`~exo_core.context.tree.choose_merge`).
Jobs cut off by a crash or shutdown stay ``pending`` in the database and run
again on the next start, touch or ``session.resume``.
"""

from __future__ import annotations

import asyncio
import logging
from collections import OrderedDict
from collections.abc import Sequence
from typing import Any

from exo_core.agent.seams import HistoryView
from exo_core.clock import Clock, SystemClock, iso_utc
from exo_core.context import nodes as db
from exo_core.context.config import ContextConfig
from exo_core.context.lanes import Job, LaneSet
from exo_core.context.prompt import finish_summary, leaf_footer, leaf_request, merge_footer, merge_request
from exo_core.context.tree import NodeKey, Plan, SummaryNode, choose_merge, node_positions, plan_view
from exo_core.context.view import history_elements, input_tokens, render_view
from exo_core.context.window import fit_request
from exo_core.errors import ExoError
from exo_core.events.hub import Hub
from exo_core.protocol import events as ev
from exo_core.seams.model import ChatMessage, ModelRequest, ModelTransport, TextDelta, WindowedTransport
from exo_core.sessions.session_store import MessageRecord, SessionStore
from exo_core.sessions.worker import DbWorker

__all__ = ["SummaryTreeContext"]

log = logging.getLogger(__name__)

_REPORTED_SESSIONS = 256


class SummaryTreeContext:
    """The default context engine (a :class:`~exo_core.agent.seams.ContextEngine`)."""

    def __init__(
        self,
        *,
        worker: DbWorker,
        summarizer: ModelTransport,
        hub: Hub | None = None,
        store: SessionStore | None = None,
        clock: Clock | None = None,
        config: ContextConfig | None = None,
        import_summarizer: ModelTransport | None = None,
    ) -> None:
        self.config = config or ContextConfig()
        self._worker = worker
        self._store = store or SessionStore(worker)
        self._hub = hub
        self._clock = clock or SystemClock()
        # Both lanes may use one transport; a separate import transport lets a
        # larger machine take the bulk work.
        self._summarizers = {"live": summarizer, "import": import_summarizer or summarizer}
        cfg = self.config
        self.lanes = LaneSet(
            self._run_job,
            self._refill,
            live_limit=cfg.live_limit,
            import_limit=cfg.import_limit,
            live_queue_limit=cfg.live_queue_limit,
            import_queue_limit=cfg.import_queue_limit,
            import_yields=cfg.import_yields,
        )
        # Finished nodes already reported in a context.compacted event, per session (bounded LRU).
        self._reported: OrderedDict[str, frozenset[NodeKey]] = OrderedDict()
        self.settle_timeouts = 0

    # -- lifecycle ---------------------------------------------------------

    async def start(self) -> None:
        """Restart work left pending by a crash or shutdown (bounded: the lanes refill as they drain)."""
        self.lanes.kick("live")
        self.lanes.kick("import")

    async def close(self) -> None:
        """Stop the lanes; unfinished jobs stay pending in the database."""
        await self.lanes.close()

    async def on_resume(self, session_id: str) -> None:
        """``session.resume``: restart the session's pending and failed jobs."""
        await self.touch(session_id, await self._worker.run(lambda: self._store.messages(session_id)), live=False)

    def pause_import(self) -> None:
        """Start no new import summaries until :meth:`resume_import`."""
        self.lanes.pause("import")

    def resume_import(self) -> None:
        """Let import summaries run again."""
        self.lanes.resume("import")

    # -- the seam ----------------------------------------------------------

    async def build(self, session_id: str, system_prompt: str, messages: Sequence[MessageRecord]) -> list[ChatMessage]:
        """System prompt, history view and verbatim tail for one model call."""
        plan = await self._settled_plan(session_id, system_prompt, messages)
        return render_view(system_prompt, plan, messages, message_chars=self.config.message_chars)

    async def history_view(self, session_id: str, system_prompt: str, messages: Sequence[MessageRecord]) -> HistoryView:
        """The same view as :meth:`build`, in parts, for the loop to fit to the model's window."""
        plan = await self._settled_plan(session_id, system_prompt, messages)
        elements = history_elements(plan, messages, message_chars=self.config.message_chars)
        return HistoryView(elements=tuple(elements), tail_start=plan.tail_start)

    async def _settled_plan(self, session_id: str, system_prompt: str, messages: Sequence[MessageRecord]) -> Plan:
        """Touch, settle and plan one call's view; reports compaction."""
        before = await self.touch(session_id, messages, live=True)
        if not await self.lanes.wait_idle(session_id, self.config.settle_seconds, self._clock):
            # Proceed: the unfinished leaves appear verbatim; their jobs keep running.
            self.settle_timeouts += 1
            log.warning(
                "summaries of %s not settled after %.0fs; sending them verbatim", session_id, self.config.settle_seconds
            )
        nodes = await self._worker.run(lambda: db.load_nodes(self._worker.connection, session_id))
        plan = plan_view(nodes, messages, self.config)
        chat = render_view(system_prompt, plan, messages, message_chars=self.config.message_chars)
        await self._report(session_id, system_prompt, messages, before, nodes, chat)
        return plan

    async def view(self, session_id: str, messages: Sequence[MessageRecord]) -> Plan:
        """The current plan for ``messages`` without touching or waiting (tests, benchmarks, tools)."""
        nodes = await self._worker.run(lambda: db.load_nodes(self._worker.connection, session_id))
        return plan_view(nodes, messages, self.config)

    async def touch(
        self, session_id: str, messages: Sequence[MessageRecord], *, live: bool, lane: str = "live"
    ) -> dict[NodeKey, SummaryNode]:
        """Sync the tree with ``messages`` and queue the session's pending work; returns the nodes."""
        now = self._now()
        conn = self._worker.connection

        def sync() -> dict[NodeKey, SummaryNode]:
            if live:
                db.claim_session(conn, session_id, now)
            db.reset_failed(conn, session_id, self.config, now)
            return db.sync_leaves(conn, session_id, messages, self.config, lane=lane, now=now)

        nodes = await self._worker.run(sync)
        if live:
            self.lanes.promote(session_id)
        for node in sorted((n for n in nodes.values() if n.status == "pending"), key=lambda n: (n.level, n.idx)):
            self.lanes.submit(Job(session_id, node.level, node.idx), node.lane)
        await self._maybe_merge(session_id, messages, nodes, lane)
        return nodes

    # -- jobs --------------------------------------------------------------

    async def _run_job(self, job: Job, lane: str) -> None:
        """Do one summary job; failures are recorded, never raised (the lane must go on)."""
        conn = self._worker.connection
        node = await self._worker.run(lambda: db.get_node(conn, job.session_id, (job.level, job.idx)))
        if node is None or node.status != "pending":
            return
        try:
            if node.level == 0:
                messages = await self._worker.run(lambda: db.range_messages(conn, node))
                if (
                    len(messages) != self.config.leaf_size
                    or messages[0].id != node.first_message
                    or messages[-1].id != node.last_message
                ):
                    return  # undone meanwhile; the next touch rebuilds this part of the tree
                first, _ = node_positions(0, node.idx, self.config.leaf_size)
                request = leaf_request(messages, first_position=first, config=self.config)
                footer = leaf_footer(messages)
            else:
                texts = await self._worker.run(lambda: db.children_texts(conn, node))
                if texts is None:
                    return
                request = merge_request(*texts, config=self.config)
                footer = merge_footer(*texts)
            raw = await asyncio.wait_for(self._summarize(lane, request), self.config.job_timeout)
            text = finish_summary(raw, footer, config=self.config)
        except Exception as exc:  # a summarizer bug must not stop the lane; recorded and retried later
            if isinstance(exc, (ExoError, TimeoutError)):
                log.warning("summary %s failed (%s); it is retried when the session is next touched", job.key, exc)
            else:
                log.exception("summary %s crashed; it is retried when the session is next touched", job.key)
            self.lanes.lanes[lane].failed += 1
            await self._worker.run(lambda: db.mark_failed(conn, node, self._now()))
            return
        if await self._worker.run(lambda: db.mark_done(conn, node, text, self._now())):
            # A finished summary may put the view over budget: check for a merge.
            messages = await self._worker.run(lambda: self._store.messages(job.session_id))
            nodes = await self._worker.run(lambda: db.load_nodes(conn, job.session_id))
            await self._maybe_merge(job.session_id, messages, nodes, lane)

    async def _summarize(self, lane: str, request: ModelRequest) -> str:
        summarizer = self._summarizers[lane]
        if isinstance(summarizer, WindowedTransport):
            # A leaf of long messages can exceed a small local window: its transcript is cut to fit.
            window = await summarizer.context_window(request.role)
            if window is not None:
                request = await fit_request(window, request)
        return "".join([chunk.text async for chunk in summarizer.stream(request) if isinstance(chunk, TextDelta)])

    async def _maybe_merge(
        self, session_id: str, messages: Sequence[MessageRecord], nodes: dict[NodeKey, SummaryNode], lane: str
    ) -> None:
        parent = choose_merge(plan_view(nodes, messages, self.config), nodes, self.config)
        if parent is None:
            return
        now = self._now()
        created = await self._worker.run(
            lambda: db.insert_parent(self._worker.connection, session_id, parent, lane=lane, now=now)
        )
        if created:
            self.lanes.submit(Job(session_id, *parent), lane)

    async def _refill(self, lane: str, space: int, known: set[tuple[str, int, int]]) -> list[Job]:
        rows = await self._worker.run(lambda: db.pending_keys(self._worker.connection, lane, space + len(known)))
        return [Job(*row) for row in rows if row not in known][:space]

    # -- reporting ---------------------------------------------------------

    async def _report(
        self,
        session_id: str,
        system_prompt: str,
        messages: Sequence[MessageRecord],
        before: dict[NodeKey, SummaryNode],
        after: dict[NodeKey, SummaryNode],
        chat: Sequence[ChatMessage],
    ) -> None:
        done = frozenset(k for k, n in after.items() if n.done)
        previous = self._reported.get(session_id)
        self._reported[session_id] = done
        self._reported.move_to_end(session_id)
        while len(self._reported) > _REPORTED_SESSIONS:
            self._reported.popitem(last=False)
        # New since this session's last build (or, on its first build since start, since this build began).
        baseline = previous if previous is not None else frozenset(k for k, n in before.items() if n.done)
        new = done - baseline
        if not new or self._hub is None:
            return
        old_plan = plan_view({k: n for k, n in after.items() if k not in new}, messages, self.config)
        old_chat = render_view(system_prompt, old_plan, messages, message_chars=self.config.message_chars)
        try:
            await self._hub.emit(
                session_id,
                "context.compacted",
                ev.ContextCompacted(tokens_before=input_tokens(old_chat), tokens_after=input_tokens(chat)),
            )
        except ExoError:
            log.exception("could not report context compaction for %s", session_id)

    def _now(self) -> str:
        return iso_utc(self._clock.now())

    def stats(self) -> dict[str, Any]:
        """Lane counters (limits, most ever running, started, failed) and settle timeouts."""
        lanes = {
            name: {
                "limit": lane.limit,
                "max_running": lane.max_running,
                "running": lane.running,
                "queued": len(lane.queue),
                "started": lane.started,
                "failed": lane.failed,
                "paused": lane.paused,
            }
            for name, lane in self.lanes.lanes.items()
        }
        return {"lanes": lanes, "settle_timeouts": self.settle_timeouts}
