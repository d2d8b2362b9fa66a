"""Shared helpers for the benchmarks: memory of a process, timing, machine facts, results.

Benchmarks never decide pass or fail: they measure a thing and its baseline in
the same run and report the ratio (docs/benchmarks.md). Every benchmark takes the
same flags from :func:`bench_parser` (``--quick``, ``--json``, ``--out FILE``,
``--update-results``) and writes through :func:`write_results`: a full run to the person's own
``$EXO_HOME/bench/<name>.json``, a quick run only to the file ``--out`` names. The project's committed
``benchmarks/results/<name>.json`` is written only by a developer's full run with ``--update-results``.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as _dt
import json
import os
import platform
import sqlite3
import statistics
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from exo_core.seams.home import default_home_path

REPO = Path(__file__).resolve().parent.parent
RESULTS_DIR = REPO / "benchmarks" / "results"

__all__ = [
    "REPO",
    "RESULTS_DIR",
    "bench_home",
    "bench_parser",
    "progress_output",
    "proc_memory_kb",
    "machine_info",
    "child_env",
    "median",
    "Stopwatch",
    "ratio",
    "print_table",
    "write_results",
    "fmt_num",
]


def proc_memory_kb(pid: int | str = "self") -> dict[str, int]:
    """``VmRSS`` and ``VmHWM`` (peak RSS) of a process in KiB, from ``/proc/<pid>/status``."""
    out: dict[str, int] = {}
    with open(f"/proc/{pid}/status", encoding="ascii", errors="replace") as fh:
        for line in fh:
            key, _, value = line.partition(":")
            if key in ("VmRSS", "VmHWM"):
                out[key] = int(value.split()[0])
    if "VmRSS" not in out or "VmHWM" not in out:
        raise RuntimeError(f"/proc/{pid}/status has no VmRSS/VmHWM (process exited or is a zombie?)")
    return out


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as fh:
            for line in fh:
                if line.lower().startswith(("model name", "hardware", "cpu model")):
                    return line.partition(":")[2].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def _mem_total_mb() -> int | None:
    try:
        with open("/proc/meminfo", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("MemTotal:"):
                    return int(line.split()[1]) // 1024
    except OSError:
        pass
    return None


def _fs_type(path: Path) -> str:
    """The filesystem type the path lives on (longest mount prefix in /proc/mounts)."""
    best, kind = "", "unknown"
    target = str(path.resolve())
    try:
        with open("/proc/mounts", encoding="utf-8") as fh:
            for line in fh:
                parts = line.split()
                if len(parts) >= 3 and (target == parts[1] or target.startswith(parts[1].rstrip("/") + "/")):
                    if len(parts[1]) > len(best):
                        best, kind = parts[1], parts[2]
    except OSError:
        pass
    return kind


def machine_info(tmp_dir: Path | None = None) -> dict[str, Any]:
    """Facts about the machine a result was measured on."""
    info: dict[str, Any] = {
        "nproc": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count(),
        "cpu_model": _cpu_model(),
        "mem_total_mb": _mem_total_mb(),
        "kernel": platform.release(),
        "python": platform.python_version(),
        "sqlite": sqlite3.sqlite_version,
        "date": _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        # Other work on the machine skews every number; record how busy it was.
        "loadavg_1_5_15": [round(x, 2) for x in os.getloadavg()],
    }
    if tmp_dir is not None:
        info["tmp_dir"] = str(tmp_dir)
        info["tmp_fs"] = _fs_type(tmp_dir)
    return info


def child_env() -> dict[str, str]:
    """Environment for subprocesses so they import this checkout's ``exo_core``."""
    env = dict(os.environ)
    env["PYTHONPATH"] = str(REPO) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    env.pop("EXO_HOME", None)
    env.pop("EXO_MODEL", None)
    return env


def median(values: Sequence[float]) -> float:
    return float(statistics.median(values))


class Stopwatch:
    """``with Stopwatch() as sw: ...`` then ``sw.seconds`` (perf_counter)."""

    def __enter__(self) -> "Stopwatch":
        self._start = time.perf_counter()
        self.seconds = 0.0
        return self

    def __exit__(self, *exc: object) -> None:
        self.seconds = time.perf_counter() - self._start


