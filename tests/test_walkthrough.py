"""The walkthrough of §26 as a test: "Fix the typo in README.md and push the branch".

Real parts throughout: a real git repository with a bare remote served by ``git daemon`` on loopback, the
real exod (a subprocess on a temporary Unix socket, its home made by
``exo init`` so turns are mirrored into the store's signed ledger), two real
protocol clients, and the scripted model. The edit is allowed and logged (the
model's quote has different spacing; the fuzzy matcher finds it); ``git
commit -am … && git push`` is classified public and asks; a second client
answers allow; the push lands in the bare remote; the ledger holds the
action, the approval and its answer.

Variants: the answering client disconnects before answering and reconnects
with ``since=``; exod is SIGKILLed while the request is open, restarted, and
the resumed turn re-presents the same request, which is then answered.
"""

from __future__ import annotations

import asyncio
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from exo_testkit import ROOT, write_script

from exo_core.client import ExoClient
from exo_core.ledger import Ledger
from exo_core.protocol import Event

README = "# Demo\n\nExo is a personla assistant that knows its person.\n"
FIXED = "# Demo\n\nExo is a personal assistant that knows its person.\n"
GIT_ENV = {
    "GIT_AUTHOR_NAME": "Exo Test",
    "GIT_AUTHOR_EMAIL": "exo@example.com",
    "GIT_COMMITTER_NAME": "Exo Test",
    "GIT_COMMITTER_EMAIL": "exo@example.com",
    "GIT_CONFIG_GLOBAL": "/dev/null",
    "GIT_CONFIG_NOSYSTEM": "1",
}
SCRIPT = [
    {
        "text": "Fixing the typo.",
        "tool_calls": [
            {
                "name": "edit_file",
                "arguments": {
                    "path": "README.md",
                    # The model's quote has different spacing from the file: the matcher must still find it.
                    "old": "Exo  is a personla   assistant that knows its person.",
                    "new": "Exo is a personal assistant that knows its person.",
                },
            }
        ],
    },
    {
        "text": "Committing and pushing.",
        "tool_calls": [{"name": "bash", "arguments": {"command": 'git commit -am "Fix README typo" && git push'}}],
    },
    {"text": "Fixed the typo in README.md and pushed the branch."},
]


def git(*args: str, cwd: Path) -> str:
    out = subprocess.run(
        ["git", *args], cwd=cwd, env={**os.environ, **GIT_ENV}, capture_output=True, text=True, check=True
    )
    return out.stdout.strip()


@pytest.fixture
def repo(tmp_path: Path) -> Iterator[tuple[Path, Path]]:
    """A working clone with README.md committed and pushed to a bare remote served by ``git daemon`` on loopback.

    The remote is reached over the network, as a real one is: the bash tool's sandbox sees nothing
    outside the workspace, and gets the network only for what the gate judged leaves the machine (a push).
    """
    remote = tmp_path / "remote.git"
    git("init", "--bare", "-q", "-b", "main", str(remote), cwd=tmp_path)
    work = tmp_path / "work"
    git("init", "-q", "-b", "main", str(work), cwd=tmp_path)
    (work / "README.md").write_text(README)
    git("add", "README.md", cwd=work)
    git("commit", "-qm", "Add README", cwd=work)
    git("remote", "add", "origin", str(remote), cwd=work)
    git("push", "-q", "-u", "origin", "main", cwd=work)
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    daemon = subprocess.Popen(
        [
            "git",
            "daemon",
            "--reuseaddr",
            "--export-all",
            "--enable=receive-pack",
            "--listen=127.0.0.1",
            f"--port={port}",
            f"--base-path={tmp_path}",
            str(tmp_path),
        ],
        env={**os.environ, **GIT_ENV},
    )
    try:
        git("remote", "set-url", "origin", f"git://127.0.0.1:{port}/remote.git", cwd=work)
        deadline = time.monotonic() + 20
        while subprocess.run(["git", "ls-remote", "origin"], cwd=work, capture_output=True).returncode != 0:
            assert time.monotonic() < deadline, "git daemon did not start"
            time.sleep(0.1)
        yield work, remote
    finally:
        daemon.kill()
        daemon.wait()


