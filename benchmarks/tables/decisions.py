"""§7 and §7b of docs/benchmarks.md: the decision models' accuracy, calibration and latency.

From ``decisions.json`` (``bench_decisions.py``), ``decisions_signal.json``
(``bench_decisions_signal.py``; ``decisions_signal_fixed.json`` is its run with the fixed examples, kept as
"before"; ``decisions_signal_pool.json`` the fourth pass's scored run), ``decisions_neighbours.json``
(``bench_decisions_neighbours.py``), ``decisions_pool.json`` (``bench_decisions_pool.py``) and
``decisions_http.json`` (``bench_decisions_http.py``; ``decisions_http_logprobs.json`` its fifth-pass run,
the larger model read from the engine's ``top_logprobs``), ``decisions_rule_history.json``
(``bench_decisions_rule_history.py``: old versions of the signal rules on messages written after them) and
``decisions_sources.json`` (``bench_decisions_sources.py``, the sixth pass's leave-one-source-out study), with
the columns and digits of each script's own tables (``print_results``). Systems are listed in the scripts'
``SYSTEMS`` order.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from benchmarks.tables._cells import fixed, frac, md_table, pct

__all__ = [
    "decisions_accuracy",
    "decisions_thresholds",
    "decisions_latency",
    "signal_test",
    "signal_heldout",
    "signal_latency",
    "signal_draft",
    "neighbours_loo",
    "pool_fit",
    "pool_more",
    "pool_test_fit",
    "pool_test_all",
    "http_paths",
    "http_agree",
    "http_logprob_paths",
    "http_logprob_agree",
    "http_scored_test",
    "http_scored_heldout",
    "sources_larger",
    "sources_local",
    "sources_systems",
    "sources_latency",
    "sources_deferring",
    "rule_history_versions",
    "rule_history_pooled",
    "rule_history_by_rule",
    "rule_history_fit_check",
    "prompt_groups",
]

_SYSTEMS = (
    "rules-only raw",
    "rules-only",
    "local raw",
    "local calibrated",
    "rules + local calibrated",
    "local raw (letters)",
    "local calibrated (letters)",
)
# The uses and their thresholds, as exo_core/decisions/uses.py defines them (docs/decisions.md).
_USES = (("signal", 0.6), ("toolset", 0.7), ("panel", 0.7))
_SIGNAL_SYSTEMS = (
    "rules-only",
    "local model",
    "gemma model",
    "rules + local",
    "rules + gemma",
    "rules + laptop",
    "rules + local, then laptop",
)


def _listed(scores: dict[str, Any], order: tuple[str, ...]) -> list[tuple[str, dict[str, Any]]]:
    return [(system, scores[system]) for system in order if system in scores]


def decisions_accuracy(data: dict[str, Any]) -> list[str]:
    """§7: accuracy and calibration error on the test part, overall and per use."""
    headers = ["system", "acc", "ECE"]
    for use, _threshold in _USES:
        headers += [f"{use} acc", f"{use} ECE"]
    rows = []
    for system, entry in _listed(data["scores"], _SYSTEMS):
        cells: list[Any] = [system, pct(entry["all"]["accuracy"]), f"{entry['all']['ece']:.3f}"]
        for use, _threshold in _USES:
            cells += [pct(entry[use]["accuracy"]), f"{entry[use]['ece']:.3f}"]
        rows.append(cells)
    return md_table(headers, rows)


def decisions_thresholds(data: dict[str, Any]) -> list[str]:
    """§7: at each use's threshold, the share of cases acted on and the accuracy when acting."""
    headers = ["system"]
    for use, threshold in _USES:
        headers += [f"{use} acts @{threshold}", f"{use} right @{threshold}"]
    rows = []
    for system, entry in _listed(data["scores"], _SYSTEMS):
        cells = [system]
        for use, _threshold in _USES:
            cells += [pct(entry[use]["coverage"]), pct(entry[use]["accuracy_acting"])]
        rows.append(cells)
    return md_table(headers, rows)


