"""Examples chosen for the message, measured on the fit pool only, by leave-one-out (issue 21, third pass).

The signal decision's chat-style models (the local 0.5B, the laptop's 1.5B) are scored on the fit pool
(the labelled set's 80 older signal cases and the 172 fit-set messages; never the test part or the
held-out messages) with two prompts: the question's fixed examples, and the message's nearest pool
examples (``exo_core/decisions/neighbours.py``), each case's own entry never among its neighbours.
Every case is then scored with a calibration fitted on the *other* cases (leave-one-out), as the
main benchmark fits on the fit pool. Also the neighbours' own weighted vote, alone and multiplied
into a model's probabilities. This is where the design was chosen; ``bench_decisions_signal.py``
then scores the test part and the held-out messages once.

    python -m benchmarks.bench_decisions_neighbours --raws /tmp/nn_raws.json
    python -m benchmarks.bench_decisions_neighbours --markdown
"""

from __future__ import annotations

import asyncio
import json
import os
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

from benchmarks import _common
from benchmarks._common import bench_parser, machine_info, print_table, write_results
from benchmarks.bench_decisions import load_cases, split_by_time
from benchmarks.bench_decisions_signal import EXTRA, MODELS, SCORE_HEADERS, calibrate, rule_answer, score, score_row
from exo_core.decisions.neighbours import (
    DEFAULT_SIGNAL_POOL,
    ExamplePool,
    NeighbourExamples,
    NeighbourVote,
    with_examples,
)
from exo_core.decisions.uses import SIGNAL

CHAT_MODELS = ("local", "laptop")
PROMPTS = ("fixed", "nn")
SAVE_EVERY = 10
Probs = dict[str, float]


def fit_pool() -> list[dict[str, Any]]:
    """The fit pool's cases (the labelled set's older signal cases, then the fit set), nothing else."""
    fit_part, _test = split_by_time(load_cases())
    cases = [c for c in fit_part if c["use"] == "signal"]
    lines = EXTRA.read_text(encoding="utf-8").splitlines()
    return cases + [json.loads(line) for line in lines if line.strip()]


def neighbours_for(per_option: int) -> NeighbourExamples:
    """The shipped pool (the fit pool itself) with the edge's int8 MiniLM embedder."""
    from exo_edge.embedder import OnnxEmbedder

    embedder = OnnxEmbedder.from_home(threads=1)
    if embedder is None:
        raise SystemExit("the MiniLM embedder is not installed: exo models fetch")
    return NeighbourExamples(ExamplePool(DEFAULT_SIGNAL_POOL, SIGNAL), embedder=embedder, per_option=per_option)


