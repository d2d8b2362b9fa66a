"""Shared fixtures for the ledger tests: deterministic keys and clocks, real files."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from exo_core.ledger import Ledger, Signer

STRESS = os.environ.get("EXO_STRESS") == "1"


class FakeClock:
    """An injectable clock: starts at a fixed epoch and steps 1 ms per reading."""

    def __init__(self, start: float = 1_780_000_000.0, step: float = 0.001) -> None:
        self.now = start
        self.step = step

    def __call__(self) -> float:
        self.now += self.step
        return self.now


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


def fill(ledger: Ledger, count: int) -> list[str]:
    """Append ``count`` entries of varied kinds (refs, verdicts, idem keys, scopes); return ids."""
    ids: list[str] = []
    for i in range(count):
        mod = i % 5
        if mod == 0 or not ids:
            e = ledger.append("utterance", {"text": f"message {i} — naïve ☃"}, idem=f"turn-{i}")
        elif mod == 1:
            e = ledger.append("action", {"tool": "edit_file", "outcome": "allow", "result": {"lines": i}},
                              refs=[ids[-1]])
        elif mod == 2:
            e = ledger.append("verdict", {"verdict": "edit", "judged": ids[-1]}, refs=[ids[-1]],
                              scope="agent:writer")
        elif mod == 3:
            e = ledger.append("decision", {"decider": "rules", "p": 0.25, "input": "ab" * 8})
        else:
            e = ledger.append("retrieval", {"node_ids": ["n1", "n2"], "item_ids": []}, scope="group:team")
        ids.append(e.id)
    return ids


@pytest.fixture
def filler() -> Callable[[Ledger, int], list[str]]:
    """The :func:`fill` helper, as a fixture (test modules do not import conftest)."""
    return fill
