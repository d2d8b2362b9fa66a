"""Disk work for the file tools that touches only the file the gate judged (docs/security.md, "Agent tools").

The gate judges a call by the *resolved* path (:func:`resolve_target`:
symbolic links followed). Between that judgement and the write, a link can
be swapped in: by another process, or by a shell command of the same turn.
So the tools resolve again when they run and refuse when the answer changed
(:class:`PathChangedError`), then reach the file by walking its folders from
``/`` with ``O_NOFOLLOW`` (a link swapped in during the walk is refused by the
kernel) and work on its last name inside the folder they hold open: reads open
it with ``O_NOFOLLOW``; writes go to a temporary file in that folder and are
renamed over the name (a rename replaces a link, never follows it); deletes
unlink the name (which removes a link, not its target).
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from collections.abc import Collection
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from exo_core.sandbox import ExodFiles

__all__ = [
    "ExodFileError",
    "PathChangedError",
    "NotRegularFileError",
    "resolve_target",
    "check_target",
    "read_text",
    "write_text",
    "unlink",
]

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)


class ExodFileError(PermissionError):
    """The file is one of exod's own (exo_core.sandbox.ExodFiles): never a tool's to read or change."""


class PathChangedError(OSError):
    """The path leads somewhere other than where it led when the gate judged it."""


class NotRegularFileError(OSError):
    """The path names a folder, device, pipe or socket, not a regular file."""


def resolve_target(path: Path, *, follow: bool = True) -> Path:
    """``path`` made absolute with every symbolic link resolved (the last one too, when ``follow``).

    With ``follow=False`` the last name is kept as it is: what a delete removes
    is the link itself.
    """
    path = Path(os.path.abspath(path))
    if follow:
        return Path(os.path.realpath(path))
    return Path(os.path.realpath(path.parent)) / path.name


def check_target(
    path: Path, checked: Collection[str] | None, *, follow: bool = True, exod: ExodFiles | None = None
) -> Path:
    """The resolved ``path``; :class:`PathChangedError` when ``checked`` is given and does not hold it.

    :class:`ExodFileError` when it is one of ``exod``'s files, by where it resolves or by its inode.
    """
    target = resolve_target(path, follow=follow)
    if checked is not None and str(target) not in checked:
        raise PathChangedError(
            errno.EXDEV,
            f"{path} now leads to {target}, not to what the gate checked (a symbolic link changed since); "
            "nothing was done: make the call again so it is checked afresh",
        )
    if exod is not None:
        _refuse(path, exod.why(target, follow=follow))
    return target


def _refuse(path: Path, why: str) -> None:
    if why:
        raise ExodFileError(errno.EACCES, f"{path} is {why}: exod's own files are never a tool's to read or change")


def _open_folder(folder: Path, *, create: bool) -> int:
    """A descriptor of ``folder`` (already resolved), reached without following any link."""
    fd = os.open("/", _DIR_FLAGS)
    try:
        for part in folder.parts[1:]:
            try:
                child = os.open(part, _DIR_FLAGS, dir_fd=fd)
            except FileNotFoundError:
                if not create:
                    raise
                with contextlib.suppress(FileExistsError):  # made by someone else meanwhile: open it below
                    os.mkdir(part, 0o777, dir_fd=fd)
                child = os.open(part, _DIR_FLAGS, dir_fd=fd)
            except OSError as exc:
                if exc.errno in (errno.ELOOP, errno.ENOTDIR):
                    raise PathChangedError(
                        exc.errno, f"{folder} has a symbolic link in it that was not there when it was checked"
                    ) from exc
                raise
            os.close(fd)
            fd = child
    except BaseException:
        os.close(fd)
        raise
    return fd


def read_text(target: Path, *, max_bytes: int, exod: ExodFiles | None = None) -> str:
    """The UTF-8 text of the regular file ``target``; refuses links, pipes, devices and files over ``max_bytes``.

    With ``exod``, the file opened is checked by its inode too: a name swapped in since cannot reach one of exod's.
    """
    folder = _open_folder(target.parent, create=False)
    try:
        try:
            # O_NONBLOCK: opening a pipe must not wait for a writer; it is refused below anyway.
            fd = os.open(target.name, os.O_RDONLY | os.O_NONBLOCK | _NOFOLLOW, dir_fd=folder)
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                raise PathChangedError(exc.errno, f"{target} became a symbolic link after it was checked") from exc
            raise
    finally:
        os.close(folder)
    with os.fdopen(fd, "rb") as fh:
        info = os.fstat(fh.fileno())
        if stat.S_ISDIR(info.st_mode):
            raise IsADirectoryError(errno.EISDIR, f"{target} is a directory")
        if not stat.S_ISREG(info.st_mode):
            raise NotRegularFileError(errno.EINVAL, f"{target} is not a regular file")
        if info.st_size > max_bytes:
            raise NotRegularFileError(errno.EFBIG, f"{target} is larger than {max_bytes} bytes")
        if exod is not None:
            _refuse(target, exod.why_inode(info))
        data = fh.read(max_bytes + 1)
    return data.decode("utf-8")


def write_text(target: Path, content: str) -> None:
    """Replace ``target`` with ``content`` atomically (temporary file, fsync, rename), keeping its mode."""
    folder = _open_folder(target.parent, create=True)
    tmp = f".{target.name}.exo-tmp-{os.getpid()}"
    try:
        mode = None  # a new file gets 0666 less the umask, as open() gives it; an existing one keeps its mode
        with contextlib.suppress(FileNotFoundError):
            info = os.stat(target.name, dir_fd=folder, follow_symlinks=False)
            if stat.S_ISLNK(info.st_mode):
                raise PathChangedError(errno.ELOOP, f"{target} became a symbolic link after it was checked")
            mode = stat.S_IMODE(info.st_mode)
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW, 0o666, dir_fd=folder)
        try:
            with os.fdopen(fd, "wb") as fh:
                fh.write(content.encode("utf-8"))
                fh.flush()
                if mode is not None:
                    os.fchmod(fh.fileno(), mode)
                os.fsync(fh.fileno())
            os.replace(tmp, target.name, src_dir_fd=folder, dst_dir_fd=folder)
        except BaseException:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp, dir_fd=folder)
            raise
        os.fsync(folder)
    finally:
        os.close(folder)


def unlink(target: Path) -> None:
    """Remove the name ``target`` (a link itself, never its target); refuses a folder."""
    folder = _open_folder(target.parent, create=False)
    try:
        info = os.stat(target.name, dir_fd=folder, follow_symlinks=False)
        if stat.S_ISDIR(info.st_mode):
            raise IsADirectoryError(errno.EISDIR, f"{target} is a directory")
        os.unlink(target.name, dir_fd=folder)
    finally:
        os.close(folder)
