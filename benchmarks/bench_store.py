"""Store benchmark: lint, export and item import, each against a baseline in the same run.

    python -m benchmarks.bench_store [--nodes N] [--items N] [--json]

* lint: nodes linted per second; baseline = reading the same files.
* export: seconds for ``export_store`` (backup API, fsync, manifest, atomic
  swap); baseline = ``shutil.copytree`` of the same folder (no consistency).
* items: bookmarks imported per second through the ledger (signed, durable
  appends); baseline = plain SQLite inserts with synchronous=FULL.

A full run writes $EXO_HOME/bench/store.json (--update-results: benchmarks/results/).
"""

from __future__ import annotations

import json
import shutil
import sqlite3
import tempfile
import time
from pathlib import Path

from benchmarks._common import bench_parser, write_results
from exo_core.ledger import create_signing_key
from exo_core.store import ItemStore, Link, Node, init_store
from exo_core.store.importers import import_bookmarks
from exo_core.store.ledger_bridge import checkpoint_hook, open_ledger
from exo_core.store.lint import lint_store
from exo_core.store.transfer import export_store


def _timed(fn) -> float:  # type: ignore[no-untyped-def]
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def run(n_nodes: int, n_items: int) -> dict[str, object]:
    """Build a store in a temp folder and measure; returns the result document."""
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        signer = create_signing_key(base / "keys")
        store = init_store(base / "store", owner_key_ids=[signer.key_id])
        for i in range(n_nodes):
            store.write_node(
                Node(
                    id=f"work/n-{i:05d}",
                    title=f"Node {i}",
                    type="fact",
                    domain="work",
                    summary=f"Fact {i} about the work.",
                    load_when="work",
                    confidence="medium",
                    stability="durable",
                    valid_from="2025-01-01",
                    links=(Link("see-also", "work/INDEX"),),
                    body="\nSome prose.\n" * 20,
                )
            )
        files = sorted(store.root.rglob("*.md"))
        read_s = _timed(lambda: [p.read_text() for p in files])
        lint_s = _timed(lambda: lint_store(store.root))
        html = base / "b.html"
        html.write_text(
            "<!DOCTYPE NETSCAPE-Bookmark-file-1>\n<DL>\n"
            + "".join(
                f'<DT><A HREF="https://site{i}.example/page" ADD_DATE="1700000000">Page {i}</A>\n'
                for i in range(n_items)
            )
            + "</DL>\n"
        )
        ledger = open_ledger(store.root, signer=signer)
        with ItemStore(store.items_path, ledger) as items:
            import_s = _timed(lambda: import_bookmarks(html, items))
        ledger.close()
        raw = sqlite3.connect(base / "raw.sqlite", isolation_level=None)
        raw.execute("PRAGMA journal_mode=TRUNCATE")
        raw.execute("PRAGMA synchronous=FULL")
        raw.execute("CREATE TABLE t (id TEXT PRIMARY KEY, url TEXT, title TEXT)")

        def raw_inserts() -> None:
            for i in range(n_items):
                raw.execute("INSERT INTO t VALUES (?, ?, ?)", (f"id{i}", f"https://site{i}.example/page", f"Page {i}"))

        raw_s = _timed(raw_inserts)
        raw.close()
        copy_s = _timed(lambda: shutil.copytree(store.root, base / "plain-copy"))
        export_s = _timed(lambda: export_store(store.root, base / "export", ledger_hook=checkpoint_hook(signer)))
    return {
        "benchmark": "store",
        "nodes": n_nodes,
        "items": n_items,
        "lint_nodes_per_s": round(n_nodes / lint_s, 1),
        "lint_vs_plain_read": round(lint_s / read_s, 2),
        "export_s": round(export_s, 3),
        "export_vs_copytree": round(export_s / copy_s, 2),
        "items_per_s": round(n_items / import_s, 1),
        "items_vs_raw_sqlite_full_sync": round(import_s / raw_s, 2),
    }


def main() -> None:
    """Run; a full run writes $EXO_HOME/bench/store.json."""
    parser = bench_parser("store", __doc__, quick_help="50 nodes, 30 items; writes nothing unless --out")
    parser.add_argument("--nodes", type=int, default=500)
    parser.add_argument("--items", type=int, default=300)
    args = parser.parse_args()
    nodes, items = args.nodes, args.items
    if args.quick:
        nodes, items = 50, 30
    result = run(nodes, items)
    write_results("store", result, out=args.out, quick=args.quick)
    if args.json:
        print(json.dumps(result, indent=2, sort_keys=True))
        return
    print("\n".join(f"{k:32} {v}" for k, v in result.items()))


if __name__ == "__main__":
    main()
