"""Answers through ``exo chat`` on a fresh home: from the store, general knowledge, and with a file tool.

    python -m benchmarks.bench_store_answers --board standard [--json] [--only open|heldout] [--limit N]
    exo bench answers --board standard --json

Issue 18's answer benchmark. For one board profile (``exo init --board``):

1. a fresh Exo home; the invented person's beliefs of
   ``benchmarks/data/store_answers.json`` written into its store as nodes
   (``Store.write_node``, the store's own format: docs/store.md), and a
   workspace holding ``todo.txt``;
2. a real exod (``exo serve --model local --workspace WS``) answering with the
   profile's local model, one thread, ``OMP_WAIT_POLICY=PASSIVE``;
3. each question piped into its own ``exo chat --approve deny`` process, so
   every question is a fresh session (nothing carries over from the last
   answer); the transcript it prints is the answer. No question asks to
   change anything, so every approval is denied (reading a file needs none),
   and the workspace files are written again before each question.

**Scoring** (transparent, no judge model): an answer is right when every entry
of the question's ``expect`` appears in it, case-insensitive, at the start of a
word; an entry ``a|b`` is met by either. The answer is the assistant's text only
(tool output lines are left out, so a file's content echoed by the tool does not
count). General questions must also make no tool call; file questions must make
one (the answer is only in the file). Store questions may call tools (``recall``
and ``search`` are how a model may look a belief up).

**Halves, fixed before any run**: within each kind the questions are numbered
from 0 in the data file's order; odd numbers are the **held-out** half, even
numbers the **open** half. Nobody tunes a prompt on the held-out half: its
answers are written to a separate file (``store_answers_<board>.heldout.json``)
and the console shows only its scores. Results go to
``$EXO_HOME/bench/store_answers_<board>.json``.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks._common import bench_parser, child_env, machine_info, write_results

ROOT = Path(__file__).resolve().parents[1]


__all__ = ["DATA", "HELD_OUT", "half_of", "load_questions", "main", "matches", "parse_transcript", "score", "summarize"]

DATA = ROOT / "benchmarks" / "data" / "store_answers.json"
HELD_OUT = "heldout"
OPEN = "open"
KINDS = ("store", "general", "file")
# What `exo chat`'s line client prints that is not the assistant's text (exo_core/client/linechat.py).
_TOOL_START = "  ⚙ "
_NOT_ANSWER = ("  │", "  ✓ ", "  ✗ ", "  ? ", "    ", "  approval ", "  ! ", "  (approval")
_TURN_END = re.compile(r"^  \[turn (\w+)(?::\s*(.*))?\]$")


def half_of(index: int) -> str:
    """The half a question belongs to, by its position within its kind (fixed before any run)."""
    if index % 2 == 1:
        return HELD_OUT
    return OPEN


def matches(answer: str, expect: list[str]) -> bool:
    """Every entry of ``expect`` appears at a word start in ``answer`` (case-insensitive); ``a|b``: either."""
    text = answer.lower()
    for entry in expect:
        alternatives = [alt.strip().lower() for alt in entry.split("|") if alt.strip()]
        found = False
        for alt in alternatives:
            if re.search(r"(?<!\w)" + re.escape(alt), text):
                found = True
                break
        if not found:
            return False
    return True


def parse_transcript(stdout: str, question: str) -> dict[str, Any]:
    """The assistant's text, the tools it called and how the turn ended, from ``exo chat``'s output."""
    text_lines: list[str] = []
    tools: list[str] = []
    stop = "end"
    error = ""  # `[turn error: ...]` and the benchmark's own `[turn timeout: ...]`
    for line in stdout.splitlines():
        if line.startswith("session ") and not text_lines and not tools:
            continue
        if line == f"> {question}":
            continue
        if line.startswith(_TOOL_START):
            tools.append(line[len(_TOOL_START) :].split(" ", 1)[0])
            continue
        ended = _TURN_END.match(line)
        if ended is not None:
            stop = ended.group(1)
            error = ended.group(2) or ""
            continue
        if line.startswith(_NOT_ANSWER):
            continue
        text_lines.append(line)
    return {"answer": "\n".join(text_lines).strip(), "tools": tools, "stop": stop, "error": error}


def score(kind: str, expect: list[str], parsed: dict[str, Any]) -> bool:
    """Whether the answer is right (see the module docstring for the rule)."""
    if parsed["stop"] in ("error", "timeout"):
        return False
    if not matches(parsed["answer"], expect):
        return False
    if kind == "general":
        return not parsed["tools"]
    if kind == "file":
        return bool(parsed["tools"])
    return True


def load_questions(data: dict[str, Any]) -> list[dict[str, Any]]:
    """Every question with its kind, number within the kind and half, in the order they are asked.

    The order interleaves the kinds (store 0, general 0, file 0, store 1, ...), and so the halves:
    a run cut short has asked a balanced sample rather than only the first kind.
    """
    by_kind = []
    for kind in KINDS:
        items = [
            {"id": f"{kind}-{index:02d}", "kind": kind, "half": half_of(index), **item}
            for index, item in enumerate(data["questions"][kind])
        ]
        by_kind.append(items)
    out = []
    for position in range(max(len(items) for items in by_kind)):
        for items in by_kind:
            if position < len(items):
                out.append(items[position])
    return out


def _write_home(home: Path, workspace: Path, board: str, data: dict[str, Any], env: dict[str, str]) -> str:
    """A fresh home for ``board`` with the person's nodes, and the workspace files; ``exo init``'s output."""
    init = subprocess.run(
        [sys.executable, "-m", "exo_core.cli", "init", "--home", str(home), "--board", board],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    from exo_core.seams.home import ExoHome
    from exo_core.store import Node, Store

    store = Store.open(ExoHome(home).store_path())
    for item in data["nodes"]:
        domain = item["id"].split("/", 1)[0]
        store.write_node(
            Node(
                id=item["id"],
                title=item["title"],
                type=item["type"],
                domain=domain,
                summary=item["summary"],
                load_when=item["load_when"],
                confidence="high",
                stability="durable",
                valid_from="2025-01-01",
                body="\n" + item["body"] + "\n",
            )
        )
    workspace.mkdir(parents=True, exist_ok=True)
    for name, text in data["workspace"].items():
        (workspace / name).write_text(text, encoding="utf-8")
    return init.stdout


def _healthy(sock: Path) -> bool:
    client = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    client.settimeout(2.0)
    try:
        client.connect(str(sock))
        client.sendall(b"GET /health HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
        reply = client.recv(65536)
    except OSError:
        return False
    finally:
        client.close()
    return b'"ok": true' in reply or b'"ok":true' in reply


def _ask(home: Path, question: str, env: dict[str, str], timeout: float) -> tuple[str, float]:
    """One question in a fresh ``exo chat`` session; its transcript and seconds."""
    started = time.perf_counter()
    try:
        done = subprocess.run(
            [sys.executable, "-m", "exo_core.cli", "chat", "--home", str(home), "--no-spawn", "--approve", "deny"],
            input=question + "\n",
            env=env,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
    except subprocess.TimeoutExpired as exc:
        partial = exc.stdout.decode(errors="replace") if isinstance(exc.stdout, bytes) else (exc.stdout or "")
        return partial + f"\n  [turn timeout: no answer within {timeout:g} s]", time.perf_counter() - started
    took = time.perf_counter() - started
    transcript = done.stdout
    if done.returncode != 0:
        transcript += f"\n  [turn error: exo chat exited {done.returncode}: {done.stderr.strip()[-300:]}]"
    return transcript, took


def _summary(rows: list[dict[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {"right": sum(r["right"] for r in rows), "of": len(rows)}
    out["percent"] = round(100.0 * out["right"] / out["of"], 1) if rows else None
    for kind in KINDS:
        picked = [r for r in rows if r["kind"] == kind]
        out[kind] = {"right": sum(r["right"] for r in picked), "of": len(picked)}
    out["general_with_tool_call"] = sum(1 for r in rows if r["kind"] == "general" and r["tools"])
    out["file_without_tool_call"] = sum(1 for r in rows if r["kind"] == "file" and not r["tools"])
    out["turn_errors"] = sum(1 for r in rows if r["stop"] == "error")
    out["timeouts"] = sum(1 for r in rows if r["stop"] == "timeout")
    return out


def run(args: argparse.Namespace) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Ask every chosen question on a fresh home; one row per question, and facts about the run.

    With ``--rows FILE`` each row is appended to FILE (JSON lines) as soon as it is scored, so a run
    cut short keeps what it asked, and halves asked by separate processes can be put together.
    """
    data = json.loads(DATA.read_text(encoding="utf-8"))
    questions = load_questions(data)
    if args.only:
        questions = [q for q in questions if q["half"] == args.only]
    if args.resume and args.rows is not None and args.rows.exists():
        done = {json.loads(line)["id"] for line in args.rows.read_text(encoding="utf-8").splitlines() if line.strip()}
        questions = [q for q in questions if q["id"] not in done]
    if args.kind:
        questions = [q for q in questions if q["kind"] == args.kind]
    if args.limit:
        questions = questions[: args.limit]
    tmp = Path(tempfile.mkdtemp(prefix="exo-ans-", dir=args.tmp))
    home, workspace = tmp / "home", tmp / "ws"
    env = child_env()
    env["OMP_WAIT_POLICY"] = "PASSIVE"
    rows: list[dict[str, Any]] = []
    exod: subprocess.Popen[bytes] | None = None
    log = None
    started = time.perf_counter()
    try:
        init_out = _write_home(home, workspace, args.board, data, env)
        if args.layout == "system":  # the earlier layout, for a same-run comparison (docs/context.md)
            with open(home / "config.toml", "a", encoding="utf-8") as fh:
                fh.write('\n[context]\nlayout = "system"\n')
        config = (home / "config.toml").read_text(encoding="utf-8")
        if args.rows is not None:  # the run's facts now: a run cut short still has them
            early = {"board": args.board, "home_config": config, "exo_init": init_out}
            args.rows.with_suffix(".meta.json").write_text(json.dumps(early, indent=2), encoding="utf-8")
        log = open(tmp / "exod.log", "wb")  # noqa: SIM115 (exod writes to it until the finally block)
        exod = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "exo_core.cli",
                "serve",
                "--home",
                str(home),
                "--model",
                "local",
                "--workspace",
                str(workspace),
                "--log-level",
                "WARNING",
            ],
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=log,
        )
        sock = home / "run" / "exod.sock"
        deadline = time.monotonic() + 120
        while not _healthy(sock):
            if exod.poll() is not None or time.monotonic() > deadline:
                raise SystemExit(f"exod did not start: {(tmp / 'exod.log').read_text(errors='replace')[-2000:]}")
            time.sleep(0.1)
        for n, item in enumerate(questions, 1):
            for name, text in data["workspace"].items():  # as written: an earlier answer may have changed it
                (workspace / name).write_text(text, encoding="utf-8")
            transcript, took = _ask(home, item["q"], env, args.turn_timeout)
            parsed = parse_transcript(transcript, item["q"])
            right = score(item["kind"], item["expect"], parsed)
            rows.append(
                {
                    "id": item["id"],
                    "kind": item["kind"],
                    "half": item["half"],
                    "q": item["q"],
                    "expect": item["expect"],
                    **parsed,
                    "right": right,
                    "seconds": round(took, 1),
                }
            )
            if args.rows is not None:
                with open(args.rows, "a", encoding="utf-8") as fh:
                    fh.write(json.dumps(rows[-1]) + "\n")
            shown = "" if item["half"] == HELD_OUT else f"  {parsed['answer'][:90]!r} tools={parsed['tools']}"
            print(
                f"[{n}/{len(questions)}] {item['id']} {item['half']:7} {'ok  ' if right else 'MISS'} {took:.0f} s{shown}",
                flush=True,
            )
    finally:
        if exod is not None and exod.poll() is None:
            exod.terminate()
            try:
                exod.wait(timeout=30)
            except subprocess.TimeoutExpired:
                exod.kill()
                exod.wait(timeout=10)
        if log is not None:
            log.close()
        shutil.rmtree(tmp, ignore_errors=True)
    meta = {
        "board": args.board,
        "layout": args.layout,
        "home_config": config,
        "exo_init": init_out,
        "seconds": round(time.perf_counter() - started, 1),
    }
    return rows, meta