async def model_raws(
    which: str, prompt: str, cases: list[dict[str, Any]], near: NeighbourExamples, threads: int, raws: dict, save: Any
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
            question = SIGNAL
            if prompt == "nn":
                question = with_examples(SIGNAL, near.choose(case["text"], exclude=case["id"]))
            started = time.perf_counter()
            done[case["id"]] = dict(await provider.probabilities(question, case["text"]))
            spent.append(time.perf_counter() - started)
            if n % SAVE_EVERY == 0:
                save()
                print(f"{key}: {n}/{len(missing)} ({sum(spent) / len(spent):.2f} s each)", flush=True)
        save()
    finally:
        await transport.aclose()
    return {"seconds_each": sum(spent) / len(spent), "n": len(spent)}


def loo(rows: list[tuple[Probs, str]]) -> list[tuple[Probs, str]]:
    """Each row calibrated on the others."""
    out = []
    for i, (raw, label) in enumerate(rows):
        calibration = calibrate(rows[:i] + rows[i + 1 :])
        out.append((dict(calibration.apply(raw)) if calibration else raw, label))
    return out


def product(a: Probs, b: Probs) -> Probs:
    """Two answers multiplied and renormalised (independent evidence)."""
    joined = {o: a[o] * b[o] for o in SIGNAL.options}
    total = sum(joined.values())
    return {o: v / total for o, v in joined.items()}


def systems(cases: list[dict[str, Any]], raws: dict[str, Probs], votes: dict[str, Probs]) -> dict[str, Any]:
    """The main benchmark's systems on the fit pool, every calibration leave-one-out."""
    settled = {c["id"]: rule_answer(c["text"]) for c in cases}
    left = [c for c in cases if settled[c["id"]] is None]
    out: dict[str, Any] = {}

    def chain(first: dict[str, Probs], then: dict[str, Probs] | None) -> list[tuple[Probs, str]]:
        calibrated_first = dict(
            zip([c["id"] for c in left], [p for p, _ in loo([(first[c["id"]], c["label"]) for c in left])], strict=True)
        )
        calibrated_then: dict[str, Probs] = {}
        if then is not None:
            rows = loo([(then[c["id"]], c["label"]) for c in left])
            calibrated_then = dict(zip([c["id"] for c in left], [p for p, _ in rows], strict=True))
        rows_out = []
        for case in cases:
            rule = settled[case["id"]]
            if rule is not None:
                rows_out.append((SIGNAL.rule_probabilities(rule), case["label"]))
                continue
            got = calibrated_first[case["id"]]
            if then is not None and max(got.values()) < SIGNAL.threshold:
                got = calibrated_then[case["id"]]
            rows_out.append((got, case["label"]))
        return rows_out

    sources: dict[str, dict[str, Probs]] = {"vote": votes}
    for key, found in raws.items():
        sources[key] = found
        if key.endswith(":nn"):
            sources[key + "+vote"] = {i: product(p, votes[i]) for i, p in found.items()}
    for key, found in sources.items():
        if all(c["id"] in found for c in cases):
            rows = [(found[c["id"]], c["label"]) for c in cases]
            out[f"{key} alone"] = {**score(loo(rows)), "top_accuracy_raw": score(rows)["top_accuracy"]}
        if all(c["id"] in found for c in left):
            out[f"rules + {key}"] = score(chain(found, None))
            rows = [(found[c["id"]], c["label"]) for c in left]
            out[f"{key} on the rules' leftovers"] = {
                **score(loo(rows)),
                "top_accuracy_raw": score(rows)["top_accuracy"],
            }
    for local_prompt in ("fixed", "nn", "nn+vote"):
        for laptop_prompt in ("fixed", "nn", "nn+vote"):
            first, then = sources.get(f"local:{local_prompt}"), sources.get(f"laptop:{laptop_prompt}")
            if first is None or then is None or not all(c["id"] in first and c["id"] in then for c in left):
                continue
            out[f"rules + local:{local_prompt}, then laptop:{laptop_prompt}"] = score(chain(first, then))
    return out


async def run(threads: int, raws_file: Path | None, only: tuple[str, ...], per_option: int) -> dict[str, Any]:
    """Raws for what is missing, then every system scored leave-one-out."""
    cases = fit_pool()
    near = neighbours_for(per_option)
    started = time.perf_counter()
    near.load()
    embed_seconds = time.perf_counter() - started
    vote = NeighbourVote(near)
    votes = {c["id"]: vote.vote(c["text"], exclude=c["id"]) for c in cases}
    saved: dict[str, Any] = {}
    if raws_file is not None and raws_file.is_file():
        saved = json.loads(raws_file.read_text())
    raws: dict[str, dict[str, Probs]] = saved.get("raws", {})
    timings: dict[str, Any] = saved.get("timings", {})

    def save() -> None:
        if raws_file is not None:
            raws_file.write_text(json.dumps({"raws": raws, "timings": timings}))

    for job in only:
        which, prompt = job.split(":")
        todo = cases
        if which == "laptop":  # the laptop's model only sees what the rules leave (it is slow here)
            todo = [c for c in cases if rule_answer(c["text"]) is None]
        found = await model_raws(which, prompt, todo, near, threads, raws, save)
        if found:
            timings[job] = found
        save()
    return {
        "benchmark": "decisions_neighbours",
        "machine": machine_info(),
        "per_option": per_option,
        "cases": len(cases),
        "pool_embed_seconds": embed_seconds,
        "timings": timings,
        "scores": systems(cases, raws, votes),
    }


def print_results(results: dict[str, Any]) -> None:
    """One table: every system on the fit pool, leave-one-out."""
    rows = []
    for name, found in results["scores"].items():
        rows.append(score_row(name, found))
    print_table(
        f"Fit pool, leave-one-out ({results['per_option']} neighbours per option)",
        SCORE_HEADERS,
        rows,
    )


def main(argv: list[str] | None = None) -> int:
    """Run (or print the saved results)."""
    ap = bench_parser("decisions-neighbours", __doc__.split("\n")[0], quick_help="the same cases; writes nothing")
    ap.add_argument("--markdown", action="store_true")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--raws", type=Path, default=None)
    ap.add_argument("--per-option", type=int, default=2)
    ap.add_argument(
        "--jobs", default="local:fixed,local:nn,laptop:fixed,laptop:nn", help="model:prompt, comma-separated"
    )
    args = ap.parse_args(argv)
    if args.markdown:
        _common.MARKDOWN = True
        print_results(json.loads((args.out or _common.RESULTS_DIR / "decisions_neighbours.json").read_text()))
        return 0
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    only = tuple(job for job in args.jobs.split(",") if job)
    results = asyncio.run(run(args.threads, args.raws, only, args.per_option))
    write_results("decisions_neighbours", results, out=args.out, quick=args.quick)
    print_results(results)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
