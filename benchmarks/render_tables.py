"""Render docs/benchmarks.md's results tables from ``benchmarks/results/<name>.json`` (issue 20 item 6).

A table stands between two marker comments in the page, ``<!-- results:NAME -->`` and
``<!-- /results:NAME -->``, and is rebuilt from the results file of the same name, so the numbers in
the docs are the numbers a run wrote. Run::

    python benchmarks/render_tables.py            # rewrite the tables in docs/benchmarks.md
    python benchmarks/render_tables.py --check    # exit 1 when a table differs from its results

``--results DIR`` and ``--doc FILE`` point it at other files (the test does). A renderer is one
function below and one entry in ``RENDERERS``; a table without markers is written by hand.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
DOC = REPO / "docs" / "benchmarks.md"
RESULTS_DIR = REPO / "benchmarks" / "results"

__all__ = ["RENDERERS", "render_doc", "main"]


def _num(value: float | int) -> str:
    """A number as the page writes it: thousands separated, the digits the results file kept."""
    return format(value, ",")


def _row(cells: list[str]) -> str:
    return "| " + " | ".join(cells) + " |"


def render_ledger(data: dict[str, Any]) -> list[str]:
    """§8: durable signed appends, ``verify()`` and size on disk, each against its same-run baseline."""
    single = data["single_append"]
    batched = data["batched_append_100"]
    verify = data["verify"]
    size = data["size_per_10k"]
    verify_cells = [_num(verify["entries"]), _num(verify["verify_per_s"])]
    ledger_size = f"{_num(size['ledger_bytes'])} ({_num(size['bytes_per_entry'])} per entry)"
    raw_size = f"raw table of the same content bytes (mean {_num(size['mean_content_bytes'])} per entry)"
    rows = [
        _row(["measure", "count", "ledger", "baseline", "baseline", "ratio ledger / baseline"]),
        "|---|---:|---:|---|---:|---:|",
        _row(
            [
                "single durable signed append (per s)",
                _num(single["count"]),
                _num(single["ledger_per_s"]),
                "raw INSERT of the same bytes",
                _num(single["raw_sqlite_per_s"]),
                f"**{_num(single['ratio_ledger_to_raw'])}**",
            ]
        ),
        _row(
            [
                "batched appends, 100 per transaction (per s)",
                _num(batched["count"]),
                _num(batched["ledger_per_s"]),
                "raw INSERTs in batches of 100",
                _num(batched["raw_sqlite_per_s"]),
                f"**{_num(batched['ratio_ledger_to_raw'])}**",
            ]
        ),
        _row(
            [
                "`verify()` (entries/s)",
                *verify_cells,
                "Ed25519 signature checks alone",
                _num(verify["ed25519_only_per_s"]),
                f"**{_num(verify['ratio_verify_to_ed25519_only'])}**",
            ]
        ),
        _row(
            [
                "`verify()` (entries/s)",
                *verify_cells,
                "raw read of every row",
                _num(verify["raw_read_per_s"]),
                _num(verify["ratio_verify_to_raw_read"]),
            ]
        ),
        _row(
            [
                "bytes on disk per 10,000 typical entries",
                _num(10_000),
                ledger_size,
                raw_size,
                _num(size["raw_content_bytes"]),
                f"**{_num(size['ratio_ledger_to_raw'])}**",
            ]
        ),
    ]
    return rows


def render_store(data: dict[str, Any]) -> list[str]:
    """§9: lint, export and item import, each as a time ratio against its same-run baseline."""
    nodes = _num(data["nodes"])
    return [
        _row(["measure", "ours", "baseline (same run)", "time ratio ours / baseline"]),
        "|---|---:|---|---:|",
        _row(
            [
                f"`lint_store` over {nodes} nodes",
                f"{_num(data['lint_nodes_per_s'])} nodes/s",
                "reading the same files",
                _num(data["lint_vs_plain_read"]),
            ]
        ),
        _row(
            [
                "`export_store` (backup API, fsync, manifest, atomic swap)",
                f"{_num(data['export_s'])} s",
                "`shutil.copytree` of the same folder (no consistency)",
                _num(data["export_vs_copytree"]),
            ]
        ),
        _row(
            [
                "bookmark import through the ledger (signed durable appends)",
                f"{_num(data['items_per_s'])} items/s",
                "plain SQLite inserts, `synchronous=FULL`",
                _num(data["items_vs_raw_sqlite_full_sync"]),
            ]
        ),
    ]


RENDERERS: dict[str, Callable[[dict[str, Any]], list[str]]] = {"ledger": render_ledger, "store": render_store}


def _markers(name: str) -> tuple[str, str]:
    return f"<!-- results:{name} -->", f"<!-- /results:{name} -->"


def render_doc(text: str, results_dir: Path) -> str:
    """The page with every marked table rebuilt from its results file; a missing marker is an error."""
    for name, render in RENDERERS.items():
        start, end = _markers(name)
        if text.count(start) != 1 or text.count(end) != 1:
            raise ValueError(f"the page needs exactly one {start} ... {end} pair around the {name} table")
        head, rest = text.split(start)
        _old, tail = rest.split(end)
        data = json.loads((results_dir / f"{name}.json").read_text(encoding="utf-8"))
        table = "\n".join(render(data))
        text = f"{head}{start}\n{table}\n{end}{tail}"
    return text


def main(argv: list[str] | None = None) -> int:
    """Rewrite the page's tables, or with ``--check`` report the ones that differ from the results."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--check", action="store_true", help="change nothing; exit 1 when a table differs")
    parser.add_argument("--results", type=Path, default=RESULTS_DIR, metavar="DIR", help="the results files")
    parser.add_argument("--doc", type=Path, default=DOC, metavar="FILE", help="the page (docs/benchmarks.md)")
    args = parser.parse_args(argv)
    current = args.doc.read_text(encoding="utf-8")
    rendered = render_doc(current, args.results)
    if rendered == current:
        return 0
    if args.check:
        print(f"{args.doc}: its results tables differ from {args.results}; run python benchmarks/render_tables.py")
        return 1
    args.doc.write_text(rendered, encoding="utf-8")
    print(f"rewrote the results tables in {args.doc}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
