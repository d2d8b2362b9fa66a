"""Decision models: accuracy and calibration of rules-only, the local model raw and calibrated; latency.

The labelled set is ``benchmarks/data/decisions.jsonl``: 337 cases written for
this benchmark across the three wired uses (signal, toolset, panel), each with
a time stamp. It is split **by time**: the oldest 60 % is the *fit* part
(calibrations are fitted on it, as they would be on a person's first months of
labels), the newest 40 % the *test* part (every number below is on it).

Systems, each scored on every test case:

* ``rules-only``: the rules in code, then the cue-word provider (no model), calibrated on the fit
  part like any provider (``rules-only raw``: without that calibration);
* ``local raw`` / ``local calibrated``: the local GGUF model alone (one forward
  pass per case), without and with the calibration fitted on the fit part;
* ``rules + local calibrated``: the configured order (rules first, then the
  calibrated model), which is what a device runs.

Reported per system and use: accuracy of the most probable option, expected
calibration error (10 equal bins, on the probability of that option), and at
the use's threshold the share of cases acted on and the accuracy when acting.

Latency, in the same run and on the same model object: a decision with the
question's head in the KV cache (the usual case), a decision right after a
plain generation replaced the cache (cold), and one plain generation step
(one decoded token, the median per-token time of a 16-token completion). The
ratio is decision / one step.

    python -m benchmarks.bench_decisions            # full run, writes $EXO_HOME/bench/decisions.json
    python -m benchmarks.bench_decisions --quick    # a few cases, rules-only + a few model calls, writes nothing
    python -m benchmarks.bench_decisions --markdown # tables from the saved results
"""

from __future__ import annotations

import asyncio
import json
import statistics
import time
from pathlib import Path
from typing import Any

from benchmarks import _common
from benchmarks._common import REPO, bench_parser, machine_info, print_table, ratio, write_results
from exo_core.decisions import Decider, expected_calibration_error, fit
from exo_core.decisions.calibration import Calibration
from exo_core.decisions.providers import RulesOnlyProvider
from exo_core.decisions.uses import USES
from exo_core.seams.decision import Question

DATA = REPO / "benchmarks" / "data" / "decisions.jsonl"
FIT_SHARE = 0.6
SYSTEMS = (
    "rules-only raw",
    "rules-only",
    "local raw",
    "local calibrated",
    "rules + local calibrated",
    "local raw (letters)",
    "local calibrated (letters)",
)


def load_cases(path: Path = DATA) -> list[dict[str, Any]]:
    """The labelled cases, oldest first."""
    cases = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    for case in cases:
        question = USES[case["use"]]
        if case["label"] not in question.options:
            raise ValueError(f"case {case['id']}: {case['label']!r} is not an option of {case['use']}")
    return sorted(cases, key=lambda c: c["ts"])


