"""The proposal queue against a real OpenAI-compatible server in its own process.

With the larger model's server down, reflection jobs queue and survive a
SIGKILL of the process that queued them; a drain while it is down changes
nothing; a drainer SIGKILLed mid-batch and a server SIGKILLed mid-batch lose
nothing and do nothing twice; bring the server back and everything drains.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from exo_core.ledger import Ledger, create_signing_key, load_signing_key
from exo_core.learning.learner import Learner
from exo_core.learning.pack import render_learned
from exo_core.learning.service import LearningSettings
from exo_edge.proposal_queue import ProposalQueue
from exo_core.errors import ConfigError
from exo_core.store import Store, init_store
from exo_testkit import ROOT

HERE = Path(__file__).resolve().parent
ENV = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), str(ROOT / "tests"), str(HERE)])}
ENV.pop("EXO_HOME", None)

QUEUE_AND_WAIT = """
import sys, time
from pathlib import Path
from exo_core.ledger import Ledger, load_signing_key
from exo_core.learning.learner import Learner
from exo_core.learning.pack import render_learned
from exo_edge.proposal_queue import ProposalQueue
from exo_core.store import Store
from learnkit import Clock, Env
from simperson import Simulation
home = Path(sys.argv[1]); store = Store.open(home / "store"); clock = Clock()
ledger = Ledger.open_store(store.root, signer=load_signing_key(home / "keys"), clock=clock)
queue = ProposalQueue(home / "learning" / "queue.sqlite")
env = Env(home, store, None, clock, ledger, Learner(store, ledger, queue=queue))
Simulation(env, seed=5).run(sessions=4, drafts=4)
print("queued", queue.counts().get("queued", 0), flush=True)
time.sleep(600)
"""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Server:
    """The larger model's server process."""

    def __init__(self, port: int, log: Path) -> None:
        self.port, self.log, self.proc = port, log, None

    def start(self, delay: float) -> "Server":
        self.proc = subprocess.Popen(
            [sys.executable, str(HERE / "larger_model.py"), str(self.port), str(self.log), str(delay)],
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=ENV,
        )
        assert self.proc.stdout.readline().strip() == b"ready"
        return self

    def requests(self) -> int:
        return len(self.log.read_text().splitlines()) if self.log.exists() else 0

    def kill(self) -> None:
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait()


def exo(home: Path, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "exo_core.cli", "learn", *args, "--home", str(home), "--json"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=ENV,
        cwd=ROOT,
    )


def wait_for(predicate, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.02)


def results(home: Path) -> list[tuple[str, str]]:
    with Ledger.open_store(home / "store") as ledger:
        return [(e.idem or "", e.body["revises"]) for e in ledger.entries(kind="proposal") if "revises" in e.body]


def test_settings_are_checked() -> None:
    assert LearningSettings.from_config({}).route is None
    assert LearningSettings.from_config({"learning": {"route": "laptop:big", "ceiling": 2}}).ceiling == 2.0
    for bad in ({"route": "nocolon"}, {"ceiling": -1}, {"batch": 0}, {"batch": True}):
        with pytest.raises(ConfigError):
            LearningSettings.from_config({"learning": bad})


