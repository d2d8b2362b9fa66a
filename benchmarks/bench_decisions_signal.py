"""The signal decision on a person's messages (issue 21): rules, the local model, the laptop's model.

``exo bench decisions`` runs this. Two sets, reported separately:

* the labelled set's signal cases (``benchmarks/data/decisions.jsonl``), split **by time** over the
  whole set as ``bench_decisions.py`` does: calibrations are fitted on the oldest 60 % (*fit*),
  scores are on the newest 40 % (*test*);
* the held-out messages (``benchmarks/data/decisions_heldout.jsonl``, 72 messages written and labelled
  by someone who never saw the rules or prompts; provenance in ``decisions_heldout.README.md``). They
  were copied in after the rules and prompts were committed and nothing was tuned on them.

* the fit set written for issue 21's second pass (``benchmarks/data/decisions_signal_fit.jsonl``, 172
  messages, each with the draft it answers; provenance in ``decisions_signal_fit.README.md``): fit data
  only. Calibrations are fitted on it together with the labelled set's fit part (the *fit pool*), and
  it measures what showing the model the draft changes (the test part and the held-out messages carry
  no draft), by leave-one-out over its cases;
* the messages written for issue 21's fourth pass (``benchmarks/data/decisions_signal_more.jsonl``, 191, with
  drafts; in the shipped example pool too): fit data, in the calibrations unless ``--fit-parts`` leaves
  them out.

Systems (every model probability calibrated on the fit pool: Platt with per-option offsets, or the slope
alone on 10-29 cases, ``exo_core/decisions/calibration.py``):

* ``rules-only``: the rules in code, then the cue-word provider (a rule settlement carries the question's
  rule probabilities, ``SIGNAL.rule_probabilities``: ``SIGNAL_RULE_CONFIDENCE`` for its option, as in exod);
* ``local model``: Qwen2.5-Coder 0.5B Instruct alone (the standard device profile's model), one
  forward pass over its chat template; ``gemma model``: the Gemma 3 270M base model alone, few-shot
  words prompt (the provider before issue 21), for comparison;
* ``rules + local`` / ``rules + gemma`` / ``rules + laptop``: the rules first, then that model
  (calibrated on the fit cases the rules left to it). ``laptop`` is Qwen2.5-Coder 1.5B Instruct,
  loaded on this machine from its GGUF file (no server needed), with the same prompt;
* ``rules + local, then laptop``: what exod does with both: the local model's abstentions go to the
  laptop's model (``exo_core/decisions/escalation.py``).

The chat-style models named by ``--nn`` (by default the laptop's, the design chosen on the fit pool by
``bench_decisions_neighbours.py``) are shown the message's nearest examples of every option from the
shipped pool (``exo_core/decisions/neighbours.py``; the pool is the fit pool, so a fit-pool case's own
entry is left out of its neighbours); the others the question's fixed examples (``--nn ""``: every model,
as before issue 21's third pass). ``--no-drafts`` skips the draft prompts.

Per system and set: accuracy with abstentions counted wrong (below the question's threshold, 0.6),
the expected calibration error (10 bins, on the probability of the most probable option), the
abstention rate, and the accuracy of the most probable option. Latency on the device profile: each
decision of the local model, against one generation step (one token decoded after a prompt) on the
same model in the same run.

    python -m benchmarks.bench_decisions_signal              # full run (about an hour on 1 busy core)
    python -m benchmarks.bench_decisions_signal --markdown   # tables from the saved results
"""

from __future__ import annotations

import asyncio
import json
import os
import statistics
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

from benchmarks import _common
from benchmarks._common import REPO, bench_parser, machine_info, print_table, ratio, write_results
from benchmarks.bench_decisions import load_cases, split_by_time
from exo_core.decisions import Decider, expected_calibration_error, fit
from exo_core.decisions.calibration import Calibration
from exo_core.decisions.neighbours import (
    DEFAULT_SIGNAL_POOL,
    ExamplePool,
    NeighbourExamples,
    with_examples,
)
from exo_core.decisions.providers import RulesOnlyProvider
from exo_core.decisions.uses import SIGNAL

