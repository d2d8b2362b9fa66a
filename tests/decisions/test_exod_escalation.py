"""Issue 21 through a real exod: a signal decision that abstains goes to the larger model, the person or the queue.

exod answers turns with a scripted model (the drafts); the larger model is the home's ``main`` route off the
device, ``laptop:...``: a real aiohttp server with scripted answers for the failure and scripted-answer cases,
and a real ``llama_cpp.server`` serving the 0.5B GGUF for the reachable case. The issue-22 correction
phrasings are settled on the device (the rules) and become verdicts and a stated rule.
"""

from __future__ import annotations

import asyncio
import json
import os
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from exo_testkit import ROOT, write_script
from models.fake_provider import FakeProvider, Reply, openai_chunks

from exo_core.client import ExoClient
from exo_core.ledger import Ledger

DRAFT = "Great news!!! The note for Sam is ready, and it is a long one!"
TOO_LONG = "Too long. Make it shorter, and no exclamation marks."
NO_MARKS = "No exclamation marks. Keep it shorter."
RULE = "From now on, never use exclamation marks"
UNSURE = "hmm, the second one maybe"  # no rule settles it; the cue words leave it under the threshold
ALIAS = "qwen2.5-coder-0.5b-instruct"


def _exo(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "EXO_HOME"}
    env["PYTHONPATH"] = str(ROOT)
    return subprocess.run(
        [sys.executable, "-m", "exo_core.cli", *args, "--home", str(home)],
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
        timeout=300,
    )


def _home(tmp_path: Path, base_url: str, decisions: str = "", *, api_key: str = "") -> Path:
    """A home with a store and ``main = ["laptop:..."]`` at ``base_url`` (exod itself answers from a script)."""
    home = tmp_path / "home"
    assert _exo(home, "init").returncode == 0
    (home / "config.toml").write_text(
        f'store = "{home / "store"}"\n\n'
        "[models.providers.laptop]\n"
        'kind = "openai"\n'
        f'base_url = "{base_url}"\n'
        "key_env = []\n"
        f'api_key = "{api_key}"\n\n'
        "[models.roles]\n"
        f'main = ["laptop:{ALIAS}"]\n\n'
        "[models.timeouts]\n"
        "connect = 2.0\nfirst_byte = 300.0\nidle = 60.0\n\n"
        "[decisions]\n" + decisions,
        encoding="utf-8",
    )
    return home


async def _say(client: ExoClient, session: str, text: str, *, answer: int | None = None) -> str | None:
    """Send ``text`` and wait for its turn; with ``answer``, also wait for a ``question.asked`` and answer it."""
    since = (await client.request("events.subscribe", {"since": 0, "limit": 1}))["head"]
    await client.request("turn.send", {"session": session, "text": text})
    asked: str | None = None
    completed = False
    async for event in client.events(since=since):
        if event.type == "question.asked" and answer is not None:
            asked = str(event.body["text"])
            await client.request("question.answer", {"question_id": event.body["question_id"], "option": answer})
        if event.type == "turn.completed":
            completed = True
        if completed and (answer is None or asked is not None):
            return asked
    raise AssertionError("the event stream ended early")


def _wait_for(check: Any, what: str, timeout: float = 120.0) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = check()
        if found:
            return found
        time.sleep(0.2)
    raise AssertionError(f"timed out waiting for {what}")


def _queued(home: Path) -> list[dict[str, Any]]:
    path = home / "learning" / "queue.sqlite"
    if not path.is_file():
        return []
    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        rows = db.execute("SELECT kind, key, inputs FROM jobs ORDER BY id").fetchall()
    finally:
        db.close()
    return [{"kind": kind, "key": key, **json.loads(inputs)} for kind, key, inputs in rows]


def _count(home: Path, kind: str) -> int:
    db = sqlite3.connect(f"file:{home / 'store' / 'ledger.sqlite'}?mode=ro", uri=True)
    try:
        return int(db.execute("SELECT count(*) FROM entries WHERE kind=?", (kind,)).fetchone()[0])
    finally:
        db.close()


def _entries(home: Path) -> list[Any]:
    with Ledger.open_store(home / "store") as ledger:
        assert ledger.verify().ok
        return list(ledger.entries())


