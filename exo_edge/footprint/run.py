"""One audit run: start the parts under the limit, hold the conversation, measure, report disk use."""

from __future__ import annotations

import argparse
import asyncio
import itertools
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

from exo_edge.footprint.budgets import budget_for, cached_mb, thrashing
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
    "FootprintResult",
    "run_footprint",
    "store_with_nodes",
    "install_disk",
    "machine_facts",
    "evict_model_files",
    "private_model_copy",
]


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


def private_model_copy(model_file: Path | None, page_cache: dict[str, Any], folder: Path) -> dict[str, Any] | None:
    """Copy the model into the home's models folder when eviction left it cached; what was done (None: no copy).

    A memory cgroup is charged for a file page by whoever first reads it; a GGUF that another
    process on the machine maps stays in the page cache whatever this run does, so the run would
    be measured without its model. A fresh copy (written, synced and dropped from the cache) has
    no pages until exod reads them, inside the cgroup. ``exo_edge.paths.locate_model_file`` looks
    in the home's models folder first.
    """
    if model_file is None:
        return None
    cached = [e for e in page_cache.get("evicted", []) if e["file"] == model_file.name]
    still = cached[0]["still_cached_mb"] if cached else None
    if still is not None and still < 1.0:
        return None
    folder.mkdir(parents=True, exist_ok=True)
    target = folder / model_file.name
    shutil.copyfile(model_file, target)
    fd = os.open(target, os.O_RDONLY)
    try:
        os.fsync(fd)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        left = cached_mb(fd, os.fstat(fd).st_size)
    finally:
        os.close(fd)
    return {
        "why": f"{model_file.name} stayed cached ({still} MB) after eviction: another process maps it",
        "source": str(model_file),
        "copy": str(target),
        "copy_cached_mb": left,
    }


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
            evicted.append({"file": path.name, "still_cached_mb": cached_mb(fd, path.stat().st_size)})
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


def run_footprint(args: argparse.Namespace, log: Callable[[str], None]) -> FootprintResult:
    """One audit run (see the module docstring)."""
    budget = budget_for(args.board)
    memory_mb = args.memory_mb if args.memory_mb is not None else int(budget.peak_mb)
    tmp = Path(tempfile.mkdtemp(prefix="exo-fp-", dir=args.tmp))
    limit = choose_limit(memory_mb, args.limit)
    pin, pin_note = pin_prefix(args.cpu)
    run = Run(tmp, limit, pin, args.cpu, log)
    details: dict[str, Any] = {
        "limit": {"method": limit.method, "memory_mb": limit.memory_mb, "note": limit.note},
        "cpu": {"pinned": args.cpu, "how": pin_note},
        "board": args.board,
        "budgets": {"board": args.board, "idle_rss_mb": budget.idle_mb, "peak_mb": budget.peak_mb},
    }
    completed = False
    idle = peak = startup = None
    model_loaded = False
    try:
        run.workspace.mkdir()
        (run.workspace / NOTES).write_text("old notes\n")
        # The board (--board) whose model, n_ctx and threads exo init writes, and whose budget applies:
        # without it, exo init would pick by this machine's memory (a laptop here).
        subprocess.run(
            [sys.executable, "-m", "exo_core.cli", "init", "--home", str(run.home), "--board", args.board],
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
        copied = private_model_copy(parts.model_file, details["page_cache"], run.home / "models")
        if copied is not None:
            # The shared file stays cached by another process: its pages would not be charged to this
            # run's cgroup (nor faulted back in), so exod reads a copy only this run has touched.
            parts = detect_parts(run.home, args.model, args.device)
            details["model"]["file"] = str(parts.model_file)
            details["model"]["private_copy"] = copied
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
        run.exod_pid = exod.pid
        run.model_file = parts.model_file
        time.sleep(args.idle)
        idle_kb = status_kb(exod.pid).get("VmRSS")
        idle = round(idle_kb / 1024, 1) if idle_kb else None
        run.mark("idle")
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
        details["page_faults"] = page_faults(run.marks, parts_model_file(details))
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
    details["install_disk"] = install_disk(installed_model_file(details))
    details["within_budgets"] = within_budgets(details, idle, peak, budget.peak_mb, budget.idle_mb)
    details["over_budget"] = [name for name, ok in details["within_budgets"].items() if ok is False]
    details["machine"] = machine_facts()
    return FootprintResult(completed, idle, peak, startup, model_loaded, details)


def installed_model_file(details: dict[str, Any]) -> Path | None:
    """The model file as installed (the shared one, not the run's private copy), for disk use."""
    model = details.get("model", {})
    source = (model.get("private_copy") or {}).get("source") or model.get("file")
    return Path(source) if source else None


def parts_model_file(details: dict[str, Any]) -> Path | None:
    """The model file the run used, from its details (None with the scripted model)."""
    name = details.get("model", {}).get("file")
    return Path(name) if name else None


def page_faults(marks: list[dict[str, Any]], model_file: Path | None) -> dict[str, Any]:
    """Major page faults after warm-up (the first answer), per answer, and whether they are thrashing.

    ``marks`` are :meth:`Run.mark`'s notes: after idle, then after each answer.
    """
    out: dict[str, Any] = {"marks": marks}
    answers = [m for m in marks if m["after"].startswith("answer")]
    if len(answers) < 2 or answers[0]["exod_major_faults"] is None or answers[-1]["exod_major_faults"] is None:
        out["exod_after_warmup"] = None
        out["note"] = "fewer than two answers were marked: no faults after warm-up to count"
        out["thrashing"] = None
        return out
    warm, last = answers[0], answers[-1]
    out["exod_after_warmup"] = last["exod_major_faults"] - warm["exod_major_faults"]
    out["exod_per_answer_after_warmup"] = [
        b["exod_major_faults"] - a["exod_major_faults"]
        for a, b in itertools.pairwise(answers)
        if a["exod_major_faults"] is not None and b["exod_major_faults"] is not None
    ]
    if warm["cgroup_major_faults"] is not None and last["cgroup_major_faults"] is not None:
        out["cgroup_after_warmup"] = last["cgroup_major_faults"] - warm["cgroup_major_faults"]
    out["thrashing"] = thrashing(out["exod_after_warmup"], model_file)
    out["rule"] = "thrashing: exod's major faults after the first answer exceed 10 % of the model file's pages"
    return out


def within_budgets(
    details: dict[str, Any], idle: float | None, peak: float | None, peak_budget: float, idle_budget: float
) -> dict[str, bool | None]:
    """Each figure against its budget: ``True`` within, ``False`` over, ``None`` not measured."""
    cg_peak = details.get("cgroup_peak_mb")
    thrash = details.get("page_faults", {}).get("thrashing")
    oom = details.get("oom_kills")
    return {
        "idle": None if idle is None else idle <= idle_budget,
        "peak": None if peak is None else peak <= peak_budget,
        "cgroup_peak": None if cg_peak is None else cg_peak <= peak_budget,
        "concurrent_rss": details.get("peak_rss_concurrent_mb", 0.0) <= peak_budget,
        "no_oom_kill": None if oom is None else oom == 0,
        "no_thrashing": None if thrash is None else not thrash,
    }


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
