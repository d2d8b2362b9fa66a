"""Benchmark: the context engine — tokens sent per turn, and the time to build one turn's input.

Usage::

    python benchmarks/bench_context.py [--quick] [--json] [--out PATH] [--messages N] [--markdown [PATH]]

A session of ``--messages`` messages (default 1,000; 200 with ``--quick``) is
grown turn by turn in a real ``sessions.sqlite``: a person's message, then
the assistant's reply (every fifth reply also calls a tool, whose result is a
longer block of output). Texts are generated from a fixed seed, with lengths
typical of chat (person 40-240 characters, assistant 200-900, tool output
600-2,400).

Before each reply, the input for that model call is built twice, in the same
run, from the same messages:

* **tree**: :class:`~exo_core.context.engine.SummaryTreeContext` with the
  design's defaults (tail 12, leaves of 8, 6,000-token view budget) and the
  deterministic scripted summarizer (its calls take no model time, so the
  timing is the engine's own: database, settling, planning, rendering);
* **baseline**: :class:`~exo_core.agent.seams.VerbatimContext`, the full
  transcript.

Tokens are estimated as characters / 4 for both. Reported: tokens sent on the
last turn and summed over all turns, the ratio tree / full transcript, the
largest tree input, and the build time per turn (median and p95). Then, with
the session complete and every summary finished, the steady-state time to
build one turn's input is measured ``--repeat`` times for each.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import benchmarks._common as common  # noqa: E402
from benchmarks._common import RESULTS_DIR, machine_info, median, print_table, ratio, write_results  # noqa: E402

NAME = "context"


def _text(rng: random.Random, low: int, high: int, words: list[str]) -> str:
    target = rng.randint(low, high)
    out: list[str] = []
    size = 0
    while size < target:
        word = rng.choice(words)
        out.append(word)
        size += len(word) + 1
    return " ".join(out)


def _p95(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(0.95 * (len(ordered) - 1))))]


async def run(messages: int, repeat: int, tmp: Path) -> dict[str, Any]:
    from exo_core.agent.seams import VerbatimContext
    from exo_core.context.config import ContextConfig
    from exo_core.context.engine import SummaryTreeContext
    from exo_core.context.scripted import ScriptedSummarizer
    from exo_core.context.view import input_tokens
    from exo_core.sessions import DbWorker, SessionStore

    rng = random.Random(1234)
    words = [
        "the",
        "file",
        "config",
        "deploy",
        "error",
        "path",
        "/srv/app/main.py",
        "branch",
        "push",
        "review",
        "test",
        "timeout",
        "value",
        "42",
        "user",
        "draft",
        "email",
        "meeting",
        "tomorrow",
        "because",
        "fixed",
        "failing",
        "exit",
        "code",
        "1",
        "README.md",
        "commit",
        "short",
        "again",
        "please",
        "check",
        "done",
    ]
    cfg = ContextConfig()
    async with DbWorker(tmp / "sessions.sqlite", synchronous="NORMAL") as worker:
        store = SessionStore(worker)
        session = (await worker.run(lambda: store.create_session(title="bench"))).id
        summarizer = ScriptedSummarizer()
        tree = SummaryTreeContext(worker=worker, summarizer=summarizer, config=cfg)
        verbatim = VerbatimContext()
        system = "You are Exo, a personal assistant. Answer briefly and plainly."
        per_turn: list[dict[str, Any]] = []
        count = 0
        turn = 0
        while count < messages:
            text = _text(rng, 40, 240, words)
            await worker.run(lambda: store.add_message(session, "user", text))
            count += 1
            history = await worker.run(lambda: store.messages(session))
            t0 = time.perf_counter()
            sent = await tree.build(session, system, history)
            t1 = time.perf_counter()
            full = await verbatim.build(session, system, history)
            t2 = time.perf_counter()
            per_turn.append(
                {
                    "messages": len(history),
                    "tree_tokens": input_tokens(sent),
                    "full_tokens": input_tokens(full),
                    "tree_ms": (t1 - t0) * 1000,
                    "full_ms": (t2 - t1) * 1000,
                }
            )
            turn += 1
            if count < messages and turn % 5 == 0 and count + 3 <= messages:
                call = {"id": f"call_{turn}", "name": "bash", "arguments": {"command": "make test"}}
                reply = _text(rng, 40, 160, words)
                output = _text(rng, 600, 2400, words)
                await worker.run(lambda: store.add_message(session, "assistant", reply, tool_calls=[call]))
                await worker.run(lambda: store.add_message(session, "tool", output, tool_call_id=call["id"]))
                count += 2
            if count < messages:
                answer = _text(rng, 200, 900, words)
                await worker.run(lambda: store.add_message(session, "assistant", answer))
                count += 1
        history = await worker.run(lambda: store.messages(session))
        steady_tree: list[float] = []
        steady_full: list[float] = []
        for _ in range(repeat):
            t0 = time.perf_counter()
            await tree.build(session, system, history)
            t1 = time.perf_counter()
            await verbatim.build(session, system, history)
            t2 = time.perf_counter()
            steady_tree.append((t1 - t0) * 1000)
            steady_full.append((t2 - t1) * 1000)
        plan = await tree.view(session, history)
        nodes = await worker.run(
            lambda: worker.connection.execute(
                "SELECT level, COUNT(*) FROM summary_nodes WHERE session_id = ? GROUP BY level", (session,)
            ).fetchall()
        )
        await tree.close()
    last = per_turn[-1]
    tree_total = sum(t["tree_tokens"] for t in per_turn)
    full_total = sum(t["full_tokens"] for t in per_turn)
    return {
        "messages": len(history),
        "turns": len(per_turn),
        "tokens": {
            "last_turn_tree": last["tree_tokens"],
            "last_turn_full": last["full_tokens"],
            "last_turn_ratio": ratio(last["tree_tokens"], last["full_tokens"]),
            "all_turns_tree": tree_total,
            "all_turns_full": full_total,
            "all_turns_ratio": ratio(tree_total, full_total),
            "max_turn_tree": max(t["tree_tokens"] for t in per_turn),
            "view_summary_tokens": plan.summary_tokens,
            "view_budget": cfg.view_budget,
        },
        "build_ms_per_turn": {
            "tree_median": median([t["tree_ms"] for t in per_turn]),
            "tree_p95": _p95([t["tree_ms"] for t in per_turn]),
            "full_median": median([t["full_ms"] for t in per_turn]),
            "full_p95": _p95([t["full_ms"] for t in per_turn]),
        },
        "steady_build_ms": {
            "repeat": repeat,
            "tree_median": median(steady_tree),
            "full_median": median(steady_full),
            "ratio": ratio(median(steady_tree), median(steady_full)),
        },
        "summaries": {
            "calls": summarizer.calls,
            "nodes_by_level": {str(level): n for level, n in nodes},
            "view_elements": [e.kind for e in plan.elements].count("summary"),
        },
        "curve": [
            {"messages": t["messages"], "tree_tokens": t["tree_tokens"], "full_tokens": t["full_tokens"]}
            for t in per_turn[:: max(1, len(per_turn) // 20)]
        ],
    }


def report(data: dict[str, Any]) -> None:
    r = data["result"]
    t, b, s = r["tokens"], r["build_ms_per_turn"], r["steady_build_ms"]
    print_table(
        f"Tokens sent per turn over a {r['messages']}-message session ({r['turns']} turns)",
        ["measure", "summary tree", "full transcript", "ratio"],
        [
            ["last turn", t["last_turn_tree"], t["last_turn_full"], t["last_turn_ratio"]],
            ["all turns", t["all_turns_tree"], t["all_turns_full"], t["all_turns_ratio"]],
            ["largest turn", t["max_turn_tree"], t["last_turn_full"], ratio(t["max_turn_tree"], t["last_turn_full"])],
        ],
    )
    print_table(
        "Time to build one turn's input (ms)",
        ["measure", "summary tree", "verbatim", "ratio"],
        [
            ["per turn, median", b["tree_median"], b["full_median"], ratio(b["tree_median"], b["full_median"])],
            ["per turn, p95", b["tree_p95"], b["full_p95"], ratio(b["tree_p95"], b["full_p95"])],
            [f"steady, median of {s['repeat']}", s["tree_median"], s["full_median"], s["ratio"]],
        ],
    )
    print(
        f"\nview summaries {t['view_summary_tokens']} tokens (budget {t['view_budget']}); "
        f"{r['summaries']['calls']} summarizer calls; nodes by level {r['summaries']['nodes_by_level']}"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="200 messages, 3 repeats: proves the code works")
    parser.add_argument("--json", action="store_true", help="print the results JSON instead of tables")
    parser.add_argument(
        "--markdown",
        type=Path,
        nargs="?",
        const=RESULTS_DIR / f"{NAME}.json",
        default=None,
        help="print Markdown tables from a results file (default benchmarks/results/context.json)",
    )
    parser.add_argument("--messages", type=int, default=None, help="session length (default 1000; quick 200)")
    parser.add_argument("--repeat", type=int, default=None, help="steady-state builds to time (default 20)")
    parser.add_argument(
        "--out",
        type=Path,
        default=None,
        help="results file (default benchmarks/results/context.json; quick runs write only here)",
    )
    args = parser.parse_args(argv)
    if args.markdown is not None:
        common.MARKDOWN = True
        report(json.loads(args.markdown.read_text(encoding="utf-8")))
        return 0
    messages = args.messages or (200 if args.quick else 1000)
    repeat = args.repeat or (3 if args.quick else 20)
    with tempfile.TemporaryDirectory(prefix="exo-bench-context-") as tmp:
        started = time.perf_counter()
        result = asyncio.run(run(messages, repeat, Path(tmp)))
        data = {
            "benchmark": NAME,
            "quick": args.quick,
            "machine": machine_info(Path(tmp)),
            "result": result,
            "seconds": round(time.perf_counter() - started, 2),
        }
    write_results(NAME, data, out=args.out, quick=args.quick)
    if args.json:
        print(json.dumps(data, indent=2, sort_keys=True))
    else:
        report(data)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