def decisions_latency(data: dict[str, Any]) -> list[str]:
    """§7: a decision on the local model against one generation step of the same model."""
    latency = data["latency"]
    kinds = (
        ("cached", "decision, question head in the cache"),
        ("restored", "decision, head restored (after a generation or another question)"),
        ("first", "first decision of a question (head evaluated)"),
    )
    rows: list[list[Any]] = []
    for kind, label in kinds:
        rows.append(
            [
                label,
                round(latency[f"decision_{kind}_ms"], 1),
                round(latency[f"decision_{kind}_p90_ms"], 1),
                round(latency[f"{kind}_over_step"], 2),
                latency[f"n_{kind}"],
            ]
        )
    rows.append(
        ["one plain generation step (1 token)", round(latency["generation_step_ms"], 1), "-", 1.0, latency["n_steps"]]
    )
    return md_table(["what", "median ms", "p90 ms", "x one generation step", "n"], rows)


def _acting(found: dict[str, Any]) -> list[str]:
    """A system's accuracy (abstentions wrong), ECE and abstention rate: the cells every signal table shows."""
    return [pct(found["accuracy"]), f"{found['ece']:.3f}", pct(found["abstention"])]


def _signal_part(data: dict[str, Any], part: str) -> list[str]:
    headers = ["system", "accuracy (abstain = wrong)", "ECE", "abstains", "top option right", "n"]
    rows = []
    for system, entry in _listed(data["scores"], _SIGNAL_SYSTEMS):
        found = entry.get(part)
        if found is None:  # a system whose model was not run (Gemma in the third pass)
            continue
        rows.append([system, *_acting(found), pct(found["top_accuracy"]), found["n"]])
    return md_table(headers, rows)


def signal_test(data: dict[str, Any]) -> list[str]:
    """§7b: the signal decision on the labelled set's test part (newest 40 %)."""
    return _signal_part(data, "test")


def signal_heldout(data: dict[str, Any]) -> list[str]:
    """§7b: the signal decision on the held-out messages."""
    return _signal_part(data, "heldout")


def signal_latency(data: dict[str, Any]) -> list[str]:
    """§7b: one signal decision on the device profile's model (without, then with the draft it answers)
    against one generation step."""
    local = data["models"]["local"]
    latency = local["latency"]
    rows = []
    for name, found in (
        ("one signal decision", latency),
        ("one signal decision, shown the draft", local.get("latency_draft")),
    ):
        if found is None:
            continue
        rows.append(
            [
                name,
                round(found["decision_median_ms"], 1),
                round(found["decision_p95_ms"], 1),
                round(found["median_over_step"], 2),
                round(found["p95_over_step"], 2),
                found["n_decisions"],
            ]
        )
    rows += [
        [
            "one generation step (1 token)",
            round(latency["generation_step_median_ms"], 1),
            round(latency["generation_step_p95_ms"], 1),
            1.0,
            "-",
            latency["n_steps"],
        ],
    ]
    return md_table(["what", "median ms", "p95 ms", "median / one step", "p95 / one step", "n"], rows)


# The rows of the draft table: (raws key, what the row says), in the script's order.
_DRAFT_ROWS = (
    ("local", "local model, message alone"),
    ("local+draft", "local model, shown the draft"),
    ("laptop", "laptop model, message alone"),
    ("laptop+draft", "laptop model, shown the draft"),
)


def signal_draft(data: dict[str, Any]) -> list[str]:
    """§7b: the fit set's cases the rules leave, each model without and with the draft (leave-one-out)."""
    headers = ["model and prompt", "top option right (raw)", "accuracy (abstain = wrong)", "ECE", "abstains", "n"]
    rows = []
    for key, name in _DRAFT_ROWS:
        found = data["draft"].get(key)
        if found is None:
            continue
        rows.append([name, pct(found["top_accuracy_raw"]), *_acting(found), found["n"]])
    return md_table(headers, rows)


