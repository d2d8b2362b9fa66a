"""The device link's outbox is bounded (device/link.py): presses made while the core is away wait up to
``outbox_limit``; one more is refused visibly (``on_refused``), never dropped; the ones kept are delivered
in order once a real exod is there.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from exo_testkit import write_script

from device.link import Link, Pending
from exo_core.client import ExoClient


async def test_the_outbox_holds_its_bound_refuses_more_visibly_and_delivers_the_rest_in_order(
    tmp_path: Path, exo_home: Path, workspace: Path, exod_factory: Any
) -> None:
    limit = 4
    exod = exod_factory(exo_home, write_script(tmp_path / "script.json", []), workspace)
    refused: list[tuple[str, str]] = []
    delivered: list[tuple[str, Any]] = []
    all_delivered = asyncio.Event()

    def on_delivered(pending: Pending, result: Any) -> None:
        delivered.append((pending.label, result))
        if len(delivered) == limit:
            all_delivered.set()

    def press(n: int) -> Any:
        async def action(client: ExoClient) -> Any:
            return await client.request("session.create", {"title": f"press {n}"})

        return action

    async def on_event(event: object) -> None:
        return None

    async with ExoClient(exod.url) as client:
        link = Link(
            client,
            on_event=on_event,
            on_state=lambda state: None,
            on_refused=lambda pending, why: refused.append((pending.label, why)),
            on_delivered=on_delivered,
            outbox_limit=limit,
        )
        # Not connected yet (the core is away as far as the link knows): every press waits.
        for n in range(limit + 2):
            assert await link.submit(f"press {n}", press(n)) is None
            assert len(link.outbox) <= limit
        assert [p.label for p in link.outbox] == [f"press {n}" for n in range(limit)]
        assert refused == [(f"press {n}", f"{limit} presses already wait for the core") for n in (limit, limit + 1)]

        task = asyncio.create_task(link.run())
        try:
            await asyncio.wait_for(all_delivered.wait(), 30)
        finally:
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
    assert [label for label, _ in delivered] == [f"press {n}" for n in range(limit)]
    assert [result["session"]["title"] for _, result in delivered] == [f"press {n}" for n in range(limit)]
    assert not link.outbox and len(refused) == 2


async def test_a_refused_press_is_said_on_screen_never_raised(
    tmp_path: Path, exo_home: Path, workspace: Path, exod_factory: Any
) -> None:
    """An answer to a question that has closed (the device's old traceback): refused visibly, nothing raised."""
    exod = exod_factory(exo_home, write_script(tmp_path / "script.json", []), workspace)
    refused: list[tuple[str, str]] = []

    async def answer(client: ExoClient) -> Any:
        return await client.request("question.answer", {"question_id": "q_gone", "option": 1})

    async def on_event(event: object) -> None:
        return None

    async with ExoClient(exod.url) as client:
        link = Link(
            client,
            on_event=on_event,
            on_state=lambda state: None,
            on_refused=lambda pending, why: refused.append((pending.label, why)),
            on_delivered=lambda pending, result: None,
        )
        task = asyncio.create_task(link.run())
        try:
            for _ in range(200):
                if link.state == "online":
                    break
                await asyncio.sleep(0.05)
            assert link.state == "online"
            assert await link.submit("answer 'yes'", answer) is None
        finally:
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
    assert len(refused) == 1 and refused[0][0] == "answer 'yes'" and "that question has closed" in refused[0][1]
