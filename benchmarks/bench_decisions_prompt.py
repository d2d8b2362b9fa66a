"""The signal question's prompt, the last pass's against a new one, on every fit source (issue 21, seventh pass on).

**Why.** Each pass scores its design once on a held-out set written by people who never saw the project, then
that set, scored and read, becomes **fit data** and a new set written before the next pass's changes is the
measure. The seventh pass (docs/studies/signal-decisions.md) promoted the first two held-out sets and changed the prompt
(this script's run at c0d5148 compared it with the sixth's, ``decisions_prompt_seventh*.json``); the eighth
promoted the third and compared a new prompt with the seventh's (at 714cdba, ``decisions_prompt_eighth*.json``).
The eighth scored 84.0 % on the fourth set; reading that set's errors, the larger model still called messages
that vent and then ask for something new corrections, and the rules' ``starts-with-no`` settled a "no" that
answers a question as one (that rule is retired in this pass, ``signal_rules.py`` ``RETIRED``). The **ninth
prompt** (:data:`NINTH`, the eighth one of ``exo_core/decisions/uses.py`` ``SIGNAL`` with more words) says that venting followed by a new request, and a "no"
that answers a question, are "neither", and has two more examples written for those forms (20), none taken
from the data. It lost (7 fewer right pooled), so exod kept the eighth prompt and the ninth lives only in this
file (:data:`NINTH`), so the run can be repeated.

**How.** Every message of the seven fit sources (``labelled``: the labelled set's older 60 %; ``fit172``;
``more``; ``heldout1`` to ``heldout4``: the scored held-out sets) is asked to

* the **larger model over HTTP** as exod asks it: a real ``python -m llama_cpp.server`` serving the 1.5B with
  one thread, the ``LogprobProvider`` of the settler ``build_signal_settler`` builds from the config ``exo
  models serve --print-config`` prints, with each prompt's fixed examples (exod's ``neighbours = []``);
* the **local 0.5B in-process** (``LocalDecisionProvider``, chat style, one thread), with each prompt,

so a later change of the rules needs no new call (``--raws`` keeps the raws; a run goes on where it stopped).
Each source's messages are calibrated on the **other sources' leftovers** (Platt with per-option offsets,
``calibration.py`` ``fit``), then scored as exod acts: the rules settle at ``SIGNAL.rule_probabilities``, the
0.5B's decision stands at ``defer_below`` (0.9) or above, else the larger model's, unless that one abstains
where the 0.5B had decided (``bench_decisions_signal.escalated``).

**The criterion, fixed before the run** (this docstring was committed before any raw of the new prompt was
taken; the seventh pass's was the same): the new prompt replaces the last one only if exod's chain (``rules +
local, then larger``, deferring below 0.9) with it is right, abstentions wrong, on **at least 3 more** messages
pooled over all the sources, **and** on the sources whose messages did not prompt the change (``older``: all but
the newest promoted set) it is **not worse by more than 2** messages, **and** its pooled ECE is within the goal
(≤ 0.08). Otherwise the last prompt goes back.

    OMP_WAIT_POLICY=PASSIVE python -m benchmarks.bench_decisions_prompt --raws /tmp/prompt_raws.json
    python -m benchmarks.bench_decisions_prompt --markdown
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
from benchmarks._common import REPO, bench_parser, machine_info, print_table, write_results
from benchmarks.bench_decisions_signal import MODELS, calibrate, escalated, rule_answer, score, score_row
from benchmarks.bench_decisions_sources import Store, ask, fit_cases, latency, served_larger
from exo_core.decisions.calibration import Calibration
from exo_core.decisions.setup import DecisionSettings
from exo_core.decisions.uses import SIGNAL
from exo_core.seams.decision import DecisionProvider, Question

PROMOTED = {
    "heldout1": REPO / "benchmarks" / "data" / "decisions_heldout.jsonl",
    "heldout2": REPO / "benchmarks" / "data" / "decisions_heldout2.jsonl",
    "heldout3": REPO / "benchmarks" / "data" / "decisions_heldout3.jsonl",
    "heldout4": REPO / "benchmarks" / "data" / "decisions_heldout4.jsonl",
}
NEWEST = ("heldout4",)  # the promoted set whose errors prompted this pass's change
SOURCES = ("labelled", "fit172", "more", *PROMOTED)
OLDER = tuple(source for source in SOURCES if source not in NEWEST)
GROUPS = {"older": OLDER, "newest": NEWEST, "pooled": SOURCES}
TIE = 2  # messages: a difference this small or smaller is a tie (the criterion above)
GAIN = 3  # messages the new prompt must gain pooled to replace the last one
ECE_GOAL = 0.08
DEFER_BELOW = DecisionSettings().defer_below
Probs = dict[str, float]
Case = dict[str, Any]

# The ninth pass's candidate: the eighth prompt (``SIGNAL`` as exod ships it) with venting before a new request and
# a "no" that answers a question named as "neither", and two examples for them. It lost this study's criterion
# (docs/studies/signal-decisions.md, ninth pass), so it lives here only, for the run to be repeated.
NINTH = replace(
    SIGNAL,
    descriptions=(
        SIGNAL.descriptions[0],
        SIGNAL.descriptions[1],
        "anything else: a new one-off request, a question, thanks, praise, agreement or small talk (also "
        "complaints or news about the person's own day, not about the answer, even when a new request "
        'follows), and a "no" that turns down an offer, answers a question or says nothing needs changing',
    ),
    examples=(
        *SIGNAL.examples,
        ("Ugh, the printer jammed again and I'm late. Can you find a print shop near the office?", "neither"),
        ("No, the landlord hasn't answered yet. I'll tell you when he does.", "neither"),
    ),
    example_drafts=(
        *SIGNAL.example_drafts,
        "I've added the quarterly report to tomorrow's to-do list.",
        "Has the landlord confirmed the repair date yet?",
    ),
)
PROMPTS: dict[str, Question] = {"eighth": SIGNAL, "ninth": NINTH}
LAST, NEW = PROMPTS


def all_cases() -> list[Case]:
    """The three older fit sources (as the sixth pass's study reads them) and the scored held-out sets, each
    case with its ``source`` and what today's rules settle it on (``rule``)."""
    cases = fit_cases()
    for source, path in PROMOTED.items():
        for line in path.read_text(encoding="utf-8").splitlines():
            if not line.strip():
                continue
            found = json.loads(line)
            cases.append(
                {
                    "id": found["id"],
                    "text": found["text"],
                    "label": found["label"],
                    "source": source,
                    "rule": rule_answer(found["text"]),
                }
            )
    return cases


async def larger_jobs(cases: list[Case], store: Store, port: int) -> None:
    """The larger model over HTTP through exod's settler, each prompt's calls in a row."""
    if all(all(c["id"] in store.raws.get(f"larger:{p}", {}) for c in cases) for p in PROMPTS):
        return
    async with served_larger(port, store) as inner:
        for prompt, question in PROMPTS.items():

            def provider_for(case: Case) -> DecisionProvider:
                return inner

            await inner.probabilities(question, cases[0]["text"])  # not timed: the server reads the head
            await ask(f"larger:{prompt}", provider_for, cases, store, question=question)


async def local_jobs(cases: list[Case], store: Store) -> None:
    """The local 0.5B in this process (chat style, one thread), each prompt in turn."""
    from exo_edge.decide_local import LocalDecisionProvider, transport_for_file
    from exo_edge.paths import locate_model_file

    if all(all(c["id"] in store.raws.get(f"local:{p}", {}) for c in cases) for p in PROMPTS):
        return
    path = locate_model_file(MODELS["local"][0])
    if path is None:
        raise SystemExit(f"{MODELS['local'][0]} is not in the models folder: exo models fetch")
    transport = transport_for_file(path, threads=1)
    inner = LocalDecisionProvider(transport, timeout=120.0, style="chat")
    try:
        for prompt, question in PROMPTS.items():
            await inner.warm(question)

            def provider_for(case: Case) -> DecisionProvider:
                return inner

            await ask(f"local:{prompt}", provider_for, cases, store, question=question)
    finally:
        await transport.aclose()


# ---------------------------------------------------------------- scoring (from the raws alone)


def cross_fitted(raws: dict[str, Probs], left: list[Case]) -> dict[str, Probs]:
    """Each leftover's probabilities calibrated on the other sources' leftovers."""
    out: dict[str, Probs] = {}
    for source in SOURCES:
        rows = [(raws[c["id"]], c["label"]) for c in left if c["source"] != source and c["id"] in raws]
        found: Calibration | None = calibrate(rows)
        for case in left:
            if case["source"] != source or case["id"] not in raws:
                continue
            raw = raws[case["id"]]
            out[case["id"]] = raw if found is None else dict(found.apply(raw))
    return out


def systems_of(cases: list[Case], raws: dict[str, dict[str, Probs]], prompt: str) -> dict[str, dict[str, Probs]]:
    """Per system of ``prompt``: every case's probabilities (a case a model was not asked about is left out)."""
    left = [c for c in cases if c["rule"] is None]
    local = cross_fitted(raws.get(f"local:{prompt}", {}), left)
    larger = cross_fitted(raws.get(f"larger:{prompt}", {}), left)
    out: dict[str, dict[str, Probs]] = {
        "local alone (leftovers)": local,
        "larger alone (leftovers)": larger,
        "rules + local": {},
        "rules + larger": {},
        "chain": {},
        "chain (no deferral)": {},
    }
    for case in cases:
        key = case["id"]
        if case["rule"] is not None:
            settled = SIGNAL.rule_probabilities(case["rule"])
            for name in ("rules + local", "rules + larger", "chain", "chain (no deferral)"):
                out[name][key] = settled
            continue
        if key in local:
            out["rules + local"][key] = local[key]
        if key in larger:
            out["rules + larger"][key] = larger[key]
        if key in local and key in larger:
            out["chain"][key] = escalated(local[key], larger[key], DEFER_BELOW)
            out["chain (no deferral)"][key] = escalated(local[key], larger[key], SIGNAL.threshold)
    return out


def summarise(cases: list[Case], raws: dict[str, dict[str, Probs]]) -> dict[str, Any]:
    """Per prompt, system and group (each source, ``older``, ``newest``, ``pooled``): the scores."""
    out: dict[str, Any] = {}
    for prompt in PROMPTS:
        out[prompt] = {}
        for name, probs in systems_of(cases, raws, prompt).items():
            out[prompt][name] = {}
            for group, members in [*((s, (s,)) for s in SOURCES), *GROUPS.items()]:
                rows = [(probs[c["id"]], c["label"]) for c in cases if c["source"] in members and c["id"] in probs]
                got = score(rows)
                if got["n"]:
                    got["right"] = round(got["accuracy"] * got["n"])
                out[prompt][name][group] = got
    return out


def choose(summary: dict[str, Any], cases: list[Case]) -> dict[str, Any]:
    """The criterion of the module docstring, applied (``None`` when a chain misses a case)."""
    last, new = summary[LAST]["chain"], summary[NEW]["chain"]
    for got in (last, new):
        if got["pooled"]["n"] != len(cases):
            return {"prompt": None, "why": "a chain was not asked about every case"}
    gained = new["pooled"]["right"] - last["pooled"]["right"]
    older_change = new["older"]["right"] - last["older"]["right"]
    ece = new["pooled"]["ece"]
    wins = gained >= GAIN and older_change >= -TIE and ece <= ECE_GOAL
    return {
        "prompt": NEW if wins else LAST,
        "pooled_more_right": gained,
        "older_more_right": older_change,
        "new_pooled_ece": ece,
        "gain_needed": GAIN,
        "older_tie": TIE,
        "ece_goal": ECE_GOAL,
    }


def results_of(cases: list[Case], store: Store) -> dict[str, Any]:
    """The results file: conditions, scores, latencies, the choice, and the raws (fit data only)."""
    summary = summarise(cases, store.raws)
    return {
        "benchmark": "decisions_prompt",
        "machine": machine_info(),
        "omp_wait_policy": os.environ.get("OMP_WAIT_POLICY"),
        "info": store.info,
        "defer_below": DEFER_BELOW,
        "sources": list(SOURCES),
        "group_sizes": {group: sum(c["source"] in members for c in cases) for group, members in GROUPS.items()},
        "rules_settled": sum(c["rule"] is not None for c in cases),
        "rules_right": sum(c["rule"] == c["label"] for c in cases if c["rule"] is not None),
        "summary": summary,
        "seconds": latency(store.seconds),
        "choice": choose(summary, cases),
        "cases": {c["id"]: {"label": c["label"], "source": c["source"], "rule": c["rule"]} for c in cases},
        "raws": {
            job: {k: {o: round(p, 6) for o, p in v.items()} for k, v in found.items()}
            for job, found in store.raws.items()
        },
    }


HEADERS = ["prompt", "system", "group", "accuracy (abstain = wrong)", "ECE", "abstains", "top option right", "n"]


def print_results(results: dict[str, Any]) -> None:
    """The study's tables and its choice."""
    rows = []
    for prompt, systems in results["summary"].items():
        for name, groups in systems.items():
            for group, got in groups.items():
                if got.get("n"):
                    rows.append([prompt, name, *score_row(group, got)])
    print_table("The signal question's two prompts, each source calibrated on the others", HEADERS, rows)
    print(json.dumps(results["choice"]))


def main(argv: list[str] | None = None) -> int:
    """Run the study (or print the saved results)."""
    ap = bench_parser("decisions-prompt", __doc__.split("\n")[0], quick_help="the first 6 cases; writes nothing")
    ap.add_argument("--markdown", action="store_true", help="print Markdown tables of the saved results (or --out)")
    ap.add_argument("--raws", type=Path, default=None, help="keep (and reuse) the raws so far here")
    ap.add_argument("--models", default="larger,local", help="larger (over HTTP), local (in-process)")
    ap.add_argument("--port", type=int, default=18098)
    args = ap.parse_args(argv)
    if args.markdown:
        _common.MARKDOWN = True
        print_results(json.loads((args.out or _common.RESULTS_DIR / "decisions_prompt.json").read_text()))
        return 0
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    models = tuple(m for m in args.models.split(",") if m)
    if set(models) - {"larger", "local"}:
        ap.error("--models: larger, local")
    cases = all_cases()
    asked = cases[:6] if args.quick else cases
    store = Store(args.raws)

    async def run() -> None:
        work = []
        if "larger" in models:
            work.append(larger_jobs(asked, store, args.port))
        if "local" in models:
            work.append(local_jobs(asked, store))
        await asyncio.gather(*work)  # the server and the local model, one thread each, side by side

    started = time.time()
    store.info.setdefault("load_average_start", os.getloadavg())
    asyncio.run(run())
    store.info["wall_s"] = store.info.get("wall_s", 0.0) + (time.time() - started)
    store.info["load_average_end"] = os.getloadavg()
    store.save()
    results = results_of(asked, store)
    write_results("decisions_prompt", results, out=args.out, quick=args.quick)
    print_results(results)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
