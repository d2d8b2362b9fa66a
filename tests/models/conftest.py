"""Fixtures for the model tests: the scripted provider server and a fake clock."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from .fake_provider import FakeClock, FakeProvider


@pytest.fixture
async def provider() -> AsyncIterator[FakeProvider]:
    server = FakeProvider()
    await server.start()
    try:
        yield server
    finally:
        await server.stop()


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()
