"""Benchmark: the context engine — tokens sent per turn, and the time to build one turn's input.

Usage::

    python -m benchmarks.bench_context [--quick] [--json] [--out PATH] [--messages N] [--markdown [PATH]]
    python -m benchmarks.bench_context --window [GGUF] [--n-ctx N] [--turns N] [--quick] [--json] [--out PATH]

``--window`` (docs/context.md, "Sized to the model") runs a session of
``--turns`` turns (default 200) through the real core (loop, summary-tree
engine, memory seam, exod's tools, a ``read_file`` of a 20 KB file every
fifth turn) with a model that declares the real local model's window and
counts with its tokenizer (the GGUF is loaded; nothing is generated: replies
are scripted). Every call's prompt is measured by the real tokenizer and
checked against ``n_ctx``; reported: prompt tokens per call, calls over the
window (sized and, as the baseline, what the engine alone would have sent),
and the time spent counting. Results go to ``context_window.json``.

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
import os
import random
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import benchmarks._common as common
from benchmarks._common import RESULTS_DIR, bench_parser, machine_info, median, print_table, ratio, write_results

NAME = "context"
WINDOW_NAME = "context_window"
DEFAULT_MODEL = Path.home() / ".cache" / "exo" / "models" / "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf"

_WORDS = [
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
    from exo_core.sessions import AsyncSessions, DbWorker

    rng = random.Random(1234)
    words = _WORDS
    cfg = ContextConfig()
    async with DbWorker(tmp / "sessions.sqlite", synchronous="NORMAL") as worker:
        sessions = AsyncSessions(worker)
        session = (await sessions.create_session(title="bench")).id
        summarizer = ScriptedSummarizer()
        tree = SummaryTreeContext(worker=worker, summarizer=summarizer, config=cfg)
        verbatim = VerbatimContext()
        system = "You are Exo, a personal assistant. Answer briefly and plainly."
        per_turn: list[dict[str, Any]] = []
        count = 0
        turn = 0
        while count < messages:
            text = _text(rng, 40, 240, words)
            await sessions.add_message(session, "user", text)
            count += 1
            history = await sessions.messages(session)
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
                await sessions.add_message(session, "assistant", reply, tool_calls=[call])
                await sessions.add_message(session, "tool", output, tool_call_id=call["id"])
                count += 2
            if count < messages:
                answer = _text(rng, 200, 900, words)
                await sessions.add_message(session, "assistant", answer)
                count += 1
        history = await sessions.messages(session)
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


# -- the window mode: a session sized to a real local model's window and tokenizer -------------------


class _TimedCounter:
    """The real model's counter, timed (the cost of sizing each call)."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.seconds = 0.0

    async def count(self, texts: Any) -> list[int]:
        t0 = time.perf_counter()
        try:
            return await self.inner.count(texts)
        finally:
            self.seconds += time.perf_counter() - t0

    async def measure(self, request: Any) -> int:
        t0 = time.perf_counter()
        try:
            return await self.inner.measure(request)
        finally:
            self.seconds += time.perf_counter() - t0


class _SizedByLlama:
    """Answers from a script but declares the real model's window and tokenizer, and checks every call.

    It plugs in through the model seam (a :class:`WindowedTransport`); the
    loop, the context engine, the memory seam and the tools are exod's own.
    Generation is left out so a 200-turn session takes minutes, not hours: the
    input of each call is what this measures.
    """

    def __init__(self, llama: Any, rng: random.Random, words: list[str]) -> None:
        self.llama = llama
        self.counter: _TimedCounter | None = None
        self.rng = rng
        self.words = words
        self.calls: list[dict[str, Any]] = []
        self.baseline: Any = None  # async () -> tokens the unfitted input of this call would have

    async def context_window(self, role: str) -> Any:
        from dataclasses import replace

        window = await self.llama.context_window(role)
        if self.counter is None:
            self.counter = _TimedCounter(window.counter)
        return replace(window, counter=self.counter)

    async def stream(self, request: Any) -> Any:
        from exo_core.seams.model import Finish, TextDelta, ToolCall, ToolCallChunk, UsageChunk

        prompt = await self.llama.counter.measure(request)
        unfitted = await self.baseline() if self.baseline is not None else 0
        n_ctx = self.llama.settings.n_ctx
        self.calls.append(
            {
                "prompt": prompt,
                "max_tokens": request.max_tokens,
                "fits": prompt + request.max_tokens <= n_ctx,
                "unfitted": unfitted,
                "unfitted_fits": unfitted + request.max_tokens <= n_ctx,
            }
        )
        last = request.messages[-1]
        if last.role == "user" and last.content.startswith("please read"):
            yield ToolCallChunk(ToolCall(f"call_{len(self.calls)}", "read_file", {"path": "notes.txt"}))
            yield UsageChunk(input_tokens=prompt, output_tokens=12)
            yield Finish("tool_calls")
            return
        yield TextDelta(_text(self.rng, 200, 900, self.words))
        yield UsageChunk(input_tokens=prompt, output_tokens=100)
        yield Finish("end")


