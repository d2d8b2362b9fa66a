"""Buttons on gpiozero's mock pins: edges arrive on gpiozero threads and reach the loop as gestures."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest

from device.buttons import ButtonBoard, Edge, Gesture, GestureDecoder, mock_factory
from device.settings import DeviceConfig, PinMap

pytest.importorskip("gpiozero")


async def collect(queue: "asyncio.Queue[Edge]", decoder: GestureDecoder, until: int, timeout: float = 5.0) -> None:
    async def pump() -> None:
        while True:
            decoder.feed(await queue.get())

    task = asyncio.create_task(pump())
    deadline = time.monotonic() + timeout
    while len(decoder_out) < until and time.monotonic() < deadline:
        await asyncio.sleep(0.01)
    await asyncio.sleep(0.5)  # let a pending single press resolve
    task.cancel()


decoder_out: list[Gesture] = []


def drive(factory, pin: int, *steps: tuple[str, float]) -> threading.Thread:
    def run() -> None:
        for level, pause in steps:
            getattr(factory.pin(pin), f"drive_{level}")()
            time.sleep(pause)

    thread = threading.Thread(target=run)
    thread.start()
    return thread


async def test_press_long_press_and_double_press_from_another_thread() -> None:
    decoder_out.clear()
    config = DeviceConfig(long_press_seconds=0.3, double_press_seconds=0.25)
    factory = mock_factory()
    queue: asyncio.Queue[Edge] = asyncio.Queue(maxsize=64)
    loop_thread = threading.get_ident()
    seen_threads: set[int] = set()

    def emit(g: Gesture) -> None:
        seen_threads.add(threading.get_ident())
        decoder_out.append(g)

    decoder = GestureDecoder(emit, double_seconds=config.double_press_seconds)
    board = ButtonBoard(config, asyncio.get_running_loop(), queue, factory=factory)
    try:
        pins = config.pins
        t = drive(factory, pins.allow, ("low", 0.05), ("high", 0.1))
        await asyncio.to_thread(t.join)
        t = drive(factory, pins.talk, ("low", 0.5), ("high", 0.1))  # held past the long press
        await asyncio.to_thread(t.join)
        t = drive(factory, pins.next, ("low", 0.03), ("high", 0.05), ("low", 0.03), ("high", 0.05))
        await asyncio.to_thread(t.join)
        t = drive(factory, pins.next, ("low", 0.03), ("high", 0.05))
        await asyncio.to_thread(t.join)
        await collect(queue, decoder, until=10)
    finally:
        board.close()
    kinds = [(g.button, g.kind) for g in decoder_out]
    assert kinds == [
        ("allow", "down"),
        ("allow", "press"),
        ("talk", "down"),
        ("talk", "long"),
        ("talk", "release"),
        ("next", "down"),
        ("next", "down"),
        ("next", "double"),
        ("next", "down"),
        ("next", "press"),
    ]
    assert seen_threads == {loop_thread}  # every gesture was handled on the loop's thread


async def test_a_full_queue_drops_and_counts_instead_of_blocking_the_pin_thread() -> None:
    config = DeviceConfig()
    factory = mock_factory()
    queue: asyncio.Queue[Edge] = asyncio.Queue(maxsize=2)
    board = ButtonBoard(config, asyncio.get_running_loop(), queue, factory=factory)
    try:
        t = drive(factory, config.pins.deny, *[(lvl, 0.0) for _ in range(5) for lvl in ("low", "high")])
        await asyncio.to_thread(t.join)
        await asyncio.sleep(0.1)
        assert queue.qsize() == 2 and board.dropped == 8
    finally:
        board.close()


async def test_pins_come_from_the_config() -> None:
    config = DeviceConfig(pins=PinMap(talk=5, allow=6, deny=13, next=19))
    factory = mock_factory()
    queue: asyncio.Queue[Edge] = asyncio.Queue(maxsize=8)
    board = ButtonBoard(config, asyncio.get_running_loop(), queue, factory=factory)
    try:
        assert board.pin("talk").info.name.endswith("5") or str(board.pin("talk")).endswith("5")
        t = drive(factory, 13, ("low", 0.02), ("high", 0.02))
        await asyncio.to_thread(t.join)
        await asyncio.sleep(0.05)
        edges = [queue.get_nowait() for _ in range(queue.qsize())]
        assert [(e.button, e.kind) for e in edges] == [("deny", "down"), ("deny", "up")]
    finally:
        board.close()
