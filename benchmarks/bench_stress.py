"""Stress target of issue 19: crashes, hostile input and connection floods against real exod processes.

    python -m benchmarks.bench_stress [--kill-cycles N] [--fuzz N] [--idle N] [--stall N] [--progress N] [--json] [--out F]

Parts (each skipped with a count of 0):

* **kill**: ``--kill-cycles`` times, start exod on a home with a store (so turns
  are recorded in the ledger), stream turns through it while following
  ``/events``, and SIGKILL it at a random moment. Before each kill the events a
  client received and the ledger entries a reader saw committed are noted;
  after the next start every one of them must still be there, byte for byte,
  and ``seq`` must be dense. Reports lost and changed counts (target: 0).
* **fuzz**: ``--fuzz`` generated commands (random bytes, truncated JSON, huge
  and deep values, 5,000-digit integers, lone surrogates, NaN, every command
  type with random bodies) over TCP ``POST /command`` and, as many again, as
  ``exo serve --stdio`` lines. Reports crashes (exod exiting), 5xx answers and
  answers without a typed error (target: 0 each).
* **idle**: ``--idle`` idle TCP connections from 20 loopback source addresses
  (127.0.2.x) held open while the owner's Unix socket is asked ``/health``
  every 50 ms; reports the slowest answer and how many took over 1 s (target:
  every answer within 1 s).
* **stall**: ``--stall`` POSTs of a 7.8 MB JSON array to ``/command`` while
  ``/health`` is probed; reports the probe latency against the same probe with
  no big bodies in flight (a ratio: benchmarks never assert times).

Issue 19's full counts are ``--kill-cycles 1000 --fuzz 100000 --idle 2000``;
the smoke test (tests/server/test_stress_small.py) runs a handful of each.
A full run writes $EXO_HOME/bench/stress.json (--update-results: benchmarks/results/).
"""

from __future__ import annotations

import http.client
import json
import os
import random
import signal
import socket
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

from exo_testkit import Exod, write_script
from unixhttp import UnixHTTPConnection

from benchmarks._common import bench_parser, machine_info, print_table, write_results

ROOT = Path(__file__).resolve().parents[1]


TYPED = {
    "malformed",
    "unknown_command",
    "bad_body",
    "too_large",
    "not_found",
    "conflict",
    "unsupported",
    "bad_request",
    "bad_config",
    "timeout",
}
COMMAND_TYPES = ["hello", "session.create", "turn.send", "search", "config.set", "config.get", "question.answer"]
COMMAND_TYPES += ["session.resume", "events.subscribe", "session.list", "no.such.command"]
_STARTED: list[Exod] = []  # every exod this run started, killed at the end whatever happens


def _exod(home: Path, script: Path, ws: Path, extra: list[str] | None = None) -> Exod:
    d = Exod(home, script, ws, extra=extra).start()
    _STARTED.append(d)
    return d


def _kill_leftovers() -> None:
    for d in _STARTED:
        if d.proc is not None and d.proc.poll() is None:
            d.proc.kill()
            d.proc.wait(10)


REPLY = {"text": "a reply long enough to stream as many deltas " * 8, "delay": 0.002, "chunk": 6}


# -- kill -------------------------------------------------------------------


def _unix_post(path: Path, body: dict[str, Any]) -> dict[str, Any]:
    conn = UnixHTTPConnection(str(path), timeout=30)
    try:
        conn.request("POST", "/command", body=json.dumps(body).encode(), headers={"Content-Type": "application/json"})
        return json.loads(conn.getresponse().read())
    finally:
        conn.close()


class _Follower(threading.Thread):
    """Follows /events over the Unix socket and keeps every (seq, data) it receives."""

    def __init__(self, sock: Path, since: int) -> None:
        super().__init__(daemon=True)
        self.sock, self.since = sock, since
        self.seen: dict[int, str] = {}

    def run(self) -> None:
        try:
            conn = UnixHTTPConnection(str(self.sock), timeout=60)
            conn.request("GET", f"/events?since={self.since}")
            resp = conn.getresponse()
            seq = None
            while True:
                line = resp.fp.readline()
                if not line:
                    return
                text = line.decode("utf-8").rstrip("\n")
                if text.startswith("id: "):
                    seq = int(text[4:])
                elif text.startswith("data: ") and seq is not None:
                    self.seen[seq] = text[6:]
        except (OSError, http.client.HTTPException, ValueError):
            return  # exod was killed


