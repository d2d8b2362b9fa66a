"""The terminal's transcript: turns built from events, drawn as lines that fit the screen.

Finished turns collapse to the person's words and the answer (a dim line says
how many tool calls are folded away); the full tool output is one key away
(``expand``). The running turn is always shown in full, its tool output cut to
the last few lines. Panels arrive already shaped by the core to one line.
"""

from __future__ import annotations

import textwrap
from dataclasses import dataclass, field
from typing import Any

from exo_core.client.turn_end import turn_end_lines
from exo_core.protocol import Event
from exo_core.terminal.prefs import TerminalPrefs

__all__ = ["Block", "Turn", "Transcript"]

_LIVE_TAIL = 6
_FULL_LIMIT = 400
ATTACH_MARK = "\n\n[attached: "


@dataclass(slots=True)
class Block:
    """One thing shown in a turn: words, a tool call, an approval, a panel (mutable: events fill it in)."""

    kind: str
    text: str = ""
    title: str = ""
    key: str = ""
    state: str = ""
    output: str = ""


@dataclass(slots=True)
class Turn:
    """A turn: the person's message and everything that answered it (``id`` None: the client's own lines)."""

    id: str | None
    blocks: list[Block] = field(default_factory=list)
    done: bool = False
    stop: str = ""


class Transcript:
    """Applies events; renders lines."""

    def __init__(self) -> None:
        self.turns: list[Turn] = []
        self._by_id: dict[str, Turn] = {}
        self._by_key: dict[str, Block] = {}
        self.approvals: list[dict[str, Any]] = []
        self.questions: list[dict[str, Any]] = []
        self.model = ""
        self.context_tokens = 0
        self.cost = 0.0

    @property
    def running(self) -> bool:
        """Whether a turn of this session is under way."""
        return any(not t.done for t in self.turns)

    def _turn(self, turn_id: str | None) -> Turn:
        if turn_id is None:
            return self.turns[-1] if self.turns else self.local()
        turn = self._by_id.get(turn_id)
        if turn is None:
            turn = self._by_id[turn_id] = Turn(turn_id)
            self.turns.append(turn)
        return turn

    def local(self, text: str = "", kind: str = "note") -> Turn:
        """A block of the client's own (help, command output, a shell run)."""
        turn = Turn(None, done=True)
        if text:
            turn.blocks.append(Block(kind, text))
        self.turns.append(turn)
        return turn

    def apply(self, event: Event) -> None:
        """Fold one event into the transcript."""
        b, kind = event.body, event.type
        turn_id = b.get("turn_id")
        block: Block | None  # the block the event changes; the keyed kinds look it up and may not find it
        if kind == "message.completed":
            turn = self._turn(turn_id)
            if b.get("role") == "user":
                turn.blocks.append(Block("user", str(b.get("content", ""))))
            elif b.get("role") == "assistant":
                live = next((x for x in reversed(turn.blocks) if x.kind == "assistant" and x.state == "live"), None)
                block = live or Block("assistant")
                block.text, block.state = str(b.get("content", "")), str(b.get("status", "complete"))
                if live is None and block.text:
                    turn.blocks.append(block)
        elif kind == "turn.started":
            self._turn(turn_id).done = False
        elif kind == "message.delta":
            turn = self._turn(turn_id)
            last = turn.blocks[-1] if turn.blocks else None
            if last is None or last.kind != "assistant" or last.state != "live":
                last = Block("assistant", state="live")
                turn.blocks.append(last)
            last.text += str(b.get("text", ""))
        elif kind == "tool.started":
            args = " ".join(f"{k}={v!r}" for k, v in (b.get("arguments") or {}).items() if k != "content")
            self._keyed(
                turn_id, Block("tool", args, title=str(b.get("name", "")), key=str(b.get("call_id")), state="running")
            )
        elif kind == "tool.output":
            block = self._by_key.get(str(b.get("call_id")))
            if block:
                block.output += str(b.get("text", ""))
        elif kind == "tool.completed":
            block = self._by_key.get(str(b.get("call_id")))
            if block:
                block.state = "ok" if b.get("ok") else "failed"
                block.output = block.output or str(b.get("result", ""))
                block.title += f" ({b.get('duration_ms', 0)} ms)"
        elif kind == "approval.requested":
            self.approvals.append(b)
            self._keyed(
                turn_id,
                Block(
                    "ask",
                    f"approve [{b.get('risk')}] {b.get('summary')}"
                    + (f"\n  {b['reason']}" if b.get("reason") else "")
                    + "".join(f"\n  {line}" for line in str(b.get("diff") or "").splitlines()),
                    key=str(b.get("request_id")),
                    state="open",
                ),
            )
        elif kind == "approval.resolved":
            self.approvals = [a for a in self.approvals if a.get("request_id") != b.get("request_id")]
            if block := self._by_key.get(str(b.get("request_id"))):
                block.state = str(b.get("decision"))
        elif kind == "question.asked":
            self.questions.append(b)
            options = "".join(f"\n  {n}. {o}" for n, o in enumerate(b.get("options") or [], 1))
            until = f"\n  (waits until {_clock(b['expires_at'])})" if b.get("expires_at") else ""
            self._keyed(
                None, Block("ask", f"{b.get('text')}{options}{until}", key=str(b.get("question_id")), state="open")
            )
        elif kind == "question.answered":
            self.questions = [q for q in self.questions if q.get("question_id") != b.get("question_id")]
            if block := self._by_key.get(str(b.get("question_id"))):
                block.state = f"answered {b.get('option') or b.get('text') or ''}".strip()
        elif kind == "question.closed":
            self.questions = [q for q in self.questions if q.get("question_id") != b.get("question_id")]
            if block := self._by_key.get(str(b.get("question_id"))):
                block.state = f"closed: {b.get('reason') or 'expired'}"
        elif kind == "usage.updated":
            self.model = str(b.get("model") or self.model)
            self.context_tokens = int(b.get("input_tokens") or 0)
            self.cost = float(b.get("session_cost") or self.cost + float(b.get("cost") or 0))
        elif kind == "turn.completed":
            turn = self._turn(turn_id)
            stop, hint = turn_end_lines(b)
            turn.done, turn.stop = True, stop or ""
            if hint:
                turn.blocks.append(Block("notice", hint))
        elif kind == "ui.panel":
            data = b.get("data") or {}
            line = data.get("line") or f"[{b.get('kind')}] {b.get('title', '')}"
            self._turn(turn_id).blocks.append(Block("panel", str(line)))
        elif kind == "notice":
            self._turn(None).blocks.append(Block("notice", str(b.get("text", ""))))

    def _keyed(self, turn_id: str | None, block: Block) -> None:
        """Add ``block`` to its turn, findable by its key (a call, request or question id) for later events."""
        self._by_key[block.key] = block
        self._turn(turn_id).blocks.append(block)

    # -- drawing -------------------------------------------------------------

    def render(self, width: int, prefs: TerminalPrefs, *, expanded: bool) -> list[str]:
        """Every line of the transcript, painted, wrapped to ``width``."""
        out: list[str] = []
        for turn in self.turns:
            full = expanded or not turn.done
            folded = {"tool call": 0, "approval": 0, "question": 0}
            for block in turn.blocks:
                if not full and (block.kind == "tool" or (block.kind == "ask" and block.state != "open")):
                    if block.kind == "tool":
                        folded["tool call"] += 1
                    elif block.text.startswith("approve"):
                        folded["approval"] += 1
                    else:
                        folded["question"] += 1
                    continue
                if not full and block.kind == "assistant" and block is not _last_answer(turn):
                    continue
                out += _draw(block, width, prefs, expanded)
            if any(folded.values()):
                what = ", ".join(f"{n} {name}{'s' if n > 1 else ''}" for name, n in folded.items() if n)
                out += _wrap(f"  · {what} folded — {prefs.keys['expand']} shows them", width, prefs, "dim")
            if turn.stop:
                out += _wrap(f"  {turn.stop}", width, prefs, "notice")
        return out