def init_home(home: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("EXO_HOME", None)
    subprocess.run(
        [sys.executable, "-m", "exo_core.cli", "init", "--home", str(home)],
        env=env,
        check=True,
        capture_output=True,
        text=True,
    )


class Watcher:
    """Collects one session's events from a client, across reconnects."""

    def __init__(self, client: ExoClient, session: str) -> None:
        self.client, self.session = client, session
        self.seen: list[Event] = []
        self.changed = asyncio.Event()

    async def run(self, since: int = 0) -> None:
        async for event in self.client.events(since=since, session=self.session):
            self.seen.append(event)
            self.changed.set()

    async def wait_for(self, type_: str, timeout: float = 30.0, **match: Any) -> Event:
        async def look() -> Event:
            while True:
                for e in self.seen:
                    if e.type == type_ and all(e.body.get(k) == v for k, v in match.items()):
                        return e
                self.changed.clear()
                await self.changed.wait()

        return await asyncio.wait_for(look(), timeout)

    def of(self, type_: str) -> list[Event]:
        return [e for e in self.seen if e.type == type_]


async def start_turn(url: str) -> tuple[ExoClient, Watcher, asyncio.Task[None], str, str]:
    client = ExoClient(url, client_name="terminal", reconnect_delay=0.05, max_reconnect_delay=0.2)
    await client.__aenter__()
    await client.hello()
    session = (await client.request("session.create", {"title": "walkthrough"}))["session"]["id"]
    watcher = Watcher(client, session)
    task = asyncio.create_task(watcher.run())
    turn = (
        await client.request("turn.send", {"session": session, "text": "Fix the typo in README.md and push the branch"})
    )["turn_id"]
    return client, watcher, task, session, turn


def ledger_entries(home: Path) -> list[Any]:
    with Ledger.open_store(home / "store") as ledger:
        assert ledger.verify().ok
        return list(ledger.entries())


def check_record(home: Path, request_id: str) -> None:
    entries = ledger_entries(home)
    actions = [e for e in entries if e.kind == "action"]
    approvals = [e for e in entries if e.kind == "approval"]
    edit = next(e for e in actions if e.body["tool"] == "edit_file")
    assert edit.body["outcome"] == "log" and edit.body["decision"] == "log" and edit.body["ok"]
    assert edit.body["axes"]["reversibility"] == "reversible" and edit.body["axes"]["exposure"] == "private"
    assert len(approvals) == 1
    approval = approvals[0]
    assert approval.body["request_id"] == request_id and approval.body["decision"] == "allow"
    push = next(e for e in actions if e.body["tool"] == "bash")
    assert push.body["outcome"] == "ask" and push.body["decision"] == "allow" and push.body["ok"]
    assert push.body["axes"]["exposure"] == "public" and "git.push" in push.body["keys"]
    assert approval.id in push.refs, "the action refers to the approval that allowed it"
    assert any(e.kind == "utterance" and "Fix the typo" in e.body["text"] for e in entries)


async def test_walkthrough_fix_the_typo_and_push(exod_factory, tmp_path: Path, repo: tuple[Path, Path]) -> None:
    work, remote = repo
    home = tmp_path / "home"
    init_home(home)
    exod = exod_factory(home, write_script(tmp_path / "script.json", SCRIPT), work, env=GIT_ENV)
    client, watcher, task, session, turn = await start_turn(exod.url)
    # A second client (the phone, the device) sees the same request and answers it.
    async with ExoClient(exod.url, client_name="phone") as phone:
        phone_watch = Watcher(phone, session)
        phone_task = asyncio.create_task(phone_watch.run())
        request = await phone_watch.wait_for("approval.requested")
        assert request.body["summary"] == "push branch to origin"
        assert request.body["risk"] == "high" and request.body["tool"] == "bash"
        assert "git push" in request.body["arguments"]["command"]
        assert (work / "README.md").read_text() == FIXED, "the edit ran before the push was asked about"
        assert git("log", "-1", "--format=%s", cwd=remote) == "Add README", "nothing is pushed before the answer"
        await phone.request("approval.respond", {"request_id": request.body["request_id"], "decision": "allow"})
        done = await watcher.wait_for("turn.completed", turn_id=turn)
        phone_task.cancel()
    assert done.body["stop_reason"] == "end"
    # The edit was allowed and logged, never asked about; the fuzzy matcher found the misquoted line.
    edit_done = next(e for e in watcher.of("tool.completed") if e.body["name"] == "edit_file")
    assert edit_done.body["ok"] and "whitespace" in edit_done.body["result"]
    assert len(watcher.of("approval.requested")) == 1
    resolved = await watcher.wait_for("approval.resolved")
    assert resolved.body["decision"] == "allow"
    started = [e.body["risk"] for e in watcher.of("tool.started")]
    assert started == ["medium", "high"]
    assert any(e.type == "tool.output" for e in watcher.seen), "the shell streamed its output"
    assert git("log", "-1", "--format=%s", cwd=remote) == "Fix README typo"
    assert git("show", "main:README.md", cwd=remote) + "\n" == FIXED
    task.cancel()
    await client.close()
    assert exod.stop() == 0
    check_record(home, request.body["request_id"])


async def test_answering_client_reconnects_with_since(exod_factory, tmp_path: Path, repo: tuple[Path, Path]) -> None:
    work, remote = repo
    home = tmp_path / "home"
    init_home(home)
    exod = exod_factory(home, write_script(tmp_path / "script.json", SCRIPT), work, env=GIT_ENV)
    client, watcher, task, session, turn = await start_turn(exod.url)
    # The phone follows, sees the turn start, then drops before the request arrives.
    async with ExoClient(exod.url, client_name="phone") as phone:
        phone_watch = Watcher(phone, session)
        phone_task = asyncio.create_task(phone_watch.run())
        await phone_watch.wait_for("turn.started")
        last = phone.last_seq
        phone_task.cancel()
    await watcher.wait_for("approval.requested")
    # Reconnecting with since= replays what it missed, the open request included, and it can still answer.
    async with ExoClient(exod.url, client_name="phone") as phone:
        page = await phone.request("events.subscribe", {"since": last, "session": session})
        missed = [e for e in page["events"] if e["type"] == "approval.requested"]
        assert len(missed) == 1
        opened = await phone.request("session.get", {"session": session})
        assert [a["request_id"] for a in opened["open_approvals"]] == [missed[0]["body"]["request_id"]]
        await phone.request("approval.respond", {"request_id": missed[0]["body"]["request_id"], "decision": "allow"})
    done = await watcher.wait_for("turn.completed", turn_id=turn)
    assert done.body["stop_reason"] == "end"
    assert git("log", "-1", "--format=%s", cwd=remote) == "Fix README typo"
    task.cancel()
    await client.close()


async def test_open_request_survives_a_core_restart(exod_factory, tmp_path: Path, repo: tuple[Path, Path]) -> None:
    work, remote = repo
    home = tmp_path / "home"
    init_home(home)
    exod = exod_factory(home, write_script(tmp_path / "script.json", SCRIPT), work, env=GIT_ENV)
    client, watcher, task, session, turn = await start_turn(exod.url)
    first = await watcher.wait_for("approval.requested")
    request_id = first.body["request_id"]
    exod.kill()  # SIGKILL while the request is open
    exod.start()
    resumed = await client.request("session.resume", {"session": session})
    assert resumed["reopened_approvals"] == 1 and resumed["repaired"] == 0 and resumed["resumed_turn"] == turn
    # The resumed turn re-presents the same request (same id) rather than asking anew.
    again = [e for e in await _wait_count(watcher, "approval.requested", 2)]
    assert again[-1].body["request_id"] == request_id
    assert git("log", "-1", "--format=%s", cwd=remote) == "Add README"
    await client.request("approval.respond", {"request_id": request_id, "decision": "allow"})
    done = await watcher.wait_for("turn.completed", turn_id=turn)
    assert done.body["stop_reason"] == "end"
    assert git("log", "-1", "--format=%s", cwd=remote) == "Fix README typo"
    task.cancel()
    await client.close()
    assert exod.stop() == 0
    check_record(home, request_id)


async def _wait_count(watcher: Watcher, type_: str, count: int, timeout: float = 30.0) -> list[Event]:
    async def look() -> list[Event]:
        while len(watcher.of(type_)) < count:
            watcher.changed.clear()
            await watcher.changed.wait()
        return watcher.of(type_)

    return await asyncio.wait_for(look(), timeout)
