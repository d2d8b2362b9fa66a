"""The bounded hand-off from the local model's worker thread to the event loop (exo_edge/token_pipe.py).

At the seam, a real thread puts into the pipe as the model's worker does; with the
real Qwen2.5-Coder 0.5B GGUF (skipped when absent), a slow consumer of the transport's
stream gets every piece, in order, and the pipe never holds more than its bound.
"""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path

import pytest

from exo_core.seams.model import ChatMessage, Finish, ModelChunk, ModelRequest, TextDelta
from exo_edge.token_pipe import STREAM_LIMIT, TokenPipe

QWEN = "qwen2.5-coder-0.5b-instruct"


def _producer(pipe: TokenPipe, count: int, produced: list[int]) -> threading.Thread:
    """A worker thread that puts 0..count-1, counting each put that returned."""

    def run() -> None:
        for n in range(count):
            pipe.put(n)
            produced[0] = n + 1

    thread = threading.Thread(target=run, name="pipe-producer", daemon=True)
    thread.start()
    return thread


async def test_a_slow_consumer_holds_the_worker_at_the_bound_and_gets_every_item_in_order() -> None:
    limit, count = 4, 300
    pipe = TokenPipe(asyncio.get_running_loop(), limit=limit)
    produced = [0]
    thread = _producer(pipe, count, produced)
    received: list[int] = []
    ahead: list[int] = []
    for _ in range(count):
        waiting = pipe.qsize()
        assert waiting <= limit
        received.append(await pipe.get())
        # every put that returned holds a slot until taken: the worker is never more than `limit` ahead
        ahead.append(produced[0] - len(received))
        assert produced[0] <= len(received) + limit
        if len(received) % 3 == 0:
            await asyncio.sleep(0.002)  # the slow consumer: the worker fills the pipe meanwhile
    await asyncio.to_thread(thread.join, 10)
    assert not thread.is_alive()
    assert received == list(range(count))
    assert pipe.peak == limit  # the worker did get ahead, and was held there
    assert max(ahead) <= limit
    assert pipe.qsize() == 0


async def test_closing_releases_a_worker_blocked_on_a_full_pipe() -> None:
    pipe = TokenPipe(asyncio.get_running_loop(), limit=2)
    produced = [0]
    thread = _producer(pipe, 1000, produced)
    first = [await pipe.get(), await pipe.get()]
    while pipe.qsize() < 2:  # let the worker fill the pipe and block on the next put
        await asyncio.sleep(0.001)
    pipe.close()
    await asyncio.to_thread(thread.join, 10)
    assert not thread.is_alive()  # it returned: nothing waits for a consumer that left
    assert first == [0, 1]
    assert pipe.qsize() <= 2  # what it put after the close was discarded, not queued


def test_a_pipe_needs_room_for_one_item() -> None:
    loop = asyncio.new_event_loop()
    try:
        with pytest.raises(ValueError, match="at least one item"):
            TokenPipe(loop, limit=0)
        assert TokenPipe(loop).limit == STREAM_LIMIT
    finally:
        loop.close()


def _qwen_settings():  # type: ignore[no-untyped-def]
    try:
        import llama_cpp  # noqa: F401 - only whether the runtime is installed
    except ImportError:
        pytest.skip("llama-cpp-python is not installed (run scripts/install_edge.sh)")
    from exo_edge.llama_transport import LlamaSettings
    from exo_edge.manifest import find_manifest
    from exo_edge.paths import locate_model_file

    manifest = find_manifest(QWEN)
    path: Path | None = locate_model_file(manifest.primary_file.name)
    if path is None:
        pytest.skip(f"{QWEN} is not fetched on this machine (run `exo models fetch`)")
    assert manifest.prompt is not None
    return LlamaSettings(model_path=path, prompt=manifest.prompt, n_ctx=1024, n_threads=1, name=manifest.name)


def _ask(question: str) -> ModelRequest:
    return ModelRequest(messages=(ChatMessage("user", question),), temperature=0.0, max_tokens=40)


@pytest.mark.model
async def test_the_real_model_streams_every_piece_in_order_to_a_slow_consumer_within_the_bound() -> None:
    from exo_edge.llama_transport import LlamaTransport

    limit = 2
    transport = LlamaTransport(_qwen_settings(), stream_limit=limit)
    question = _ask("List the first ten prime numbers, one per line.")
    try:
        # the same call first, so the two compared answers start from the same KV-cache state
        # (a reused prefix is evaluated in other batches, which can move a greedy choice)
        [c async for c in transport.stream(question)]
        fast: list[ModelChunk] = [c async for c in transport.stream(question)]
        fast_peak = transport.last_stream_peak
        slow: list[ModelChunk] = []
        async for chunk in transport.stream(question):
            slow.append(chunk)
            await asyncio.sleep(0.05)  # slower than the model decodes: the worker waits on the full pipe
        pieces = [c.text for c in slow if isinstance(c, TextDelta)]
        assert pieces == [c.text for c in fast if isinstance(c, TextDelta)]  # every piece, in order
        assert len(pieces) > limit * 3 and "".join(pieces).strip()
        assert isinstance(slow[-1], Finish) and slow[-1] == fast[-1]
        assert 0 < transport.last_stream_peak <= limit and fast_peak <= limit

        # A consumer that leaves while the worker waits on a full pipe frees the model for the next call.
        stream = transport.stream(question)
        async for _chunk in stream:
            await asyncio.sleep(0.3)  # the worker fills the pipe and blocks
            break
        await stream.aclose()
        assert transport.last is not None and transport.last.interrupted
        again = [c async for c in transport.stream(_ask("Say hello."))]
        assert isinstance(again[-1], Finish)
    finally:
        await transport.aclose()
