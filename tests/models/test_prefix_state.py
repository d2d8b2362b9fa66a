"""The fixed head's saved state (exo_edge/prefix_state.py) with the real Qwen2.5-Coder 0.5B.

A second transport on the same file stands for exod after a restart: it puts
the saved head back instead of reading it, and answers exactly as one that
read it. Bad saved states (another model's, truncated, an older format's) and a
disk that refuses the save are each detected, logged and discarded, and the
turn is served from scratch. Skipped when the model is not fetched.
"""

from __future__ import annotations

import asyncio
import importlib.util
import json
import logging
import struct
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from exo_core.agent.loop import BASE_PROMPT
from exo_core.seams.model import ChatMessage, ModelRequest, TextDelta, UsageChunk
from exo_edge.llama_transport import LlamaSettings, LlamaTransport
from exo_edge.manifest import find_manifest
from exo_edge.paths import locate_model_file
from exo_edge.prefix_state import MAGIC, PrefixStates

pytestmark = pytest.mark.model

QWEN = "qwen2.5-coder-0.5b-instruct"
PACK = "## About the person\n- Lives by the sea.\n- Plays the cello on Tuesdays.\n- Has a grey cat called Pepper."
TOOLS = (
    {
        "name": "read_file",
        "description": "Read a UTF-8 text file in the workspace.",
        "parameters": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
    },
)
SYSTEM = ChatMessage("system", BASE_PROMPT + "\n\n" + PACK)


@pytest.fixture(scope="module")
def model_path() -> Path:
    if importlib.util.find_spec("llama_cpp") is None:
        pytest.skip("llama-cpp-python is not installed (scripts/install_edge.sh)")
    path = locate_model_file(find_manifest(QWEN).primary_file.name)
    if path is None:
        pytest.skip(f"{QWEN} is not fetched on this machine (run `exo models fetch {QWEN}`)")
    return path


def _transport(path: Path, states: Path | None, **kwargs: Any) -> LlamaTransport:
    manifest = find_manifest(QWEN)
    assert manifest.prompt is not None
    settings = LlamaSettings(
        model_path=path, prompt=manifest.prompt, n_ctx=1024, n_threads=1, name=QWEN, state_dir=states, **kwargs
    )
    return LlamaTransport(settings)


def _ask(transport: LlamaTransport, question: str) -> tuple[str, UsageChunk]:
    async def go() -> tuple[str, UsageChunk]:
        request = ModelRequest(
            messages=(SYSTEM, ChatMessage("user", question)), tools=TOOLS, temperature=0.0, max_tokens=12
        )
        text, usage = "", None
        async for chunk in transport.stream(request):
            if isinstance(chunk, TextDelta):
                text += chunk.text
            elif isinstance(chunk, UsageChunk):
                usage = chunk
        assert usage is not None
        return text, usage

    return asyncio.run(go())


def _warm(transport: LlamaTransport) -> str:
    return asyncio.run(transport.warm(ModelRequest(messages=(SYSTEM,), tools=TOOLS)))


def _close(transport: LlamaTransport) -> None:
    asyncio.run(transport.aclose())


@pytest.fixture(scope="module")
def saved(model_path: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, int, str]]:
    """A folder with the head's saved state, the head's tokens, and the answer of the model that read it."""
    folder = tmp_path_factory.mktemp("prefix")
    first = _transport(model_path, folder)
    try:
        outcome = _warm(first)
        assert outcome.startswith("computed"), outcome
        head = int(outcome.split("(")[1].split()[0])
        answer, usage = _ask(first, "What is my cat called?")
        assert usage.cache_read_tokens >= head  # the head was read ahead, not by the turn
    finally:
        _close(first)
    yield folder, head, answer


def _state_file(folder: Path) -> Path:
    (state,) = PrefixStates(folder).files()
    return state


def test_a_new_process_puts_the_saved_head_back_and_answers_as_the_one_that_read_it(
    model_path: Path, saved: tuple[Path, int, str]
) -> None:
    folder, head, answer = saved
    state = _state_file(folder)
    assert 12 * 1024 * head * 0.9 < state.stat().st_size < 12 * 1024 * head * 1.2  # 12 KiB a token (f16 cache)
    again = _transport(model_path, folder)
    try:
        assert _warm(again) == f"disk ({head} tokens)"
        assert _warm(again) == f"memory ({head} tokens)"
        text, usage = _ask(again, "What is my cat called?")
    finally:
        _close(again)
    assert text == answer
    assert usage.cache_read_tokens >= head and usage.input_tokens - usage.cache_read_tokens < 40


