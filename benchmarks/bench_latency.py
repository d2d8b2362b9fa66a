"""Time to the first token for each kind of turn: the prompt laid out for reuse against the earlier layout, same run.

    exo bench latency [--turns 10] [--threads 2] [--quick] [--json] [--out FILE]
    python -m benchmarks.bench_latency ...

Two real exods answer with the `standard` board's model (Qwen2.5-Coder 0.5B,
``OMP_WAIT_POLICY=PASSIVE``), each on its own home holding the same store (the
invented person's ten belief nodes of ``benchmarks/data/store_answers.json``)
and workspace (``todo.txt``):

* **baseline**: the earlier layout (``[context] layout = "system"``: the
  retrieved beliefs inside the system message, before the tools and the
  conversation), no saved prompt state, no warm-up: exod as it was;
* **reuse**: the layout for reuse (``layout = "reuse"``), the fixed head's
  state saved in the home (``[models.local] prefix_cache``) and read ahead
  after start and after a pack edit (``exo serve --warm-delay 0``).

Each round asks both the same turns, the two alternating which goes first (a
load spike costs both), five kinds of turn:

1. **first** of a new session (two per round: sessions A and B);
2. **follow-up** in session A, retrieving what it retrieves ("Tell me a bit more");
3. **follow-up, new beliefs** in session B: a question about another belief;
4. **after a pack edit**: a line added to ``pack.md``, then (reuse: once the
   warm-up has read the new head) a new session's first question;
5. **after a restart**: exod stopped (SIGTERM) and started again, then (reuse:
   once the warm-up has put the saved head back) a new session's first question.

Per turn: the time from ``turn.send`` to the first ``message.delta``, and from
the first ``usage.updated`` the prompt's tokens, those read from the cache and
those **evaluated**. Every follow-up is a session's second turn, so the new
tail of any turn is its prompt less the fixed head (``head_tokens``, from the
warm-up's log line): ``within_tail`` counts the turns that evaluated no more.
The reference, measured in the same run in a child process with the same
GGUF and threads: the seconds llama-cpp-python needs to evaluate 250 fresh
tokens (median of 3); ``within_2x_250`` counts the turns whose first token
came within twice that. The Pi 5 figure is an **estimate**: tokens evaluated
divided by the published ~290 prompt tokens/s of a 0.5B Q4_0 on 4 threads.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks._common import bench_parser, child_env, machine_info, median, proc_memory_kb, write_results
from benchmarks.bench_store_answers import DATA, _healthy, _write_home

ROOT = Path(__file__).resolve().parents[1]

MODEL = "qwen2.5-coder-0.5b-instruct"
PI5_PROMPT_TOKENS_PER_S = 290.0  # published: Qwen2.5 0.5B Q4_0, llama.cpp, Raspberry Pi 5, 4 threads
FRESH = 250
LAYOUTS = ("baseline", "reuse")
KINDS = ("first", "follow-up", "follow-up, new beliefs", "after a pack edit", "after a restart")
# (first question, a question about another belief); the follow-up of session A is FOLLOW_UP
TOPICS = [
    ("Where does my sister live?", "And what is my cat called?"),
    ("Who is my dentist?", "And where do I work?"),
    ("What is my partner's name?", "And what do I eat?"),
    ("Where do I work?", "And when is my birthday?"),
    ("What do I eat?", "And which instrument do I play?"),
    ("What is my daughter's name?", "And how do I get to work?"),
    ("What is my cat called?", "And where does my sister live?"),
    ("When is my birthday?", "And who is my dentist?"),
    ("Which instrument do I play?", "And what is my partner's name?"),
    ("How do I get to work?", "And what is my daughter's name?"),
]
FOLLOW_UP = "Tell me a bit more about that."
_HEAD_LINE = re.compile(r"the prompt's fixed head: (\w+) \((\d+) tokens\)")


def _model_path() -> Path:
    from exo_edge.manifest import find_manifest
    from exo_edge.paths import locate_model_file

    path = locate_model_file(find_manifest(MODEL).primary_file.name)
    if path is None:
        raise SystemExit(f"model {MODEL} not fetched: run `exo models fetch {MODEL}` first")
    return path


# -- the reference: 250 fresh tokens, direct -----------------------------------------------------------


def fresh_child(threads: int, n_ctx: int) -> dict[str, Any]:
    """In the child: seconds to evaluate FRESH tokens from an empty cache (3 times), and the fixed head's."""
    import llama_cpp

    from exo_core.agent.loop import BASE_PROMPT

    llm = llama_cpp.Llama(
        model_path=str(_model_path()),
        n_ctx=n_ctx,
        n_threads=threads,
        n_threads_batch=threads,
        n_batch=256,
        n_ubatch=256,
        swa_full=True,
        seed=0,
        verbose=False,
    )
    text = (BASE_PROMPT + " " + (ROOT / "store_template" / "pack.md").read_text()) * 4
    tokens = llm.tokenize(text.encode(), add_bos=False, special=False)[:FRESH]
    times = []
    for _ in range(3):
        llm.reset()
        llm._ctx.kv_cache_clear()
        start = time.perf_counter()
        llm.eval(tokens)
        times.append(time.perf_counter() - start)
    return {"fresh_tokens": len(tokens), "seconds": times, "median_s": sorted(times)[1]}