def neighbours_loo(data: dict[str, Any]) -> list[str]:
    """§7b: the fit pool, leave-one-out, with the fixed and the chosen examples (the script's order)."""
    headers = ["system", "accuracy (abstain = wrong)", "ECE", "abstains", "top option right", "raw top right", "n"]
    rows = []
    for system, found in data["scores"].items():
        raw = "-"
        if "top_accuracy_raw" in found:
            raw = pct(found["top_accuracy_raw"])
        rows.append([system, *_acting(found), pct(found["top_accuracy"]), raw, found["n"]])
    return md_table(headers, rows)


def _pool_group(key: str) -> Callable[[dict[str, Any]], list[str]]:
    """§7b fourth pass: one group of ``bench_decisions_pool.py`` (the script's order)."""

    def render(data: dict[str, Any]) -> list[str]:
        headers = ["system", "accuracy (abstain = wrong)", "ECE", "abstains", "top option right", "n"]
        rows = [
            [system, *_acting(found), pct(found["top_accuracy"]), found["n"]]
            for system, found in data["scores"][key].items()
            if not system.startswith("_")
        ]
        return md_table(headers, rows)

    return render


pool_fit = _pool_group("fit")
pool_more = _pool_group("more")
pool_test_fit = _pool_group("test:fit")
pool_test_all = _pool_group("test:all")

# The paths of bench_decisions_http.py, in its table's order.
_HTTP_PATHS = ("in-process:nn", "http:nn", "http:fixed")


def http_paths(data: dict[str, Any]) -> list[str]:
    """§7b fourth pass: the laptop's 1.5B over HTTP (exod's settler) against in-process, per path."""
    found = data["summary"]
    rows = []
    for name in _HTTP_PATHS:
        got = found.get(name)
        if got is None:
            continue
        seconds = got["seconds"]
        rows.append(
            [
                name,
                pct(got["top_right"]),
                got["failed"],
                round(seconds["median_s"], 2),
                round(seconds["p95_s"], 2),
                seconds["over_timeout"],
                seconds["n"],
            ]
        )
    headers = ["path", "right", "not decided", "median s", "p95 s", "over 10 s", "n"]
    return md_table(headers, rows)


def http_agree(data: dict[str, Any]) -> list[str]:
    """§7b fourth pass: how often two paths name the same option."""
    rows = [[name, pct(got["agree"])] for name, got in data["summary"].items() if " = " in name]
    return md_table(["paths", "same option"], rows + [["n", data["summary"]["n"]]])


def http_logprob_paths(data: dict[str, Any]) -> list[str]:
    """§7b fifth pass: the settler's larger model read from ``top_logprobs``, against in-process, per path."""
    found = data["summary"]
    rows = []
    for name in _HTTP_PATHS:
        got = found.get(name)
        if got is None:
            continue
        seconds = got["seconds"]
        decided = got.get("decided_uncalibrated")
        rows.append(
            [
                name,
                pct(got["top_right"]),
                got["failed"],
                "-" if decided is None else decided,
                round(seconds["median_s"], 2),
                round(seconds["p95_s"], 2),
                seconds["over_timeout"],
                seconds["n"],
            ]
        )
    headers = ["path", "top option right", "no probabilities", "decided (raw ≥ 0.6)", "median s", "p95 s"]
    return md_table([*headers, "over 10 s", "n"], rows)


def http_logprob_agree(data: dict[str, Any]) -> list[str]:
    """§7b fifth pass: two paths' top options and probabilities side by side."""
    rows = [
        [name, pct(got["agree"]), round(got["mean_abs_diff"], 3), round(got["max_abs_diff"], 3), got["n"]]
        for name, got in data["summary"].items()
        if " = " in name
    ]
    return md_table(["paths", "same top option", "mean abs. difference of p", "max abs. difference of p", "n"], rows)


def _score_cells(got: dict[str, Any]) -> list[Any]:
    """A system's scores as the cells every decisions table ends with (``_SCORE_HEADERS``)."""
    return [pct(got["accuracy"]), round(got["ece"], 3), pct(got["abstention"]), pct(got["top_accuracy"]), got["n"]]


_SCORE_HEADERS = ["accuracy (abstain = wrong)", "ECE", "abstains", "top option right", "n"]


