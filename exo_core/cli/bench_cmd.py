"""``exo bench NAME``: run one benchmark.

Every benchmark takes the same flags: ``--quick`` (a small run that writes nothing unless ``--out``),
``--json`` (print the results JSON instead of tables), ``--out FILE`` (write the results there; a full
run's default is ``$EXO_HOME/bench/<name>.json``, the person's own) and ``--update-results`` (a
developer's run that replaces the project's committed ``benchmarks/results/<name>.json``). The modules
of the ``benchmarks`` package take them from one parser (``benchmarks/_common.py`` ``bench_parser``)
and write through one writer (``write_results``); their own arguments follow the name
(``exo bench stress --kill-cycles 50``).
``footprint`` is the audit in ``exo_edge`` and ``retrieval`` the quality scorer in the core; both take
the same three flags (docs/benchmarks.md). Only argparse loads here.
"""

from __future__ import annotations

import argparse
from typing import Any

from exo_core.cli.args import add_command, add_group

__all__ = ["KIT_FOLDERS", "SCRIPTS", "register"]

# ``exo bench NAME`` -> (its module in the ``benchmarks`` package, the one-line help). One table: a new
# benchmark is one row here and one module that starts from ``bench_parser`` (docs/benchmarks.md).
SCRIPTS: dict[str, tuple[str, str]] = {
    "answers": ("bench_store_answers", "questions from the store, general and with a file tool, through exo chat"),
    "answers-base": ("bench_answers", "the local base model's answers before and after the clean-up"),
    "board-ctx": ("bench_board_ctx", "what a board profile's context window costs in memory, per model"),
    "context": ("bench_context", "the context engine: tokens sent per turn and the time to build a turn"),
    "decision-models": ("bench_decisions", "decision models: accuracy and calibration, rules and local model"),
    "decisions": ("bench_decisions_signal", "the signal decision: rules, local model, laptop model"),
    "decisions-http": (
        "bench_decisions_http",
        "the laptop's model for the signal decision over HTTP, as exod reaches it",
    ),
    "decisions-neighbours": ("bench_decisions_neighbours", "the signal decision's examples chosen for the message"),
    "decisions-pool": ("bench_decisions_pool", "the signal decision's example pool, bigger against smaller"),
    "decisions-prompt": ("bench_decisions_prompt", "the signal question's prompt, current against a new one"),
    "decisions-rule-history": ("bench_decisions_rule_history", "how right the signal rules are on later messages"),
    "decisions-sources": (
        "bench_decisions_sources",
        "fixed or chosen examples, leaving one source of the fit data out",
    ),
    "signal-asks": ("bench_signal_asks", "how often the learning question interrupts, and what it still catches"),
    "exod-tools": ("bench_exod_tools", "tool decisions of a local model with exod's real tool list"),
    "fetch": ("bench_fetch", "building the concat models from downloaded wheels, reading GGUF headers"),
    "gate": ("bench_gate", "the shell gate's cost per command line against reading it"),
    "generation": ("bench_generation", "time to first token and tokens/s through exod against direct llama-cpp"),
    "hub": ("bench_hub", "the hub: events appended and delivered per second, and replay"),
    "laptop": ("bench_laptop", "the laptop engine: speed and answers of the 1.5B and 0.5B on llama_cpp.server"),
    "latency": ("bench_latency", "time to first token for each kind of turn, the prompt laid out for reuse or not"),
    "laptop-link": ("bench_laptop_link", "20 questions through exod while the decider and drainer share the engine"),
    "learning": ("bench_learning", "the simulated person through exod: taste inside and outside the catalog"),
    "learning-e2e": ("bench_learning_e2e", "taste and stated facts learned from piped exo chat"),
    "ledger": ("bench_ledger", "durable signed ledger appends, verify() speed and size on disk"),
    "llama-memory": ("bench_llama_memory", "the local model's memory, and what the memory settings cost in speed"),
    "models": ("bench_models", "the local model path (direct, transport, router, SSE) against direct calls"),
    "retrieval-scale": ("bench_retrieval", "retrieval quality, latency and memory at scale, embedding throughput"),
    "sandbox": ("bench_sandbox", "a command started in the tool sandbox against without, and the forms it holds"),
    "startup": ("bench_startup", "exod start-up time, idle memory and import cost against a bare Python"),
    "store": ("bench_store", "store lint, export and item import, each against a baseline"),
    "stress": ("bench_stress", "SIGKILL cycles, fuzzed commands and connection floods against exod"),
    "stt-memory": ("bench_stt_memory", "the device client's speech-to-text memory: resident against a child"),
    "voice": ("bench_voice", "speech-to-text accuracy and the latency of each stage of a spoken question"),
}


# The test kits the benchmarks share with the tests (tests/exo_testkit.py, tests/gate/attack_table.py, ...),
# relative to the checkout: the folders pytest puts on the import path for them.
KIT_FOLDERS = ("tests", "tests/learning", "tests/gate", "tests/device")


