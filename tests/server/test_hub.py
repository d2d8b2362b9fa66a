"""The hub: dense numbering, save-before-send, replay-to-live without gap or duplicate, lag recovery."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from exo_core.protocol.events import Notice
from exo_core.events.hub import Hub
from exo_core.sessions.worker import DbWorker


async def open_hub(path: Path, **kwargs) -> tuple[DbWorker, Hub]:
    worker = DbWorker(path, synchronous="NORMAL")
    await worker.__aenter__()
    hub = Hub(worker, **kwargs)
    await hub.start()
    return worker, hub


async def close(worker: DbWorker, hub: Hub) -> None:
    await hub.close()
    await worker.close()


async def test_seq_is_dense_and_continues_across_reopen(tmp_path: Path) -> None:
    db = tmp_path / "s.sqlite"
    worker, hub = await open_hub(db)
    events = await asyncio.gather(*(hub.emit("s1", "notice", Notice(text=str(i))) for i in range(50)))
    assert [e.seq for e in events] == list(range(1, 51))
    await close(worker, hub)
    worker, hub = await open_hub(db)
    assert hub.last_seq == 50
    e = await hub.emit(None, "notice", Notice(text="after"))
    assert e.seq == 51
    await close(worker, hub)


async def test_subscriber_sees_only_saved_events(tmp_path: Path) -> None:
    worker, hub = await open_hub(tmp_path / "s.sqlite")
    sub = hub.subscribe(0)
    await hub.emit("s", "notice", Notice(text="x"))
    item = await sub.next(timeout=5)
    assert item is not None
    stored = await hub.read_page(0, None)
    assert stored[0].data == item.data
    sub.close()
    await close(worker, hub)


async def test_replay_then_live_has_no_gap_and_no_duplicate_under_concurrent_emits(tmp_path: Path) -> None:
    worker, hub = await open_hub(tmp_path / "s.sqlite")
    for i in range(300):
        await hub.emit("s", "notice", Notice(text=f"pre{i}"))

    async def emitter() -> None:
        for i in range(700):
            await hub.emit("s" if i % 3 else "t", "notice", Notice(text=f"live{i}"))
            if i % 50 == 0:
                await asyncio.sleep(0)

    async def reader(since: int, session: str | None) -> list[int]:
        got: list[int] = []
        sub = hub.subscribe(since, session)
        while True:
            item = await sub.next(timeout=2)
            if item is None:
                break
            got.append(item.seq)
        sub.close()
        return got

    task = asyncio.create_task(emitter())
    everything, from_100, only_s = await asyncio.gather(reader(0, None), reader(100, None), reader(0, "s"))
    await task
    assert everything == list(range(1, 1001))
    assert from_100 == list(range(101, 1001))
    rows = await hub.read_page(0, "s", 10_000)
    assert only_s == [r.seq for r in rows]
    await close(worker, hub)


async def test_a_lagging_subscriber_recovers_from_the_database(tmp_path: Path) -> None:
    worker, hub = await open_hub(tmp_path / "s.sqlite", queue_limit=8)
    sub = hub.subscribe(0)
    assert await sub.next(timeout=0.05) is None  # switched to live, nothing yet
    for i in range(100):  # overflow the 8-slot queue while the subscriber sleeps
        await hub.emit("s", "notice", Notice(text=str(i)))
    got = []
    while (item := await sub.next(timeout=0.2)) is not None:
        got.append(item.seq)
    assert got == list(range(1, 101))
    sub.close()
    await close(worker, hub)


async def test_stored_text_is_canonical_json(tmp_path: Path) -> None:
    worker, hub = await open_hub(tmp_path / "s.sqlite")
    await hub.emit("s", "notice", Notice(text="héllo"))
    (row,) = await hub.read_page(0, None)
    value = json.loads(row.data)
    assert row.data == json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    assert set(value) == {"id", "seq", "session", "type", "ts", "body"}
    await close(worker, hub)


async def test_a_failed_write_fails_its_emitters_and_leaves_no_gap(tmp_path: Path) -> None:
    from exo_core.errors import StorageError
    from exo_core.ids import CountingIds

    db = tmp_path / "s.sqlite"
    worker, hub = await open_hub(db, ids=CountingIds())
    await hub.emit("s", "notice", Notice(text="one"))
    await close(worker, hub)
    worker, hub = await open_hub(db, ids=CountingIds())  # ids restart: the next insert collides
    try:
        await hub.emit("s", "notice", Notice(text="clash"))
    except StorageError as exc:
        assert "could not save events 2..2" in exc.message
    else:
        raise AssertionError("a colliding event id must fail the emit")
    assert hub.last_seq == 1
    await close(worker, hub)


async def test_one_unencodable_event_fails_its_caller_alone(tmp_path: Path) -> None:
    """Issue 19 item 5: on main a body with a lone surrogate failed every event of its group commit."""
    from exo_core.errors import ProtocolError

    worker, hub = await open_hub(tmp_path / "s.sqlite")
    sub = hub.subscribe(0)
    good_before = hub.emit_nowait("s1", "notice", Notice(text="before"))
    with pytest.raises(ProtocolError, match="Unicode"):
        hub.emit_nowait("s2", "notice", Notice(text="answer \ud800 here"))
    with pytest.raises(ProtocolError, match="number"):
        hub.emit_nowait("s2", "notice", {"text": float("nan")})
    good_after = hub.emit_nowait("s1", "notice", Notice(text="after"))
    first, second = await asyncio.gather(good_before, good_after)
    assert (first.seq, second.seq) == (1, 2), "no hole in the numbering"
    stored = await hub.read_page(0, None)
    assert [json.loads(s.data)["body"]["text"] for s in stored] == ["before", "after"]
    assert [s.data for s in stored] == [first.to_json(), second.to_json()], "stored text is the canonical JSON"
    assert (await sub.next(timeout=5)).data == stored[0].data
    sub.close()
    await close(worker, hub)
