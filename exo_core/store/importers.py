"""Importers: bookmarks, a folder of Markdown notes, and a chat export.

Each importer first parses its whole input (a malformed file raises
:class:`ImportFormatError` naming the file and line, and nothing is written),
redacts secrets from every piece of text, and only then writes: bookmarks and
notes become items (through the ledger), a chat export's messages in the
person's own words become ``utterance`` entries. Ids and idempotency keys come
from the source, so running an import twice changes nothing.
"""

from __future__ import annotations

import datetime as _dt
import html.parser
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from exo_core.errors import UsageError
from exo_core.store.errors import ImportFormatError, StoreFormatError
from exo_core.store.frontmatter import parse_document
from exo_core.store.items import Item, ItemStore, normalize_url
from exo_core.store.leaks import redact
from exo_core.store.ledger_bridge import LedgerWriter

__all__ = [
    "ImportReport",
    "parse_bookmarks",
    "import_bookmarks",
    "parse_notes",
    "import_notes",
    "ChatMessage",
    "parse_chat_export",
    "import_chat_export",
    "MAX_IMPORT_BYTES",
]

MAX_IMPORT_BYTES = 64 * 1024 * 1024
_NOTE_SKIP = {".obsidian", ".trash", ".git", "node_modules"}
_URL_SCHEMES = ("http://", "https://", "ftp://", "file://")


@dataclass(slots=True)
class ImportReport:
    """What an import did: counts by outcome, secrets redacted, warnings with file:line."""

    source: str
    counts: dict[str, int] = field(default_factory=dict)
    redacted: int = 0
    warnings: list[str] = field(default_factory=list)

    def count(self, outcome: str) -> None:
        """Add one to ``outcome``'s count."""
        self.counts[outcome] = self.counts.get(outcome, 0) + 1

    def clean(self, text: str) -> str:
        """``text`` with its secrets redacted, counted here."""
        text, found = redact(text)
        self.redacted += found
        return text

    def summary(self) -> str:
        """One line for the terminal."""
        parts = ", ".join(f"{k} {v}" for k, v in sorted(self.counts.items())) or "nothing"
        return f"{self.source}: {parts}; {self.redacted} secret(s) redacted"


def _read_text(path: Path) -> str:
    try:
        size = path.stat().st_size
        if size > MAX_IMPORT_BYTES:
            raise ImportFormatError(
                f"{size} bytes is larger than the {MAX_IMPORT_BYTES}-byte import limit; split it", path=path
            )
        raw = path.read_bytes()
    except FileNotFoundError as exc:
        raise ImportFormatError("no such file", path=path) from exc
    except IsADirectoryError as exc:
        raise ImportFormatError("is a folder, expected a file", path=path) from exc
    except OSError as exc:
        raise ImportFormatError(f"cannot read ({exc.strerror})", path=path) from exc
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise ImportFormatError("not UTF-8 text; export it again as UTF-8", path=path, line=line) from exc


def _epoch_date(value: str | None, path: Path, line: int) -> str | None:
    if value is None or value == "":
        return None
    try:
        seconds = int(value)
        if seconds > 10**11:  # some browsers write microseconds or milliseconds
            seconds //= 1000 if seconds < 10**14 else 1_000_000
        return _dt.datetime.fromtimestamp(seconds, _dt.UTC).date().isoformat()
    except (ValueError, OverflowError, OSError) as exc:
        raise ImportFormatError(f"ADD_DATE {value!r} is not a Unix time", path=path, line=line) from exc


# -- bookmarks -----------------------------------------------------------------


class _BookmarkParser(html.parser.HTMLParser):
    def __init__(self, path: Path) -> None:
        super().__init__(convert_charrefs=True)
        self.path = path
        self.folders: list[str] = []
        self.pending_folder: str | None = None
        self.in_h3 = False
        self.link: dict[str, str | None] | None = None
        self.link_line = 0
        self.text: list[str] = []
        self.found: list[tuple[int, str, str, str | None, tuple[str, ...]]] = []
        self.saw_doctype = False

    def handle_decl(self, decl: str) -> None:
        if "netscape-bookmark-file" in decl.lower():
            self.saw_doctype = True

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "h3":
            self.in_h3, self.text = True, []
        elif tag == "dl":
            self.folders.append(self.pending_folder or "")
            self.pending_folder = None
        elif tag == "a":
            self.link = {k.lower(): v for k, v in attrs}
            self.link_line, self.text = self.getpos()[0], []

    def handle_endtag(self, tag: str) -> None:
        line = self.getpos()[0]
        if tag == "h3" and self.in_h3:
            self.in_h3 = False
            self.pending_folder = " ".join("".join(self.text).split())
        elif tag == "dl":
            if not self.folders:
                raise ImportFormatError("</DL> without a matching <DL>", path=self.path, line=line)
            self.folders.pop()
        elif tag == "a" and self.link is not None:
            href = self.link.get("href")
            if not href:
                raise ImportFormatError("<A> without HREF", path=self.path, line=self.link_line)
            title = " ".join("".join(self.text).split()) or href
            extra = (self.link.get("tags") or "").split(",")
            tags = [f for f in self.folders if f] + [t.strip() for t in extra if t.strip()]
            added = _epoch_date(self.link.get("add_date"), self.path, self.link_line)
            self.found.append((self.link_line, href.strip(), title, added, tuple(tags)))
            self.link = None

    def handle_data(self, data: str) -> None:
        if self.in_h3 or self.link is not None:
            self.text.append(data)


