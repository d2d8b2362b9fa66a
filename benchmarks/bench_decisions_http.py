"""The laptop's model for the signal decision over HTTP, as exod reaches it, against the same model in-process.

exod asks the larger model (``[decisions] larger``: the first ``main`` route off the device, the laptop's
engine) through ``exo_core.decisions.signal_escalation.build_signal_settler``: a router holding only that
route, ``LogprobProvider`` (the in-process chat turns, one token at temperature 0 with ``top_logprobs``:
the option words' shares; issue 21's fifth pass; before it, ``HostedProvider``: one option letter at a
fixed 0.9), wrapped in ``NeighbourProvider`` when ``[decisions] neighbours`` names ``"larger"``. This script starts a
real ``python -m llama_cpp.server`` on a loopback port serving the 1.5B (one thread, as ``exo models
serve`` starts it), builds that settler on a scratch home whose config is what ``exo models serve
--print-config`` prints plus ``neighbours = ["larger"]``, and asks it about a sample of the labelled set's
test part, with the chosen examples and with the fixed ones. Then, the server stopped, the same 1.5B
in-process (``LocalDecisionProvider``, chat style: the option words' next-token probabilities, with the
message's nearest pool examples) on the same messages. Reported: the top option of each path, how often
they agree and are right (aggregate only), and the seconds per decision (median, p95, how many past exod's
10 s ``larger_timeout``). Never the held-out messages.

With ``--scored RAWS`` (the fifth pass; ``RAWS`` is the raws file of ``bench_decisions_signal.py``, holding
the in-process models' raw probabilities) the script then asks the same server, as the settler's provider
does, about every message of the fit data and the held-out messages that the rules leave (a fit-data case
is never shown its own pool entry), fits the HTTP path's own calibration on the fit data, and scores once:
rules + laptop over HTTP, rules + local then laptop over HTTP, on the test part and the held-out messages
(aggregate numbers only), next to the in-process rows from ``RAWS``. Its HTTP raws are kept in
``--http-raws`` so a cut run goes on where it stopped.

``--prompt`` is the HTTP path that is scored: ``nn`` (each message shown its nearest pool examples,
``neighbours = ["larger"]``) or ``fixed`` (the question's fixed examples, ``neighbours = []``); by default
exod's own default (``DecisionSettings().neighbours``). ``--fit-raws`` takes the fit data's HTTP raws of that
prompt from ``bench_decisions_sources.py``'s results file (issue 21's sixth pass: the chosen examples drawn
from the other sources of the pool, each source's message never shown its own writer's ones) instead of
asking the server again, so the calibration is fitted on them and only the held-out messages are asked.

    exo bench decisions-http --port 18093 --out FILE
    exo bench decisions-http --paths http:nn --scored RAWS --http-raws FILE --out FILE
    exo bench decisions-http --prompt fixed --scored RAWS --fit-raws benchmarks/results/decisions_prompt.json \
        --fit-job larger:eighth --update-results        # the current numbers (docs/benchmarks.md §7b)
    exo bench decisions-http --markdown                 # the committed results as tables
"""

from __future__ import annotations

import asyncio
import os
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks import _common
from benchmarks._common import bench_parser, machine_info, print_table, write_results
from benchmarks.bench_decisions import load_cases, split_by_time
from benchmarks.bench_decisions_signal import HELDOUT, MODELS, SCORE_HEADERS, rule_answer, score_row
from exo_core.decisions import Decider
from exo_core.decisions.neighbours import DEFAULT_SIGNAL_POOL, ExamplePool, NeighbourExamples
from exo_core.decisions.setup import DecisionSettings
from exo_core.decisions.signal_escalation import SignalSettler
from exo_core.decisions.uses import SIGNAL
from exo_core.errors import ExoError
from exo_core.seams.decision import DecisionProvider

ALIAS = "qwen2.5-coder-1.5b-instruct"
DEFER_BELOW = DecisionSettings().defer_below  # exod's default: below it the device model defers to the larger one
NO_DEFERRAL = " (no deferral)"  # the chain as before defer_below: the device model decides from the threshold
PATHS = ("http:nn", "http:fixed")  # the settler's larger model with the neighbours, and with the fixed examples
Probs = dict[str, float]


def sample() -> list[dict[str, Any]]:
    """The labelled set's test part (signal cases) that the rules leave: what exod asks the larger model about."""
    _fit, test = split_by_time(load_cases())
    return [c for c in test if c["use"] == "signal" and rule_answer(c["text"]) is None]


