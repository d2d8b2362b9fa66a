"""The laptop's model on its engine: speed and answers of Qwen2.5-Coder 1.5B and 0.5B, same run.

    python -m benchmarks.bench_laptop [--json] [--quick] [--threads 2] [--models 1.5b,0.5b]
    exo bench laptop [same arguments]

For each model, ``python -m llama_cpp.server`` is started the way ``exo models
serve`` starts it (:mod:`exo_edge.laptop_server`: the GGUF's chat template,
``OMP_WAIT_POLICY=PASSIVE``) on a free loopback port, and every request goes
through the device's own path to it: the :class:`~exo_core.models.ModelRouter`
with ``main = laptop:<model>`` and the OpenAI-compatible transport (SSE, tool
calls in Qwen's ``<tool_call>`` text taken out by ``TextCallFilter``). Every
request is sent under exod's system prompt with exod's real tools offered
(``builtin_tools()`` + ``ask_person``, as ``bench_exod_tools`` does), at
temperature 0:

* **general**: 10 fixed questions with one checkable answer each (right: the
  expected word in the text and no tool call);
* **tools**: ``bench_exod_tools``'s 8 requests that should call a named tool
  (right: that tool first) and 6 questions that should stay text (right: no
  call, and no text that is a call gone wrong: ``"name"`` and ``"arguments"``
  in it, a call in a shape that was not recognised or naming no offered tool).

``--rescore FILE`` scores a saved results file again with these rules (no model is run).

Speed, per model: time to the first streamed piece and the decode rate (completion tokens from the
stream's usage when the server sends it, else streamed pieces, one token each on llama_cpp.server,
over the time from the first piece to the last) on the general questions, medians; the server's
peak RSS. The 0.5B is the baseline of the ratios. The prompts were not tuned on these questions.
A full run writes $EXO_HOME/bench/laptop.json (--update-results: benchmarks/results/).
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import statistics
import sys
import time
from pathlib import Path
from typing import Any

from benchmarks._common import bench_parser, machine_info, print_table, proc_memory_kb, write_results
from benchmarks.bench_exod_tools import EXOD_REQUESTS, exod_tools
from exo_core.agent.loop import BASE_PROMPT
from exo_core.seams.model import ChatMessage, ModelRequest, TextDelta, ToolCallChunk, UsageChunk

ROOT = Path(__file__).resolve().parents[1]


MODELS = {
    "1.5b": ("qwen2.5-coder-1.5b-instruct", "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"),
    "0.5b": ("qwen2.5-coder-0.5b-instruct", "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf"),
}
# (question, a regular expression the right answer matches, case-insensitive)
GENERAL: list[tuple[str, str]] = [
    ("What is the capital of France?", r"\bParis\b"),
    ("Who wrote Romeo and Juliet?", r"Shakespeare"),
    ("What is 12 times 12?", r"\b144\b"),
    ("Translate 'thank you' into Spanish.", r"gracias"),
    ("What is the largest planet in our solar system?", r"Jupiter"),
    ("What is the chemical symbol for gold?", r"\bAu\b"),
    ("How many days are in a leap year?", r"\b366\b"),
    ("What language is spoken in Brazil?", r"Portuguese"),
    ("At what temperature in Celsius does water boil at sea level?", r"\b100\b"),
    ("Who painted the Mona Lisa?", r"Leonardo|da Vinci"),
]


async def ask(router: Any, question: str, tools: tuple[dict[str, Any], ...], max_tokens: int) -> dict[str, Any]:
    """One request through the router: the text, the calls, and when the pieces came."""
    request = ModelRequest(
        messages=(ChatMessage("system", BASE_PROMPT), ChatMessage("user", question)),
        tools=tools,
        max_tokens=max_tokens,
        temperature=0.0,
    )
    start = time.perf_counter()
    first = last = None
    pieces, text, calls, tokens = 0, [], [], None
    async for chunk in router.stream(request):
        now = time.perf_counter()
        if isinstance(chunk, (TextDelta, ToolCallChunk)):
            first = now if first is None else first
            last = now
        if isinstance(chunk, TextDelta):
            pieces += 1
            text.append(chunk.text)
        elif isinstance(chunk, ToolCallChunk):
            calls.append(chunk.call.name)
        elif isinstance(chunk, UsageChunk) and chunk.output_tokens:
            tokens = chunk.output_tokens
    end = time.perf_counter()
    generated = tokens if tokens is not None else pieces
    rate = None
    if first is not None and last is not None and last > first and generated > 1:
        rate = (generated - 1) / (last - first)
    return {
        "q": question,
        "text": "".join(text).strip(),
        "calls": calls,
        "first_s": None if first is None else round(first - start, 3),
        "total_s": round(end - start, 3),
        "tokens": generated,
        "tokens_per_s": None if rate is None else round(rate, 2),
    }


def _not_judged(call: Any, messages: Any, tools: Any) -> Any:
    """A judge that accepts every call: ``--no-judge``, the engine's own decisions (the baseline)."""
    from exo_core.agent.grounding import Grounding

    return Grounding(True, "not judged (--no-judge)")


