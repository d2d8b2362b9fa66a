"""The laptop link under load: 20 questions through a real exod while its signal decider and queue drainer
use the same engine, as built against the old set-up, same run.

    python benchmarks/bench_laptop_link.py [--json] [--quick] [--threads 1] [--model 0.5b|1.5b]
    exo bench laptop-link [same arguments]

Each condition runs a real ``llama_cpp.server`` on a free loopback port and a real exod (``exo serve``)
whose ``main`` role is that engine, then a scripted fallback route standing in for the device's local
model (its one fixed sentence tells a fallback answer apart). The signal decider is on (``[decisions]
larger`` is the engine: every message the rules leave open is sent to it while the turn runs) and
the proposal queue drainer is on (``[learning] route`` is the engine, ``drain_every = 0.5``) with
``judge`` jobs queued before the first question, so background work competes with every turn.

* **as built**: the engine started by ``exo models serve --host 127.0.0.1`` (its key, no interrupts),
  the device's config as that command prints it: one request at a time to the engine, the person's
  turn first (docs/models.md, "Concurrency");
* **old set-up** (the baseline): the engine started as ``exo models serve`` started it before, with
  llama-cpp-python's defaults (``interrupt_requests`` on, no key), and the device's provider with
  ``serial = false``: exod's requests reach the engine at once, as they did.

Counted per condition: answers from the engine, from the fallback (a cut or empty stream falls back),
empty answers (a turn ending ``end`` with no words: the bug), failed turns; the requests the engine
received and the queue jobs drained meanwhile (the background work really ran), and the median seconds
per turn. A full run writes laptop_link.json in the bench home (--update-results: benchmarks/results/).
"""

from __future__ import annotations

import asyncio
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import tomllib
from pathlib import Path
from typing import Any

from benchmarks._common import bench_parser, machine_info, print_table, write_results

ROOT = Path(__file__).resolve().parents[1]

MODELS = {
    "0.5b": ("qwen2.5-coder-0.5b-instruct", "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf"),
    "1.5b": ("qwen2.5-coder-1.5b-instruct", "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"),
}
FALLBACK = "The local model answers while the laptop is busy or away."
# Plain questions, and replies to the draft before them that the signal rules leave open (so the
# decider asks the engine while the next turn runs). Not tuned on any result.
QUESTIONS = [
    "What is the capital of France? One sentence.",
    "hmm, the second one maybe",
    "Name three primary colours.",
    "not quite what I meant",
    "What is 12 times 12?",
    "Write a two-line note thanking a colleague for their help.",
    "could be warmer",
    "Which planet is closest to the sun?",
    "maybe less formal next time",
    "What does HTTP stand for?",
    "Give me one tip for sleeping better.",
    "hmm, not sure about that",
    "How many days are in a leap year?",
    "Write a one-sentence reminder to water the plants.",
    "a bit long",
    "What is the boiling point of water in Celsius?",
    "Who painted the Mona Lisa?",
    "that's okay I guess",
    "Suggest a name for a grey cat.",
    "What is the largest ocean on Earth?",
]
JOBS = 40


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _exo(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        [sys.executable, "-m", "exo_core.cli", *args], capture_output=True, text=True, env=env, cwd=ROOT, timeout=600
    )
    if done.returncode != 0:
        raise RuntimeError(f"exo {' '.join(args)} failed: {done.stderr[-800:]}")
    return done


def _wait_ready(base_url: str, proc: subprocess.Popen[bytes], key: str | None) -> None:
    from exo_edge.laptop_server import wait_ready

    wait_ready(base_url, proc=proc, timeout=600.0, api_key=key)


def _engine(built: bool, model: Path, alias: str, port: int, threads: int, tmp: Path, env: dict[str, str]) -> Any:
    """Start the engine for one condition; the process, its base URL, the device's provider table and its log."""
    log = tmp / "engine.log"
    laptop_home = tmp / "laptop-home"
    serve = ["models", "serve", str(model), "--host", "127.0.0.1", "--port", str(port), "--threads", str(threads)]
    serve += ["--home", str(laptop_home)]
    if built:
        printed = json.loads(_exo(*serve, "--print-config", "--json", env=env).stdout)
        provider = tomllib.loads(printed["config"])["models"]["providers"]["laptop"]
        command = [sys.executable, "-m", "exo_core.cli", *serve]
        key = str(provider["api_key"])
    else:
        # The engine as `exo models serve` started it before: llama-cpp-python's defaults, no key.
        command = [sys.executable, "-m", "llama_cpp.server", "--model", str(model), "--model_alias", alias]
        command += ["--host", "127.0.0.1", "--port", str(port), "--n_ctx", "4096", "--n_batch", "256"]
        command += ["--n_threads", str(threads), "--n_threads_batch", str(threads)]
        provider = {"kind": "openai", "base_url": f"http://127.0.0.1:{port}/v1", "key_env": [], "serial": False}
        provider["judge_calls"] = True
        key = None
    with open(log, "ab") as out:
        proc = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, env=env, cwd=ROOT)
    _wait_ready(str(provider["base_url"]), proc, key)
    return proc, provider, log


