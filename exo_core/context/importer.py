"""History import: past conversations from a chat export become sessions (docs/context.md).

Two shapes are read:

* **ChatGPT** ``conversations.json``: a JSON array of conversations, each with
  ``title`` and a ``mapping`` of message nodes linked by ``parent``; the branch
  ending at ``current_node`` is the conversation as last seen. Hidden and
  system messages are skipped; tool output is kept as assistant text.
* **JSON lines**: one object per line, either a whole conversation
  (``{"title": ..., "messages": [{"role": ..., "content": ...}, ...]}``) or one
  message (``{"conversation": KEY, "role": ..., "content": ..., "title": ...}``,
  consecutive or not; ``conversation_id``/``session``/``session_id`` also name the
  conversation). ``content`` may be a string or a list of ``{"text": ...}`` parts.

Each conversation becomes one session (its messages full-text indexed, so
``search`` finds them) in one transaction, remembered by a key derived from
its source and content so importing the same export again adds nothing. Its
leaves are summarized in the *import* lane, which has its own limit and can be
paused; without an engine the nodes are left pending and exod summarizes them
at its next start or ``session.resume``.

Bad input is a :class:`~exo_core.errors.UsageError` naming the file, line or
conversation and what is wrong; nothing is written for a file that fails to
parse.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from exo_core.clock import Clock, SystemClock, iso_utc
from exo_core.context import nodes as db
from exo_core.context.config import ContextConfig
from exo_core.errors import StorageError, UsageError
from exo_core.sessions.session_store import MAX_TITLE_CHARS, SessionStore
from exo_core.sessions.worker import DbWorker

if TYPE_CHECKING:
    from exo_core.context.engine import SummaryTreeContext

__all__ = [
    "ImportedMessage",
    "Conversation",
    "ImportReport",
    "parse_export",
    "parse_chatgpt",
    "parse_jsonl",
    "import_conversations",
]

_ROLES = {
    "user": "user",
    "human": "user",
    "assistant": "assistant",
    "ai": "assistant",
    "bot": "assistant",
    "model": "assistant",
    "tool": "tool",
    "function": "tool",
    "system": "system",
}


@dataclass(frozen=True, slots=True)
class ImportedMessage:
    """One message of an imported conversation (role ``user`` or ``assistant``)."""

    role: str
    content: str


@dataclass(frozen=True, slots=True)
class Conversation:
    """One conversation read from an export."""

    source_key: str
    title: str
    messages: tuple[ImportedMessage, ...]


@dataclass(frozen=True, slots=True)
class ImportReport:
    """What an import did."""

    conversations: int
    imported: int
    skipped: int
    messages: int
    session_ids: tuple[str, ...]


def _text(content: Any) -> str:
    """Text of a message content: a string, or parts that are strings or ``{"text": ...}``."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        pieces = []
        for part in content:
            if isinstance(part, str):
                pieces.append(part)
            elif isinstance(part, dict):
                text = part.get("text")
                pieces.append(text if isinstance(text, str) else f"[{part.get('content_type', 'attachment')}]")
        return "\n".join(p for p in pieces if p)
    return ""


def _message(role: Any, content: str, *, tool_name: str = "") -> ImportedMessage | None:
    kind = _ROLES.get(str(role).lower()) if isinstance(role, str) else None
    if kind is None or kind == "system" or not content.strip():
        return None
    if kind == "tool":
        # A tool result without its call would make an invalid model input; keep it as the assistant's text.
        return ImportedMessage("assistant", f"(tool output{' of ' + tool_name if tool_name else ''}) {content}")
    return ImportedMessage(kind, content)


def _message_of(obj: dict[str, Any]) -> ImportedMessage | None:
    return _message(obj.get("role"), _text(obj.get("content")), tool_name=str(obj.get("name") or ""))


def _key(source: str, title: str, messages: Iterable[ImportedMessage]) -> str:
    digest = hashlib.sha256(title.encode())
    for m in messages:
        digest.update(b"\x00" + m.role.encode() + b"\x00" + m.content.encode())
    return f"{source}:{digest.hexdigest()[:32]}"


def parse_chatgpt(data: Any, *, where: str = "conversations.json") -> list[Conversation]:
    """Conversations from a parsed ChatGPT export (a list, or one conversation object)."""
    out: list[Conversation] = []
    for n, conv in enumerate(data if isinstance(data, list) else [data]):
        if not isinstance(conv, dict) or not isinstance(conv.get("mapping"), dict):
            raise UsageError(f"{where}: conversation {n} has no 'mapping' object; is this a ChatGPT export?")
        mapping: dict[str, Any] = conv["mapping"]
        node_id = conv.get("current_node")
        if node_id not in mapping:
            # No current node: follow the latest leaf.
            leaves = [k for k, v in mapping.items() if isinstance(v, dict) and not v.get("children")]
            node_id = leaves[-1] if leaves else None
        chain: list[dict[str, Any]] = []
        seen: set[str] = set()
        while isinstance(node_id, str) and node_id in mapping and node_id not in seen:
            seen.add(node_id)
            node = mapping[node_id]
            if not isinstance(node, dict):
                raise UsageError(f"{where}: conversation {n}: node {node_id!r} is not an object")
            chain.append(node)
            node_id = node.get("parent")
        messages = []
        for node in reversed(chain):
            msg = node.get("message")
            if not isinstance(msg, dict):
                continue
            if (msg.get("metadata") or {}).get("is_visually_hidden_from_conversation"):
                continue
            author = msg.get("author") or {}
            content = msg.get("content") or {}
            text = _text(content.get("parts")) or (content.get("text") if isinstance(content.get("text"), str) else "")
            item = _message(author.get("role"), text or "", tool_name=str(author.get("name") or ""))
            if item is not None:
                messages.append(item)
        title = conv.get("title") if isinstance(conv.get("title"), str) else ""
        if messages:
            out.append(Conversation(_key("chatgpt", title or "", messages), title or "untitled", tuple(messages)))
    return out