async def bench_model(
    name: str, base_url: str, general: list[tuple[str, str]], requests: list[Any], *, judged: bool = True
) -> dict[str, Any]:
    """The general and tool sets against one served model."""
    from exo_core.models import ModelRouter, load_catalog

    config = {
        "models": {
            "providers": {"laptop": {"kind": "openai", "base_url": base_url, "key_env": []}},
            "roles": {"main": [f"laptop:{name}"]},
            "timeouts": {"first_byte": 600.0, "idle": 600.0},
        }
    }
    from exo_edge.hosted import HostedTransports

    catalog = load_catalog(config, env={})
    # the core's judge on the engine's calls (docs/models.md, "Text or a tool call"), or none for the baseline
    if judged:
        hosted = HostedTransports(catalog.timeouts)
    else:
        hosted = HostedTransports(catalog.timeouts, judge=_not_judged)
    router = ModelRouter(catalog, env={}, hosted=hosted)
    tools = exod_tools()
    rows: dict[str, list[dict[str, Any]]] = {"general": [], "tools": []}
    try:
        for question, pattern in general:
            row = await ask(router, question, tools, 96)
            row["pattern"] = pattern
            rows["general"].append(row)
            print(f"  {name}: {question!r} -> {row['text'][:60]!r} {row['calls']} ({row['total_s']} s)", flush=True)
        for question, want in requests:
            row = await ask(router, question, tools, 96)
            row["want"] = want
            rows["tools"].append(row)
            print(f"  {name}: {question!r} -> {row['calls'] or row['text'][:60]!r} ({row['total_s']} s)", flush=True)
    finally:
        await router.aclose()
    return {**score(rows), "rows": rows}


def _call_like(text: str) -> bool:
    """Text that is a tool call gone wrong (a shape not recognised, or a tool not offered)."""
    return '"name"' in text and '"arguments"' in text


def score(rows: dict[str, list[dict[str, Any]]]) -> dict[str, Any]:
    """Right answers and speed medians of one model's rows (each row gets its ``right``)."""
    for row in rows["general"]:
        row["right"] = bool(re.search(row["pattern"], row["text"], re.IGNORECASE)) and not row["calls"]
    for row in rows["tools"]:
        if row["want"] is None:
            row["right"] = not row["calls"] and not _call_like(row["text"])
        else:
            row["right"] = row["calls"][:1] == [row["want"]]
    firsts = [r["first_s"] for r in rows["general"] if r["first_s"] is not None]
    warm = firsts[1:]  # the first request evaluates the whole system prompt and tools; the rest reuse it
    rates = [r["tokens_per_s"] for r in rows["general"] if r["tokens_per_s"] is not None]
    acts = [r for r in rows["tools"] if r["want"] is not None]
    texts = [r for r in rows["tools"] if r["want"] is None]
    return {
        "general_right": sum(r["right"] for r in rows["general"]),
        "general_total": len(rows["general"]),
        "tool_calls_right": sum(r["right"] for r in acts),
        "tool_calls_total": len(acts),
        "stays_text": sum(r["right"] for r in texts),
        "stays_text_total": len(texts),
        "first_piece_cold_s": firsts[0] if firsts else None,
        "first_piece_s_median": round(statistics.median(warm), 3) if warm else None,
        "tokens_per_s_median": round(statistics.median(rates), 2) if rates else None,
    }


