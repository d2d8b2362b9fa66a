"""Benchmarks of the local model path, with their baselines in the same run.

    python -m benchmarks.bench_models [--json] [--quick] [--threads 2,1] [--skip-quality]

For each thread count (2, and 1 standing in for a slow board), in a fresh
process so RSS is clean:

* **throughput / time to first token** of the same prompt through
  (a) llama-cpp-python called directly (the baseline),
  (b) :class:`exo_edge.llama_transport.LlamaTransport` (worker thread + queue),
  (c) the :class:`exo_core.models.ModelRouter` over that transport, and
  (d) (c) served as SSE by an aiohttp server on 127.0.0.1 and read by an HTTP
      client: a stand-in for exod's turn.send → SSE path until exod is wired.
  Ratios are path / direct.
* **prefix reuse**: prompt time of a turn whose pack is already in the KV
  cache versus the same turn cold.
* **interrupt latency**: from the consumer's ``aclose()`` to the worker free.
* **RSS** after load and at the end.

Then **answer quality**: 50 questions about an example person, answered by
the local model with the person's notes as the pack, scored by exact checks;
beside it the same questions through ``$EXO_BENCH_LARGE_ROUTE`` (a
provider:model route of the catalog or config, e.g. a laptop's server) when set;
and **tool decisions** with ``tool_choice="auto"``: 6 requests that should call
the right tool, 6 questions that should stay text.

A full run writes $EXO_HOME/bench/models.json (--update-results: benchmarks/results/).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from benchmarks._common import bench_parser, progress_output, write_results
from exo_core.seams.model import ChatMessage, ModelRequest, TextDelta, ToolCallChunk

ROOT = Path(__file__).resolve().parents[1]


PERSON = """Notes about the person:
- Name: Marta Silva. Age 34. Lives in Porto, Portugal.
- Works as a marine biologist at the Porto Aquarium.
- Partner: Joao, a carpenter. They have a daughter named Lia, age 6.
- Pet: a grey cat called Pixel.
- Drinks green tea, never coffee.
- Favourite food: grilled sardines.
- Allergic to peanuts.
- Plays the cello on Thursday evenings.
- Drives an old blue Renault.
- Birthday: 12 March.
- Speaks Portuguese, English and Spanish.
- Runs 5 km every Sunday morning.
- Favourite book: The Old Man and the Sea.
- Dentist: Dr. Costa, appointments in the morning only.
- Her mother lives in Braga.
- Prefers short emails, signed "M."
- Works from home on Fridays.
- Is learning Japanese.
- Favourite colour: green.
- Supports the football club FC Porto.
- Takes the 8:15 train to work.
- Is saving money for a trip to Iceland.
- Does not like loud music.
- Her best friend is called Ines.
- Grows tomatoes on her balcony."""

# (question, any-of expected substrings, case-insensitive)
QUESTIONS: list[tuple[str, tuple[str, ...]]] = [
    ("What is her name?", ("Marta",)),
    ("What is the person's full name?", ("Marta Silva",)),
    ("In which city does she live?", ("Porto",)),
    ("Which country does she live in?", ("Portugal",)),
    ("What is her job?", ("biologist",)),
    ("Where does she work?", ("Aquarium",)),
    ("What is her partner's name?", ("Joao",)),
    ("What does her partner do for work?", ("carpenter",)),
    ("What is her daughter called?", ("Lia",)),
    ("How old is her daughter?", ("6", "six")),
    ("What pet does she have?", ("cat",)),
    ("What is the cat called?", ("Pixel",)),
    ("What does she drink?", ("tea",)),
    ("Does she drink coffee?", ("no", "never")),
    ("What is her favourite food?", ("sardines",)),
    ("What is she allergic to?", ("peanut",)),
    ("What instrument does she play?", ("cello",)),
    ("On which evening does she play music?", ("Thursday",)),
    ("What car does she drive?", ("Renault",)),
    ("What colour is her car?", ("blue",)),
    ("When is her birthday?", ("12 March", "March 12")),
    ("In which month is her birthday?", ("March",)),
    ("How many languages does she speak?", ("3", "three")),
    ("Does she speak Spanish?", ("yes",)),
    ("How far does she run on Sundays?", ("5 km", "5km", "five")),
    ("On which day does she go running?", ("Sunday",)),
    ("What is her favourite book?", ("Old Man and the Sea",)),
    ("Who is her dentist?", ("Costa",)),
    ("When can dentist appointments be booked?", ("morning",)),
    ("Where does her mother live?", ("Braga",)),
    ("How does she like her emails?", ("short",)),
    ("How does she sign her emails?", ("M.",)),
    ("On which day does she work from home?", ("Friday",)),
    ("Which language is she learning?", ("Japanese",)),
    ("What is her favourite colour?", ("green",)),
    ("Which football club does she support?", ("Porto",)),
    ("Which train does she take to work?", ("8:15",)),
    ("Where is she planning to travel?", ("Iceland",)),
    ("What is she saving money for?", ("Iceland", "trip")),
    ("Does she like loud music?", ("no", "not")),
    ("Who is her best friend?", ("Ines",)),
    ("What does she grow on her balcony?", ("tomato",)),
    ("How old is she?", ("34", "thirty-four")),
    ("What colour is her cat?", ("grey", "gray")),
    ("What is the name of Marta's daughter?", ("Lia",)),
    ("Which city is her mother in?", ("Braga",)),
    ("What kind of tea does she drink?", ("green",)),
    ("What fish does she like to eat?", ("sardine",)),
    ("What is the name of her partner?", ("Joao",)),
    ("Which instrument does Marta play on Thursdays?", ("cello",)),
]
assert len(QUESTIONS) == 50

# Tool decisions with tool_choice="auto": requests that should become a call, and
# questions about the person that should stay text (tools offered to both).
TOOLS = (
    {
        "name": "set_timer",
        "description": "Start a kitchen timer",
        "parameters": {"type": "object", "properties": {"minutes": {"type": "integer"}}, "required": ["minutes"]},
    },
    {
        "name": "read_file",
        "description": "Read a text file from the workspace",
        "parameters": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
    },
    {
        "name": "shell",
        "description": "Run a shell command",
        "parameters": {"type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]},
    },
)
TOOL_REQUESTS = [
    ("Set a timer for 5 minutes.", "set_timer"),
    ("Start a kitchen timer for 10 minutes.", "set_timer"),
    ("Read the file notes.txt.", "read_file"),
    ("Show me what is in todo.md.", "read_file"),
    ("Run the command ls.", "shell"),
    ("List the files with the shell.", "shell"),
]
NO_TOOL = [
    "What is the cat called?",
    "Where does she live?",
    "What is her job?",
    "What does she drink?",
    "Who is her best friend?",
    "What colour is her car?",
]

WORK_PROMPT = "Write a short story about a lighthouse keeper and a storm."


def rss_mb() -> float:
    from exo_edge.llama_transport import rss_bytes

    return round(rss_bytes() / 2**20, 1)


def _decode_rate(stamps: list[float]) -> float:
    return (len(stamps) - 1) / (stamps[-1] - stamps[0]) if len(stamps) > 1 else 0.0


async def run_direct(llm: Any, prompt: str, max_tokens: int) -> dict[str, float]:
    t0 = time.perf_counter()
    stamps: list[float] = []
    for chunk in llm.create_completion(prompt, max_tokens=max_tokens, temperature=0.0, stop=[], stream=True):
        if chunk["choices"][0]["text"]:
            stamps.append(time.perf_counter())
    return {"tokens": len(stamps), "ttft": stamps[0] - t0, "tok_s": _decode_rate(stamps), "total": stamps[-1] - t0}


async def run_stream(stream: Any) -> dict[str, float]:
    t0 = time.perf_counter()
    stamps: list[float] = []
    async for chunk in stream:
        if isinstance(chunk, TextDelta):
            stamps.append(time.perf_counter())
    return {"tokens": len(stamps), "ttft": stamps[0] - t0, "tok_s": _decode_rate(stamps), "total": stamps[-1] - t0}


async def run_sse(router: Any, make_request: Any) -> dict[str, float]:
    """The router's stream served as SSE over loopback HTTP and read by a client."""
    import aiohttp
    from aiohttp import web

    async def handler(request: web.Request) -> web.StreamResponse:
        resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await resp.prepare(request)
        seq = 0
        async for chunk in router.stream(make_request()):
            if isinstance(chunk, TextDelta):
                seq += 1
                data = json.dumps({"seq": seq, "type": "message.delta", "body": {"text": chunk.text}})
                await resp.write(f"id: {seq}\ndata: {data}\n\n".encode())
        await resp.write_eof()
        return resp

    app = web.Application()
    app.router.add_post("/turn", handler)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    try:
        async with aiohttp.ClientSession() as session:
            t0 = time.perf_counter()
            stamps: list[float] = []
            async with session.post(f"http://127.0.0.1:{port}/turn") as resp:
                async for line in resp.content:
                    if line.startswith(b"data:"):
                        stamps.append(time.perf_counter())
    finally:
        await runner.cleanup()
    return {"tokens": len(stamps), "ttft": stamps[0] - t0, "tok_s": _decode_rate(stamps), "total": stamps[-1] - t0}


