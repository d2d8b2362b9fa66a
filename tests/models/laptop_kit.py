"""What the laptop-engine tests share: a home whose ``main`` role is a server, a turn followed to its end,
and the rows a turn left in ``sessions.sqlite``."""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

__all__ = ["write_home_config", "run_turn", "turn_rows", "need_engine", "free_port", "EngineProcess", "SMALL_MODEL"]


def write_home_config(
    home: Path,
    base_url: str,
    routes: list[str],
    *,
    first_byte: float = 30.0,
    idle: float = 60.0,
    extra: str = "",
    api_key: str | None = None,
) -> None:
    """A config.toml with provider ``laptop`` at ``base_url`` (with ``api_key``) and ``main`` = ``routes``."""
    home.mkdir(parents=True, exist_ok=True)
    quoted = ", ".join(f'"{r}"' for r in routes)
    key = f'api_key = "{api_key}"\n' if api_key else ""
    (home / "config.toml").write_text(
        "[models.providers.laptop]\n"
        'kind = "openai"\n'
        f'base_url = "{base_url}"\n'
        "key_env = []\n" + key + "judge_calls = true\n\n"
        "[models.providers.scripted]\n"
        'kind = "scripted"\n\n'
        "[models.roles]\n"
        f"main = [{quoted}]\n\n"
        "[models.timeouts]\n"
        f"connect = 2.0\nfirst_byte = {first_byte}\nidle = {idle}\n" + extra,
        encoding="utf-8",
    )


async def run_turn(
    client: Any, session: str, text: str, *, on_delta: Any = None, timeout: float = 600.0
) -> tuple[list[str], dict[str, Any], str]:
    """Send ``text``; the streamed deltas, the ``turn.completed`` body and the turn id.

    ``on_delta(n)`` is awaited after the n-th delta (to kill a server mid-answer).
    """
    deltas: list[str] = []
    turn = (await client.request("turn.send", {"session": session, "text": text}))["turn_id"]

    async def follow() -> dict[str, Any]:
        async for event in client.events(session=session):
            if event.type == "message.delta" and event.body.get("turn_id", turn) == turn:
                deltas.append(event.body.get("text", ""))
                if on_delta is not None:
                    await on_delta(len(deltas))
            if event.type == "turn.completed" and event.body.get("turn_id", turn) == turn:
                return dict(event.body)
        raise AssertionError("event stream ended before turn.completed")

    done = await asyncio.wait_for(follow(), timeout)
    return deltas, done, turn


def turn_rows(home: Path, turn: str) -> tuple[str, list[tuple[str, str, str]]]:
    """The turn's status and its messages as ``(role, content, status)``, read from the file itself."""
    db = sqlite3.connect(f"file:{home / 'sessions.sqlite'}?mode=ro", uri=True)
    try:
        status = db.execute("SELECT status FROM turns WHERE id=?", (turn,)).fetchone()[0]
        rows = db.execute("SELECT role, content, status FROM messages WHERE turn_id=? ORDER BY id", (turn,)).fetchall()
    finally:
        db.close()
    return str(status), [(str(r[0]), str(r[1]), str(r[2])) for r in rows]


SMALL_MODEL = "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf"


def need_engine() -> Path:
    """The 0.5B GGUF the suite serves; skips with the reason when it or the server's packages are absent."""
    from exo_edge.laptop_server import missing_server_modules
    from exo_edge.paths import locate_model_file

    missing = missing_server_modules()
    if missing:
        pytest.skip(f"the laptop engine is not installed ({', '.join(missing)} missing): scripts/setup.sh")
    path = locate_model_file(SMALL_MODEL)
    if path is None:
        pytest.skip(f"{SMALL_MODEL} is not on this machine (exo models fetch qwen2.5-coder-0.5b-instruct)")
    return path


def free_port() -> int:
    """A loopback port free right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class EngineProcess:
    """``exo models serve`` as a real process: it execs llama_cpp.server, so its pid is the server's.

    Its Exo home (the laptop's, beside ``log``) holds the engine's key, made here so a test can write
    the device's config before the engine starts; :attr:`key` is what the device sends.
    """

    def __init__(self, model: Path, port: int, log: Path, *, n_ctx: int = 4096, threads: int | None = None) -> None:
        from exo_core.seams.home import ExoHome
        from exo_edge.laptop_server import engine_key

        self.model, self.port, self.log, self.n_ctx = model, port, log, n_ctx
        self.threads = threads  # None: the suite's MODEL_THREADS
        self.proc: subprocess.Popen[bytes] | None = None
        self.home = log.parent / f"laptop-home-{port}"
        self.key = engine_key(ExoHome(self.home))

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def start(self, timeout: float = 300.0) -> "EngineProcess":
        from exo_edge.laptop_server import wait_ready
        from exo_testkit import MODEL_THREADS, ROOT

        env = {k: v for k, v in os.environ.items() if k != "EXO_HOME"}
        env["PYTHONPATH"] = str(ROOT)
        command = [sys.executable, "-m", "exo_core.cli", "models", "serve", str(self.model), "--home", str(self.home)]
        command += [
            "--host",
            "127.0.0.1",
            "--port",
            str(self.port),
            "--threads",
            str(self.threads or MODEL_THREADS),
            "--n-ctx",
            str(self.n_ctx),
        ]
        with open(self.log, "ab") as out:
            self.proc = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, env=env, cwd=str(ROOT))
        wait_ready(self.base_url, proc=self.proc, timeout=timeout, api_key=self.key)
        return self

    def kill(self) -> None:
        """SIGKILL, as a crash or a pulled plug would."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait(30)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.kill()
