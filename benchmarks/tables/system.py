"""§1-3 and §18 of docs/benchmarks.md: the hub, start-up and idle memory, the context engine, the tool sandbox.

One function per table; each takes the results file's JSON and returns the table's lines. The columns
and number formats are those the scripts' own ``--markdown`` prints (``bench_hub.py``, ``bench_startup.py``,
``bench_context.py``).
"""

from __future__ import annotations

from typing import Any

from benchmarks.tables._cells import fmt, md_table

__all__ = [
    "sandbox_cost",
    "sandbox_walls",
    "hub_live",
    "hub_baseline",
    "hub_replay",
    "startup_time",
    "startup_memory",
    "startup_imports",
    "context_tokens",
    "context_build",
    "context_window",
]

_HUB_LIVE_HEADERS = [
    "durability",
    "emit",
    "subs",
    "events",
    "appended/s",
    "delivered/s",
    "baseline",
    "baseline/s",
    "append x",
    "deliver x",
    "server us/ev",
    "server cpu",
    "subs cpu",
    "lags",
    "complete",
]


def hub_live(data: dict[str, Any]) -> list[str]:
    """§1: events appended and delivered per second, each mode against its raw SQLite baseline."""
    rows = []
    for run in data["live"]:
        complete = "yes" if run["all_received_in_order"] else "NO"
        rows.append(
            [
                run["durability"],
                run["mode"],
                run["subscribers"],
                run["events"],
                run["appended_per_s"],
                run["delivered_per_s"],
                run["baseline"],
                run["baseline_per_s"],
                run["append_ratio"],
                run["deliver_ratio"],
                run["server_cpu_us_per_event"],
                run["server_cpu_share"],
                run["subscriber_cpu_share"],
                run["lag_recoveries"],
                complete,
            ]
        )
    return md_table(_HUB_LIVE_HEADERS, rows)


def hub_baseline(data: dict[str, Any]) -> list[str]:
    """§1: the baseline, raw SQLite inserts of the hub's rows, per durability."""
    rows = []
    for durability, inserts in data["baseline_inserts"].items():
        rows.append([durability, "1 row / txn", inserts["per_row_events"], inserts["per_row_per_s"]])
        rows.append([durability, f"{inserts['batch']} rows / txn", inserts["batched_events"], inserts["batched_per_s"]])
    return md_table(["durability", "transactions", "rows", "rows/s"], rows)


def hub_replay(data: dict[str, Any]) -> list[str]:
    """§1: replay of the whole log over the socket against a plain SELECT of the same rows."""
    replay = data["replay"]
    rows = [
        ["plain SELECT (baseline)", replay["baseline_select_s"], replay["baseline_select_per_s"], 1.0],
        ["ExoClient.raw_events", replay["client_s"], replay["client_per_s"], replay["client_ratio"]],
        ["raw SSE bytes", replay["raw_sse_s"], replay["raw_sse_per_s"], replay["raw_sse_ratio"]],
    ]
    return md_table(["reader", "seconds", "events/s", "x SELECT time"], rows)


def startup_time(data: dict[str, Any]) -> list[str]:
    """§2: process start to a healthy ``GET /health``, against ``python -c pass``."""
    baseline = data["baseline"]
    exod = data["exod"]
    cli = data["cli"]
    pass_s = baseline["python_pass_s"]
    rows = [
        ["python -c pass (baseline)", pass_s * 1000, 1.0],
        ["exod, fresh home", exod["healthy_fresh_home_s"] * 1000, exod["healthy_fresh_home_s"] / pass_s],
        ["exod, restart on same home", exod["healthy_restart_s"] * 1000, exod["healthy_restart_s"] / pass_s],
        ["exo --help (python -m exo_core.cli --help)", cli["help_s"] * 1000, cli["help_ratio"]],
    ]
    return md_table(["what", "ms", "x python -c pass"], rows)


def startup_memory(data: dict[str, Any]) -> list[str]:
    """§2: idle memory of exod without models against an idle bare interpreter."""
    baseline = data["baseline"]
    exod = data["exod"]
    share = f"{exod['budget_used'] * 100:.0f}%"
    rows = [
        [
            "idle python (baseline)",
            baseline["python_idle_vmrss_kb"] / 1024,
            baseline["python_idle_vmhwm_kb"] / 1024,
            1.0,
            "-",
        ],
        ["exod (no models)", exod["idle_vmrss_kb"] / 1024, exod["idle_vmhwm_kb"] / 1024, exod["rss_ratio"], share],
    ]
    return md_table(["process", "VmRSS MB", "VmHWM MB", "x python", "of budget"], rows)


