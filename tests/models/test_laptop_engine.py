"""The laptop's model on a real engine: ``exo models serve`` runs llama-cpp-python's server, a real exod uses it.

The suite serves the 0.5B GGUF (1 thread) to keep its time; ``benchmarks/bench_laptop.py`` runs the 1.5B.
An answer streams through exod from the server; the server is SIGKILLed mid-answer and the turn ends with a
typed error, the shown part kept as ``interrupted`` and nothing else of it stored; while it is down the
fallback route answers; once it is back (after the router's cooldown) it answers again. The proposal queue
drains to it exactly once after it returns.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from exo_core.errors import ConfigError
from exo_core.models import load_catalog
from exo_testkit import ROOT

from .laptop_kit import EngineProcess, free_port, need_engine, run_turn, turn_rows, write_home_config

ALIAS = "qwen2.5-coder-0.5b-instruct"
FALLBACK = "The local model answers while the laptop is away."


def _exo(*args: str, home: Path | None = None, extra_path: str = "") -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "EXO_HOME"}
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), extra_path) if p)
    command = [sys.executable, "-m", "exo_core.cli", *args]
    if home is not None:
        command += ["--home", str(home)]
    return subprocess.run(command, capture_output=True, text=True, env=env, cwd=str(ROOT), timeout=900)


def test_serve_prints_the_command_and_a_config_the_router_accepts(tmp_path: Path) -> None:
    model = tmp_path / "big-model-q4_k_m.gguf"
    model.write_bytes(b"GGUF")  # only its path is used: --print-config starts nothing
    done = _exo("models", "serve", str(model), "--port", "8081", "--threads", "1", "--print-config", "--json")
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert "-m llama_cpp.server" in out["command"] and "--n_threads 1" in out["command"]
    assert "--model_alias big-model" in out["command"] and out["base_url"] == "http://127.0.0.1:8081/v1"
    import tomllib

    config = tomllib.loads(out["config"])
    catalog = load_catalog(config, env={})
    assert [str(r) for r in catalog.roles["main"]] == ["laptop:big-model", "local:qwen2.5-coder-0.5b-instruct"]
    assert (
        catalog.provider("laptop").base_url.endswith(":8081/v1") and config["learning"]["route"] == "laptop:big-model"
    )
    assert catalog.provider("laptop").judge_calls, "the laptop's small model gets the core's judge of its calls"


def test_serve_with_a_key_tells_the_device_which_variable_holds_it(tmp_path: Path) -> None:
    import tomllib

    from exo_edge.laptop_server import ServeSettings, server_command, server_env

    model = tmp_path / "m.gguf"
    model.write_bytes(b"GGUF")
    done = _exo("models", "serve", str(model), "--key-env", "EXO_LAPTOP_KEY", "--print-config", "--json")
    config = tomllib.loads(json.loads(done.stdout)["config"])
    assert config["models"]["providers"]["laptop"]["key_env"] == ["EXO_LAPTOP_KEY"]
    # the key reaches the server through its environment, never its command line
    settings = ServeSettings(model, "m", key_env="EXO_LAPTOP_KEY")
    assert server_env({"EXO_LAPTOP_KEY": "k" * 32}, key_env="EXO_LAPTOP_KEY")["API_KEY"] == "k" * 32
    assert not any("k" * 32 in part for part in server_command(settings))
    with pytest.raises(ConfigError, match="EXO_LAPTOP_KEY"):
        server_env({}, key_env="EXO_LAPTOP_KEY")


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["/nonexistent/model.gguf"], "does not exist"),
        (["no-such-model"], "no model manifest named 'no-such-model'"),
        (["x.gguf", "--port", "0"], "not a port number"),
        (["x.gguf", "--n-ctx", "64"], "too small"),
    ],
)
def test_serve_refuses_bad_input_with_the_reason(tmp_path: Path, args: list[str], says: str) -> None:
    (tmp_path / "x.gguf").write_bytes(b"GGUF")
    done = subprocess.run(
        [sys.executable, "-m", "exo_core.cli", "models", "serve", *args, "--print-config"],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        cwd=str(tmp_path),
        timeout=120,
    )
    assert done.returncode == 2 and says in done.stderr, done.stderr


def _need_exod() -> None:
    for module in ("exo_core.daemon", "exo_core.client.client", "llama_cpp"):
        if importlib.util.find_spec(module) is None:
            pytest.skip(f"{module} is not installed in this tree")


@pytest.mark.model
@pytest.mark.slow
async def test_answers_stream_from_the_engine_and_a_killed_engine_loses_nothing(tmp_path: Path) -> None:
    model = need_engine()
    _need_exod()
    from exo_core.client.client import ExoClient
    from exo_testkit import Exod, write_script

    home, ws = tmp_path / "home", tmp_path / "ws"
    ws.mkdir()
    (ws / "notes.txt").write_text("buy milk\n", encoding="utf-8")
    engine = EngineProcess(model, free_port(), tmp_path / "engine.log").start()
    # The fallback route stands in for the device's local model (a real one is tested in test_exod_local.py).
    fallback = write_script(tmp_path / "fallback.json", [{"text": FALLBACK}] * 20)
    write_home_config(home, engine.base_url, [f"laptop:{ALIAS}", f"scripted:{fallback}"])
    exod = Exod(home, fallback, ws, extra=["--model", "local"]).start(timeout=60)
    try:
        async with ExoClient(exod.url) as client:
            await client.hello()
            session = (await client.request("session.create", {"title": "laptop"}))["session"]["id"]

            # 1. An answer streams from the engine, piece by piece, and is stored whole.
            deltas, done, turn = await run_turn(client, session, "What is the capital of France? One sentence.")
            answer = "".join(deltas)
            assert done["stop_reason"] == "end" and len(deltas) > 2, done
            assert "Paris" in answer and FALLBACK not in answer, answer
            status, rows = turn_rows(home, turn)
            assert status == "completed" and [r for r in rows if r[0] == "assistant"] == [
                ("assistant", answer, "complete")
            ]

            # 2. A tool call the engine writes (Qwen's <tool_call> in the text) is run by the loop.
            fresh = (await client.request("session.create", {"title": "tool"}))["session"]["id"]
            events: list[Any] = []
            tool_turn = await client.request("turn.send", {"session": fresh, "text": "Read the file notes.txt."})
            async for event in client.events(session=fresh):
                events.append(event)
                if event.type == "turn.completed" and event.body.get("turn_id") == tool_turn["turn_id"]:
                    break
            started = [e.body.get("name") for e in events if e.type == "tool.started"]
            assert started[:1] == ["read_file"], [(e.type, e.body) for e in events]
            # ... and the engine, given the call and its result, answers the turn (not the fallback)
            status, rows = turn_rows(home, tool_turn["turn_id"])
            said = [r[1] for r in rows if r[0] == "assistant" and r[1]]
            assert status == "completed" and said and FALLBACK not in said, rows

            # 3. The engine is SIGKILLed after the third piece of a long answer: the turn ends with a typed
            #    error, what was shown is kept marked interrupted, nothing else of the answer is stored.
            async def kill_at_three(n: int) -> None:
                if n == 3:
                    engine.kill()

            deltas, done, turn = await run_turn(
                client, session, "Write a long story about a lighthouse keeper, 400 words.", on_delta=kill_at_three
            )
            killed_at = time.monotonic()
            # model_retry: a RetryableProviderError (network), named for the route that failed
            assert done["stop_reason"] == "error" and done["error"].startswith("model_retry: laptop:"), done
            assert "stream" in done["error"], done
            status, rows = turn_rows(home, turn)
            assistant = [r for r in rows if r[0] == "assistant"]
            assert status == "error" and len(deltas) >= 3
            assert assistant == [("assistant", "".join(deltas), "interrupted")]

            # 4. While it is down (and resting), the fallback answers at once.
            deltas, done, turn = await run_turn(client, session, "Are you there?")
            assert done["stop_reason"] == "end" and "".join(deltas) == FALLBACK, done

            # 5. It comes back; once its 15 s network cooldown has passed the next turn probes it and it answers.
            engine.start()
            time.sleep(max(0.0, 16.0 - (time.monotonic() - killed_at)))
            deltas, done, turn = await run_turn(client, session, "What is 2 + 3? Answer with the number.")
            assert done["stop_reason"] == "end" and "".join(deltas) != FALLBACK and "5" in "".join(deltas), done
    finally:
        exod.stop()
        engine.stop()


QUEUE_JOBS = """
import sys
from pathlib import Path
from exo_core.ledger import Ledger, load_signing_key
from exo_core.learning.learner import Learner
from exo_edge.proposal_queue import ProposalQueue
from exo_core.store import Store
from learnkit import Clock, Env
from simperson import Simulation
home = Path(sys.argv[1]); store = Store.open(home / "store"); clock = Clock()
ledger = Ledger.open_store(store.root, signer=load_signing_key(home / "keys"), clock=clock)
queue = ProposalQueue(home / "learning" / "queue.sqlite")
env = Env(home, store, None, clock, ledger, Learner(store, ledger, queue=queue))
Simulation(env, seed=5).run(sessions=2, drafts=3)
for n in range(2):
    queue.put("judge", {"criterion": "Leads with the result.", "reply": f"Done: {n} files.", "item": f"i{n}"},
              key=f"judge-{n}")