def split_by_time(cases: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Oldest ``FIT_SHARE`` to fit on, the rest to test on."""
    cut = int(len(cases) * FIT_SHARE)
    return cases[:cut], cases[cut:]


def score(rows: list[tuple[dict[str, float], str]], threshold: float | None = None) -> dict[str, Any]:
    """Accuracy, ECE and (with ``threshold``) coverage and accuracy when acting."""
    picks = [max(p, key=lambda o: p[o]) for p, _ in rows]
    right = [pick == label for pick, (_, label) in zip(picks, rows)]
    conf = [p[pick] for pick, (p, _) in zip(picks, rows)]
    out: dict[str, Any] = {
        "n": len(rows),
        "accuracy": sum(right) / len(rows) if rows else 0.0,
        "ece": expected_calibration_error(conf, right),
    }
    if threshold is not None:
        acted = [r for r, c in zip(right, conf) if c >= threshold]
        out["coverage"] = len(acted) / len(rows) if rows else 0.0
        out["accuracy_acting"] = sum(acted) / len(acted) if acted else None
    return out


async def _rules_only(cases: list[dict[str, Any]]) -> list[tuple[dict[str, float], dict[str, float], bool]]:
    """(raw, used, by_rule) per case for rules then the cue-word provider."""
    decider = Decider([RulesOnlyProvider()])
    out = []
    for case in cases:
        d = await decider.decide(USES[case["use"]], case["text"], record=False)
        out.append((dict(d.raw), dict(d.raw), d.via == "rule"))
    return out


def _rule_answer(question: Question, text: str) -> str | None:
    for rule in question.rules:
        if rule.matches(text):
            return rule.option
    return None


async def _local_raw(
    provider: Any, cases: list[dict[str, Any]], timings: dict[str, list[float]] | None, generate: Any
) -> list[dict[str, float]]:
    """The model's raw probabilities for every case; with ``timings``, times decisions and generation steps.

    Every 12 cases a plain 16-token generation runs on the same model (what a turn does between
    decisions), so the decisions after it find the cache replaced.
    """
    out = []
    for i, case in enumerate(cases):
        if timings is not None and i % 12 == 0:
            timings["step"].append(await generate())
        started = time.perf_counter()
        raw = await provider.probabilities(USES[case["use"]], case["text"])
        took = time.perf_counter() - started
        last = provider.last
        if timings is not None and last is not None:
            kind = {"evaluated": "first"}.get(last.head, last.head)
            timings[kind].append(took)
            timings["evaluated"].append(float(last.evaluated))
        out.append(dict(raw))
    return out


def _generation_step(transport: Any) -> Any:
    """A coroutine factory: one 16-token plain completion; returns the median per-token decode time."""
    from exo_core.seams.model import ChatMessage, ModelRequest, TextDelta

    request = ModelRequest(
        messages=(ChatMessage("user", "Tell me a short story about a lighthouse keeper."),),
        max_tokens=16,
        temperature=0.0,
        stop=("\n\n",),
    )

    async def run() -> float:
        stamps = []
        async for chunk in transport.stream(request):
            if isinstance(chunk, TextDelta):
                stamps.append(time.perf_counter())
        gaps = [b - a for a, b in zip(stamps, stamps[1:])]
        return statistics.median(gaps) if gaps else float("nan")

    return run


def _fit_by_use(fit_cases: list[dict[str, Any]], raws: list[dict[str, float]]) -> dict[str, Calibration]:
    out = {}
    for use, question in USES.items():
        rows = [(raw, c["label"]) for c, raw in zip(fit_cases, raws) if c["use"] == use]
        found = fit(question.options, rows)
        if found is not None:
            out[use] = found
    return out


async def run(quick: bool, threads: int, model: bool = True) -> dict[str, Any]:
    """Score every system on the test part; time decisions against generation."""
    cases = load_cases()
    fit_cases, test_cases = split_by_time(cases)
    if quick:
        fit_cases, test_cases = fit_cases[:40], test_cases[:24]
    results: dict[str, Any] = {
        "benchmark": "decisions",
        "quick": quick,
        "machine": machine_info(),
        "cases": {
            "total": len(cases),
            "fit": len(fit_cases),
            "test": len(test_cases),
            "fit_until": fit_cases[-1]["ts"],
            "test_from": test_cases[0]["ts"],
            "by_use": {u: sum(1 for c in cases if c["use"] == u) for u in USES},
        },
    }
    per: dict[str, dict[str, list[tuple[dict[str, float], str]]]] = {s: {u: [] for u in USES} for s in SYSTEMS}

    rules_fit = await _rules_only(fit_cases)
    rules_test = await _rules_only(test_cases)
    # The cue-word provider is calibrated like any provider, on the fit cases no rule settled.
    rules_cal = {}
    for use, question in USES.items():
        rows = [
            (raw, c["label"]) for c, (raw, _, by_rule) in zip(fit_cases, rules_fit) if c["use"] == use and not by_rule
        ]
        found = fit(question.options, rows)
        if found is not None:
            rules_cal[use] = found
    for case, (raw, _, by_rule) in zip(test_cases, rules_test):
        used = raw if by_rule or case["use"] not in rules_cal else rules_cal[case["use"]].apply(raw)
        per["rules-only raw"][case["use"]].append((raw, case["label"]))
        per["rules-only"][case["use"]].append((used, case["label"]))
    results["calibrations_rules_only"] = {u: c.to_json() for u, c in rules_cal.items()}
    per_case = {
        c["id"]: {"use": c["use"], "label": c["label"], "part": "test", "rules": _r(raw), "by_rule": by_rule}
        for c, (raw, _, by_rule) in zip(test_cases, rules_test)
    }
    results["rules_fired_on_test"] = sum(1 for _, _, by_rule in rules_test if by_rule) / len(test_cases)

    fit_local, test_local = (fit_cases[:6], test_cases[:6]) if quick else (fit_cases, test_cases)
    local = await _local(fit_local, test_local, threads) if model else None
    if local is None:
        results["local"] = "skipped: the local model or llama-cpp-python is not available"
        for system in SYSTEMS[2:]:
            per.pop(system)
    else:
        raws, timings, memory = local
        for style, suffix in (("words", ""), ("letters", " (letters)")):
            fit_raws, test_raws = raws[style]
            calibrations = _fit_by_use(fit_local, fit_raws)
            for case, raw in zip(test_local, test_raws):
                question = USES[case["use"]]
                calibrated = calibrations[case["use"]].apply(raw) if case["use"] in calibrations else raw
                per[f"local raw{suffix}"][case["use"]].append((raw, case["label"]))
                per[f"local calibrated{suffix}"][case["use"]].append((calibrated, case["label"]))
                per_case.get(case["id"], {})[f"local_{style}"] = _r(raw)
                if style == "words":
                    by_rule = _rule_answer(question, case["text"])
                    pipeline = question.rule_probabilities(by_rule) if by_rule else calibrated
                    per["rules + local calibrated"][case["use"]].append((pipeline, case["label"]))
            results[f"calibrations_{style}"] = {u: c.to_json() for u, c in calibrations.items()}
        step = statistics.median(timings["step"])
        latency: dict[str, Any] = {
            "threads": threads,
            "generation_step_ms": step * 1000,
            "n_steps": len(timings["step"]),
            "memory": memory,
            "tokens_evaluated_median": statistics.median(timings["evaluated"]),
        }
        for kind in ("cached", "restored", "first"):
            if timings[kind]:
                latency[f"decision_{kind}_ms"] = statistics.median(timings[kind]) * 1000
                latency[f"decision_{kind}_p90_ms"] = _p90(timings[kind]) * 1000
                latency[f"{kind}_over_step"] = ratio(statistics.median(timings[kind]), step)
                latency[f"n_{kind}"] = len(timings[kind])
        results["latency"] = latency
    results["scores"] = {}
    for system, by_use in per.items():
        everything = [row for rows in by_use.values() for row in rows]
        entry = {"all": score(everything)}
        for use, rows in by_use.items():
            if rows:
                entry[use] = score(rows, USES[use].threshold)
        results["scores"][system] = entry
    results["per_case"] = per_case  # ids, labels and raw probabilities (no text) for re-analysis
    results["machine"]["loadavg_after"] = machine_info()["loadavg_1_5_15"]
    return results


def _r(probabilities: dict[str, float]) -> dict[str, float]:
    return {o: round(p, 5) for o, p in probabilities.items()}


def _p90(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(0.9 * len(ordered)))]


async def _local(
    fit_cases: list[dict[str, Any]], test_cases: list[dict[str, Any]], threads: int
) -> tuple[dict[str, Any], dict[str, list[float]], dict[str, int]] | None:
    try:
        import llama_cpp  # noqa: F401

        from exo_edge.decide_local import LocalDecisionProvider
        from exo_edge.llama_transport import LlamaSettings, LlamaTransport
        from exo_edge.manifest import find_manifest
        from exo_edge.paths import locate_model_file
    except ImportError:
        return None
    manifest = find_manifest("gemma-3-270m")
    path = locate_model_file(manifest.primary_file.name)
    if path is None or manifest.prompt is None:
        return None
    transport = LlamaTransport(
        LlamaSettings(model_path=path, prompt=manifest.prompt, n_ctx=2048, n_threads=threads, name=manifest.name)
    )
    words = LocalDecisionProvider(transport, timeout=60.0)
    letters = LocalDecisionProvider(transport, timeout=60.0, style="letters")
    try:
        await words.load()
        timings: dict[str, list[float]] = {"cached": [], "restored": [], "first": [], "step": [], "evaluated": []}
        generate = _generation_step(transport)
        raws = {
            "words": (
                await _local_raw(words, fit_cases, timings, generate),
                await _local_raw(words, test_cases, timings, generate),
            ),
            "letters": (
                await _local_raw(letters, fit_cases, None, generate),
                await _local_raw(letters, test_cases, None, generate),
            ),
        }
        memory = transport.memory()
    finally:
        await transport.aclose()
    return raws, timings, memory


def print_results(results: dict[str, Any]) -> None:
    """The tables for docs/benchmarks.md."""
    cases = results["cases"]
    by_use = ", ".join(f"{u} {cases['by_use'][u]}" for u in USES)
    print(
        f"\n{cases['total']} cases ({by_use}); "
        f"fit {cases['fit']} (until {cases['fit_until']}), test {cases['test']} (from {cases['test_from']})"
    )
    scores = [(system, results["scores"][system]) for system in SYSTEMS if system in results["scores"]]
    rows = []
    for system, entry in scores:
        row: list[Any] = [system, _pct(entry["all"]["accuracy"]), round(entry["all"]["ece"], 3)]
        for use in USES:
            row += [_pct(entry[use]["accuracy"]), round(entry[use]["ece"], 3)] if use in entry else ["-", "-"]
        rows.append(row)
    headers = ["system", "acc", "ECE"] + [f"{u} {m}" for u in USES for m in ("acc", "ECE")]
    print_table("Accuracy and calibration on the test part (newest 40 %)", headers, rows)
    rows = []
    for system, entry in scores:
        row = [system]
        for use in USES:
            acting = entry.get(use, {}).get("accuracy_acting")
            row += [_pct(entry[use]["coverage"]) if use in entry else "-", "-" if acting is None else _pct(acting)]
        rows.append(row)
    headers = ["system"] + [f"{u} {m} @{USES[u].threshold}" for u in USES for m in ("acts", "right")]
    print_table("At each use's threshold: share of cases acted on, accuracy when acting", headers, rows)
    latency = results.get("latency")
    if isinstance(latency, dict):
        rows = [
            [
                label,
                round(latency[f"decision_{kind}_ms"], 1),
                round(latency[f"decision_{kind}_p90_ms"], 1),
                round(latency[f"{kind}_over_step"], 2),
                latency[f"n_{kind}"],
            ]
            for kind, label in (
                ("cached", "decision, question head in the cache"),
                ("restored", "decision, head restored (after a generation or another question)"),
                ("first", "first decision of a question (head evaluated)"),
            )
            if f"decision_{kind}_ms" in latency
        ]
        rows.append(
            [
                "one plain generation step (1 token)",
                round(latency["generation_step_ms"], 1),
                "-",
                1.0,
                latency["n_steps"],
            ]
        )
        print_table(
            f"Latency on the local model ({latency['threads']} threads; medians)",
            ["what", "median ms", "p90 ms", "x one generation step", "n"],
            rows,
        )


def _pct(value: float) -> str:
    return f"{100 * value:.1f}%"


def main() -> int:
    ap = bench_parser(
        "decision-models", __doc__.split("\n")[0], quick_help="a few cases only; writes nothing unless --out"
    )
    ap.add_argument("--markdown", action="store_true", help="print Markdown tables of the saved results (or --out)")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--no-model", action="store_true", help="rules-only: skip the local model")
    args = ap.parse_args()
    if args.markdown:
        _common.MARKDOWN = True
        print_results(json.loads((args.out or _common.RESULTS_DIR / "decisions.json").read_text()))
        return 0
    results = asyncio.run(run(args.quick, args.threads, model=not args.no_model))
    write_results("decisions", results, out=args.out, quick=args.quick)
    if args.json:
        print(json.dumps(results, indent=2, sort_keys=True))
    else:
        print_results(results)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