def _copy_digests(saved: Path, folder: Path) -> Path:
    """A new state folder that knows the model file's digest already (hashing 470 MB once is enough)."""
    folder.mkdir()
    (folder / "model-digests.json").write_bytes((saved / "model-digests.json").read_bytes())
    return folder


def _rewrite(path: Path, change: dict[str, Any]) -> None:
    raw = path.read_bytes()
    (size,) = struct.unpack_from("<I", raw, len(MAGIC))
    start = len(MAGIC) + 4
    header = json.loads(raw[start : start + size]) | change
    encoded = json.dumps(header, sort_keys=True).encode()
    path.write_bytes(MAGIC + struct.pack("<I", len(encoded)) + encoded + raw[start + size :])


def _truncate(path: Path) -> None:
    raw = path.read_bytes()
    path.write_bytes(raw[: len(raw) // 2])


@pytest.mark.parametrize(
    ("spoil", "said"),
    [
        (lambda p: _rewrite(p, {"model_sha256": "0" * 64}), "its model_sha256 is"),
        (_truncate, "bytes after its header"),
        (lambda p: _rewrite(p, {"format": 0}), "written by format 0"),
    ],
    ids=["another model file", "truncated", "an older format"],
)
def test_a_bad_saved_state_is_discarded_with_a_log_line_and_the_head_read_from_scratch(
    model_path: Path,
    saved: tuple[Path, int, str],
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
    spoil: Any,
    said: str,
) -> None:
    folder, head, answer = saved
    mine = _copy_digests(folder, tmp_path / "prefix")
    state = mine / _state_file(folder).name
    state.write_bytes(_state_file(folder).read_bytes())
    spoil(state)
    transport = _transport(model_path, mine)
    try:
        with caplog.at_level(logging.WARNING, logger="exo_edge.prefix_state"):
            text, usage = _ask(transport, "What is my cat called?")
    finally:
        _close(transport)
    assert any("discarded the saved prompt state" in r.message and said in r.message for r in caplog.records)
    assert text == answer  # served from scratch, the same answer
    assert usage.cache_read_tokens == 0  # the head was read for this turn
    assert [p.read_bytes()[:6] for p in PrefixStates(mine).files()] == [MAGIC]  # saved again, whole


def test_a_disk_that_refuses_the_save_costs_a_log_line_only(
    model_path: Path, saved: tuple[Path, int, str], caplog: pytest.LogCaptureFixture, tmp_path: Path
) -> None:

    def full_disk(path: Path, data: bytes) -> None:
        with open("/dev/full", "wb") as sink:  # the kernel's own "no space left on device"
            sink.write(data)
            sink.flush()

    _, _, answer = saved
    transport = _transport(model_path, _copy_digests(saved[0], tmp_path / "prefix"))
    assert transport.states is not None
    transport.states.write = full_disk
    try:
        with caplog.at_level(logging.WARNING, logger="exo_edge.prefix_state"):
            text, _ = _ask(transport, "What is my cat called?")
    finally:
        _close(transport)
    assert text == answer
    assert any("could not save the prompt state" in r.message for r in caplog.records)
    assert PrefixStates(tmp_path / "prefix").files() == []


def test_a_warm_up_gives_way_to_a_call_and_the_call_reuses_what_it_read(model_path: Path) -> None:
    transport = _transport(model_path, None, n_batch=16, n_ubatch=16)

    async def race() -> tuple[str, UsageChunk]:
        # no tools: the call answers from the very prompt the warm-up began (with tools offered, the 0.5B may
        # judge a call likely and answer from the prompt without them, which shares less of the head)
        warming = asyncio.create_task(transport.warm(ModelRequest(messages=(SYSTEM,))))
        await asyncio.sleep(0)  # the warm-up takes the model first
        while not (transport.loaded and transport._llm.n_tokens >= 16):  # it has read a batch or more
            await asyncio.sleep(0.02)
        request = ModelRequest(messages=(SYSTEM, ChatMessage("user", "Hi")), temperature=0.0, max_tokens=4)
        usage = None
        async for chunk in transport.stream(request):
            if isinstance(chunk, UsageChunk):
                usage = chunk
        assert usage is not None
        return await warming, usage

    try:
        outcome, usage = asyncio.run(race())
    finally:
        _close(transport)
    assert outcome.startswith("interrupted"), outcome
    assert usage.cache_read_tokens >= 16  # what the warm-up read before it gave way