def _http_scored(part: str) -> Callable[[dict[str, Any]], list[str]]:
    def render(data: dict[str, Any]) -> list[str]:
        rows = []
        for system, by_part in data["scored"]["scores"].items():
            got = by_part.get(part, {})
            if "accuracy" not in got:
                continue
            rows.append([system, *_score_cells(got)])
        return md_table(["system", *_SCORE_HEADERS], rows)

    return render


http_scored_test = _http_scored("test")
http_scored_heldout = _http_scored("heldout")


# ``bench_decisions_sources.py`` (issue 21's sixth pass): the leave-one-source-out study on the fit data.
_SOURCE_HEADERS = ["prompt", "source", "accuracy (abstain = wrong)", "ECE", "abstains", "top option right"]


def _sources_leftovers(model: str) -> Callable[[dict[str, Any]], list[str]]:
    def render(data: dict[str, Any]) -> list[str]:
        rows = []
        for job, groups in data["summary"]["leftovers"].items():
            if not job.startswith(model + ":"):
                continue
            for group, got in groups.items():
                rows.append(
                    [
                        job,
                        group,
                        pct(got["accuracy"]),
                        round(got["ece"], 3),
                        pct(got["abstention"]),
                        pct(got["top_accuracy"]),
                        pct(got["top_accuracy_raw"]),
                        got["n"],
                    ]
                )
        return md_table([*_SOURCE_HEADERS, "raw top right", "n"], rows)

    return render


sources_larger = _sources_leftovers("larger")
sources_local = _sources_leftovers("local")


def sources_systems(data: dict[str, Any]) -> list[str]:
    """§7b sixth pass: the rules, then the models, over every fit message, per source and pooled."""
    rows = []
    for name, groups in data["summary"]["systems"].items():
        for group, got in groups.items():
            rows.append([name, group, *_score_cells(got)])
    return md_table(["system", "source", *_SCORE_HEADERS], rows)


def sources_latency(study: dict[str, Any], alone: dict[str, Any]) -> list[str]:
    """§7b sixth pass: seconds per decision of each model and prompt on the fit leftovers, in the study (both
    models at once) and in a run of the larger model alone (``--models larger --limit N``)."""
    rows = []
    for data in (study, alone):
        info = data.get("info", {})
        if info.get("limit"):
            run = f"{' and '.join(info.get('models', []))} alone, first {info['limit']}"
        else:
            run = "study (" + " and ".join(info.get("models", ["larger", "local"])) + " at once)"
        for job, got in data["seconds"].items():
            rows.append([job, run, round(got["median_s"], 2), round(got["p95_s"], 2), got["over_timeout"], got["n"]])
    return md_table(["model:prompt", "run", "median s", "p95 s", "over 10 s", "n"], rows)


def sources_deferring(data: dict[str, Any]) -> list[str]:
    """§7b: the device model defers below a bar to the larger model, over every fit message (pooled)."""
    rows = []
    for name, got in data["summary"].get("deferring", {}).items():
        rows.append(
            [
                f"rules + local:fixed, then {name}",
                pct(got["accuracy"]),
                round(got["ece"], 3),
                pct(got["abstention"]),
                got["sent_to_larger"],
                round(got["margin"], 3),
                got["n"],
            ]
        )
    headers = ["system", "accuracy (abstain = wrong)", "ECE", "abstains", "sent to the larger model", "margin", "n"]
    return md_table(headers, rows)


_POOLINGS = (
    ("newest_without", "each message once, by the newest rules written without it (used)"),
    ("all_versions", "every version on every message it never saw"),
    ("distinct_versions", "every version, one that settles as the one before counted once"),
)


# The fit data's parts in the check, in the page's order (the results file sorts its keys).
_FIT_PARTS = (
    ("fit", "labelled set, fit part"),
    ("fit172", "the 172 with drafts"),
    ("more", "the fourth pass's 191"),
    ("heldout", "first held-out set (promoted)"),
    ("heldout2", "second held-out set (promoted)"),
    ("heldout3", "third held-out set (promoted)"),
    ("heldout4", "fourth held-out set (promoted)"),
    ("all", "all of it"),
)


