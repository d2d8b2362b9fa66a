"""The command line of ``exo bench footprint`` and its Markdown report."""

from __future__ import annotations

import argparse
import json
import signal
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from exo_core.seams.home import default_home_path
from exo_edge.footprint.budgets import BUDGETS
from exo_edge.footprint.run import run_footprint
from exo_edge.footprint.scenario import REPO

__all__ = ["report", "build_parser", "main"]

DESCRIPTION = "The footprint audit (exo bench footprint): does the whole device stack fit the board's budget?"


def _against(budget: float | None, ok: bool | None, what: str = "budget") -> str:
    """The 'against' cell: the budget, flagged when the figure is over it."""
    if budget is None:
        return "-"
    if ok is False:
        return f"**OVER** {what} {budget:.0f}"
    return f"{what} {budget:.0f}"


def _thrash_note(thrash: bool | None) -> str:
    if thrash is None:
        return "thrashing unknown"
    if thrash:
        return "**THRASHING**"
    return "no thrashing"


def report(data: dict[str, Any]) -> str:
    """The result as a short Markdown report (what docs/benchmarks.md shows)."""
    lim, model, dev = data["limit"], data.get("model", {}), data.get("device", {})
    budgets, ok = data.get("budgets", {}), data.get("within_budgets", {})
    peak_budget, idle_budget = budgets.get("peak_mb"), budgets.get("idle_rss_mb")
    faults = data.get("page_faults", {})
    rows = [
        ("board profile", data.get("board", "-"), f"model {model.get('spec')}: {model.get('file') or ''}"),
        ("completed", data["completed"], "the whole conversation under the limit"),
        ("start-up (s)", data["startup_s"], "exo serve to a healthy /health"),
        ("idle RSS, exod (MB)", data["idle_rss_mb"], _against(idle_budget, ok.get("idle"))),
        ("peak RSS, processes alive together (MB)", data["peak_rss_mb"], _against(peak_budget, ok.get("peak"))),
        ("peak RSS, sum of every process's peak (MB)", data.get("peak_rss_sum_mb"), "counts sequential children too"),
        (
            "peak RSS, concurrent sample (MB)",
            data.get("peak_rss_concurrent_mb"),
            _against(peak_budget, ok.get("concurrent_rss")) + " (sampled every 50 ms)",
        ),
        (
            "cgroup peak incl. page cache (MB)",
            data.get("cgroup_peak_mb"),
            _against(peak_budget, ok.get("cgroup_peak")) + f" ({lim['method']}, limit {lim['memory_mb']})",
        ),
        ("OOM kills / limit reached", f"{data.get('oom_kills')} / {data.get('limit_hits')}", "kills fail the run"),
        (
            "exod major page faults after warm-up",
            faults.get("exod_after_warmup"),
            f"per answer {faults.get('exod_per_answer_after_warmup', '-')}; {_thrash_note(faults.get('thrashing'))}",
        ),
        ("cgroup major page faults after warm-up", faults.get("cgroup_after_warmup"), "every process of the stack"),
        ("model loaded", data["model_loaded"], model.get("why_not_local") or model.get("file") or ""),
        (
            "model read through the run's cgroup",
            "private copy" if model.get("private_copy") else "shared file, evicted first",
            (model.get("private_copy") or {}).get("why", "its pages are charged to the run"),
        ),
        ("device client", dev.get("included"), dev.get("why_not") or ""),
    ]
    store, disk = data.get("store_disk"), data.get("install_disk", {})
    if store:
        rows.append(
            (f"store with {store['nodes']:,} nodes on disk (MB)", store["disk_mb"], f"{store['files']:,} files")
        )
    rows.append(
        (
            "install: venv + sources + models (MB)",
            disk.get("total_mb"),
            f"venv {disk.get('venv_mb')}, sources {disk.get('sources_mb')}, models {disk.get('models_mb', 0)}",
        )
    )
    lines = [f"limit: {lim['note']}; cpu: {data['cpu']['how']}", "", "| measure | value | against |", "|---|---:|---|"]
    lines += [f"| {a} | {b} | {c} |" for a, b, c in rows]
    lines += [
        "",
        "| process | peak RSS (MB) | sampled peak anonymous (MB) | sampled peak file-backed (MB) |",
        "|---|---:|---:|---:|",
    ]
    lines += [
        f"| `{p['cmd'][:70]}` | {p['peak_rss_mb']} | {p.get('peak_anon_mb', '-')} | {p.get('peak_file_mb', '-')} |"
        for p in data.get("processes", [])
    ]
    return "\n".join(lines)