def run_fresh(threads: int, n_ctx: int) -> dict[str, Any]:
    env = child_env() | {"OMP_WAIT_POLICY": "PASSIVE"}
    cmd = [sys.executable, "-m", "benchmarks.bench_latency", "--child-fresh", "--threads", str(threads)]
    cmd += ["--n-ctx", str(n_ctx)]
    out = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=1800, check=False)
    if out.returncode != 0:
        raise SystemExit(f"the direct reference failed:\n{out.stderr[-2000:]}")
    return dict(json.loads(out.stdout.strip().splitlines()[-1]))


# -- one exod per layout ---------------------------------------------------------------------------------


class Exod:
    """One home and its exod, started and restarted as the benchmark needs."""

    def __init__(self, root: Path, layout: str, threads: int, data: dict[str, Any]) -> None:
        self.layout = layout
        self.home = root / layout / "home"
        self.workspace = root / layout / "ws"
        self.log_path = root / layout / "exod.log"
        env = child_env() | {"OMP_WAIT_POLICY": "PASSIVE"}
        self.env = env
        _write_home(self.home, self.workspace, "standard", data, env)
        config = (self.home / "config.toml").read_text(encoding="utf-8")
        config = _with_keys(config, "models.local", {"n_threads": str(threads)})
        if layout == "baseline":
            config = _with_keys(config, "models.local", {"prefix_cache": "false"})
            config = _with_keys(config, "context", {"layout": '"system"'})
        (self.home / "config.toml").write_text(config, encoding="utf-8")
        self.proc: subprocess.Popen[bytes] | None = None
        self.peak_kb = 0

    @property
    def sock(self) -> Path:
        return self.home / "run" / "exod.sock"

    def start(self) -> None:
        warm = "0" if self.layout == "reuse" else "-1"
        cmd = [sys.executable, "-m", "exo_core.cli", "serve", "--home", str(self.home), "--model", "local"]
        cmd += ["--workspace", str(self.workspace), "--log-level", "INFO", "--warm-delay", warm]
        with open(self.log_path, "ab") as log:  # exod keeps its own copy of the descriptor
            self.proc = subprocess.Popen(cmd, env=self.env, stdin=subprocess.DEVNULL, stdout=log, stderr=log)
        deadline = time.monotonic() + 180
        while not _healthy(self.sock):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise SystemExit(f"exod ({self.layout}) did not start:\n{self.log_path.read_text()[-3000:]}")
            time.sleep(0.1)

    def stop(self) -> None:
        if self.proc is None:
            return
        self._note_peak()
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(timeout=10)
        self.proc = None

    def _note_peak(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            try:
                self.peak_kb = max(self.peak_kb, proc_memory_kb(self.proc.pid)["VmHWM"])
            except (OSError, RuntimeError):
                pass

    def heads(self) -> list[tuple[str, int]]:
        """Every warm-up outcome in the log so far, oldest first: (what it did, the head's tokens)."""
        text = self.log_path.read_text(encoding="utf-8", errors="replace") if self.log_path.exists() else ""
        return [(m.group(1), int(m.group(2))) for m in _HEAD_LINE.finditer(text)]

    def wait_head(self, seen: int, timeout: float = 900.0) -> tuple[str, int] | None:
        """The first warm-up outcome after the ``seen``-th (None for the baseline, which does not warm)."""
        if self.layout != "reuse":
            return None
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            heads = self.heads()
            if len(heads) > seen:
                return heads[seen]
            time.sleep(0.5)
        raise SystemExit(f"exod ({self.layout}) read no fixed head within {timeout:g} s")

    def edit_pack(self, n: int) -> None:
        from exo_core.seams.home import ExoHome

        pack = ExoHome(self.home).store_path() / "pack.md"
        with open(pack, "a", encoding="utf-8") as fh:
            fh.write(f"\n- Edit {n}: I like my tea without sugar.\n")


def _with_keys(config: str, table: str, keys: dict[str, str]) -> str:
    """``config`` (TOML text) with ``keys`` set in ``[table]`` (the table added when missing)."""
    # exo init's config holds each key once at most, so a key's old line can go wherever it is
    lines = [line for line in config.splitlines() if not line.startswith(tuple(f"{key} =" for key in keys))]
    header = f"[{table}]"
    if header not in lines:
        lines += ["", header]
    at = lines.index(header) + 1
    for key, value in keys.items():
        lines.insert(at, f"{key} = {value}")
    return "\n".join(lines) + "\n"


async def _turn(sock: Path, session: str | None, text: str, timeout: float) -> dict[str, Any]:
    """One turn through the protocol; its first token's time and its first model call's usage."""
    from exo_core.client import ExoClient

    async with ExoClient.for_socket(sock, client_name="bench-latency") as client:
        await client.hello()
        if session is None:
            session = (await client.request("session.create", {"title": "latency"}))["session"]["id"]
        first: float | None = None
        usage: dict[str, Any] | None = None
        calls = 0
        tools: list[str] = []
        stop = ""
        answer: list[str] = []
        start = time.perf_counter()
        turn = (await client.request("turn.send", {"session": session, "text": text}))["turn_id"]

        async def read() -> None:
            nonlocal first, usage, calls, stop
            async for event in client.events(session=session):
                body = event.body
                if body.get("turn_id", turn) != turn:
                    continue
                if event.type == "message.delta" and body.get("text"):
                    first = first or time.perf_counter()
                    answer.append(body["text"])
                elif event.type == "usage.updated":
                    calls += 1
                    usage = usage or dict(body)
                elif event.type == "tool.started":
                    tools.append(str(body.get("name")))
                elif event.type == "turn.completed":
                    stop = str(body.get("stop_reason"))
                    return

        await asyncio.wait_for(read(), timeout)
    usage = usage or {}
    return {
        "session": session,
        "q": text,
        "first_token_s": round(first - start, 3) if first is not None else None,
        "input_tokens": int(usage.get("input_tokens", 0)),
        "cache_read_tokens": int(usage.get("cache_read_tokens", 0)),
        "evaluated_tokens": int(usage.get("evaluated_tokens", usage.get("input_tokens", 0))),
        "model_calls": calls,
        "tools": tools,
        "stop_reason": stop,
        "answer": "".join(answer)[:200],
    }


def _ask(exod: Exod, kind: str, session: str | None, text: str, rnd: int, timeout: float) -> dict[str, Any]:
    row = asyncio.run(_turn(exod.sock, session, text, timeout))
    row |= {"layout": exod.layout, "kind": kind, "round": rnd, "loadavg_1m": round(os.getloadavg()[0], 2)}
    exod._note_peak()
    print(
        f"round {rnd} {exod.layout:8} {kind:24} first token {row['first_token_s']} s, evaluated "
        f"{row['evaluated_tokens']}/{row['input_tokens']} tokens, load {row['loadavg_1m']}",
        file=sys.stderr,
        flush=True,
    )
    return row


def one_round(exod: Exod, rnd: int, timeout: float, keep: Any) -> None:
    """The five kinds of turn on one exod (see the module docstring); ``keep`` gets each row as it is measured."""
    first, other = TOPICS[rnd % len(TOPICS)]
    nxt_first, _ = TOPICS[(rnd + 3) % len(TOPICS)]
    a = _ask(exod, "first", None, first, rnd, timeout)
    keep(a)
    keep(_ask(exod, "follow-up", a["session"], FOLLOW_UP, rnd, timeout))
    b = _ask(exod, "first", None, nxt_first, rnd, timeout)
    keep(b)
    keep(_ask(exod, "follow-up, new beliefs", b["session"], other, rnd, timeout))
    seen = len(exod.heads())
    exod.edit_pack(rnd)
    exod.wait_head(seen)
    keep(_ask(exod, "after a pack edit", None, TOPICS[(rnd + 5) % len(TOPICS)][0], rnd, timeout))
    exod.stop()
    seen = len(exod.heads())
    exod.start()
    exod.wait_head(seen)
    keep(_ask(exod, "after a restart", None, TOPICS[(rnd + 7) % len(TOPICS)][0], rnd, timeout))


def _p90(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(0.9 * (len(ordered) - 1)))]


