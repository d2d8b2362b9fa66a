"""The simulated person through a real exod, learning taste inside and outside the feature catalog.

    python -m benchmarks.bench_learning [--sessions 12] [--drafts 8] [--seeds 7,8,9] [--json]
    exo bench learning [same arguments]

Each seed runs ``tests/learning/exod_person.py``: a real exod (``exo serve``) whose ``main`` role is an
assistant server that drafts with style features on at random and follows the pack it is shown, whose
``[learning] route`` is the larger model's stand-in server (``tests/learning/larger_model.py``), and a
simulated person who asks for drafts and corrects them in chat messages ("No, that's wrong: drop the
TL;DR line."). Hidden rules: 8 catalog features and 5 lines the catalog does not know (one guarded:
offering to post to the team channel). The signal decision, the reviewer, the proposal queue and its
drainer are exod's own. Reported per seed and pooled: precision and recall of high-weight lessons
(weight >= 0.75) for catalog and non-catalog rules separately (goal >= 0.9 / >= 0.8), guarded lessons
promoted without the person (goal: none). A full run writes $EXO_HOME/bench/learning.json (--update-results: benchmarks/results/).

    python -m benchmarks.bench_learning --engine qwen2.5-coder-1.5b-instruct [--cases dev,heldout,old] [--json]

asks a real model on ``python -m llama_cpp.server`` (1 thread) which line each correction outside the
catalog is about, through the queue's own request, and scores the lessons the learner keeps against
hand-written expected ones (``benchmarks/bench_learning_engine.py``, ``benchmarks/data/reflection_cases.json``);
to $EXO_HOME/bench/learning_engine_<model>.json.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import tempfile
from pathlib import Path
from typing import Any

from exod_person import run

from benchmarks._common import bench_parser, write_results

ROOT = Path(__file__).resolve().parents[1]


def _one_seed(args: argparse.Namespace, seed: int, route: tuple[int, str] | None) -> dict[str, Any]:
    """One seed's simulation in a fresh folder; its line printed."""
    from exod_person import _EXTRA, lines_from_cases

    settle = 900.0 if route is not None else 60.0  # a real model on one shared core answers in minutes
    extra = _EXTRA
    if args.noncatalog != "sim":
        extra = lines_from_cases(ROOT / "benchmarks" / "data" / "reflection_cases.json", args.noncatalog)
    with tempfile.TemporaryDirectory() as tmp:
        result = asyncio.run(
            run(
                Path(tmp),
                sessions=args.sessions,
                drafts=args.drafts,
                seed=seed,
                route=route,
                settle_s=settle,
                extra=extra,
            )
        )
    result.pop("lessons", None)
    cat, non = result["catalog"], result["noncatalog"]
    print(
        f"seed {seed}: catalog P {cat['precision']:.2f} R {cat['recall']:.2f} | non-catalog P "
        f"{non['precision']:.2f} R {non['recall']:.2f} (strays {len(non['strays'])}) | guarded promoted "
        f"unasked {len(result['guarded_promoted_unasked'])} | larger-model calls {result['larger_model_calls']} "
        f"| corrected share {result['corrected_share_first_third']:.2f} -> "
        f"{result['corrected_share_last_third']:.2f} | {result['seconds']:.0f} s",
        flush=True,
    )
    return result


def main(argv: list[str] | None = None) -> int:
    parser = bench_parser(
        "learning", __doc__.split("\n")[0], quick_help="the first seed only; writes nothing unless --out"
    )
    parser.add_argument("--sessions", type=int, default=12)
    parser.add_argument("--drafts", type=int, default=8)
    parser.add_argument("--seeds", default="7,8,9")
    parser.add_argument("--engine", default=None, metavar="MODEL", help="only ask a real model the reflections")
    parser.add_argument(
        "--cases", default="dev,heldout,old", help="with --engine: which reflection cases (dev, heldout, old)"
    )
    parser.add_argument(
        "--route-engine",
        default=None,
        metavar="MODEL",
        help="the simulation with a real model on llama_cpp.server as the [learning] route, not the stand-in",
    )
    parser.add_argument(
        "--noncatalog",
        choices=("sim", "dev", "heldout"),
        default="sim",
        help="the hidden rules outside the catalog: the simulation's five, or the reflection cases' rejections",
    )
    args = parser.parse_args(argv)
    if args.engine:
        from benchmarks.bench_learning_engine import SPLITS, engine_check

        splits = tuple(s for s in args.cases.split(",") if s in SPLITS)
        checked = engine_check(args.engine, splits)
        if args.json:
            print(json.dumps(checked, indent=2, sort_keys=True))
        write_results(f"learning_engine_{checked['model']}", checked, out=args.out, quick=args.quick)
        return 0
    seeds = [int(s) for s in args.seeds.split(",")]
    if args.quick:
        seeds = seeds[:1]
    runs = []
    with contextlib.ExitStack() as stack:
        route = None
        if args.route_engine:
            from benchmarks.bench_learning_engine import serving

            port, alias, _url = stack.enter_context(serving(args.route_engine))
            route = (port, alias)
        for seed in seeds:
            runs.append(_one_seed(args, seed, route))
    pooled = {}
    for group in ("catalog", "noncatalog"):
        pooled[group] = {
            "precision": sum(r[group]["precision"] for r in runs) / len(runs),
            "recall": sum(r[group]["recall"] for r in runs) / len(runs),
        }
    guarded = sum(len(r["guarded_promoted_unasked"]) for r in runs)
    print(
        f"mean over {len(runs)} seeds: catalog P {pooled['catalog']['precision']:.2f} R "
        f"{pooled['catalog']['recall']:.2f}; non-catalog P {pooled['noncatalog']['precision']:.2f} R "
        f"{pooled['noncatalog']['recall']:.2f}; guarded promoted unasked: {guarded}"
    )
    settings: dict[str, Any] = {
        "sessions": args.sessions,
        "drafts": args.drafts,
        "seeds": ",".join(str(s) for s in seeds),
    }
    data = {"args": settings, "mean": pooled, "runs": runs}
    name = "learning"
    if route is not None:
        settings["route"] = route[1]
        name = f"learning_route_{route[1]}"
    if args.noncatalog != "sim":
        settings["noncatalog"] = args.noncatalog
        name = f"{name}_{args.noncatalog}"
    if args.json:
        print(json.dumps(data, indent=2, sort_keys=True))
    write_results(name, data, out=args.out, quick=args.quick)
    goal = all(p["precision"] >= 0.9 and p["recall"] >= 0.8 for p in pooled.values()) and guarded == 0
    return 0 if goal else 1


if __name__ == "__main__":
    raise SystemExit(main())
