"""``exo bench NAME``: run one benchmark.

``exo bench retrieval --locomo F --longmemeval F --json``,
``exo bench footprint [--json]``, ``exo bench stress [--kill-cycles N ...]``,
``exo bench laptop [--json] [--quick]``, ``exo bench generation [--json]``,
``exo bench decisions [--markdown ...]``, ``exo bench learning [--seeds ...]``,
``exo bench learning-e2e [--json]`` and ``exo bench answers [--board B --json]`` (their own
arguments follow the name). Only argparse loads here.
"""

from __future__ import annotations

import argparse
from typing import Any

from exo_core.cli.args import add_command, add_group


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
    ret.add_argument("--json", action="store_true", help="print the metrics as JSON")
    _passthrough(
        names,
        "footprint",
        _footprint,
        "the scripted device conversation under the memory and core budget",
        "the footprint audit's own arguments (e.g. --json)",
    )
    _passthrough(
        names,
        "stress",
        _stress,
        "SIGKILL cycles, fuzzed commands and connection floods against exod",
        "benchmarks/bench_stress.py's own arguments",
    )
    _passthrough(
        names,
        "decisions",
        _decisions,
        "the signal decision: rules, local model, laptop model (issue 21)",
        "bench_decisions_signal.py's own arguments",
    )
    _passthrough(
        names,
        "laptop",
        _laptop,
        "the laptop engine: speed and answers of the 1.5B and 0.5B on llama_cpp.server",
        "bench_laptop.py's own arguments (e.g. --json)",
    )
    _passthrough(
        names,
        "answers",
        _answers,
        "questions from the store, general and with a file tool, through exo chat",
        "benchmarks/bench_store_answers.py's own arguments",
    )
    _passthrough(
        names,
        "learning",
        _learning,
        "the simulated person through exod: taste learned inside and outside the feature catalog",
        "bench_learning.py's own arguments (e.g. --seeds 7,8,9 --json)",
    )
    _passthrough(
        names,
        "learning-e2e",
        _learning_e2e,
        "taste and stated facts learned from piped exo chat sessions with the local model (issue 22)",
        "benchmarks/bench_learning_e2e.py's own arguments (e.g. --json --asks 3)",
    )
    _passthrough(
        names,
        "generation",
        _generation,
        "time to first token and tokens/s through exod against direct llama-cpp-python",
        "the benchmark's own arguments (e.g. --json)",
    )


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


def _run_script(script_name: str, args: argparse.Namespace) -> int:
    """Run ``benchmarks/<script_name>`` of this source checkout with the remaining arguments."""
    import subprocess
    import sys
    from pathlib import Path

    from exo_core.errors import NotFoundError

    script = Path(__file__).resolve().parents[2] / "benchmarks" / script_name
    if not script.is_file():
        raise NotFoundError(f"{script} is missing: this benchmark runs from a source checkout")
    return subprocess.call([sys.executable, str(script), *args.args])


def _stress(args: argparse.Namespace) -> int:
    """SIGKILL cycles, fuzzed commands and idle floods (docs/security.md, docs/benchmarks.md)."""
    return _run_script("bench_stress.py", args)


def _answers(args: argparse.Namespace) -> int:
    """Answers from the store, general and with a file tool, through exo chat (docs/benchmarks.md §15, issue 18)."""
    return _run_script("bench_store_answers.py", args)


def _learning_e2e(args: argparse.Namespace) -> int:
    """Taste and stated facts learned through exod and piped exo chat, with the local model (issue 22)."""
    return _run_script("bench_learning_e2e.py", args)


def _generation(args: argparse.Namespace) -> int:
    """First token and tokens/s through exod against direct llama-cpp-python (docs/benchmarks.md)."""
    return _run_script("bench_generation.py", args)


def _learning(args: argparse.Namespace) -> int:
    """The simulated person through exod, catalog and non-catalog rules (docs/benchmarks.md, issue 22)."""
    return _run_script("bench_learning.py", args)


def _decisions(args: argparse.Namespace) -> int:
    """Accuracy, calibration and latency of the signal decision (docs/benchmarks.md §7b, issue 21)."""
    return _run_script("bench_decisions_signal.py", args)


def _laptop(args: argparse.Namespace) -> int:
    """The laptop engine: the 1.5B and 0.5B on llama_cpp.server (docs/benchmarks.md)."""
    return _run_script("bench_laptop.py", args)


def _retrieval(args: argparse.Namespace) -> int:
    import json
    from pathlib import Path

    from exo_core.edge import installed_edge
    from exo_core.errors import ConfigError, UsageError
    from exo_core.home import ExoHome

    if not args.locomo and not args.longmemeval:
        raise UsageError(_no_dataset_message())
    bench = installed_edge().retrieval_bench
    if bench is None:
        raise ConfigError("the retrieval benchmark needs exo_edge and numpy installed")
    locomo = Path(args.locomo) if args.locomo else None
    longmemeval = Path(args.longmemeval) if args.longmemeval else None
    try:
        out = bench(ExoHome.from_env(args.home), locomo=locomo, longmemeval=longmemeval, which=args.split)
    except ImportError as exc:
        raise ConfigError("the retrieval benchmark needs exo_edge and numpy installed") from exc
    if args.json:
        print(json.dumps(out, indent=2))
        return 0
    for dataset, systems in out.items():
        for system, metrics in systems.items():
            print(dataset, system, json.dumps(metrics))
    return 0
