"""The summary-tree engine over a real sessions database with scripted summarizers (§16).

The long test is the issue's "must show": a 1,000-message session, built turn
by turn, with a 5,000-message import summarized beside it. Set
``EXO_CONTEXT_LIVE`` / ``EXO_CONTEXT_IMPORT`` to change the counts.
"""

from __future__ import annotations

import asyncio
import os
import time

import pytest
from ctxutil import Db, ManualClock, assert_tiles, dbenv, text_of  # noqa: F401 (fixture)

from exo_core.context.config import ContextConfig
from exo_core.context.engine import SummaryTreeContext
from exo_core.context.importer import Conversation, ImportedMessage, import_conversations
from exo_core.context.scripted import ScriptedSummarizer
from exo_core.context.tree import Plan
from exo_core.context.view import VIEW_HEADER

LIVE = int(os.environ.get("EXO_CONTEXT_LIVE", "1000"))
IMPORTED = int(os.environ.get("EXO_CONTEXT_IMPORT", "5000"))


def check_view(plan: Plan, chat: list, count: int, cfg: ContextConfig) -> None:
    assert_tiles(plan, count)
    assert plan.summary_tokens <= cfg.view_budget
    levels = [e.node.level for e in plan.elements if e.kind == "summary"]
    assert levels == sorted(levels, reverse=True), levels  # the oldest material is the most compressed
    tail = [e for e in plan.elements if e.kind == "tail"]
    sent_tail = len(chat) - (1 if chat and chat[0].role == "system" else 0)
    assert sent_tail == (tail[0].last - tail[0].first + 1 if tail else 0)
    if any(e.kind != "tail" for e in plan.elements):
        assert VIEW_HEADER in chat[0].content


async def check_merges(db: Db, session_id: str) -> int:
    rows = {(r[0], r[1]): r for r in await db.nodes(session_id)}
    parents = 0
    for (level, idx), row in rows.items():
        if level == 0:
            continue
        parents += 1
        left, right = rows.get((level - 1, 2 * idx)), rows.get((level - 1, 2 * idx + 1))
        assert left is not None and right is not None, (level, idx)
        assert left[4] == right[4] == "done"
        assert (row[2], row[3]) == (left[2], right[3])
    return parents


