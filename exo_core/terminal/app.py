"""The terminal client (docs/web.md): a prompt and a transcript over the protocol.

``/`` runs a command, ``@file[:a-b]`` attaches a file or line range, ``!cmd``
runs a shell command here, ctrl+p opens a fuzzy palette of everything else,
ctrl+o unfolds finished turns, approvals are answered inline (y/n/a) and
questions by number or typed text, or declined with Esc. A one-line status shows agent, model, mode, context use
and cost. The event stream resumes from the last seq after a dropped link
(saying hello again, so a restarted core shapes output for this screen again).
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from collections.abc import Coroutine
from pathlib import Path
from typing import Any, TextIO

from exo_core.client.client import ExoClient
from exo_core.client.slash import SESSION_COMMANDS, help_text, session_command
from exo_core.errors import BrokenResourceError, ConflictError, ExoError
from exo_core.protocol import Event
from exo_core.terminal.attach import attachment, expand_refs, run_shell
from exo_core.terminal.keys import KeyDecoder, raw_terminal
from exo_core.terminal.palette import Entry, Palette
from exo_core.terminal.prefs import THEMES, TerminalPrefs
from exo_core.terminal.screen import Screen
from exo_core.terminal.transcript import Transcript

__all__ = ["TerminalChat", "COMMANDS", "terminal_capabilities"]

COMMANDS: dict[str, str] = {
    **SESSION_COMMANDS,
    "mode": "auto|steer|queue  how a message goes while a turn runs",
    "expand": "unfold or fold finished turns",
    "theme": "dark|light|plain  for this run (keep it in ~/.config/exo/terminal.toml)",
}
_DECISIONS = {"y": "allow", "n": "deny", "a": "allow_always"}
# Messages typed while the core is away wait here (docs/terminal.md "offline"); more are refused, visibly.
OUTBOX_LIMIT = 20


def terminal_capabilities(fd: int = 1) -> dict[str, Any]:
    """What this terminal can show, for ``hello``: characters, no drawing."""
    cols, rows = Screen(sys.stdout, TerminalPrefs(), fd).size()
    return {"screen_columns": cols, "screen_rows": rows, "can_draw": False}


class TerminalChat:
    """One terminal, one session at a time."""

    def __init__(
        self,
        client: ExoClient,
        *,
        prefs: TerminalPrefs,
        cwd: Path,
        session: str | None = None,
        event_log: Path | None = None,
        fd: int = 0,
        out: TextIO | None = None,
    ) -> None:
        self.client = client
        self.prefs = prefs
        self.cwd = cwd
        self.session = session
        self.event_log = event_log
        self.fd = fd
        self.screen = Screen(out or sys.stdout, prefs)
        self.transcript = Transcript()
        self.buffer = ""
        self.cursor = 0
        self.history: list[str] = []
        self.history_at = 0
        self.mode = "auto"
        self.expanded = False
        self.scroll = 0
        self.conn = "connecting"
        self.attachments: list[str] = []
        self.palette: Palette | None = None
        self.sessions: list[dict[str, Any]] = []
        self._quit = asyncio.Event()
        self._tasks: set[asyncio.Task[Any]] = set()
        self._follower: asyncio.Task[None] | None = None
        self._redraw_at: asyncio.TimerHandle | None = None
        # (text, mode) typed while the core was away, oldest first; sent once, in order, on reconnect.
        self.outbox: list[tuple[str, str]] = []
        self._flushing = asyncio.Lock()

    # -- life cycle ------------------------------------------------------------

    async def run(self) -> int:
        """Run until /quit or ctrl+d; returns the exit status."""
        self.session = await self.client.open_session(self.session, "terminal")
        self.sessions = (await self.client.request("session.list", {}))["sessions"]
        loop = asyncio.get_running_loop()
        decoder = KeyDecoder()
        with raw_terminal(self.fd):
            self.screen.enter()
            loop.add_reader(self.fd, self._on_input, decoder)
            loop.add_signal_handler(signal.SIGWINCH, self.redraw)
            self._follow_session()
            self.redraw()
            try:
                await self._quit.wait()
            finally:
                loop.remove_reader(self.fd)
                loop.remove_signal_handler(signal.SIGWINCH)
                tasks = [*self._tasks, *([self._follower] if self._follower else [])]
                for task in tasks:
                    task.cancel()
                await asyncio.gather(*tasks, return_exceptions=True)
                self.screen.leave()
        return 0

    def _follow_session(self) -> None:
        if self._follower is not None:
            self._follower.cancel()
        self.transcript = Transcript()
        self.client.last_seq = 0
        self._follower = asyncio.create_task(self._follow(), name="exo-terminal-follow")

    async def _follow(self) -> None:
        delay = 0.2
        while True:
            try:
                self.conn = "live"
                self.redraw()
                async for event in self.client.events(session=self.session, reconnect=False):
                    self._apply(event)
            except ExoError:
                pass  # the link dropped (or the core restarted): resume below from client.last_seq
            self.conn = "reconnecting"
            self.redraw()
            await asyncio.sleep(delay)
            delay = min(delay * 2, 3.0)
            try:
                await self.client.hello()
                delay = 0.2
            except ExoError:
                continue
            self.conn = "live"
            self._spawn(self._flush_outbox())

    def _apply(self, event: Event) -> None:
        self.transcript.apply(event)
        if self.event_log is not None:
            with open(self.event_log, "a", encoding="utf-8") as log:
                log.write(f"{event.seq} {event.type}\n")
        self.redraw()

    def _spawn(self, coro: Coroutine[Any, Any, Any]) -> None:
        task = asyncio.create_task(self._guarded(coro))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _guarded(self, coro: Coroutine[Any, Any, Any]) -> None:
        try:
            await coro
        except ExoError as exc:
            self.note(f"error [{exc.code}]: {exc.message}", "notice")

    def note(self, text: str, kind: str = "note") -> None:
        """Show a line of the client's own."""
        self.transcript.local(text, kind)
        self.scroll = 0
        self.redraw()

    # -- drawing -----------------------------------------------------------------

    def redraw(self) -> None:
        """Draw soon (bursts of events share one frame)."""
        if self._redraw_at is None:
            self._redraw_at = asyncio.get_running_loop().call_later(0.02, self._draw)

    def _draw(self) -> None:
        self._redraw_at = None
        cols, _rows = self.screen.size()
        body = self.transcript.render(cols, self.prefs, expanded=self.expanded)
        overlay: list[str] = []
        if self.palette is not None:
            overlay.append(self.prefs.paint("ask", f"palette › {self.palette.query}"))
            for n, entry in enumerate(self.palette.matches()):
                mark = "›" if n == self.palette.selected else " "
                overlay.append(self.prefs.paint("ask" if mark == "›" else "dim", f" {mark} {entry.label}"[:cols]))
        t = self.transcript
        status = (
            f" exo · model {t.model or '-'} · mode {self.mode}{' (busy)' if t.running else ''} · "
            f"ctx {t.context_tokens} tok · ${t.cost:.4f} · {self.conn} · {self.session}"
        )
        if self.attachments:
            status += f" · {len(self.attachments)} attached"
        prompt, cursor = self._prompt(cols)
        self.screen.draw(body, overlay, status, prompt, cursor, self.scroll)

    def _prompt(self, cols: int) -> tuple[str, int]:
        if not self.buffer and self.transcript.approvals:
            a = self.transcript.approvals[0]
            text = f"approve [{a.get('risk')}] {a.get('summary')}? y allow · n deny · a always"[: cols - 1]
            return self.prefs.paint("ask", text), len(text)
        if not self.buffer and self.transcript.questions:
            text = _question_prompt(self.transcript.questions[0])[: cols - 1]
            return self.prefs.paint("ask", text), len(text)
        width = cols - 3
        start = max(0, self.cursor - width)
        return self.prefs.paint("prompt", "› ") + self.buffer[start : start + width], 2 + self.cursor - start

    # -- keys ----------------------------------------------------------------------

    def _on_input(self, decoder: KeyDecoder) -> None:
        data = os.read(self.fd, 4096)  # what is there now: the loop calls this when the fd is readable
        if not data:
            self._quit.set()
            return
        for key in decoder.feed(data) + decoder.flush():
            self.key(key)
        self.redraw()

    def key(self, key: str) -> None:
        """Handle one key."""
        keys = self.prefs.keys
        if self.palette is not None:
            chosen = self.palette.key(key)
            if chosen is not None:
                self.palette = None
                if isinstance(chosen, Entry):
                    self.submit(chosen.run)
            return
        if not self.buffer and self.transcript.approvals and key in _DECISIONS:
            request = self.transcript.approvals[0]
            self._spawn(self._respond(str(request["request_id"]), _DECISIONS[key]))
            return
        if not self.buffer and self.transcript.questions and self._question_key(key):
            return
        if key == keys["palette"]:
            self.palette = Palette(self._entries())
        elif key == keys["expand"]:
            self.expanded = not self.expanded
        elif key == keys["interrupt"]:
            if self.transcript.running:
                self._spawn(self.client.request("turn.interrupt", {"session": self.session}))
            elif self.buffer:
                self.buffer, self.cursor = "", 0
            else:
                self._quit.set()
        elif key == "ctrl+d" and not self.buffer:
            self._quit.set()
        elif key == "enter":
            line, self.buffer, self.cursor = self.buffer, "", 0
            if line.strip() and self.transcript.questions and self._typed_answer(line.strip()):
                return
            if line.strip():
                self.history.append(line)
                self.history_at = len(self.history)
                self.submit(line)
        else:
            self._edit(key)

    def _question_key(self, key: str) -> bool:
        """A key that answers the open question with an empty input line: an option's number picks it,
        Esc declines it (the asking turn goes on without an answer, docs/protocol.md ``question.answer``).
        Other keys start a typed line as usual."""
        question = self.transcript.questions[0]
        options = question.get("options") or []
        if key == "esc":
            self._spawn(self._answer(question, {"decline": True}))
            return True
        if key.isdigit() and 1 <= int(key) <= len(options):
            self._spawn(self._answer(question, {"option": int(key)}))
            return True
        return False

    def _typed_answer(self, line: str) -> bool:
        """A line typed while a question is open answers it when it can: an option's number, or the text
        itself when the question takes text. Otherwise the line is a message, as any other."""
        question = self.transcript.questions[0]
        options = question.get("options") or []
        if line.isdigit() and 1 <= int(line) <= len(options):
            self._spawn(self._answer(question, {"option": int(line)}))
            return True
        if question.get("allow_text"):
            self._spawn(self._answer(question, {"text": line}))
            return True
        return False

    async def _answer(self, question: dict[str, Any], answer: dict[str, Any]) -> None:
        try:
            await self.client.request("question.answer", {"question_id": question["question_id"], **answer})
        except ExoError as exc:
            # Answered elsewhere first, or its turn ended: the other answer stands.
            self.note(f"answer not sent: {exc.message}", "notice")

    def _edit(self, key: str) -> None:
        if len(key) == 1 and key.isprintable():
            self.buffer = self.buffer[: self.cursor] + key + self.buffer[self.cursor :]
            self.cursor += 1
        elif key == "backspace" and self.cursor:
            self.buffer = self.buffer[: self.cursor - 1] + self.buffer[self.cursor :]
            self.cursor -= 1
        elif key == "delete":
            self.buffer = self.buffer[: self.cursor] + self.buffer[self.cursor + 1 :]
        elif key in ("left", "right"):
            self.cursor = max(0, min(len(self.buffer), self.cursor + (1 if key == "right" else -1)))
        elif key in ("home", "ctrl+a"):
            self.cursor = 0
        elif key in ("end", "ctrl+e"):
            self.cursor = len(self.buffer)
        elif key == "ctrl+u":
            self.buffer, self.cursor = "", 0
        elif key in ("up", "down") and self.history:
            self.history_at = max(0, min(len(self.history), self.history_at + (1 if key == "down" else -1)))
            self.buffer = self.history[self.history_at] if self.history_at < len(self.history) else ""
            self.cursor = len(self.buffer)
        elif key in ("pageup", "pagedown"):
            self.scroll = max(0, self.scroll + (10 if key == "pageup" else -10))

    def _entries(self) -> list[Entry]:
        entries = [Entry(f"/{name} — {desc}", f"/{name}") for name, desc in COMMANDS.items()]
        entries += [
            Entry(f"switch to session {s.get('title') or ''} {s['id']}", f"/switch {s['id']}") for s in self.sessions
        ]
        entries += [Entry(f"theme {name}", f"/theme {name}") for name in THEMES]
        return entries

    # -- input lines -----------------------------------------------------------------

    def submit(self, line: str) -> None:
        """Run one input line: a command, a shell command or a message."""
        self.scroll = 0
        if line.startswith("/"):
            self._spawn(self.command(line[1:].strip()))
        elif line.startswith("!"):
            self._spawn(self._shell(line[1:].strip()))
        else:
            self._spawn(self._send(line))

    async def _send(self, line: str) -> None:
        text, problems = expand_refs(line, self.cwd)
        for problem in problems:
            self.note(problem, "notice")
        text += "".join(self.attachments)
        self.attachments = []
        mode = self.mode
        if mode == "auto":
            mode = "queue" if self.transcript.running else "send"
        if self.conn != "live" or self.outbox:
            self._keep(text, mode)
            return
        try:
            result = await self.client.request("turn.send", {"session": self.session, "text": text, "mode": mode})
        except BrokenResourceError:
            # The core went away between the typing and the send: keep it for the reconnect.
            self._keep(text, mode)
            return
        if result.get("disposition") != "started":
            self.note(f"({result.get('disposition')})")

    def _keep(self, text: str, mode: str) -> None:
        """Hold a message typed while the core is away, with a visible mark; refuse past the limit."""
        if len(self.outbox) >= OUTBOX_LIMIT:
            self.note(f"not sent (already {OUTBOX_LIMIT} messages wait for the core): {text}", "notice")
            return
        self.outbox.append((text, mode))
        self.note(f"⏳ will send when connected: {text}", "notice")

    async def _flush_outbox(self) -> None:
        """Send what waited, oldest first, each once; a new drop stops the flush and keeps the rest."""
        async with self._flushing:
            while self.outbox:
                text, mode = self.outbox[0]
                try:
                    await self.client.request("turn.send", {"session": self.session, "text": text, "mode": mode})
                except BrokenResourceError:
                    return
                except ExoError as exc:
                    self.outbox.pop(0)
                    self.note(f"not sent ({exc.code}: {exc.message}): {text}", "notice")
                    continue
                self.outbox.pop(0)
                self.note(f"sent: {text}")

    async def _shell(self, command: str) -> None:
        if not command:
            return
        status, output = await run_shell(command, self.cwd)
        self.note(f"$ {command}\n{output.rstrip()}" + (f"\n[exit {status}]" if status else ""), "shell")
        self.attachments.append(attachment(f"shell `{command}` (exit {status})", output))

    async def _respond(self, request_id: str, decision: str) -> None:
        try:
            await self.client.request("approval.respond", {"request_id": request_id, "decision": decision})
        except ConflictError:
            self.note("that approval was already answered elsewhere")

    async def command(self, line: str) -> None:
        """Run a ``/`` command."""
        name, _, rest = line.partition(" ")
        rest = rest.strip()
        if name in ("quit", "exit", "q"):
            self._quit.set()
        elif name == "help":
            self.note(
                help_text(COMMANDS)
                + "\n@file[:a-b] attach · !cmd shell here · ctrl+p palette · ctrl+o unfold · y/n/a approvals"
                + " · Esc declines a question"
            )
        elif name == "mode" and rest in ("auto", "steer", "queue"):
            self.mode = rest
        elif name == "expand":
            self.expanded = not self.expanded
        elif name == "theme" and rest in THEMES:
            self.prefs = TerminalPrefs(theme=rest, keys=self.prefs.keys)
            self.screen.prefs = self.prefs
        else:
            assert self.session is not None, "run() opens the session first"
            text, session = await session_command(self.client, self.session, name, rest, title="terminal")
            if name in ("sessions", "fork", "new"):  # the palette offers every session
                self.sessions = (await self.client.request("session.list", {}))["sessions"]
            if session != self.session:
                self.session = session
                self._follow_session()
            if text:
                self.note(text)
        self.redraw()


def _question_prompt(question: dict[str, Any]) -> str:
    """What the prompt line says while a question waits: how to answer it and how to decline it."""
    count = len(question.get("options") or [])
    parts = []
    if count:
        parts.append(f"1-{count} picks")
    if question.get("allow_text"):
        parts.append("type an answer, Enter")
    parts.append("Esc declines")
    return "answer: " + " · ".join(parts)
