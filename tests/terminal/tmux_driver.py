"""Drive a program in a real tmux pane: type with send-keys, read the screen with capture-pane."""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import time
import uuid
from pathlib import Path

from exo_testkit import ROOT

TMUX = shutil.which("tmux")


class Tmux:
    """One tmux server (its own socket) with one pane running ``command``."""

    def __init__(
        self, command: list[str], *, cwd: Path, env: dict[str, str], width: int = 110, height: int = 34
    ) -> None:
        assert TMUX, "tmux is not installed"
        self.socket = f"exo-test-{uuid.uuid4().hex[:8]}"
        full_env = {k: v for k, v in os.environ.items() if k not in ("EXO_TOKEN", "EXO_MODEL", "TMUX")}
        full_env.update({"PYTHONPATH": str(ROOT), "TERM": "xterm-256color", **env})
        exports = " ".join(f"{k}={shlex.quote(v)}" for k, v in env.items())
        shell = f"cd {shlex.quote(str(cwd))} && env PYTHONPATH={shlex.quote(str(ROOT))} {exports} {shlex.join(command)}"
        self._tmux("new-session", "-d", "-s", "exo", "-x", str(width), "-y", str(height), shell, env=full_env)

    def _tmux(
        self, *args: str, env: dict[str, str] | None = None, check: bool = True
    ) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [TMUX, "-L", self.socket, "-f", "/dev/null", *args],
            capture_output=True,
            text=True,
            env=env,
            check=check,
            timeout=20,
        )

    def type(self, text: str) -> None:
        self._tmux("send-keys", "-t", "exo", "-l", text)

    def keys(self, *names: str) -> None:
        self._tmux("send-keys", "-t", "exo", *names)

    def line(self, text: str) -> None:
        self.type(text)
        self.keys("Enter")

    def screen(self) -> str:
        return self._tmux("capture-pane", "-p", "-t", "exo").stdout

    def alive(self) -> bool:
        return self._tmux("has-session", "-t", "exo", check=False).returncode == 0

    def wait_for(self, text: str, timeout: float = 20.0) -> str:
        deadline = time.monotonic() + timeout
        while True:
            shown = self.screen() if self.alive() else ""
            if text in shown:
                return shown
            if time.monotonic() > deadline:
                raise AssertionError(f"{text!r} did not appear; the screen shows:\n{shown}")
            time.sleep(0.05)

    def wait_gone(self, text: str, timeout: float = 10.0) -> str:
        deadline = time.monotonic() + timeout
        while (shown := self.screen()) and text in shown:
            if time.monotonic() > deadline:
                raise AssertionError(f"{text!r} is still shown:\n{shown}")
            time.sleep(0.05)
        return shown

    def close(self) -> None:
        self._tmux("kill-server", check=False)
