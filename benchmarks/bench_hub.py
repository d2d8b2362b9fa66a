"""Benchmark: the hub — events appended and delivered per second, and replay.

Usage::

    python -m benchmarks.bench_hub [--quick] [--json] [--out PATH] [--tmp DIR]

Three parts, each with its baseline measured in the same run:

1. **Live fan-out.** This process opens an in-process :class:`Core` on a fresh
   temporary Exo home and serves the real aiohttp app (``build_app``) on a real
   0600 Unix socket (``bind_unix`` + ``web.SockSite``, as ``run_daemon`` does).
   It appends ``notice`` events through ``core.hub.emit`` — the same path every
   engine event takes: numbered, committed to ``sessions.sqlite``, then fanned
   out. The subscribers are real ``ExoClient.raw_events`` SSE streams running
   in a *separate process* (all N in one event loop), so their parsing and
   decoding do not share the emitter's interpreter. Two emit patterns:

   * ``sequential``: one ``await hub.emit(...)`` at a time, as one turn streams
     deltas; each event is its own transaction (and fsync with ``full``).
   * ``streamed``: how ``agent/loop.py`` streams ``message.delta`` now: each
     event queued with ``hub.emit_nowait`` and at most ``STREAM_WINDOW`` (64, the
     loop's window) unsaved at a time, all awaited at the end — a burst of
     deltas shares one commit. Baseline: one transaction per row, the rate the
     loop had when it awaited every delta.
   * ``concurrent``: ``asyncio.gather`` of ``--batch`` emits at a time; the
     hub's group commit turns each batch into one transaction.

   *appended/s* = events / time until the last ``emit`` returned (saved and
   offered to subscribers). *delivered/s* = events / time until the slowest
   subscriber had received the last one. Each subscriber checks it received
   every seq exactly once, in order.

   Baseline: raw ``sqlite3`` inserts of rows of the same format (the same
   ``Event`` canonical JSON, prebuilt) into a fresh database with the same
   schema and pragmas (``open_writer``: WAL, synchronous FULL or NORMAL): one
   transaction per row (vs ``sequential``) and batches of ``--batch`` rows
   (vs ``concurrent``). Done for durability ``full`` and ``normal``.

2. **Replay.** A ``sessions.sqlite`` is pre-populated with ``--replay`` events
   (same row format, written directly), then a real ``exo serve`` subprocess
   serves it and one client replays from 0 over the Unix socket until it has
   them all: once with ``ExoClient.raw_events`` (what every client does; it
   decodes each event) and once reading the raw SSE bytes (what the server
   alone can push). Baseline: ``SELECT seq, session, data FROM events ORDER BY
   seq`` on a read connection, fetching every row.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import shutil
import sys
import tempfile
import time
from collections import deque
from pathlib import Path
from typing import Any

from benchmarks import _common
from benchmarks._common import (
    REPO,
    RESULTS_DIR,
    Stopwatch,
    bench_parser,
    child_env,
    machine_info,
    median,
    print_table,
    proc_memory_kb,
    ratio,
    write_results,
)

NAME = "hub"
# agent/loop.py keeps at most this many message.delta events unsaved (its _DELTA_WINDOW).
STREAM_WINDOW = 64
TEXT = "benchmark notice: the quick brown fox jumps over the lazy dog #{:07d}"  # ~70 chars, like a short delta


# -- rows in the hub's exact format ---------------------------------------------------------------


def make_rows(first_seq: int, count: int) -> list[tuple[int, str, str | None, str, str, str]]:
    """Rows as ``Hub._insert`` writes them: (seq, id, session, type, ts, canonical JSON)."""
    from exo_core.clock import iso_utc
    from exo_core.ids import RandomIds
    from exo_core.protocol import Event

    ids = RandomIds()
    ts = iso_utc(time.time())
    rows = []
    for seq in range(first_seq, first_seq + count):
        event = Event(
            id=ids.new("evt"),
            seq=seq,
            session=None,
            type="notice",
            ts=ts,
            body={"text": TEXT.format(seq), "level": "info"},
        )
        rows.append((event.seq, event.id, event.session, event.type, event.ts, event.to_json()))
    return rows


_INSERT = "INSERT INTO events(seq, id, session, type, ts, data) VALUES (?,?,?,?,?,?)"


def baseline_inserts(tmp: Path, durability: str, rows: list[tuple[Any, ...]], batch: int) -> float:
    """Seconds to insert ``rows`` into a fresh sessions.sqlite, ``batch`` rows per transaction."""
    from exo_core.sessions.db import open_writer

    folder = Path(tempfile.mkdtemp(prefix=f"base-{durability}-", dir=tmp))
    conn = open_writer(folder / "sessions.sqlite", synchronous=durability.upper())
    try:
        with Stopwatch() as sw:
            for start in range(0, len(rows), batch):
                conn.execute("BEGIN IMMEDIATE")
                if batch == 1:
                    conn.execute(_INSERT, rows[start])
                else:
                    conn.executemany(_INSERT, rows[start : start + batch])
                conn.execute("COMMIT")
    finally:
        conn.close()
        shutil.rmtree(folder, ignore_errors=True)
    return sw.seconds


# -- the subscriber process -----------------------------------------------------------------------


async def _subscribers_main(sock: str, n: int, since: int, ready_seq: int, final_seq: int) -> None:
    """Child process: N ExoClient SSE streams; prints 'ready' then one JSON line of results."""
    from exo_core.client import ExoClient

    ready = [False] * n
    done_at = [0.0] * n
    counts = [0] * n
    in_order = [True] * n
    announced = False

    async def one(i: int) -> None:
        nonlocal announced
        expect = since + 1
        async with ExoClient.for_socket(Path(sock), client_name=f"bench-{i}") as client:
            stream = client.raw_events(since=since, reconnect=False)
            async with contextlib.aclosing(stream):
                async for _data, event in stream:
                    if event.seq != expect:
                        in_order[i] = False
                    expect = event.seq + 1
                    counts[i] += 1
                    if event.seq == ready_seq:
                        ready[i] = True
                        if all(ready) and not announced:
                            announced = True
                            sys.stdout.write("ready\n")
                            sys.stdout.flush()
                    if event.seq >= final_seq:
                        done_at[i] = time.monotonic()
                        return

    cpu0 = time.process_time()
    await asyncio.gather(*(one(i) for i in range(n)))
    result = {
        "done_at": done_at,
        "counts": counts,
        "in_order": in_order,
        "cpu_s": time.process_time() - cpu0,
        "mem_kb": proc_memory_kb(),
    }
    sys.stdout.write(json.dumps(result) + "\n")
    sys.stdout.flush()


# -- live fan-out through the real hub and HTTP app ----------------------------------------------


async def hub_run(tmp: Path, durability: str, subscribers: int, mode: str, count: int, batch: int) -> dict[str, Any]:
    """One live run: fresh home, in-process core + app on a Unix socket, N subscribers in a child."""
    from aiohttp import web

    from exo_core.agent.scripted import ScriptedModel
    from exo_core.engine.core import Core, CoreOptions
    from exo_core.seams.home import ExoHome
    from exo_core.server.http import HttpSettings, build_app
    from exo_core.server.listeners import bind_unix

    root = Path(tempfile.mkdtemp(prefix=f"hub-{durability}-{subscribers}-{mode}-", dir=tmp))
    home = ExoHome(root)
    options = CoreOptions(workspace=root, synchronous=durability.upper())
    async with Core.open(home, model=ScriptedModel([]), options=options) as core:
        hub = core.hub
        # Observe (not change) the hub: count live registrations. Each lag (queue
        # overflow -> fall back to database replay) re-registers once.
        registrations = 0
        original_register = hub._register

        def counting_register(session: str | None) -> Any:
            nonlocal registrations
            registrations += 1
            return original_register(session)

        hub._register = counting_register  # type: ignore[method-assign]

        sock = bind_unix(home.socket_path)
        runner = web.AppRunner(
            build_app(core.engine, hub, HttpSettings(check_peer_uid=True)),
            handle_signals=False,
            access_log=None,
            # A finished SSE handler lingers until its next keep-alive write (15 s)
            # and cleanup would wait for it; the streams are done here, so don't wait.
            shutdown_timeout=0.05,
        )
        await runner.setup()
        await web.SockSite(runner, sock).start()
        proc = None
        try:
            since = hub.last_seq
            ready_seq = since + 1
            final_seq = since + 1 + count
            if subscribers:
                proc = await asyncio.create_subprocess_exec(
                    sys.executable,
                    "-m",
                    "benchmarks.bench_hub",
                    "--_subscribers",
                    str(home.socket_path),
                    str(subscribers),
                    str(since),
                    str(ready_seq),
                    str(final_seq),
                    stdout=asyncio.subprocess.PIPE,
                    env=child_env(),
                    cwd=str(REPO),
                )
            await hub.emit(None, "notice", {"text": "warm-up", "level": "info"})
            if proc is not None:
                assert proc.stdout is not None
                line = await asyncio.wait_for(proc.stdout.readline(), 60)
                if line.strip() != b"ready":
                    raise RuntimeError(f"subscriber process did not get ready: {line!r}")
            seq = ready_seq
            cpu0 = time.process_time()
            t0 = time.monotonic()
            if mode == "sequential":
                for _ in range(count):
                    seq += 1
                    await hub.emit(None, "notice", {"text": TEXT.format(seq), "level": "info"})
            elif mode == "streamed":
                in_flight: deque[asyncio.Future[Any]] = deque()
                for _ in range(count):
                    seq += 1
                    in_flight.append(hub.emit_nowait(None, "notice", {"text": TEXT.format(seq), "level": "info"}))
                    while len(in_flight) > STREAM_WINDOW:
                        await in_flight.popleft()
                await asyncio.gather(*in_flight)
            else:
                left = count
                while left:
                    n = min(batch, left)
                    await asyncio.gather(
                        *(
                            hub.emit(None, "notice", {"text": TEXT.format(seq + k + 1), "level": "info"})
                            for k in range(n)
                        )
                    )
                    seq += n
                    left -= n
            t_emitted = time.monotonic() - t0
            sub: dict[str, Any] = {}
            if proc is not None:
                assert proc.stdout is not None
                out = await asyncio.wait_for(proc.stdout.read(), 300)
                await proc.wait()
                proc_done = proc
                proc = None
                if proc_done.returncode != 0:
                    raise RuntimeError(f"subscriber process failed with status {proc_done.returncode}")
                sub = json.loads(out.decode().strip().splitlines()[-1])
            cpu = time.process_time() - cpu0
            assert hub.last_seq == final_seq, (hub.last_seq, final_seq)
            server_mem = proc_memory_kb()
        finally:
            if proc is not None:
                proc.kill()
                await proc.wait()
            await runner.cleanup()
    shutil.rmtree(root, ignore_errors=True)

    result: dict[str, Any] = {
        "durability": durability,
        "subscribers": subscribers,
        "mode": mode,
        "events": count,
        "batch": batch if mode == "concurrent" else 1,
        "append_s": t_emitted,
        "appended_per_s": count / t_emitted,
        "server_cpu_s": cpu,
        "server_cpu_us_per_event": cpu / count * 1e6,
        "server_vmhwm_kb": server_mem["VmHWM"],
    }
    if subscribers:
        t_delivered = max(sub["done_at"]) - t0
        expected = count + 1  # the warm-up event plus the measured ones
        result.update(
            {
                "deliver_s": t_delivered,
                "delivered_per_s": count / t_delivered,
                "deliveries_per_s": count * subscribers / t_delivered,
                "all_received_in_order": all(sub["in_order"]) and all(c == expected for c in sub["counts"]),
                "lag_recoveries": registrations - subscribers,
                "subscriber_cpu_s": sub["cpu_s"],
                "server_cpu_share": cpu / t_delivered,
                "subscriber_cpu_share": sub["cpu_s"] / t_delivered,
            }
        )
    return result


# -- replay ---------------------------------------------------------------------------------------


def populate(home_root: Path, count: int) -> None:
    """A sessions.sqlite holding ``count`` events in the hub's format (written directly, one txn per 10k)."""
    from exo_core.sessions.db import open_writer

    conn = open_writer(home_root / "sessions.sqlite", synchronous="NORMAL")
    try:
        for start in range(1, count + 1, 10_000):
            rows = make_rows(start, min(10_000, count + 1 - start))
            conn.execute("BEGIN IMMEDIATE")
            conn.executemany(_INSERT, rows)
            conn.execute("COMMIT")
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        conn.close()