def _ledger_rows(store: Path) -> dict[int, bytes]:
    db = store / "ledger.sqlite"
    if not db.exists():
        return {}
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=30)
    try:
        return {
            n: str(chain).encode() + bytes(content)
            for n, chain, content in conn.execute("SELECT n, chain, content FROM entries")
        }
    finally:
        conn.close()


def _stored_events(home: Path) -> dict[int, str]:
    conn = sqlite3.connect(f"file:{home / 'sessions.sqlite'}?mode=ro", uri=True, timeout=30)
    try:
        return dict(conn.execute("SELECT seq, data FROM events"))
    finally:
        conn.close()


def run_kill(cycles: int, base: Path, seed: int, *, progress: int = 0) -> dict[str, Any]:
    """SIGKILL exod ``cycles`` times mid-stream; count acknowledged events and ledger entries lost or changed.

    With ``progress`` N, every N cycles the counts so far (all checked against a restarted exod) go to stderr.
    """
    from exo_core.bootstrap import init_home
    from exo_core.seams.home import ExoHome

    rng = random.Random(seed)
    home, ws = base / "kill-home", base / "kill-ws"
    ws.mkdir(parents=True, exist_ok=True)
    init_home(ExoHome(home))
    script = write_script(base / "kill-script.json", [REPLY])
    acked_events: dict[int, str] = {}
    acked_ledger: dict[int, bytes] = {}
    lost = changed = ledger_lost = ledger_changed = holes = 0
    started = time.perf_counter()
    for cycle in range(cycles):
        d = _exod(home, script, ws)
        stored = _stored_events(home)
        lost += sum(1 for seq in acked_events if seq not in stored)
        changed += sum(1 for seq, data in acked_events.items() if seq in stored and stored[seq] != data)
        holes += len(set(range(1, max(stored, default=0) + 1)) - set(stored))
        rows = _ledger_rows(home / "store")
        ledger_lost += sum(1 for n in acked_ledger if n not in rows)
        ledger_changed += sum(1 for n, row in acked_ledger.items() if n in rows and rows[n] != row)
        if progress and cycle and cycle % progress == 0:
            # Everything acknowledged before this start has just been checked: a valid partial result
            # if the run is stopped before its count (one JSON line on stderr).
            checked = {
                "cycles_checked": cycle,
                "acknowledged_events": len(acked_events),
                "events_lost": lost,
                "events_changed": changed,
                "seq_holes": holes,
                "ledger_entries_seen": len(acked_ledger),
                "ledger_lost": ledger_lost,
                "ledger_changed": ledger_changed,
                "seconds": round(time.perf_counter() - started, 1),
            }
            print(json.dumps({"kill_progress": checked}), file=sys.stderr, flush=True)
        follower = _Follower(d.socket, max(acked_events, default=0))
        follower.start()
        deadline = time.monotonic() + rng.uniform(0.3, 2.0)
        try:
            while time.monotonic() < deadline:
                session = _unix_post(d.socket, {"id": "s", "type": "session.create", "body": {}})["result"]["session"][
                    "id"
                ]
                _unix_post(d.socket, {"id": "t", "type": "turn.send", "body": {"session": session, "text": "go"}})
                acked_ledger.update(_ledger_rows(home / "store"))
        except (OSError, KeyError, http.client.HTTPException):
            pass
        acked_ledger.update(_ledger_rows(home / "store"))
        d.kill()
        follower.join(10)
        acked_events.update(follower.seen)
    d = _exod(home, script, ws)  # the last check after the last kill
    stored = _stored_events(home)
    lost += sum(1 for seq in acked_events if seq not in stored)
    changed += sum(1 for seq, data in acked_events.items() if seq in stored and stored[seq] != data)
    rows = _ledger_rows(home / "store")
    ledger_lost += sum(1 for n in acked_ledger if n not in rows)
    ledger_changed += sum(1 for n, row in acked_ledger.items() if n in rows and rows[n] != row)
    d.stop()
    return {
        "cycles": cycles,
        "acknowledged_events": len(acked_events),
        "events_lost": lost,
        "events_changed": changed,
        "seq_holes": holes,
        "ledger_entries_seen": len(acked_ledger),
        "ledger_lost": ledger_lost,
        "ledger_changed": ledger_changed,
        "seconds": round(time.perf_counter() - started, 1),
    }