def summarize(rows: list[dict[str, Any]], head: int, fresh_s: float) -> list[dict[str, Any]]:
    """One line per layout and kind: medians, p90s, the checks and the Pi 5 estimate."""
    out = []
    for kind in KINDS:
        for layout in LAYOUTS:
            picked = [r for r in rows if r["layout"] == layout and r["kind"] == kind]
            firsts = [r["first_token_s"] for r in picked if r["first_token_s"] is not None]
            evaluated = [float(r["evaluated_tokens"]) for r in picked]
            if not picked:
                continue
            within_tail = sum(1 for r in picked if r["evaluated_tokens"] <= max(0, r["input_tokens"] - head))
            within_2x = sum(1 for s in firsts if s <= 2 * fresh_s)
            out.append(
                {
                    "kind": kind,
                    "layout": layout,
                    "turns": len(picked),
                    "evaluated_median": median(evaluated),
                    "evaluated_p90": _p90(evaluated),
                    "input_median": median([float(r["input_tokens"]) for r in picked]),
                    "first_token_median_s": round(median(firsts), 2) if firsts else None,
                    "first_token_p90_s": round(_p90(firsts), 2) if firsts else None,
                    "within_tail": within_tail,
                    "within_2x_250": within_2x,
                    "pi5_estimate_s": round(median(evaluated) / PI5_PROMPT_TOKENS_PER_S, 2),
                    "no_text": sum(1 for r in picked if r["first_token_s"] is None),
                }
            )
    return out


