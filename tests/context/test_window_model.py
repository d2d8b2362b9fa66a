"""The real local model's window and tokenizer: exact counts, and 30 turns in 1,024 tokens with no model_error.

Needs llama-cpp-python and the Qwen2.5-Coder 0.5B Instruct GGUF (``exo models
fetch``, ``$EXO_MODELS_DIR`` or ``~/.cache/exo/models``); skipped with the
reason when either is missing. Two decode threads under OMP_WAIT_POLICY=PASSIVE
(exo_testkit.MODEL_THREADS) and a short answer keep the turns to a few minutes on a busy 2-core machine.
"""

from __future__ import annotations

import asyncio
import json
import os
import random
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
from exo_testkit import MODEL_THREADS

from exo_core.agent.loop import LoopSettings
from exo_core.agent.seams import MemoryParts
from exo_core.context.scripted import ScriptedSummarizer
from exo_core.engine.core import Core, CoreOptions
from exo_core.seams.home import ExoHome
from exo_core.seams.model import ChatMessage, ContextWindow, ModelChunk, ModelRequest, WindowedTransport
from exo_core.tools.registry import ToolRegistry

MODEL_FILE = "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf"
N_CTX = 1024
# Six turns already carry more history than the window holds (each message is 80-300 tokens and its
# reply up to 40), so the suite runs six; the long run is EXO_WINDOW_MODEL_TURNS=30
# (docs/benchmarks.md §3b).
TURNS = int(os.environ.get("EXO_WINDOW_MODEL_TURNS", "6"))
WORDS = ["the", "garden", "needs", "water", "because", "it", "was", "hot", "and", "my", "sister", "called", "today"]

pytestmark = pytest.mark.model


def _model_path() -> Path:
    try:
        import llama_cpp  # noqa: F401 - only checks that the runtime is installed
    except ImportError:
        pytest.skip("llama-cpp-python is not installed (run scripts/install_edge.sh)")
    for folder in (os.environ.get("EXO_MODELS_DIR"), Path.home() / ".cache" / "exo" / "models"):
        if folder and (Path(folder) / MODEL_FILE).is_file():
            return Path(folder) / MODEL_FILE
    pytest.skip(f"{MODEL_FILE} is not fetched on this machine (run `exo models fetch`)")


@pytest.fixture(scope="module")
def qwen() -> Iterator[Any]:
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    from exo_edge.llama_transport import LlamaSettings, LlamaTransport
    from exo_edge.manifest import PromptFormat

    settings = LlamaSettings(
        model_path=_model_path(),
        prompt=PromptFormat(format="chat"),
        n_ctx=N_CTX,
        n_threads=MODEL_THREADS,
        name="qwen-0.5b",
    )
    transport = LlamaTransport(settings)
    yield transport
    asyncio.run(transport.aclose())


async def test_the_window_counts_with_the_models_own_tokenizer(qwen: Any) -> None:
    assert isinstance(qwen, WindowedTransport)
    window = await qwen.context_window("main")
    assert window is not None and window.n_ctx == N_CTX and window.exact
    assert window.where == "[models.local] n_ctx in config.toml"
    texts = ["hello world", "Where does my sister live? She moved to Lisbon in 2021.", ""]
    counts = await window.counter.count(texts)
    truth = await qwen.run_exclusive(lambda llm: [len(llm.tokenize(t.encode(), add_bos=False)) for t in texts])
    assert counts == truth and counts[0] > 0
    request = ModelRequest(
        messages=(ChatMessage("system", "You are Exo."), ChatMessage("user", "What is the capital of France?"))
    )
    measured = await window.counter.measure(request)
    used = await qwen.run_exclusive(
        lambda llm: llm.create_chat_completion(
            [{"role": m.role, "content": m.content} for m in request.messages], max_tokens=1, temperature=0.0
        )["usage"]["prompt_tokens"]
    )
    assert measured == used  # exactly the tokens llama.cpp evaluates for this request


