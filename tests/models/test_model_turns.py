"""The local model's turns (exo_edge/model_turns.py): the person's turn before background work."""

from __future__ import annotations

import asyncio

from exo_edge.model_turns import AHEAD, BACKGROUND, LIVE, ModelTurns


def test_a_live_turn_passes_background_calls_queued_before_it_and_a_warm_up_goes_last() -> None:
    async def scenario() -> tuple[list[str], list[bool]]:
        turns = ModelTurns()
        served: list[str] = []
        waiting: list[bool] = []

        async def call(name: str, priority: int) -> None:
            await turns.acquire(priority)
            served.append(name)
            waiting.append(turns.waiting.is_set())
            await asyncio.sleep(0.01)
            turns.release()

        await turns.acquire(BACKGROUND)  # a summary is running
        tasks = [asyncio.create_task(call("warm-up", AHEAD))]
        await asyncio.sleep(0)
        tasks.append(asyncio.create_task(call("summary", BACKGROUND)))
        await asyncio.sleep(0)
        tasks.append(asyncio.create_task(call("decision", BACKGROUND)))
        await asyncio.sleep(0)
        tasks.append(asyncio.create_task(call("turn", LIVE)))
        await asyncio.sleep(0)
        assert turns.waiting.is_set()  # a warm-up holding the model would stop between two batches
        turns.release()
        await asyncio.gather(*tasks)
        assert not turns.waiting.is_set()
        return served, waiting

    served, waiting = asyncio.run(scenario())
    assert served == ["turn", "summary", "decision", "warm-up"]
    assert waiting == [True, True, True, False]


def test_a_caller_that_gives_up_waiting_leaves_the_queue_and_the_model_free() -> None:
    async def scenario() -> bool:
        turns = ModelTurns()
        await turns.acquire(BACKGROUND)
        gave_up = asyncio.create_task(turns.acquire(LIVE))
        await asyncio.sleep(0)
        gave_up.cancel()
        await asyncio.gather(gave_up, return_exceptions=True)
        assert not turns.waiting.is_set()
        turns.release()
        await asyncio.wait_for(turns.acquire(AHEAD), 1)  # free again
        return True

    assert asyncio.run(scenario())
