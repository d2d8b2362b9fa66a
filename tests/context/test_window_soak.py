"""A long conversation through the real core with a small-window model: no call ever overflows (issue 18, part 5).

The model is a fake that plugs in through the model seam and declares its
window through :class:`~exo_core.seams.model.WindowedTransport`, counting
tokens with its own tokenizer (words and punctuation, not characters / 4) and a
template the parts do not show; it fails a call that does not fit exactly as
llama.cpp does. The core is real: sessions.sqlite, the hub, the summary-tree
engine (with the scripted summarizer), a real ``read_file`` tool over a big
file, and a memory provider with a pack and recalled notes through its seam.
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import re
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from exo_core.agent.seams import MemoryParts
from exo_core.context.config import ContextConfig
from exo_core.context.scripted import ScriptedSummarizer
from exo_core.engine.core import Core, CoreOptions
from exo_core.errors import ModelError
from exo_core.seams.home import ExoHome
from exo_core.seams.model import (
    ChatMessage,
    ContextWindow,
    Finish,
    ModelChunk,
    ModelRequest,
    TextDelta,
    ToolCall,
    ToolCallChunk,
    UsageChunk,
)
from exo_core.tools.files import ReadFileTool
from exo_core.tools.registry import ToolRegistry

TURNS = int(os.environ.get("EXO_WINDOW_TURNS", "200"))
N_CTX = 1024
_TOKEN = re.compile(r"\w+|[^\w\s]")
WORDS = "the file config deploy error path /srv/app/main.py branch push review test timeout value 42 draft".split()


def tokens(text: str) -> int:
    return len(_TOKEN.findall(text))


class WordTokenizer:
    """The fake model's tokenizer: words and punctuation; the template adds 6 a message and 10 a request."""

    def __init__(self) -> None:
        self.count_calls = 0

    async def count(self, texts: Sequence[str]) -> list[int]:
        self.count_calls += 1
        return [tokens(t) for t in texts]

    async def measure(self, request: ModelRequest) -> int:
        total = 10 + sum(tokens(json.dumps(t)) for t in request.tools)
        for m in request.messages:
            total += 6 + tokens(m.content) + sum(tokens(json.dumps(c.arguments)) + 2 for c in m.tool_calls)
        return total


class SmallWindowModel:
    """Answers long; reads the big file when asked to; fails a call that does not fit, like llama.cpp."""

    def __init__(self, n_ctx: int) -> None:
        self.n_ctx = n_ctx
        self.tokenizer = WordTokenizer()
        self.sent: list[int] = []
        self.overflows = 0
        self.requests: list[ModelRequest] = []
        self.rng = random.Random(7)

    async def context_window(self, role: str) -> ContextWindow | None:
        return ContextWindow(n_ctx=self.n_ctx, counter=self.tokenizer, message_overhead=6, exact=True, model="fake")

    async def stream(self, request: ModelRequest) -> AsyncIterator[ModelChunk]:
        prompt = await self.tokenizer.measure(request)
        self.requests.append(request)
        if prompt + request.max_tokens > self.n_ctx:
            self.overflows += 1
            raise ModelError(f"the prompt has {prompt} tokens but only {self.n_ctx - request.max_tokens} fit")
        self.sent.append(prompt)
        last = request.messages[-1]
        if last.role == "user" and last.content.startswith("please read"):
            yield ToolCallChunk(ToolCall(f"call_{len(self.sent)}", "read_file", {"path": "big.txt"}))
            yield UsageChunk(input_tokens=prompt, output_tokens=8)
            yield Finish("tool_calls")
            return
        answer = " ".join(self.rng.choice(WORDS) for _ in range(self.rng.randint(40, 150)))
        yield TextDelta(answer)
        yield UsageChunk(input_tokens=prompt, output_tokens=tokens(answer))
        yield Finish("end")


class Memory:
    """A pack and recalled notes through the memory seam (with the parts capability)."""

    def __init__(self) -> None:
        self.pack = "# About the person\n" + "\n".join(f"- fact {k}: the sister lives in town {k}" for k in range(10))

    async def system_block(self, session_id: str, text: str) -> str:
        parts = await self.system_parts(session_id, text)
        return parts.pack + "\n" + "\n".join(parts.recalled)

    async def system_parts(self, session_id: str, text: str) -> MemoryParts:
        recalled = tuple(f"[n{k}] a note recalled for {text[:40]!r}: " + " ".join(WORDS[:12]) for k in range(6))
        return MemoryParts(pack=self.pack, recalled=recalled, heading="## Recalled for this message")

    async def on_exchange(self, session_id: str, user_text: str, answer: str) -> None:
        return None