def run(
    keys: list[str], threads: int, n_ctx: int, quick: bool, log_dir: Path, *, judged: bool = True
) -> dict[str, Any]:
    """Serve each model in turn and measure it."""
    from exo_edge.laptop_server import ServeSettings, start_server, wait_ready
    from exo_edge.paths import locate_model_file

    general = GENERAL[:2] if quick else GENERAL
    requests = [EXOD_REQUESTS[7], EXOD_REQUESTS[9]] if quick else EXOD_REQUESTS
    out: dict[str, Any] = {}
    for key in keys:
        alias, filename = MODELS[key]
        path = locate_model_file(filename)
        if path is None:
            out[key] = {"skipped": f"{filename} is not on this machine (exo models fetch {alias})"}
            print(f"{key}: skipped, {out[key]['skipped']}", flush=True)
            continue
        port = _free_port()
        settings = ServeSettings(path, alias, host="127.0.0.1", port=port, n_ctx=n_ctx, threads=threads)
        proc = start_server(settings, log=log_dir / f"server-{key}.log")
        try:
            loaded = time.perf_counter()
            wait_ready(settings.base_url, proc=proc, timeout=600.0)
            load_s = time.perf_counter() - loaded
            print(f"{key}: {alias} served at {settings.base_url} ({load_s:.1f} s to answer)", flush=True)
            result = asyncio.run(bench_model(alias, settings.base_url, general, requests, judged=judged))
            result["server_peak_rss_mb"] = round(proc_memory_kb(proc.pid)["VmHWM"] / 1024, 1)
            result["ready_s"] = round(load_s, 2)
            result["model"] = alias
            out[key] = result
        finally:
            proc.terminate()
            proc.wait(60)
    return out


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _ratio(a: Any, b: Any) -> float | None:
    if isinstance(a, (int, float)) and isinstance(b, (int, float)) and b:
        return round(a / b, 2)
    return None


def _rescore(path: Path) -> int:
    """Score the rows of a saved results file again, in place."""
    import json

    data = json.loads(path.read_text(encoding="utf-8"))
    patterns = dict(GENERAL)
    for result in data["models"].values():
        if "rows" in result:
            for row in result["rows"]["general"]:
                row.setdefault("pattern", patterns[row["q"]])  # files written before rows kept their pattern
            result.update(score(result["rows"]))
    write_results("laptop", data, out=path, quick=False)
    _table(data["models"], data["threads"])
    return 0


def _table(results: dict[str, Any], threads: int) -> None:
    base = results.get("0.5b", {})
    rows = []
    for key, r in results.items():
        if "skipped" in r:
            rows.append([key, "skipped", "", "", "", "", "", "", ""])
            continue
        rows.append(
            [
                r["model"],
                f"{r['general_right']}/{r['general_total']}",
                f"{r['tool_calls_right']}/{r['tool_calls_total']}",
                f"{r['stays_text']}/{r['stays_text_total']}",
                r["first_piece_cold_s"],
                r["first_piece_s_median"],
                r["tokens_per_s_median"],
                _ratio(r["tokens_per_s_median"], base.get("tokens_per_s_median")),
                r["server_peak_rss_mb"],
            ]
        )
    print_table(
        f"laptop engine (llama_cpp.server, {threads} threads, through the router)",
        [
            "model",
            "general",
            "right calls",
            "stays text",
            "first piece cold s",
            "first piece s",
            "tokens/s",
            "x 0.5B",
            "server peak MB",
        ],
        rows,
    )


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark; print a table (or --json); a full run writes $EXO_HOME/bench/laptop.json."""
    parser = bench_parser(
        "laptop",
        __doc__.splitlines()[0],
        quick_help="two questions of each set, the 0.5B only; writes nothing unless --out",
    )
    parser.add_argument("--threads", type=int, default=2, help="server threads (default 2)")
    parser.add_argument("--n-ctx", type=int, default=4096, help="server context window (default 4096)")
    parser.add_argument("--models", default="1.5b,0.5b", help="which of 1.5b,0.5b (default both)")
    parser.add_argument(
        "--no-judge", action="store_true", help="run every call the engine proposes (the baseline of the judge)"
    )
    parser.add_argument("--rescore", type=Path, default=None, metavar="FILE", help="score a saved results file again")
    args = parser.parse_args(argv)
    if args.rescore is not None:
        return _rescore(args.rescore)
    keys = ["0.5b"] if args.quick else [k.strip() for k in args.models.split(",") if k.strip()]
    unknown = [k for k in keys if k not in MODELS]
    if unknown:
        parser.error(f"unknown models {unknown}; choose from {', '.join(MODELS)}")
    os.environ["OMP_WAIT_POLICY"] = "PASSIVE"
    import tempfile

    with tempfile.TemporaryDirectory(prefix="bench-laptop-") as tmp:
        results = run(keys, args.threads, args.n_ctx, args.quick, Path(tmp), judged=not args.no_judge)
    data = {
        "benchmark": "laptop",
        "quick": args.quick,
        "threads": args.threads,
        "n_ctx": args.n_ctx,
        "judged": not args.no_judge,
        "machine": machine_info(),
        "models": results,
    }
    if args.json:
        print(json.dumps(data, indent=2, sort_keys=True))
    else:
        _table(results, args.threads)
    path = write_results("laptop", data, out=args.out, quick=args.quick)
    if path is not None:
        print(f"results: {path}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
