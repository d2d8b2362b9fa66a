"""Shared test helpers: scripted models and real exod processes (imported as ``exo_testkit``)."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path


ROOT = Path(__file__).resolve().parent.parent
SHARED = ROOT.parent / "shared"
# llama.cpp threads for tests with a real model: the board default on 2 cores. Under OMP_WAIT_POLICY=PASSIVE
# (exo_edge sets it) two threads decoded 2.9-3.4x faster than one even at load 11-14 (docs/benchmarks.md §14).
MODEL_THREADS = 2


def write_script(path: Path, replies: list[dict]) -> Path:
    """Write a scripted-model file."""
    path.write_text(json.dumps({"replies": replies}), encoding="utf-8")
    return path


class Exod:
    """A real exod process on a temporary Unix socket (and optionally TCP)."""

    def __init__(
        self,
        home: Path,
        script: Path,
        workspace: Path,
        extra: list[str] | None = None,
        env: dict[str, str] | None = None,
    ) -> None:
        self.home = home
        self.script = script
        self.workspace = workspace
        self.extra = extra or []
        self.env = env or {}
        self.proc: subprocess.Popen[bytes] | None = None
        self.log = home / "exod-test.log"

    @property
    def socket(self) -> Path:
        return self.home / "run" / "exod.sock"

    @property
    def url(self) -> str:
        return f"unix://{self.socket}"

    def start(self, timeout: float = 60.0) -> "Exod":
        env = {k: v for k, v in os.environ.items() if k not in ("EXO_TOKEN", "EXO_HOME", "EXO_MODEL")}
        env.update({"PYTHONPATH": str(ROOT), **self.env})
        cmd = [
            sys.executable,
            "-m",
            "exo_core.cli",
            "serve",
            "--home",
            str(self.home),
            "--model",
            f"scripted:{self.script}",
            "--workspace",
            str(self.workspace),
            "--keepalive",
            "0.5",
            "--log-level",
            "WARNING",
            *self.extra,
        ]
        self.home.mkdir(parents=True, exist_ok=True)
        (self.home / "run" / "tcp.port").unlink(missing_ok=True)
        with open(self.log, "ab") as log:
            self.proc = subprocess.Popen(cmd, stdout=log, stderr=log, env=env, cwd=str(self.workspace))
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"exod exited early ({self.proc.returncode}): {self.log.read_text()}")
            if self.ready():
                return self
            time.sleep(0.05)
        raise RuntimeError(f"exod did not start: {self.log.read_text()}")

    def ready(self) -> bool:
        """Whether exod accepts connections (a stale socket file from a killed run does not count)."""
        if "--no-unix" in self.extra:
            port_file = self.home / "run" / "tcp.port"
            if not port_file.exists():
                return False
            target: object = ("127.0.0.1", int(port_file.read_text()))
            family = socket.AF_INET
        else:
            target, family = str(self.socket), socket.AF_UNIX
        probe = socket.socket(family, socket.SOCK_STREAM)
        try:
            probe.connect(target)  # type: ignore[arg-type]
        except OSError:
            return False
        finally:
            probe.close()
        return True

    def kill(self) -> None:
        """SIGKILL, as a crash would."""
        assert self.proc is not None
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(10)

    def stop(self) -> int:
        """SIGTERM and wait for a clean exit."""
        if self.proc is None or self.proc.poll() is not None:
            return self.proc.returncode if self.proc else 0
        self.proc.terminate()
        try:
            return self.proc.wait(20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            return self.proc.wait(10)