def _toml_value(value: Any) -> str:
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, bool):
        return "true" if value else "false"
    return json.dumps(value)


def _device_home(tmp: Path, provider: dict[str, Any], alias: str, env: dict[str, str]) -> Path:
    home = tmp / "device-home"
    _exo("init", "--home", str(home), env=env)
    fallback = tmp / "fallback.json"
    fallback.write_text(json.dumps({"replies": [{"text": FALLBACK}] * (len(QUESTIONS) * 3)}), encoding="utf-8")
    lines = [f'store = "{home / "store"}"', "", "[models.providers.laptop]"]
    lines += [f"{name} = {_toml_value(value)}" for name, value in provider.items()]
    lines += ["", "[models.providers.scripted]", 'kind = "scripted"', "", "[models.roles]"]
    lines += [f'main = ["laptop:{alias}", "scripted:{fallback}"]', "", "[models.timeouts]"]
    lines += ["first_byte = 120.0", "idle = 60.0", "", "[learning]", f'route = "laptop:{alias}"']
    lines += ["drain_every = 0.5", "batch = 5", "", "[decisions]", "ask_person = false", "larger_timeout = 60.0", ""]
    (home / "config.toml").write_text("\n".join(lines), encoding="utf-8")
    from exo_edge.proposal_queue import ProposalQueue

    queue = ProposalQueue(home / "learning" / "queue.sqlite")
    try:
        for n in range(JOBS):
            inputs = {"criterion": "Leads with the result.", "reply": f"Done: {n} files moved.", "item": f"i{n}"}
            queue.put("judge", inputs, key=f"bench-judge-{n}")
    finally:
        queue.close()
    return home


def _start_exod(home: Path, workspace: Path, env: dict[str, str]) -> subprocess.Popen[bytes]:
    command = [sys.executable, "-m", "exo_core.cli", "serve", "--home", str(home), "--model", "local"]
    command += ["--workspace", str(workspace), "--log-level", "WARNING"]
    with open(home / "exod.log", "ab") as out:
        proc = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, env=env, cwd=str(workspace))
    sock = home / "run" / "exod.sock"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"exod exited: {(home / 'exod.log').read_text()[-800:]}")
        probe = socket.socket(socket.AF_UNIX)
        try:
            probe.connect(str(sock))
            return proc
        except OSError:
            time.sleep(0.1)
        finally:
            probe.close()
    raise RuntimeError("exod did not start")


async def _ask_all(home: Path, questions: list[str]) -> list[dict[str, Any]]:
    from exo_core.client.client import ExoClient

    rows = []
    async with ExoClient(f"unix://{home / 'run' / 'exod.sock'}") as client:
        await client.hello()
        session = (await client.request("session.create", {"title": "laptop link"}))["session"]["id"]
        for question in questions:
            started = time.perf_counter()
            since = (await client.request("events.subscribe", {"since": 0, "limit": 1}))["head"]
            turn = (await client.request("turn.send", {"session": session, "text": question}))["turn_id"]
            said: list[str] = []
            end: dict[str, Any] = {}
            async for event in client.events(since=since):
                if event.body.get("turn_id") != turn:
                    continue
                if event.type == "message.delta":
                    said.append(str(event.body.get("text", "")))
                if event.type == "turn.completed":
                    end = dict(event.body)
                    break
            answer = "".join(said)
            rows.append(
                {
                    "q": question,
                    "answer": answer[:300],
                    "stop": end.get("stop_reason"),
                    "error": end.get("error"),
                    "from": _source(answer, end),
                    "s": round(time.perf_counter() - started, 2),
                }
            )
            print(f"  {rows[-1]['from']:9} {rows[-1]['s']:6.1f} s  {question}", file=sys.stderr, flush=True)
    return rows


def _stop(proc: subprocess.Popen[bytes]) -> None:
    """SIGTERM, then SIGKILL after 60 s (an engine busy with a prompt may not stop at once)."""
    proc.terminate()
    try:
        proc.wait(60)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(30)


