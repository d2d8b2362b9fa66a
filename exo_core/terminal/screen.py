"""Drawing the terminal: the transcript's tail, an optional overlay, a status line and the prompt.

Plain ANSI on the alternate screen; every frame is drawn whole (lines are
pre-wrapped to the width), so a resize or a collapsed turn is just a redraw.
"""

from __future__ import annotations

import os
from typing import TextIO

from exo_core.terminal.prefs import TerminalPrefs

__all__ = ["Screen"]


class Screen:
    """Owns the output stream while the client runs."""

    def __init__(self, out: TextIO, prefs: TerminalPrefs, fd: int | None = None) -> None:
        self.out = out
        self.prefs = prefs
        self.fd = out.fileno() if fd is None else fd

    def size(self) -> tuple[int, int]:
        """``(columns, rows)`` of the terminal."""
        try:
            size = os.get_terminal_size(self.fd)
        except OSError:
            return 80, 24
        return max(20, size.columns), max(6, size.lines)

    def enter(self) -> None:
        """Switch to the alternate screen."""
        self.out.write("\x1b[?1049h\x1b[H\x1b[2J")
        self.out.flush()

    def leave(self) -> None:
        """Back to the normal screen, cursor shown."""
        self.out.write("\x1b[0m\x1b[?25h\x1b[?1049l")
        self.out.flush()

    def draw(self, body: list[str], overlay: list[str], status: str, prompt: str, cursor: int, scroll: int) -> None:
        """One whole frame. ``cursor`` is the prompt column (0-based) where the cursor sits."""
        cols, rows = self.size()
        room = max(1, rows - 2 - len(overlay))
        scroll = max(0, min(scroll, max(0, len(body) - room)))
        end = len(body) - scroll
        shown = body[max(0, end - room) : end]
        lines = [""] * (room - len(shown)) + shown + overlay
        frame = ["\x1b[?25l"]
        for row, line in enumerate(lines, 1):
            frame.append(f"\x1b[{row};1H{line}\x1b[0m\x1b[K")
        bar = _fit(status, cols)
        frame.append(f"\x1b[{rows - 1};1H{self.prefs.paint('status', bar + ' ' * (cols - len(bar)))}\x1b[K")
        frame.append(f"\x1b[{rows};1H{prompt}\x1b[0m\x1b[K\x1b[{rows};{min(cols, cursor + 1)}H\x1b[?25h")
        self.out.write("".join(frame))
        self.out.flush()


def _fit(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"
