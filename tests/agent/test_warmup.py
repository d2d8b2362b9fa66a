"""The fixed head read ahead (exo_core.agent.warmup), through the model and memory seams, without a model."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace

from exo_core.agent.loop import LoopSettings
from exo_core.seams.model import ModelRequest, WarmingTransport
from exo_core.agent.warmup import PrefixWarmup, fixed_head
from exo_core.tools.registry import ToolRegistry


class Pack:
    """A memory provider whose pack the test edits."""

    def __init__(self) -> None:
        self.text = "## Pack\n- tea"

    async def pack_block(self) -> str:
        return self.text


class Warming:
    """A model that records what it was asked to read ahead; ``outcomes`` says what each read did."""

    def __init__(self, outcomes: list[str]) -> None:
        self.requests: list[ModelRequest] = []
        self.outcomes = outcomes

    def stream(self, request: ModelRequest):  # type: ignore[no-untyped-def] - never called here
        raise AssertionError("no turn in this test")

    async def warm(self, request: ModelRequest) -> str:
        self.requests.append(request)
        return self.outcomes.pop(0) if self.outcomes else "memory (9 tokens)"


def _deps(model: Warming, pack: Pack) -> SimpleNamespace:
    return SimpleNamespace(model=model, memory=pack, settings=LoopSettings(), tools=ToolRegistry())


def test_the_head_is_read_after_start_again_after_a_pack_edit_and_after_a_turn_cut_it_short() -> None:
    async def scenario() -> tuple[Warming, PrefixWarmup]:
        pack = Pack()
        model = Warming(["interrupted (9 tokens)", "computed (9 tokens)"])
        assert isinstance(model, WarmingTransport)
        service = PrefixWarmup(_deps(model, pack), delay=0.0, interval=0.02)
        await service.start()
        await asyncio.sleep(0.2)  # interrupted, then read again on the next round; then nothing changes
        pack.text = "## Pack\n- coffee"
        await asyncio.sleep(0.2)
        await service.aclose()
        return model, service

    model, service = asyncio.run(scenario())
    assert service.outcomes == ["interrupted (9 tokens)", "computed (9 tokens)", "memory (9 tokens)"]
    heads = [r.messages[0].content for r in model.requests]
    assert heads[0] == heads[1] and heads[0].endswith("- tea") and heads[2].endswith("- coffee")


def test_the_head_is_the_system_message_every_turn_opens_with() -> None:
    from exo_core.agent.loop import BASE_PROMPT

    request = asyncio.run(fixed_head(_deps(Warming([]), Pack())))
    assert [m.role for m in request.messages] == ["system"]
    assert request.messages[0].content == BASE_PROMPT + "\n\n## Pack\n- tea"
