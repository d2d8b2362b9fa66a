"""Durable file writes: temp file, fsync, rename, fsync the directory.

Every write in the store that must be all-or-nothing goes through here. A
crash at any instant leaves either the old bytes or the new bytes at the
path, never a torn mix: the new content is written to a sibling temp file,
flushed to the disk with ``fsync``, renamed over the target (atomic on POSIX
within one file system), and the directory is fsynced so the rename itself
survives a power cut.
"""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
import shutil
from pathlib import Path

from exo_core.errors import StorageError

__all__ = ["atomic_write_bytes", "atomic_write_text", "fsync_dir", "fsync_tree", "exchange_paths", "remove_tree"]


def fsync_dir(path: Path) -> None:
    """Flush a directory's entries (creations, renames) to the disk."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    except OSError as exc:
        raise StorageError(f"{path}: cannot open directory to flush it ({exc})") from exc
    try:
        os.fsync(fd)
    except OSError as exc:
        # Some file systems (network mounts) refuse fsync on a directory; the
        # rename is still atomic there, only its durability is weaker.
        if exc.errno != errno.EINVAL:
            raise StorageError(f"{path}: cannot flush directory ({exc})") from exc
    finally:
        os.close(fd)


def fsync_tree(root: Path) -> None:
    """Flush every directory under ``root``, deepest first, then ``root`` itself."""
    for folder in sorted((p for p in root.rglob("*") if p.is_dir()), reverse=True):
        fsync_dir(folder)
    fsync_dir(root)


def atomic_write_bytes(path: Path, data: bytes, *, mode: int = 0o600) -> None:
    """Replace ``path`` with ``data`` atomically and durably; the file is private (0600) by default.

    Raises :class:`StorageError` naming the path when the disk refuses; the
    old content is then untouched and the temp file removed.
    """
    path = Path(path)
    tmp = path.with_name(f".{path.name}.tmp-{secrets.token_hex(4)}")
    try:
        with open(tmp, "xb", opener=lambda p, flags: os.open(p, flags, mode)) as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except OSError as exc:
        # The temp file is a dot-file ignored by lint and manifests; a leftover
        # is harmless and the original error matters more.
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise StorageError(f"{path}: cannot write ({exc}); check free space and permissions") from exc
    fsync_dir(path.parent)


def atomic_write_text(path: Path, text: str, *, mode: int = 0o600) -> None:
    """:func:`atomic_write_bytes` for UTF-8 text."""
    atomic_write_bytes(path, text.encode("utf-8"), mode=mode)


_RENAME_EXCHANGE = 2
_AT_FDCWD = -100


def exchange_paths(a: Path, b: Path) -> bool:
    """Swap two existing directory entries in one atomic step.

    Uses Linux ``renameat2(RENAME_EXCHANGE)``. Returns False when the
    platform or file system does not offer it, so the caller can fall back to
    a journaled two-step swap; raises :class:`StorageError` on a real failure.
    """
    import ctypes.util  # with tempfile and more under it: not imported by an idle exod (docs/benchmarks.md §2)

    try:
        renameat2 = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True).renameat2
    except (OSError, AttributeError):  # not Linux, or a C library without renameat2
        return False
    renameat2.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
    renameat2.restype = ctypes.c_int
    if renameat2(_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), _RENAME_EXCHANGE) == 0:
        return True
    err = ctypes.get_errno()
    if err in (errno.EINVAL, errno.ENOSYS, errno.EOPNOTSUPP):  # not offered here
        return False
    raise StorageError(f"cannot swap {a} and {b}: {os.strerror(err)}")


def remove_tree(path: Path) -> None:
    """Delete a directory tree we created (temp or superseded copies)."""
    try:
        shutil.rmtree(path)
    except FileNotFoundError:
        return
    except OSError as exc:
        raise StorageError(f"{path}: cannot remove ({exc}); delete it by hand") from exc