def default_prompt() -> str:
    """The prompt exod's larger model gets by default: ``nn`` when ``[decisions] neighbours`` names it."""
    from exo_core.decisions.setup import DecisionSettings

    return "nn" if "larger" in DecisionSettings().neighbours else "fixed"


def fit_raws(path: Path, job: str) -> dict[str, Probs]:
    """The fit data's HTTP raws of ``job`` (``larger:fixed`` in ``bench_decisions_sources.py``'s results file,
    ``larger:seventh`` in ``bench_decisions_prompt.py``'s)."""
    import json

    found = json.loads(path.read_text()).get("raws", {}).get(job)
    if not found:
        raise SystemExit(f"{path} holds no raws of {job}: run the study that writes it first")
    return {case: dict(probs) for case, probs in found.items()}


def _top(found: Probs) -> str:
    return max(SIGNAL.options, key=lambda option: found[option])


class LargerRaws:
    """A recorder for the settler's deciders that keeps the raw probabilities of the larger model's decisions."""

    def __init__(self) -> None:
        self.last: dict[str, Any] | None = None

    def record(self, kind: str, body: Any, *, refs: tuple[str, ...] = ()) -> str | None:
        """Keep the body of a decision the larger model made (the device's first decision is not kept)."""
        if kind == "decision" and str(body.get("provider", "")).startswith("laptop:"):
            self.last = dict(body)
        return None


async def ask_all(
    provider: DecisionProvider, cases: list[dict[str, Any]]
) -> tuple[dict[str, Probs | None], list[float]]:
    """Each case's probabilities from ``provider`` (``None`` when it failed) and the seconds each call took."""
    raws: dict[str, Probs | None] = {}
    spent: list[float] = []
    for case in cases:
        started = time.perf_counter()
        try:
            raws[case["id"]] = dict(await provider.probabilities(SIGNAL, case["text"]))
        except ExoError as exc:  # a failed call is counted, and the run goes on
            print(f"{provider.name}: {case['id']} failed: {type(exc).__name__}: {exc}", flush=True)
            raws[case["id"]] = None
        spent.append(time.perf_counter() - started)
    return raws, spent


async def settle_all(
    settler: SignalSettler, seen: LargerRaws, cases: list[dict[str, Any]]
) -> tuple[dict[str, Probs | None], dict[str, str | None], list[float]]:
    """Each case through exod's settler (its device decider abstains, so the larger model is asked): the larger
    model's raw probabilities (``None`` when it failed or timed out), the option the settler acted on (``None``
    when the larger model abstained too) and the seconds each decision took."""
    raws: dict[str, Probs | None] = {}
    chosen: dict[str, str | None] = {}
    spent: list[float] = []
    for case in cases:
        seen.last = None
        started = time.perf_counter()
        decision = await settler.decide(case["text"], "bench", None)
        spent.append(time.perf_counter() - started)
        body = seen.last
        failed = body is None or body.get("failures")
        raws[case["id"]] = None if failed or body is None else dict(body["raw"])
        chosen[case["id"]] = decision.chosen if decision.provider.startswith("laptop:") else None
        if raws[case["id"]] is None:
            print(f"{case['id']}: the larger model gave no probabilities ({body and body.get('failures')})", flush=True)
    return raws, chosen, spent


WARM_TRIES = 6  # calls before the timed ones, at most: a cold server reads the prompt's head in more than 10 s


async def warm(settler: SignalSettler, seen: LargerRaws, case: dict[str, Any]) -> int:
    """Calls before the timed ones until the larger model answers (the pool is read, the server caches the
    head): at one thread the seventh pass's longer head took the server more than exod's 10 s the first time,
    so one call timed out and the next, queued behind it, too. Returns how many calls it took."""
    for tries in range(1, WARM_TRIES + 1):
        raws, _chosen, _spent = await settle_all(settler, seen, [case])
        if raws[case["id"]] is not None:
            return tries
    raise SystemExit(f"the larger model gave no probabilities in {WARM_TRIES} warm-up calls: see the server log")


def _seconds(spent: list[float], limit: float) -> dict[str, Any]:
    ordered = sorted(spent)
    return {
        "median_s": statistics.median(spent),
        "p95_s": ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))],
        "over_timeout": sum(s > limit for s in spent),
        "n": len(spent),
    }


