"""The bigger example pool against the old one: fit data by leave-one-out, then the test part (issue 21, fourth pass).

The shipped signal pool (``exo_core/decisions/data/signal_examples.jsonl``) grew by the messages of
``benchmarks/data/decisions_signal_more.jsonl`` (``"source": "more"`` in the pool; provenance in its README).
Every system is scored here with the *old* pool (those messages left out, ``--nn`` prompt ``nn``) and the
*whole* pool (prompt ``nn+``) in the same run, next to the question's fixed examples (``fixed``):

* **fit data, leave-one-out**: the fit pool (the labelled set's older signal cases and the fit set, 252) and
  the new messages (191), each case calibrated on the *other* fit-data cases and never shown its own pool
  entry, reported per part;
* **the test part** (the labelled set's newest 40 %): calibrated on the fit pool alone (as before) and on the
  fit pool plus the new messages.

The held-out messages are never read here: ``bench_decisions_signal.py`` scores them once, with the design
chosen from these numbers. Model runs: one thread, ``OMP_WAIT_POLICY=PASSIVE``; the laptop's 1.5B only sees
the messages the rules leave (it is slow here).

    python -m benchmarks.bench_decisions_pool --raws /tmp/pool_raws.json
    python -m benchmarks.bench_decisions_pool --markdown
"""

from __future__ import annotations

import asyncio
import json
import os
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

from benchmarks import _common
from benchmarks._common import REPO, bench_parser, machine_info, print_table, write_results
from benchmarks.bench_decisions import load_cases, split_by_time
from benchmarks.bench_decisions_neighbours import fit_pool
from benchmarks.bench_decisions_signal import MODELS, SCORE_HEADERS, calibrate, rule_answer, score, score_row
from exo_core.decisions.calibration import Calibration
from exo_core.decisions.neighbours import (
    DEFAULT_SIGNAL_POOL,
    ExamplePool,
    NeighbourExamples,
    with_examples,
)
from exo_core.decisions.providers import RulesOnlyProvider
from exo_core.decisions.uses import SIGNAL

MORE = REPO / "benchmarks" / "data" / "decisions_signal_more.jsonl"
NEW_SOURCE = "more"  # the new messages' ``source`` in the shipped pool
PROMPTS = {"fixed": None, "nn": frozenset({NEW_SOURCE}), "nn+": frozenset()}  # prompt -> pool sources left out
SAVE_EVERY = 10
GROUPS = (
    ("fit pool, leave-one-out", "fit"),
    ("new messages, leave-one-out", "more"),
    ("test part, calibrated on the fit pool", "test:fit"),
    ("test part, calibrated on the fit pool + new messages", "test:all"),
)
Probs = dict[str, float]
Case = dict[str, Any]


def load_parts() -> dict[str, list[Case]]:
    """``fit`` (the old fit pool), ``more`` (the new messages) and ``test`` (the labelled set's newest 40 %)."""
    _fit, test = split_by_time(load_cases())
    lines = MORE.read_text(encoding="utf-8").splitlines()
    return {
        "fit": fit_pool(),
        "more": [json.loads(line) for line in lines if line.strip()],
        "test": [c for c in test if c["use"] == "signal"],
    }


def neighbours() -> dict[str, NeighbourExamples]:
    """Prompt -> the shipped pool (with or without the new messages) and the edge's int8 MiniLM embedder."""
    from exo_edge.embedder import OnnxEmbedder

    embedder = OnnxEmbedder.from_home(threads=1)
    if embedder is None:
        raise SystemExit("the MiniLM embedder is not installed: exo models fetch")
    return {
        prompt: NeighbourExamples(ExamplePool(DEFAULT_SIGNAL_POOL, SIGNAL, leave_out=left), embedder=embedder)
        for prompt, left in PROMPTS.items()
        if left is not None
    }


