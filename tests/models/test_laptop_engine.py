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
    import stat
    import tomllib

    model = tmp_path / "big-model-q4_k_m.gguf"
    model.write_bytes(b"GGUF")  # only its path is used: --print-config starts nothing
    home = tmp_path / "laptop-home"
    done = _exo(
        "models", "serve", str(model), "--port", "8081", "--threads", "1", "--print-config", "--json", home=home
    )
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert "-m llama_cpp.server" in out["command"] and "--n_threads 1" in out["command"]
    # the engine never cuts a running answer for a new request
    assert "--interrupt_requests False" in out["command"]
    # on the LAN (the default 0.0.0.0) it speaks TLS with its own certificate, made once in the laptop's home
    assert "--ssl_certfile" in out["command"] and out["base_url"] == "https://127.0.0.1:8081/v1"
    assert "--model_alias big-model" in out["command"]
    key = (home / "engine" / "api-key").read_text(encoding="ascii").strip()
    assert len(key) >= 32 and key not in out["command"]  # the key reaches the server by its environment
    for made in ("api-key", "tls-key.pem"):
        assert stat.S_IMODE((home / "engine" / made).stat().st_mode) == 0o600
    assert stat.S_IMODE((home / "engine").stat().st_mode) == 0o700
    config = tomllib.loads(out["config"])
    laptop = config["models"]["providers"]["laptop"]
    assert laptop["api_key"] == key and laptop["base_url"].startswith("https://")
    assert laptop["tls_cert"].strip() == (home / "engine" / "tls-cert.pem").read_text(encoding="ascii").strip()
    catalog = load_catalog(config, env={})  # the device accepts it: https and a key
    assert [str(r) for r in catalog.roles["main"]] == ["laptop:big-model", "local:qwen2.5-coder-0.5b-instruct"]
    assert config["learning"]["route"] == "laptop:big-model"
    assert catalog.provider("laptop").judge_calls, "the laptop's small model gets the core's judge of its calls"
    assert catalog.credentials("laptop", {})[0].key == key
    # a second serve keeps the key and the certificate (devices pinned them)
    again = json.loads(_exo("models", "serve", str(model), "--print-config", "--json", home=home).stdout)
    kept = tomllib.loads(again["config"])["models"]["providers"]["laptop"]
    assert (kept["api_key"], kept["tls_cert"]) == (laptop["api_key"], laptop["tls_cert"])


def test_serve_with_a_key_variable_or_without_tls(tmp_path: Path) -> None:
    import tomllib

    from exo_edge.laptop_server import ServeSettings, server_command, server_env

    model = tmp_path / "m.gguf"
    model.write_bytes(b"GGUF")
    home = tmp_path / "laptop-home"
    done = _exo("models", "serve", str(model), "--key-env", "EXO_LAPTOP_KEY", "--print-config", "--json", home=home)
    assert done.returncode == 2 and "EXO_LAPTOP_KEY" in done.stderr, done.stderr
    os.environ["EXO_LAPTOP_KEY"] = "k" * 32
    try:
        done = _exo("models", "serve", str(model), "--key-env", "EXO_LAPTOP_KEY", "--print-config", "--json", home=home)
    finally:
        del os.environ["EXO_LAPTOP_KEY"]
    config = tomllib.loads(json.loads(done.stdout)["config"])
    assert config["models"]["providers"]["laptop"]["api_key"] == "k" * 32
    # the key reaches the server through its environment, never its command line
    settings = ServeSettings(model, "m", api_key="k" * 32)
    assert server_env({}, api_key="k" * 32)["API_KEY"] == "k" * 32
    assert "API_KEY" not in server_env({"API_KEY": "inherited"})
    assert not any("k" * 32 in part for part in server_command(settings))
    # --no-tls on the LAN prints plain HTTP, which a device refuses until the person opts in by name
    plain = _exo("models", "serve", str(model), "--no-tls", "--advertise", "laptop.lan", "--print-config", home=home)
    assert plain.returncode == 0, plain.stderr
    text = plain.stdout.split("\n", 1)[1]
    assert 'base_url = "http://laptop.lan:8080/v1"' in text and 'allow_insecure = ["plain-http"]' in text
    with pytest.raises(ConfigError, match="plain HTTP"):
        load_catalog(tomllib.loads(text), env={})
    opted = text.replace('# allow_insecure = ["plain-http"]', 'allow_insecure = ["plain-http"]')
    assert load_catalog(tomllib.loads(opted), env={}).provider("laptop").allow_insecure == ("plain-http",)


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
    write_home_config(home, engine.base_url, [f"laptop:{ALIAS}", f"scripted:{fallback}"], api_key=engine.key)
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

            # 2. A tool call the engine writes (Qwen's <tool_call> in the text) is run by the loop. The engine
            #    samples and the 0.5B sometimes answers in words ("I will read the file ..."): up to three fresh
            #    sessions ask, and the first where it writes a call is checked.
            for _attempt in range(3):
                fresh = (await client.request("session.create", {"title": "tool"}))["session"]["id"]
                events: list[Any] = []
                tool_turn = await client.request("turn.send", {"session": fresh, "text": "Read the file notes.txt."})
                async for event in client.events(session=fresh):
                    events.append(event)
                    if event.type == "turn.completed" and event.body.get("turn_id") == tool_turn["turn_id"]:
                        break
                started = [e.body.get("name") for e in events if e.type == "tool.started"]
                if started:
                    break
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
        home,
        engine.base_url,
        [f"laptop:{ALIAS}"],
        extra=f'\n[learning]\nroute = "laptop:{ALIAS}"\nbatch = 50\n',
        api_key=engine.key,
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


