"""The console tables of ``bench_decisions_sources.py`` (issue 21's sixth pass), from its results file.

docs/benchmarks.md renders the same numbers through ``benchmarks/tables/decisions.py``; these are what the
script prints after a run and with ``--markdown``.
"""

from __future__ import annotations

from typing import Any

from benchmarks._common import print_table

__all__ = ["print_results"]

HEADERS = [
    "prompt",
    "source",
    "accuracy (abstain = wrong)",
    "ECE",
    "abstains",
    "top option right",
    "raw top right",
    "n",
]
SYSTEM_HEADERS = ["system", "source", "accuracy (abstain = wrong)", "ECE", "abstains", "top option right", "n"]


def leftover_rows(results: dict[str, Any], model: str) -> list[list[Any]]:
    """One row per prompt of ``model`` (larger, local) and group: the rules' leftovers."""
    rows = []
    for job, groups in results["summary"]["leftovers"].items():
        if not job.startswith(model + ":"):
            continue
        for group, got in groups.items():
            rows.append(
                [
                    job,
                    group,
                    f"{100 * got['accuracy']:.1f}%",
                    round(got["ece"], 3),
                    f"{100 * got['abstention']:.1f}%",
                    f"{100 * got['top_accuracy']:.1f}%",
                    f"{100 * got['top_accuracy_raw']:.1f}%",
                    got["n"],
                ]
            )
    return rows


def system_rows(results: dict[str, Any], *, pooled_only: bool = False) -> list[list[Any]]:
    """One row per system and group over every fit message."""
    rows = []
    for name, groups in results["summary"]["systems"].items():
        for group, got in groups.items():
            if pooled_only and group != "pooled":
                continue
            rows.append(
                [
                    name,
                    group,
                    f"{100 * got['accuracy']:.1f}%",
                    round(got["ece"], 3),
                    f"{100 * got['abstention']:.1f}%",
                    f"{100 * got['top_accuracy']:.1f}%",
                    got["n"],
                ]
            )
    return rows


def run_name(results: dict[str, Any]) -> str:
    """What a run's seconds were measured beside: the whole study (both models at once), or one model alone."""
    info = results.get("info", {})
    if not info.get("limit"):
        return "study (" + " and ".join(info.get("models", ["larger", "local"])) + " at once)"
    return f"{' and '.join(info.get('models', []))} alone, first {info['limit']}"


def latency_rows(results: dict[str, Any]) -> list[list[Any]]:
    """One row per job: seconds per decision."""
    return [
        [job, run_name(results), round(got["median_s"], 2), round(got["p95_s"], 2), got["over_timeout"], got["n"]]
        for job, got in results["seconds"].items()
    ]


LATENCY_HEADERS = ["model:prompt", "run", "median s", "p95 s", "over 10 s", "n"]


def print_results(results: dict[str, Any]) -> None:
    """The tables for docs/benchmarks.md, and the choice."""
    print(f"\nfit cases {results['summary']['cases']}; the rules leave {results['summary']['leftover_cases']}")
    print_table("The larger model over HTTP, the rules' leftovers", HEADERS, leftover_rows(results, "larger"))
    local = leftover_rows(results, "local")
    if local:
        print_table("The local 0.5B in-process, the rules' leftovers", HEADERS, local)
    print_table("Systems over every fit message", SYSTEM_HEADERS, system_rows(results))
    print_table("Seconds per decision", LATENCY_HEADERS, latency_rows(results))
    print(f"\nchoice: {results['choice']}")
    if results["summary"].get("deferring"):
        print_table("The device model defers below a bar (every fit message)", DEFER_HEADERS, defer_rows(results))
        print(f"\ndefer choice: {results.get('defer_choice')}")


DEFER_HEADERS = ["system", "accuracy (abstain = wrong)", "ECE", "abstains", "sent to the larger model", "margin", "n"]


def defer_rows(results: dict[str, Any]) -> list[list[Any]]:
    """One row per bar and prompt of the deferral study."""
    rows = []
    for name, got in results["summary"].get("deferring", {}).items():
        rows.append(
            [
                f"rules + local:fixed, then {name}",
                f"{100 * got['accuracy']:.1f}%",
                round(got["ece"], 3),
                f"{100 * got['abstention']:.1f}%",
                got["sent_to_larger"],
                round(got["margin"], 3),
                got["n"],
            ]
        )
    return rows