def rule_history_versions(data: dict[str, Any]) -> list[str]:
    """§7b: each old version of the signal rules on the fit messages added after it."""
    rows = []
    for version in data["versions"]:
        for part, found in version["parts"].items():
            share = found["right"] / found["settled"] if found["settled"] else None
            same = "yes" if version["same_as_previous"] else "no"
            date = version["date"][:16].replace("T", " ")
            rows.append([version["commit"], date, part, found["n"], found["settled"], found["right"], pct(share), same])
    headers = ["rules at", "committed", "messages", "n", "settled", "right", "right when settled"]
    return md_table([*headers, "settles as the version before"], rows, align="lllrrrrl")


def rule_history_pooled(data: dict[str, Any]) -> list[str]:
    """§7b: the rules' precision on later messages, pooled three ways."""
    rows = []
    for key, name in _POOLINGS:
        got = data["pooled"][key]
        low, high = got["wilson95"]
        rows.append(
            [name, frac(got["right"], got["settled"]), fixed(got["precision"], 3), f"{fixed(low, 3)}-{fixed(high, 3)}"]
        )
    return md_table(["pooling", "right / settled", "precision", "95 % interval (Wilson)"], rows)


def rule_history_by_rule(data: dict[str, Any]) -> list[str]:
    """§7b: settlements per rule, each message judged once by the newest rules written without it."""
    found = data["by_rule_newest_without"]
    ordered = sorted(found.items(), key=lambda item: (-item[1]["settled"], item[0]))
    rows = [[name, got["settled"], got["right"]] for name, got in ordered]
    return md_table(["rule (fired in a settlement)", "settled", "right"], rows)


def rule_history_fit_check(data: dict[str, Any]) -> list[str]:
    """§7b: rules-only on the fit data with the rules' settlements at 1 and at the measured confidence."""
    check = data["fit_check"]
    rows = []
    for label, sure in (("probability 1", "1"), ("measured", fixed(check["confidence"], 3))):
        got = check["scores"][label]
        for part, name in _FIT_PARTS:
            found = got.get(part)
            if found is None:  # a results file from before that part was fit data
                continue
            rows.append(
                [sure, name, pct(found["accuracy"]), round(found["ece"], 3), pct(found["abstention"]), found["n"]]
            )
    return md_table(
        ["rules settle at", "fit data", "accuracy (abstain = wrong)", "ECE", "abstains", "n"], rows, "llrrrr"
    )


# ``bench_decisions_prompt.py`` (issue 21's seventh pass): the two prompts, each fit source calibrated on the others.
_PROMPT_SYSTEMS = ("chain", "chain (no deferral)", "rules + larger", "rules + local", "larger alone (leftovers)")


def prompt_groups(data: dict[str, Any]) -> list[str]:
    """§7b seventh pass on: each prompt's systems on the groups of sources (the older ones, the newest promoted
    held-out set or sets, all of them pooled), not on each source."""
    rows = []
    for system in _PROMPT_SYSTEMS:
        for prompt, systems in data["summary"].items():
            for group, got in systems[system].items():
                if group in data["sources"]:
                    continue
                rows.append([system, prompt, group, *_score_cells(got)])
    return md_table(["system", "prompt", "messages", *_SCORE_HEADERS], rows, align="lllrrrrr")


def signal_asks(data: dict[str, Any]) -> list[str]:
    """§7c: the learning question per 100 ordinary turns before and after, and the corrections still caught."""
    headers = [
        "set",
        "ordinary turns",
        "asks/100 before",
        "asks/100 after",
        "corrections+rules",
        "caught before",
        "caught after",
        "of them asked before / after",
    ]
    rows = []
    for name, got in data["sets"].items():
        rows.append(
            [
                name,
                got["ordinary"],
                f"{got['questions_per_100_ordinary_before']:.1f}",
                f"{got['questions_per_100_ordinary_after']:.1f}",
                got["teaching"],
                pct(got["caught_share_before"]),
                pct(got["caught_share_after"]),
                f"{got['teaching_asked_before']} / {got['teaching_asked_after']}",
            ]
        )
    return md_table(headers, rows)
