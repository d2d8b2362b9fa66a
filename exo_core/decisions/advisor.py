"""A decision model as the gate's advisor: it may only ever propose "ask" (docs/decisions.md §6).

:class:`DecisionAdvisor` satisfies :class:`exo_core.gate.Advisor`. It asks
the predicate :data:`CONFIRM` ("should the person confirm this action?")
about an *unguarded* action and proposes ``ask`` when the calibrated answer
is a confident yes; otherwise it abstains. The gate passes every proposal
through :func:`exo_core.gate.floor.tighten`, the one place where a decision
model's opinion meets an outcome, so even a proposal of ``allow`` could not
loosen anything. Guarded actions (irreversible, public, paid, third-party)
are never shown to a model: the person's policy and the operator floor
decide them alone.

The gate's seam is synchronous, so the decision runs on a private event-loop
thread and is given ``budget`` seconds; past that the advisor abstains.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
from collections.abc import Coroutine, Mapping
from typing import Any

from exo_core.decisions.decider import Decider
from exo_core.gate.classify import Classification
from exo_core.seams.decision import Decision, Question

__all__ = ["CONFIRM", "DecisionAdvisor", "proposal", "action_state"]

CONFIRM = Question(
    "confirm",
    "predicate",
    "Should the person confirm this action before it runs?",
    ("yes", "no"),
    ("it could surprise the person or be hard to undo", "it is routine and safe to run"),
    threshold=0.8,
    fallback="default",
    default="no",
    cues={
        "yes": ("recoverable", "leaves", "shell.opaque", "install", "http.post"),
        "no": ("none", "reversible", "file.read", "shell.read", "store.recall"),
    },
)


def proposal(decision: Decision) -> str | None:
    """What the gate is told: ``ask`` for a confident yes, else nothing. Never a looser outcome."""
    return "ask" if decision.applied == "yes" else None


def action_state(classification: Classification) -> str:
    """The state a model sees: the tool, each part's kind, cell and summary; never the arguments."""
    parts = "; ".join(f"{f.key} ({', '.join(f.axes.as_dict().values())}): {f.summary}" for f in classification.findings)
    return f"tool {classification.tool}: {parts}"


class DecisionAdvisor:
    """The gate's :class:`~exo_core.gate.Advisor` backed by a :class:`Decider`."""

    def __init__(self, decider: Decider, *, budget: float = 0.5, question: Question = CONFIRM) -> None:
        self.decider = decider
        self.budget = budget
        self.question = question
        self._loop: asyncio.AbstractEventLoop | None = None
        self._lock = threading.Lock()

    def advise(self, classification: Classification, arguments: Mapping[str, Any]) -> str | None:
        """``ask`` or ``None``; guarded actions are never put to a model."""
        if classification.axes.guarded:
            return None
        decision = self._run(self.decider.decide(self.question, action_state(classification)))
        return None if decision is None else proposal(decision)

    def _run(self, coro: Coroutine[Any, Any, Decision]) -> Decision | None:
        with self._lock:
            if self._loop is None:
                self._loop = asyncio.new_event_loop()
                threading.Thread(target=self._loop.run_forever, name="exo-decide", daemon=True).start()
        future = asyncio.run_coroutine_threadsafe(coro, self._loop)
        try:
            return future.result(timeout=self.budget)
        except concurrent.futures.TimeoutError:
            future.cancel()
            return None

    def close(self) -> None:
        """Stop the private loop thread (idempotent)."""
        with self._lock:
            loop, self._loop = self._loop, None
        if loop is not None:
            loop.call_soon_threadsafe(loop.stop)
