"""Tool decisions of a local model with exod's real tool list and narrower offers, same run.

    python -m benchmarks.bench_exod_tools [--json] [--model NAME] [--dev]

``--model`` picks the manifest (default the Gemma 3 270M base model;
``qwen2.5-coder-0.5b-instruct`` is the chat-template model, whose tools go in
its own ``<tool_call>`` format and whose proposed calls the core judges,
:mod:`exo_core.agent.grounding`). For a chat model each row records the
call-opening token's probability, the call the model proposed and the judge's
verdict instead of the raw heads. ``--dev`` adds the **dev** part: requests
written while choosing the chat path's rules (:data:`DEV_REQUESTS`); the
**exod** requests are held out, never tuned on. Results go to
$EXO_HOME/bench/exod_tools.json (Gemma) or exod_tools_<model>.json.

The agent loop offers the local model every built-in tool plus ``ask_person``
(nine tools), under exod's system prompt (``BASE_PROMPT`` and the store
template's pack). ``exo bench footprint`` showed the Gemma 3 270M model
calling ``ask_person`` with ``{"question": "text"}`` for "What is the weather
like tomorrow?" and ``edit_file`` for "Please delete my notes file": it copies
the tools block's worked examples (all ``CALL`` answers, placeholder values).

One transport (the manifest's ``[prompt]``, greedy) answers every request with
each tool offer, narrowed as the toolset decision narrows it
(``ToolRegistry.view``): **all** (what exod offers with
``decisions.toolsets = false``, the default), **core+shell** and **shell**.

Parts: **exod**, requests that should act (the tool named) and questions that
should stay text, under exod's system prompt; and **bench**, the tool part of
``bench_models`` (its three tools, its person's notes), for comparison. For
each request: the first ``DECIDE_TOKENS`` greedy tokens with no stop (the
raw call/text head), the first 16 (``intent``: the tool name the model
writes before the grammar forces an offered one) and what the transport
returned. Results go to
$EXO_HOME/bench/exod_tools.json.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

from benchmarks._common import bench_parser, write_results
from benchmarks.bench_answers import ask
from benchmarks.bench_models import NO_TOOL, PERSON, TOOL_REQUESTS, TOOLS
from exo_core.agent.loop import BASE_PROMPT
from exo_core.retrieval.memory import PACK_HEADING
from exo_core.seams.model import ChatMessage

ROOT = Path(__file__).resolve().parents[1]


PACK = ROOT / "store_template" / "pack.md"
CLEAN = ROOT / "benchmarks" / "data" / "exod_tools_clean.json"
INTENT_TOKENS = 16
# (request, the tool that should answer it; None: it should stay text)
EXOD_REQUESTS: list[tuple[str, str | None]] = [
    ("Please delete my notes file, notes.txt.", "delete_file"),
    ("Delete the file old.log.", "delete_file"),
    ("Run the command ls.", "bash"),
    ("Run the tests with pytest.", "bash"),
    ("Write 'buy milk' to the file todo.txt.", "write_file"),
    ("Create a file hello.txt that says hi.", "write_file"),
    ("Show me what is in todo.md.", "read_file"),
    ("Read the file notes.txt.", "read_file"),
    ("What is the weather like tomorrow?", None),
    ("What is the capital of France?", None),
    ("How are you today?", None),
    ("What is two plus two?", None),
    ("Tell me a short joke.", None),
    ("Who wrote Hamlet?", None),
]


# Development requests for the chat path (text vs call), kept apart from EXOD_REQUESTS, which measure it.
DEV_REQUESTS: list[tuple[str, str | None]] = [
    ("Open shopping.md and show me what it says.", "read_file"),
    ("What's in the file config.toml?", "read_file"),
    ("Run git status.", "bash"),
    ("List the files here with ls -la.", "bash"),
    ("Save 'call mum' into reminders.txt.", "write_file"),
    ("Remove the file draft.tmp.", "delete_file"),
    ("What is the boiling point of water?", None),
    ("Translate 'good morning' into Spanish.", None),
    ("Who painted the Mona Lisa?", None),
    ("What is 12 times 3?", None),
    ("Give me one tip for sleeping better.", None),
    ("What can you help me with?", None),
    ("Hello!", None),
    ("Explain what a file system is.", None),
]


def clean_requests() -> list[tuple[str, str | None]]:
    """The clean held-out set (benchmarks/data/exod_tools_clean.README.md): written after
    EXOD_REQUESTS had been studied, before the chat path's candidate and intent rules were changed."""
    records = json.loads(CLEAN.read_text())
    return [(r["q"], r["want"]) for r in records]


