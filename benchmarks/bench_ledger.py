"""Ledger benchmark: durable signed appends, verify() speed and size on disk.

Every measurement runs beside a baseline in the same run, on the same disk,
with the same durability (rollback journal, synchronous=FULL, one
``BEGIN IMMEDIATE`` transaction per append or per batch), and is reported as
a ratio to it:

* single appends/s: ``Ledger.append`` vs a raw SQLite INSERT of the same bytes;
* batched appends/s (100 per transaction): ``Ledger.append_many`` vs raw
  INSERTs of the same bytes in batches of 100;
* witnessed single appends/s: ``Ledger.append`` with the Exo home's
  ``HomeWitness`` (a signed head kept after every commit, issue 19) vs the
  same appends without it;
* verify() entries/s vs a raw read of every row (and, for scale, vs pure
  Ed25519 signature checks of the same count);
* bytes on disk per 10,000 typical entries vs the raw table holding the same
  canonical content bytes.

Run: ``exo bench ledger [--json] [--quick] [--out FILE]``. A full run writes
``$EXO_HOME/bench/ledger.json``; a quick one only the file ``--out`` names.
"""

from __future__ import annotations

import json
import os
import platform
import sqlite3
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks._common import bench_parser, write_results
from exo_core.ledger import HomeWitness, Ledger, NewEntry, Signer
from exo_core.ledger.entry import entry_signing_message
from exo_core.ledger.keys import verify_key_from_id

ROOT = Path(__file__).resolve().parents[1]


def typical(i: int, ids: list[str]) -> NewEntry:
    """A mix shaped like a real turn: utterance, action, approval, verdict, retrieval."""
    kind = i % 5
    if kind == 0 or not ids:
        return NewEntry(
            "utterance",
            {"text": f"Could you move my {i % 7}pm call to tomorrow and tell Sam? ({i})", "session": f"s{i // 50}"},
        )
    if kind == 1:
        return NewEntry(
            "action",
            {
                "tool": "calendar.move",
                "outcome": "ask",
                "args": {"event": f"ev{i}", "to": "+1d"},
                "result": {"ok": True, "moved": 1},
            },
            refs=(ids[-1],),
        )
    if kind == 2:
        return NewEntry("approval", {"decision": "allow", "via": "button"}, refs=(ids[-1],))
    if kind == 3:
        return NewEntry("verdict", {"verdict": "edit", "judged": ids[-2]}, refs=(ids[-2],))
    return NewEntry(
        "retrieval", {"node_ids": ["taste/short-messages", "fact/sam"], "item_ids": [f"it{i}"], "tokens": 412}
    )


def _raw_db(path: Path) -> sqlite3.Connection:
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA journal_mode=TRUNCATE")
    conn.execute("PRAGMA synchronous=FULL")
    conn.execute("CREATE TABLE t (n INTEGER PRIMARY KEY, id TEXT NOT NULL, content BLOB NOT NULL)")
    return conn


def _rate(count: int, seconds: float) -> float:
    return count / seconds if seconds > 0 else float("inf")


