"""Private files and folders: what the core writes belongs to the person alone.

The Exo home and the store hold every message, the ledger and the items; on a
shared machine another local user must not read them (docs/security.md, "Private files").
Two layers, because either alone has gaps:

* the process umask is set to ``0o077`` when ``exo``/``exod`` starts
  (:func:`restrict_umask`), so files made by code that passes no mode (SQLite's
  ``-wal``/``-shm``/``-journal`` files, a library's temp file) are 0600/0700;
* the core's own writers pass explicit modes (:data:`FILE_MODE`,
  :data:`DIR_MODE`) and tighten what already exists, so a library caller with
  a permissive umask, or a copy of the template whose files are 0644 in git,
  still ends private.

Modes are only ever narrowed here, never widened.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from exo_core.errors import StorageError

__all__ = [
    "PRIVATE_UMASK",
    "FILE_MODE",
    "DIR_MODE",
    "restrict_umask",
    "private_dir",
    "private_file",
    "privatize_tree",
]

PRIVATE_UMASK = 0o077
FILE_MODE = 0o600
DIR_MODE = 0o700


def restrict_umask() -> int:
    """Set the process umask to :data:`PRIVATE_UMASK`; returns the previous one."""
    return os.umask(PRIVATE_UMASK)


def _narrow(path: Path, limit: int) -> None:
    try:
        mode = stat.S_IMODE(path.stat().st_mode)
        if mode & ~limit:
            os.chmod(path, mode & limit)
    except OSError as exc:
        raise StorageError(f"cannot make {path} private ({exc.strerror or exc}); check its owner") from exc


def private_dir(path: Path, *, parents: bool = True) -> Path:
    """Create ``path`` (0700) if missing and narrow it to 0700 if it is looser; returns it.

    Parents made on the way get the process umask (they may be shared folders
    the person chose, like ``~/exports``); only ``path`` itself is the core's.
    """
    path = Path(path)
    try:
        path.mkdir(mode=DIR_MODE, parents=parents, exist_ok=True)
    except OSError as exc:
        raise StorageError(f"cannot create folder {path} ({exc.strerror or exc})") from exc
    _narrow(path, DIR_MODE)
    return path


def private_file(path: Path) -> Path:
    """Create ``path`` empty with mode 0600 if missing, or narrow an existing file to 0600.

    Called before SQLite opens a database: SQLite gives its ``-journal``,
    ``-wal`` and ``-shm`` files the mode of the database file, so they follow.
    """
    path = Path(path)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT, FILE_MODE)
    except OSError as exc:
        raise StorageError(f"cannot create {path} ({exc.strerror or exc})") from exc
    os.close(fd)
    _narrow(path, FILE_MODE)
    return path


def privatize_tree(root: Path) -> None:
    """Narrow every folder under ``root`` (and itself) to 0700 and every file to 0600.

    For trees copied from elsewhere (the store template, whose files are
    0644 in the package); symbolic links are left alone.
    """
    root = Path(root)
    for path in [root, *root.rglob("*")]:
        if path.is_symlink():
            continue
        _narrow(path, DIR_MODE if path.is_dir() else FILE_MODE)