def baseline_select(db: Path) -> tuple[float, int]:
    from exo_core.sessions.db import open_reader

    conn = open_reader(db)
    try:
        with Stopwatch() as sw:
            rows = conn.execute("SELECT seq, session, data FROM events ORDER BY seq").fetchall()
        return sw.seconds, len(rows)
    finally:
        conn.close()


async def wait_healthy(sock: Path, proc: asyncio.subprocess.Process, timeout: float = 30.0) -> None:
    from exo_core.client import ExoClient
    from exo_core.errors import BrokenResourceError

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.returncode is not None:
            raise RuntimeError(f"exod exited with status {proc.returncode}")
        if sock.exists():
            async with ExoClient.for_socket(sock) as client:
                try:
                    if (await client.health()).get("ok"):
                        return
                except BrokenResourceError:
                    pass
        await asyncio.sleep(0.02)
    raise RuntimeError("exod did not become healthy")


async def replay_client(sock: Path, count: int) -> float:
    from exo_core.client import ExoClient

    got = 0
    async with ExoClient.for_socket(sock) as client:
        t0 = time.monotonic()
        stream = client.raw_events(since=0, reconnect=False)
        async with contextlib.aclosing(stream):
            async for _data, event in stream:
                got += 1
                if event.seq >= count:
                    break
        elapsed = time.monotonic() - t0
    if got != count:
        raise RuntimeError(f"replay delivered {got} events, expected {count}")
    return elapsed