async def test_a_long_session_with_an_import_beside_it(dbenv: Db) -> None:
    cfg = ContextConfig()
    live_model = ScriptedSummarizer(delay=0.001)
    import_model = ScriptedSummarizer(delay=0.001)
    engine = SummaryTreeContext(worker=dbenv.worker, summarizer=live_model, import_summarizer=import_model, config=cfg)
    conversations = [
        Conversation(
            f"test:{c}",
            f"old chat {c}",
            tuple(
                ImportedMessage("user" if k % 2 == 0 else "assistant", f"imported {c}/{k} " + text_of(k))
                for k in range(100)
            ),
        )
        for c in range(IMPORTED // 100)
    ]
    importer = asyncio.create_task(import_conversations(dbenv.worker, conversations, engine=engine))
    session = await dbenv.session("live")
    builds: list[float] = []
    import_started_during_live = 0
    for n in range(LIVE):
        await dbenv.add(session, "user" if n % 2 == 0 else "assistant", text_of(n))
        if n % 2 == 0:
            continue
        messages = await dbenv.messages(session)
        started = time.perf_counter()
        chat = await engine.build(session, "You are Exo.", messages)
        builds.append(time.perf_counter() - started)
        plan = await engine.view(session, messages)
        check_view(plan, chat, len(messages), cfg)
        # After settling, every full leaf is summarized: nothing older than the tail is verbatim but the partial leaf.
        assert all(e.kind != "verbatim" or e.first >= plan.full_leaves * cfg.leaf_size for e in plan.elements)
        import_started_during_live = engine.lanes.lanes["import"].started
    await importer
    await engine.lanes.wait_all_idle("import")
    stats = engine.stats()
    assert engine.settle_timeouts == 0  # no live turn waited beyond the settle rule
    assert import_started_during_live > 0  # the import really ran beside the live session
    assert live_model.max_active <= cfg.live_limit and import_model.max_active <= cfg.import_limit
    assert stats["lanes"]["live"]["max_running"] <= cfg.live_limit
    assert stats["lanes"]["import"]["max_running"] <= cfg.import_limit
    assert await check_merges(dbenv, session) > 0
    # The imported sessions: complete views under budget, and searchable.
    report_sessions = [
        r[0]
        for r in await dbenv.worker.run(
            lambda: dbenv.worker.connection.execute("SELECT session_id FROM imported_conversations").fetchall()
        )
    ]
    assert len(report_sessions) == IMPORTED // 100
    for sid in report_sessions:
        messages = await dbenv.messages(sid)
        plan = await engine.view(sid, messages)
        assert_tiles(plan, len(messages))
        assert plan.summary_tokens <= cfg.view_budget
        assert all(e.kind != "verbatim" or e.first >= plan.full_leaves * cfg.leaf_size for e in plan.elements)
        await check_merges(dbenv, sid)
    hits = await dbenv.worker.run(lambda: dbenv.store.search("imported 7/42"))
    assert hits
    await engine.close()
    print(
        f"\nlive {LIVE} messages, import {IMPORTED}: {len(builds)} builds, slowest {max(builds) * 1000:.1f} ms, "
        f"live calls {live_model.calls}, import calls {import_model.calls}"
    )


async def test_settle_times_out_and_proceeds_verbatim(dbenv: Db) -> None:
    clock = ManualClock()
    engine = SummaryTreeContext(worker=dbenv.worker, summarizer=ScriptedSummarizer(hang=True), clock=clock)
    session = await dbenv.session()
    await dbenv.add_many(session, [("user" if n % 2 == 0 else "assistant", text_of(n)) for n in range(36)])
    messages = await dbenv.messages(session)
    build = asyncio.create_task(engine.build(session, "sys", messages))
    while clock.sleeping == 0:
        await asyncio.sleep(0.01)
    clock.advance(59.0)
    await asyncio.sleep(0.05)
    assert not build.done()
    clock.advance(1.0)
    chat = await asyncio.wait_for(build, 5)
    assert engine.settle_timeouts == 1
    plan = await engine.view(session, messages)
    assert [e.kind for e in plan.elements] == ["verbatim", "verbatim", "verbatim", "tail"]
    assert text_of(0) in chat[0].content and text_of(23) in chat[0].content  # nothing is missing
    await engine.close()
    statuses = {r[4] for r in await dbenv.nodes(session)}
    assert statuses == {"pending"}  # cut off, left for the next start or touch


async def test_failed_summaries_are_retried_when_the_session_is_touched(dbenv: Db) -> None:
    summarizer = ScriptedSummarizer(fail=2)
    engine = SummaryTreeContext(worker=dbenv.worker, summarizer=summarizer, config=ContextConfig(live_limit=1))
    session = await dbenv.session()
    await dbenv.add_many(session, [("user" if n % 2 == 0 else "assistant", text_of(n)) for n in range(36)])
    messages = await dbenv.messages(session)
    await engine.build(session, "sys", messages)
    rows = await dbenv.nodes(session)
    assert [(r[4], r[6]) for r in rows if r[0] == 0] == [("failed", 1), ("failed", 1), ("done", 1)]
    plan = await engine.view(session, messages)
    assert [e.kind for e in plan.elements][:2] == ["verbatim", "verbatim"]
    await engine.build(session, "sys", messages)
    rows = await dbenv.nodes(session)
    assert all(r[4] == "done" for r in rows)
    assert [r[6] for r in rows if r[0] == 0] == [2, 2, 1]
    await engine.close()


async def test_an_undo_reaching_into_summarized_history_rebuilds_that_part(dbenv: Db) -> None:
    engine = SummaryTreeContext(worker=dbenv.worker, summarizer=ScriptedSummarizer())
    session = await dbenv.session()
    await dbenv.add_many(session, [("user" if n % 2 == 0 else "assistant", text_of(n)) for n in range(44)])
    messages = await dbenv.messages(session)
    await engine.build(session, "sys", messages)
    assert len([r for r in await dbenv.nodes(session) if r[0] == 0]) == 4
    gone = [m.id for m in messages[10:14]]
    await dbenv.worker.run(
        lambda: dbenv.worker.connection.execute(
            f"UPDATE messages SET undone = 1 WHERE id IN ({','.join(map(str, gone))})"
        )
    )
    messages = await dbenv.messages(session)
    chat = await engine.build(session, "sys", messages)
    plan = await engine.view(session, messages)
    assert_tiles(plan, 40)
    assert text_of(11).split(":")[0] + ":" not in chat[0].content  # the undone messages are gone from summaries
    rows = await dbenv.nodes(session)
    assert rows[0][:4] == (0, 0, messages[0].id, messages[7].id) and rows[0][4] == "done"
    assert (rows[1][2], rows[1][3]) == (messages[8].id, messages[15].id)
    await engine.close()


async def test_a_person_using_an_imported_session_takes_it_into_the_live_lane(dbenv: Db) -> None:
    engine = SummaryTreeContext(worker=dbenv.worker, summarizer=ScriptedSummarizer())
    engine.pause_import()
    conv = Conversation(
        "t:1", "old", tuple(ImportedMessage("user" if k % 2 == 0 else "assistant", text_of(k)) for k in range(60))
    )
    report = await import_conversations(dbenv.worker, [conv], engine=engine)
    session = report.session_ids[0]
    assert {r[5] for r in await dbenv.nodes(session)} == {"import"}
    messages = await dbenv.messages(session)
    await engine.build(session, "sys", messages)
    rows = await dbenv.nodes(session)
    assert all(r[4] == "done" and r[5] == "live" for r in rows if r[0] == 0)
    await engine.close()


@pytest.mark.parametrize("live", [False, True])
async def test_resume_hook_restarts_pending_work(dbenv: Db, live: bool) -> None:
    first = SummaryTreeContext(
        worker=dbenv.worker, summarizer=ScriptedSummarizer(hang=True), config=ContextConfig(settle_seconds=0)
    )
    session = await dbenv.session()
    await dbenv.add_many(session, [("user" if n % 2 == 0 else "assistant", text_of(n)) for n in range(44)])
    messages = await dbenv.messages(session)
    await first.build(session, "sys", messages)
    await first.close()  # as if the daemon stopped with the jobs running
    second = SummaryTreeContext(worker=dbenv.worker, summarizer=ScriptedSummarizer())
    if live:
        await second.on_resume(session)
    else:
        await second.start()
    await second.lanes.wait_all_idle("live")
    assert all(r[4] == "done" for r in await dbenv.nodes(session))
    await second.close()