DATA = REPO / "benchmarks" / "data"
HELDOUT = DATA / "decisions_heldout5.jsonl"  # issue 21's ninth pass: two writers, sealed until it was scored
EXTRA = DATA / "decisions_signal_fit.jsonl"
MORE = DATA / "decisions_signal_more.jsonl"  # issue 21's fourth pass (in the pool too)
# The held-out sets already scored and read after it: the first two (the sixth pass) are fit data from the
# seventh pass on, the third (the seventh pass) from the eighth on, the fourth (the eighth pass) from the ninth on.
PROMOTED = {
    "heldout1": DATA / "decisions_heldout.jsonl",
    "heldout2": DATA / "decisions_heldout2.jsonl",
    "heldout3": DATA / "decisions_heldout3.jsonl",
    "heldout4": DATA / "decisions_heldout4.jsonl",
}
POOL_PARTS = ("fit", "extra", "more")  # the parts in the shipped example pool
FIT_POOL = (*POOL_PARTS, *PROMOTED)  # the parts calibrations are fitted on; never measured on as held out
SCORED = ("test", "heldout")
DRAFT = "+draft"  # the raws of a model shown the draft (a key suffix)
SAVE_EVERY = 20  # cases between saves of the raws file
MODELS = {
    "local": ("qwen2.5-coder-0.5b-instruct-q4_k_m.gguf", "chat"),
    "gemma": ("gemma-3-270m-q4_k_m.gguf", "words"),
    "laptop": ("qwen2.5-coder-1.5b-instruct-q4_k_m.gguf", "chat"),
}
SYSTEMS = (
    "rules-only",
    "local model",
    "gemma model",
    "rules + local",
    "rules + gemma",
    "rules + laptop",
    "rules + local, then laptop",
)
Probs = dict[str, float]


def load_sets(heldout: Path = HELDOUT) -> dict[str, list[dict[str, Any]]]:
    """``fit``, ``test`` (the labelled set's signal cases, split by time), ``extra`` (the fit set with
    drafts), ``more`` (the fourth pass's messages, with drafts), ``heldout1`` to ``heldout4`` (the
    held-out sets already scored, fit data since the pass after; one that is ``heldout`` itself is left out) and ``heldout``
    (the file ``heldout``, when present: the held-out messages, ``--heldout``)."""
    fit_part, test_part = split_by_time(load_cases())
    sets = {
        "fit": [c for c in fit_part if c["use"] == "signal"],
        "test": [c for c in test_part if c["use"] == "signal"],
    }
    lines = EXTRA.read_text(encoding="utf-8").splitlines()
    sets["extra"] = [json.loads(line) for line in lines if line.strip()]
    lines = MORE.read_text(encoding="utf-8").splitlines()
    sets["more"] = [json.loads(line) for line in lines if line.strip()]
    for part, path in PROMOTED.items():
        if path.resolve() == heldout.resolve():  # re-scoring an old set as held out: it is not fit data then
            continue
        lines = path.read_text(encoding="utf-8").splitlines()
        sets[part] = [json.loads(line) for line in lines if line.strip()]
    if heldout.is_file():
        lines = heldout.read_text(encoding="utf-8").splitlines()
        sets["heldout"] = [json.loads(line) for line in lines if line.strip()]
    return sets


def rule_answer(text: str) -> str | None:
    """The option the rules settle ``text`` on, as the decider does (every firing rule agrees)."""
    fired = {rule.option for rule in SIGNAL.rules if rule.matches(text)}
    if len(fired) == 1:
        return next(iter(fired))
    return None


def neighbour_examples() -> NeighbourExamples:
    """The shipped signal pool with the edge's int8 MiniLM embedder (one thread)."""
    from exo_edge.embedder import OnnxEmbedder

    embedder = OnnxEmbedder.from_home(threads=1)
    if embedder is None:
        raise SystemExit("--nn needs the MiniLM embedder: exo models fetch")
    return NeighbourExamples(ExamplePool(DEFAULT_SIGNAL_POOL, SIGNAL), embedder=embedder)