def test_queue_survives_sigkill_and_drains_exactly_once(tmp_path: Path) -> None:
    home = tmp_path / "home"
    create_signing_key(home / "keys")
    init_store(home / "store", owner_key_ids=[load_signing_key(home / "keys").key_id])
    port = free_port()
    (home / "config.toml").write_text(
        f'[models.providers.laptop]\nkind = "openai"\nbase_url = "http://127.0.0.1:{port}/v1"\nkey_env = []\n\n'
        '[learning]\nroute = "laptop:big"\nceiling = 1.0\nbatch = 50\n'
    )
    server = Server(port, tmp_path / "requests.log")

    # 1. The device learns with the server down; the process is killed; the queue keeps every job.
    child = subprocess.Popen(
        [sys.executable, "-c", QUEUE_AND_WAIT, str(home)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=ENV,
        cwd=ROOT,
    )
    line = child.stdout.readline()
    child.send_signal(signal.SIGKILL)
    child.wait()
    assert line.startswith("queued"), child.stderr.read()
    total = int(line.split()[1])
    assert total >= 5
    queue = ProposalQueue(home / "learning" / "queue.sqlite")
    assert queue.counts() == {"queued": total}

    # 2. A drain while the route is down changes nothing.
    down = exo(home, "drain")
    out, err = down.communicate(timeout=60)
    assert down.returncode == 0, err
    assert json.loads(out)["stopped"].startswith("route unavailable") and queue.counts() == {"queued": total}

    # 3. The drainer is SIGKILLed mid-batch.
    server.start(delay=0.4)
    drainer = exo(home, "drain")
    wait_for(lambda: server.requests() >= 3)
    drainer.send_signal(signal.SIGKILL)
    drainer.wait()
    done = queue.counts().get("done", 0)
    assert 2 <= done < total and queue.counts()["queued"] == total - done
    assert len(results(home)) == done, "each finished job has exactly one result"

    # 4. A drainer that died between its append and marking the job done: the next drain finds the result.
    job = queue.pending(1)[0]
    with Ledger.open_store(home / "store", signer=load_signing_key(home / "keys")) as ledger:
        ledger.append(
            "proposal",
            {
                "target": job.inputs["target"],
                "revises": job.inputs["proposal"],
                "claim": "Wants it written by the earlier drainer.",
                "source": "learning",
                "by": "reflection",
            },
            refs=(job.inputs["proposal"],),
            idem=f"queue:{job.key}",
        )

    # 5. The server is SIGKILLed mid-batch.
    seen = server.requests()
    drainer = exo(home, "drain")
    wait_for(lambda: server.requests() >= seen + 2)
    server.kill()
    out, err = drainer.communicate(timeout=60)
    report = json.loads(out)
    assert report["stopped"].startswith("route unavailable") and report["already_done"] == 1, (out, err)
    counts = queue.counts()
    assert counts["done"] + counts["queued"] == total, "nothing lost"
    assert len(results(home)) == counts["done"]

    # 6. The server comes back: everything drains, each job's result exactly once.
    server.start(delay=0.0)
    try:
        out, err = exo(home, "drain").communicate(timeout=60)
        assert json.loads(out)["stopped"] == "empty", err
    finally:
        server.kill()
    assert queue.counts() == {"done": total}
    found = results(home)
    assert len(found) == total and len({idem for idem, _ in found}) == total, "nothing done twice"
    assert queue.spent() == pytest.approx(0.01 * (total - 1)), "spend counts each answered call once"
    queue.close()

    # The reflected wording reaches the lessons and the pack; the evidence is unchanged.
    store = Store.open(home / "store")
    with Ledger.open_store(store.root, signer=load_signing_key(home / "keys")) as ledger:
        learner = Learner(store, ledger)
        learner.refresh()
        reflected = [l for l in learner.book.lessons.values() if "because the person corrected" in l.claim]
        assert reflected and all(l.evidence for l in reflected)
        # (The drain ran on today's clock, long after the simulated weeks: render as of their last verdict.)
        then = max(e.ts for e in learner.book.index.values() if e.kind == "verdict")
        assert "because the person corrected" in render_learned(learner.book, then)


def test_a_ceiling_stops_the_drain(tmp_path: Path) -> None:
    import asyncio

    from exo_edge.proposal_queue import drain
    from exo_edge.hosted import HttpClient, OpenAICompatTransport

    signer = create_signing_key(tmp_path / "keys")
    store = init_store(tmp_path / "store", owner_key_ids=[signer.key_id])
    ledger = Ledger.open_store(store.root, signer=signer)
    queue = ProposalQueue(tmp_path / "queue.sqlite")
    for i in range(4):
        assert queue.put("judge", {"item": f"pair:{i}", "criterion": "no em dashes", "reply": "ok"}, key=f"j{i}")
    assert not queue.put("judge", {"item": "pair:0", "criterion": "x", "reply": "y"}, key="j0"), "once per key"
    port = free_port()
    server = Server(port, tmp_path / "log").start(delay=0.0)

    async def run() -> object:
        client = HttpClient()
        try:
            transport = OpenAICompatTransport(
                client, base_url=f"http://127.0.0.1:{port}/v1", model="big", api_key=None, provider="laptop"
            )
            return await drain(queue, transport, ledger, ceiling=0.02)
        finally:
            await client.aclose()

    try:
        report = asyncio.run(run())
    finally:
        server.kill()
    assert report.stopped == "ceiling" and report.done == 2 and queue.counts() == {"done": 2, "queued": 2}
    scores = [e.body["score"] for e in ledger.entries(kind="decision")]
    assert scores == [0.8, 0.8]
    ledger.close()
    queue.close()


def test_a_job_whose_inputs_make_no_request_is_set_aside_and_the_rest_drain(tmp_path: Path) -> None:
    """A row no request can be made from (written by an older version, or edited by hand) used to raise out of
    every drain, so nothing queued behind it was ever answered."""
    import asyncio

    from exo_edge.hosted import HttpClient, OpenAICompatTransport
    from exo_edge.proposal_queue import drain

    signer = create_signing_key(tmp_path / "keys")
    store = init_store(tmp_path / "store", owner_key_ids=[signer.key_id])
    ledger = Ledger.open_store(store.root, signer=signer)
    queue = ProposalQueue(tmp_path / "queue.sqlite")
    assert queue.put("judge", {"item": "pair:0", "reply": "ok"}, key="no-criterion")
    assert queue.put("decide", {"mechanism": "signal", "state": "x"}, key="no-options")
    assert queue.put("judge", {"item": "pair:1", "criterion": "no em dashes", "reply": "ok"}, key="good")
    port = free_port()
    server = Server(port, tmp_path / "log").start(delay=0.0)

    async def run() -> object:
        client = HttpClient()
        try:
            transport = OpenAICompatTransport(
                client, base_url=f"http://127.0.0.1:{port}/v1", model="big", api_key=None, provider="laptop"
            )
            return await drain(queue, transport, ledger)
        finally:
            await client.aclose()

    try:
        report = asyncio.run(run())
        again = asyncio.run(run())
    finally:
        server.kill()
    assert report.done == 1 and report.set_aside == 2 and report.stopped == "empty"
    assert again.done == 0 and again.set_aside == 0, "a set-aside job is not tried again"
    assert queue.counts() == {"done": 1, "failed": 2}
    assert [e.body["score"] for e in ledger.entries(kind="decision")] == [0.8]
    ledger.close()
    queue.close()