def parse_bookmarks(path: Path) -> list[tuple[int, str, str, str | None, tuple[str, ...]]]:
    """``(line, url, title, added, folder tags)`` for each bookmark; strict about the format."""
    parser = _BookmarkParser(path)
    try:
        parser.feed(_read_text(path))  # its ImportFormatError is no ValueError: it passes through
        parser.close()
    except (ValueError, AssertionError) as exc:  # html.parser raises these on broken markup
        raise ImportFormatError(f"not parseable HTML ({exc})", path=path, line=parser.getpos()[0]) from exc
    if not parser.saw_doctype:
        raise ImportFormatError(
            "missing <!DOCTYPE NETSCAPE-Bookmark-file-1>; export bookmarks as an HTML file from the browser",
            path=path,
            line=1,
        )
    return parser.found


def import_bookmarks(path: Path, items: ItemStore, *, report: ImportReport | None = None) -> ImportReport:
    """Import a Netscape bookmarks HTML file as items (tier curated)."""
    report = report or ImportReport(str(path))
    staged: list[Item] = []
    for line, url, title, added, tags in parse_bookmarks(Path(path)):
        if not url.lower().startswith(_URL_SCHEMES):
            report.count("skipped")  # bookmarklets (javascript:), place: queries and the like
            continue
        clean_url, clean_title = report.clean(url), report.clean(title)
        try:
            staged.append(
                Item.new(
                    source_kind="bookmark",
                    source_ref=normalize_url(clean_url),
                    title=clean_title,
                    body="",
                    url=clean_url,
                    tags=tags,
                    added=added,
                    scope=items.scope,
                )
            )
        except UsageError as exc:  # a URL urllib cannot split: report it with its line
            raise ImportFormatError(f"bad URL {url[:80]!r} ({exc})", path=path, line=line) from exc
    _put_all(staged, items, report)
    return report


def _put_all(staged: list[Item], items: ItemStore, report: ImportReport) -> None:
    # The same source twice in one file (a URL bookmarked in two folders) is
    # one item: the first occurrence wins, later ones count as duplicates.
    seen: set[str] = set()
    for item in staged:
        if item.id in seen:
            report.count("duplicate")
            continue
        seen.add(item.id)
        report.count(items.put(item))


# -- notes ---------------------------------------------------------------------


def parse_notes(folder: Path) -> list[tuple[str, str, str, tuple[str, ...], list[str]]]:
    """``(relative path, title, body, tags, warnings)`` for each Markdown note in a vault."""
    folder = Path(folder)
    if not folder.is_dir():
        raise ImportFormatError("not a folder of notes", path=folder)
    notes = []
    for path in sorted(folder.rglob("*.md")):
        rel = path.relative_to(folder)
        if any(part in _NOTE_SKIP or part.startswith(".") for part in rel.parts):
            continue
        text = _read_text(path)
        tags: tuple[str, ...] = ()
        title, warnings, body = rel.stem, [], text
        if text.startswith("---"):
            try:
                doc = parse_document(text, path=path)
            except StoreFormatError as exc:
                # Plugins write YAML beyond our subset; keep it verbatim in the
                # body rather than refuse the vault, and say where.
                warnings.append(f"{exc.message}: frontmatter kept as text")
            else:
                body = doc.body
                fm_title = doc.values.get("title")
                title = fm_title.strip() if isinstance(fm_title, str) and fm_title.strip() else title
                raw_tags = doc.values.get("tags")
                if isinstance(raw_tags, list):
                    tags = tuple(raw_tags)
                elif raw_tags:
                    tags = (raw_tags,)
                else:
                    tags = ()
        if title == rel.stem:  # no title in the frontmatter: the first heading, if any
            title = next((line[2:].strip() for line in body.split("\n") if line.startswith("# ")), "") or title
        notes.append((rel.as_posix(), title, body, tags, warnings))
    return notes