# -- fuzz -------------------------------------------------------------------


def _value(rng: random.Random, depth: int = 0) -> Any:
    pick = rng.random()
    if depth > 3 or pick < 0.45:
        return rng.choice(
            [
                None,
                True,
                rng.randint(-(2**63), 2**63),
                rng.random() * 10 ** rng.randint(-5, 300),
                "".join(chr(rng.randint(32, 0x2FFF)) for _ in range(rng.randint(0, 12))),
                "x\ud800y",
                "",
            ]
        )
    if pick < 0.75:
        return [_value(rng, depth + 1) for _ in range(rng.randint(0, 4))]
    return {
        rng.choice(["session", "text", "key", "value", "query", "protocol", "zz"]): _value(rng, depth + 1)
        for _ in range(rng.randint(0, 4))
    }


def fuzz_body(rng: random.Random) -> bytes:
    """One hostile or random command body."""
    kind = rng.random()
    command = {"id": rng.choice(["f", "", 7, "\udc00", None]), "type": rng.choice(COMMAND_TYPES), "body": _value(rng)}
    text = json.dumps(command, ensure_ascii=True, allow_nan=True)
    if kind < 0.05:
        return bytes(rng.getrandbits(8) for _ in range(rng.randint(1, 200)))
    if kind < 0.10:
        return text[: rng.randint(0, len(text))].encode()
    if kind < 0.13:
        return (
            '{"id":"f","type":"config.set","body":{"key":"k","value":' + "9" * rng.randint(17, 6000) + "}}"
        ).encode()
    if kind < 0.16:
        n = rng.randint(60, 3000)
        return ('{"id":"f","type":"hello","body":{"protocol":' + "[" * n + "]" * n + "}}").encode()
    if kind < 0.18:
        return b'{"id":"f","type":"config.set","body":{"key":"k","value":[NaN,Infinity,1e999]}}'
    return text.encode()


def _typed(reply: dict[str, Any]) -> bool:
    return bool(reply.get("ok")) or (reply.get("error") or {}).get("code") in TYPED


def run_fuzz(count: int, base: Path, seed: int) -> dict[str, Any]:
    """``count`` fuzzed commands over TCP and as many over stdio."""
    rng = random.Random(seed)
    ws = base / "fuzz-ws"
    ws.mkdir(parents=True, exist_ok=True)
    script = write_script(base / "fuzz-script.json", [{"text": "ok"}])
    d = _exod(base / "fuzz-home", script, ws, extra=["--tcp", "127.0.0.1:0"])
    port = int((d.home / "run" / "tcp.port").read_text())
    token = (d.home / "token").read_text().strip()
    headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json", "Host": f"127.0.0.1:{port}"}
    tcp = {"sent": 0, "status_5xx": 0, "untyped": 0, "crashes": 0}
    started = time.perf_counter()
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    for _ in range(count):
        body = fuzz_body(rng)
        try:
            conn.request("POST", "/command", body=body, headers=headers)
            resp = conn.getresponse()
            data = resp.read()
        except (OSError, http.client.HTTPException):
            conn.close()
            if d.proc is not None and d.proc.poll() is not None:
                tcp["crashes"] += 1
                d.start()
                port = int((d.home / "run" / "tcp.port").read_text())
                headers["Host"] = f"127.0.0.1:{port}"
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
            continue
        tcp["sent"] += 1
        if resp.status >= 500:
            tcp["status_5xx"] += 1
        try:
            if not _typed(json.loads(data)):
                tcp["untyped"] += 1
        except ValueError:
            tcp["untyped"] += 1
    conn.close()
    tcp["seconds"] = round(time.perf_counter() - started, 1)
    tcp["exod_alive"] = d.proc is not None and d.proc.poll() is None
    d.stop()
    return {"tcp": tcp, "stdio": _fuzz_stdio(count, base, rng, script, ws)}


