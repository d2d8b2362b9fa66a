"""Benchmark: exod start-up time, idle memory and import cost, against a bare Python.

Usage::

    python -m benchmarks.bench_startup [--quick] [--json] [--repeat N] [--idle SECONDS] [--out PATH]

Measured ``--repeat`` times (default 5), medians reported, each next to its
baseline from the same run:

* **Time to healthy.** ``python -m exo_core.cli serve --home H --model
  scripted:F`` (what ``exo serve`` runs) is started as a subprocess; the clock
  runs from just before ``Popen`` until ``GET /health`` over its Unix socket
  answers ``ok`` (polled every 5 ms with a plain blocking socket, so the poller
  costs next to nothing). Once on a fresh home (creates ``sessions.sqlite``),
  once restarting on that same home. Baseline: wall time of ``python -c pass``.
* **Idle memory.** After healthy, exod idles ``--idle`` seconds (default 2);
  then ``VmRSS`` and ``VmHWM`` (peak) from ``/proc/<pid>/status``. Baseline: an
  idle bare interpreter (``python -c`` that blocks on stdin) measured the same
  way. The budget (docs/benchmarks.md, "Budgets at a glance"): idle exod without models under 80 MB RSS.
* **Import and CLI cost.** ``python -X importtime -c "import exo_core.cli.main"``
  and ``... "import exo_core.daemon"`` (cumulative microseconds of the
  top module, plus the heaviest imports), and the wall time of ``python -m
  exo_core.cli --help`` (``exo --help``) against ``python -c pass``.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks import _common
from benchmarks._common import (
    REPO,
    RESULTS_DIR,
    bench_parser,
    child_env,
    machine_info,
    median,
    print_table,
    proc_memory_kb,
    ratio,
    write_results,
)
from exo_edge.footprint.scenario import health

NAME = "startup"
BUDGET_MB = 80.0


def time_python_pass(env: dict[str, str]) -> tuple[float, int]:
    """Wall seconds and peak RSS (KiB, from wait4) of ``python -c pass``."""
    t0 = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-c", "pass"], env=env)
    _, status, usage = os.wait4(proc.pid, 0)
    elapsed = time.perf_counter() - t0
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise RuntimeError("python -c pass failed")
    return elapsed, int(usage.ru_maxrss)


def idle_python_memory(env: dict[str, str], idle: float) -> dict[str, int]:
    """VmRSS/VmHWM of a bare interpreter idling ``idle`` seconds."""
    proc = subprocess.Popen(
        [sys.executable, "-c", "import sys; print('up', flush=True); sys.stdin.read()"],
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
    )
    try:
        assert proc.stdout is not None
        if proc.stdout.readline().strip() != b"up":
            raise RuntimeError("idle python did not start")
        time.sleep(idle)
        return proc_memory_kb(proc.pid)
    finally:
        proc.kill()
        proc.wait()


def exod_once(home: Path, script: Path, env: dict[str, str], idle: float, timeout: float = 60.0) -> dict[str, Any]:
    """Start exod, time until healthy, idle, read memory, stop it with SIGTERM."""
    sock = home / "run" / "exod.sock"
    cmd = [
        sys.executable,
        "-m",
        "exo_core.cli",
        "serve",
        "--home",
        str(home),
        "--model",
        f"scripted:{script}",
        "--workspace",
        str(home),
        "--log-level",
        "WARNING",
    ]
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, env=env, cwd=str(REPO), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        while True:
            if proc.poll() is not None:
                err = proc.stderr.read().decode(errors="replace") if proc.stderr else ""
                raise RuntimeError(f"exod exited with status {proc.returncode}: {err[-2000:]}")
            if sock.exists() and health(sock):
                break
            if time.perf_counter() - t0 > timeout:
                raise RuntimeError("exod did not become healthy")
            time.sleep(0.005)
        healthy_s = time.perf_counter() - t0
        time.sleep(idle)
        mem = proc_memory_kb(proc.pid)
        t1 = time.perf_counter()
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=30)
            stop_s: float | None = time.perf_counter() - t1
        except subprocess.TimeoutExpired:
            stop_s = None
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        if proc.stderr is not None:
            proc.stderr.close()
    return {"healthy_s": healthy_s, "vmrss_kb": mem["VmRSS"], "vmhwm_kb": mem["VmHWM"], "sigterm_exit_s": stop_s}


_IMPORT_LINE = re.compile(r"import time:\s+(\d+)\s+\|\s+(\d+)\s+\|(\s*)(\S+)")


def import_time(module: str, env: dict[str, str]) -> dict[str, Any]:
    """``-X importtime`` of ``module``: its cumulative microseconds, its heaviest direct imports, and
    what the third-party packages cost where they were first imported."""
    out = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", f"import {module}"],
        env=env,
        cwd=str(REPO),
        capture_output=True,
        text=True,
        check=True,
    )
    total = None
    children: list[tuple[int, str]] = []
    block: list[tuple[int, str]] = []
    third_party: dict[str, int] = {}
    for line in out.stderr.splitlines():
        m = _IMPORT_LINE.match(line)
        if not m:
            continue
        cumulative, indent, name = int(m.group(2)), len(m.group(3)), m.group(4)
        if name in ("aiohttp", "numpy", "nacl", "sqlite3", "asyncio"):
            third_party.setdefault(name, cumulative)
        if indent == 3:  # a direct import of the depth-1 module that follows (importtime prints post-order)
            block.append((cumulative, name))
        elif indent == 1:
            if name == module:
                total = cumulative
                children = sorted(block, reverse=True)
            block = []
    return {
        "module": module,
        "cumulative_us": total,
        "heaviest": [{"module": n, "cumulative_us": c} for c, n in children[:6]],
        "packages_us": third_party,
    }


def time_cmd(cmd: list[str], env: dict[str, str]) -> float:
    t0 = time.perf_counter()
    subprocess.run(cmd, env=env, cwd=str(REPO), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    return time.perf_counter() - t0


def run(args: argparse.Namespace, tmp: Path) -> dict[str, Any]:
    load_before = [round(x, 2) for x in os.getloadavg()]
    env = child_env()
    script = tmp / "script.json"
    script.write_text(json.dumps({"replies": []}))
    py_pass, py_maxrss, py_idle, fresh, restart, help_t, py_pass_help = [], [], [], [], [], [], []
    for i in range(args.repeat):
        t, rss = time_python_pass(env)
        py_pass.append(t)
        py_maxrss.append(rss)
        py_idle.append(idle_python_memory(env, args.idle))
        home = tmp / f"home{i}"
        fresh.append(exod_once(home, script, env, args.idle))
        restart.append(exod_once(home, script, env, args.idle))
        py_pass_help.append(time_cmd([sys.executable, "-c", "pass"], env))
        help_t.append(time_cmd([sys.executable, "-m", "exo_core.cli", "--help"], env))
        shutil.rmtree(home, ignore_errors=True)
        if not args.json:
            print(
                f"  run {i + 1}/{args.repeat}: python -c pass {t * 1000:.0f} ms; exod healthy "
                f"{fresh[-1]['healthy_s'] * 1000:.0f} ms (fresh) / {restart[-1]['healthy_s'] * 1000:.0f} ms "
                f"(restart); idle RSS {fresh[-1]['vmrss_kb'] / 1024:.1f} MB",
                flush=True,
            )

    def med(rows: list[dict[str, Any]], key: str) -> float:
        return median([r[key] for r in rows])

    base_t = median(py_pass)
    base_rss = med(py_idle, "VmRSS")
    runs_all = fresh + restart
    exod_rss = med(runs_all, "vmrss_kb")
    stops = [r["sigterm_exit_s"] for r in runs_all if r["sigterm_exit_s"] is not None]
    data: dict[str, Any] = {
        "benchmark": NAME,
        "quick": args.quick,
        "repeat": args.repeat,
        "idle_s": args.idle,
        "machine": {**machine_info(tmp), "loadavg_before": load_before},
        "command": f"python -m benchmarks.bench_startup" + (" --quick" if args.quick else ""),
        "baseline": {
            "python_pass_s": base_t,
            "python_pass_maxrss_kb": median(py_maxrss),
            "python_idle_vmrss_kb": base_rss,
            "python_idle_vmhwm_kb": med(py_idle, "VmHWM"),
        },
        "exod": {
            "healthy_fresh_home_s": med(fresh, "healthy_s"),
            "healthy_restart_s": med(restart, "healthy_s"),
            "healthy_ratio": ratio(med(runs_all, "healthy_s"), base_t),
            "idle_vmrss_kb": exod_rss,
            "idle_vmhwm_kb": med(runs_all, "vmhwm_kb"),
            "idle_vmrss_mb": exod_rss / 1024,
            "idle_vmrss_max_mb": max(r["vmrss_kb"] for r in runs_all) / 1024,
            "rss_ratio": ratio(exod_rss, base_rss),
            "budget_mb": BUDGET_MB,
            "budget_used": exod_rss / 1024 / BUDGET_MB,
            "sigterm_exit_s": median(stops) if stops else None,
            "runs": {"fresh": fresh, "restart": restart},
        },
        "cli": {
            "help_s": median(help_t),
            "python_pass_s": median(py_pass_help),
            "help_ratio": ratio(median(help_t), median(py_pass_help)),
        },
        "imports": [import_time("exo_core.cli.main", env), import_time("exo_core.daemon", env)],
    }
    return data


def report(data: dict[str, Any]) -> None:
    m, b, e, c = data["machine"], data["baseline"], data["exod"], data["cli"]
    print(
        f"\nmachine: {m['nproc']} x {m['cpu_model']}, python {m['python']}; {m['date']}; "
        f"median of {data['repeat']} runs, idle {data['idle_s']} s; load average before {m.get('loadavg_before')}, "
        f"after {m.get('loadavg_1_5_15')}"
    )
    print_table(
        "Start-up: process start to exit (baseline) / to a healthy GET /health over the Unix socket",
        ["what", "ms", "x python -c pass"],
        [
            ["python -c pass (baseline)", b["python_pass_s"] * 1000, 1.0],
            [
                "exod, fresh home",
                e["healthy_fresh_home_s"] * 1000,
                ratio(e["healthy_fresh_home_s"], b["python_pass_s"]),
            ],
            [
                "exod, restart on same home",
                e["healthy_restart_s"] * 1000,
                ratio(e["healthy_restart_s"], b["python_pass_s"]),
            ],
            ["exo --help (python -m exo_core.cli --help)", c["help_s"] * 1000, c["help_ratio"]],
        ],
    )
    print_table(
        f"Idle memory after healthy + {data['idle_s']} s (budget: {e['budget_mb']:.0f} MB RSS)",
        ["process", "VmRSS MB", "VmHWM MB", "x python", "of budget"],
        [
            ["idle python (baseline)", b["python_idle_vmrss_kb"] / 1024, b["python_idle_vmhwm_kb"] / 1024, 1.0, "-"],
            [
                "exod (no models)",
                e["idle_vmrss_kb"] / 1024,
                e["idle_vmhwm_kb"] / 1024,
                e["rss_ratio"],
                f"{e['budget_used'] * 100:.0f}%",
            ],
        ],
    )
    rows = []
    for imp in data["imports"]:
        rows.append(
            [
                f"import {imp['module']}",
                (imp["cumulative_us"] or 0) / 1000,
                ", ".join(f"{h['module']} {h['cumulative_us'] / 1000:.0f}" for h in imp["heaviest"][:4]),
            ]
        )
    print_table(
        "Import cost (python -X importtime, cumulative)",
        ["import", "ms", "heaviest direct imports (ms, cumulative)"],
        rows,
    )
    if e.get("sigterm_exit_s") is not None:
        print(f"\nexod SIGTERM to exit (no clients connected): {e['sigterm_exit_s'] * 1000:.0f} ms median")


def main(argv: list[str] | None = None) -> int:
    parser = bench_parser("startup", __doc__.split("\n\n")[0], quick_help="1 repeat, short idle: proves the code works")
    parser.add_argument(
        "--markdown",
        type=Path,
        nargs="?",
        const=RESULTS_DIR / f"{NAME}.json",
        default=None,
        metavar="RESULTS",
        help="run nothing: print a results file (default the committed one) as Markdown tables, for docs/benchmarks.md",
    )
    parser.add_argument("--repeat", type=int, default=None, help="runs to take the median of (default 5)")
    parser.add_argument("--idle", type=float, default=None, help="seconds exod idles before memory is read (default 2)")
    parser.add_argument("--tmp", type=Path, default=None, help="folder for temporary homes (default: system temp)")
    args = parser.parse_args(argv)
    if args.markdown is not None:
        _common.MARKDOWN = True
        report(json.loads(args.markdown.read_text(encoding="utf-8")))
        return 0
    if args.repeat is None:
        args.repeat = 1 if args.quick else 5
    if args.idle is None:
        args.idle = 0.2 if args.quick else 2.0
    # A short temp root: Unix socket paths are limited to 107 bytes.
    tmp = Path(tempfile.mkdtemp(prefix="exo-bench-start-", dir=args.tmp))
    try:
        data = run(args, tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    path = write_results(NAME, data, out=args.out, quick=args.quick)
    if args.json:
        print(json.dumps(data, indent=2, sort_keys=True))
    else:
        report(data)
        if path:
            print(f"\nwrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