def parse_jsonl(lines: Iterable[str], *, where: str = "history.jsonl") -> list[Conversation]:
    """Conversations from JSON lines (whole conversations or single messages)."""
    # A whole conversation is keyed by its line number, a message by its conversation's name (int vs str: no clash).
    found: dict[int | str, tuple[str, list[ImportedMessage]]] = {}
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            raise UsageError(f"{where}:{number}: not JSON ({exc.msg})") from exc
        if not isinstance(obj, dict):
            raise UsageError(f"{where}:{number}: each line must be a JSON object")
        title = obj.get("title") if isinstance(obj.get("title"), str) else None
        if isinstance(obj.get("messages"), list):
            if not all(isinstance(m, dict) for m in obj["messages"]):
                raise UsageError(f"{where}:{number}: every message must be an object with role and content")
            messages = [m for m in map(_message_of, obj["messages"]) if m is not None]
            found[number] = ("untitled" if title is None else title, messages)
            continue
        if "role" not in obj or "content" not in obj:
            raise UsageError(f"{where}:{number}: expected 'messages' (a conversation) or 'role' and 'content'")
        conv = next(
            (str(obj[k]) for k in ("conversation", "conversation_id", "session", "session_id") if k in obj),
            "conversation",
        )
        item = _message_of(obj)
        messages = found.setdefault(conv, (title or conv, []))[1]
        if item is not None:
            messages.append(item)
    return [Conversation(_key("jsonl", name, items), name, tuple(items)) for name, items in found.values() if items]


def parse_export(path: Path) -> list[Conversation]:
    """Conversations from ``path``, whichever supported shape it has."""
    try:
        raw = path.read_text(encoding="utf-8")
    except FileNotFoundError as exc:
        raise UsageError(f"no such file: {path}") from exc
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"cannot read {path}: {exc}") from exc
    head = raw.lstrip()[:1]
    if not head:
        raise UsageError(f"{path} is empty")
    if head == "[" or (head == "{" and "\n{" not in raw.strip()):  # a JSON array, or one object: maybe ChatGPT's
        try:
            data = json.loads(raw)
        except json.JSONDecodeError as exc:
            if head == "[":
                raise UsageError(f"{path}: not valid JSON at line {exc.lineno} ({exc.msg})") from exc
            data = None  # not one JSON document: read it as JSON lines
        if head == "[" or (isinstance(data, dict) and "mapping" in data):
            return parse_chatgpt(data, where=str(path))
    return parse_jsonl(raw.splitlines(), where=str(path))


async def import_conversations(
    worker: DbWorker,
    conversations: Iterable[Conversation],
    *,
    engine: SummaryTreeContext | None = None,
    config: ContextConfig | None = None,
    clock: Clock | None = None,
) -> ImportReport:
    """Write each new conversation as a session and queue its summaries in the import lane."""
    store = SessionStore(worker, clock=clock)
    cfg = engine.config if engine is not None else (config or ContextConfig())
    clock = clock or SystemClock()
    skipped = count = 0
    sessions: list[str] = []
    for conv in conversations:

        def write(c: Conversation = conv) -> str | None:
            conn = worker.connection
            if conn.execute("SELECT 1 FROM imported_conversations WHERE source_key = ?", (c.source_key,)).fetchone():
                return None
            with store.transaction():
                session = store.create_session(title=c.title[:MAX_TITLE_CHARS])
                for m in c.messages:
                    store.add_message(session.id, m.role, m.content)
                conn.execute(
                    "INSERT INTO imported_conversations(source_key, session_id, messages, imported_at)"
                    " VALUES (?,?,?,?)",
                    (c.source_key, session.id, len(c.messages), iso_utc(clock.now())),
                )
            if engine is None:
                db.sync_leaves(
                    conn, session.id, store.messages(session.id), cfg, lane="import", now=iso_utc(clock.now())
                )
            return session.id

        try:
            session_id = await worker.run(write)
        except sqlite3.Error as exc:
            raise StorageError(f"could not import conversation {conv.title!r}: {exc}") from exc
        if session_id is None:
            skipped += 1
            continue
        count += len(conv.messages)
        sessions.append(session_id)
        if engine is not None:
            messages = await worker.run(lambda s=session_id: store.messages(s))
            await engine.touch(session_id, messages, live=False, lane="import")
    return ImportReport(len(sessions) + skipped, len(sessions), skipped, count, tuple(sessions))