def _median(runs: list[dict[str, float]]) -> dict[str, float]:
    return {k: round(statistics.median(r[k] for r in runs), 4) for k in runs[0]}


async def worker(threads: int, repeats: int, max_tokens: int) -> dict[str, Any]:
    from exo_core.models import ModelRouter, load_catalog
    from exo_edge.llama_transport import LlamaSettings, LlamaTransport
    from exo_edge.manifest import PromptFormat, find_manifest
    from exo_edge.paths import locate_model_file
    from exo_edge.prompting import render_completion

    manifest = find_manifest("gemma-3-270m")
    path = locate_model_file(manifest.primary_file.name)
    if path is None:
        raise SystemExit("model not fetched: run `exo models fetch` first")
    rss_start = rss_mb()
    # no stop strings, so every path decodes exactly max_tokens
    fmt = PromptFormat(format="completion", preamble="Stories.", stop=())
    transport = LlamaTransport(
        LlamaSettings(model_path=path, prompt=fmt, n_ctx=2048, n_threads=threads, name=manifest.name)
    )
    t0 = time.perf_counter()
    await transport.load()
    load_s = time.perf_counter() - t0
    rss_loaded = rss_mb()
    llm = transport._llm
    router = ModelRouter(
        load_catalog({"models": {"roles": {"main": ["local:gemma-3-270m"]}}}, env={}),
        env={},
        local=lambda name: transport,
    )

    def req(i: int) -> ModelRequest:
        # a different first line each run: no prefix reuse between the compared runs
        return ModelRequest(
            messages=(ChatMessage("system", f"Run {i}."), ChatMessage("user", WORK_PROMPT)),
            temperature=0.0,
            max_tokens=max_tokens,
        )

    runs: dict[str, list[dict[str, float]]] = {"direct": [], "transport": [], "router": [], "sse": []}
    i = 0
    for _ in range(repeats):
        i += 1
        runs["direct"].append(await run_direct(llm, render_completion(req(i).messages, fmt), max_tokens))
        i += 1
        runs["transport"].append(await run_stream(transport.stream(req(i))))
        i += 1
        runs["router"].append(await run_stream(router.stream(req(i))))
        i += 1
        n = i
        runs["sse"].append(await run_sse(router, lambda: req(n)))
    med = {k: _median(v) for k, v in runs.items()}
    base = med["direct"]
    ratios = {
        k: {"tok_s": round(v["tok_s"] / base["tok_s"], 3), "ttft": round(v["ttft"] / base["ttft"], 3)}
        for k, v in med.items()
    }

    # prefix reuse: a ~300-token pack, cold then warm with a different question
    qfmt = find_manifest("gemma-3-270m").prompt
    assert qfmt is not None
    qt = LlamaTransport(LlamaSettings(model_path=path, prompt=qfmt, n_threads=threads, name=manifest.name))
    qt._llm = llm  # share the loaded weights (one model in memory)
    cold, warm = [], []
    for r in range(repeats):
        pack = PERSON.replace("Notes", f"Notes ({r})")
        for q, bucket in (("What is the cat called?", cold), ("Where does her mother live?", warm)):
            [
                c
                async for c in qt.stream(
                    ModelRequest(
                        messages=(ChatMessage("system", pack), ChatMessage("user", q)), temperature=0.0, max_tokens=8
                    )
                )
            ]
            assert qt.last is not None
            bucket.append((qt.last.prompt_seconds, qt.last.prompt_tokens, qt.last.reused_tokens))
    prefix = {
        "cold_prompt_s": round(statistics.median(c[0] for c in cold), 4),
        "warm_prompt_s": round(statistics.median(w[0] for w in warm), 4),
        "prompt_tokens": cold[0][1],
        "reused_tokens": warm[0][2],
    }
    prefix["speedup"] = round(prefix["cold_prompt_s"] / prefix["warm_prompt_s"], 2)

    # interrupt latency
    lat = []
    for r in range(repeats):
        agen = transport.stream(req(1000 + r))
        got = 0
        async for c in agen:
            got += 1
            if got == 5:
                break
        t0 = time.perf_counter()
        await agen.aclose()
        lat.append(time.perf_counter() - t0)
    interrupt_ms = round(statistics.median(lat) * 1000, 2)
    rss_end = rss_mb()
    # the embedder beside the model: the device's whole model footprint
    rss_embedder = None
    onnx_path = locate_model_file("paraphrase-MiniLM-L3-v2.int8.onnx")
    if onnx_path is not None:
        import numpy as np
        import onnxruntime as ort

        opts = ort.SessionOptions()
        opts.intra_op_num_threads = 1
        sess = ort.InferenceSession(str(onnx_path), opts, providers=["CPUExecutionProvider"])
        ids = np.array([[101, 7592, 2088, 102]], dtype=np.int64)
        sess.run(None, {"input_ids": ids, "attention_mask": np.ones_like(ids)})
        rss_embedder = rss_mb()
    out = {
        "threads": threads,
        "load_s": round(load_s, 3),
        "rss_mb_start": rss_start,
        "rss_mb_loaded": rss_loaded,
        "median": med,
        "ratio_to_direct": ratios,
        "prefix_reuse": prefix,
        "interrupt_ms": interrupt_ms,
        "rss_mb_end": rss_end,
        "rss_mb_with_int8_embedder": rss_embedder,
        "loadavg_1m_after": round(os.getloadavg()[0], 2),
        "max_tokens": max_tokens,
        "repeats": repeats,
    }
    return out