def _last_answer(turn: Turn) -> Block | None:
    return next((b for b in reversed(turn.blocks) if b.kind == "assistant" and b.text), None)


def _wrap(text: str, width: int, prefs: TerminalPrefs, role: str, indent: str = "") -> list[str]:
    lines: list[str] = []
    for raw in text.split("\n"):
        pieces = textwrap.wrap(
            raw, max(10, width), subsequent_indent=indent or "  ", replace_whitespace=False, drop_whitespace=True
        ) or [""]
        lines += [prefs.paint(role, piece) for piece in pieces]
    return lines


def _draw(block: Block, width: int, prefs: TerminalPrefs, expanded: bool) -> list[str]:
    if block.kind == "user":
        parts = block.text.split(ATTACH_MARK)
        lines = _wrap("› " + parts[0], width, prefs, "user")
        for part in parts[1:]:
            lines += _wrap("  + attached " + part.split("]", 1)[0], width, prefs, "dim")
        return lines
    if block.kind == "assistant":
        suffix = "" if block.state in ("complete", "live") else f" [{block.state}]"
        return _wrap(block.text + suffix, width, prefs, "assistant")
    if block.kind == "tool":
        mark = {"ok": "✓", "failed": "✗"}.get(block.state, "⚙")
        role = {"ok": "ok", "failed": "bad"}.get(block.state, "tool")
        lines = _wrap(f"  {mark} {block.title} {block.text}"[: width * 3], width, prefs, role)
        out = block.output.rstrip("\n").split("\n") if block.output else []
        shown = out[:_FULL_LIMIT] if expanded else out[-_LIVE_TAIL:]
        for line in shown:
            lines += _wrap("    │ " + line, width, prefs, "tool", indent="    │ ")
        return lines
    if block.kind == "ask":
        if block.state != "open":
            state = f"  → {block.state}"
        elif block.text.startswith("approve"):
            state = "  — y allow · n deny · a always"
        else:
            state = ""
        return _wrap(f"  ? {block.text}{state}", width, prefs, "ask")
    if block.kind == "panel":
        return _wrap(f"  ▣ {block.text}", width, prefs, "panel")
    if block.kind == "notice":
        return _wrap(f"  ! {block.text}", width, prefs, "notice")
    if block.kind == "shell":
        return _wrap(block.text, width, prefs, "tool", indent="    ")
    return _wrap(block.text, width, prefs, "dim", indent="  ")


def _clock(iso: str) -> str:
    """``HH:MM`` local time for an ISO-8601 UTC timestamp (the text itself when it is not one)."""
    import datetime

    try:
        return datetime.datetime.fromisoformat(iso.replace("Z", "+00:00")).astimezone().strftime("%H:%M")
    except ValueError:
        return iso