async def model_raws(
    which: str, prompt: str, cases: list[Case], near: dict[str, NeighbourExamples], threads: int, raws: dict, save: Any
) -> dict[str, Any]:
    """One model, one prompt, over ``cases`` (those missing from ``raws``); seconds per decision."""
    from exo_edge.decide_local import LocalDecisionProvider, transport_for_file
    from exo_edge.paths import locate_model_file

    key = f"{which}:{prompt}"
    done = raws.setdefault(key, {})
    missing = [c for c in cases if c["id"] not in done]
    if not missing:
        return {}
    path = locate_model_file(MODELS[which][0])
    if path is None:
        raise SystemExit(f"{MODELS[which][0]} is not in the models folder")
    transport = transport_for_file(path, threads=threads)
    provider = LocalDecisionProvider(transport, timeout=600.0, style="chat")
    spent: list[float] = []
    try:
        base = SIGNAL if prompt == "fixed" else replace(SIGNAL, examples=(), example_drafts=())
        await provider.warm(base)
        for n, case in enumerate(missing, start=1):
            started = time.perf_counter()
            question = SIGNAL
            if prompt != "fixed":  # never the case's own pool entry (leave-one-out)
                question = with_examples(SIGNAL, near[prompt].choose(case["text"], exclude=case["id"]))
            done[case["id"]] = dict(await provider.probabilities(question, case["text"]))
            spent.append(time.perf_counter() - started)
            if n % SAVE_EVERY == 0:
                save()
                print(f"{key}: {n}/{len(missing)} ({sum(spent) / len(spent):.2f} s each)", flush=True)
        save()
    finally:
        await transport.aclose()
    return {"seconds_each": sum(spent) / len(spent), "n": len(spent)}


def _apply(calibration: Calibration | None, raw: Probs) -> Probs:
    return dict(calibration.apply(raw)) if calibration is not None else raw


def calibrated(source: dict[str, Probs], fitted_on: list[Case], scored: list[Case], *, loo: bool) -> dict[str, Probs]:
    """``scored`` case id -> ``source``'s numbers calibrated on the ``fitted_on`` cases (without the case itself
    when ``loo``)."""
    rows = [(c["id"], source[c["id"]], c["label"]) for c in fitted_on if c["id"] in source]
    shared = None if loo else calibrate([(p, label) for _i, p, label in rows])
    out = {}
    for case in scored:
        if case["id"] not in source:
            continue
        found = shared
        if loo:
            found = calibrate([(p, label) for i, p, label in rows if i != case["id"]])
        out[case["id"]] = _apply(found, source[case["id"]])
    return out


def systems(
    sources: dict[str, dict[str, Probs]], fitted_on: list[Case], scored: list[Case], *, loo: bool
) -> dict[str, Any]:
    """Every system on ``scored``: a model alone, the rules then a model, the rules then the local model then the
    laptop's; the cue words after the rules (``rules-only``). Calibrations after the rules are fitted on the
    ``fitted_on`` cases the rules leave."""
    settled = {c["id"]: rule_answer(c["text"]) for c in [*fitted_on, *scored]}
    left_fit = [c for c in fitted_on if settled[c["id"]] is None]
    left = [c for c in scored if settled[c["id"]] is None]
    after = {key: calibrated(found, left_fit, left, loo=loo) for key, found in sources.items()}

    def chain(first: str, then: str | None) -> list[tuple[Probs, str]] | None:
        if any(c["id"] not in after[first] for c in left):
            return None
        if then is not None and any(c["id"] not in after[then] for c in left):
            return None
        rows = []
        for case in scored:
            rule = settled[case["id"]]
            if rule is not None:
                rows.append((SIGNAL.rule_probabilities(rule), case["label"]))
                continue
            got = after[first][case["id"]]
            if then is not None and max(got.values()) < SIGNAL.threshold:
                got = after[then][case["id"]]
            rows.append((got, case["label"]))
        return rows

    out: dict[str, Any] = {}
    for key, found in sources.items():
        if all(c["id"] in found for c in scored):
            alone = calibrated(found, fitted_on, scored, loo=loo)
            out[f"{key} alone"] = score([(alone[c["id"]], c["label"]) for c in scored])
        rows = chain(key, None)
        if rows is not None:
            name = "rules-only" if key == "cues" else f"rules + {key}"
            out[name] = score(rows)
    for first in [k for k in sources if k.startswith("local:")]:
        for then in [k for k in sources if k.startswith("laptop:")]:
            rows = chain(first, then)
            if rows is not None:
                out[f"rules + {first}, then {then}"] = score(rows)
    out["_rules"] = {
        "settled": sum(settled[c["id"]] is not None for c in scored) / len(scored),
        "right_when_settled": _right(scored, settled),
    }
    return out


