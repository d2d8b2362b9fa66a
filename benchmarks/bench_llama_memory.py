"""Benchmark: what the local model costs in memory, and what the memory settings cost in speed.

Usage::

    python -m benchmarks.bench_llama_memory [--rounds 3] [--json] [--out PATH]

Two of exod's real model requests (``benchmarks/data/local_model_requests.json``:
the first turns of the footprint conversation, 9 tools offered, a base-model
completion prompt of about 800 tokens) run through
:class:`~exo_edge.llama_transport.LlamaTransport` in a fresh process per
configuration, alternating ``baseline`` and ``defaults`` ``--rounds`` times so
both see the same machine load:

* ``baseline``: the same settings with the tool call decoded as before the
  footprint work, by llama-cpp-python's sampler chain with the grammar over
  the whole vocabulary;
* ``defaults``: today's :class:`~exo_edge.llama_transport.LlamaSettings` and
  :func:`~exo_edge.grammar_decode.greedy_under_grammar`;
* ``ubatch64``: the defaults with ``n_ubatch`` 64 (a smaller compute buffer);
* ``q8_kv``: the defaults with a q8_0 KV cache and flash attention (smaller,
  but it changed a tool call, so it is not the default).

Per configuration: RSS after load, the process's peak RSS (``VmHWM``) and
sampled peak of anonymous memory, prompt tokens/s, tool-call tokens/s, and
the calls and text produced (which must agree for the settings to be kept).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path
from statistics import median
from typing import Any

from benchmarks._common import bench_parser, write_results

REPO = Path(__file__).resolve().parent.parent


DATA = REPO / "benchmarks" / "data" / "local_model_requests.json"
CONFIGS = {
    "baseline": {"full_vocab_grammar": True},
    "defaults": {},
    "ubatch64": {"n_ubatch": 64},
    "q8_kv": {"kv_type": "q8_0", "flash_attn": True},
}


def _child(config: str) -> dict[str, Any]:
    """One configuration in this process (run by the parent in a fresh interpreter)."""
    import asyncio
    import threading
    from dataclasses import replace

    from exo_core.seams.home import ExoHome
    from exo_core.seams.model import ChatMessage, ModelRequest, TextDelta, ToolCall, ToolCallChunk
    from exo_edge import llama_completion, llama_transport
    from exo_edge.local import local_settings

    def status() -> dict[str, int]:
        with open("/proc/self/status", encoding="ascii") as fh:
            return {
                k: int(v.split()[0]) // 1024
                for k, _, v in (line.partition(":") for line in fh)
                if k in ("VmHWM", "VmRSS", "RssAnon", "RssFile")
            }

    opts = dict(CONFIGS[config])
    full_vocab = opts.pop("full_vocab_grammar", False)
    if full_vocab:
        # the old path: llama-cpp-python's chain applies the grammar to all 262k tokens
        def old_call(llm: Any, prompt: list[int], grammar: str, *, max_tokens: int, cancel: Any) -> dict[str, Any]:
            import llama_cpp

            pieces, first = [], None
            for chunk in llm.create_completion(
                prompt,
                max_tokens=max_tokens,
                temperature=0.0,
                stream=True,
                grammar=llama_cpp.LlamaGrammar.from_string(grammar, verbose=False),
            ):
                first = first or time.perf_counter()
                pieces.append(chunk["choices"][0]["text"])
            return {
                "text": "".join(pieces),
                "finish": "end",
                "saw_call": False,
                "interrupted": False,
                "first_at": first,
            }

        llama_completion.greedy_under_grammar = old_call  # the module-level seam the completion path calls
    settings = replace(local_settings(ExoHome.from_env(None), "gemma-3-270m"), n_threads=1, **opts)
    peak = {"anon": 0}
    done = threading.Event()

    def sample() -> None:
        while not done.wait(0.01):
            peak["anon"] = max(peak["anon"], status()["RssAnon"])

    threading.Thread(target=sample, daemon=True).start()
    requests = json.loads(DATA.read_text(encoding="utf-8"))
    transport = llama_transport.LlamaTransport(settings)

    async def run() -> dict[str, Any]:
        await transport.load()
        out: dict[str, Any] = {"loaded": status(), "calls": []}
        for name, raw in requests.items():
            req = ModelRequest(
                **{
                    **raw,
                    "messages": tuple(
                        ChatMessage(**{**m, "tool_calls": tuple(ToolCall(**c) for c in m["tool_calls"])})
                        for m in raw["messages"]
                    ),
                    "tools": tuple(raw["tools"]),
                    "stop": tuple(raw["stop"]),
                }
            )
            text, call = [], None
            async for chunk in transport.stream(req):
                if isinstance(chunk, TextDelta):
                    text.append(chunk.text)
                elif isinstance(chunk, ToolCallChunk):
                    call = {"name": chunk.call.name, "arguments": chunk.call.arguments}
            last = transport.last
            assert last is not None
            gen = last.total_seconds - last.prompt_seconds
            out["calls"].append(
                {
                    "request": name,
                    "prompt_tokens": last.prompt_tokens,
                    "prompt_tps": round(last.prompt_tokens / last.prompt_seconds, 1),
                    "output_tokens": last.output_tokens,
                    "output_tps": round(max(0, last.output_tokens - 1) / gen, 1) if gen > 0 else None,
                    "call": call,
                    "text": "".join(text),
                }
            )
        await transport.aclose()
        return out

    result = asyncio.run(run())
    done.set()
    result.update(
        config=config,
        settings={
            k: getattr(settings, k)
            for k in ("n_ctx", "n_batch", "n_ubatch", "kv_type", "flash_attn", "swa_full", "use_mmap", "n_threads")
        },
        full_vocab_grammar=full_vocab,
        peak_rss_mb=status()["VmHWM"],
        peak_anon_mb=peak["anon"],
    )
    return result


def main(argv: list[str] | None = None) -> int:
    """Alternate the configurations in fresh processes and summarise."""
    parser = bench_parser(
        "llama-memory",
        __doc__.split("\n\n")[0],
        quick_help="one round; writes nothing unless --out",
        json_help="print the results JSON on one line",
    )
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--child", choices=sorted(CONFIGS), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        print(json.dumps(_child(args.child)))
        return 0
    runs: dict[str, list[dict[str, Any]]] = {name: [] for name in CONFIGS}
    rounds = args.rounds
    if args.quick:
        rounds = 1
    for _ in range(rounds):
        for name in CONFIGS:
            done = subprocess.run(
                [sys.executable, "-m", "benchmarks.bench_llama_memory", "--child", name],
                capture_output=True,
                text=True,
                timeout=1800,
                cwd=REPO,
            )
            if done.returncode != 0:
                print(done.stderr[-2000:], file=sys.stderr)
                return 1
            runs[name].append(json.loads(done.stdout.strip().splitlines()[-1]))
    summary: dict[str, Any] = {}
    for name, rs in runs.items():
        summary[name] = {
            "settings": rs[0]["settings"],
            "full_vocab_grammar": rs[0]["full_vocab_grammar"],
            "rss_after_load_mb": median(r["loaded"]["VmRSS"] for r in rs),
            "anon_after_load_mb": median(r["loaded"]["RssAnon"] for r in rs),
            "peak_rss_mb": median(r["peak_rss_mb"] for r in rs),
            "peak_anon_mb": median(r["peak_anon_mb"] for r in rs),
            # the first request only: the later one reuses most of its prompt from the KV cache
            "prompt_tps": median(r["calls"][0]["prompt_tps"] for r in rs),
            "call_tps": median(c["output_tps"] for r in rs for c in r["calls"] if c["call"] and c["output_tps"]),
            "outputs": [{"call": c["call"], "text": c["text"]} for c in rs[0]["calls"]],
        }
    base, new = summary["baseline"], summary["defaults"]
    summary["ratios"] = {
        "peak_rss": round(new["peak_rss_mb"] / base["peak_rss_mb"], 3),
        "prompt_tps": round(new["prompt_tps"] / base["prompt_tps"], 3),
        "call_tps": round(new["call_tps"] / base["call_tps"], 3),
        "same_outputs": base["outputs"] == new["outputs"],
        "ubatch64_peak_rss": round(summary["ubatch64"]["peak_rss_mb"] / new["peak_rss_mb"], 3),
        "ubatch64_prompt_tps": round(summary["ubatch64"]["prompt_tps"] / new["prompt_tps"], 3),
        "q8_kv_peak_rss": round(summary["q8_kv"]["peak_rss_mb"] / base["peak_rss_mb"], 3),
        "q8_kv_same_outputs": base["outputs"] == summary["q8_kv"]["outputs"],
    }
    import os

    summary["machine"] = {
        "nproc": os.cpu_count(),
        "loadavg_1_5_15": [round(x, 2) for x in os.getloadavg()],
        "rounds": rounds,
        "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    write_results("llama_memory", summary, out=args.out, quick=args.quick)
    print(json.dumps(summary, indent=None if args.json else 2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
