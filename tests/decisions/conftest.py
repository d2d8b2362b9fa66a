"""Fixtures for the decision tests: a manual clock, scripted providers, a signed store ledger."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest
from manual_clock import ManualClock

from exo_core.decisions.question import Question
from exo_core.errors import ExoError


class Scripted:
    """A provider that answers from a fixed mapping, raises, or hangs until released."""

    def __init__(
        self, name: str, answer: Any = None, *, error: ExoError | None = None, hang: bool = False, timeout: float = 0.5
    ) -> None:
        self.name = name
        self.answer = answer
        self.error = error
        self.hang = hang
        self.timeout = timeout
        self.calls = 0
        self.release = asyncio.Event()

    async def probabilities(self, question: Question, state: str) -> Mapping[str, float]:
        self.calls += 1
        if self.hang:
            await self.release.wait()
        if self.error is not None:
            raise self.error
        return self.answer


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock(start=100.0, epoch=1_700_000_000.0)


@pytest.fixture
def store(tmp_path: Path) -> Iterator[tuple[Path, Any]]:
    """A store folder with a signed ledger and a recorder over it."""
    from exo_core.ledger import LedgerRecorder, ensure_signing_key

    folder = tmp_path / "store"
    folder.mkdir()
    signer = ensure_signing_key(tmp_path / "keys")
    recorder = LedgerRecorder.for_store(folder, signer)
    try:
        yield folder, recorder
    finally:
        recorder.close()
