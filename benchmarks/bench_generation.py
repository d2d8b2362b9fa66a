"""Generation speed through the whole protocol path against direct llama-cpp-python, same run.

    python -m benchmarks.bench_generation [--json] [--threads 1 2] [--questions 3] [--model NAME]
    exo bench generation [--json] ...

For each thread count, two processes answer the same questions one after the
other, each question once:

* **direct**: ``llama_cpp.Llama`` on the model file, the prompt rendered by
  the model's chat template exactly as exod renders it (exod's base prompt,
  exod's tools, one question), streamed with ``create_completion``;
* **exod**: a real ``exo serve`` with the model as its ``main`` role (no
  store, so no pack), a protocol client sending ``turn.send`` and timing the
  ``message.delta`` events it receives.

Time to first token is from the call (``turn.send``) to the first piece of
text; tokens/s is the decode rate after it: ``(output tokens - 1) /
(last piece - first piece)``. The ratio exod/direct is the number that
matters (docs/benchmarks.md: same-run ratios only). A warm-up question (not
counted) loads the model and caches the prompt's shared head in both.

With ``--omp`` the direct runs are repeated with ``OMP_WAIT_POLICY=ACTIVE``
(llama.cpp's OpenMP default), to show what the PASSIVE policy exod sets
(``exo_edge/__init__.py``) buys on a busy machine; ``--batch`` repeats them
with other ``n_batch`` values (prompt processing).
A full run writes $EXO_HOME/bench/generation.json (--update-results: benchmarks/results/).

``--matrix`` measures the settings a small board's profile chooses (issue 18
item 6), direct only: every thread count x ``OMP_WAIT_POLICY`` (PASSIVE,
ACTIVE) x ``--batch`` value (``n_batch`` = ``n_ubatch``), each in a fresh
process, the configurations in one interleaved order and the baseline (1
thread, PASSIVE, the first batch) run first and again last to show the
machine's drift. Every question's prompt is evaluated **cold** (the KV cache
dropped), so the first token's time is the whole prompt's evaluation, which is
what the batch size changes. The prompt is exod's system prompt with the store
template's pack and no tools (~260 tokens: the 1,049-token prompt with tools
took 136 s to evaluate at a load average of 10-16, too long for twelve
configurations); ``--max-tokens`` (default 32 in the matrix)
bounds the decode. Each row has its ratios to the first baseline row. Results
go to benchmarks/results/generation_matrix.json with --json.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks._common import bench_parser, child_env, machine_info, median, write_results

ROOT = Path(__file__).resolve().parents[1]


MODEL = "qwen2.5-coder-0.5b-instruct"
WARMUP = "Say hello in one short sentence."
QUESTIONS = [
    "Describe the water cycle in a few sentences.",
    "Explain how a bicycle's gears work.",
    "Write a short story about a lighthouse keeper.",
    "Describe how bread is made, step by step.",
    "Explain why the sky is blue.",
]
N_CTX = 2048
MAX_TOKENS = 512  # what exod's loop asks for (LoopSettings.max_tokens)


def _model_path(name: str) -> Path:
    from exo_edge.manifest import find_manifest
    from exo_edge.paths import locate_model_file

    path = locate_model_file(find_manifest(name).primary_file.name)
    if path is None:
        raise SystemExit(f"model {name} not fetched: run `exo models fetch {name}` first")
    return path


def _exod_tools() -> tuple[dict[str, Any], ...]:
    from benchmarks.bench_exod_tools import exod_tools

    return exod_tools()


# -- direct: a child process, so OMP_WAIT_POLICY applies before llama_cpp loads ------------------------


def direct_child(args: argparse.Namespace) -> dict[str, Any]:
    """Run in the child: load the model, answer each question, time the stream."""
    import llama_cpp

    from exo_core.agent.loop import BASE_PROMPT
    from exo_core.seams.model import ChatMessage, ModelRequest
    from exo_edge.chat_template import ChatTemplate
    from exo_edge.llama_load import Draw
    from exo_edge.manifest import find_manifest

    path = _model_path(args.model)
    llm = llama_cpp.Llama(
        model_path=str(path),
        n_ctx=N_CTX,
        n_threads=args.threads,
        n_threads_batch=args.threads,
        n_batch=args.batch,
        n_ubatch=args.ubatch or min(args.batch, 256),
        swa_full=True,
        seed=0,
        verbose=False,
    )
    eos = llm.detokenize([llm.token_eos()], special=True).decode()
    template = ChatTemplate.from_metadata(llm.metadata, {"eos": eos})
    assert template is not None, "the model has no chat template"
    tools = _exod_tools()
    system = BASE_PROMPT
    if args.cold:  # the matrix: exod's system prompt with the store template's pack, no tools (~260 tokens)
        from exo_core.retrieval.memory import PACK_HEADING, without_comments

        tools = ()
        pack = without_comments((ROOT / "store_template" / "pack.md").read_text())
        system = BASE_PROMPT + "\n\n" + PACK_HEADING + "\n" + pack
    draw = Draw(seed=0, sampling=find_manifest(args.model).sampling)
    request = ModelRequest(messages=())
    rows = []
    for q in [WARMUP, *QUESTIONS[: args.questions]]:
        prompt = template.render((ChatMessage("system", system), ChatMessage("user", q)), tools)
        tokens = llm.tokenize(prompt.encode(), add_bos=False, special=True)
        if args.cold:
            llm.reset()  # the whole prompt is evaluated again: what n_batch and the threads change
        start = time.perf_counter()
        stamps: list[float] = []
        text = []
        # the model's own sampling, as exod draws it (docs/models.md, "Sampling"): the same tokens both ways
        stream = llm.create_completion(tokens, max_tokens=args.max_tokens, stream=True, **draw.kwargs(request))
        for chunk in stream:
            piece = chunk["choices"][0].get("text")
            if piece:
                stamps.append(time.perf_counter())
                text.append(piece)
        out = len(llm.tokenize("".join(text).encode(), add_bos=False, special=False))
        rows.append(_row(q, start, stamps, out, len(tokens)))
    return {"rows": rows[1:], "warmup": rows[0]}


def _row(q: str, start: float, stamps: list[float], out_tokens: int, prompt_tokens: int) -> dict[str, Any]:
    first = stamps[0] - start if stamps else None
    span = stamps[-1] - stamps[0] if len(stamps) > 1 else 0.0
    rate = (out_tokens - 1) / span if span > 0 and out_tokens > 1 else None
    return {
        "q": q,
        "first_token_s": first,
        "tokens_per_s": rate,
        "output_tokens": out_tokens,
        "prompt_tokens": prompt_tokens,
    }


def run_direct(
    model: str, threads: int, batch: int, questions: int, omp: str, *, cold: bool = False, max_tokens: int = MAX_TOKENS
) -> dict[str, Any]:
    env = child_env() | {"OMP_WAIT_POLICY": omp}
    cmd = [
        sys.executable,
        "-m",
        "benchmarks.bench_generation",
        "--child",
        "--model",
        model,
        "--threads",
        str(threads),
        "--batch",
        str(batch),
    ]
    cmd += ["--questions", str(questions), "--max-tokens", str(max_tokens)]
    if cold:
        cmd += ["--cold", "--ubatch", str(batch)]
    out = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=3600, check=False)
    if out.returncode != 0:
        raise SystemExit(f"direct run failed:\n{out.stderr[-2000:]}")
    return dict(json.loads(out.stdout.strip().splitlines()[-1]))


# -- exod: a real daemon, a real client -----------------------------------------------------------------


async def _exod_turns(sock: Path, questions: list[str]) -> list[dict[str, Any]]:
    from exo_core.client import ExoClient

    rows = []
    async with ExoClient.for_socket(sock, client_name="bench-generation") as client:
        await client.hello()
        for q in questions:
            session = (await client.request("session.create", {"title": "bench"}))["session"]["id"]
            stamps: list[float] = []
            usage: dict[str, Any] = {}
            start = time.perf_counter()
            turn = (await client.request("turn.send", {"session": session, "text": q}))["turn_id"]
            async for event in client.events(session=session):
                if event.type == "message.delta" and event.body.get("text"):
                    stamps.append(time.perf_counter())
                elif event.type == "usage.updated":
                    usage = dict(event.body)
                elif event.type == "tool.started":
                    usage["tool_call"] = event.body.get("name")
                elif event.type == "turn.completed" and event.body.get("turn_id", turn) == turn:
                    usage["stop_reason"] = event.body.get("stop_reason")
                    break
            row = _row(q, start, stamps, int(usage.get("output_tokens", 0)), int(usage.get("input_tokens", 0)))
            rows.append(row | {"stop_reason": usage.get("stop_reason"), "tool_call": usage.get("tool_call")})
    return rows


def run_exod(model: str, threads: int, batch: int, questions: int, omp: str) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="exo-bench-gen-") as tmp:
        home, ws = Path(tmp) / "home", Path(tmp) / "ws"
        home.mkdir()
        ws.mkdir()
        (home / "config.toml").write_text(
            f'[models.roles]\nmain = ["local:{model}"]\n\n'
            f"[models.local]\nn_ctx = {N_CTX}\nn_threads = {threads}\nn_batch = {batch}\n"
            f"n_ubatch = {min(batch, 256)}\n",
            encoding="utf-8",
        )
        env = child_env() | {"OMP_WAIT_POLICY": omp}
        cmd = [sys.executable, "-m", "exo_core.cli", "serve", "--home", str(home), "--model", "local"]
        cmd += ["--workspace", str(ws), "--log-level", "WARNING"]
        log = open(home / "exod.log", "wb")
        proc = subprocess.Popen(cmd, env=env, cwd=str(ws), stdout=log, stderr=log)
        sock = home / "run" / "exod.sock"
        try:
            deadline = time.monotonic() + 120
            while not sock.exists():
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise SystemExit(f"exod did not start:\n{(home / 'exod.log').read_text()[-2000:]}")
                time.sleep(0.1)
            rows = asyncio.run(_exod_turns(sock, [WARMUP, *QUESTIONS[:questions]]))
        finally:
            proc.kill()
            proc.wait()
            log.close()
    return {"rows": rows[1:], "warmup": rows[0]}


def _summary(part: dict[str, Any]) -> dict[str, Any]:
    rows = part["rows"]
    rates = [r["tokens_per_s"] for r in rows if r["tokens_per_s"]]
    firsts = [r["first_token_s"] for r in rows if r["first_token_s"] is not None]
    return {
        "tokens_per_s": round(median(rates), 2) if rates else None,
        "first_token_s": round(median(firsts), 3) if firsts else None,
        "output_tokens": sum(r["output_tokens"] for r in rows),
    }


def matrix_configs(threads: list[int], batches: list[int]) -> list[tuple[int, str, int]]:
    """Every (threads, OMP policy, batch), interleaved so no setting runs all in one stretch; the
    baseline (first thread count, PASSIVE, first batch) first and again last."""
    base = (threads[0], "PASSIVE", batches[0])
    rest = []
    for b in batches:
        for omp in ("PASSIVE", "ACTIVE"):
            for t in threads:  # the thread counts alternate: a load spike costs both
                if (t, omp, b) != base:
                    rest.append((t, omp, b))
    return [base, *rest, base]


def run_matrix(args: argparse.Namespace) -> dict[str, Any]:
    """The threads x OMP policy x batch matrix (see the module docstring)."""
    max_tokens = args.max_tokens if args.max_tokens != MAX_TOKENS else 32
    out: dict[str, Any] = {
        "command": "python -m benchmarks.bench_generation --matrix --json",
        "model": args.model,
        "max_tokens": max_tokens,
        "questions": args.questions,
        "cold_prompt": True,
        "machine": machine_info(),
        "loadavg_start": list(os.getloadavg()),
        "runs": [],
    }
    baseline: dict[str, Any] | None = None
    for threads, omp, batch in matrix_configs(args.threads, args.batch):
        load = os.getloadavg()[0]
        direct = run_direct(args.model, threads, batch, args.questions, omp, cold=True, max_tokens=max_tokens)
        d = _summary(direct)
        row = {"threads": threads, "omp": omp, "n_batch": batch, "n_ubatch": batch, "loadavg_1m": load} | d
        row["rows"] = direct["rows"]
        if baseline is None:
            baseline = row
        for key in ("tokens_per_s", "first_token_s"):
            ok = row[key] and baseline[key]
            row[f"{key}_x_baseline"] = round(row[key] / baseline[key], 3) if ok else None
        out["runs"].append(row)
        # each configuration as it is measured: a run cut short keeps what it measured
        write_results("generation_matrix", out | {"complete": False}, out=args.out, quick=args.quick)
        print(
            f"threads {threads} {omp:7} batch {batch:4}: {d['tokens_per_s']} tok/s "
            f"({row['tokens_per_s_x_baseline']}x), first token {d['first_token_s']} s "
            f"({row['first_token_s_x_baseline']}x), load {load:.1f}",
            flush=True,
        )
    out["loadavg_end"] = list(os.getloadavg())
    out["complete"] = True
    return out


def main() -> int:
    ap = bench_parser(
        "generation",
        __doc__.split("\n")[0],
        quick_help="the first thread count and one question; writes nothing unless --out",
    )
    ap.add_argument("--model", default=MODEL, help=f"manifest name (default {MODEL})")
    ap.add_argument("--threads", type=int, nargs="+", default=[1, 2], help="thread counts to measure")
    ap.add_argument("--questions", type=int, default=3, help=f"questions per run (at most {len(QUESTIONS)})")
    ap.add_argument("--batch", type=int, nargs="+", default=[256], help="n_batch values (the first for exod)")
    ap.add_argument("--omp", action="store_true", help="also run direct with OMP_WAIT_POLICY=ACTIVE")
    ap.add_argument(
        "--matrix", action="store_true", help="threads x OMP policy x --batch, direct, cold prompts (issue 18 item 6)"
    )
    ap.add_argument("--max-tokens", type=int, default=MAX_TOKENS, help="tokens per answer (matrix default 32)")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--cold", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--ubatch", type=int, default=0, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        args.threads, args.batch = args.threads[0], args.batch[0]
        print(json.dumps(direct_child(args)))
        return 0
    _model_path(args.model)
    if args.quick:
        args.threads, args.questions = args.threads[:1], 1
    if args.matrix:
        t0 = time.perf_counter()
        result = run_matrix(args)
        result["seconds"] = round(time.perf_counter() - t0, 1)
        if args.json:
            print(json.dumps(result, indent=2, sort_keys=True))
        written = write_results("generation_matrix", result, out=args.out, quick=args.quick)
        if written is not None:
            print(f"wrote {written}", file=sys.stderr)
        return 0
    t0 = time.perf_counter()
    out: dict[str, Any] = {
        "command": "exo bench generation",
        "model": args.model,
        "max_tokens": MAX_TOKENS,
        "machine": machine_info(),
        "runs": [],
    }
    batch = args.batch[0]
    for threads in args.threads:
        direct = run_direct(args.model, threads, batch, args.questions, "PASSIVE")
        exod = run_exod(args.model, threads, batch, args.questions, "PASSIVE")
        d, e = _summary(direct), _summary(exod)
        ratio = round(e["tokens_per_s"] / d["tokens_per_s"], 3) if d["tokens_per_s"] and e["tokens_per_s"] else None
        out["runs"].append(
            {
                "threads": threads,
                "n_batch": batch,
                "omp": "PASSIVE",
                "direct": d | direct,
                "exod": e | exod,
                "exod_over_direct_tokens_per_s": ratio,
            }
        )
        print(
            f"threads {threads} batch {batch} PASSIVE: direct {d['tokens_per_s']} tok/s, first {d['first_token_s']} s; "
            f"exod {e['tokens_per_s']} tok/s, first {e['first_token_s']} s; ratio {ratio}",
            flush=True,
        )
    extra = [(t, b, "ACTIVE") for t in args.threads for b in args.batch[:1]] if args.omp else []
    extra += [(t, b, "PASSIVE") for t in args.threads[:1] for b in args.batch[1:]]
    for threads, n_batch, omp in extra:
        direct = run_direct(args.model, threads, n_batch, args.questions, omp)
        d = _summary(direct)
        out["runs"].append({"threads": threads, "n_batch": n_batch, "omp": omp, "direct": d | direct})
        print(
            f"threads {threads} batch {n_batch} {omp}: direct {d['tokens_per_s']} tok/s, first {d['first_token_s']} s",
            flush=True,
        )
    out["seconds"] = round(time.perf_counter() - t0, 1)
    if args.json:
        print(json.dumps(out, indent=2, sort_keys=True))
    written = write_results("generation", out, out=args.out, quick=args.quick)
    if written is not None:
        print(f"wrote {written}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
