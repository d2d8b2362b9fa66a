"""§11 and §16 of docs/benchmarks.md: the stress run, and the simulated person through exod.

From ``stress.json`` (``exo bench stress``, the issue's full counts: two SIGKILL runs and a fuzz top-up
gathered in one file), ``learning.json`` (``bench_learning.py``) and the reflection cases asked of real
models (``learning_engine_<model>.json``, ``bench_learning.py --engine``).
"""

from __future__ import annotations

from typing import Any

from benchmarks.tables._cells import frac, md_table, num

__all__ = ["stress", "learning", "learning_route", "learning_reflection"]


def _kill_row(data: dict[str, Any]) -> list[str]:
    runs = data["kill_runs"]
    total = data["kill_total"]
    cycles = " + ".join(num(run.get("cycles_checked", run.get("cycles", 0))) for run in runs)
    events = " + ".join(num(run["acknowledged_events"]) for run in runs)
    ledger = " + ".join(num(run["ledger_entries_seen"]) for run in runs)
    seconds = " + ".join(f"{run['seconds']:,.0f} s" for run in runs)
    lost = total["events_lost"] + total["ledger_lost"]
    changed = total["events_changed"] + total["ledger_changed"]
    homes = len(runs)
    return [
        f"kill: **{num(total['cycles'])} SIGKILL cycles** mid-stream ({cycles}, {homes} homes)",
        f"{num(total['acknowledged_events'])} events a client received ({events}) and "
        f"{num(total['ledger_entries_seen'])} ledger entries a reader saw committed ({ledger}): "
        f"**{lost} lost, {changed} changed, {total['seq_holes']} holes in `seq`** ({seconds})",
    ]


def _fuzz_tcp_row(data: dict[str, Any]) -> list[str]:
    tcp = data["fuzz"]["tcp"]
    topup = data["fuzz_topup"]["tcp"]
    alive = "exod alive after" if tcp["exod_alive"] and topup["exod_alive"] else "**exod died**"
    return [
        "fuzz over TCP `POST /command`",
        f"**{num(tcp['sent'])}** sent (+ {num(topup['sent'])} top-up): "
        f"**{tcp['status_5xx'] + topup['status_5xx']} 5xx, {tcp['untyped'] + topup['untyped']} untyped answers, "
        f"{tcp['crashes'] + topup['crashes']} crashes**, {alive} ({tcp['seconds']:.0f} s + {topup['seconds']:.0f} s)",
    ]


def _fuzz_stdio_row(data: dict[str, Any]) -> list[str]:
    stdio = data["fuzz"]["stdio"]
    topup = data["fuzz_topup"]["stdio"]
    answered = num(stdio["sent"] + topup["sent"])
    parts = f"{num(stdio['sent'])} + {num(topup['sent'])}"
    skipped = num(stdio["skipped"] + topup["skipped"])
    untyped = stdio["untyped"] + topup["untyped"]
    crashes = stdio["crashes"] + topup["crashes"]
    exits = sorted({stdio["exit_code"], topup["exit_code"]})
    exit_text = f"exit {exits[0]}" if len(exits) == 1 else f"exits {exits}"
    seconds = f"{stdio['seconds']:.0f} s + {topup['seconds']:.0f} s"
    result = (
        f"**{answered} lines answered** ({parts}; {skipped} generated lines skipped: blank, or `events.subscribe`, "
        f"which streams): **{untyped} untyped, {crashes} crashes**, {exit_text} ({seconds})"
    )
    return ["fuzz over `exo serve --stdio`", result]


def _idle_row(data: dict[str, Any]) -> list[str]:
    idle = data["idle"]
    return [
        f"idle: {num(idle['connections_attempted'])} connections from 20 addresses, opened one by one over "
        f"{idle['opening_s']:.0f} s",
        f"{idle['connect_failed']} failed to connect; exod held at most its caps ({idle['held_open_by_exod']} at the "
        "snapshot; 256 total, 32 per address; idle ones closed after 10 s); the owner's `/health` answered all "
        f"{num(idle['health_probes'])} probes, slowest **{idle['health_max_s']:.3f} s**, "
        f"{'none' if idle['health_over_1s'] == 0 else idle['health_over_1s']} over 1 s "
        f"(quiet: {idle['baseline_health_max_s']:.3f} s)",
    ]


def _stall_row(data: dict[str, Any]) -> list[str]:
    stall = data["stall"]
    statuses = ", ".join(str(status) for status in stall["big_post_statuses"])
    return [
        f"stall: {stall['big_posts']} arrays of 7.8 MB",
        f"refused `too_large` ({statuses}) before parsing; `/health` meanwhile at most "
        f"{stall['health_max_during_s']:.3f} s (quiet {stall['health_max_quiet_s']:.3f} s, {stall['ratio_max']}x)",
    ]