@pytest.mark.parametrize("layout", ["system", "reuse"])
async def test_two_hundred_turns_in_a_1024_token_window_never_overflow(tmp_path: Path, layout: str) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "big.txt").write_text(
        "HEAD of the log\n" + "\n".join(f"line {k}: " + " ".join(WORDS) for k in range(600)) + "\nTAIL: exit 2\n"
    )
    model = SmallWindowModel(N_CTX)
    rng = random.Random(11)
    options = CoreOptions(
        workspace=ws,
        synchronous="NORMAL",
        summarizer=ScriptedSummarizer(),
        memory=Memory(),
        tools=ToolRegistry([ReadFileTool()]),
        context_config=ContextConfig(layout=layout),
    )
    async with Core.open(ExoHome(tmp_path / "home"), model=model, options=options) as core:
        events: list[dict[str, Any]] = []
        sub = core.hub.subscribe(0)

        async def collect() -> None:
            while True:
                item = await sub.next(timeout=None)
                if item is not None:
                    events.append(json.loads(item.data))

        collector = asyncio.create_task(collect())

        async def ok(type_: str, **body: Any) -> dict[str, Any]:
            wire = (await core.engine.handle_raw({"id": "t", "type": type_, "body": body})).to_wire()
            assert wire["ok"], wire
            return wire["result"]

        session = (await ok("session.create", title="long"))["session"]["id"]
        said: list[str] = []
        for n in range(TURNS):
            if n % 5 == 4:
                text = f"please read big.txt for turn {n}"
            else:
                text = f"turn {n}: " + " ".join(rng.choice(WORDS) for _ in range(rng.randint(20, 80)))
            said.append(text)
            turn = (await ok("turn.send", session=session, text=text))["turn_id"]
            done = await _wait(events, turn)
            assert done["body"]["stop_reason"] == "end", done["body"]
        collector.cancel()
        sub.close()

    assert model.overflows == 0
    assert len(model.sent) == TURNS + TURNS // 5  # one call a turn, two for each file read
    assert max(model.sent) <= N_CTX - 256  # the answer's room (a quarter of the window) always left
    last = model.requests[-1]
    assert last.messages[-1].role in ("user", "tool")
    # The person's message is always sent whole (none here is too long for the window).
    for request in model.requests:
        users = [m for m in request.messages if m.role == "user"]
        assert users and users[-1].content in said
    # The pack is always there, first; earlier exchanges and recalled notes are there when they fit. In the
    # system layout the notes follow the pack; in the reuse layout they go just before the person's message
    # (docs/context.md, "Laid out for reuse").
    systems = [r.messages[0].content for r in model.requests]
    assert all("fact 0: the sister lives in town 0" in s for s in systems)
    notes = [
        r.messages[i]
        for r in model.requests
        for i in range(1, len(r.messages) - 1)
        if r.messages[i].content.startswith("## Recalled")
    ]
    if layout == "reuse":
        assert not any("## Recalled" in s for s in systems)
        assert notes and all(m.role == "system" for m in notes)
    else:
        assert any("## Recalled" in s for s in systems) and not notes
    assert any(sum(m.role == "user" for m in r.messages) > 1 for r in model.requests)
    # Big tool results were cut with their head and end kept; the history was trimmed and said so.
    results = [m for r in model.requests for m in r.messages if m.role == "tool"]
    assert results and all(m.content.startswith("HEAD") and m.content.rstrip().endswith("exit 2") for m in results)
    assert any("left out to fit" in m.content for m in results)
    compacted = [e["body"] for e in events if e["type"] == "context.compacted"]
    assert compacted and all(c["tokens_after"] < c["tokens_before"] for c in compacted)
    assert not [e for e in events if e["type"] == "turn.completed" and e["body"]["error"]]


async def _wait(events: list[dict[str, Any]], turn: str, timeout: float = 60.0) -> dict[str, Any]:
    async def poll() -> dict[str, Any]:
        while True:
            for e in events:
                if e["type"] == "turn.completed" and e["body"]["turn_id"] == turn:
                    return e
            await asyncio.sleep(0.005)

    return await asyncio.wait_for(poll(), timeout)


async def test_without_fitting_the_same_model_overflows(tmp_path: Path) -> None:
    """The control: the model's window check is real, and a long session breaks it when nothing fits the input."""
    model = SmallWindowModel(N_CTX)
    request = ModelRequest(messages=(ChatMessage(role="user", content="word " * 900),), max_tokens=256)
    try:
        async for _ in model.stream(request):
            pass
    except ModelError as exc:
        assert "fit" in exc.message
    assert model.overflows == 1
