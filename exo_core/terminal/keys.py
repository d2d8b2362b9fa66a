"""Raw terminal input: put the tty in raw mode and turn bytes into key names.

Keys are plain strings: a printable character is itself (``"a"``, ``"@"``);
everything else has a name (``"enter"``, ``"backspace"``, ``"up"``,
``"ctrl+p"``, ``"esc"``, ``"pageup"``). Pasted text arrives as its characters.
"""

from __future__ import annotations

import contextlib
import termios
import tty
from collections.abc import Iterator
from dataclasses import dataclass, field

__all__ = ["KeyDecoder", "raw_terminal"]

_CSI = {"A": "up", "B": "down", "C": "right", "D": "left", "H": "home", "F": "end", "Z": "shift+tab"}
_TILDE = {
    "1": "home",
    "2": "insert",
    "3": "delete",
    "4": "end",
    "5": "pageup",
    "6": "pagedown",
    "7": "home",
    "8": "end",
}
_CONTROL = {"\r": "enter", "\n": "enter", "\t": "tab", "\x7f": "backspace", "\x08": "backspace", "\x1b": "esc"}


@dataclass(slots=True)
class KeyDecoder:
    """Incremental decoder: feed bytes, get key names (escape sequences may span reads)."""

    _pending: str = ""
    _bytes: bytearray = field(default_factory=bytearray)

    def feed(self, data: bytes) -> list[str]:
        """The keys completed by ``data``."""
        self._bytes.extend(data)
        try:
            text = self._bytes.decode("utf-8")
        except UnicodeDecodeError:
            return []  # an incomplete multi-byte character: wait for the rest
        self._bytes.clear()
        self._pending += text
        keys: list[str] = []
        while self._pending:
            key, used = self._one(self._pending)
            if used == 0:
                break
            keys.append(key)
            self._pending = self._pending[used:]
        return keys

    def flush(self) -> list[str]:
        """A lone escape with nothing after it is the Esc key."""
        if self._pending == "\x1b":
            self._pending = ""
            return ["esc"]
        return []

    @staticmethod
    def _one(text: str) -> tuple[str, int]:
        ch = text[0]
        if ch == "\x1b":
            if len(text) == 1:
                return "", 0
            if text[1] in "[O":
                for end in range(2, min(len(text), 12)):
                    if text[end].isalpha() or text[end] == "~":
                        body, final = text[2:end], text[end]
                        if final == "~":
                            return _TILDE.get(body.split(";")[0], "unknown"), end + 1
                        return _CSI.get(final, "unknown"), end + 1
                return ("", 0) if len(text) < 12 else ("unknown", len(text))
            return f"alt+{text[1]}", 2
        if ch in _CONTROL:
            return _CONTROL[ch], 1
        if ord(ch) < 32:
            return f"ctrl+{chr(ord(ch) + 96)}", 1
        return ch, 1


@contextlib.contextmanager
def raw_terminal(fd: int) -> Iterator[None]:
    """The tty ``fd`` in raw mode (no echo, no line editing, ctrl+c as a key) while the block runs."""
    saved = termios.tcgetattr(fd)
    tty.setraw(fd)
    try:
        yield
    finally:
        termios.tcsetattr(fd, termios.TCSADRAIN, saved)