async def replay_raw(sock: Path, count: int) -> float:
    """Read the SSE stream as bytes, counting event terminators (no decoding)."""
    import aiohttp

    marker = f"id: {count}\n".encode()
    async with aiohttp.ClientSession(connector=aiohttp.UnixConnector(path=str(sock))) as http:
        t0 = time.monotonic()
        async with http.get(
            "http://localhost/events", params={"since": "0"}, timeout=aiohttp.ClientTimeout(total=None, sock_read=60)
        ) as resp:
            tail = b""
            async for chunk in resp.content.iter_any():
                window = tail + chunk
                if marker in window and window.endswith(b"\n\n"):
                    break
                tail = window[-64:]
            elapsed = time.monotonic() - t0
    return elapsed


async def replay_bench(tmp: Path, count: int) -> dict[str, Any]:
    root = Path(tempfile.mkdtemp(prefix="replay-", dir=tmp))
    with Stopwatch() as pop:
        populate(root, count)
    script = root / "script.json"
    script.write_text(json.dumps({"replies": []}))
    base_s, rows = baseline_select(root / "sessions.sqlite")
    assert rows == count
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "exo_core.cli",
        "serve",
        "--home",
        str(root),
        "--model",
        f"scripted:{script}",
        "--workspace",
        str(root),
        "--log-level",
        "WARNING",
        env=child_env(),
        cwd=str(REPO),
        stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.PIPE,
    )
    sock = root / "run" / "exod.sock"
    try:
        await wait_healthy(sock, proc)
        client_s = await replay_client(sock, count)
        raw_s = await replay_raw(sock, count)
        mem = proc_memory_kb(proc.pid)
    finally:
        if proc.returncode is None:
            # SIGTERM, then SIGKILL after 0.5 s: at 5f4eb52 exod waits on shutdown for a finished SSE
            # handler until its next keep-alive write (15 s); graceful shutdown is not what is measured.
            proc.terminate()
            try:
                await asyncio.wait_for(proc.wait(), 0.5)
            except asyncio.TimeoutError:
                proc.kill()
                await proc.wait()
    db_mb = (root / "sessions.sqlite").stat().st_size / 1e6
    shutil.rmtree(root, ignore_errors=True)
    return {
        "events": count,
        "db_mb": db_mb,
        "populate_s": pop.seconds,
        "baseline_select_s": base_s,
        "baseline_select_per_s": count / base_s,
        "client_s": client_s,
        "client_per_s": count / client_s,
        "client_ratio": ratio(client_s, base_s),
        "raw_sse_s": raw_s,
        "raw_sse_per_s": count / raw_s,
        "raw_sse_ratio": ratio(raw_s, base_s),
        "exod_vmrss_kb_after": mem["VmRSS"],
        "exod_vmhwm_kb_after": mem["VmHWM"],
    }


