"""§6 of docs/benchmarks.md, "Board profiles": the whole stack against each board's memory budget.

From ``footprint_standard.json`` and ``footprint_small.json`` (``exo bench footprint --board B``), one
column per board. A figure over its budget is marked **OVER**, as the audit's report marks it
(``within_budgets`` in the file).
"""

from __future__ import annotations

from pathlib import PurePath
from typing import Any

from benchmarks.tables._cells import md_table, yes_no

__all__ = ["board_profiles"]

# The model each board profile runs (docs/models.md, "Board profiles"); the file names only its path.
_BOARD_MODELS = {"standard": "Qwen2.5-Coder 0.5B", "small": "Gemma 3 270M"}


def _over(value: float, budget: float, within: bool) -> str:
    if within:
        return f"{value} (within {budget:g})"
    return f"{value}: **OVER** {budget:g}"


def _cgroup_peak(run: dict[str, Any]) -> str:
    peak = run["cgroup_peak_mb"]
    if peak >= run["limit"]["memory_mb"]:
        return f"**{peak} MB** (= the limit: the kernel reclaimed)"
    return f"**{peak} MB** (within)"


def _idle(run: dict[str, Any]) -> str:
    idle = run["idle_rss_mb"]
    budget = run["budgets"]["idle_rss_mb"]
    if run["within_budgets"]["idle"]:
        return f"{idle} MB (within {budget:g})"
    return f"**{idle} MB: OVER** the {budget:g} MB budget"


def _model_read(run: dict[str, Any]) -> str:
    """Whether the model's pages were charged to the run through a private copy or the evicted shared file."""
    name = PurePath(run["model"]["file"]).name
    cached = [entry["still_cached_mb"] for entry in run["page_cache"]["evicted"] if entry["file"] == name]
    still = cached[0] if cached else 0.0
    if run["model"].get("private_copy"):
        return f"private copy (the shared file stayed cached: {still} MB)"
    return f"shared file, evicted to {still:g} MB first"


def _processes(run: dict[str, Any], marker: str) -> list[dict[str, Any]]:
    return [process for process in run["processes"] if marker in process["cmd"]]


def _column(run: dict[str, Any]) -> list[str]:
    faults = run["page_faults"]
    exod = _processes(run, "exo_core.cli serve")[0]
    client = _processes(run, "exo_core.cli device")[0]
    whisper = max(_processes(run, "device.stt_worker"), key=lambda process: process["peak_rss_mb"])
    cached = [mark["model_cached_mb"] for mark in faults["marks"] if mark["after"].startswith("answer")]
    budget = run["budgets"]["peak_mb"]
    within = run["within_budgets"]
    return [
        yes_no(run["completed"]),
        f"{run['approvals']} / {run['questions']}",
        f"{run['limit']['memory_mb']} MB",
        _cgroup_peak(run),
        str(run["oom_kills"]),
        f"**{faults['exod_after_warmup']}** ({faults['exod_per_answer_after_warmup']})",
        str(faults["cgroup_after_warmup"]),
        f"{min(cached)} MB",
        _model_read(run),
        f"{exod['peak_rss_mb']} ({exod['peak_anon_mb']} / {exod['peak_file_mb']})",
        f"{whisper['peak_rss_mb']} ({whisper['peak_anon_mb']})",
        str(client["peak_rss_mb"]),
        _idle(run),
        _over(run["peak_rss_mb"], budget, within["peak"]),
        _over(run["peak_rss_concurrent_mb"], budget, within["concurrent_rss"]),
        f"{run['startup_s']:.1f}",
    ]


_MEASURES = (
    "completed (3 spoken questions, 3 spoken answers)",
    "answered by button: approvals / questions (the model chooses which it asks)",
    "limit (the budget)",
    "**cgroup peak, page cache included**",
    "OOM kills",
    "**exod major faults after warm-up** (per answer after it)",
    "cgroup major faults after warm-up (every process)",
    "model pages cached after each answer",
    "model read through the cgroup",
    "exod peak RSS (anonymous / file-backed)",
    "Whisper child peak RSS (anonymous), while transcribing",
    "device client peak RSS",
    "idle exod RSS",
    "peak RSS of the processes alive together (summed VmHWM)",
    "sampled simultaneous RSS",
    "start-up to healthy (s)",
)


def board_profiles(standard: dict[str, Any], small: dict[str, Any]) -> list[str]:
    """§6: the `standard` and `small` boards' runs side by side, each figure against its board's budget."""
    runs = [standard, small]
    headers = ["measure"] + [f"`{run['board']}` ({_BOARD_MODELS[run['board']]})" for run in runs]
    columns = [_column(run) for run in runs]
    rows = [[measure, *(column[index] for column in columns)] for index, measure in enumerate(_MEASURES)]
    return md_table(headers, rows)