def summarize(rows: list[dict[str, Any]], meta: dict[str, Any]) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The results JSON of ``rows`` (held-out answers left out of it) and the held-out rows."""
    rows = sorted(rows, key=lambda r: r["id"])
    halves = {half: _summary([r for r in rows if r["half"] == half]) for half in (OPEN, HELD_OUT)}
    seconds = sorted(r["seconds"] for r in rows)
    result = {
        "command": f"python -m benchmarks.bench_store_answers --board {meta['board']} --json",
        **meta,
        "held_out_half": HELD_OUT,
        "halves_rule": "within each kind, questions numbered from 0 in benchmarks/data/store_answers.json; "
        "odd numbers are held out (never used to tune a prompt), even numbers are open",
        "scoring": "every `expect` entry at a word start, case-insensitive ('a|b': either); general questions "
        "must call no tool, file questions must call one; the assistant's text only (tool output excluded)",
        "fresh_session_per_question": True,
        "all": _summary(rows),
        "halves": halves,
        "open_answers": [r for r in rows if r["half"] == OPEN],
        "heldout_scores": [
            {"id": r["id"], "right": r["right"], "tools": r["tools"], "stop": r["stop"]}
            for r in rows
            if r["half"] == HELD_OUT
        ],
        "median_seconds_per_question": seconds[len(seconds) // 2] if seconds else None,
        "machine": machine_info(),
    }
    return result, [r for r in rows if r["half"] == HELD_OUT]


def build_parser() -> argparse.ArgumentParser:
    """Arguments of the benchmark (``exo bench answers`` passes its own through)."""
    parser = bench_parser(
        "answers",
        __doc__.split("\n")[0],
        quick_help="the first 2 questions (unless --limit); writes nothing unless --out",
        json_help="print the results JSON instead of the scores",
    )
    parser.add_argument("--board", choices=("small", "standard", "laptop"), default="standard")
    parser.add_argument("--only", choices=(OPEN, HELD_OUT), default=None, help="ask one half only")
    parser.add_argument("--limit", type=int, default=0, help="ask only the first N questions (a trial run)")
    parser.add_argument(
        "--kind", choices=("store", "general", "file"), default=None, help="ask one kind only (a trial run)"
    )
    parser.add_argument("--turn-timeout", type=float, default=1200.0, help="seconds for one question")
    parser.add_argument(
        "--layout",
        choices=("reuse", "system"),
        default="reuse",
        help="the prompt's layout ([context] layout): system is the earlier one, for a comparison",
    )
    parser.add_argument("--tmp", type=Path, default=None, help="folder for the temporary home (a short path)")
    parser.add_argument("--rows", type=Path, default=None, help="append each scored row to this JSON-lines file")
    parser.add_argument("--resume", action="store_true", help="with --rows: skip the questions the file already has")
    parser.add_argument(
        "--from-rows",
        type=Path,
        nargs="+",
        default=None,
        metavar="ROWS",
        help="ask nothing: build the results from rows files (e.g. the two halves run apart) and --meta",
    )
    parser.add_argument("--meta", type=Path, default=None, help="with --from-rows: a run's facts (JSON)")
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark and print the scores of both halves."""
    args = build_parser().parse_args(argv)

    def terminated(signum: int, frame: object) -> None:
        raise SystemExit(128 + signum)  # unwinds through run()'s clean-up: exod stopped, the home removed

    signal.signal(signal.SIGTERM, terminated)
    if args.quick and not args.limit:
        args.limit = 2
    if args.from_rows:
        rows = []
        for path in args.from_rows:
            rows += [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
        meta = json.loads(args.meta.read_text(encoding="utf-8")) if args.meta else {"board": args.board}
        meta["board"] = args.board
        result, heldout_rows = summarize(rows, meta)
    else:
        rows, meta = run(args)
        result, heldout_rows = summarize(rows, meta)
        if args.rows is not None:
            args.rows.with_suffix(".meta.json").write_text(json.dumps(meta, indent=2), encoding="utf-8")
    scores = sys.stdout
    if args.json:  # the JSON alone on standard output, the scores beside it on standard error
        print(json.dumps(result, indent=2, sort_keys=True))
        scores = sys.stderr
    for half, s in result["halves"].items():
        print(
            f"{args.board} {half:8} right {s['right']}/{s['of']} ({s['percent']} %): store "
            f"{s['store']['right']}/{s['store']['of']}, general {s['general']['right']}/{s['general']['of']}, "
            f"file {s['file']['right']}/{s['file']['of']}; general with a tool call {s['general_with_tool_call']}, "
            f"turn errors {s['turn_errors']}",
            file=scores,
        )
    s = result["all"]
    summary = f"{args.board} all      right {s['right']}/{s['of']} ({s['percent']} %)"
    print(summary, file=scores)
    # a partial run (one half, or the first N questions) is a trial: it writes only where --out says
    partial = bool(args.only or args.limit or args.kind) and not args.from_rows
    quick = args.quick or partial
    name = f"store_answers_{args.board}" + ("" if args.layout == "reuse" else f"_{args.layout}")
    written = write_results(name, result, out=args.out, quick=quick)
    if written is not None:
        heldout = {
            "board": args.board,
            "note": "held-out answers: do not read while tuning prompts",
            "rows": heldout_rows,
        }
        heldout_out = None
        if args.out is not None:
            heldout_out = args.out.with_suffix(".heldout.json")
        heldout_written = write_results(f"{name}.heldout", heldout, out=heldout_out, quick=quick)
        print(f"wrote {written} (held-out answers apart, in {heldout_written})", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
