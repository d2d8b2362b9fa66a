"""The async sessions facade: one job per call on the database thread, in call order, the store's own errors."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path

import pytest

from exo_core.errors import ClosedResourceError, ConflictError, NotFoundError
from exo_core.sessions import AsyncSessions, DbWorker


async def test_calls_run_in_the_order_they_are_made(tmp_path: Path) -> None:
    async with DbWorker(tmp_path / "s.sqlite", synchronous="NORMAL") as worker:
        sessions = AsyncSessions(worker)
        session = await sessions.create_session(title="order")
        # gather starts the calls in list order; a read in the middle must see exactly the writes made before it.
        first = [sessions.add_message(session.id, "user", f"m{i}") for i in range(20)]
        middle = sessions.messages(session.id)
        last = [sessions.add_message(session.id, "user", f"m{i}") for i in range(20, 40)]
        results = await asyncio.gather(*first, middle, *last)
        written = [*results[:20], *results[21:]]
        seen = results[20]
        assert [m.content for m in written] == [f"m{i}" for i in range(40)]
        ids = [m.id for m in written]
        assert ids == sorted(ids), "each call is one job, queued when it is made"
        assert [m.content for m in seen] == [f"m{i}" for i in range(20)]
        stored = await sessions.messages(session.id)
        assert [m.id for m in stored] == ids


async def test_store_work_runs_on_the_database_thread(tmp_path: Path) -> None:
    async with DbWorker(tmp_path / "s.sqlite", synchronous="NORMAL") as worker:
        sessions = AsyncSessions(worker)
        name = await sessions.call(lambda store: threading.current_thread().name)
        assert name.startswith("exo-db")
        assert name != threading.current_thread().name


async def test_turns_approvals_and_search_round_trip(tmp_path: Path) -> None:
    async with DbWorker(tmp_path / "s.sqlite", synchronous="NORMAL") as worker:
        sessions = AsyncSessions(worker)
        session = await sessions.create_session(title="trip", workspace="/w")
        turn = await sessions.add_turn(session.id, "hello zebra", "send", status="running")
        await sessions.add_message(session.id, "user", "hello zebra", turn_id=turn.id)
        call = {"id": "c1", "name": "read_file", "arguments": {"path": "a.txt"}}
        await sessions.add_message(session.id, "assistant", "", turn_id=turn.id, tool_calls=[call])
        dangling = await sessions.dangling_tool_calls(session.id)
        assert [c["id"] for _, c in dangling] == ["c1"]
        request = await sessions.add_approval(
            session.id, turn_id=turn.id, call_id="c1", tool="read_file", summary="read a.txt", risk="low", arguments={}
        )
        assert [a.id for a in await sessions.open_approvals(session.id)] == [request.id]
        answered = await sessions.resolve_approval(request.id, "allow", "fine")
        assert (answered.status, (await sessions.get_approval(request.id)).reason) == ("allow", "fine")
        assert await sessions.open_approvals(session.id) == []
        await sessions.set_turn_status(turn.id, "completed", "end")
        assert [t.status for t in await sessions.turns(session.id)] == ["completed"]
        hits = await sessions.search("zebra", session_id=session.id)
        assert [h.session_id for h in hits] == [session.id]
        touched = await sessions.touch(session.id, add_cost=0.25)
        assert touched.cost == pytest.approx(0.25)
        child = await sessions.fork(session.id, title="child")
        assert (child.parent_id, len(await sessions.messages(child.id))) == (session.id, 2)
        listed = await sessions.list_sessions()
        assert {s.id for s in listed} == {child.id, session.id}
        assert await sessions.undo(session.id, 1) == [turn.id]
        assert await sessions.messages(session.id) == []
        assert len(await sessions.messages(session.id, include_undone=True)) == 2


async def test_the_stores_errors_pass_through_and_lose_nothing(tmp_path: Path) -> None:
    async with DbWorker(tmp_path / "s.sqlite", synchronous="NORMAL") as worker:
        sessions = AsyncSessions(worker)
        with pytest.raises(NotFoundError, match="session.list"):
            await sessions.get_session("ses_missing")
        session = await sessions.create_session()
        request = await sessions.add_approval(
            session.id, turn_id=None, call_id=None, tool="bash", summary="run", risk="high", arguments={"cmd": "ls"}
        )
        await sessions.resolve_approval(request.id, "deny", "no")
        with pytest.raises(ConflictError, match="already answered"):
            await sessions.resolve_approval(request.id, "allow")
        kept = await sessions.get_approval(request.id)
        assert (kept.status, kept.reason) == ("deny", "no")


async def test_a_closed_database_is_a_typed_error(tmp_path: Path) -> None:
    worker = DbWorker(tmp_path / "s.sqlite", synchronous="NORMAL")
    sessions = AsyncSessions(worker)
    with pytest.raises(ClosedResourceError, match="closed"):
        await sessions.list_sessions()
    async with worker:
        assert await sessions.list_sessions() == []
    with pytest.raises(ClosedResourceError, match="closed"):
        await sessions.create_session()