def build_parser() -> argparse.ArgumentParser:
    """Arguments of ``exo bench footprint``."""
    parser = argparse.ArgumentParser(prog="exo bench footprint", description=DESCRIPTION)
    parser.add_argument("--json", action="store_true", help="print the result as JSON")
    parser.add_argument(
        "--markdown",
        type=Path,
        default=None,
        metavar="RESULTS",
        help="run nothing: print a results file as the Markdown report",
    )
    parser.add_argument(
        "--model",
        choices=("auto", "local", "scripted"),
        default="auto",
        help="auto: the local model when fetched, else the scripted model",
    )
    parser.add_argument(
        "--device",
        choices=("auto", "on", "off"),
        default="auto",
        help="auto: run the device client when this tree and machine have it",
    )
    parser.add_argument(
        "--board",
        choices=tuple(BUDGETS),
        default="standard",
        help="board profile: the home's model (exo init --board) and the budgets (default standard)",
    )
    parser.add_argument(
        "--memory-mb",
        type=int,
        default=None,
        help="memory limit for every process together (default: the board's peak budget, "
        + ", ".join(f"{b.board} {b.peak_mb:.0f}" for b in BUDGETS.values())
        + ")",
    )
    parser.add_argument("--limit", choices=("auto", "systemd-run", "cgroup", "prlimit"), default="auto")
    parser.add_argument("--cpu", type=int, default=0, help="the one core to run on (default 0)")
    parser.add_argument("--nodes", type=int, default=10_000, help="nodes in the store whose disk use is measured")
    parser.add_argument("--idle", type=float, default=2.0, help="seconds exod idles before idle RSS is read")
    parser.add_argument("--turn-timeout", type=float, default=300.0)
    parser.add_argument("--start-timeout", type=float, default=120.0)
    parser.add_argument("--quick", action="store_true", help="500 nodes, short idle; writes no results file")
    parser.add_argument(
        "--out",
        type=Path,
        default=None,
        metavar="FILE",
        help="results file (default $EXO_HOME/bench/footprint_<board>.json)",
    )
    parser.add_argument(
        "--update-results",
        action="store_true",
        help="a developer's full run in a checkout: replace the committed benchmarks/results/footprint_<board>.json",
    )
    parser.add_argument("--tmp", type=Path, default=None, help="folder for the temporary home (keep the path short)")
    return parser


def _results_file(args: argparse.Namespace) -> Path | None:
    """Where the run's results go: ``--out``, else the person's Exo home; the project's committed results
    only under ``--update-results`` (a person's own audit never rewrites them)."""
    committed = REPO / "benchmarks" / "results"
    if args.update_results:
        if args.quick or not committed.is_dir():
            raise SystemExit("--update-results takes a full run in a source checkout (benchmarks/results/)")
        return committed / f"footprint_{args.board}.json"
    if args.out is not None or args.quick:
        return args.out
    return default_home_path() / "bench" / f"footprint_{args.board}.json"


def main(argv: Sequence[str] | None = None) -> int:
    """``exo bench footprint``: exit 0 when the run completed, 1 when it did not."""
    args = build_parser().parse_args(argv)
    if args.markdown is not None:
        print(report(json.loads(args.markdown.read_text(encoding="utf-8"))))
        return 0
    if args.quick:
        args.nodes = min(args.nodes, 500)
        args.idle = min(args.idle, 0.5)
    log = (lambda msg: print(msg, file=sys.stderr)) if args.json else print

    def terminated(signum: int, frame: object) -> None:
        raise SystemExit(128 + signum)  # unwinds through run_footprint's cleanup (processes, cgroup)

    signal.signal(signal.SIGTERM, terminated)
    result = run_footprint(args, log)
    data = result.as_json()
    out = _results_file(args)
    if out is not None:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(data, indent=2, sort_keys=False) + "\n", encoding="utf-8")
    if args.json:
        print(json.dumps(data))
    else:
        print(report(data))
        if out is not None:
            print(f"\nwrote {out}")
    return 0 if result.completed else 1
