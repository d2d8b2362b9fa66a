"""The ``summary_nodes`` table: loading, syncing leaves, claiming and finishing jobs.

Every function here is synchronous and takes the writer connection: the
engine calls them through ``DbWorker.run`` so they run on the single
database thread, in order, without locks.

Statuses: ``pending`` (to do, or cut off by a crash), ``done`` and
``failed``. A job's result is written only if its node is still pending with
the same message range, so a stale job (its messages were undone meanwhile)
changes nothing.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence

from exo_core.context.config import ContextConfig
from exo_core.context.tree import NodeKey, SummaryNode, leaf_span, node_positions, tail_start
from exo_core.sessions.session_store import MessageRecord

__all__ = [
    "load_nodes",
    "sync_leaves",
    "reset_failed",
    "claim_session",
    "insert_parent",
    "mark_done",
    "mark_failed",
    "pending_keys",
    "range_messages",
    "children_texts",
    "get_node",
]

_COLUMNS = "session_id, level, idx, first_message, last_message, text, status, lane, attempts"


def load_nodes(conn: sqlite3.Connection, session_id: str) -> dict[NodeKey, SummaryNode]:
    """Every node of a session by address."""
    rows = conn.execute(f"SELECT {_COLUMNS} FROM summary_nodes WHERE session_id = ?", (session_id,))
    return {(r[1], r[2]): SummaryNode(*r) for r in rows}


def _valid(node: SummaryNode, messages: Sequence[MessageRecord], leaf_size: int) -> bool:
    # A node is valid while the messages at its range's ends are still the ones it summarized.
    first, last = node_positions(node.level, node.idx, leaf_size)
    if last >= len(messages):
        return False
    return messages[first].id == node.first_message and messages[last].id == node.last_message


def sync_leaves(
    conn: sqlite3.Connection,
    session_id: str,
    messages: Sequence[MessageRecord],
    config: ContextConfig,
    *,
    lane: str,
    now: str,
) -> dict[NodeKey, SummaryNode]:
    """Make the stored tree match ``messages``; returns the nodes.

    Nodes whose message range no longer matches (an undo reached into the
    summarized region) are deleted with every node covering a later leaf;
    every full leaf older than the tail without a node gets a pending one.
    """
    nodes = load_nodes(conn, session_id)
    leaves = tail_start(messages, config.tail) // config.leaf_size
    stale_from: int | None = None
    for node in nodes.values():
        if not _valid(node, messages, config.leaf_size):
            first_leaf = leaf_span(node.level, node.idx)[0]
            stale_from = first_leaf if stale_from is None else min(stale_from, first_leaf)
    missing = [i for i in range(leaves) if (0, i) not in nodes]
    if stale_from is None and not missing:
        return nodes
    conn.execute("BEGIN IMMEDIATE")
    try:
        if stale_from is not None:
            # A node covers a leaf >= stale_from when its last leaf does.
            conn.execute(
                "DELETE FROM summary_nodes WHERE session_id = ? AND ((idx + 1) << level) > ?", (session_id, stale_from)
            )
            missing = [i for i in range(leaves) if i >= stale_from or (0, i) not in nodes]
        rows = [
            (session_id, 0, i, *(messages[p].id for p in node_positions(0, i, config.leaf_size)), lane, now)
            for i in missing
        ]
        conn.executemany(
            "INSERT OR IGNORE INTO summary_nodes(session_id, level, idx, first_message, last_message, status, lane,"
            " attempts, updated_at) VALUES (?,?,?,?,?,'pending',?,0,?)",
            rows,
        )
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    return load_nodes(conn, session_id)


def reset_failed(conn: sqlite3.Connection, session_id: str, config: ContextConfig, now: str) -> int:
    """Failed jobs with attempts left become pending again (the session was touched)."""
    return conn.execute(
        "UPDATE summary_nodes SET status = 'pending', updated_at = ? "
        "WHERE session_id = ? AND status = 'failed' AND attempts < ?",
        (now, session_id, config.max_attempts),
    ).rowcount


def claim_session(conn: sqlite3.Connection, session_id: str, now: str) -> int:
    """Unfinished import-lane nodes of a session the person is using move to the live lane."""
    return conn.execute(
        "UPDATE summary_nodes SET lane = 'live', updated_at = ? "
        "WHERE session_id = ? AND lane = 'import' AND status != 'done'",
        (now, session_id),
    ).rowcount


def insert_parent(conn: sqlite3.Connection, session_id: str, key: NodeKey, *, lane: str, now: str) -> bool:
    """Create the pending parent ``key`` from its two finished children; False if it cannot."""
    children = _done_children(conn, session_id, key)
    if children is None:
        return False
    conn.execute(
        "INSERT INTO summary_nodes(session_id, level, idx, first_message, last_message, status, lane, attempts,"
        " updated_at) VALUES (?,?,?,?,?,'pending',?,0,?) ON CONFLICT(session_id, level, idx) DO UPDATE SET"
        " status = 'pending', lane = excluded.lane, updated_at = excluded.updated_at WHERE status = 'failed'",
        (session_id, *key, children[0][0], children[1][1], lane, now),
    )
    return True


def mark_done(conn: sqlite3.Connection, node: SummaryNode, text: str, now: str) -> bool:
    """Store a finished summary; False when the node changed or vanished meanwhile (stale job)."""
    return (
        conn.execute(
            "UPDATE summary_nodes SET text = ?, status = 'done', attempts = attempts + 1, updated_at = ? "
            "WHERE session_id = ? AND level = ? AND idx = ? AND status = 'pending' AND first_message = ?"
            " AND last_message = ?",
            (text, now, node.session_id, node.level, node.idx, node.first_message, node.last_message),
        ).rowcount
        == 1
    )


def mark_failed(conn: sqlite3.Connection, node: SummaryNode, now: str) -> None:
    """Record a failed attempt; the job is retried when the session is next touched."""
    conn.execute(
        "UPDATE summary_nodes SET status = 'failed', attempts = attempts + 1, updated_at = ? "
        "WHERE session_id = ? AND level = ? AND idx = ? AND status = 'pending'",
        (now, node.session_id, node.level, node.idx),
    )


def pending_keys(conn: sqlite3.Connection, lane: str, limit: int) -> list[tuple[str, int, int]]:
    """Pending jobs of a lane, oldest first (leaves before merges), at most ``limit``."""
    rows = conn.execute(
        "SELECT session_id, level, idx FROM summary_nodes WHERE status = 'pending' AND lane = ?"
        " ORDER BY updated_at, level, idx LIMIT ?",
        (lane, limit),
    )
    return [(r[0], r[1], r[2]) for r in rows]


def get_node(conn: sqlite3.Connection, session_id: str, key: NodeKey) -> SummaryNode | None:
    """One node, or ``None``."""
    row = conn.execute(
        f"SELECT {_COLUMNS} FROM summary_nodes WHERE session_id = ? AND level = ? AND idx = ?", (session_id, *key)
    ).fetchone()
    return SummaryNode(*row) if row is not None else None


def range_messages(conn: sqlite3.Connection, node: SummaryNode) -> list[MessageRecord]:
    """The current messages a leaf covers."""
    rows = conn.execute(
        "SELECT * FROM messages WHERE session_id = ? AND id BETWEEN ? AND ? AND undone = 0 ORDER BY id",
        (node.session_id, node.first_message, node.last_message),
    )
    return [
        MessageRecord(
            r["id"],
            r["session_id"],
            r["turn_id"],
            r["role"],
            r["content"],
            json.loads(r["tool_calls"]),
            r["tool_call_id"],
            r["status"],
        )
        for r in rows
    ]


def _done_children(conn: sqlite3.Connection, session_id: str, key: NodeKey) -> list[sqlite3.Row] | None:
    """``(first_message, last_message, text)`` of the two children of ``key``, or ``None`` unless both are done."""
    level, idx = key
    rows = conn.execute(
        "SELECT first_message, last_message, text FROM summary_nodes WHERE session_id = ? AND level = ?"
        " AND idx IN (?, ?) AND status = 'done' ORDER BY idx",
        (session_id, level - 1, 2 * idx, 2 * idx + 1),
    ).fetchall()
    return rows if len(rows) == 2 else None


def children_texts(conn: sqlite3.Connection, node: SummaryNode) -> tuple[str, str] | None:
    """The finished texts of a parent's two children, or ``None`` if either is not done."""
    children = _done_children(conn, node.session_id, node.key)
    return None if children is None else (children[0][2], children[1][2])
