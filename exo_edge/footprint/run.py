"""One audit run: start the parts under the limit, hold the conversation, measure, report disk use."""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from exo_edge.footprint.limits import MB, choose_limit, pin_prefix
from exo_edge.footprint.sampling import status_kb
from exo_edge.footprint.scenario import (
    NOTES,
    REPO,
    SCRIPT,
    Run,
    child_env,
    client_conversation,
    detect_parts,
    device_conversation,
    health,
)

__all__ = [
    "IDLE_BUDGET_MB",
    "PEAK_BUDGET_MB",
    "FootprintResult",
    "run_footprint",
    "store_with_nodes",
    "install_disk",
    "machine_facts",
    "evict_model_files",
]

IDLE_BUDGET_MB = 80.0
PEAK_BUDGET_MB = 512.0


@dataclass(frozen=True, slots=True)
class FootprintResult:
    """What one audit measured (``as_json`` puts the five agreed keys first)."""

    completed: bool
    idle_rss_mb: float | None
    peak_rss_mb: float | None
    startup_s: float | None
    model_loaded: bool
    details: dict[str, Any] = field(default_factory=dict)

    def as_json(self) -> dict[str, Any]:
        """The result as one JSON object."""
        head = {
            "completed": self.completed,
            "idle_rss_mb": self.idle_rss_mb,
            "peak_rss_mb": self.peak_rss_mb,
            "startup_s": self.startup_s,
            "model_loaded": self.model_loaded,
        }
        return {**head, **self.details}


def _du_mb(path: Path) -> float:
    total = 0
    for p in path.rglob("*"):
        try:
            if p.is_file() and not p.is_symlink():
                total += p.stat().st_blocks * 512
        except OSError:
            continue
    return round(total / MB, 1)


def store_with_nodes(folder: Path, count: int) -> dict[str, Any]:
    """A fresh store holding ``count`` nodes (realistic size: a summary and a paragraph each); its disk use."""
    from exo_core.ledger import create_signing_key
    from exo_core.store import Link, Node, init_store

    signer = create_signing_key(folder / "keys")
    store = init_store(folder / "store", owner_key_ids=[signer.key_id])
    domains = ("work", "people", "taste", "self")
    t0 = time.perf_counter()
    for i in range(count):
        domain = domains[i % len(domains)]
        store.write_node(
            Node(
                id=f"{domain}/n-{i:05d}",
                title=f"Belief {i}",
                type="fact",
                domain=domain,
                summary=f"Belief {i}: a short sentence the pack can quote.",
                load_when=f"{domain} topic {i % 97}",
                confidence="medium",
                stability="durable",
                valid_from="2025-01-01",
                links=(Link("see-also", f"{domain}/INDEX"),),
                body="\nWhat was observed, when, and why it matters; about sixty words of plain prose "
                "that a person or the reviewer wrote down for this belief.\n" * 3,
            )
        )
    write_s = time.perf_counter() - t0
    return {
        "nodes": count,
        "disk_mb": _du_mb(store.root),
        "write_s": round(write_s, 2),
        "files": sum(1 for _ in store.root.rglob("*.md")),
    }


def install_disk(model_file: Path | None) -> dict[str, Any]:
    """Disk use of what a device installs: the virtual environment, Exo's sources, the model files."""
    venv = Path(sys.prefix)
    sources = sum(
        _du_mb(REPO / d) for d in ("exo_core", "exo_edge", "device", "store_template", "models") if (REPO / d).is_dir()
    )
    out: dict[str, Any] = {"venv_mb": _du_mb(venv), "venv": str(venv), "sources_mb": round(sources, 1)}
    if model_file is not None:
        out["models_mb"] = _du_mb(model_file.parent)
    out["total_mb"] = round(out["venv_mb"] + out["sources_mb"] + out.get("models_mb", 0.0), 1)
    out["note"] = "the venv here also holds the test tools; image/build.sh reports a device's own size"
    return out


