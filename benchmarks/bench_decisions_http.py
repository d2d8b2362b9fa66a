"""The laptop's model for the signal decision over HTTP, as exod reaches it, against the same model in-process.

exod asks the larger model (``[decisions] larger``: the first ``main`` route off the device, the laptop's
engine) through ``exo_core.decisions.signal_escalation.build_signal_settler``: a router holding only that
route, ``HostedProvider`` (one option letter, temperature 0, at most two tokens; raw confidence 0.9),
wrapped in ``NeighbourProvider`` when ``[decisions] neighbours`` names ``"larger"``. This script starts a
real ``python -m llama_cpp.server`` on a loopback port serving the 1.5B (one thread, as ``exo models
serve`` starts it), builds that settler on a scratch home whose config is what ``exo models serve
--print-config`` prints plus ``neighbours = ["larger"]``, and asks it about a sample of the labelled set's
test part, with the chosen examples and with the fixed ones. Then, the server stopped, the same 1.5B
in-process (``LocalDecisionProvider``, chat style: the option words' next-token probabilities, with the
message's nearest pool examples) on the same messages. Reported: the top option of each path, how often
they agree and are right (aggregate only), and the seconds per decision (median, p95, how many past exod's
10 s ``larger_timeout``). Never the held-out messages.

    python benchmarks/bench_decisions_http.py --port 18093 --out benchmarks/results/decisions_http.json
"""

from __future__ import annotations

import asyncio
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import _common  # noqa: E402
from _common import bench_parser, machine_info, print_table, write_results  # noqa: E402
from bench_decisions import load_cases, split_by_time  # noqa: E402
from bench_decisions_signal import MODELS, rule_answer  # noqa: E402

from exo_core.decisions import Decider  # noqa: E402
from exo_core.decisions.neighbours import DEFAULT_SIGNAL_POOL, ExamplePool, NeighbourExamples  # noqa: E402
from exo_core.decisions.question import DecisionProvider  # noqa: E402
from exo_core.decisions.signal_escalation import SignalSettler  # noqa: E402
from exo_core.decisions.uses import SIGNAL  # noqa: E402
from exo_core.errors import ExoError  # noqa: E402

ALIAS = "qwen2.5-coder-1.5b-instruct"
Probs = dict[str, float]


def sample() -> list[dict[str, Any]]:
    """The labelled set's test part (signal cases) that the rules leave: what exod asks the larger model about."""
    _fit, test = split_by_time(load_cases())
    return [c for c in test if c["use"] == "signal" and rule_answer(c["text"]) is None]


def _top(found: Probs) -> str:
    return max(SIGNAL.options, key=lambda option: found[option])


async def ask_all(provider: DecisionProvider, cases: list[dict[str, Any]]) -> tuple[dict[str, str | None], list[float]]:
    """Each case's top option from ``provider`` (``None`` when it failed) and the seconds each call took."""
    tops: dict[str, str | None] = {}
    spent: list[float] = []
    for case in cases:
        started = time.perf_counter()
        try:
            tops[case["id"]] = _top(dict(await provider.probabilities(SIGNAL, case["text"])))
        except ExoError as exc:  # a failed call is counted, and the run goes on
            print(f"{provider.name}: {case['id']} failed: {type(exc).__name__}: {exc}", flush=True)
            tops[case["id"]] = None
        spent.append(time.perf_counter() - started)
    return tops, spent


async def settle_all(settler: SignalSettler, cases: list[dict[str, Any]]) -> tuple[dict[str, str | None], list[float]]:
    """Each case through exod's settler (its device decider abstains, so the larger model is asked): the larger
    model's option (``None`` when it failed or timed out) and the seconds each decision took."""
    tops: dict[str, str | None] = {}
    spent: list[float] = []
    for case in cases:
        started = time.perf_counter()
        decision = await settler.decide(case["text"], "bench", None)
        spent.append(time.perf_counter() - started)
        tops[case["id"]] = decision.chosen if decision.provider.startswith("laptop:") else None
        if tops[case["id"]] is None:
            print(f"{case['id']}: not decided by the larger model ({decision.failures})", flush=True)
    return tops, spent


def _seconds(spent: list[float], limit: float) -> dict[str, Any]:
    ordered = sorted(spent)
    return {
        "median_s": statistics.median(spent),
        "p95_s": ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))],
        "over_timeout": sum(s > limit for s in spent),
        "n": len(spent),
    }