def _score(answer: str, expected: tuple[str, ...]) -> bool:
    low = answer.lower()
    return any(e.lower() in low for e in expected)


async def quality(threads: int) -> dict[str, Any]:
    from exo_core.models import build_router
    from exo_core.seams.home import ExoHome
    from exo_edge.local import local_factory

    home = ExoHome.from_env()
    factory = local_factory(home, overrides={"n_threads": threads})
    out: dict[str, Any] = {}
    routes = {"local": "local:gemma-3-270m"}
    large = os.environ.get("EXO_BENCH_LARGE_ROUTE")
    if large:
        routes["large"] = large
    for label, route in routes.items():
        router = build_router(home, local=factory)
        router.set_role("main", [route])
        correct, misses = 0, []
        t0 = time.perf_counter()
        for q, expected in QUESTIONS:
            req = ModelRequest(
                messages=(ChatMessage("system", PERSON), ChatMessage("user", q)), temperature=0.0, max_tokens=24
            )
            text = "".join([c.text async for c in router.stream(req) if isinstance(c, TextDelta)])
            if _score(text, expected):
                correct += 1
            else:
                misses.append({"q": q, "got": text.strip()[:80]})
        seconds = round(time.perf_counter() - t0, 2)
        right_calls, no_calls, parsed = 0, 0, 0
        for q, name in [*TOOL_REQUESTS, *((q, None) for q in NO_TOOL)]:
            req = ModelRequest(
                messages=(ChatMessage("system", PERSON), ChatMessage("user", q)),
                tools=TOOLS,
                temperature=0.0,
                max_tokens=48,
            )
            calls = [c.call async for c in router.stream(req) if isinstance(c, ToolCallChunk)]
            parsed += len(calls)
            if name is None and not calls:
                no_calls += 1
            if name is not None and calls and calls[0].name == name:
                right_calls += 1
        out[label] = {
            "route": route,
            "correct": correct,
            "of": len(QUESTIONS),
            "accuracy": round(correct / len(QUESTIONS), 3),
            "seconds": seconds,
            "misses": misses,
            "tools_auto": {
                "right_call": right_calls,
                "of_requests": len(TOOL_REQUESTS),
                "stayed_text": no_calls,
                "of_questions": len(NO_TOOL),
                "calls_parsed": parsed,
            },
        }
        await router.aclose()
    if not large:
        out["large"] = "not configured (set EXO_BENCH_LARGE_ROUTE=provider:model)"
    return out


