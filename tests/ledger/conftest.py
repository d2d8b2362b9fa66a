"""Shared fixtures for the ledger tests: deterministic keys and clocks, real files."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from exo_core.ledger import Ledger, Signer

from ledger_testkit import FakeClock, fill


@pytest.fixture
def signer() -> Signer:
    return Signer.from_seed(bytes(range(32)))


@pytest.fixture
def other_signer() -> Signer:
    return Signer.from_seed(bytes(range(100, 132)))


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def make_ledger(tmp_path: Path, signer: Signer, clock: FakeClock) -> Iterator[Callable[..., Ledger]]:
    opened: list[Ledger] = []

    def make(name: str = "ledger.sqlite", **kwargs: object) -> Ledger:
        kwargs.setdefault("signer", signer)
        kwargs.setdefault("clock", clock)
        kwargs.setdefault("create", True)
        kwargs.setdefault("ledger_id", "test-ledger")
        ledger = Ledger.open(tmp_path / name, **kwargs)  # type: ignore[arg-type]
        opened.append(ledger)
        return ledger

    yield make
    for ledger in opened:
        ledger.close()


@pytest.fixture
def filler() -> Callable[[Ledger, int], list[str]]:
    """The :func:`fill` helper, as a fixture (test modules do not import conftest)."""
    return fill
