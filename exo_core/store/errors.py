"""Errors raised by the store, each naming the file and line it is about.

They subclass the one hierarchy in :mod:`exo_core.errors` so the CLI and the
protocol report them with their stable codes.
"""

from __future__ import annotations

from pathlib import Path

from exo_core.errors import ConflictError, CorruptDataError, UsageError

__all__ = ["StoreFormatError", "ImportFormatError", "StoreVersionError", "where"]


def where(path: Path | str | None, line: int | None) -> str:
    """``path:line`` (or just the path, or ``<text>``) for a message prefix."""
    name = str(path) if path is not None else "<text>"
    return f"{name}:{line}" if line else name


class StoreFormatError(CorruptDataError):
    """A curated store file (node, STORE.toml, router, manifest) is malformed.

    ``path`` and ``line`` locate it; ``detail`` is the message without them;
    ``rule`` is the lint rule name it maps to.
    """

    def __init__(
        self, message: str, *, path: Path | str | None = None, line: int | None = None, rule: str = "syntax"
    ) -> None:
        super().__init__(f"{where(path, line)}: {message}")
        self.path = path
        self.line = line
        self.rule = rule
        self.detail = message


class ImportFormatError(UsageError):
    """A file offered for import is malformed; nothing was written."""

    def __init__(self, message: str, *, path: Path | str | None = None, line: int | None = None) -> None:
        super().__init__(f"{where(path, line)}: {message}")
        self.path = path
        self.line = line
        self.detail = message


class StoreVersionError(ConflictError):
    """The store's format is newer than this code, or a migration cannot run."""