def evict_model_files(model_file: Path | None, device: bool) -> dict[str, Any]:
    """Drop the model files' clean pages from the page cache before the run (``POSIX_FADV_DONTNEED``).

    A memory cgroup is charged for a file page by the group that first reads
    it; a GGUF already cached by an earlier run would be free to this one and
    the limit would not cover the model. Evicted first, the run's own reads
    are charged to it. Pages another process still maps stay (reported).
    """
    files: list[Path] = []
    if model_file is not None:
        files += [p for p in model_file.parent.iterdir() if p.suffix in (".gguf", ".onnx")]
    if device:
        try:
            from device.stt import WhisperSTT

            files += [p for p in Path(WhisperSTT.model_dir()).iterdir() if p.suffix == ".bin"]
        except (ImportError, OSError) as exc:
            return {"evicted": [], "note": f"the speech model was not found: {exc}"}
    evicted, kept = [], []
    for path in files:
        try:
            fd = os.open(path, os.O_RDONLY)
        except OSError:
            continue
        try:
            os.fdatasync(fd)
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            evicted.append({"file": path.name, "still_cached_mb": _cached_mb(fd, path.stat().st_size)})
        except OSError as exc:
            kept.append(f"{path.name}: {exc.strerror}")
        finally:
            os.close(fd)
    return {
        "evicted": evicted,
        "not_evicted": kept,
        "note": "model files dropped from the page cache so the run's reads are charged to its cgroup; "
        "pages another process maps stay cached (still_cached_mb) and are not charged to the run",
    }


def _cached_mb(fd: int, size: int) -> float | None:
    """How much of the file is in the page cache (``mincore`` over a read-only mapping)."""
    import ctypes
    import mmap

    if size == 0:
        return 0.0
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        # a private mapping: from_buffer needs a writable one, and nothing is written or read
        with mmap.mmap(fd, size, access=mmap.ACCESS_COPY) as mapped:
            pages = (size + mmap.PAGESIZE - 1) // mmap.PAGESIZE
            vec = (ctypes.c_ubyte * pages)()
            anchor = (ctypes.c_char * 1).from_buffer(mapped)
            try:
                failed = libc.mincore(ctypes.c_void_p(ctypes.addressof(anchor)), ctypes.c_size_t(size), vec)
            finally:
                del anchor  # the mapping can close only once no buffer points into it
            if failed:
                return None
            return round(sum(b & 1 for b in vec) * mmap.PAGESIZE / (1024 * 1024), 1)
    except (OSError, ValueError, BufferError):
        return None


