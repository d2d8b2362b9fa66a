"""Reading the prompt's fixed head ahead of the person's question (an exod service).

Every turn's input opens with the same head: the base prompt and the pack in
one system message, then the tools (:func:`exo_core.context.fit.render`). A
model that keeps prompt state (:class:`~exo_core.seams.model.WarmingTransport`,
the local GGUF model) reads that head once and keeps it; :class:`PrefixWarmup`
has it do so in the background:

* once exod has been up ``delay`` seconds (start-up's own work goes first, and
  an exod that is never asked anything holds no model for that long);
* again whenever the head changes: the pack is read every ``interval`` seconds
  (a small file), and a changed head is read anew;
* always giving way: the model stops reading between two batches when a turn
  (or any other call) waits for it, and that call reuses what was read.

The service never fails exod: a model that cannot warm says so once in the log.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from typing import Any

from exo_core.agent.seams import MemoryParts, PackedMemory
from exo_core.errors import ExoError
from exo_core.seams.model import ChatMessage, ModelRequest, WarmingTransport

__all__ = ["PrefixWarmup", "fixed_head"]

_log = logging.getLogger(__name__)

DELAY = 10.0
INTERVAL = 5.0


async def fixed_head(deps: Any) -> ModelRequest:
    """The head every turn's input opens with, as a request: the system message and the offered tools.

    ``deps`` is the loop's :class:`~exo_core.agent.loop.LoopDeps`.
    """
    from exo_core.agent.loop import system_text  # the loop builds the same text for every turn

    pack = await deps.memory.pack_block() if isinstance(deps.memory, PackedMemory) else ""
    system = system_text(deps.settings.base_prompt, MemoryParts(pack=pack), deps.settings.layout)
    tools = tuple(spec.to_model() for spec in deps.tools.specs())
    return ModelRequest(messages=(ChatMessage("system", system),), tools=tools, max_tokens=deps.settings.max_tokens)


class PrefixWarmup:
    """Has the model read the fixed head after start-up and after each change of it (see the module docstring)."""

    def __init__(self, deps: Any, *, delay: float = DELAY, interval: float = INTERVAL) -> None:
        self.deps = deps
        self.delay = delay
        self.interval = interval
        self.outcomes: list[str] = []  # what each warm-up did, oldest first (for tests and the log)
        self._task: asyncio.Task[None] | None = None

    async def start(self) -> None:
        """Start watching in the background."""
        if isinstance(self.deps.model, WarmingTransport):
            self._task = asyncio.create_task(self._run(), name="exo-prefix-warmup")

    async def aclose(self) -> None:
        """Stop watching (a warm-up in progress finishes its batch)."""
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None

    async def _run(self) -> None:
        await asyncio.sleep(self.delay)
        done: str | None = None
        while True:
            try:
                request = await fixed_head(self.deps)
            except (ExoError, OSError) as exc:
                _log.warning("could not read the pack for the prompt's fixed head: %s", exc)
                request = None
            if request is not None:
                mark = json.dumps([request.messages[0].content, request.tools], sort_keys=True, default=str)
                if mark != done:
                    outcome = await self._warm(request)
                    if not outcome.startswith("interrupted"):  # a turn came first: tried again next round
                        done = mark
            await asyncio.sleep(self.interval)

    async def _warm(self, request: ModelRequest) -> str:
        model = self.deps.model
        assert isinstance(model, WarmingTransport)
        try:
            outcome = await model.warm(request)
        except ExoError as exc:
            _log.warning("the model could not read the prompt's fixed head ahead: %s", exc.message)
            outcome = "failed"
        self.outcomes.append(outcome)
        _log.info("the prompt's fixed head: %s", outcome)
        return outcome