async def model_raws(
    which: str,
    jobs: list[tuple[str, str, str, str | None]],
    threads: int,
    raws: dict[str, dict[str, Probs]],
    save: Any,
    *,
    near: NeighbourExamples | None = None,
    pooled: frozenset[str] = frozenset(),
) -> dict[str, Any]:
    """Score ``jobs`` ((raws key, case id, text, draft or None), in that order) on one model, into ``raws``.

    Cases already in ``raws`` are kept; ``save()`` is called every :data:`SAVE_EVERY` cases. For
    ``local``, the latency of its decisions without and with a draft against generation steps in the
    same run (choosing the neighbours included). With ``near`` a chat-style model is shown each message's
    nearest pool examples, a case in ``pooled`` (the pool's own ids) never its own entry."""
    from exo_edge.decide_local import LocalDecisionProvider, transport_for_file
    from exo_edge.paths import locate_model_file

    file_name, style = MODELS[which]
    path = locate_model_file(file_name)
    if path is None:
        return {"skipped": f"{file_name} is not in the models folder"}
    shown = near is not None and style == "chat"
    prompt = "nn" if shown else "fixed"
    info: dict[str, Any] = {"file": file_name, "style": style, "prompt": prompt, "threads": threads, "heads": {}}
    missing = [job for job in jobs if job[1] not in raws.get(job[0], {})]
    if not missing:
        return info
    transport = transport_for_file(path, threads=threads)
    provider = LocalDecisionProvider(transport, timeout=120.0, style=style)
    steps: list[float] = []
    timings: dict[str, list[float]] = {"latency": [], "latency_draft": []}
    done = 0
    try:
        bare = SIGNAL
        if shown:  # the part of the prompt before the examples is what stays the same
            bare = replace(SIGNAL, examples=(), example_drafts=())
        await provider.warm(bare, drafts=any(draft is not None for _key, _id, _text, draft in missing))
        for key, case_id, text, draft in missing:
            if which == "local" and done % 10 == 0:  # a turn's generation between decisions replaces the cache
                steps.extend(await transport.run_exclusive(_generation_steps))
            started = time.perf_counter()
            question = SIGNAL
            if near is not None and shown:
                own = case_id if case_id in pooled else None
                question = with_examples(SIGNAL, near.choose(text, exclude=own))
            if draft is None:
                got = await provider.probabilities(question, text)
            else:
                got = await provider.probabilities_after(question, text, draft)
            timings["latency" if draft is None else "latency_draft"].append(time.perf_counter() - started)
            raws.setdefault(key, {})[case_id] = dict(got)
            if provider.last is not None:
                info["heads"][provider.last.head] = info["heads"].get(provider.last.head, 0) + 1
            done += 1
            if done % SAVE_EVERY == 0:
                save()
        save()
    finally:
        await transport.aclose()
    if which == "local" and steps:
        for name, spent in timings.items():
            if spent:
                info[name] = _latency(spent, steps)
    return info


def _latency(decisions: list[float], steps: list[float]) -> dict[str, Any]:
    step = statistics.median(steps)
    return {
        "decision_median_ms": statistics.median(decisions) * 1000,
        "decision_p95_ms": _p95(decisions) * 1000,
        "generation_step_median_ms": step * 1000,
        "generation_step_p95_ms": _p95(steps) * 1000,
        "median_over_step": ratio(statistics.median(decisions), step),
        "p95_over_step": ratio(_p95(decisions), step),
        "n_decisions": len(decisions),
        "n_steps": len(steps),
    }