def stress(data: dict[str, Any]) -> list[str]:
    """§11: crashes, hostile input and connection floods: what was lost or answered badly (0 is the goal)."""
    rows = [_kill_row(data), _fuzz_tcp_row(data), _fuzz_stdio_row(data), _idle_row(data), _stall_row(data)]
    return md_table(["part", "result"], rows, align="ll")


def _share(value: float) -> str:
    return f"{value:.2f}"


def learning(data: dict[str, Any]) -> list[str]:
    """§16: lessons against the hidden rules per seed, and their mean."""
    headers = [
        "seed",
        "catalog P",
        "catalog R",
        "non-catalog P",
        "non-catalog R",
        "guarded promoted unasked",
        "larger-model calls",
        "corrected share, first → last third",
    ]
    rows = []
    unasked = 0
    for run in data["runs"]:
        promoted_unasked = len(run["guarded_promoted_unasked"])
        unasked += promoted_unasked
        rows.append(
            [
                run["seed"],
                _share(run["catalog"]["precision"]),
                _share(run["catalog"]["recall"]),
                _share(run["noncatalog"]["precision"]),
                _share(run["noncatalog"]["recall"]),
                promoted_unasked,
                run["larger_model_calls"],
                f"{_share(run['corrected_share_first_third'])} → {_share(run['corrected_share_last_third'])}",
            ]
        )
    mean = data["mean"]
    rows.append(
        [
            "mean",
            f"**{_share(mean['catalog']['precision'])}**",
            f"**{_share(mean['catalog']['recall'])}**",
            f"**{_share(mean['noncatalog']['precision'])}**",
            f"**{_share(mean['noncatalog']['recall'])}**",
            f"**{unasked}**",
            "",
            "",
        ]
    )
    return md_table(headers, rows, align="lrrrrrrl")


_SPLIT_NAMES = {"dev": "dev (9)", "heldout": "held-out (9)", "old": "old 5 (seen before)"}


def _reflection_row(who: str, split: str, counts: dict[str, int]) -> list[Any]:
    lessons = counts["lessons_expected"]
    nones = counts["cases"] - lessons
    return [
        who,
        _SPLIT_NAMES.get(split, split),
        frac(counts["right"], lessons),
        counts["wrong"],
        counts["missed"],
        frac(counts["right_none"], nones) if nones else "",
    ]


def learning_reflection(*models: dict[str, Any]) -> list[str]:
    """The reflection cases per model and split: right lessons, wrong ones kept, misses, and the rules-only
    stand-in on the same cases (from the first file) as the baseline."""
    headers = ["answered by", "cases", "right lessons", "wrong lessons kept", "missed", "no lesson when none meant"]
    rows = []
    for data in models:
        for split in data["splits"]:
            rows.append(_reflection_row(data["model"], split, data["summary"][split]))
    first = models[0]
    for split in first["splits"]:
        rows.append(_reflection_row("rules only (no model)", split, first["rules_only"][split]))
    return md_table(headers, rows, align="llrrrr")


def learning_route(*routes: dict[str, Any]) -> list[str]:
    """The simulated person with a real model as the learning route: one row per file's seed, the route's
    model named (``learning_route_<model>.json``, ``bench_learning.py --route-engine``)."""
    headers = [
        "route",
        "rules outside the catalog",
        "seed",
        "sessions x drafts",
        "catalog P",
        "catalog R",
        "non-catalog P",
        "non-catalog R",
        "guarded promoted unasked",
        "larger-model calls",
        "reflections dropped",
        "seconds",
    ]
    rows = []
    for data in routes:
        args = data["args"]
        for run in data["runs"]:
            hidden = len(run["noncatalog"]["hidden"])
            if args.get("noncatalog", "sim") == "sim":
                rules = f"the simulation's {hidden}"
            else:
                rules = f"{hidden} from the {args['noncatalog']} cases"
            rows.append(
                [
                    args["route"],
                    rules,
                    run["seed"],
                    f"{args['sessions']} x {args['drafts']}",
                    _share(run["catalog"]["precision"]),
                    _share(run["catalog"]["recall"]),
                    _share(run["noncatalog"]["precision"]),
                    _share(run["noncatalog"]["recall"]),
                    len(run["guarded_promoted_unasked"]),
                    run["larger_model_calls"],
                    len(run["reflections_dropped"]),
                    f"{run['seconds']:,.0f}",
                ]
            )
    return md_table(headers, rows, align="lllrrrrrrrrr")