def test_with_the_laptop_away_corrections_still_teach_an_unsure_reply_is_asked_the_rest_queued(
    tmp_path: Path, exod_factory: Any
) -> None:
    server = FakeProvider()
    seen: dict[str, Any] = {}

    async def scenario() -> None:
        await server.start()
        try:
            server.script("laptop", *[Reply(status=503)] * 20)  # the laptop's engine answers, but only errors
            home = _home(tmp_path, server.base_url("laptop"), "ask_timeout = 60\n")
            seen["home"] = home
            script = write_script(tmp_path / "s.json", [{"text": DRAFT}] + [{"text": "Understood."}] * 20)
            exod = exod_factory(home, script, tmp_path)
            seen["exod"] = exod
            async with ExoClient(exod.url, client_name="test") as client:
                await client.hello()
                first = (await client.request("session.create", {"title": "drafts"}))["session"]["id"]
                for text in ("Write a note to Sam about the move.", TOO_LONG, NO_MARKS, RULE):
                    await _say(client, first, text)
                seen["asked"] = await _say(client, first, UNSURE, answer=1)  # 1: it corrects the last answer
                second = (await client.request("session.create", {"title": "no draft"}))["session"]["id"]
                await _say(client, second, UNSURE)
                seen["sessions"] = (first, second)
            seen["jobs"] = await asyncio.to_thread(_wait_for, lambda: _queued(home), "the queued decision")
            seen["tried"] = server.count("laptop")
        finally:
            await server.stop()

    asyncio.run(scenario())
    home, second = seen["home"], seen["sessions"][1]
    assert seen["exod"].stop() == 0
    entries = _entries(home)
    drafts = [e for e in entries if e.kind == "action" and e.body.get("tool") == "reply"]
    verdicts = [e for e in entries if e.kind == "verdict"]
    # The issue-22 phrasings are decided on the device: two verdicts on the drafts they answer, one stated rule.
    assert [v.body["reason"] for v in verdicts] == [TOO_LONG, NO_MARKS, UNSURE]
    assert [v.body["judged"] for v in verdicts[:2]] == [drafts[0].id, drafts[1].id]
    assert drafts[0].body["text"] == DRAFT
    assert [e.body["text"] for e in entries if e.kind == "rule"] == [RULE]
    # The unsure reply to a draft: the laptop was tried and failed, so the person was asked, in their words.
    assert seen["tried"] >= 1
    assert seen["asked"] is not None and UNSURE in seen["asked"]
    assert verdicts[2].body["judged"] == drafts[3].id and verdicts[2].body["probability"] == 1.0
    [label] = [e for e in entries if e.kind == "outcome"]
    assert (label.body["label"], label.body["signal"]) == ("correction", "person")
    # The same words with no draft to answer: nobody waits on it, so it waits for the larger model.
    [job] = seen["jobs"]
    assert (job["kind"], job["state"], job["context"]) == ("decide", UNSURE, {"session": second, "draft": None})
    assert job["key"] == f"decide:{job['entry']}" and job["mechanism"] == "signal"
    decided = {e.id: e for e in entries if e.kind == "decision"}
    assert decided[job["entry"]].body["chosen"] is None


def test_a_reachable_larger_model_decides_and_nothing_is_asked_or_queued(tmp_path: Path, exod_factory: Any) -> None:
    """Scripted answers from the laptop's route: the option words' probabilities in its top_logprobs are the
    decision exod acts on."""
    server = FakeProvider()
    seen: dict[str, Any] = {}

    async def scenario() -> None:
        await server.start()
        try:
            top = [
                {"token": "rule", "logprob": -0.1},
                {"token": "cor", "logprob": -2.5},
                {"token": "other", "logprob": -4},
            ]
            logprobs = {"content": [{**top[0], "top_logprobs": top}]}
            answer = {"choices": [{"index": 0, "delta": {"content": "rule"}, "logprobs": logprobs}]}
            server.script("laptop", Reply(events=[answer, *openai_chunks(finish="length")]))
            home = _home(tmp_path, server.base_url("laptop"))
            seen["home"] = home
            exod = exod_factory(home, write_script(tmp_path / "s.json", [{"text": "Understood."}] * 5), tmp_path)
            seen["exod"] = exod
            async with ExoClient(exod.url, client_name="test") as client:
                await client.hello()
                session = (await client.request("session.create", {"title": "rules"}))["session"]["id"]
                await _say(client, session, "Emojis in texts to my brother are fine.")
            await asyncio.to_thread(_wait_for, lambda: _count(home, "rule"), "the rule entry")
            seen["sent"] = [s.body for s in server.seen]
        finally:
            await server.stop()

    asyncio.run(scenario())
    home = seen["home"]
    assert seen["exod"].stop() == 0
    entries = _entries(home)
    decisions = [e.body for e in entries if e.kind == "decision"]
    assert [(d["provider"], d["chosen"]) for d in decisions] == [("rules-only", None), (f"laptop:{ALIAS}:chat", "rule")]
    assert [e.body["text"] for e in entries if e.kind == "rule"] == ["Emojis in texts to my brother are fine."]
    assert len(seen["sent"]) == 1 and seen["sent"][0]["model"] == ALIAS and seen["sent"][0]["top_logprobs"] == 20
    assert _queued(home) == [] and not [e for e in entries if e.kind == "outcome"]


@pytest.mark.model
@pytest.mark.slow
def test_the_laptop_engine_on_a_real_llama_cpp_server_decides_an_abstention(tmp_path: Path, exod_factory: Any) -> None:
    from models.laptop_kit import EngineProcess, free_port, need_engine

    engine = EngineProcess(need_engine(), free_port(), tmp_path / "engine.log").start()
    try:
        home = _home(tmp_path, engine.base_url, "larger_timeout = 240\n", api_key=engine.key)
        exod = exod_factory(home, write_script(tmp_path / "s.json", [{"text": "Understood."}] * 5), tmp_path)

        async def chat() -> None:
            async with ExoClient(exod.url, client_name="test") as client:
                await client.hello()
                session = (await client.request("session.create", {"title": "laptop"}))["session"]["id"]
                await _say(client, session, UNSURE)

        asyncio.run(chat())
        _wait_for(lambda: _count(home, "decision") >= 2 or _queued(home), "the larger model's decision", 420)
        assert exod.stop() == 0
    finally:
        engine.stop()
    decisions = [e.body for e in _entries(home) if e.kind == "decision"]
    assert decisions[0]["chosen"] is None and decisions[0]["escalate"] == "main"
    # The 0.5B on the laptop's engine gave the option words' probabilities: its decision is recorded with
    # them (uncalibrated on a fresh home); below the threshold it is queued, above it nothing is.
    [larger] = decisions[1:]
    assert larger["provider"] == f"laptop:{ALIAS}:chat" and not larger["failures"], decisions
    assert sum(larger["raw"].values()) == pytest.approx(1.0, abs=1e-3) and len(set(larger["raw"].values())) == 3
    assert (larger["chosen"] is None) == bool(_queued(home))
