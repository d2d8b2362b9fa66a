"""§8 and §9 of docs/benchmarks.md: the ledger's durable signed appends and the store's lint, export and import.

Both files keep rounded numbers, so a cell shows every digit the file kept (``num``).
"""

from __future__ import annotations

from typing import Any

from benchmarks.tables._cells import num, row

__all__ = ["ledger", "store"]


def ledger(data: dict[str, Any]) -> list[str]:
    """§8: durable signed appends, ``verify()`` and size on disk, each against its same-run baseline."""
    single = data["single_append"]
    batched = data["batched_append_100"]
    verify = data["verify"]
    size = data["size_per_10k"]
    verify_cells = [num(verify["entries"]), num(verify["verify_per_s"])]
    ledger_size = f"{num(size['ledger_bytes'])} ({num(size['bytes_per_entry'])} per entry)"
    raw_size = f"raw table of the same content bytes (mean {num(size['mean_content_bytes'])} per entry)"
    rows = [
        row(["measure", "count", "ledger", "baseline", "baseline", "ratio ledger / baseline"]),
        "|---|---:|---:|---|---:|---:|",
        row(
            [
                "single durable signed append (per s)",
                num(single["count"]),
                num(single["ledger_per_s"]),
                "raw INSERT of the same bytes",
                num(single["raw_sqlite_per_s"]),
                f"**{num(single['ratio_ledger_to_raw'])}**",
            ]
        ),
        row(
            [
                "batched appends, 100 per transaction (per s)",
                num(batched["count"]),
                num(batched["ledger_per_s"]),
                "raw INSERTs in batches of 100",
                num(batched["raw_sqlite_per_s"]),
                f"**{num(batched['ratio_ledger_to_raw'])}**",
            ]
        ),
        row(
            [
                "`verify()` (entries/s)",
                *verify_cells,
                "Ed25519 signature checks alone",
                num(verify["ed25519_only_per_s"]),
                f"**{num(verify['ratio_verify_to_ed25519_only'])}**",
            ]
        ),
        row(
            [
                "`verify()` (entries/s)",
                *verify_cells,
                "raw read of every row",
                num(verify["raw_read_per_s"]),
                num(verify["ratio_verify_to_raw_read"]),
            ]
        ),
        row(
            [
                "bytes on disk per 10,000 typical entries",
                num(10_000),
                ledger_size,
                raw_size,
                num(size["raw_content_bytes"]),
                f"**{num(size['ratio_ledger_to_raw'])}**",
            ]
        ),
    ]
    return rows


def store(data: dict[str, Any]) -> list[str]:
    """§9: lint, export and item import, each as a time ratio against its same-run baseline."""
    nodes = num(data["nodes"])
    return [
        row(["measure", "ours", "baseline (same run)", "time ratio ours / baseline"]),
        "|---|---:|---|---:|",
        row(
            [
                f"`lint_store` over {nodes} nodes",
                f"{num(data['lint_nodes_per_s'])} nodes/s",
                "reading the same files",
                num(data["lint_vs_plain_read"]),
            ]
        ),
        row(
            [
                "`export_store` (backup API, fsync, manifest, atomic swap)",
                f"{num(data['export_s'])} s",
                "`shutil.copytree` of the same folder (no consistency)",
                num(data["export_vs_copytree"]),
            ]
        ),
        row(
            [
                "bookmark import through the ledger (signed durable appends)",
                f"{num(data['items_per_s'])} items/s",
                "plain SQLite inserts, `synchronous=FULL`",
                num(data["items_vs_raw_sqlite_full_sync"]),
            ]
        ),
    ]