def main() -> int:
    ap = bench_parser("models", __doc__.split("\n")[0], quick_help="1 repeat, 32 tokens; writes nothing unless --out")
    ap.add_argument("--threads", default="2,1", help="thread counts, comma-separated")
    ap.add_argument("--skip-quality", action="store_true")
    ap.add_argument("--worker", type=int, help=argparse.SUPPRESS)
    ap.add_argument("--quality-worker", type=int, help=argparse.SUPPRESS)
    args = ap.parse_args()
    repeats, max_tokens = (1, 32) if args.quick else (3, 96)
    if args.worker:
        print(json.dumps(asyncio.run(worker(args.worker, repeats, max_tokens))))
        return 0
    if args.quality_worker:
        print(json.dumps(asyncio.run(quality(args.quality_worker))))
        return 0
    with progress_output(args.json):
        results: dict[str, Any] = {
            "command": "exo bench models",
            "machine": {"cpus": os.cpu_count(), "platform": sys.platform},
            "runs": [],
        }
        extra = ["--quick"] if args.quick else []
        results["machine"]["loadavg_1m_before"] = round(os.getloadavg()[0], 2)
        for threads in [int(t) for t in args.threads.split(",")]:
            proc = subprocess.run(
                [sys.executable, "-m", "benchmarks.bench_models", "--worker", str(threads), *extra],
                capture_output=True,
                text=True,
                check=True,
            )
            run = json.loads(proc.stdout.strip().splitlines()[-1])
            results["runs"].append(run)
            m, r = run["median"], run["ratio_to_direct"]
            print(
                f"threads={threads} load {run['load_s']} s, RSS loaded {run['rss_mb_loaded']} MB, "
                f"end {run['rss_mb_end']} MB"
            )
            for path in ("direct", "transport", "router", "sse"):
                print(
                    f"  {path:9} {m[path]['tok_s']:7.1f} tok/s  ttft {m[path]['ttft'] * 1000:7.1f} ms"
                    f"   ratio tok/s {r[path]['tok_s']:.3f}  ttft {r[path]['ttft']:.3f}"
                )
            p = run["prefix_reuse"]
            print(
                f"  prefix reuse: cold {p['cold_prompt_s'] * 1000:.1f} ms, warm "
                f"{p['warm_prompt_s'] * 1000:.1f} ms ({p['reused_tokens']}/{p['prompt_tokens']} "
                f"tokens reused) speedup x{p['speedup']}"
            )
            print(f"  interrupt: {run['interrupt_ms']} ms from aclose() to worker free")
            print(
                f"  RSS with the int8 embedder also loaded: {run['rss_mb_with_int8_embedder']} MB; "
                f"load average after: {run['loadavg_1m_after']}"
            )
        if not args.skip_quality:
            proc = subprocess.run(
                [sys.executable, "-m", "benchmarks.bench_models", "--quality-worker", "2"],
                capture_output=True,
                text=True,
                check=True,
            )
            q = json.loads(proc.stdout.strip().splitlines()[-1])
            results["quality"] = q
            for label in ("local", "large"):
                v = q[label]
                if isinstance(v, dict):
                    t = v["tools_auto"]
                    print(
                        f"quality {label} ({v['route']}): {v['correct']}/{v['of']} "
                        f"in {v['seconds']} s; tools auto: right call {t['right_call']}/"
                        f"{t['of_requests']}, stayed text {t['stayed_text']}/{t['of_questions']}"
                    )
                else:
                    print(f"quality {label}: {v}")
    if args.json:
        print(json.dumps(results, indent=2, sort_keys=True))
    written = write_results("models", results, out=args.out, quick=args.quick)
    if written is not None:
        print(f"wrote {written}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