class _Memory:
    """A pack and notes recalled for each message, through the memory seam (as the store's retrieval gives them)."""

    def __init__(self, words: list[str]) -> None:
        self.pack = "# About the person\n" + "\n".join(
            f"- {k}: lives near {words[k % len(words)]}, works on {words[(k * 7) % len(words)]}" for k in range(24)
        )
        self.words = words

    async def system_block(self, session_id: str, text: str) -> str:
        parts = await self.system_parts(session_id, text)
        return parts.pack + "\n" + "\n".join(parts.recalled)

    async def system_parts(self, session_id: str, text: str) -> Any:
        from exo_core.agent.seams import MemoryParts
        from exo_core.retrieval.memory import RECALL_HEADING

        notes = tuple(
            f"[node-{k}] " + " ".join(self.words[(k + i) % len(self.words)] for i in range(30)) for k in range(6)
        )
        return MemoryParts(pack=self.pack, recalled=notes, heading=RECALL_HEADING)

    async def on_exchange(self, session_id: str, user_text: str, answer: str) -> None:
        return None


async def run_window(turns: int, n_ctx: int, model_path: Path, tmp: Path) -> dict[str, Any]:
    """A ``turns``-turn session through the real core, sized to ``model_path``'s window (real tokenizer)."""
    import json as _json

    from exo_core.agent.loop import LoopSettings
    from exo_core.context.scripted import ScriptedSummarizer
    from exo_core.engine.core import Core, CoreOptions
    from exo_core.seams.home import ExoHome
    from exo_core.seams.model import ModelRequest
    from exo_core.tools import builtin_tools
    from exo_edge.llama_transport import LlamaSettings, LlamaTransport
    from exo_edge.manifest import PromptFormat

    words = _WORDS
    rng = random.Random(99)
    llama = LlamaTransport(
        LlamaSettings(
            model_path=model_path, prompt=PromptFormat(format="chat"), n_ctx=n_ctx, n_threads=1, name=model_path.stem
        )
    )
    t0 = time.perf_counter()
    await llama.load()
    load_seconds = time.perf_counter() - t0
    model = _SizedByLlama(llama, random.Random(5), words)
    memory = _Memory(words)
    ws = tmp / "ws"
    ws.mkdir()
    (ws / "notes.txt").write_text(_text(random.Random(3), 20000, 24000, words) + "\nEND OF NOTES\n", encoding="utf-8")
    options = CoreOptions(
        workspace=ws, synchronous="NORMAL", summarizer=ScriptedSummarizer(), memory=memory, tools=builtin_tools()
    )
    settings = LoopSettings()
    async with Core.open(ExoHome(tmp / "home"), model=model, options=options) as core:
        session = (await core.sessions.create_session(title="bench")).id
        tools = tuple(s.to_model() for s in core.deps.tools.specs())

        async def baseline() -> int:
            history = await core.sessions.messages(session)
            block = await memory.system_block(session, history[-1].content if history else "")
            built = await core.context.build(session, settings.base_prompt + "\n\n" + block, history)
            return await llama.counter.measure(ModelRequest(messages=tuple(built), tools=tools))

        model.baseline = baseline
        sub = core.hub.subscribe(0)
        errors: list[str] = []
        compacted = 0
        started = time.perf_counter()
        for n in range(turns):
            if n % 5 == 4:
                text = f"please read notes.txt and tell me what changed ({n})"
            else:
                text = f"turn {n}: " + _text(rng, 200, 1500, words)
            result = await core.engine.handle_raw(
                {"id": str(n), "type": "turn.send", "body": {"session": session, "text": text}}
            )
            turn_id = result.result["turn_id"]
            while True:
                item = await sub.next(timeout=120)
                if item is None:
                    raise RuntimeError(f"turn {n} did not complete")
                event = _json.loads(item.data)
                if event["type"] == "context.compacted":
                    compacted += 1
                if event["type"] == "turn.completed" and event["body"]["turn_id"] == turn_id:
                    if event["body"]["error"]:
                        errors.append(event["body"]["error"])
                    break
        seconds = time.perf_counter() - started
        sub.close()
    await llama.aclose()
    calls = model.calls
    if not calls:
        raise SystemExit(f"no model call was made; the turns failed: {errors[:3]}")
    prompts = [c["prompt"] for c in calls]
    return {
        "model": model_path.name,
        "n_ctx": n_ctx,
        "turns": turns,
        "calls": len(calls),
        "errors": errors,
        "overflows": sum(1 for c in calls if not c["fits"]),
        "unfitted_overflows": sum(1 for c in calls if not c["unfitted_fits"]),
        "answer_room": calls[-1]["max_tokens"] if calls else 0,
        "tokens_per_call": {
            "median": median(prompts),
            "p95": _p95(prompts),
            "max": max(prompts),
            "last": prompts[-1],
            "unfitted_median": median([c["unfitted"] for c in calls]),
            "unfitted_max": max(c["unfitted"] for c in calls),
        },
        "compacted_events": compacted,
        "sizing_ms_per_call": round(1000 * (model.counter.seconds if model.counter else 0.0) / max(1, len(calls)), 2),
        "session_seconds": round(seconds, 2),
        "load_seconds": round(load_seconds, 2),
        "curve": [{"call": i, "prompt": c["prompt"], "unfitted": c["unfitted"]} for i, c in enumerate(calls)][
            :: max(1, len(calls) // 20)
        ],
    }


def report_window(data: dict[str, Any]) -> None:
    r = data["result"]
    t = r["tokens_per_call"]
    print_table(
        f"A {r['turns']}-turn session in {r['model']}'s window (n_ctx {r['n_ctx']}; answer room {r['answer_room']})",
        ["measure", "sized to the window", "unfitted (engine alone)"],
        [
            ["model calls", r["calls"], r["calls"]],
            ["calls over the window", r["overflows"], r["unfitted_overflows"]],
            ["prompt tokens per call, median", t["median"], t["unfitted_median"]],
            ["prompt tokens per call, p95", t["p95"], ""],
            ["prompt tokens per call, max", t["max"], t["unfitted_max"]],
            ["prompt tokens, last call", t["last"], ""],
        ],
    )
    print(
        f"\nturn errors {len(r['errors'])}; context.compacted events {r['compacted_events']}; sizing "
        f"(counting with the real tokenizer) {r['sizing_ms_per_call']} ms a call; session {r['session_seconds']} s"
    )


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
    parser = bench_parser(
        "context", __doc__.split("\n\n")[0], quick_help="200 messages, 3 repeats: proves the code works"
    )
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
        "--window",
        type=Path,
        nargs="?",
        const=DEFAULT_MODEL,
        default=None,
        metavar="GGUF",
        help="size a session to this local model's window with its real tokenizer (default: the Qwen 0.5B)",
    )
    parser.add_argument("--n-ctx", type=int, default=2048, help="the model's window in --window mode (default 2048)")
    parser.add_argument("--turns", type=int, default=None, help="turns in --window mode (default 200; quick 30)")
    args = parser.parse_args(argv)
    if args.markdown is not None:
        common.MARKDOWN = True
        data = json.loads(args.markdown.read_text(encoding="utf-8"))
        if data["benchmark"] == WINDOW_NAME:
            report_window(data)
        else:
            report(data)
        return 0
    if args.window is not None:
        return _main_window(args)
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


def _main_window(args: argparse.Namespace) -> int:
    if not args.window.is_file():
        print(f"no model file at {args.window}; run `exo models fetch` (or pass --window PATH)", file=sys.stderr)
        return 2
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    turns = args.turns or (30 if args.quick else 200)
    with tempfile.TemporaryDirectory(prefix="exo-bench-window-") as tmp:
        started = time.perf_counter()
        result = asyncio.run(run_window(turns, args.n_ctx, args.window, Path(tmp)))
        data = {
            "benchmark": WINDOW_NAME,
            "quick": args.quick,
            "machine": machine_info(Path(tmp)),
            "result": result,
            "seconds": round(time.perf_counter() - started, 2),
        }
    write_results(WINDOW_NAME, data, out=args.out, quick=args.quick)
    if args.json:
        print(json.dumps(data, indent=2, sort_keys=True))
    else:
        report_window(data)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
