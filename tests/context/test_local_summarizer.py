"""The real local model (gemma-3-270m GGUF) as the summarizer (§16.4).

Needs llama-cpp-python and the model file (``exo models fetch`` puts it in the
Exo home's models folder, ``$EXO_MODELS_DIR`` or ``~/.cache/exo/models``);
skipped with the reason when either is missing. The transport here is a thin
:class:`~exo_core.seams.model.ModelTransport` over ``llama_cpp.Llama`` that
renders the request as a completion prompt for a base model; it stands in for
``exo_edge``'s local transport until that is merged, and exercises the same
seam.

Settling is raised to 600 s here: on a busy 2-core machine one 270M call can take over a minute.

What must hold whatever the small model writes: a secret in a message never
appears in its summary, and a "stop, don't push" request survives into it.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from ctxutil import Db, dbenv  # noqa: F401 (fixture)

from exo_core.context.config import ContextConfig
from exo_core.context.engine import SummaryTreeContext
from exo_core.seams.model import Finish, ModelChunk, ModelRequest, TextDelta, UsageChunk

MODEL_FILE = "gemma-3-270m-q4_k_m.gguf"
SECRETS = ("hunter2-Xq9", "sk-live-4f8a9b2c7d1e6f3a5b8c9d0e")


def _model_path() -> Path | None:
    for folder in (os.environ.get("EXO_MODELS_DIR"), Path.home() / ".cache" / "exo" / "models"):
        if folder and (Path(folder) / MODEL_FILE).exists():
            return Path(folder) / MODEL_FILE
    return None


class LlamaCompletion:
    """A base-model completion transport.

    A 270M base model cannot follow a list of rules; given them it tends to
    continue the list. So, like ``exo_edge``'s completion formats, it gets a
    document to continue: the transcript, then "Summary:". The rules that must
    hold are enforced by the engine, not by the model.
    """

    def __init__(self, path: Path) -> None:
        import llama_cpp

        self._llm = llama_cpp.Llama(model_path=str(path), n_ctx=2048, n_threads=2, verbose=False, seed=7)
        self._lock = asyncio.Lock()
        self.outputs: list[str] = []

    async def stream(self, request: ModelRequest) -> AsyncIterator[ModelChunk]:
        user = "\n\n".join(m.content for m in request.messages if m.role == "user")
        prompt = "A conversation between a person and their assistant, then a short summary of it.\n\n" + user
        async with self._lock:  # one llama context: one call at a time
            result: dict[str, Any] = await asyncio.to_thread(
                self._llm.create_completion,
                prompt,
                max_tokens=min(request.max_tokens, 120),
                temperature=0.0,
                stop=["</transcript>", "<transcript>", "\n\n\n"],
            )
        text = result["choices"][0]["text"]
        self.outputs.append(text)
        yield TextDelta(text)
        usage = result.get("usage", {})
        yield UsageChunk(
            input_tokens=usage.get("prompt_tokens", 0),
            output_tokens=usage.get("completion_tokens", 0),
            model=MODEL_FILE,
        )
        yield Finish("end")


@pytest.mark.model
async def test_the_local_model_summary_keeps_the_stop_and_never_the_secret(dbenv: Db) -> None:  # noqa: F811
    pytest.importorskip("llama_cpp", reason="llama-cpp-python is not installed (the README's set-up installs it)")
    path = _model_path()
    if path is None:
        pytest.skip(f"{MODEL_FILE} not found; run `exo models fetch` (or set EXO_MODELS_DIR)")
    summarizer = LlamaCompletion(path)
    engine = SummaryTreeContext(
        worker=dbenv.worker, summarizer=summarizer, config=ContextConfig(summary_tokens=120, settle_seconds=600)
    )
    session = await dbenv.session()
    leaf = [
        ("user", f"Deploy the site. The server password is {SECRETS[0]} and the API key is {SECRETS[1]}."),
        ("assistant", "Deploying to /srv/www with `make deploy`."),
        ("user", "Then commit the README fix and push it to origin main."),
        ("assistant", "Committed 'Fix README typo'. Pushing now."),
        ("user", "Wait."),
        ("assistant", "Waiting."),
        ("user", "stop, don't push"),
        ("assistant", "Understood: I will not push. The commit stays local."),
    ]
    filler = [("user" if n % 2 == 0 else "assistant", f"small talk {n} about the weather") for n in range(12)]
    await dbenv.add_many(session, leaf + filler)
    messages = await dbenv.messages(session)
    await engine.build(session, "You are Exo.", messages)
    rows = await dbenv.nodes(session)
    assert [(r[0], r[1], r[4]) for r in rows] == [(0, 0, "done")], rows
    summary = rows[0][7]
    print("\nmodel output:", repr(summarizer.outputs[0]), "\nstored summary:", repr(summary))
    for secret in SECRETS:
        assert secret not in summary
    # The secret never reached the model either: the transcript was scrubbed before it was sent.
    assert summarizer.outputs and all(s not in out for s in SECRETS for out in summarizer.outputs)
    assert "stop, don't push" in summary
    await engine.close()