async def over_http(
    port: int,
    cases: list[dict[str, Any]],
    home_dir: Path,
    *,
    paths: tuple[str, ...] = PATHS,
    scored: list[dict[str, Any]] | None = None,
    http_raws: Path | None = None,
    prompt: str = "nn",
    preset: dict[str, Probs] | None = None,
) -> dict[str, Any]:
    """The settler's larger model, through a real server, with and without the chosen examples; with
    ``scored``, that provider's raws on those cases too, with ``prompt``'s examples (``nn``: each shown its
    neighbours, never its own entry), ``preset`` the raws already measured (not asked again)."""
    from exo_core.decisions.signal_escalation import build_signal_settler
    from exo_core.seams.home import ExoHome
    from exo_edge.laptop_server import ServeSettings, device_config, start_server, wait_ready
    from exo_edge.paths import locate_model_file

    path = locate_model_file(MODELS["laptop"][0])
    if path is None:
        raise SystemExit(f"{MODELS['laptop'][0]} is not in the models folder: exo models fetch {ALIAS}")
    settings = ServeSettings(model_path=path, alias=ALIAS, host="127.0.0.1", port=port, threads=1)
    home = ExoHome(home_dir)
    home_dir.mkdir(parents=True, exist_ok=True)
    out: dict[str, Any] = {"server": {"threads": 1, "n_ctx": settings.n_ctx, "alias": ALIAS}}
    proc = start_server(settings, log=home_dir / "server.log", env={**os.environ, "OMP_WAIT_POLICY": "PASSIVE"})
    try:
        started = time.perf_counter()
        wait_ready(settings.base_url, timeout=300.0, proc=proc)
        out["server"]["ready_s"] = time.perf_counter() - started
        for name in paths:
            neighbours = '["larger"]' if name == "http:nn" else "[]"
            config = device_config(settings, advertise="127.0.0.1")
            config += f"\n[decisions]\nneighbours = {neighbours}\n"
            (home_dir / "config.toml").write_text(config, encoding="utf-8")
            seen = LargerRaws()
            settler = build_signal_settler(home, Decider([], recorder=seen))  # every leftover escalates
            try:
                warm_calls = await warm(settler, seen, cases[0])
                raws, chosen, spent = await settle_all(settler, seen, cases)
            finally:
                await settler.aclose()
            out[name] = {"provider": f"laptop:{ALIAS}:chat" + (":nn" if name == "http:nn" else ""), "raws": raws}
            out[name]["decided_uncalibrated"] = sum(option is not None for option in chosen.values())
            out[name]["warm_calls"] = warm_calls  # calls until a cold server first answered within exod's 10 s
            out[name]["seconds"] = _seconds(spent, 10.0)
            print(f"{name}: {out[name]['seconds']}", flush=True)
        if scored:
            out["scored_raws"] = await scored_raws(settings.base_url, scored, http_raws, prompt=prompt, preset=preset)
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    return out


async def scored_raws(
    base_url: str,
    cases: list[dict[str, Any]],
    keep: Path | None,
    *,
    prompt: str = "nn",
    preset: dict[str, Probs] | None = None,
) -> dict[str, Probs]:
    """The settler's provider (``LogprobProvider`` on a router holding the laptop's route alone) on each case:
    with ``prompt`` ``nn`` shown its nearest pool examples as ``NeighbourProvider`` would, leaving out a pooled
    case's own entry; with ``fixed`` the question's own examples. Cases in ``preset`` are not asked."""
    import json

    from benchmarks.bench_decisions_signal import neighbour_examples
    from exo_core.decisions.logprobs import LogprobProvider
    from exo_core.decisions.neighbours import with_examples
    from exo_core.models import ModelRouter, load_catalog

    raws: dict[str, Probs] = {}
    if keep is not None and keep.is_file():
        raws = json.loads(keep.read_text())
    raws.update(preset or {})
    config = {
        "models": {
            "providers": {"laptop": {"kind": "openai", "base_url": base_url, "key_env": []}},
            "roles": {"decision": [f"laptop:{ALIAS}"]},
            "timeouts": {"first_byte": 120.0, "idle": 60.0},
        }
    }
    router = ModelRouter(load_catalog(config, env={}), env={})
    provider = LogprobProvider(router, name=f"laptop:{ALIAS}:chat", timeout=120.0)
    near = neighbour_examples() if prompt == "nn" else None
    pooled = {example.id for example in near.pool.examples()} if near is not None else set()
    todo = [case for case in cases if case["id"] not in raws]
    print(f"scored raws: {len(raws)} kept, {len(todo)} to ask", flush=True)
    try:
        for done, case in enumerate(todo, start=1):
            question = SIGNAL
            if near is not None:
                own = case["id"] if case["id"] in pooled else None
                question = with_examples(SIGNAL, near.choose(case["text"], exclude=own))
            try:
                raws[case["id"]] = dict(await provider.probabilities(question, case["text"]))
            except ExoError as exc:
                print(f"{case['id']} failed: {type(exc).__name__}", flush=True)
            if keep is not None and (done % 20 == 0 or done == len(todo)):
                keep.write_text(json.dumps(raws))
    finally:
        await router.aclose()
    return raws