def _generation_steps(llm: Any) -> list[float]:
    """In the model's worker: a short prompt, then 8 greedy tokens decoded one at a time (seconds each)."""
    import numpy as np

    prompt = "<|im_start|>user\nTell me a short story about a lighthouse keeper.<|im_end|>\n<|im_start|>assistant\n"
    tokens = llm.tokenize(prompt.encode("utf-8"), add_bos=True, special=True)
    llm.n_tokens = 0
    llm.eval(tokens)
    out = []
    for _ in range(8):
        logits = np.ctypeslib.as_array(llm._ctx.get_logits_ith(-1), shape=(llm.n_vocab(),))
        started = time.perf_counter()
        llm.eval([int(logits.argmax())])
        out.append(time.perf_counter() - started)
    return out


def _p95(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))]


def calibrate(rows: list[tuple[Probs, str]]) -> Calibration | None:
    """Platt scaling with per-option offsets on ``rows`` (None when there are too few)."""
    return fit(SIGNAL.options, rows)


def _apply(calibration: Calibration | None, raw: Probs) -> Probs:
    if calibration is None:
        return raw
    return dict(calibration.apply(raw))


def escalated(first: Probs, second: Probs, bar: float) -> Probs:
    """What exod's ``Escalation`` acts on when the device model said ``first`` and the larger model would say
    ``second`` (both calibrated): the device's at ``bar`` or above (``defer_below``; the threshold when nothing
    defers), else the larger model's, unless that one abstains where the device model had decided."""
    if max(first.values()) >= bar:
        return first
    if max(second.values()) < SIGNAL.threshold <= max(first.values()):
        return first
    return second


def score(rows: list[tuple[Probs, str]]) -> dict[str, Any]:
    """Accuracy (abstentions wrong), ECE, abstention rate and top-option accuracy."""
    if not rows:
        return {"n": 0}
    picks = [max(SIGNAL.options, key=lambda o: p[o]) for p, _ in rows]
    top = [p[pick] for pick, (p, _) in zip(picks, rows)]
    right = [pick == label for pick, (_, label) in zip(picks, rows)]
    acted = [c >= SIGNAL.threshold for c in top]
    return {
        "n": len(rows),
        "accuracy": sum(r and a for r, a in zip(right, acted)) / len(rows),
        "ece": expected_calibration_error(top, right),
        "abstention": 1 - sum(acted) / len(rows),
        "top_accuracy": sum(right) / len(rows),
    }