def run_footprint(args: argparse.Namespace, log: Callable[[str], None]) -> FootprintResult:
    """One audit run (see the module docstring)."""
    tmp = Path(tempfile.mkdtemp(prefix="exo-fp-", dir=args.tmp))
    limit = choose_limit(args.memory_mb, args.limit)
    pin, pin_note = pin_prefix(args.cpu)
    run = Run(tmp, limit, pin, args.cpu, log)
    details: dict[str, Any] = {
        "limit": {"method": limit.method, "memory_mb": limit.memory_mb, "note": limit.note},
        "cpu": {"pinned": args.cpu, "how": pin_note},
        "budgets": {"idle_rss_mb": IDLE_BUDGET_MB, "peak_rss_mb": PEAK_BUDGET_MB},
    }
    completed = False
    idle = peak = startup = None
    model_loaded = False
    try:
        run.workspace.mkdir()
        (run.workspace / NOTES).write_text("old notes\n")
        # The board whose model detect_parts looks for (Gemma 3 270M, the budgets below were set for it):
        # without --board, exo init would pick by this machine's memory (a laptop here).
        subprocess.run(
            [sys.executable, "-m", "exo_core.cli", "init", "--home", str(run.home), "--board", "small"],
            env=child_env(),
            check=True,
            capture_output=True,
            timeout=120,
        )
        parts = detect_parts(run.home, args.model, args.device)
        details["model"] = {
            "spec": parts.model_spec,
            "file": str(parts.model_file) if parts.model_file else None,
            "why_not_local": parts.model_reason or None,
        }
        details["device"] = {"included": parts.device, "why_not": parts.device_reason or None}
        log(
            f"footprint: limit {limit.note}; {pin_note}; model {parts.model_spec}"
            f"{'' if parts.model_file else ' (' + parts.model_reason + ')'}; device "
            f"{'on' if parts.device else 'off (' + parts.device_reason + ')'}"
        )
        script = tmp / "script.json"
        script.write_text(json.dumps({"replies": SCRIPT}))
        spec = "local" if parts.model_spec == "local" else f"scripted:{script}"
        details["page_cache"] = evict_model_files(parts.model_file, parts.device)
        run.sampler.start()
        sock = run.home / "run" / "exod.sock"
        exod_err = open(tmp / "exod.err", "wb")
        t0 = time.perf_counter()
        exod = run.spawn(
            [
                sys.executable,
                "-m",
                "exo_core.cli",
                "serve",
                "--home",
                str(run.home),
                "--model",
                spec,
                "--workspace",
                str(run.workspace),
                "--log-level",
                "WARNING",
            ],
            stdout=subprocess.DEVNULL,
            stderr=exod_err,
        )
        while not (sock.exists() and health(sock)):
            if exod.poll() is not None or time.perf_counter() - t0 > args.start_timeout:
                break
            time.sleep(0.005)
        if not run.step("exod healthy under the limit", exod.poll() is None and health(sock)):
            details["exod_stderr"] = (tmp / "exod.err").read_text(errors="replace")[-2000:]
            return FootprintResult(False, None, None, None, False, details)
        startup = round(time.perf_counter() - t0, 3)
        if parts.model_file is not None:
            run.sampler.watch = (exod.pid, parts.model_file.name)
        time.sleep(args.idle)
        idle_kb = status_kb(exod.pid).get("VmRSS")
        idle = round(idle_kb / 1024, 1) if idle_kb else None
        if parts.device:
            details.update(device_conversation(run, args.turn_timeout, parts.model_spec == "scripted"))
        else:
            details["conversation"] = asyncio.run(client_conversation(run, sock, args.turn_timeout))
            approvals = details["conversation"]["approvals"]
            if parts.model_spec == "scripted":
                run.step(
                    "approval requested and allowed",
                    approvals == 1 and not (run.workspace / NOTES).exists(),
                    approvals=approvals,
                )
            else:
                details["conversation"]["approval_note"] = (
                    "the local model asked to act"
                    if approvals
                    else "the local model answered without asking to act: no approval was exercised"
                )
        run.sampler.sample()
        model_loaded = run.sampler.watch_seen  # seen mapped at any sample, even if exod died later
        completed = all(s["ok"] for s in run.steps) and exod.poll() is None
        if parts.model_spec == "local" and not model_loaded:
            run.step("local model mapped into exod", False)
            completed = False
    except (TimeoutError, OSError, subprocess.SubprocessError, RuntimeError) as exc:
        run.step("run", False, error=f"{type(exc).__name__}: {exc}")
    finally:
        run.sampler.sample()
        run.stop_all()
        run.sampler.stop()
        oom = limit.oom_kills()
        details["limit_hits"] = limit.limit_hits()
        cg_peak = limit.peak_mb()
        limit.remove()
        details["oom_kills"] = oom
        details["cgroup_peak_mb"] = round(cg_peak, 1) if cg_peak is not None else None
        details["steps"] = run.steps
        details["processes"] = [
            {
                "pid": pid,
                "peak_rss_mb": round(kb / 1024, 1),
                "peak_anon_mb": round(run.sampler.split_kb.get(pid, (0, 0))[0] / 1024, 1),
                "peak_file_mb": round(run.sampler.split_kb.get(pid, (0, 0))[1] / 1024, 1),
                "cmd": run.sampler.names.get(pid, "?"),
            }
            for pid, kb in sorted(run.sampler.peaks_kb.items())
            if kb
        ]
        if run.sampler.peaks_kb:
            peak = round(max(run.sampler.live_peaks_kb, max(run.sampler.peaks_kb.values())) / 1024, 1)
            details["peak_rss_sum_mb"] = round(sum(run.sampler.peaks_kb.values()) / 1024, 1)
        details["peak_rss_concurrent_mb"] = round(run.sampler.concurrent_kb / 1024, 1)
        shutil.rmtree(tmp, ignore_errors=True)
    if oom:
        completed = False
    if args.nodes:
        with tempfile.TemporaryDirectory(prefix="exo-fp-store-", dir=args.tmp) as store_tmp:
            details["store_disk"] = store_with_nodes(Path(store_tmp), args.nodes)
    details["install_disk"] = install_disk(
        Path(details["model"]["file"]) if details.get("model", {}).get("file") else None
    )
    details["within_budgets"] = {
        "idle": idle is not None and idle < IDLE_BUDGET_MB,
        "peak": peak is not None and peak < PEAK_BUDGET_MB,
    }
    details["machine"] = machine_facts()
    return FootprintResult(completed, idle, peak, startup, model_loaded, details)


def machine_facts() -> dict[str, Any]:
    """The machine a result was measured on (how busy it was, too)."""
    import platform

    cpu = "unknown"
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as fh:
            cpu = next(
                (line.partition(":")[2].strip() for line in fh if line.lower().startswith(("model name", "hardware"))),
                cpu,
            )
    except OSError:
        cpu = platform.processor() or cpu
    return {
        "nproc": os.cpu_count(),
        "cpu_model": cpu,
        "arch": platform.machine(),
        "kernel": platform.release(),
        "python": platform.python_version(),
        "loadavg_1_5_15": [round(x, 2) for x in os.getloadavg()],
        "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
