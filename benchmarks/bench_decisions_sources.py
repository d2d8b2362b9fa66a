"""Fixed or chosen examples for the signal decision's models, by leaving one source out (issue 21, sixth pass).

exod's larger model (the laptop's Qwen2.5-Coder 1.5B behind ``python -m llama_cpp.server``, asked as
``LogprobProvider`` by ``build_signal_settler``) can be shown the question's fixed examples
(``[decisions] neighbours = []``) or each message's nearest examples from the shipped pool
(``neighbours = ["larger"]``). This study measures both on the **fit data only** (the pool's three sources:
``labelled``, the labelled set's fit part; ``fit172``, ``benchmarks/data/decisions_signal_fit.jsonl``; ``more``,
``benchmarks/data/decisions_signal_more.jsonl``), on every message the rules leave:

* **the larger model over HTTP** as exod asks it: a real ``llama_cpp.server`` serving the 1.5B with one
  thread, the ``LogprobProvider`` that ``build_signal_settler`` builds from the config ``exo models serve
  --print-config`` prints (taken from the settler itself), wrapped in ``NeighbourProvider`` for the chosen
  examples as exod wraps it;
* **the local 0.5B in-process** (``--models larger,local``): ``LocalDecisionProvider`` in the chat style, one
  thread, the same two prompts.

**Leave one source out.** A message is shown neighbours drawn only from the *other* sources
(``ExamplePool(..., leave_out={its source})``): messages one writer wrote in one sitting resemble each other,
and a new person's messages are not in the pool, so leaving only the message's own entry out would flatter
the chosen examples. **Calibration is cross-fitted the same way**: a source's messages are calibrated (Platt
with per-option offsets, ``exo_core/decisions/calibration.py`` ``fit``, as exod fits its ledger) on the other
two sources' leftovers of the same model and prompt, then held to the signal question's threshold (0.6).
Reported per source and pooled: accuracy with abstentions wrong, ECE (10 bins, on the top option's
probability), abstentions, the calibrated and the raw top option's accuracy; ``rules + X`` over every fit
message (the rules settle the rest, at the question's ``rule_probabilities`` as exod's decider does); the
chain ``rules + local:A, then larger:B``; seconds per decision.

**The criterion, fixed before the run** (docs/decisions.md §3): exod's default becomes ``neighbours =
["larger"]`` only if, pooled over the three sources, the larger model over HTTP with the chosen examples is
right (abstentions wrong) on **at least 3 more** of the rules' leftovers than with the fixed examples (a
difference of 2 messages or fewer is a tie, and a tie goes to the cheaper fixed prompt), **and** ``rules +
larger:nn`` pooled over all the fit data has ECE within the goal (≤ 0.08), **and** its p95 seconds over HTTP
stay under exod's 10 s ``larger_timeout``. Otherwise the default stays ``neighbours = []``.

**The device model defers** (a second criterion, written down at 07:57 UTC on 2026-12-03, after the study's
raws above were taken and before any deferral was scored; run from the same raws, no new model call): with the
larger model reachable, the device model's decision stands only at a calibrated probability of at least ``b``;
below it the message goes to the larger model, and the device model's decision stands if that one abstains
(``[decisions] defer_below``, ``exo_core/decisions/escalation.py``). ``b`` in 0.6 (no deferral, as before),
0.7, 0.8, 0.9, scored as ``rules + local:fixed (defers below b), then larger:P`` pooled over every fit message
for exod's prompt ``P``. The ``b`` with the largest margin on the worse goal, ``min(accuracy - 0.85, 0.08 -
ECE)``, becomes the default if that margin beats 0.6's by at least 0.01; otherwise nothing defers.

The test part and the held-out messages are never read here. Raws (per-message option probabilities, label,
source; fit data only) are kept in the results file, so a scored run can fit its calibration from them
(``bench_decisions_http.py --fit-raws``).

    OMP_WAIT_POLICY=PASSIVE python -m benchmarks.bench_decisions_sources --raws /tmp/sources_raws.json
    python -m benchmarks.bench_decisions_sources --markdown
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import statistics
import tempfile
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

from benchmarks import _common
from benchmarks._common import REPO, bench_parser, machine_info, write_results
from benchmarks.bench_decisions import load_cases, split_by_time
from benchmarks.bench_decisions_signal import MODELS, calibrate, escalated, rule_answer, score
from benchmarks.decisions_sources_tables import print_results
from exo_core.decisions.calibration import Calibration
from exo_core.decisions.neighbours import DEFAULT_SIGNAL_POOL, ExamplePool, NeighbourExamples
from exo_core.decisions.uses import SIGNAL
from exo_core.errors import ExoError
from exo_core.seams.decision import DecisionProvider, Question

EXTRA = REPO / "benchmarks" / "data" / "decisions_signal_fit.jsonl"
MORE = REPO / "benchmarks" / "data" / "decisions_signal_more.jsonl"
SOURCES = ("labelled", "fit172", "more")  # the shipped pool's sources (every entry names one)
PROMPTS = ("fixed", "nn")
ALIAS = "qwen2.5-coder-1.5b-instruct"
TIMEOUT = 10.0  # exod's larger_timeout
ECE_GOAL = 0.08
ACCURACY_GOAL = 0.85
DEFER_BARS = (0.6, 0.7, 0.8, 0.9)  # the first is no deferral (the threshold); the second criterion
MARGIN_STEP = 0.01  # how much a bar's margin must beat no deferral's to be chosen
TIE = 2  # messages: a difference this small or smaller is a tie (the criterion above)
SAVE_EVERY = 10
Probs = dict[str, float]
Case = dict[str, Any]


def fit_cases() -> list[Case]:
    """Every fit-data signal message (the labelled set's fit part, the 172 and the 191), each with its pool
    ``source`` and what the rules settle it on (``rule``, ``None`` when they leave it)."""
    fit_part, _test = split_by_time(load_cases())
    cases = [c for c in fit_part if c["use"] == "signal"]
    for path in (EXTRA, MORE):
        cases += [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    sources = {example.id: example.source for example in ExamplePool(DEFAULT_SIGNAL_POOL, SIGNAL).examples()}
    out = []
    for case in cases:
        if case["id"] not in sources:
            raise SystemExit(f"fit case {case['id']} is not in the shipped pool {DEFAULT_SIGNAL_POOL}")
        out.append(
            {
                "id": case["id"],
                "text": case["text"],
                "label": case["label"],
                "source": sources[case["id"]],
                "rule": rule_answer(case["text"]),
            }
        )
    return out


def neighbours_without(embedder: Any) -> dict[str, NeighbourExamples]:
    """Per source: the shipped pool's neighbours with that source left out."""
    return {
        source: NeighbourExamples(
            ExamplePool(DEFAULT_SIGNAL_POOL, SIGNAL, leave_out=frozenset({source})), embedder=embedder
        )
        for source in SOURCES
    }


class Store:
    """The raws and seconds so far, kept in ``path`` (when given) so a cut run goes on where it stopped."""

    def __init__(self, path: Path | None) -> None:
        self.path = path
        saved: dict[str, Any] = {}
        if path is not None and path.is_file():
            saved = json.loads(path.read_text())
        self.raws: dict[str, dict[str, Probs]] = saved.get("raws", {})
        self.seconds: dict[str, dict[str, float]] = saved.get("seconds", {})
        self.info: dict[str, Any] = saved.get("info", {})

    def save(self) -> None:
        if self.path is not None:
            self.path.write_text(json.dumps({"raws": self.raws, "seconds": self.seconds, "info": self.info}))


async def ask(
    job: str,
    provider_for: Callable[[Case], DecisionProvider],
    cases: list[Case],
    store: Store,
    *,
    question: Question = SIGNAL,
) -> None:
    """``job``'s raws on ``cases`` (those not kept yet), each from ``provider_for(case)`` asked ``question``
    (the signal question as exod ships it, unless a study compares another prompt), timed."""
    raws = store.raws.setdefault(job, {})
    seconds = store.seconds.setdefault(job, {})
    todo = [case for case in cases if case["id"] not in raws]
    print(f"{job}: {len(raws)} kept, {len(todo)} to ask", flush=True)
    for done, case in enumerate(todo, start=1):
        started = time.perf_counter()
        try:
            found = await provider_for(case).probabilities(question, case["text"])
        except ExoError as exc:  # counted as missing; the run goes on
            print(f"{job}: {case['id']} failed: {type(exc).__name__}: {exc}", flush=True)
            continue
        seconds[case["id"]] = time.perf_counter() - started
        raws[case["id"]] = dict(found)
        if done % SAVE_EVERY == 0 or done == len(todo):
            store.save()
            print(f"{job}: {done}/{len(todo)}", flush=True)


@contextlib.asynccontextmanager
async def served_larger(port: int, store: Store) -> AsyncIterator[DecisionProvider]:
    """The laptop's 1.5B behind a real ``llama_cpp.server`` (one thread) on a scratch home whose config is what
    ``exo models serve --print-config`` prints, and the provider exod's settler holds for it: a
    ``LogprobProvider`` taken from ``build_signal_settler`` itself. The server stops on exit."""
    from exo_core.decisions import Decider
    from exo_core.decisions.logprobs import LogprobProvider
    from exo_core.decisions.signal_escalation import build_signal_settler
    from exo_core.seams.home import ExoHome
    from exo_edge.laptop_server import ServeSettings, device_config, start_server, wait_ready
    from exo_edge.paths import locate_model_file

    path = locate_model_file(MODELS["laptop"][0])
    if path is None:
        raise SystemExit(f"{MODELS['laptop'][0]} is not in the models folder: exo models fetch {ALIAS}")
    settings = ServeSettings(model_path=path, alias=ALIAS, host="127.0.0.1", port=port, threads=1)
    with tempfile.TemporaryDirectory(prefix="exo-larger-") as scratch:
        home_dir = Path(scratch) / "home"
        home_dir.mkdir()
        config = device_config(settings, advertise="127.0.0.1") + "\n[decisions]\nneighbours = []\n"
        (home_dir / "config.toml").write_text(config, encoding="utf-8")
        proc = start_server(settings, log=home_dir / "server.log", env={**os.environ, "OMP_WAIT_POLICY": "PASSIVE"})
        settler = None
        try:
            started = time.perf_counter()
            wait_ready(settings.base_url, timeout=300.0, proc=proc)
            store.info["server"] = {"threads": 1, "n_ctx": settings.n_ctx, "ready_s": time.perf_counter() - started}
            settler = build_signal_settler(ExoHome(home_dir), Decider([]))
            # exod's larger model exactly as the settler holds it (a Decider over the one provider).
            larger = settler.escalation._larger
            inner = larger.providers[0] if larger is not None else None
            if not isinstance(inner, LogprobProvider):
                raise SystemExit(f"the settler's larger model is not a LogprobProvider: {inner!r}")
            store.info["larger_provider"] = inner.name
            yield inner
        finally:
            if settler is not None:
                await settler.aclose()
            proc.terminate()
            proc.wait(timeout=30)


async def larger_jobs(cases: list[Case], store: Store, port: int, prompts: tuple[str, ...], embedder: Any) -> None:
    """The larger model over HTTP: a real server, exod's settler's provider, each prompt in turn (one prompt's
    calls in a row, as exod makes them, so the server's prompt cache is what it would be)."""
    from exo_core.decisions.neighbours import NeighbourProvider

    jobs = [f"larger:{prompt}" for prompt in prompts]
    if all(all(c["id"] in store.raws.get(job, {}) for c in cases) for job in jobs):
        return
    async with served_larger(port, store) as inner:
        wrapped = {source: NeighbourProvider(inner, near) for source, near in neighbours_without(embedder).items()}
        for provider in wrapped.values():  # each pool embedded before any call is timed
            await asyncio.to_thread(provider.neighbours.load)
        for prompt in prompts:
            job = f"larger:{prompt}"

            def provider_for(case: Case, prompt: str = prompt) -> DecisionProvider:
                return inner if prompt == "fixed" else wrapped[case["source"]]

            # A first call, not timed: the server reads the prompt's head (and the pool is embedded).
            await provider_for(cases[0]).probabilities(SIGNAL, cases[0]["text"])
            await ask(job, provider_for, cases, store)


async def local_jobs(cases: list[Case], store: Store, prompts: tuple[str, ...], embedder: Any) -> None:
    """The local 0.5B in this process (chat style, one thread), each prompt in turn."""
    from exo_core.decisions.neighbours import NeighbourProvider
    from exo_edge.decide_local import LocalDecisionProvider, transport_for_file
    from exo_edge.paths import locate_model_file

    jobs = [f"local:{prompt}" for prompt in prompts]
    if all(all(c["id"] in store.raws.get(job, {}) for c in cases) for job in jobs):
        return
    path = locate_model_file(MODELS["local"][0])
    if path is None:
        raise SystemExit(f"{MODELS['local'][0]} is not in the models folder: exo models fetch")
    transport = transport_for_file(path, threads=1)
    inner = LocalDecisionProvider(transport, timeout=120.0, style="chat")
    wrapped = {source: NeighbourProvider(inner, near) for source, near in neighbours_without(embedder).items()}
    try:
        for prompt in prompts:
            job = f"local:{prompt}"
            if prompt == "fixed":
                await inner.warm(SIGNAL)
            else:
                for provider in wrapped.values():  # each embeds its pool; the bare head is read once
                    await provider.warm(SIGNAL)

            def provider_for(case: Case, prompt: str = prompt) -> DecisionProvider:
                return inner if prompt == "fixed" else wrapped[case["source"]]

            await ask(job, provider_for, cases, store)
    finally:
        await transport.aclose()


# ---------------------------------------------------------------- scoring (from the raws alone)


UNANSWERED = {option: 1 / len(SIGNAL.options) for option in SIGNAL.options}  # a failed call: exod abstains


def cross_fitted(raws: dict[str, Probs], cases: list[Case]) -> dict[str, Probs] | None:
    """Each case's probabilities calibrated on the other sources' cases; a case the model gave no answer for
    (a failed call) is an even split, an abstention as in exod. ``None`` when the model was not run."""
    if not raws:
        return None
    out: dict[str, Probs] = {}
    for source in SOURCES:
        rows = [(raws[c["id"]], c["label"]) for c in cases if c["source"] != source and c["id"] in raws]
        found: Calibration | None = calibrate(rows)
        for case in cases:
            if case["source"] != source:
                continue
            raw = raws.get(case["id"])
            if raw is None:
                out[case["id"]] = dict(UNANSWERED)
            else:
                out[case["id"]] = raw if found is None else dict(found.apply(raw))
    return out


def _groups(cases: list[Case]) -> list[tuple[str, list[Case]]]:
    """Each source's cases, then all of them (``pooled``); a source without cases is left out."""
    groups = [(source, [c for c in cases if c["source"] == source]) for source in SOURCES]
    return [(name, members) for name, members in (*groups, ("pooled", cases)) if members]


def _scored(probs: dict[str, Probs | None], cases: list[Case]) -> dict[str, Any]:
    rows = [(probs[c["id"]], c["label"]) for c in cases]
    return score([(p, label) for p, label in rows if p is not None])


def summarise(cases: list[Case], raws: dict[str, dict[str, Probs]]) -> dict[str, Any]:
    """Every job and system per source and pooled (see the module docstring)."""
    left = [c for c in cases if c["rule"] is None]
    calibrated = {job: cross_fitted(found, left) for job, found in raws.items()}
    out: dict[str, Any] = {"leftovers": {}, "systems": {}}
    for job, found in sorted(calibrated.items()):
        if found is None:
            continue
        out["leftovers"][job] = {}
        for group, members in _groups(left):
            got = _scored(dict(found), members)
            raw_rows = [(raws[job].get(c["id"], UNANSWERED), c["label"]) for c in members]
            got["top_accuracy_raw"] = score(raw_rows)["top_accuracy"]
            got["failed"] = sum(c["id"] not in raws[job] for c in members)
            got["right"] = round(got["accuracy"] * got["n"])
            out["leftovers"][job][group] = got

    def rules_then(chain: list[str], case: Case) -> Probs | None:
        if case["rule"] is not None:
            return SIGNAL.rule_probabilities(case["rule"])  # as exod's decider settles it (the rules' confidence)
        for position, job in enumerate(chain):
            found = calibrated.get(job)
            if found is None:
                return None
            probs = found[case["id"]]
            if position == len(chain) - 1 or max(probs.values()) >= SIGNAL.threshold:
                return probs
        return None

    chains: list[tuple[str, list[str]]] = [(f"rules + {job}", [job]) for job in sorted(calibrated)]
    for first in PROMPTS:
        for second in PROMPTS:
            chains.append((f"rules + local:{first}, then larger:{second}", [f"local:{first}", f"larger:{second}"]))
    for name, chain in chains:
        probs = {c["id"]: rules_then(chain, c) for c in cases}
        if any(p is None for p in probs.values()):
            continue
        out["systems"][name] = {group: _scored(probs, members) for group, members in _groups(cases)}
    out["deferring"] = deferring(cases, calibrated)
    out["cases"] = {group: len(members) for group, members in _groups(cases)}
    out["leftover_cases"] = {group: len(members) for group, members in _groups(left)}
    out["rules_right_when_settled"] = sum(c["rule"] == c["label"] for c in cases if c["rule"]) / max(
        1, sum(1 for c in cases if c["rule"])
    )
    return out


def deferring(cases: list[Case], calibrated: dict[str, dict[str, Probs] | None]) -> dict[str, Any]:
    """``rules + local:fixed (defers below b), then larger:P`` for each bar and prompt, pooled over every fit
    message, with how many leftovers went to the larger model (the module docstring's second criterion)."""
    local = calibrated.get("local:fixed")
    out: dict[str, Any] = {}
    if local is None:
        return out
    for prompt in PROMPTS:
        larger = calibrated.get(f"larger:{prompt}")
        if larger is None:
            continue
        for bar in DEFER_BARS:
            probs: dict[str, Probs | None] = {}
            sent = 0
            for case in cases:
                if case["rule"] is not None:
                    probs[case["id"]] = SIGNAL.rule_probabilities(case["rule"])
                    continue
                mine = local[case["id"]]
                if max(mine.values()) < bar:
                    sent += 1
                probs[case["id"]] = escalated(mine, larger[case["id"]], bar)
            got = _scored(probs, cases)
            got["sent_to_larger"] = sent
            got["margin"] = min(got["accuracy"] - ACCURACY_GOAL, ECE_GOAL - got["ece"])
            out[f"larger:{prompt} below {bar}"] = got
    return out


def choose_bar(summary: dict[str, Any], prompt: str) -> dict[str, Any]:
    """The second criterion of the module docstring, for exod's prompt ``prompt``."""
    found = {bar: summary["deferring"].get(f"larger:{prompt} below {bar}") for bar in DEFER_BARS}
    if any(got is None for got in found.values()):
        return {"defer_below": None, "why": "the deferral was not measured for this prompt"}
    best = max(DEFER_BARS, key=lambda bar: found[bar]["margin"])
    base = found[DEFER_BARS[0]]["margin"]
    chosen = best if found[best]["margin"] >= base + MARGIN_STEP else 0.0
    return {
        "prompt": prompt,
        "defer_below": chosen,
        "margins": {str(b): round(g["margin"], 4) for b, g in found.items()},
    }


def latency(seconds: dict[str, dict[str, float]]) -> dict[str, Any]:
    """Per job: median and p95 seconds per decision, how many past exod's 10 s."""
    out = {}
    for job, found in sorted(seconds.items()):
        spent = sorted(found.values())
        if not spent:
            continue
        out[job] = {
            "median_s": statistics.median(spent),
            "p95_s": spent[min(len(spent) - 1, int(0.95 * len(spent)))],
            "over_timeout": sum(s > TIMEOUT for s in spent),
            "n": len(spent),
        }
    return out


def choose(summary: dict[str, Any], seconds: dict[str, Any]) -> dict[str, Any]:
    """The criterion of the module docstring, applied; ``None`` when a number it needs is missing."""
    left = summary["leftovers"]
    systems = summary["systems"]
    if not {"larger:fixed", "larger:nn"} <= set(left) or "rules + larger:nn" not in systems:
        return {"neighbours": None, "why": "the larger model's two prompts are not both measured"}
    gained = left["larger:nn"]["pooled"]["right"] - left["larger:fixed"]["pooled"]["right"]
    ece = systems["rules + larger:nn"]["pooled"]["ece"]
    p95 = seconds.get("larger:nn", {}).get("p95_s")
    wins = gained > TIE and ece <= ECE_GOAL and p95 is not None and p95 < TIMEOUT
    return {
        "neighbours": ["larger"] if wins else [],
        "nn_more_right": gained,
        "tie_within": TIE,
        "rules_larger_nn_ece": ece,
        "ece_goal": ECE_GOAL,
        "larger_nn_p95_s": p95,
        "timeout_s": TIMEOUT,
    }


def results_of(cases: list[Case], store: Store) -> dict[str, Any]:
    """The results file: conditions, the raws (fit data only), the scores, the latencies, the choice."""
    summary = summarise(cases, store.raws)
    seconds = latency(store.seconds)
    return {
        "benchmark": "decisions_sources",
        "machine": machine_info(),
        "omp_wait_policy": os.environ.get("OMP_WAIT_POLICY"),
        "info": store.info,
        "threshold": SIGNAL.threshold,
        "sources": list(SOURCES),
        "summary": summary,
        "seconds": seconds,
        "choice": choose(summary, seconds),
        "defer_choice": choose_bar(summary, "fixed"),  # exod's prompt (the choice above: fixed examples)
        "cases": {c["id"]: {"label": c["label"], "source": c["source"], "rule": c["rule"]} for c in cases},
        "raws": {
            job: {k: {o: round(p, 6) for o, p in v.items()} for k, v in found.items()}
            for job, found in store.raws.items()
        },
    }


def main(argv: list[str] | None = None) -> int:
    """Run the study (or print the saved results)."""
    ap = bench_parser("decisions-sources", __doc__.split("\n")[0], quick_help="the first 6 leftovers; writes nothing")
    ap.add_argument("--markdown", action="store_true", help="print Markdown tables of the saved results (or --out)")
    ap.add_argument("--raws", type=Path, default=None, help="keep (and reuse) the raws so far here")
    ap.add_argument("--models", default="larger,local", help="larger (over HTTP), local (in-process)")
    ap.add_argument("--prompts", default=",".join(PROMPTS), help="fixed, nn")
    ap.add_argument("--port", type=int, default=18097)
    ap.add_argument(
        "--limit",
        type=int,
        default=0,
        help="only the first N leftovers (a latency run of one model alone; its scores are not the study's)",
    )
    args = ap.parse_args(argv)
    if args.markdown:
        _common.MARKDOWN = True
        print_results(json.loads((args.out or _common.RESULTS_DIR / "decisions_sources.json").read_text()))
        return 0
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    models = tuple(m for m in args.models.split(",") if m)
    prompts = tuple(p for p in args.prompts.split(",") if p)
    if set(models) - {"larger", "local"} or set(prompts) - set(PROMPTS) or not prompts:
        ap.error("--models: larger, local; --prompts: fixed, nn")
    cases = fit_cases()
    left = [c for c in cases if c["rule"] is None]
    if args.quick:
        left = left[:6]
    if args.limit > 0:
        left = left[: args.limit]
    store = Store(args.raws)
    from exo_edge.embedder import OnnxEmbedder

    embedder = OnnxEmbedder.from_home(threads=1)
    if embedder is None and "nn" in prompts:
        raise SystemExit("the chosen examples need the MiniLM embedder: exo models fetch")

    async def run() -> None:
        work = []
        if "larger" in models:
            work.append(larger_jobs(left, store, args.port, prompts, embedder))
        if "local" in models:
            work.append(local_jobs(left, store, prompts, embedder))
        await asyncio.gather(*work)  # the server and the local model, one thread each, side by side

    started = time.time()
    before = sum(len(found) for found in store.raws.values())
    store.info.setdefault("load_average_start", os.getloadavg())
    asyncio.run(run())
    if sum(len(found) for found in store.raws.values()) > before:  # a re-score from kept raws changes no conditions
        store.info["wall_s"] = store.info.get("wall_s", 0.0) + (time.time() - started)
        store.info["load_average_end"] = os.getloadavg()
    store.save()
    if args.quick or args.limit > 0:
        cases = [c for c in cases if c["rule"] is not None or c in left]
    store.info["models"], store.info["prompts"], store.info["limit"] = list(models), list(prompts), args.limit
    results = results_of(cases, store)
    # A run cut to the first N leftovers is a latency run: it never replaces the study's file.
    name = "decisions_sources_latency" if args.limit > 0 else "decisions_sources"
    write_results(name, results, out=args.out, quick=args.quick)
    print_results(results)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