def register(sub: argparse._SubParsersAction) -> None:
    """Add ``exo bench`` and its benchmarks."""
    names = add_group(sub, "bench", "run one benchmark", metavar="NAME")
    ret = add_command(names, "retrieval", _retrieval, "retrieval quality on LoCoMo / LongMemEval format files")
    ret.add_argument("--locomo", default=None, metavar="FILE", help="a LoCoMo-format JSON file")
    ret.add_argument("--longmemeval", default=None, metavar="FILE", help="a LongMemEval-format JSON (or .xz) file")
    ret.add_argument(
        "--split",
        default="all",
        choices=("all", "tune", "holdout"),
        help="score every case (default) or one half (docs/retrieval.md)",
    )
    ret.add_argument("--home", default=None, help="Exo home whose model files to use")
    ret.add_argument("--quick", action="store_true", help="the tune half only (as --split tune)")
    ret.add_argument("--json", action="store_true", help="print the metrics as JSON")
    ret.add_argument("--out", default=None, metavar="FILE", help="also write the metrics JSON to this file")
    _passthrough(
        names,
        "footprint",
        _footprint,
        "the scripted device conversation under the memory and core budget",
        "the footprint audit's own arguments (e.g. --json)",
    )
    for name, (script, help_text) in SCRIPTS.items():
        _passthrough(names, name, _script, help_text, f"benchmarks/{script}'s own arguments (--help lists them)")


def _passthrough(names: Any, name: str, handler: Any, help_text: str, args_help: str) -> None:
    """A benchmark whose own arguments follow its name, handed over untouched (``exo bench stress --json``)."""
    parser = names.add_parser(name, help=help_text, add_help=False)
    parser.add_argument("args", nargs=argparse.REMAINDER, help=args_help)
    parser.set_defaults(handler=handler, passthrough=name)


def _footprint(args: argparse.Namespace) -> int:
    from exo_core.edge import installed_edge
    from exo_core.errors import ConfigError

    run = installed_edge().footprint
    if run is None:
        raise ConfigError("the footprint audit is part of exo_edge, which is not installed in this core")
    return run(args.args)


# Where the benchmark's data sets usually are: a checkout's sibling shared/ folder (docs/benchmarks.md).
_DATASET_GLOBS = {"--locomo": "locomo*/*.json", "--longmemeval": "longmemeval*/*.json*"}


def _no_dataset_message() -> str:
    """What to pass, naming the data files found near the working folder (LoCoMo / LongMemEval format)."""
    from pathlib import Path

    found: list[str] = []
    for root in (Path.cwd() / "shared" / "data", Path.cwd().parent / "shared" / "data", Path.cwd() / "data"):
        for flag, pattern in _DATASET_GLOBS.items():
            found.extend(f"{flag} {path}" for path in sorted(root.glob(pattern)))
    usage = "give --locomo FILE and/or --longmemeval FILE (LoCoMo / LongMemEval format, docs/retrieval.md)"
    if not found:
        return usage + "; no such files were found under ./shared/data, ../shared/data or ./data"
    return usage + "; found here: " + "; ".join(found)


def _script(args: argparse.Namespace) -> int:
    """Run ``python -m benchmarks.<module>`` of this source checkout with the arguments after the name."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    from exo_core.errors import NotFoundError

    module, _help = SCRIPTS[args.passthrough]
    checkout = Path(__file__).resolve().parents[2]
    source = checkout / "benchmarks" / f"{module}.py"
    if not source.is_file():
        raise NotFoundError(f"{source} is missing: this benchmark runs from a source checkout")
    # The checkout's code first, so a benchmark measures this tree rather than an installed copy; then
    # the test kits a few benchmarks share with the tests, found as pytest finds them.
    folders = [checkout, *(checkout / kit for kit in KIT_FOLDERS)]
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([*(str(folder) for folder in folders), *filter(None, [env.get("PYTHONPATH")])])
    return subprocess.call([sys.executable, "-m", f"benchmarks.{module}", *args.args], env=env)


def _retrieval(args: argparse.Namespace) -> int:
    """Score retrieval on LoCoMo / LongMemEval format files (docs/retrieval.md)."""
    import json
    from pathlib import Path

    from exo_core.edge import installed_edge
    from exo_core.errors import ConfigError, UsageError
    from exo_core.seams.home import ExoHome

    if not args.locomo and not args.longmemeval:
        raise UsageError(_no_dataset_message())
    bench = installed_edge().retrieval_bench
    if bench is None:
        raise ConfigError("the retrieval benchmark needs exo_edge and numpy installed")
    locomo = Path(args.locomo) if args.locomo else None
    longmemeval = Path(args.longmemeval) if args.longmemeval else None
    which = args.split
    if args.quick:
        which = "tune"
    try:
        out = bench(ExoHome.from_env(args.home), locomo=locomo, longmemeval=longmemeval, which=which)
    except ImportError as exc:
        raise ConfigError("the retrieval benchmark needs exo_edge and numpy installed") from exc
    if args.out is not None:
        # The core ships without benchmarks/, so this one write is here rather than in write_results.
        target = Path(args.out)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(json.dumps(out, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    if args.json:
        print(json.dumps(out, indent=2))
        return 0
    for dataset, systems in out.items():
        for system, metrics in systems.items():
            print(dataset, system, json.dumps(metrics))
    return 0