OFFERS: dict[str, tuple[str, ...] | None] = {"all": None, "core+shell": ("core", "shell"), "shell": ("shell",)}


def exod_tools(toolsets: tuple[str, ...] | None = None) -> tuple[dict[str, Any], ...]:
    """The tools the agent loop offers: ``builtin_tools()`` plus ``ask_person`` (as the engine
    adds it), narrowed to ``toolsets`` as the loop narrows them (``None``: every tool)."""
    from exo_core.agent.questions import AskPersonTool
    from exo_core.tools import builtin_tools

    reg = builtin_tools()
    reg.add(AskPersonTool(None))  # type: ignore[arg-type]  # only its spec is read
    offered = reg if toolsets is None else reg.view(toolsets)
    return tuple(s.to_model() for s in offered.specs())


def head_text(llm: Any, prompt: str, n: int) -> str:
    """The first ``n`` greedy tokens of the answer, with no stop and no grammar (the raw head)."""
    out = llm.create_completion(prompt, max_tokens=n, temperature=0.0)
    return str(out["choices"][0]["text"])


async def part(
    transport: Any, fmt: Any, system: str, tools: tuple[dict[str, Any], ...], requests: list[tuple[str, str | None]]
) -> dict[str, Any]:
    """One format through one request list: right calls, stayed text, each row."""
    from exo_edge.llama_completion import DECIDE_TOKENS
    from exo_edge.prompting import render_completion

    rows, right, any_call, stayed = [], 0, 0, 0
    for q, want in requests:
        messages = (ChatMessage("system", system), ChatMessage("user", q))
        row: dict[str, Any] = {"q": q, "want": want}
        if fmt.format == "completion":
            prompt = render_completion(messages, fmt, tools)
            row["head"] = await transport.run_exclusive(lambda llm: head_text(llm, prompt, DECIDE_TOKENS))
            # longer, still without a grammar: the tool name the model means, offered or not
            row["intent"] = await transport.run_exclusive(lambda llm: head_text(llm, prompt, INTENT_TOKENS))
        text, calls, _ = await ask(transport, fmt, messages, tools, 48)
        decision = transport.last_decision if fmt.format == "chat" else None
        if decision is not None:
            proposed = decision.proposed
            row["call_share"] = None if decision.call_share is None else round(decision.call_share, 4)
            row["proposed"] = None if proposed is None else {"name": proposed.name, "arguments": proposed.arguments}
            row["verdict"] = decision.verdict
            row["bidden"] = list(decision.bidden)
            row["head"] = f"p(call)={row['call_share']} {row['proposed'] or ''}"
        right += want is not None and calls[:1] == [want]
        any_call += want is not None and bool(calls)
        stayed += want is None and not calls
        rows.append(row | {"calls": calls, "text": text.strip()})
    acts = sum(w is not None for _, w in requests)
    return {
        "right_call": right,
        "any_call": any_call,
        "of_requests": acts,
        "stayed_text": stayed,
        "of_questions": len(requests) - acts,
        "rows": rows,
    }


