"""Memory of a process tree, sampled from ``/proc`` while the audit runs."""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence
from pathlib import Path

__all__ = ["MemorySampler", "status_kb", "maps_has"]


def status_kb(pid: int) -> dict[str, int]:
    out: dict[str, int] = {}
    try:
        with open(f"/proc/{pid}/status", encoding="ascii", errors="replace") as fh:
            for line in fh:
                key, _, value = line.partition(":")
                if key in ("VmRSS", "VmHWM", "RssAnon", "RssFile"):
                    out[key] = int(value.split()[0])
    except OSError:
        return {}
    return out


def _descendants(roots: Sequence[int]) -> set[int]:
    """``roots`` and every process below them (from ``/proc/*/stat``)."""
    parents: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", encoding="ascii", errors="replace") as fh:
                stat = fh.read()
        except OSError:
            continue
        parents[int(entry)] = int(stat.rsplit(")", 1)[1].split()[1])
    found = {r for r in roots if r in parents}
    grew = True
    while grew:
        grew = False
        for pid, ppid in parents.items():
            if ppid in found and pid not in found:
                found.add(pid)
                grew = True
    return found


def _comm(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace").strip()[:120]
    except OSError:
        return "?"


class MemorySampler:
    """Samples RSS of every process under the given roots every ``interval`` seconds (own thread)."""

    def __init__(self, interval: float = 0.05) -> None:
        self.roots: list[int] = []
        self.peaks_kb: dict[int, int] = {}
        self.split_kb: dict[int, tuple[int, int]] = {}  # sampled peak RssAnon, RssFile (mapped files: the model)
        self.names: dict[int, str] = {}
        self.concurrent_kb = 0  # the largest sampled sum of RSS
        self.live_peaks_kb = 0  # the largest sampled sum of VmHWM over the processes alive together
        self.watch: tuple[int, str] | None = None  # (pid, file name): was the file ever mapped into pid?
        self.watch_seen = False
        self._interval = interval
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._run, name="footprint-sampler", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def add_root(self, pid: int) -> None:
        with self._lock:
            self.roots.append(pid)

    def sample(self) -> None:
        with self._lock:
            roots = list(self.roots)
        total = live_peaks = 0
        for pid in _descendants(roots):
            status = status_kb(pid)
            if not status:
                continue
            total += status.get("VmRSS", 0)
            live_peaks += status.get("VmHWM", 0)
            with self._lock:
                if pid not in self.names or self.names[pid].startswith(("sh -c", "taskset", "systemd-run", "prlimit")):
                    self.names[pid] = _comm(pid)  # read again until the limit's wrapper has exec'd the command
                self.peaks_kb[pid] = max(self.peaks_kb.get(pid, 0), status.get("VmHWM", 0))
                anon, file = self.split_kb.get(pid, (0, 0))
                self.split_kb[pid] = (max(anon, status.get("RssAnon", 0)), max(file, status.get("RssFile", 0)))
        with self._lock:
            self.concurrent_kb = max(self.concurrent_kb, total)
            self.live_peaks_kb = max(self.live_peaks_kb, live_peaks)
            watch = self.watch if not self.watch_seen else None
        if watch is not None and maps_has(*watch):
            self.watch_seen = True

    def _run(self) -> None:
        while not self._stop.wait(self._interval):
            self.sample()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)
        self.sample()


def maps_has(pid: int, suffix: str) -> bool:
    try:
        with open(f"/proc/{pid}/maps", encoding="utf-8", errors="replace") as fh:
            return any(line.rstrip().endswith(suffix) for line in fh)
    except OSError:
        return False