def run(args: argparse.Namespace) -> dict[str, Any]:
    data = json.loads(DATA.read_text(encoding="utf-8"))
    root = Path(tempfile.mkdtemp(prefix="exo-lat-", dir=args.tmp))
    started = time.perf_counter()
    machine_start = machine_info()
    rows: list[dict[str, Any]] = []
    exods = {layout: Exod(root, layout, args.threads, data) for layout in LAYOUTS}
    n_ctx = 4096
    try:
        for exod in exods.values():
            exod.start()
        head = exods["reuse"].wait_head(0)
        head_tokens = head[1] if head else 0
        fresh = run_fresh(args.threads, n_ctx)

        def result(fresh_end: dict[str, Any] | None, rounds: int) -> dict[str, Any]:
            ends = [fresh["median_s"]] + ([fresh_end["median_s"]] if fresh_end else [])
            fresh_s = median(ends)
            states = sorted((exods["reuse"].home / "cache" / "prefix").glob("*.kvstate"))
            return {
                "command": "exo bench latency" + (f" --turns {args.turns}" if args.turns != 10 else ""),
                "complete": fresh_end is not None,
                "model": MODEL,
                "threads": args.threads,
                "n_ctx": n_ctx,
                "rounds": rounds,
                "head_tokens": head_tokens,
                "fresh_250": {"start": fresh, "end": fresh_end, "median_s": round(fresh_s, 3)},
                "summary": summarize(rows, head_tokens, fresh_s),
                "state_files_bytes": [p.stat().st_size for p in states],
                "exod_peak_rss_mb": {k: round(e.peak_kb / 1024, 1) for k, e in exods.items()},
                "rows": rows,
                "machine": machine_start,
                "loadavg_end": [round(x, 2) for x in os.getloadavg()],
                "seconds": round(time.perf_counter() - started, 1),
            }

        for rnd in range(args.turns):

            def keep(row: dict[str, Any], rounds: int = rnd) -> None:
                rows.append(row)  # each turn as it is measured: a run cut short keeps what it measured
                write_results("latency", result(None, rounds), out=args.out, quick=args.quick)

            # the reuse layout first in even rounds: a run cut short has both layouts' first turns
            order = LAYOUTS[::-1] if rnd % 2 == 0 else LAYOUTS
            for layout in order:
                one_round(exods[layout], rnd, args.turn_timeout, keep)
        final = result(run_fresh(args.threads, n_ctx), args.turns)
    finally:
        for exod in exods.values():
            exod.stop()
        shutil.rmtree(root, ignore_errors=True)
    return final