async def run(
    model: str = "gemma-3-270m",
    dev: bool = False,
    threads: int = 2,
    offers: tuple[str, ...] = tuple(OFFERS),
    bench_part: bool = True,
    clean: bool = False,
) -> dict[str, Any]:
    from exo_edge.llama_transport import LlamaSettings, LlamaTransport
    from exo_edge.manifest import find_manifest
    from exo_edge.paths import locate_model_file

    manifest = find_manifest(model)
    path = locate_model_file(manifest.primary_file.name)
    if path is None or manifest.prompt is None:
        raise SystemExit(f"model not fetched: run `exo models fetch {model}` first")
    fmt = manifest.prompt
    settings = LlamaSettings(model_path=path, prompt=manifest.prompt, n_threads=threads, n_ctx=4096, name=manifest.name)
    transport = LlamaTransport(settings)
    system = BASE_PROMPT + "\n\n" + PACK_HEADING + "\n" + PACK.read_text().strip()  # as StoreMemory writes it
    bench_requests = [*TOOL_REQUESTS, *((q, None) for q in NO_TOOL)]
    t0 = time.perf_counter()
    out: dict[str, Any] = {
        "prompt": dataclasses.asdict(fmt),
        "tools": {
            **{f"exod {k}": [t["name"] for t in exod_tools(v)] for k, v in OFFERS.items()},
            "bench": [t["name"] for t in TOOLS],
        },
        "parts": {},
    }
    out["model"] = model
    if dev:
        out["parts"]["dev"] = await part(transport, fmt, system, exod_tools(), DEV_REQUESTS)
    if clean:
        out["parts"]["clean"] = await part(transport, fmt, system, exod_tools(), clean_requests())
    for label in offers:
        out["parts"][f"exod {label}"] = await part(transport, fmt, system, exod_tools(OFFERS[label]), EXOD_REQUESTS)
    if bench_part:
        out["parts"]["bench"] = await part(transport, fmt, PERSON, TOOLS, bench_requests)
    out["seconds"] = round(time.perf_counter() - t0, 1)
    await transport.aclose()
    return out


def main() -> int:
    ap = bench_parser(
        "exod-tools",
        __doc__.split("\n")[0],
        quick_help="the first offer only, without the bench_models part; writes nothing unless --out",
    )
    ap.add_argument("--model", default="gemma-3-270m", help="manifest name (default gemma-3-270m)")
    ap.add_argument("--dev", action="store_true", help="also run the development requests (DEV_REQUESTS)")
    ap.add_argument("--threads", type=int, default=2, help="llama.cpp threads (default 2)")
    ap.add_argument(
        "--offers",
        nargs="*",
        choices=tuple(OFFERS),
        default=list(OFFERS),
        help="tool offers to run (none: no exod part, e.g. --dev alone)",
    )
    ap.add_argument("--no-bench-part", action="store_true", help="leave out the bench_models part")
    ap.add_argument("--clean", action="store_true", help="also run the clean held-out set (data/exod_tools_clean.json)")
    args = ap.parse_args()
    offers = tuple(args.offers)
    bench_part = not args.no_bench_part
    if args.quick:
        offers = offers[:1]
        bench_part = False
    out = asyncio.run(run(args.model, args.dev, args.threads, offers, bench_part, args.clean))
    flags = "" if args.model == "gemma-3-270m" else f" --model {args.model}"
    out = {
        "command": f"exo bench exod-tools{flags}{' --dev' if args.dev else ''}{' --clean' if args.clean else ''}",
        "machine": {"cpus": os.cpu_count(), "loadavg_1m": round(os.getloadavg()[0], 2)},
        **out,
    }
    if args.json:
        print(json.dumps(out, indent=2, sort_keys=True))
    else:
        for name, r in out["parts"].items():
            print(
                f"{name:15} right call {r['right_call']}/{r['of_requests']} "
                f"(any call {r['any_call']}), stayed text {r['stayed_text']}/{r['of_questions']}"
            )
            for row in r["rows"]:
                print(
                    f"    {row['q'][:44]:44} want {str(row['want']):10} head {row.get('head', '')!r:28} "
                    f"-> {row['calls'] or row['text'][:30]!r}"
                )
        print(f"{out['seconds']} s")
    name = "exod_tools" if args.model == "gemma-3-270m" else f"exod_tools_{args.model}"
    written = write_results(name, out, out=args.out, quick=args.quick)
    if written is not None:
        print(f"wrote {written}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