def startup_imports(data: dict[str, Any]) -> list[str]:
    """§2: the import cost of the CLI and of the daemon, with their four heaviest direct imports."""
    rows = []
    for imported in data["imports"]:
        heaviest = [f"{entry['module']} {entry['cumulative_us'] / 1000:.0f}" for entry in imported["heaviest"][:4]]
        rows.append([f"import {imported['module']}", imported["cumulative_us"] / 1000, ", ".join(heaviest)])
    return md_table(["import", "ms", "heaviest direct imports (ms, cumulative)"], rows)


def context_tokens(data: dict[str, Any]) -> list[str]:
    """§3: tokens sent per turn by the summary tree against the full transcript."""
    tokens = data["result"]["tokens"]
    rows = [
        ["last turn", tokens["last_turn_tree"], tokens["last_turn_full"], tokens["last_turn_ratio"]],
        ["all turns", tokens["all_turns_tree"], tokens["all_turns_full"], tokens["all_turns_ratio"]],
        [
            "largest turn",
            tokens["max_turn_tree"],
            tokens["last_turn_full"],
            tokens["max_turn_tree"] / tokens["last_turn_full"],
        ],
    ]
    return md_table(["measure", "summary tree", "full transcript", "ratio"], rows)


def context_build(data: dict[str, Any]) -> list[str]:
    """§3: time to build one turn's input, the summary tree against the verbatim transcript."""
    build = data["result"]["build_ms_per_turn"]
    steady = data["result"]["steady_build_ms"]
    rows = [
        ["per turn, median", build["tree_median"], build["full_median"], build["tree_median"] / build["full_median"]],
        ["per turn, p95", build["tree_p95"], build["full_p95"], build["tree_p95"] / build["full_p95"]],
        [f"steady, median of {steady['repeat']}", steady["tree_median"], steady["full_median"], steady["ratio"]],
    ]
    return md_table(["measure", "summary tree", "verbatim", "ratio"], rows)


def context_window(data: dict[str, Any]) -> list[str]:
    """§3b: a session's prompts sized to the model's window against the engine's unfitted input."""
    result = data["result"]
    tokens = result["tokens_per_call"]
    rows = [
        ["model calls", result["calls"], result["calls"]],
        ["calls over the window", f"**{fmt(result['overflows'])}**", result["unfitted_overflows"]],
        ["prompt tokens per call, median", tokens["median"], tokens["unfitted_median"]],
        ["prompt tokens per call, p95", tokens["p95"], ""],
        ["prompt tokens per call, max", tokens["max"], tokens["unfitted_max"]],
        ["prompt tokens, last call", tokens["last"], ""],
    ]
    return md_table(["measure", "sized to the window", "unfitted (engine alone)"], rows)


def sandbox_cost(data: dict[str, Any]) -> list[str]:
    """§18: starting a command in the tool sandbox against starting it bare, medians of interleaved rounds."""
    rows = [
        ["`bash -c true` (baseline)", data["bare_ms"], 1.0],
        ["the same in the sandbox", data["sandbox_ms"], data["ratio"]],
    ]
    return md_table([f"start to exit ({data['rounds']} rounds, median)", "ms", "x bare"], rows)


def sandbox_walls(data: dict[str, Any]) -> list[str]:
    """§18: the secret-reading forms by category: read unconfined, read through the bash tool in the sandbox."""
    walls = data["walls"]
    rows = [
        [
            row["category"],
            row["forms"],
            row.get("unconfined", 0),
            row.get("sandbox_beside", 0),
            row.get("sandbox_inside", 0),
        ]
        for row in walls["categories"]
    ]
    totals = walls["totals"]
    rows.append(
        [
            "**all**",
            totals["forms"],
            totals.get("unconfined", 0),
            f"**{fmt(totals.get('sandbox_beside', 0))}**",
            f"**{fmt(totals.get('sandbox_inside', 0))}**",
        ]
    )
    headers = ["category", "forms", "read unconfined", "read in the sandbox (workspace beside the home)", "(inside it)"]
    return md_table(headers, rows)