def run(quick: bool = False) -> dict[str, Any]:
    """Run every measurement; return the results document."""
    singles = 200 if quick else 1000
    batched = 2000 if quick else 10_000
    signer = Signer.from_seed(bytes(range(32)))
    out: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="bench-ledger-", dir=os.environ.get("EXO_BENCH_DIR")) as tmp:
        tmpdir = Path(tmp)
        # -- single durable appends ------------------------------------------
        # Interleaved in rounds of 50 (ledger, then raw with the same bytes) so
        # disk-cache and fsync drift hit both sides alike.
        ledger = Ledger.open(tmpdir / "single.sqlite", signer=signer, create=True, ledger_id="bench")
        raw = _raw_db(tmpdir / "raw-single.sqlite")
        ids: list[str] = []
        ledger_s = raw_s = 0.0
        for lo in range(0, singles, 50):
            stored = []
            start = time.perf_counter()
            for i in range(lo, lo + 50):
                item = typical(i, ids)
                entry = ledger.append(item.kind, item.body, refs=item.refs)
                ids.append(entry.id)
                stored.append(entry)
            ledger_s += time.perf_counter() - start
            start = time.perf_counter()
            for entry in stored:
                raw.execute("BEGIN IMMEDIATE")
                raw.execute("INSERT INTO t(id, content) VALUES (?, ?)", (entry.id, entry.content))
                raw.execute("COMMIT")
            raw_s += time.perf_counter() - start
        ledger.close()
        raw.close()
        ledger_single, raw_single = _rate(singles, ledger_s), _rate(singles, raw_s)
        out["single_append"] = {
            "count": singles,
            "ledger_per_s": round(ledger_single, 1),
            "raw_sqlite_per_s": round(raw_single, 1),
            "ratio_ledger_to_raw": round(ledger_single / raw_single, 3),
        }

        # -- single appends with and without the head witness, interleaved in rounds of 25 --
        (tmpdir / "home").mkdir()
        plain = Ledger.open(tmpdir / "plain.sqlite", signer=signer, create=True, ledger_id="bench")
        witnessed = Ledger.open(
            tmpdir / "witnessed.sqlite",
            signer=signer,
            create=True,
            ledger_id="bench",
            witness=HomeWitness(tmpdir / "home"),
        )
        seconds = {"plain": 0.0, "witnessed": 0.0}
        count = singles // 2
        for lo in range(0, count, 25):
            for name, target in (("plain", plain), ("witnessed", witnessed)):
                start = time.perf_counter()
                for i in range(lo, lo + 25):
                    target.append("utterance", {"text": f"witness round {i}"})
                seconds[name] += time.perf_counter() - start
        plain.close()
        witnessed.close()
        plain_rate, witnessed_rate = _rate(count, seconds["plain"]), _rate(count, seconds["witnessed"])
        out["witnessed_single_append"] = {
            "count": count,
            "witnessed_per_s": round(witnessed_rate, 1),
            "plain_per_s": round(plain_rate, 1),
            "ratio_witnessed_to_plain": round(witnessed_rate / plain_rate, 3),
        }

        # -- batched appends (100 per transaction), interleaved per batch --------
        ledger = Ledger.open(tmpdir / "batched.sqlite", signer=signer, create=True, ledger_id="bench")
        raw = _raw_db(tmpdir / "raw-batched.sqlite")
        ids = []
        ledger_s = raw_s = 0.0
        for lo in range(0, batched, 100):
            # refs must name stored entries, so a ref into this same batch becomes a plain note
            items = [
                it if all(r in ids for r in it.refs) else NewEntry("utterance", {"text": f"note {lo}-{k}"})
                for k, it in enumerate(typical(i, ids) for i in range(lo, lo + 100))
            ]
            start = time.perf_counter()
            stored = ledger.append_many(items)
            ledger_s += time.perf_counter() - start
            ids.extend(e.id for e in stored)
            rows = [(e.id, e.content) for e in stored]
            start = time.perf_counter()
            raw.execute("BEGIN IMMEDIATE")
            raw.executemany("INSERT INTO t(id, content) VALUES (?, ?)", rows)
            raw.execute("COMMIT")
            raw_s += time.perf_counter() - start
        raw.close()
        ledger_batched, raw_batched = _rate(batched, ledger_s), _rate(batched, raw_s)
        mean_content = sum(len(e.content) for e in ledger.entries()) / batched
        out["batched_append_100"] = {
            "count": batched,
            "ledger_per_s": round(ledger_batched, 1),
            "raw_sqlite_per_s": round(raw_batched, 1),
            "ratio_ledger_to_raw": round(ledger_batched / raw_batched, 3),
        }

        # -- verify ------------------------------------------------------------
        start = time.perf_counter()
        report = ledger.verify()
        verify_s = time.perf_counter() - start
        assert report.ok, report.problems[:1]
        raw = sqlite3.connect(tmpdir / "raw-batched.sqlite")
        start = time.perf_counter()
        read = sum(1 for _ in raw.execute("SELECT n, id, content FROM t ORDER BY n"))
        raw_read_s = time.perf_counter() - start
        raw.close()
        sample = list(ledger.entries(limit=batched))
        start = time.perf_counter()
        for e in sample:
            verify_key_from_id(e.author).verify(entry_signing_message(e.chain), e.sig)
        sig_only_s = time.perf_counter() - start
        out["verify"] = {
            "entries": report.entries,
            "verify_per_s": round(_rate(report.entries, verify_s), 1),
            "raw_read_per_s": round(_rate(read, raw_read_s), 1),
            "ed25519_only_per_s": round(_rate(len(sample), sig_only_s), 1),
            "ratio_verify_to_raw_read": round(raw_read_s / verify_s, 4),
            "ratio_verify_to_ed25519_only": round(sig_only_s / verify_s, 3),
        }

        # -- size per 10,000 typical entries -------------------------------------
        ledger.close()
        ledger_bytes = (tmpdir / "batched.sqlite").stat().st_size
        raw_bytes = (tmpdir / "raw-batched.sqlite").stat().st_size
        scale = 10_000 / batched
        out["size_per_10k"] = {
            "ledger_bytes": round(ledger_bytes * scale),
            "raw_content_bytes": round(raw_bytes * scale),
            "bytes_per_entry": round(ledger_bytes / batched, 1),
            "ratio_ledger_to_raw": round(ledger_bytes / raw_bytes, 3),
            "mean_content_bytes": round(mean_content, 1),
        }
    out["env"] = {
        "python": platform.python_version(),
        "sqlite": sqlite3.sqlite_version,
        "machine": platform.machine(),
        "cpus": os.cpu_count(),
        "quick": quick,
        "journal": "truncate",
        "synchronous": "FULL",
    }
    out["command"] = "exo bench ledger" + (" --quick" if quick else "")
    return out


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark, write the results file, print a table or JSON."""
    parser = bench_parser(
        "ledger", __doc__.splitlines()[0], quick_help="smaller counts (a smoke run); writes nothing unless --out"
    )
    args = parser.parse_args(argv)
    results = run(quick=args.quick)
    write_results("ledger", results, out=args.out, quick=args.quick)
    if args.json:
        print(json.dumps(results, indent=2, sort_keys=True))
    else:
        s, b, v, z = results["single_append"], results["batched_append_100"], results["verify"], results["size_per_10k"]
        w = results["witnessed_single_append"]
        print(
            f"single durable append: {s['ledger_per_s']}/s vs raw {s['raw_sqlite_per_s']}/s "
            f"(ratio {s['ratio_ledger_to_raw']})"
        )
        print(
            f"with head witness:     {w['witnessed_per_s']}/s vs without {w['plain_per_s']}/s "
            f"(ratio {w['ratio_witnessed_to_plain']})"
        )
        print(
            f"batched (100/txn):     {b['ledger_per_s']}/s vs raw {b['raw_sqlite_per_s']}/s "
            f"(ratio {b['ratio_ledger_to_raw']})"
        )
        print(
            f"verify():              {v['verify_per_s']} entries/s vs raw read {v['raw_read_per_s']}/s, "
            f"Ed25519 alone {v['ed25519_only_per_s']}/s"
        )
        print(
            f"size per 10k entries:  {z['ledger_bytes']} bytes vs raw {z['raw_content_bytes']} "
            f"(ratio {z['ratio_ledger_to_raw']})"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