async def over_http(port: int, cases: list[dict[str, Any]], home_dir: Path) -> dict[str, Any]:
    """The settler's larger model, through a real server, with and without the chosen examples."""
    from exo_core.decisions.signal_escalation import build_signal_settler
    from exo_core.home import ExoHome
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
        for name, neighbours in (("http:nn", '["larger"]'), ("http:fixed", "[]")):
            config = device_config(settings, advertise="127.0.0.1")
            config += f"\n[decisions]\nneighbours = {neighbours}\n"
            (home_dir / "config.toml").write_text(config, encoding="utf-8")
            settler = build_signal_settler(home, Decider([]))  # no device provider: every leftover escalates
            try:
                await settle_all(settler, cases[:1])  # the first call reads the pool and warms the server
                tops, spent = await settle_all(settler, cases)
            finally:
                await settler.aclose()
            out[name] = {"provider": f"laptop:{ALIAS}" + (":nn" if name == "http:nn" else ""), "tops": tops}
            out[name]["seconds"] = _seconds(spent, 10.0)
            print(f"{name}: {out[name]['seconds']}", flush=True)
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    return out


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
        tops, spent = await ask_all(provider, cases)
    finally:
        await transport.aclose()
    return {"provider": provider.name, "tops": tops, "seconds": _seconds(spent, 10.0)}


def summary(cases: list[dict[str, Any]], paths: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """Per path: top option right; per pair of paths: agreement (aggregate numbers only)."""
    left = {c["id"] for c in cases if rule_answer(c["text"]) is None}
    out: dict[str, Any] = {}
    for name, found in paths.items():
        tops = found["tops"]
        out[name] = {
            "top_right": sum(tops[c["id"]] == c["label"] for c in cases) / len(cases),
            "top_right_rules_leftovers": sum(tops[c["id"]] == c["label"] for c in cases if c["id"] in left)
            / max(1, len(left)),
            "failed": sum(tops[c["id"]] is None for c in cases),
            "answered": {option: sum(tops[c["id"]] == option for c in cases) for option in SIGNAL.options},
            "labels": {option: sum(c["label"] == option for c in cases) for option in SIGNAL.options},
            "seconds": found["seconds"],
        }
    names = list(paths)
    for i, first in enumerate(names):
        for second in names[i + 1 :]:
            a, b = paths[first]["tops"], paths[second]["tops"]
            out[f"{first} = {second}"] = {
                "agree": sum(a[c["id"]] == b[c["id"]] for c in cases) / len(cases),
                "agree_rules_leftovers": sum(a[c["id"]] == b[c["id"]] for c in cases if c["id"] in left)
                / max(1, len(left)),
            }
    out["n"] = len(cases)
    out["n_rules_leftovers"] = len(left)
    return out


def print_results(results: dict[str, Any]) -> None:
    """The paths' top options and seconds, then the agreements."""
    found = results["summary"]
    rows = []
    for name in ("in-process:nn", "http:nn", "http:fixed"):
        got = found.get(name)
        if got is None:
            continue
        seconds = got["seconds"]
        rows.append(
            [
                name,
                f"{100 * got['top_right']:.1f}%",
                f"{100 * got['top_right_rules_leftovers']:.1f}%",
                got["failed"],
                round(seconds["median_s"], 2),
                round(seconds["p95_s"], 2),
                seconds["over_timeout"],
            ]
        )
    print_table(
        f"The 1.5B for the signal decision: test part, {found['n']} messages "
        f"({found['n_rules_leftovers']} the rules leave)",
        ["path", "top option right", "on the rules' leftovers", "failed", "median s", "p95 s", "over 10 s"],
        rows,
    )
    agree = [
        [name, f"{100 * got['agree']:.1f}%", f"{100 * got['agree_rules_leftovers']:.1f}%"]
        for name, got in found.items()
        if " = " in name
    ]
    print_table("Same top option", ["paths", "all", "on the rules' leftovers"], agree)


def main(argv: list[str] | None = None) -> int:
    """Run (or print the saved results)."""
    ap = bench_parser("decisions_http", __doc__.split("\n")[0], quick_help="the first 8 messages; writes nothing")
    ap.add_argument("--markdown", action="store_true")
    ap.add_argument("--port", type=int, default=18093)
    args = ap.parse_args(argv)
    if args.markdown:
        _common.MARKDOWN = True
        import json

        print_results(json.loads((args.out or _common.RESULTS_DIR / "decisions_http.json").read_text()))
        return 0
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    cases = sample()
    if args.quick:
        cases = cases[:8]
    with tempfile.TemporaryDirectory(prefix="exo-http-") as scratch:
        paths = asyncio.run(over_http(args.port, cases, Path(scratch) / "home"))
    server = paths.pop("server")
    paths["in-process:nn"] = asyncio.run(in_process(cases))
    results = {
        "benchmark": "decisions_http",
        "machine": machine_info(),
        "omp_wait_policy": os.environ.get("OMP_WAIT_POLICY"),
        "server": server,
        "providers": {name: found["provider"] for name, found in paths.items()},
        "summary": summary(cases, paths),
    }
    write_results("decisions_http", results, out=args.out, quick=args.quick)
    print_results(results)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