async def run(
    threads: int,
    raws_file: Path | None,
    only: tuple[str, ...] = tuple(MODELS),
    *,
    nn: tuple[str, ...] = ("laptop",),
    drafts: bool = True,
    fit_parts: tuple[str, ...] = FIT_POOL,
    heldout: Path = HELDOUT,
) -> dict[str, Any]:
    """Every system on the test part and the held-out messages; the draft's effect on the fit set."""
    sets = load_sets(heldout)
    near = neighbour_examples() if nn else None
    pooled = frozenset(c["id"] for part in POOL_PARTS for c in sets[part])  # their own pool entries left out
    cases = [c for part in sets.values() for c in part]
    settled = {c["id"]: rule_answer(c["text"]) for c in cases}
    cue = Decider([RulesOnlyProvider()])
    cues = {}
    for case in cases:
        cues[case["id"]] = dict((await cue.decide(SIGNAL, case["text"], record=False)).raw)
    saved: dict[str, Any] = {}
    if raws_file is not None and raws_file.is_file():
        saved = json.loads(raws_file.read_text())
    raws: dict[str, dict[str, Probs]] = saved.get("raws", {})
    models: dict[str, Any] = saved.get("models", {})

    def save() -> None:  # a later failure does not lose the minutes spent
        if raws_file is not None:
            raws_file.write_text(json.dumps({"raws": raws, "models": models}))

    for which in only:
        jobs = _jobs(which, sets, settled, drafts=drafts)
        shown = near if which in nn else None
        found = await model_raws(which, jobs, threads, raws, save, near=shown, pooled=pooled)
        models[which] = {**models.get(which, {}), **found}
        save()

    def rows(source: dict[str, Probs], parts: tuple[str, ...], *, left_only: bool) -> list[tuple[Probs, str]]:
        return [
            (source[c["id"]], c["label"])
            for part in parts
            for c in sets.get(part, [])
            if c["id"] in source and (not left_only or settled[c["id"]] is None)
        ]

    present = [w for w in MODELS if raws.get(w)]
    alone = {w: calibrate(rows(raws[w], fit_parts, left_only=False)) for w in present}
    after_rules = {w: calibrate(rows(raws[w], fit_parts, left_only=True)) for w in present}
    after_rules["cues"] = calibrate(rows(cues, fit_parts, left_only=True))

    def system(name: str, case: dict[str, Any]) -> Probs | None:
        rule = settled[case["id"]]
        if name == "local model" or name == "gemma model":
            which = name.split()[0]
            if case["id"] not in raws.get(which, {}):
                return None
            return _apply(alone[which], raws[which][case["id"]])
        if rule is not None:
            return SIGNAL.rule_probabilities(rule)  # as the decider settles it (SIGNAL_RULE_CONFIDENCE)
        if name == "rules-only":
            return _apply(after_rules["cues"], cues[case["id"]])
        if name == "rules + local, then laptop":
            if case["id"] not in raws.get("local", {}) or case["id"] not in raws.get("laptop", {}):
                return None
            first = _apply(after_rules["local"], raws["local"][case["id"]])
            if max(first.values()) >= SIGNAL.threshold:
                return first
            return _apply(after_rules["laptop"], raws["laptop"][case["id"]])
        which = name.split()[-1]
        if case["id"] not in raws.get(which, {}):
            return None
        return _apply(after_rules[which], raws[which][case["id"]])

    scores: dict[str, dict[str, Any]] = {}
    per_case: dict[str, dict[str, Any]] = {}
    for name in SYSTEMS:
        scores[name] = {}
        for part in SCORED:
            got = [(system(name, c), c["label"]) for c in sets.get(part, [])]
            if got and all(p is not None for p, _ in got):
                scores[name][part] = score([(p, label) for p, label in got if p is not None])
    for part in SCORED:
        for c in sets.get(part, []):
            per_case[c["id"]] = {"part": part, "label": c["label"], "rule": settled[c["id"]]}
            for which in MODELS:
                if c["id"] in raws.get(which, {}):
                    per_case[c["id"]][which] = {o: round(p, 4) for o, p in raws[which][c["id"]].items()}
    calibrations = {name: (found.to_json() if found else None) for name, found in after_rules.items()}
    return {
        "benchmark": "decisions_signal",
        "machine": machine_info(),
        "omp_wait_policy": os.environ.get("OMP_WAIT_POLICY"),
        "nn": list(nn),
        "calibrated_on": list(fit_parts),
        "cases": {part: len(found) for part, found in sets.items()},
        "rules_settled": {
            part: sum(1 for c in found if settled[c["id"]] is not None) / len(found) for part, found in sets.items()
        },
        "rules_right_when_settled": {part: _right_when_settled(found, settled) for part, found in sets.items()},
        "calibrations": {
            "alone": {name: (found.to_json() if found else None) for name, found in alone.items()},
            "after_rules": calibrations,
        },
        "draft": draft_effect(sets["extra"], settled, raws),
        "models": models,
        "scores": scores,
        "per_case": per_case,
    }


def _jobs(
    which: str, sets: dict[str, list[dict[str, Any]]], settled: dict[str, str | None], *, drafts: bool = True
) -> list[tuple[str, str, str, str | None]]:
    """What ``which`` scores, most needed first: the cases the rules leave (what the model sees in use),
    fit pool first, without a draft, then the fit set's with its draft (the chat-style models: the
    draft's effect), then the rest without a draft. The laptop's model only ever sees what the rules
    leave (it is slow on this machine)."""
    ordered = [c for part in (*FIT_POOL, *SCORED) for c in sets.get(part, [])]
    left = [c for c in ordered if settled[c["id"]] is None]
    jobs: list[tuple[str, str, str, str | None]] = [(which, c["id"], c["text"], None) for c in left]
    if which != "gemma" and drafts:
        jobs += [(which + DRAFT, c["id"], c["text"], c["draft"]) for c in left if c.get("draft")]
    if which != "laptop":
        jobs += [(which, c["id"], c["text"], None) for c in ordered if settled[c["id"]] is not None]
    return jobs


