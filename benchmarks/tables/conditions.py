"""docs/benchmarks.md, "Machine and conditions of the recorded runs": when each results file was
recorded and the machine's load then, read from each file's ``machine`` block.

The scripts record the load at different moments: ``loadavg_before`` with ``loadavg_1_5_15`` after the
run (hub, start-up), ``loadavg_1_5_15`` before with ``loadavg_after`` (retrieval), ``loadavg_1_5_15`` alone
(the rest), and ``bench_models.py`` the 1-minute load before and after each thread count. A file that
records no date or load says so.
"""

from __future__ import annotations

from typing import Any

from benchmarks.tables._cells import fixed, md_table

__all__ = ["FILES", "conditions"]

# (section of the page, results file), in the page's order.
FILES = (
    ("1", "hub"),
    ("2", "startup"),
    ("3", "context"),
    ("3b", "context_window"),
    ("4", "voice"),
    ("5", "retrieval"),
    ("6", "footprint"),
    ("6", "llama_memory"),
    ("6", "stt_memory"),
    ("7", "decisions"),
    ("8", "ledger"),
    ("9", "store"),
    ("10", "models"),
)


def _recorded(data: dict[str, Any]) -> str:
    """The file's ``machine.date`` to the minute (``2026-11-30T09:50:08Z`` is ``2026-11-30 09:50``)."""
    date = data.get("machine", {}).get("date")
    if date is None:
        return "no date in the file"
    return date.replace("T", " ")[:16]


def _one_minute(values: list[float]) -> str:
    return fixed(values[0], 1)


def _load(data: dict[str, Any]) -> str:
    machine = data.get("machine", {})
    if "loadavg_1m_before" in machine:
        after = " / ".join(fixed(run["loadavg_1m_after"], 1) for run in data["runs"])
        return f"{fixed(machine['loadavg_1m_before'], 1)} before, {after} after"
    now = machine.get("loadavg_1_5_15")
    if now is None:
        return "not in the file"
    if "loadavg_before" in machine:
        return f"{_one_minute(machine['loadavg_before'])} before, {_one_minute(now)} after"
    if "loadavg_after" in machine:
        return f"{_one_minute(now)} before, {_one_minute(machine['loadavg_after'])} after"
    return _one_minute(now)


def conditions(*datas: dict[str, Any]) -> list[str]:
    """When each results file was recorded (UTC) and the 1-minute load average it recorded."""
    rows = []
    for (section, name), data in zip(FILES, datas, strict=True):
        rows.append([section, f"`{name}.json`", _recorded(data), _load(data)])
    return md_table(["§", "results file", "recorded (UTC)", "1-minute load average on 2 CPUs"], rows, align="rlll")
