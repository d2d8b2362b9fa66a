"""Small board first: what the CLI imports at start (the old line budget is retired: docs/architecture.md, "Checks")."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys

from exo_testkit import ROOT


def test_the_cli_imports_nothing_heavy_at_start() -> None:
    code = (
        "import sys, exo_core.cli.main as m; m.build_parser(); "
        "heavy = [n for n in ('aiohttp', 'numpy', 'nacl', 'llama_cpp', 'onnxruntime', 'sqlite3') if n in sys.modules]; "
        "print(','.join(heavy))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True)
    assert out.stdout.strip() == "", f"importing the CLI pulled in: {out.stdout.strip()}"


# Run in the child: exod itself, in this process, with a watcher thread that waits until it answers
# GET /health on its socket, then writes the names in sys.modules and stops it with SIGTERM.
_IDLE_EXOD = """
import http.client, json, os, signal, socket, sys, threading, time
from pathlib import Path

home, workspace, out = sys.argv[1:4]


class Unix(http.client.HTTPConnection):
    def connect(self):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(5)
        self.sock.connect(str(Path(home) / "run" / "exod.sock"))


def healthy():
    conn = Unix("localhost", timeout=5)
    try:
        conn.request("GET", "/health")
        return conn.getresponse().status == 200
    except OSError:
        return False
    finally:
        conn.close()


def watch():
    deadline = time.monotonic() + 60
    while not healthy():
        if time.monotonic() > deadline:
            os._exit(3)
        time.sleep(0.05)
    time.sleep(0.5)  # idle, as the footprint audit measures it
    Path(out).write_text(json.dumps(sorted(sys.modules)))
    os.kill(os.getpid(), signal.SIGTERM)


threading.Thread(target=watch, daemon=True).start()
from exo_core.cli.main import main

sys.exit(main(["serve", "--home", home, "--model", "local", "--workspace", workspace, "--log-level", "WARNING"]))
"""

# What idle exod must not hold (docs/benchmarks.md §2): the model runtime, the embedder's runtime, the local
# transport and its chat path, the fetcher, and the gate's shell rules; each is imported on first use. Nor the other
# ``exo`` commands' modules (the CLI registers commands only until the one it runs), the store's lint, export and
# import, verify and sync, and difflib (an edit's last resort); nor the signal decision's settler and the proposal
# queue, made for the first person message after a draft.
_NOT_AT_IDLE = (
    "exo_core.decisions.signal_escalation",
    "exo_edge.proposal_queue",
    "exo_core.store.lint",
    "exo_core.store.transfer",
    "exo_core.store.sync",
    "exo_core.store.verify",
    "difflib",
    "exo_core.cli.chat_cmd",
    "exo_core.cli.store_cmd",
    "exo_core.cli.ledger_cmd",
    "exo_core.cli.bench_cmd",
    "exo_core.cli.learn_cmd",
    "exo_edge.models_cmd",
    "llama_cpp",
    "numpy",
    "onnxruntime",
    "tokenizers",
    "exo_edge.llama_transport",
    "exo_edge.llama_completion",
    "exo_edge.chat_run",
    "exo_edge.grammar_decode",
    "exo_edge.fetch",
    "exo_core.gate.command_line",
)


def test_idle_exod_imports_no_model_runtime_and_nothing_it_needs_only_on_first_use(tmp_path) -> None:
    home, workspace, out = tmp_path / "home", tmp_path / "ws", tmp_path / "modules.json"
    workspace.mkdir()
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_WAIT_POLICY": "PASSIVE"}
    init = [sys.executable, "-m", "exo_core.cli", "init", "--home", str(home), "--board", "standard"]
    subprocess.run(init, cwd=ROOT, env=env, check=True, capture_output=True, timeout=120)
    proc = subprocess.Popen(
        [sys.executable, "-c", _IDLE_EXOD, str(home), str(workspace), str(out)],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        _, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGKILL)
            proc.wait()
    assert out.exists(), f"exod never became healthy (exit {proc.returncode}): {err.decode()[-2000:]}"
    modules = set(json.loads(out.read_text()))
    assert "exo_core.daemon" in modules and "exo_edge.local" in modules  # the board's local route is wired
    held = [name for name in _NOT_AT_IDLE if name in modules]
    assert held == [], f"idle exod imported {held}; import them on first use (docs/benchmarks.md §2)"


def test_exod_limits_glibc_to_one_malloc_arena_unless_the_person_set_it() -> None:
    """Idle exod's 50 MB budget (exo_core/heap.py): one arena, the person's MALLOC_ARENA_MAX wins."""
    code = "from exo_core.heap import one_malloc_arena; print(one_malloc_arena())"
    env = {k: v for k, v in os.environ.items() if k != "MALLOC_ARENA_MAX"}
    env["PYTHONPATH"] = str(ROOT)
    applied = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    kept = subprocess.run(
        [sys.executable, "-c", code], env={**env, "MALLOC_ARENA_MAX": "4"}, capture_output=True, text=True, check=True
    )
    assert applied.stdout.strip() == "True" and kept.stdout.strip() == "False"
