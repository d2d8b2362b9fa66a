"""The simulated person through a real exod, learning taste inside and outside the feature catalog.

    python benchmarks/bench_learning.py [--sessions 12] [--drafts 8] [--seeds 7,8,9] [--json]
    exo bench learning [same arguments]

Each seed runs ``tests/learning/exod_person.py``: a real exod (``exo serve``) whose ``main`` role is an
assistant server that drafts with style features on at random and follows the pack it is shown, whose
``[learning] route`` is the larger model's stand-in server (``tests/learning/larger_model.py``), and a
simulated person who asks for drafts and corrects them in chat messages ("No, that's wrong: drop the
TL;DR line."). Hidden rules: 8 catalog features and 5 lines the catalog does not know (one guarded:
offering to post to the team channel). The signal decision, the reviewer, the proposal queue and its
drainer are exod's own. Reported per seed and pooled: precision and recall of high-weight lessons
(weight >= 0.75) for catalog and non-catalog rules separately (goal >= 0.9 / >= 0.8), guarded lessons
promoted without the person (goal: none). Results go to benchmarks/results/learning.json with --json.

    python benchmarks/bench_learning.py --engine qwen2.5-coder-1.5b-instruct [--json]

asks a real model on ``python -m llama_cpp.server`` (started as ``exo models serve`` does, 1 thread) the
reflection question for each of the 5 non-catalog corrections, through the router and the queue's own
prompt (``prompt_for``), and counts the answers the learner would keep (``parse_reflection`` and
``usable``); with --json to benchmarks/results/learning_engine_<model>.json.
"""

from __future__ import annotations

import asyncio
import json
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
for extra in (ROOT, ROOT / "tests", ROOT / "tests" / "learning"):
    sys.path.insert(0, str(extra))

from benchmarks._common import bench_parser, write_results  # noqa: E402
from exod_person import run  # noqa: E402  # the simulation lives with the tests that run its small version


def engine_check(name: str) -> dict[str, object]:
    """The reflection answers of a real model on its engine for the 5 non-catalog corrections."""
    import socket

    from exod_person import GUARDED, NONCATALOG
    from simperson import render

    from exo_core.agent.model import TextDelta
    from exo_core.learning.reflected import parse_reflection, unexplained_lines, usable
    from exo_core.models import load_catalog
    from exo_core.models.router import ModelRouter
    from exo_edge.laptop_server import ServeSettings, resolve_model, start_server, wait_ready
    from exo_edge.proposal_queue import Job, prompt_for

    path, alias = resolve_model(name)
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = int(sock.getsockname()[1])
    settings = ServeSettings(path, alias, port=port, threads=1, n_ctx=2048)
    proc = start_server(settings, log=Path(tempfile.gettempdir()) / f"bench-learning-{alias}.log")
    rows = []
    try:
        wait_ready(settings.base_url, proc=proc, timeout=600)
        config = {"providers": {"laptop": {"kind": "openai", "base_url": settings.base_url, "key_env": []}}}
        router = ModelRouter(load_catalog({"models": {**config, "roles": {"main": [f"laptop:{alias}"]}}}, env={}))

        async def ask() -> None:
            for key, (line, said) in {**NONCATALOG, **GUARDED}.items():
                draft = render("answer", frozenset({"preamble"})) + "\n\n" + line
                inputs = {"explain": key, "verdict": "reject", "draft": draft, "after": "", "reason": said}
                inputs["removed"] = unexplained_lines(draft, "", [])
                text = ""
                async for chunk in router.stream(prompt_for(Job(0, key, "reflect", inputs, "queued", 0))):
                    if isinstance(chunk, TextDelta):
                        text += chunk.text
                parsed = parse_reflection(text)
                why = "unparsed" if parsed is None else (usable(parsed[1], inputs) or "kept")
                rows.append({"rule": key, "outcome": why, "answer": text[:300]})
                print(f"{key}: {why} | {text[:120]!r}", flush=True)
            await router.aclose()

        asyncio.run(ask())
    finally:
        proc.terminate()
        proc.wait(30)
    kept = sum(1 for r in rows if r["outcome"] == "kept")
    print(f"{alias}: {kept} of {len(rows)} answers kept")
    return {"model": alias, "kept": kept, "asked": len(rows), "rows": rows}


def main(argv: list[str] | None = None) -> int:
    parser = bench_parser(
        "learning", __doc__.split("\n")[0], quick_help="the first seed only; writes nothing unless --out"
    )
    parser.add_argument("--sessions", type=int, default=12)
    parser.add_argument("--drafts", type=int, default=8)
    parser.add_argument("--seeds", default="7,8,9")
    parser.add_argument("--engine", default=None, metavar="MODEL", help="only ask a real model the reflections")
    args = parser.parse_args(argv)
    if args.engine:
        checked = engine_check(args.engine)
        if args.json:
            print(json.dumps(checked, indent=2, sort_keys=True))
        write_results(f"learning_engine_{checked['model']}", checked, out=args.out, quick=args.quick)
        return 0
    seeds = [int(s) for s in args.seeds.split(",")]
    if args.quick:
        seeds = seeds[:1]
    runs = []
    for seed in seeds:
        with tempfile.TemporaryDirectory() as tmp:
            result = asyncio.run(run(Path(tmp), sessions=args.sessions, drafts=args.drafts, seed=seed))
        result.pop("lessons", None)
        runs.append(result)
        cat, non = result["catalog"], result["noncatalog"]
        print(
            f"seed {seed}: catalog P {cat['precision']:.2f} R {cat['recall']:.2f} | non-catalog P "
            f"{non['precision']:.2f} R {non['recall']:.2f} (strays {len(non['strays'])}) | guarded promoted "
            f"unasked {len(result['guarded_promoted_unasked'])} | larger-model calls {result['larger_model_calls']} "
            f"| corrected share {result['corrected_share_first_third']:.2f} -> "
            f"{result['corrected_share_last_third']:.2f} | {result['seconds']:.0f} s",
            flush=True,
        )
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
    settings = {"sessions": args.sessions, "drafts": args.drafts, "seeds": ",".join(str(s) for s in seeds)}
    data = {"args": settings, "mean": pooled, "runs": runs}
    if args.json:
        print(json.dumps(data, indent=2, sort_keys=True))
    write_results("learning", data, out=args.out, quick=args.quick)
    goal = all(p["precision"] >= 0.9 and p["recall"] >= 0.8 for p in pooled.values()) and guarded == 0
    return 0 if goal else 1


if __name__ == "__main__":
    raise SystemExit(main())