def ratio(value: float, baseline: float) -> float | None:
    """``value / baseline`` (None when the baseline is zero)."""
    return value / baseline if baseline else None


def fmt_num(value: Any, digits: int = 1) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        if abs(value) >= 1000:
            return f"{value:,.0f}"
        return f"{value:.{digits}f}" if abs(value) >= 1 else f"{value:.{max(digits, 3)}f}"
    if isinstance(value, int):
        return f"{value:,}"
    return str(value)


MARKDOWN = False  # set by a benchmark's --markdown flag: print_table writes Markdown tables


def print_table(title: str, headers: Sequence[str], rows: Sequence[Sequence[Any]], *, file: Any = None) -> None:
    """A plain aligned text table (or a Markdown table when ``MARKDOWN`` is set)."""
    file = file or sys.stdout
    cells = [[fmt_num(c) for c in row] for row in rows]
    if MARKDOWN:
        print(f"\n**{title}**\n", file=file)
        print("| " + " | ".join(headers) + " |", file=file)
        print("|" + "|".join("---" if i == 0 else "---:" for i in range(len(headers))) + "|", file=file)
        for row in cells:
            print("| " + " | ".join(row) + " |", file=file)
        return
    widths = [max(len(h), *(len(r[i]) for r in cells)) if cells else len(h) for i, h in enumerate(headers)]
    print(f"\n{title}", file=file)
    print("  ".join(h.ljust(w) for h, w in zip(headers, widths)), file=file)
    print("  ".join("-" * w for w in widths), file=file)
    for row in cells:
        print("  ".join(c.rjust(w) if i else c.ljust(w) for i, (c, w) in enumerate(zip(row, widths))), file=file)


def bench_parser(
    name: str,
    description: str,
    *,
    quick_help: str = "a small run that proves the code works; writes nothing unless --out",
    json_help: str = "print the results JSON instead of tables",
    formatter_class: type[argparse.HelpFormatter] = argparse.HelpFormatter,
) -> argparse.ArgumentParser:
    """The parser every benchmark starts from: ``--quick``, ``--json`` and ``--out FILE``, the same everywhere.

    ``name`` is the ``exo bench NAME`` the script runs as (its program name in ``--help``). A benchmark
    adds its own flags after these; ``args.out`` and ``args.quick`` go to :func:`write_results` unchanged.
    """
    parser = argparse.ArgumentParser(prog=f"exo bench {name}", description=description, formatter_class=formatter_class)
    parser.add_argument("--quick", action="store_true", help=quick_help)
    parser.add_argument("--json", action="store_true", help=json_help)
    parser.add_argument(
        "--out",
        type=Path,
        default=None,
        metavar="FILE",
        help="write the results JSON here (default: $EXO_HOME/bench/ on a full run, nowhere on a quick one)",
    )
    parser.add_argument(
        "--update-results",
        dest="out",
        action="store_const",
        const=RESULTS_DIR,
        help="a developer's full run: replace the project's committed benchmarks/results/ file",
    )
    return parser


def progress_output(json_mode: bool) -> contextlib.AbstractContextManager[Any]:
    """Where a run's progress lines go: standard error under ``--json``, so standard output is the JSON alone."""
    if json_mode:
        return contextlib.redirect_stdout(sys.stderr)
    return contextlib.nullcontext()


def bench_home() -> Path:
    """Where a person's own full runs write: ``bench/`` in the Exo home (``$EXO_HOME``, else ``~/.exo``)."""
    return default_home_path() / "bench"


def write_results(name: str, data: dict[str, Any], *, out: Path | None, quick: bool) -> Path | None:
    """Write the results JSON and return where, or None when a quick run was given no ``--out``.

    A full run writes to ``bench_home()/<name>.json`` unless told otherwise; ``out`` equal to
    ``RESULTS_DIR`` (``--update-results``) writes the committed ``benchmarks/results/<name>.json``, which
    a quick run never may: its small numbers would replace the documented ones.
    """
    if out is None:
        if quick:
            return None
        out = bench_home() / f"{name}.json"
    elif out == RESULTS_DIR:
        if quick:
            raise SystemExit("--update-results takes a full run: a quick run's numbers are not the documented ones")
        out = RESULTS_DIR / f"{name}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_suffix(out.suffix + ".tmp")
    tmp.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    os.replace(tmp, out)
    return out