def draft_effect(
    extra: list[dict[str, Any]], settled: dict[str, str | None], raws: dict[str, dict[str, Probs]]
) -> dict[str, Any]:
    """On the fit set's cases the rules leave: each chat-style model without and with the draft.

    Both prompts are scored on the same cases (those the model was run on both ways). *top option
    right* is the raw model's; the rest are leave-one-out: each case scored with a calibration fitted
    on the other cases of the same model and prompt (the fit set is fit data, so this is the fair way
    to measure on it)."""
    out: dict[str, Any] = {}
    for which in MODELS:
        plain, shown = raws.get(which, {}), raws.get(which + DRAFT, {})
        both = [c for c in extra if settled[c["id"]] is None and c["id"] in plain and c["id"] in shown]
        if which == "gemma" or len(both) < 2:
            continue
        for key, source in ((which, plain), (which + DRAFT, shown)):
            rows = [(source[c["id"]], c["label"]) for c in both]
            held = []
            for i, (raw, label) in enumerate(rows):
                calibration = calibrate(rows[:i] + rows[i + 1 :])
                held.append((_apply(calibration, raw), label))
            found = score(held)
            found["top_accuracy_raw"] = score(rows)["top_accuracy"]
            out[key] = found
    return out


def _right_when_settled(cases: list[dict[str, Any]], settled: dict[str, str | None]) -> float | None:
    hits = [settled[c["id"]] == c["label"] for c in cases if settled[c["id"]] is not None]
    return sum(hits) / len(hits) if hits else None


SCORE_HEADERS = ["system", "accuracy (abstain = wrong)", "ECE", "abstains", "top option right", "n"]


def score_row(name: str, got: dict[str, Any]) -> list[Any]:
    """One system's scores as a console table row, under :data:`SCORE_HEADERS`."""
    accuracy = f"{100 * got['accuracy']:.1f}%"
    abstains = f"{100 * got['abstention']:.1f}%"
    top = f"{100 * got['top_accuracy']:.1f}%"
    return [name, accuracy, round(got["ece"], 3), abstains, top, got["n"]]