def _right(cases: list[Case], settled: dict[str, str | None]) -> float | None:
    hits = [settled[c["id"]] == c["label"] for c in cases if settled[c["id"]] is not None]
    return sum(hits) / len(hits) if hits else None


async def run(threads: int, raws_file: Path | None, jobs: tuple[str, ...]) -> dict[str, Any]:
    """Raws for what is missing, then every system on every group."""
    parts = load_parts()
    near = neighbours()
    started = time.perf_counter()
    for found in near.values():
        found.load()
    embed_seconds = time.perf_counter() - started
    saved: dict[str, Any] = {}
    if raws_file is not None and raws_file.is_file():
        saved = json.loads(raws_file.read_text())
    raws: dict[str, dict[str, Probs]] = saved.get("raws", {})
    timings: dict[str, Any] = saved.get("timings", {})

    def save() -> None:  # a later failure does not lose the minutes spent
        if raws_file is not None:
            raws_file.write_text(json.dumps({"raws": raws, "timings": timings}))

    everything = [*parts["fit"], *parts["more"], *parts["test"]]
    for job in jobs:
        which, _colon, asked = job.partition(":")
        prompt, _at, only = asked.partition("@")  # "laptop:nn@fit+test": those parts only
        if prompt not in PROMPTS or which not in ("local", "laptop") or not set(only.split("+")) <= {"", *parts}:
            raise SystemExit(f"--jobs: {job} is not model:prompt[@part+part] (prompts {', '.join(PROMPTS)})")
        todo = [c for part in (only.split("+") if only else parts) for c in parts[part]]
        if which == "laptop":
            todo = [c for c in todo if rule_answer(c["text"]) is None]
        found = await model_raws(which, prompt, todo, near, threads, raws, save)
        if found:
            timings[f"{which}:{prompt}"] = found
        save()
    cue = RulesOnlyProvider()
    sources: dict[str, dict[str, Probs]] = {"cues": {}}
    for case in everything:
        sources["cues"][case["id"]] = dict(await cue.probabilities(SIGNAL, case["text"]))
    sources.update(raws)
    fit_data = [*parts["fit"], *parts["more"]]
    groups: dict[str, Callable[[], dict[str, Any]]] = {
        "fit": lambda: systems(sources, fit_data, parts["fit"], loo=True),
        "more": lambda: systems(sources, fit_data, parts["more"], loo=True),
        "test:fit": lambda: systems(sources, parts["fit"], parts["test"], loo=False),
        "test:all": lambda: systems(sources, fit_data, parts["test"], loo=False),
    }
    return {
        "benchmark": "decisions_pool",
        "machine": machine_info(),
        "omp_wait_policy": os.environ.get("OMP_WAIT_POLICY"),
        "cases": {part: len(found) for part, found in parts.items()},
        "pool": {prompt: len(found.pool.examples()) for prompt, found in near.items()},
        "pool_embed_seconds": embed_seconds,
        "timings": timings,
        "scores": {key: make() for key, make in groups.items()},
    }


def print_results(results: dict[str, Any]) -> None:
    """One table per group."""
    for title, key in GROUPS:
        found = results["scores"].get(key)
        if not found:
            continue
        rows = [score_row(name, got) for name, got in found.items() if not name.startswith("_")]
        rules = found["_rules"]
        print_table(
            f"{title} (rules settle {100 * rules['settled']:.1f}%)",
            SCORE_HEADERS,
            rows,
        )


def main(argv: list[str] | None = None) -> int:
    """Run (or print the saved results)."""
    ap = bench_parser("decisions-pool", __doc__.split("\n")[0], quick_help="the same cases; writes nothing")
    ap.add_argument("--markdown", action="store_true")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--raws", type=Path, default=None)
    ap.add_argument(
        "--jobs",
        default="local:fixed,laptop:nn+,laptop:nn",
        help="model:prompt, comma-separated; model:prompt@fit+test runs those parts only (fit, more, test)",
    )
    args = ap.parse_args(argv)
    if args.markdown:
        _common.MARKDOWN = True
        print_results(json.loads((args.out or _common.RESULTS_DIR / "decisions_pool.json").read_text()))
        return 0
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    results = asyncio.run(run(args.threads, args.raws, tuple(job for job in args.jobs.split(",") if job)))
    write_results("decisions_pool", results, out=args.out, quick=args.quick)
    print_results(results)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