# -- driver ---------------------------------------------------------------------------------------


async def run(args: argparse.Namespace, tmp: Path) -> dict[str, Any]:
    load_before = [round(x, 2) for x in os.getloadavg()]
    seq_n, conc_n, batch, replay_n = (
        (args.seq_events or 100, args.events or 600, args.batch, args.replay or 2000)
        if args.quick
        else (args.seq_events or 3000, args.events or 20000, args.batch, args.replay or 100_000)
    )
    subs_list = [1, 10]
    live: list[dict[str, Any]] = []
    baselines: dict[str, dict[str, Any]] = {}
    for durability in ("full", "normal"):
        # Median of 3 runs each: fsync latency on a virtual disk is noisy.
        per_row = median([baseline_inserts(tmp, durability, make_rows(1, seq_n), 1) for _ in range(3)])
        batched = median([baseline_inserts(tmp, durability, make_rows(1, conc_n), batch) for _ in range(3)])
        baselines[durability] = {
            "per_row_events": seq_n,
            "per_row_s": per_row,
            "per_row_per_s": seq_n / per_row,
            "batched_events": conc_n,
            "batch": batch,
            "batched_s": batched,
            "batched_per_s": conc_n / batched,
        }
        for mode, n in (("sequential", seq_n), ("streamed", seq_n), ("concurrent", conc_n)):
            base_rate = baselines[durability]["batched_per_s" if mode == "concurrent" else "per_row_per_s"]
            for subs in subs_list:
                r = await hub_run(tmp, durability, subs, mode, n, batch)
                r["baseline"] = "batched" if mode == "concurrent" else "per_row"
                r["baseline_per_s"] = base_rate
                r["append_ratio"] = ratio(r["appended_per_s"], base_rate)
                r["deliver_ratio"] = ratio(r["delivered_per_s"], base_rate)
                live.append(r)
                if not args.json:
                    print(
                        f"  {durability:6} {mode:10} subs={subs:2}: appended {r['appended_per_s']:9,.0f}/s  "
                        f"delivered {r['delivered_per_s']:9,.0f}/s  (baseline {base_rate:9,.0f}/s)",
                        flush=True,
                    )
    replay = await replay_bench(tmp, replay_n)
    machine = machine_info(tmp)
    machine["loadavg_before"] = load_before
    return {
        "benchmark": NAME,
        "quick": args.quick,
        "machine": machine,
        "command": "python -m benchmarks.bench_hub" + (" --quick" if args.quick else ""),
        "live": live,
        "baseline_inserts": baselines,
        "replay": replay,
        "notes": (
            "live: in-process Core + build_app on a real Unix socket, hub.emit('notice'); subscribers are "
            "ExoClient.raw_events in one separate process. Ratios are hub rate / raw sqlite rate (higher is "
            "better, 1.0 = as fast as bare inserts). replay ratios are time / plain SELECT time (lower is better)."
        ),
    }