async def in_process(cases: list[dict[str, Any]]) -> dict[str, Any]:
    """The same 1.5B in this process, chat style, shown each message's nearest examples of the shipped pool."""
    from exo_core.decisions.neighbours import NeighbourProvider
    from exo_edge.decide_local import LocalDecisionProvider, transport_for_file
    from exo_edge.embedder import OnnxEmbedder
    from exo_edge.paths import locate_model_file

    path = locate_model_file(MODELS["laptop"][0])
    embedder = OnnxEmbedder.from_home(threads=1)
    if path is None or embedder is None:
        raise SystemExit("the 1.5B GGUF and the MiniLM embedder are needed: exo models fetch")
    transport = transport_for_file(path, threads=1)
    inner = LocalDecisionProvider(transport, timeout=600.0, style="chat")
    provider = NeighbourProvider(inner, NeighbourExamples(ExamplePool(DEFAULT_SIGNAL_POOL, SIGNAL), embedder=embedder))
    try:
        await provider.warm(SIGNAL)
        raws, spent = await ask_all(provider, cases)
    finally:
        await transport.aclose()
    return {"provider": provider.name, "raws": raws, "seconds": _seconds(spent, 10.0)}


def _tops(raws: dict[str, Probs | None]) -> dict[str, str | None]:
    return {case: (None if found is None else _top(found)) for case, found in raws.items()}


