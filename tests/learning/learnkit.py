"""Helpers for the learning tests: a fresh store with its ledger on a clock the test drives."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from exo_core.ledger import Ledger, Signer, create_signing_key
from exo_core.learning import Learner
from exo_core.store import Store, init_store

DAY = 86_400.0
START = 1_767_225_600.0  # 2026-01-01T00:00:00Z


@dataclass
class Clock:
    """Wall time the test moves by hand (seconds since the epoch)."""

    t: float = START

    def __call__(self) -> float:
        return self.t

    def advance(self, seconds: float) -> None:
        self.t += seconds


@dataclass
class Env:
    """A store, its signing key, its ledger on ``clock``, and a learner."""

    root: Path
    store: Store
    signer: Signer
    clock: Clock
    ledger: Ledger
    learner: Learner
    extra: dict[str, Any] = field(default_factory=dict)

    def draft(self, text: str, session: str) -> str:
        """The assistant's output, recorded as an action (the judged entry)."""
        return self.ledger.append("action", {"tool": "reply", "outcome": "log", "session": session, "text": text}).id

    def verdict(self, judged: str, verdict: str, session: str, text: str | None = None, reason: str = "") -> str:
        body: dict[str, Any] = {"verdict": verdict, "judged": judged, "session": session}
        if text is not None:
            body["text"] = text
        if reason:
            body["reason"] = reason
        return self.ledger.append("verdict", body, refs=(judged,)).id

    def reopen(self) -> None:
        """A fresh learner (as after a restart): its book is rebuilt from the ledger."""
        self.learner = Learner(self.store, self.ledger, queue=self.learner.queue)

    def close(self) -> None:
        self.ledger.close()


def make_env(tmp_path: Path, clock: Clock | None = None, queue: Any = None) -> Env:
    clock = clock or Clock()
    signer = create_signing_key(tmp_path / "home" / "keys")
    store = init_store(tmp_path / "store", owner_key_ids=[signer.key_id])
    ledger = Ledger.open_store(store.root, signer=signer, clock=clock)
    return Env(tmp_path, store, signer, clock, ledger, Learner(store, ledger, queue=queue))
