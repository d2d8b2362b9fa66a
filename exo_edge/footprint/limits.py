"""How the audit limits memory and CPU: systemd-run, a memory cgroup (v2, then v1), or prlimit; taskset.

The strongest limit the machine allows is chosen (reported as ``limit.method``):
``systemd-run --scope -p MemoryMax=`` when systemd runs the machine; else a
memory cgroup made beside the caller's own, which every process of the run
joins before it executes (swap limited to zero); else ``prlimit --as`` (a
virtual-address limit: looser in meaning, stated as such).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

__all__ = ["MB", "Limit", "choose_limit", "pin_prefix"]

MB = 1024 * 1024


@dataclass(frozen=True, slots=True)
class Limit:
    """How the memory limit is enforced: a command prefix, and the cgroup when there is one."""

    method: str
    memory_mb: int
    prefix: tuple[str, ...]
    cgroup: Path | None = None
    cgroup_version: int = 0
    note: str = ""

    def peak_mb(self) -> float | None:
        """The cgroup's own peak memory (includes page cache), when known."""
        if self.cgroup is None:
            return None
        name = "memory.peak" if self.cgroup_version == 2 else "memory.max_usage_in_bytes"
        try:
            return int((self.cgroup / name).read_text().split()[0]) / MB
        except (OSError, ValueError, IndexError):
            return None

    def oom_kills(self) -> int | None:
        """Processes the kernel killed for exceeding the limit (None without a cgroup)."""
        if self.cgroup is None:
            return None
        name = "memory.events" if self.cgroup_version == 2 else "memory.oom_control"
        try:
            for line in (self.cgroup / name).read_text().splitlines():
                if line.startswith("oom_kill "):
                    return int(line.split()[1])
        except (OSError, ValueError):
            return None
        return 0

    def major_faults(self) -> int | None:
        """Major page faults of every process in the cgroup so far (``memory.stat``; None without a cgroup)."""
        if self.cgroup is None:
            return None
        wanted = "pgmajfault" if self.cgroup_version == 2 else "total_pgmajfault"
        try:
            for line in (self.cgroup / "memory.stat").read_text().splitlines():
                key, _, value = line.partition(" ")
                if key == wanted:
                    return int(value)
        except (OSError, ValueError):
            return None
        return None

    def limit_hits(self) -> int | None:
        """Times usage reached the limit and the kernel had to reclaim (cgroup v1 ``failcnt``; v2 ``max``)."""
        if self.cgroup is None:
            return None
        try:
            if self.cgroup_version == 2:
                for line in (self.cgroup / "memory.events").read_text().splitlines():
                    if line.startswith("max "):
                        return int(line.split()[1])
                return 0
            return max(
                int((self.cgroup / n).read_text())
                for n in ("memory.failcnt", "memory.memsw.failcnt")
                if (self.cgroup / n).exists()
            )
        except (OSError, ValueError):
            return None

    def remove(self) -> None:
        """Delete the cgroup (after every process in it has exited)."""
        if self.cgroup is not None and self.cgroup.is_dir():
            try:
                self.cgroup.rmdir()
            except OSError as exc:
                print(f"footprint: could not remove cgroup {self.cgroup}: {exc.strerror}", file=sys.stderr)


def _mounts() -> list[tuple[str, str, str]]:
    with open("/proc/mounts", encoding="utf-8") as fh:
        return [(p[1], p[2], p[3]) for p in (line.split() for line in fh) if len(p) >= 4]


def _own_cgroup(version: int) -> str | None:
    with open("/proc/self/cgroup", encoding="utf-8") as fh:
        for line in fh:
            hid, controllers, path = line.rstrip("\n").split(":", 2)
            if version == 2 and hid == "0" and controllers == "":
                return path
            if version == 1 and "memory" in controllers.split(","):
                return path
    return None


def _join_prefix(cgroup: Path) -> tuple[str, ...]:
    # The shell moves itself into the cgroup, then becomes the command: nothing runs outside it.
    return ("sh", "-c", 'echo $$ > "$0" && exec "$@"', str(cgroup / "cgroup.procs"))


def _try_cgroup(version: int, memory_mb: int) -> Limit | None:
    own = _own_cgroup(version)
    if own is None:
        return None
    for mount, fstype, options in _mounts():
        if version == 2 and fstype == "cgroup2":
            base = Path(mount + own)
        elif version == 1 and fstype == "cgroup" and "memory" in options.split(","):
            base = Path(mount + own)
        else:
            continue
        group = base / f"exo-footprint-{os.getpid()}"
        try:
            group.mkdir()
        except OSError:
            continue
        try:
            if version == 2:
                (group / "memory.max").write_text(f"{memory_mb * MB}\n")
                if (group / "memory.swap.max").exists():
                    (group / "memory.swap.max").write_text("0\n")
            else:
                (group / "memory.limit_in_bytes").write_text(f"{memory_mb * MB}\n")
                swap = group / "memory.memsw.limit_in_bytes"
                if swap.exists():
                    swap.write_text(f"{memory_mb * MB}\n")
        except OSError:
            group.rmdir()
            continue
        return Limit(
            f"cgroup{'2' if version == 2 else '1'}",
            memory_mb,
            _join_prefix(group),
            group,
            version,
            f"memory cgroup {group} (limit {memory_mb} MB, no swap)",
        )
    return None


def choose_limit(memory_mb: int, prefer: str = "auto") -> Limit:
    """The strongest memory limit this machine allows (see the module docstring)."""
    if prefer in ("auto", "systemd-run") and Path("/run/systemd/system").is_dir() and shutil.which("systemd-run"):
        probe = subprocess.run(
            ["systemd-run", "--scope", "-q", "-p", "MemoryMax=64M", "true"], capture_output=True, timeout=30
        )
        if probe.returncode == 0:
            return Limit(
                "systemd-run",
                memory_mb,
                ("systemd-run", "--scope", "-q", "-p", f"MemoryMax={memory_mb}M", "-p", "MemorySwapMax=0", "--"),
                note=f"systemd-run --scope -p MemoryMax={memory_mb}M",
            )
    if prefer in ("auto", "cgroup"):
        for version in (2, 1):
            limit = _try_cgroup(version, memory_mb)
            if limit is not None:
                return limit
    if prefer in ("auto", "prlimit") and shutil.which("prlimit"):
        return Limit(
            "prlimit",
            memory_mb,
            ("prlimit", f"--as={memory_mb * MB}", "--"),
            note="prlimit --as: a virtual address-space limit (no cgroup available); "
            "stricter than RSS for mmapped files and thread stacks",
        )
    return Limit("none", memory_mb, (), note="no way to limit memory here: measured without a limit")


def pin_prefix(cpu: int) -> tuple[tuple[str, ...], str]:
    """The command prefix that pins a process to core ``cpu``, and how (for the report)."""
    if shutil.which("taskset"):
        return ("taskset", "-c", str(cpu)), f"taskset -c {cpu}"
    return (), f"sched_setaffinity({{{cpu}}})"