def _status(url: str, *, key: str | None, body: dict[str, Any] | None = None) -> int:
    """The HTTP status the engine answers ``url`` with (a GET, or a POST of ``body``)."""
    import urllib.error
    import urllib.request

    headers = {"Content-Type": "application/json"}
    if key is not None:
        headers["Authorization"] = f"Bearer {key}"
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(url, data=data, headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=300) as resp:
            return int(resp.status)
    except urllib.error.HTTPError as exc:
        return int(exc.code)


@pytest.mark.model
@pytest.mark.slow
def test_the_engine_refuses_requests_without_its_key(tmp_path: Path) -> None:
    engine = EngineProcess(need_engine(), free_port(), tmp_path / "engine.log").start()
    ask = {"model": ALIAS, "messages": [{"role": "user", "content": "Say yes."}], "max_tokens": 2}
    try:
        assert _status(engine.base_url + "/models", key=None) == 401
        assert _status(engine.base_url + "/chat/completions", key=None, body=ask) == 401
        assert _status(engine.base_url + "/chat/completions", key="x" * 43, body=ask) == 401
        assert _status(engine.base_url + "/models", key=engine.key) == 200
        assert _status(engine.base_url + "/chat/completions", key=engine.key, body=ask) == 200
        # the server (exec'd in place of `exo models serve`) has the key in its environment, not its command
        # line, which ps shows every local user, and never cuts a running answer
        assert engine.proc is not None
        cmdline = Path(f"/proc/{engine.proc.pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
        assert "llama_cpp.server" in cmdline and engine.key not in cmdline
        assert "--interrupt_requests False" in cmdline
    finally:
        engine.stop()


# Plain questions, and replies to the draft before them the signal rules leave open, so the decider asks
# the engine while the next turn runs.
UNDER_LOAD = [
    "What is the capital of France? One sentence.",
    "hmm, the second one maybe",
    "What is 12 times 12?",
    "not quite what I meant",
    "Which planet is closest to the sun?",
    "could be warmer",
]


@pytest.mark.model
@pytest.mark.long  # 14 min on the loaded 2-core machine: every turn re-reads exod's prompt after a background one
async def test_no_answer_is_cut_by_exods_own_background_work(tmp_path: Path) -> None:
    """The set-up as documented: the engine `exo models serve` starts, the config it prints, the signal decider
    and the queue drainer on the same engine. Every turn is the engine's answer: none empty, none cut to the
    fallback, while the background work really reaches the engine."""
    model = need_engine()
    _need_exod()
    from exo_core.client.client import ExoClient
    from exo_edge.proposal_queue import ProposalQueue
    from exo_testkit import Exod, write_script

    home, ws = tmp_path / "home", tmp_path / "ws"
    ws.mkdir()
    init = _exo("init", home=home)
    assert init.returncode == 0, init.stderr
    engine = EngineProcess(model, free_port(), tmp_path / "engine.log").start()
    fallback = write_script(tmp_path / "fallback.json", [{"text": FALLBACK}] * 20)
    write_home_config(
        home,
        engine.base_url,
        [f"laptop:{ALIAS}", f"scripted:{fallback}"],
        first_byte=120.0,
        api_key=engine.key,
        extra=(
            f'\n[learning]\nroute = "laptop:{ALIAS}"\ndrain_every = 0.5\nbatch = 2\n\n'
            "[decisions]\nask_person = false\nlarger_timeout = 120.0\n"
        ),
    )
    config = (home / "config.toml").read_text(encoding="utf-8")
    (home / "config.toml").write_text(f'store = "{home / "store"}"\n' + config, encoding="utf-8")
    queue = ProposalQueue(home / "learning" / "queue.sqlite")
    for n in range(20):
        inputs = {"criterion": "Leads with the result.", "reply": f"Done: {n} files moved.", "item": f"i{n}"}
        queue.put("judge", inputs, key=f"judge-{n}")
    exod = Exod(home, fallback, ws, extra=["--model", "local"]).start(timeout=60)
    try:
        async with ExoClient(exod.url) as client:
            await client.hello()
            session = (await client.request("session.create", {"title": "under load"}))["session"]["id"]
            answers = []
            for question in UNDER_LOAD:
                deltas, done, _turn = await run_turn(client, session, question)
                answers.append(("".join(deltas), done["stop_reason"], done.get("hint")))
        deadline = time.monotonic() + 120
        while queue.counts().get("done", 0) == 0 and time.monotonic() < deadline:
            time.sleep(0.5)
        drained = queue.counts().get("done", 0)
    finally:
        exod.stop()
        engine.stop()
        queue.close()
    empty = [a for a in answers if not a[0].strip()]
    cut = [a for a in answers if a[0].strip() == FALLBACK]
    assert empty == [] and cut == [], answers
    assert all(stop == "end" for _text, stop, _hint in answers), answers
    requests = (tmp_path / "engine.log").read_text(errors="replace").count("POST /v1/chat/completions")
    assert requests > len(UNDER_LOAD) and drained > 0, (requests, drained)  # the decider and drainer ran