def print_results(results: dict[str, Any]) -> None:
    """The tables for docs/benchmarks.md."""
    cases = results["cases"]
    print(
        f"\nsignal cases: fit {cases['fit']}, fit set with drafts {cases.get('extra', 0)}, test {cases['test']}, "
        f"held-out {cases.get('heldout', 0)}"
    )
    print(f"rules settle: {results['rules_settled']}; right when they do: {results['rules_right_when_settled']}")
    print(
        f"calibrations after the rules (fitted on the fit pool): {results.get('calibrations', {}).get('after_rules')}"
    )
    for part, title in (("test", "labelled set, test part (newest 40 %)"), ("heldout", "held-out new messages")):
        rows = []
        for name in SYSTEMS:
            found = results["scores"].get(name, {}).get(part)
            if found is None:
                continue
            rows.append(score_row(name, found))
        print_table(f"Signal decision, {title}", SCORE_HEADERS, rows)
    draft_rows = []
    for key, name in (
        ("local", "local model, message alone"),
        ("local" + DRAFT, "local model, shown the draft"),
        ("laptop", "laptop model, message alone"),
        ("laptop" + DRAFT, "laptop model, shown the draft"),
    ):
        found = results.get("draft", {}).get(key)
        if found is not None:
            draft_rows.append(
                [
                    name,
                    f"{100 * found['top_accuracy_raw']:.1f}%",
                    f"{100 * found['accuracy']:.1f}%",
                    round(found["ece"], 3),
                    f"{100 * found['abstention']:.1f}%",
                    found["n"],
                ]
            )
    if draft_rows:
        print_table(
            "The draft as context: the fit set's cases the rules leave (leave-one-out calibration)",
            ["model and prompt", "top option right (raw)", "accuracy (abstain = wrong)", "ECE", "abstains", "n"],
            draft_rows,
        )
    latency = results["models"].get("local", {}).get("latency")
    with_draft = results["models"].get("local", {}).get("latency_draft")
    if isinstance(latency, dict) and isinstance(with_draft, dict):
        print(
            f"\nshown the draft: one signal decision {with_draft['decision_median_ms']:.0f} ms median "
            f"({with_draft['median_over_step']:.2f} steps), p95 {with_draft['decision_p95_ms']:.0f} ms, "
            f"n {with_draft['n_decisions']}"
        )
    if isinstance(latency, dict):
        print_table(
            f"Latency on the device profile's model (Qwen2.5-Coder 0.5B, {results['models']['local']['threads']} thread)",
            ["what", "median ms", "p95 ms", "median / one step", "p95 / one step", "n"],
            [
                [
                    "one signal decision",
                    round(latency["decision_median_ms"], 1),
                    round(latency["decision_p95_ms"], 1),
                    round(latency["median_over_step"], 2),
                    round(latency["p95_over_step"], 2),
                    latency["n_decisions"],
                ],
                [
                    "one generation step (1 token)",
                    round(latency["generation_step_median_ms"], 1),
                    round(latency["generation_step_p95_ms"], 1),
                    1.0,
                    "-",
                    latency["n_steps"],
                ],
            ],
        )


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark (or print the saved results)."""
    ap = bench_parser(
        "decisions",
        __doc__.split("\n")[0],
        quick_help="the same cases (there is no smaller set); writes nothing unless --out",
    )
    ap.add_argument("--markdown", action="store_true", help="print Markdown tables of the saved results (or --out)")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--raws", type=Path, default=None, help="reuse (or save) the models' raw probabilities here")
    ap.add_argument(
        "--models",
        default=",".join(MODELS),
        help="score only these models (comma-separated; the others' saved raws are still used)",
    )
    ap.add_argument(
        "--nn",
        default="laptop",
        help="the chat-style models shown the message's nearest pool examples (comma-separated; the rest fixed)",
    )
    ap.add_argument("--no-drafts", action="store_true", help="skip the draft prompts (the draft table)")
    ap.add_argument(
        "--heldout",
        type=Path,
        default=HELDOUT,
        help="the held-out messages scored as 'heldout' (by default the ninth pass's fifth set; an older one is then not fit data)",
    )
    ap.add_argument(
        "--fit-parts",
        default=",".join(FIT_POOL),
        help="the parts calibrations are fitted on (fit, extra, more; comma-separated)",
    )
    args = ap.parse_args(argv)
    if args.markdown:
        _common.MARKDOWN = True
        print_results(json.loads((args.out or _common.RESULTS_DIR / "decisions_signal.json").read_text()))
        return 0
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    only = tuple(name for name in args.models.split(",") if name)
    unknown = sorted(set(only) - set(MODELS))
    if unknown:
        ap.error(f"--models: unknown {', '.join(unknown)}; choose from {', '.join(MODELS)}")
    fit_parts = tuple(part for part in args.fit_parts.split(",") if part)
    if not fit_parts or set(fit_parts) - set(FIT_POOL):
        ap.error(f"--fit-parts: choose from {', '.join(FIT_POOL)}")
    results = asyncio.run(
        run(
            args.threads,
            args.raws,
            only,
            nn=tuple(n for n in args.nn.split(",") if n),
            drafts=not args.no_drafts,
            fit_parts=fit_parts,
            heldout=args.heldout,
        )
    )
    write_results("decisions_signal", results, out=args.out, quick=args.quick)
    if args.json:
        print(json.dumps(results, indent=2, sort_keys=True))
    else:
        print_results(results)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