def import_notes(folder: Path, items: ItemStore, *, report: ImportReport | None = None) -> ImportReport:
    """Import every note of a Markdown folder (an Obsidian vault) as an item."""
    report = report or ImportReport(str(folder))
    staged = []
    for rel, title, body, tags, warnings in parse_notes(Path(folder)):
        report.warnings.extend(warnings)
        staged.append(
            Item.new(
                source_kind="note",
                source_ref=rel,
                title=report.clean(title),
                body=report.clean(body),
                tags=tags,
                scope=items.scope,
            )
        )
    _put_all(staged, items, report)
    return report


# -- chat export -----------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ChatMessage:
    """One message of an exported conversation."""

    conversation: str
    message: str
    role: str
    text: str
    ts: str | None


def _text_of(content: Any) -> str | None:
    if isinstance(content, str):
        return content
    if isinstance(content, dict):  # ChatGPT: {"content_type": "text", "parts": [...]}
        parts = content.get("parts")
        if isinstance(parts, list):
            return "\n".join(p for p in parts if isinstance(p, str))
        if isinstance(content.get("text"), str):
            return content["text"]
    if isinstance(content, list):
        return "\n".join(p["text"] for p in content if isinstance(p, dict) and isinstance(p.get("text"), str))
    return None


def parse_chat_export(path: Path) -> list[ChatMessage]:
    """Messages of a chat export, in order.

    Two shapes are read: the generic ``{"conversations": [{"id", "messages":
    [{"id", "role", "text", "ts"}]}]}`` and a ChatGPT ``conversations.json``
    (a list of conversations with a ``mapping`` of message nodes).
    """
    try:
        data = json.loads(_read_text(path))
    except json.JSONDecodeError as exc:
        raise ImportFormatError(f"not JSON ({exc.msg})", path=path, line=exc.lineno) from exc
    except RecursionError as exc:
        raise ImportFormatError("JSON nested too deeply", path=path) from exc
    conversations = data.get("conversations") if isinstance(data, dict) else data
    if not isinstance(conversations, list):
        raise ImportFormatError('expected a list of conversations or {"conversations": [...]}', path=path)
    messages: list[ChatMessage] = []
    for ci, conv in enumerate(conversations):
        if not isinstance(conv, dict):
            raise ImportFormatError(f"conversation #{ci + 1} is not an object", path=path)
        conv_id = str(conv.get("id") or conv.get("conversation_id") or f"#{ci + 1}")
        if isinstance(conv.get("messages"), list):
            rows = conv["messages"]
        elif isinstance(conv.get("mapping"), dict):
            rows = [n.get("message") for n in conv["mapping"].values() if isinstance(n, dict) and n.get("message")]
            rows.sort(key=lambda m: (m.get("create_time") or 0) if isinstance(m, dict) else 0)
        else:
            raise ImportFormatError(f"conversation {conv_id!r} has neither 'messages' nor 'mapping'", path=path)
        for mi, msg in enumerate(rows):
            if not isinstance(msg, dict):
                raise ImportFormatError(f"conversation {conv_id!r} message #{mi + 1} is not an object", path=path)
            author = msg.get("author")  # ChatGPT keeps the role under "author"
            role = msg.get("role") or (author.get("role") if isinstance(author, dict) else None)
            text = _text_of(msg.get("text", msg.get("content")))
            if not isinstance(role, str) or text is None:
                raise ImportFormatError(
                    f"conversation {conv_id!r} message #{mi + 1} needs a 'role' and 'text'", path=path
                )
            ts_raw = msg.get("ts", msg.get("create_time"))
            ts = str(ts_raw) if isinstance(ts_raw, (str, int, float)) and not isinstance(ts_raw, bool) else None
            messages.append(ChatMessage(conv_id, str(msg.get("id") or f"#{mi + 1}"), role, text, ts))
    return messages


def import_chat_export(
    path: Path, ledger: LedgerWriter, *, scope: str = "person", report: ImportReport | None = None
) -> ImportReport:
    """Append the person's own messages of a chat export as ``utterance`` entries.

    Only messages with role ``user`` are the person's words; the assistant's
    replies are counted and left out (they are not utterances, and the learning
    loop must never learn from them as if the person said them).
    """
    report = report or ImportReport(str(path))
    for msg in parse_chat_export(Path(path)):  # parses the whole file first: a bad one writes nothing
        if msg.role not in ("user", "human"):
            report.count("not-the-person")
            continue
        if not msg.text.strip():
            report.count("empty")
            continue
        body = {
            "text": report.clean(msg.text),
            "source": "chat-import",
            "conversation": msg.conversation,
            "message": msg.message,
        }
        if msg.ts is not None:
            body["ts_source"] = msg.ts
        ledger.append("utterance", body, scope=scope, idem=f"chat:{msg.conversation}:{msg.message}")
        report.count("utterances")
    return report
