"""The real exod with a 2,048-token model and max_tokens 512 (issue 18's failing case): 200 long turns, no model_error.

The model is a script file with ``"n_ctx": 2048``: it declares that window
through the model seam and fails any call whose prompt and ``max_tokens`` do
not fit, as the local model did ("the prompt has 1961 tokens but only 1536
fit"). exod runs as a real process on a Unix socket, with its own tools, gate,
sessions database and summary tree.
"""

from __future__ import annotations

import json
import os
import random
from pathlib import Path

from exo_core.client import ExoClient

TURNS = int(os.environ.get("EXO_WINDOW_TURNS", "200"))
WORDS = ["the", "deploy", "failed", "on", "/srv/app/main.py", "because", "the", "timeout", "was", "42", "seconds"]


async def test_two_hundred_long_turns_through_exod_in_a_2048_token_window(
    tmp_path: Path, exod_factory, workspace: Path
) -> None:
    rng = random.Random(8)
    answer = " ".join(rng.choice(WORDS) for _ in range(150))
    script = tmp_path / "model.json"
    script.write_text(json.dumps({"n_ctx": 2048, "replies": [{"text": answer, "chunk": 400}] * (TURNS + 5)}))
    home = tmp_path / "home"
    home.mkdir()
    (home / "config.toml").write_text('[context]\nsummarizer = "scripted-summary"\n')
    exod = exod_factory(home, script, workspace)
    errors: list[str] = []
    async with ExoClient(exod.url, client_name="soak") as client:
        await client.hello()
        session = (await client.request("session.create", {"title": "long"}))["session"]["id"]
        for n in range(TURNS):
            text = f"turn {n}: " + " ".join(rng.choice(WORDS) for _ in range(rng.randint(100, 500)))
            since = (await client.request("events.subscribe", {"since": 0, "limit": 1}))["head"]
            await client.request("turn.send", {"session": session, "text": text})
            async for event in client.events(since=since, session=session):
                if event.type == "turn.completed":
                    if event.body["error"]:
                        errors.append(f"turn {n}: {event.body['error']}")
                    break
        stored = (await client.request("session.get", {"session": session, "messages": True}))["messages"]
    assert errors == []
    assert [m["role"] for m in stored] == ["user", "assistant"] * TURNS
    assert all(m["content"] == answer for m in stored if m["role"] == "assistant")