def _stdio_exod(cmd: list[str]) -> subprocess.Popen[bytes]:
    from benchmarks._common import child_env

    return subprocess.Popen(
        cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=child_env()
    )


def _fuzz_stdio(count: int, base: Path, rng: random.Random, script: Path, ws: Path) -> dict[str, Any]:
    cmd = [sys.executable, "-m", "exo_core.cli", "serve", "--stdio", "--no-unix", "--home", str(base / "stdio-home")]
    cmd += ["--model", f"scripted:{script}", "--workspace", str(ws), "--log-level", "ERROR"]
    stats = {"sent": 0, "skipped": 0, "untyped": 0, "crashes": 0}
    started = time.perf_counter()
    procs = [_stdio_exod(cmd)]
    try:
        for _ in range(count):
            line = fuzz_body(rng).replace(b"\n", b" ")
            if not line.strip() or b'"events.subscribe"' in line:
                stats["skipped"] += 1  # blank lines get no answer; a subscription streams lines of its own
                continue
            proc = procs[-1]
            assert proc.stdin is not None and proc.stdout is not None
            try:
                proc.stdin.write(line + b"\n")
                proc.stdin.flush()
                raw = proc.stdout.readline()
            except OSError:
                raw = b""
            if not raw:
                stats["crashes"] += 1
                proc.kill()
                proc.wait()
                procs.append(_stdio_exod(cmd))
                continue
            stats["sent"] += 1
            try:
                if not _typed(json.loads(raw)):
                    stats["untyped"] += 1
            except ValueError:
                stats["untyped"] += 1
        last = procs[-1]
        assert last.stdin is not None
        last.stdin.close()
        stats["exit_code"] = last.wait(60)
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    stats["seconds"] = round(time.perf_counter() - started, 1)
    return stats


# -- idle and stall ---------------------------------------------------------


def _health_latency(sock: Path) -> float:
    started = time.perf_counter()
    conn = UnixHTTPConnection(str(sock), timeout=30)
    try:
        conn.request("GET", "/health")
        conn.getresponse().read()
    except (OSError, http.client.HTTPException):
        return float("inf")
    finally:
        conn.close()
    return time.perf_counter() - started


def _server_established(port: int) -> int | None:
    """Connections exod holds on ``port`` (the server side's ESTAB count, from ``ss``), or None without ss."""
    try:
        out = subprocess.run(
            ["ss", "-tnH", "state", "established", f"( sport = :{port} )"], capture_output=True, text=True, check=False
        )
    except OSError:
        return None
    return sum(1 for line in out.stdout.splitlines() if line.strip())


def run_idle(count: int, base: Path, hold: float = 5.0) -> dict[str, Any]:
    """Open ``count`` idle TCP connections from 20 addresses and hold them; time the owner's /health throughout."""
    ws = base / "idle-ws"
    ws.mkdir(parents=True, exist_ok=True)
    d = _exod(base / "idle-home", write_script(base / "idle.json", []), ws, extra=["--tcp", "127.0.0.1:0"])
    port = int((d.home / "run" / "tcp.port").read_text())
    baseline = [_health_latency(d.socket) for _ in range(20)]
    latencies: list[float] = []
    stop = threading.Event()

    def probe() -> None:
        while not stop.is_set():
            latencies.append(_health_latency(d.socket))
            time.sleep(0.05)

    prober = threading.Thread(target=probe)
    prober.start()
    socks, failed = [], 0
    started = time.perf_counter()
    for i in range(count):
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.settimeout(2.0)
        sock.bind((f"127.0.2.{1 + i % 20}", 0))
        try:
            sock.connect(("127.0.0.1", port))
        except OSError:
            failed += 1
        socks.append(sock)
    opening = time.perf_counter() - started
    held = _server_established(port)
    time.sleep(hold)
    stop.set()
    prober.join()
    for sock in socks:
        sock.close()
    d.stop()
    return {
        "connections_attempted": count,
        "connect_failed": failed,
        "opening_s": round(opening, 1),
        "held_open_by_exod": held,
        "health_probes": len(latencies),
        "health_max_s": round(max(latencies), 4),
        "health_over_1s": sum(1 for x in latencies if x > 1.0),
        "baseline_health_max_s": round(max(baseline), 4),
    }


