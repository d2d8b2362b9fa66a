"""The benchmarks run: each in its tiny ``--quick`` mode, results have the expected shape.

No timing is asserted here (docs/benchmarks.md: speed is measured in benchmarks, never
asserted in a test); only that every number a benchmark reports is there and
positive. Both benchmarks run at once to keep this test short.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent


def _positive(value: Any, where: str) -> None:
    assert isinstance(value, (int, float)) and not isinstance(value, bool), f"{where} is not a number: {value!r}"
    assert value > 0, f"{where} is not positive: {value!r}"


def _machine(data: dict[str, Any]) -> None:
    m = data["machine"]
    _positive(m["nproc"], "machine.nproc")
    assert m["cpu_model"] and m["date"] and m["python"] and m["sqlite"]


def _run_both(tmp_path: Path) -> dict[str, dict[str, Any]]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(REPO) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    commands = {
        "hub": [
            sys.executable,
            "-m",
            "benchmarks.bench_hub",
            "--quick",
            "--json",
            "--out",
            str(tmp_path / "hub.json"),
            "--seq-events",
            "20",
            "--events",
            "200",
            "--batch",
            "50",
            "--replay",
            "500",
        ],
        "startup": [
            sys.executable,
            "-m",
            "benchmarks.bench_startup",
            "--quick",
            "--json",
            "--out",
            str(tmp_path / "startup.json"),
        ],
    }
    procs = {
        name: subprocess.Popen(cmd, cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for name, cmd in commands.items()
    }
    results = {}
    for name, proc in procs.items():
        out, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, f"bench_{name} failed:\n{err[-4000:]}"
        printed = json.loads(out)
        written = json.loads((tmp_path / f"{name}.json").read_text())
        assert printed == written
        results[name] = written
    return results


def test_benchmarks_quick(tmp_path: Path) -> None:
    results = _run_both(tmp_path)

    hub = results["hub"]
    assert hub["benchmark"] == "hub" and hub["quick"] is True
    _machine(hub)
    seen = {(r["durability"], r["mode"], r["subscribers"]) for r in hub["live"]}
    assert seen == {
        (d, m, s) for d in ("full", "normal") for m in ("sequential", "streamed", "concurrent") for s in (1, 10)
    }
    for r in hub["live"]:
        where = f"live[{r['durability']},{r['mode']},{r['subscribers']}]"
        for key in (
            "events",
            "appended_per_s",
            "delivered_per_s",
            "deliveries_per_s",
            "baseline_per_s",
            "append_ratio",
            "deliver_ratio",
            "server_cpu_us_per_event",
        ):
            _positive(r[key], f"{where}.{key}")
        assert r["all_received_in_order"] is True, where
        assert r["lag_recoveries"] >= 0
    for durability in ("full", "normal"):
        b = hub["baseline_inserts"][durability]
        for key in ("per_row_per_s", "batched_per_s", "per_row_events", "batched_events"):
            _positive(b[key], f"baseline_inserts.{durability}.{key}")
    rp = hub["replay"]
    assert rp["events"] == 500
    for key in ("baseline_select_per_s", "client_per_s", "raw_sse_per_s", "client_ratio", "raw_sse_ratio"):
        _positive(rp[key], f"replay.{key}")

    st = results["startup"]
    assert st["benchmark"] == "startup" and st["quick"] is True
    _machine(st)
    for key in ("python_pass_s", "python_idle_vmrss_kb", "python_idle_vmhwm_kb", "python_pass_maxrss_kb"):
        _positive(st["baseline"][key], f"baseline.{key}")
    for key in (
        "healthy_fresh_home_s",
        "healthy_restart_s",
        "healthy_ratio",
        "idle_vmrss_kb",
        "idle_vmhwm_kb",
        "rss_ratio",
        "budget_mb",
    ):
        _positive(st["exod"][key], f"exod.{key}")
    for key in ("help_s", "python_pass_s", "help_ratio"):
        _positive(st["cli"][key], f"cli.{key}")
    assert {i["module"] for i in st["imports"]} == {"exo_core.cli.main", "exo_core.daemon"}
    for imp in st["imports"]:
        _positive(imp["cumulative_us"], f"imports.{imp['module']}")