def main() -> int:
    ap = bench_parser("latency", __doc__.split("\n")[0], quick_help="one round; writes nothing unless --out")
    ap.add_argument("--turns", type=int, default=10, help="rounds: turns of each kind per layout (default 10)")
    ap.add_argument("--threads", type=int, default=2, help="model threads (the standard board's default is 2)")
    ap.add_argument("--turn-timeout", type=float, default=900.0, help="seconds one turn may take")
    ap.add_argument("--tmp", type=Path, default=None, help="folder for the temporary homes (a short path)")
    ap.add_argument("--child-fresh", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--n-ctx", type=int, default=4096, help=argparse.SUPPRESS)
    args = ap.parse_args()

    def terminated(signum: int, frame: object) -> None:
        raise SystemExit(128 + signum)  # unwinds through run()'s clean-up: both exods stopped, the homes removed

    signal.signal(signal.SIGTERM, terminated)
    if args.child_fresh:
        print(json.dumps(fresh_child(args.threads, args.n_ctx)))
        return 0
    _model_path()
    if args.quick:
        args.turns = 1
    result = run(args)
    if args.json:
        print(json.dumps(result, indent=2, sort_keys=True))
    for line in result["summary"]:
        print(
            f"{line['kind']:24} {line['layout']:8} n={line['turns']:2} evaluated {line['evaluated_median']:.0f} "
            f"(p90 {line['evaluated_p90']:.0f}) of {line['input_median']:.0f}; first token "
            f"{line['first_token_median_s']} s (p90 {line['first_token_p90_s']}); within tail "
            f"{line['within_tail']}/{line['turns']}, within 2x250 {line['within_2x_250']}/{line['turns']}",
            file=sys.stderr,
        )
    written = write_results("latency", result, out=args.out, quick=args.quick)
    if written is not None:
        print(f"wrote {written}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