def report(data: dict[str, Any]) -> None:
    m = data["machine"]
    print(
        f"\nmachine: {m['nproc']} x {m['cpu_model']}, python {m['python']}, sqlite {m['sqlite']}, "
        f"tmp on {m.get('tmp_fs')}; {m['date']}; load average before {m.get('loadavg_before')}, "
        f"after {m.get('loadavg_1_5_15')}"
    )
    rows = []
    for r in data["live"]:
        rows.append(
            [
                r["durability"],
                r["mode"],
                r["subscribers"],
                r["events"],
                r["appended_per_s"],
                r["delivered_per_s"],
                r["baseline"],
                r["baseline_per_s"],
                r["append_ratio"],
                r["deliver_ratio"],
                r["server_cpu_us_per_event"],
                r["server_cpu_share"],
                r["subscriber_cpu_share"],
                r["lag_recoveries"],
                "yes" if r["all_received_in_order"] else "NO",
            ]
        )
    print_table(
        "Live: events appended and delivered per second (ratio = hub / raw SQLite baseline)",
        [
            "durability",
            "emit",
            "subs",
            "events",
            "appended/s",
            "delivered/s",
            "baseline",
            "baseline/s",
            "append x",
            "deliver x",
            "server us/ev",
            "server cpu",
            "subs cpu",
            "lags",
            "complete",
        ],
        rows,
    )
    rows = []
    for d, b in data["baseline_inserts"].items():
        rows.append([d, "1 row / txn", b["per_row_events"], b["per_row_per_s"]])
        rows.append([d, f"{b['batch']} rows / txn", b["batched_events"], b["batched_per_s"]])
    print_table(
        "Baseline: raw SQLite inserts of the same rows (WAL)", ["durability", "transactions", "rows", "rows/s"], rows
    )
    rp = data["replay"]
    print_table(
        f"Replay of {rp['events']:,} events from seq 0 over the Unix socket (exod subprocess)",
        ["reader", "seconds", "events/s", "x SELECT time"],
        [
            ["plain SELECT (baseline)", rp["baseline_select_s"], rp["baseline_select_per_s"], 1.0],
            ["ExoClient.raw_events", rp["client_s"], rp["client_per_s"], rp["client_ratio"]],
            ["raw SSE bytes", rp["raw_sse_s"], rp["raw_sse_per_s"], rp["raw_sse_ratio"]],
        ],
    )


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] == "--_subscribers":
        sock, n, since, ready_seq, final_seq = argv[1:6]
        asyncio.run(_subscribers_main(sock, int(n), int(since), int(ready_seq), int(final_seq)))
        return 0
    parser = bench_parser(
        "hub", __doc__.split("\n\n")[0], quick_help="tiny sizes: proves the code works, numbers mean little"
    )
    parser.add_argument(
        "--markdown",
        type=Path,
        nargs="?",
        const=RESULTS_DIR / f"{NAME}.json",
        default=None,
        metavar="RESULTS",
        help="run nothing: print a results file (default the committed one) as Markdown tables, for docs/benchmarks.md",
    )
    parser.add_argument("--tmp", type=Path, default=None, help="folder for temporary homes (default: system temp)")
    parser.add_argument("--events", type=int, default=None, help="events per concurrent run (default 20000)")
    parser.add_argument("--seq-events", type=int, default=None, help="events per sequential run (default 3000)")
    parser.add_argument("--batch", type=int, default=256, help="emits in flight / rows per baseline txn (default 256)")
    parser.add_argument("--replay", type=int, default=None, help="events to replay (default 100000)")
    args = parser.parse_args(argv)
    if args.markdown is not None:
        _common.MARKDOWN = True
        report(json.loads(args.markdown.read_text(encoding="utf-8")))
        return 0
    tmp = Path(tempfile.mkdtemp(prefix="exo-bench-hub-", dir=args.tmp))
    try:
        data = asyncio.run(run(args, tmp))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    path = write_results(NAME, data, out=args.out, quick=args.quick)
    if args.json:
        print(json.dumps(data, indent=2, sort_keys=True))
    else:
        report(data)
        if path:
            print(f"\nwrote {os.path.relpath(path, Path.cwd()) if path.is_relative_to(Path.cwd()) else path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