def _source(answer: str, end: dict[str, Any]) -> str:
    if end.get("stop_reason") != "end":
        return "failed"
    if not answer.strip():
        return "empty"
    if answer.strip() == FALLBACK:
        return "fallback"
    return "engine"


def _drained(home: Path) -> int:
    from exo_edge.proposal_queue import ProposalQueue

    queue = ProposalQueue(home / "learning" / "queue.sqlite")
    try:
        return int(queue.counts().get("done", 0))
    finally:
        queue.close()


def run_condition(built: bool, key: str, threads: int, questions: list[str]) -> dict[str, Any]:
    """One condition: an engine, a device home with queued jobs, exod, the questions."""
    from exo_edge.paths import locate_model_file

    alias, filename = MODELS[key]
    model = locate_model_file(filename)
    if model is None:
        return {"skipped": f"{filename} is not on this machine (exo models fetch {alias})"}
    env = {k: v for k, v in os.environ.items() if k not in ("EXO_HOME", "EXO_TOKEN", "API_KEY")}
    env["PYTHONPATH"] = str(ROOT)
    env["OMP_WAIT_POLICY"] = "PASSIVE"
    with tempfile.TemporaryDirectory(prefix="bench-laptop-link-") as name:
        tmp = Path(name)
        workspace = tmp / "ws"
        workspace.mkdir()
        engine, provider, log = _engine(built, model, alias, _free_port(), threads, tmp, env)
        exod = None
        try:
            home = _device_home(tmp, provider, alias, env)
            exod = _start_exod(home, workspace, env)
            started = time.perf_counter()
            rows = asyncio.run(_ask_all(home, questions))
            elapsed = time.perf_counter() - started
            drained = _drained(home)
        finally:
            for proc in (exod, engine):
                if proc is not None:
                    _stop(proc)
        requests = log.read_text(errors="replace").count("POST /v1/chat/completions")
    counts = {kind: sum(1 for r in rows if r["from"] == kind) for kind in ("engine", "fallback", "empty", "failed")}
    return {
        "model": alias,
        "questions": len(rows),
        **counts,
        "engine_requests": requests,
        "jobs_drained": drained,
        "turn_s_median": round(statistics.median(r["s"] for r in rows), 2),
        "elapsed_s": round(elapsed, 1),
        "rows": rows,
    }


def _table(results: dict[str, Any]) -> None:
    rows = []
    for name, r in results.items():
        if "skipped" in r:
            rows.append([name, "skipped", "", "", "", "", "", "", ""])
            continue
        rows.append(
            [
                name,
                r["questions"],
                r["engine"],
                r["fallback"],
                r["empty"],
                r["failed"],
                r["engine_requests"],
                r["jobs_drained"],
                r["turn_s_median"],
            ]
        )
    print_table(
        "the laptop link: 20 questions while the decider and the drainer use the engine",
        [
            "condition",
            "questions",
            "engine",
            "fallback",
            "empty",
            "failed",
            "engine requests",
            "jobs drained",
            "s/turn",
        ],
        rows,
    )


def main(argv: list[str] | None = None) -> int:
    """Run both conditions; print a table (or --json); a full run writes its results file (write_results)."""
    parser = bench_parser(
        "laptop-link", __doc__.splitlines()[0], quick_help="5 questions, the as-built condition only; writes nothing"
    )
    parser.add_argument("--threads", type=int, default=1, help="engine threads (default 1)")
    parser.add_argument("--model", default="0.5b", choices=sorted(MODELS), help="the engine's model (default 0.5b)")
    parser.add_argument("--limit", type=int, default=None, help="ask only the first N questions (a quick run)")
    parser.add_argument(
        "--condition", choices=("both", "built", "old"), default="both", help="run one condition only (a quick run)"
    )
    args = parser.parse_args(argv)
    questions = QUESTIONS[:5] if args.quick else QUESTIONS[: args.limit]
    args.quick = args.quick or args.limit is not None or args.condition != "both"
    results: dict[str, Any] = {}
    for name, built in (("as built", True), ("old set-up", False)):
        if (args.condition == "old" and built) or (args.condition == "built" and not built):
            continue
        if args.quick and args.condition == "both" and not built:
            continue
        print(f"{name}:", file=sys.stderr, flush=True)
        results[name] = run_condition(built, args.model, args.threads, questions)
    data = {
        "benchmark": "laptop_link",
        "quick": args.quick,
        "threads": args.threads,
        "machine": machine_info(),
        "conditions": results,
    }
    if args.json:
        print(json.dumps(data, indent=2, sort_keys=True))
    else:
        _table(results)
    path = write_results("laptop_link", data, out=args.out, quick=args.quick)
    if path is not None:
        print(f"results: {path}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