class Recorded:
    """The real transport, with every request it is sent measured by its own counter (through the seam)."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.prompts: list[int] = []
        self.limits: list[int] = []

    async def context_window(self, role: str) -> ContextWindow | None:
        return await self.inner.context_window(role)

    async def stream(self, request: ModelRequest) -> AsyncIterator[ModelChunk]:
        self.prompts.append(await self.inner.counter.measure(request))
        self.limits.append(N_CTX - request.max_tokens)
        async for chunk in self.inner.stream(request):
            yield chunk


class Memory:
    async def system_block(self, session_id: str, text: str) -> str:
        return ""

    async def system_parts(self, session_id: str, text: str) -> MemoryParts:
        pack = "# About the person\n" + "\n".join(f"- fact {k}: " + " ".join(WORDS[k:] + WORDS[:k]) for k in range(12))
        notes = tuple(f"[n{k}] the sister lives in town number {k}, near the river" for k in range(5))
        return MemoryParts(pack=pack, recalled=notes, heading="## Recalled for this message")

    async def on_exchange(self, session_id: str, user_text: str, answer: str) -> None:
        return None


async def test_many_turns_in_a_1024_token_window_with_the_real_model(qwen: Any, tmp_path: Path) -> None:
    model = Recorded(qwen)
    ws = tmp_path / "ws"
    ws.mkdir()
    options = CoreOptions(
        workspace=ws,
        synchronous="NORMAL",
        summarizer=ScriptedSummarizer(),
        memory=Memory(),
        tools=ToolRegistry([]),
        settings=LoopSettings(max_tokens=40),
    )
    rng = random.Random(4)
    async with Core.open(ExoHome(tmp_path / "home"), model=model, options=options) as core:
        sub = core.hub.subscribe(0)
        session = (await core.engine.handle_raw({"id": "s", "type": "session.create", "body": {}})).result["session"][
            "id"
        ]
        errors = []
        for n in range(TURNS):
            text = f"Turn {n}. " + " ".join(rng.choice(WORDS) for _ in range(rng.randint(60, 220))) + ". Reply briefly."
            body = {"session": session, "text": text}
            turn = (await core.engine.handle_raw({"id": str(n), "type": "turn.send", "body": body})).result["turn_id"]
            while True:
                item = await sub.next(timeout=600)
                assert item is not None, f"turn {n} did not finish"
                event = json.loads(item.data)
                if event["type"] == "turn.completed" and event["body"]["turn_id"] == turn:
                    if event["body"]["error"]:
                        errors.append(event["body"]["error"])
                    break
        sub.close()
    assert errors == []
    assert len(model.prompts) == TURNS
    assert all(p <= limit for p, limit in zip(model.prompts, model.limits)), list(zip(model.prompts, model.limits))
    # Late turns carry a long history: the input was trimmed to the window, not left to grow.
    assert max(model.prompts) > N_CTX // 2


async def test_the_completion_format_is_measured_as_the_transport_renders_it() -> None:
    """Gemma 270M (a base model, completion format): the measure equals the prompt the transport evaluates."""
    from exo_edge.llama_transport import LlamaSettings, LlamaTransport
    from exo_edge.manifest import find_manifest
    from exo_edge.paths import locate_model_file

    _model_path()  # skips without llama-cpp-python
    manifest = find_manifest("gemma-3-270m")
    path = locate_model_file(manifest.primary_file.name)
    if path is None or manifest.prompt is None:
        pytest.skip("the Gemma 270M model is not fetched on this machine (run `exo models fetch`)")
    settings = LlamaSettings(
        model_path=path, prompt=manifest.prompt, n_ctx=512, n_threads=MODEL_THREADS, name=manifest.name
    )
    gemma = LlamaTransport(settings)
    try:
        window = await gemma.context_window("main")
        assert window is not None and window.n_ctx == 512
        request = ModelRequest(
            messages=(ChatMessage("system", "Notes: the sister lives in Lisbon."), ChatMessage("user", "Where?")),
            max_tokens=4,
            temperature=0.0,
        )
        measured = await window.counter.measure(request)
        _ = [chunk async for chunk in gemma.stream(request)]
        assert gemma.last is not None and measured == gemma.last.prompt_tokens
        # Too long for 512 tokens: the transport's last guard trims instead of failing.
        long = ModelRequest(
            messages=(ChatMessage("system", "Notes."), ChatMessage("user", "tell me " * 900 + "Where?")),
            max_tokens=16,
            temperature=0.0,
        )
        _ = [chunk async for chunk in gemma.stream(long)]
        assert gemma.last is not None and gemma.last.prompt_tokens + 16 <= 512
    finally:
        await gemma.aclose()