def run_stall(count: int, base: Path) -> dict[str, Any]:
    """``count`` 7.8 MB arrays POSTed while /health is probed; latency against a quiet baseline."""
    ws = base / "stall-ws"
    ws.mkdir(parents=True, exist_ok=True)
    d = _exod(base / "stall-home", write_script(base / "stall.json", []), ws)
    body = (
        '{"id":"big","type":"config.set","body":{"key":"k","value":[' + ",".join(["1"] * 3_900_000) + "]}}"
    ).encode()
    baseline = [_health_latency(d.socket) for _ in range(40)]
    done = threading.Event()
    codes: list[int] = []

    def post_big() -> None:
        for _ in range(count):
            conn = UnixHTTPConnection(str(d.socket), timeout=120)
            conn.request("POST", "/command", body=body, headers={"Content-Type": "application/json"})
            codes.append(conn.getresponse().status)
            conn.close()
        done.set()

    poster = threading.Thread(target=post_big)
    poster.start()
    during = []
    while not done.is_set():
        during.append(_health_latency(d.socket))
        time.sleep(0.02)
    poster.join()
    d.stop()
    return {
        "big_posts": count,
        "big_post_statuses": sorted(set(codes)),
        "health_max_quiet_s": round(max(baseline), 4),
        "health_max_during_s": round(max(during, default=0.0), 4),
        "ratio_max": round(max(during, default=0.0) / max(baseline), 1),
    }


def main(argv: list[str] | None = None) -> int:
    parser = bench_parser(
        "stress",
        __doc__.splitlines()[0],
        quick_help="the suite's small counts (2 kills, 150 fuzzed, 60 idle, 1 stall); writes nothing unless --out",
    )
    parser.add_argument("--kill-cycles", type=int, default=1000)
    parser.add_argument("--fuzz", type=int, default=100_000, help="commands over TCP, and as many over stdio")
    parser.add_argument("--idle", type=int, default=2000)
    parser.add_argument("--stall", type=int, default=3)
    parser.add_argument("--seed", type=int, default=19)
    parser.add_argument(
        "--progress", type=int, default=50, help="kill counts so far to stderr every N cycles (0: none)"
    )
    parser.add_argument("--base", type=Path, default=None, help="work folder (default: a fresh temporary one)")
    args = parser.parse_args(argv)
    if args.quick:
        args.kill_cycles, args.fuzz, args.idle, args.stall = 2, 150, 60, 1
    import tempfile

    base = args.base or Path(tempfile.mkdtemp(prefix="exo-stress-"))
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    results: dict[str, Any] = {"machine": machine_info(base)}
    try:
        if args.kill_cycles:
            results["kill"] = run_kill(args.kill_cycles, base, args.seed, progress=args.progress)
        if args.fuzz:
            results["fuzz"] = run_fuzz(args.fuzz, base, args.seed)
        if args.idle:
            results["idle"] = run_idle(args.idle, base)
        if args.stall:
            results["stall"] = run_stall(args.stall, base)
    finally:
        _kill_leftovers()
    path = write_results("stress", results, out=args.out, quick=args.quick)
    if args.json:
        print(json.dumps(results, indent=2, sort_keys=True))
        return 0
    rows = [[part, key, value] for part, data in results.items() if part != "machine" for key, value in _flat(data)]
    print_table("stress (issue 19)", ["part", "measure", "value"], rows)
    if path is not None:
        print(f"\nresults: {path}")
    return 0


def _flat(data: dict[str, Any], prefix: str = "") -> list[tuple[str, Any]]:
    out: list[tuple[str, Any]] = []
    for key, value in data.items():
        if isinstance(value, dict):
            out += _flat(value, f"{prefix}{key}.")
        else:
            out.append((prefix + key, value if not isinstance(value, list) else str(value)))
    return out


if __name__ == "__main__":
    signal.signal(signal.SIGINT, signal.default_int_handler)
    sys.exit(main())
