"""Fixtures for the decision tests: a manual clock, scripted providers, a signed store ledger."""

from __future__ import annotations

import asyncio
import zlib
from collections.abc import AsyncIterator, Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pytest
from manual_clock import ManualClock
from models.fake_provider import FakeProvider

from exo_core.errors import ExoError
from exo_core.models import ModelRouter, load_catalog
from exo_core.seams.decision import Question
from exo_core.seams.home import ExoHome

if TYPE_CHECKING:
    from exo_edge.decide_local import LocalDecisionProvider

QWEN = "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf"
"""The standard profile's model, which the local decision provider's model tests load by path."""


class WordEmbedder:
    """Bag of words hashed into 64 dimensions, unit rows: texts sharing words are near (``calls`` counts
    the embed calls, so a test can see the pool embedded once)."""

    def __init__(self) -> None:
        self.calls = 0

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        self.calls += 1
        rows = np.zeros((len(texts), 64), dtype=np.float32)
        for i, text in enumerate(texts):
            for word in text.lower().split():
                rows[i, zlib.crc32(word.strip(".,!?").encode()) % 64] += 1.0
        norms = np.linalg.norm(rows, axis=1, keepdims=True)
        norms[norms == 0] = 1.0
        return rows / norms


class Scripted:
    """A provider that answers from a fixed mapping, raises, or hangs until released."""

    def __init__(
        self, name: str, answer: Any = None, *, error: ExoError | None = None, hang: bool = False, timeout: float = 0.5
    ) -> None:
        self.name = name
        self.answer = answer
        self.error = error
        self.hang = hang
        self.timeout = timeout
        self.calls = 0
        self.release = asyncio.Event()

    async def probabilities(self, question: Question, state: str) -> Mapping[str, float]:
        self.calls += 1
        if self.hang:
            await self.release.wait()
        if self.error is not None:
            raise self.error
        return self.answer


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock(start=100.0, epoch=1_700_000_000.0)


@pytest.fixture
def store(tmp_path: Path) -> Iterator[tuple[Path, Any]]:
    """A store folder with a signed ledger and a recorder over it."""
    from exo_core.ledger import LedgerRecorder, ensure_signing_key

    folder = tmp_path / "store"
    folder.mkdir()
    signer = ensure_signing_key(tmp_path / "keys")
    recorder = LedgerRecorder.for_store(folder, signer)
    try:
        yield folder, recorder
    finally:
        recorder.close()


@pytest.fixture
async def server() -> AsyncIterator[FakeProvider]:
    """An OpenAI-compatible server with scripted replies (a real aiohttp server on loopback)."""
    fake = FakeProvider()
    await fake.start()
    try:
        yield fake
    finally:
        await fake.stop()


def logprob_chunks(top: list[tuple[str, float]], *, shape: Any = None) -> list[dict[str, Any]]:
    """One streamed token with its ``top_logprobs`` as llama_cpp.server 0.3 sends them (or ``shape`` instead of
    the ``logprobs`` object: ``None`` for an engine that sends ``"logprobs": null``, or garbage)."""
    entries = [{"token": token, "logprob": value, "bytes": None} for token, value in top]
    logprobs = shape if shape is not None else {"content": [{**entries[0], "top_logprobs": entries}]}
    first = {"choices": [{"index": 0, "delta": {"content": top[0][0]}, "logprobs": logprobs, "finish_reason": None}]}
    return [first, {"choices": [{"index": 0, "delta": {}, "logprobs": None, "finish_reason": "length"}]}]


def hosted_router(
    server: FakeProvider, provider: str = "cloud", model: str = "m", prices: tuple[float, float] = (1.0, 2.0)
) -> ModelRouter:
    """A router whose ``main`` and ``decision`` roles are ``provider:model`` on ``server``."""
    route = f"{provider}:{model}"
    providers = {
        provider: {
            "kind": "openai",
            "base_url": server.base_url(provider),
            "key_env": [],
            "models": {model: {"input": prices[0], "output": prices[1]}},
        }
    }
    config = {
        "models": {
            "providers": providers,
            "roles": {"main": [route], "aux": [], "decision": [route]},
            "timeouts": {"first_byte": 10.0, "idle": 10.0},
        }
    }
    return ModelRouter(load_catalog(config, env={}), env={})


@pytest.fixture(scope="module")
def qwen() -> Iterator[LocalDecisionProvider]:
    """The local decision provider on the real Qwen2.5-Coder 0.5B (skipped when it is not fetched)."""
    try:
        import llama_cpp  # noqa: F401  # only whether the edge runtime is installed
    except ImportError:
        pytest.skip("llama-cpp-python is not installed (run scripts/install_edge.sh)")
    from exo_edge.decide_local import local_decision_provider
    from exo_edge.paths import locate_model_file

    if locate_model_file(QWEN) is None:
        pytest.skip(f"{QWEN} is not fetched on this machine")
    # Loaded by path (transport_for_file: 1 thread by default, which the suite's 2 shared cores need).
    provider = local_decision_provider(ExoHome(Path("/nonexistent-home")), model_file=QWEN, timeout=120.0)
    assert provider.transport.settings.n_threads == 1
    yield provider
    asyncio.run(provider.transport.aclose())