print(json.dumps(queue.counts()))
"""


@pytest.mark.model
@pytest.mark.slow
def test_queued_jobs_drain_to_the_engine_exactly_once_after_it_returns(tmp_path: Path) -> None:
    model = need_engine()
    from exo_core.ledger import Ledger, create_signing_key, load_signing_key
    from exo_core.store import init_store
    from exo_edge.proposal_queue import ProposalQueue

    home = tmp_path / "home"
    create_signing_key(home / "keys")
    init_store(home / "store", owner_key_ids=[load_signing_key(home / "keys").key_id])
    engine = EngineProcess(model, free_port(), tmp_path / "engine.log")
    write_home_config(
        home, engine.base_url, [f"laptop:{ALIAS}"], extra=f'\n[learning]\nroute = "laptop:{ALIAS}"\nbatch = 50\n'
    )
    learning = str(Path(__file__).resolve().parent.parent / "learning")
    made = subprocess.run(
        [sys.executable, "-c", "import json\n" + QUEUE_JOBS, str(home)],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), str(ROOT / "tests"), learning])},
        cwd=str(ROOT),
        timeout=300,
    )
    assert made.returncode == 0, made.stderr
    queue = ProposalQueue(home / "learning" / "queue.sqlite")
    total = queue.counts()["queued"]
    kinds = {job.kind for job in queue.pending(100)}
    assert total >= 3 and kinds == {"reflect", "judge"}, queue.pending(100)

    # The engine is down: a drain changes nothing.
    down = _exo("learn", "drain", "--json", home=home)
    assert down.returncode == 0, down.stderr
    assert json.loads(down.stdout)["stopped"].startswith("route unavailable") and queue.counts() == {"queued": total}

    # It comes back: every job is answered by it and recorded once; a second drain has nothing to do.
    engine.start()
    try:
        first = _exo("learn", "drain", "--json", home=home)
        second = _exo("learn", "drain", "--json", home=home)
    finally:
        engine.stop()
    assert json.loads(first.stdout) == {
        "done": total,
        "already_done": 0,
        "set_aside": 0,
        "stopped": "empty",
        "cost": 0.0,
    }, first
    assert json.loads(second.stdout)["done"] == 0 and json.loads(second.stdout)["already_done"] == 0, second
    assert queue.counts() == {"done": total}
    with Ledger.open_store(home / "store") as ledger:
        idems = [e.idem for e in ledger.entries() if (e.idem or "").startswith("queue:")]
        judged = [e.body["score"] for e in ledger.entries(kind="decision") if (e.idem or "").startswith("queue:")]
    assert len(idems) == total and len(set(idems)) == total, "each job's result exactly once"
    assert len(judged) == 2 and all(0.0 <= s <= 1.0 for s in judged)
    queue.close()
