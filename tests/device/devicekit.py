"""Running ``exo device --mock`` as a real subprocess and reading its journal and frames.

Shared by the device tests and ``benchmarks/bench_voice.py`` (one journal reader, issue 20 item 6).
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from collections.abc import Iterator
from typing import Any, Callable

from exo_testkit import ROOT

from device.layouts import ScreenSpec, render
from device.state import ScreenState


class DeviceProc:
    """``python -m exo_core.cli device --mock`` with stdin commands and a JSON-lines journal on stdout."""

    def __init__(
        self,
        home: Path,
        out: Path,
        size: str | None = "128x64",
        extra: list[str] | None = None,
        *,
        playback_speed: int = 6,
    ) -> None:
        self.frames = out / "frames"
        self.spoken = out / "spoken"
        self.journal: list[dict[str, Any]] = []
        self._lock = threading.RLock()
        env = {k: v for k, v in os.environ.items() if k not in ("EXO_TOKEN", "EXO_HOME")}
        env["PYTHONPATH"] = str(ROOT)
        cmd = [
            sys.executable,
            "-m",
            "exo_core.cli",
            "device",
            "--home",
            str(home),
            "--mock",
            "--frames",
            str(self.frames),
            "--audio-out",
            str(self.spoken),
            "--playback-speed",
            str(playback_speed),
            *(extra or []),
        ]
        if size is not None:
            cmd += ["--size", size]
        self.stderr = open(out / "device.err", "wb")
        self.proc = subprocess.Popen(
            cmd,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self.stderr,
            text=True,
            bufsize=1,
            env=env,
            cwd=str(out),
        )
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            try:
                record = json.loads(line)
            except json.JSONDecodeError:
                continue
            with self._lock:
                self.journal.append(record)

    def send(self, line: str) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(line + "\n")
        self.proc.stdin.flush()

    def mark(self) -> int:
        """The journal position now (wait for things after it)."""
        with self._lock:
            return len(self.journal)

    def wait(
        self, predicate: Callable[[dict[str, Any]], bool], since: int = 0, timeout: float = 30.0
    ) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self._lock:
                for record in self.journal[since:]:
                    if predicate(record):
                        return record
            if self.proc.poll() is not None:
                raise AssertionError(f"exo device exited ({self.proc.returncode}): {self.err()}")
            time.sleep(0.02)
        raise AssertionError(f"timed out; journal tail: {self.journal[-15:]}\n{self.err()}")

    def ev(self, kind: str, since: int = 0, timeout: float = 30.0, **fields: Any) -> dict[str, Any]:
        return self.wait(
            lambda r: r.get("ev") == kind and all(r.get(k) == v for k, v in fields.items()), since, timeout
        )

    def all(self, kind: str, since: int = 0) -> list[dict[str, Any]]:
        with self._lock:
            return [r for r in self.journal[since:] if r.get("ev") == kind]

    def frames_index(self) -> list[dict[str, Any]]:
        path = self.frames / "frames.jsonl"
        if not path.exists():
            return []
        return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]

    def wait_frame(
        self, predicate: Callable[[dict[str, Any]], bool], timeout: float = 20.0, *, latest: bool = False
    ) -> dict[str, Any]:
        """A frame matching ``predicate`` (with ``latest``: only the newest frame counts)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            index = self.frames_index()
            for entry in reversed(index[-1:] if latest else index):
                if predicate(entry):
                    return entry
            time.sleep(0.05)
        tail = [r for r in self.journal if r.get("ev") not in ("frame", "event")][-12:]
        raise AssertionError(f"no such frame; last: {self.frames_index()[-3:]}; journal: {tail}")

    def image(self, entry: dict[str, Any]):
        from PIL import Image

        with Image.open(self.frames / entry["file"]) as img:
            img.load()
            return img

    def err(self) -> str:
        try:
            return (self.stderr.name and Path(self.stderr.name).read_text(errors="replace")[-3000:]) or ""
        except OSError:
            return ""

    def quit(self) -> int:
        if self.proc.poll() is None:
            try:
                self.send("quit")
            except (BrokenPipeError, OSError):
                pass
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
        self.stderr.close()
        return self.proc.returncode


@contextlib.contextmanager
def online_device(
    home: Path, out: Path, size: str | None = "128x64", extra: list[str] | None = None
) -> Iterator[DeviceProc]:
    """A device in ``out`` (made here) whose link to the core is online; quit at the end, its exit code asserted 0."""
    out.mkdir(exist_ok=True)
    dev = DeviceProc(home, out, size, extra)
    try:
        dev.ev("link", state="online")
        yield dev
    finally:
        assert dev.quit() == 0


def reference(state: ScreenState, spec: ScreenSpec, entry: dict[str, Any]):
    """The frame the device should have drawn for ``state``, with the status line from the frame's own record."""
    return render(
        state.with_(
            link=entry.get("link", "online"),
            activity=entry.get("activity", "idle"),
            pending=entry.get("pending", 0),
            phase=entry.get("phase", ""),
            elapsed=entry.get("elapsed", 0),
        ),
        spec,
    )


def same_region(a, b, box: tuple[int, int, int, int]) -> bool:
    return a.crop(box).tobytes() == b.crop(box).tobytes()