def summary(cases: list[dict[str, Any]], paths: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """Per path: top option right; per pair of paths: agreement of the top option and of the probabilities
    (aggregate numbers only)."""
    out: dict[str, Any] = {}
    for name, found in paths.items():
        tops = _tops(found["raws"])
        out[name] = {
            "top_right": sum(tops[c["id"]] == c["label"] for c in cases) / len(cases),
            "failed": sum(tops[c["id"]] is None for c in cases),
            "answered": {option: sum(tops[c["id"]] == option for c in cases) for option in SIGNAL.options},
            "labels": {option: sum(c["label"] == option for c in cases) for option in SIGNAL.options},
            "seconds": found["seconds"],
        }
        if "decided_uncalibrated" in found:
            out[name]["decided_uncalibrated"] = found["decided_uncalibrated"]
    names = list(paths)
    for i, first in enumerate(names):
        for second in names[i + 1 :]:
            a, b = paths[first]["raws"], paths[second]["raws"]
            both = [c["id"] for c in cases if a[c["id"]] is not None and b[c["id"]] is not None]
            gaps = [abs(a[k][o] - b[k][o]) for k in both for o in SIGNAL.options]
            out[f"{first} = {second}"] = {
                "agree": sum(_top(a[k]) == _top(b[k]) for k in both) / len(cases),
                "mean_abs_diff": sum(gaps) / max(1, len(gaps)),
                "max_abs_diff": max(gaps, default=0.0),
                "n": len(both),
            }
    out["n"] = len(cases)
    return out


def scored_summary(
    sets: dict[str, list[dict[str, Any]]], http: dict[str, Probs], saved: dict[str, Any]
) -> dict[str, Any]:
    """Rules + laptop over HTTP, and rules + local then laptop over HTTP, on the test part and the held-out
    messages, each model calibrated on the fit data it was asked about (the rules' leftovers), next to the
    same systems with the in-process 1.5B (``saved``: the raws file of ``bench_decisions_signal.py``).
    Aggregate numbers only."""
    from benchmarks.bench_decisions_signal import FIT_POOL, _apply, calibrate, escalated, score

    settled = {c["id"]: rule_answer(c["text"]) for part in sets.values() for c in part}
    raws = {"local": saved["raws"]["local"], "laptop-http": http}
    if saved["raws"].get("laptop"):  # the in-process 1.5B's raws, when RAWS holds them (its rows are missing else)
        raws["laptop"] = saved["raws"]["laptop"]

    def fit_rows(which: str) -> list[tuple[Probs, str]]:
        source = raws[which]
        return [
            (source[c["id"]], c["label"])
            for part in FIT_POOL
            for c in sets.get(part, [])
            if c["id"] in source and settled[c["id"]] is None
        ]

    calibrations = {which: calibrate(fit_rows(which)) for which in raws}

    def system(name: str, case: dict[str, Any]) -> Probs | None:
        rule = settled[case["id"]]
        if rule is not None:
            return SIGNAL.rule_probabilities(rule)  # as exod's decider settles it
        larger = "laptop" if "in-process" in name else "laptop-http"
        if case["id"] not in raws.get(larger, {}):
            return None
        second = _apply(calibrations[larger], raws[larger][case["id"]])
        if ", then " not in name:
            return second
        if case["id"] not in raws["local"]:
            return None
        first = _apply(calibrations["local"], raws["local"][case["id"]])
        bar = SIGNAL.threshold if name.endswith(NO_DEFERRAL) else DEFER_BELOW
        return escalated(first, second, bar)

    names = (
        "rules + laptop in-process",
        "rules + laptop over HTTP",
        "rules + local, then laptop in-process",
        "rules + local, then laptop over HTTP",
        "rules + local, then laptop in-process" + NO_DEFERRAL,
        "rules + local, then laptop over HTTP" + NO_DEFERRAL,
    )
    scores: dict[str, Any] = {}
    for name in names:
        scores[name] = {}
        for part in ("test", "heldout"):
            got = [(system(name, c), c["label"]) for c in sets.get(part, [])]
            missing = sum(p is None for p, _ in got)
            if got and not missing:
                scores[name][part] = score([(p, label) for p, label in got if p is not None])
            else:
                scores[name][part] = {"missing": missing}
    return {
        "calibrated_on": list(FIT_POOL),
        "fit_rows": {which: len(fit_rows(which)) for which in raws},
        "calibrations": {which: (found.to_json() if found else None) for which, found in calibrations.items()},
        "http_asked": {part: sum(1 for c in found if c["id"] in http) for part, found in sets.items()},
        "scores": scores,
    }


def print_results(results: dict[str, Any]) -> None:
    """The paths' top options and seconds, then the agreements, then the scored systems (the columns of the
    page's tables; a results file from before the fifth pass has no "decided" and no differences: ``-``)."""
    found = results["summary"]
    rows = []
    for name in ("in-process:nn", "http:nn", "http:fixed"):
        got = found.get(name)
        if got is None:
            continue
        seconds = got["seconds"]
        decided = got.get("decided_uncalibrated")
        rows.append(
            [
                name,
                f"{100 * got['top_right']:.1f}%",
                got["failed"],
                "-" if decided is None else decided,
                round(seconds["median_s"], 2),
                round(seconds["p95_s"], 2),
                seconds["over_timeout"],
                seconds["n"],
            ]
        )
    headers = ["path", "top option right", "no probabilities", "decided (raw ≥ 0.6)", "median s", "p95 s"]
    print_table(
        f"The 1.5B for the signal decision: the {found['n']} test-part messages the rules leave",
        [*headers, "over 10 s", "n"],
        rows,
    )
    agree = []
    for name, got in found.items():
        if " = " not in name:
            continue
        mean, most = got.get("mean_abs_diff"), got.get("max_abs_diff")
        agree.append(
            [
                name,
                f"{100 * got['agree']:.1f}%",
                "-" if mean is None else round(mean, 3),
                "-" if most is None else round(most, 3),
                got.get("n", found["n"]),
            ]
        )
    # No "|" in a header: it would split the Markdown cell (the table was once printed broken that way).
    print_table(
        "Same top option",
        ["paths", "same top option", "mean abs. difference of p", "max abs. difference of p", "n"],
        agree,
    )
    scored = results.get("scored")
    if scored:
        for part in ("test", "heldout"):
            table = []
            for name, by_part in scored["scores"].items():
                got = by_part.get(part, {})
                if "accuracy" not in got:
                    continue
                table.append(score_row(name, got))
            print_table(f"Signal decision, {part}", SCORE_HEADERS, table)


def main(argv: list[str] | None = None) -> int:
    """Run (or print the saved results)."""
    import json

    ap = bench_parser("decisions-http", __doc__.split("\n")[0], quick_help="the first 8 messages; writes nothing")
    ap.add_argument("--markdown", action="store_true")
    ap.add_argument("--port", type=int, default=18093)
    ap.add_argument("--paths", default=",".join(PATHS), help="the settler's paths to run: http:nn, http:fixed")
    ap.add_argument("--scored", type=Path, default=None, help="bench_decisions_signal.py's raws file (in-process)")
    ap.add_argument("--http-raws", type=Path, default=None, help="keep the scored run's HTTP raws here")
    ap.add_argument(
        "--prompt",
        choices=("nn", "fixed"),
        default=default_prompt(),
        help='the HTTP path scored: nn (neighbours = ["larger"]) or fixed (neighbours = []); default: exod\'s',
    )
    ap.add_argument(
        "--fit-raws",
        type=Path,
        default=None,
        help="a study's results file: the fit data's HTTP raws of --fit-job (not asked again)",
    )
    ap.add_argument(
        "--fit-job",
        default=None,
        help="the raws in --fit-raws to take: larger:PROMPT by default (bench_decisions_prompt.py: larger:seventh)",
    )
    ap.add_argument(
        "--heldout",
        type=Path,
        default=HELDOUT,
        help="with --scored: the held-out messages scored as 'heldout' (by default the ninth pass's fifth set)",
    )
    args = ap.parse_args(argv)
    if args.markdown:
        _common.MARKDOWN = True
        print_results(json.loads((args.out or _common.RESULTS_DIR / "decisions_http.json").read_text()))
        return 0
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    cases = sample()
    if args.quick:
        cases = cases[:8]
    paths_run = tuple(name for name in args.paths.split(",") if name)
    unknown = sorted(set(paths_run) - set(PATHS))
    if unknown:
        ap.error(f"--paths: unknown {', '.join(unknown)}; choose from {', '.join(PATHS)}")
    scored_path = f"http:{args.prompt}"
    if args.scored is not None and scored_path not in paths_run:
        paths_run = (*paths_run, scored_path)  # the test part's raws of the scored prompt come from its path
    preset = None
    if args.fit_raws is not None:
        preset = fit_raws(args.fit_raws, args.fit_job or f"larger:{args.prompt}")
    scored_cases = None
    sets: dict[str, list[dict[str, Any]]] = {}
    if args.scored is not None:
        from benchmarks.bench_decisions_signal import FIT_POOL, load_sets

        sets = load_sets(args.heldout)
        scored_cases = [
            c for part in (*FIT_POOL, "heldout") for c in sets.get(part, []) if rule_answer(c["text"]) is None
        ]
    with tempfile.TemporaryDirectory(prefix="exo-http-") as scratch:
        paths = asyncio.run(
            over_http(
                args.port,
                cases,
                Path(scratch) / "home",
                paths=paths_run,
                scored=scored_cases,
                http_raws=args.http_raws,
                prompt=args.prompt,
                preset=preset,
            )
        )
    server = paths.pop("server")
    http = paths.pop("scored_raws", None)
    paths["in-process:nn"] = asyncio.run(in_process(cases))
    results: dict[str, Any] = {
        "benchmark": "decisions_http",
        "machine": machine_info(),
        "omp_wait_policy": os.environ.get("OMP_WAIT_POLICY"),
        "server": server,
        "providers": {name: found["provider"] for name, found in paths.items()},
        "warm_calls": {name: found["warm_calls"] for name, found in paths.items() if "warm_calls" in found},
        "summary": summary(cases, paths),
    }
    if http is not None and args.scored is not None:
        test_http = paths.get(scored_path, {}).get("raws", {})
        merged = {**http, **{case: found for case, found in test_http.items() if found is not None}}
        results["scored"] = scored_summary(sets, merged, json.loads(args.scored.read_text()))
        results["scored"]["prompt"] = args.prompt
        results["scored"]["fit_raws"] = str(args.fit_raws) if args.fit_raws is not None else None
        results["scored"]["fit_job"] = args.fit_job
    write_results("decisions_http", results, out=args.out, quick=args.quick)
    print_results(results)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
