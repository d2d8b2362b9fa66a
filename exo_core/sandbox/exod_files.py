"""Which files are exod's own, judged by what they are: where they resolve to, and which inode they are.

exod's own files are the whole Exo home (its keys, token, trust anchors,
sockets, sessions database, gate policy, settings, plugins and models) and
the private files of each store (ledger, items, raw corpus, indexes,
manifest). A workspace or store folder that lives inside the home stays the
person's: the device image keeps its workspace at ``<home>/workspace``.

A path is judged after every symbolic link in it is resolved, and a file by
its device and inode, so neither another spelling nor a hard link reaches one.
The sandbox hides these folders and files from every tool process
(:mod:`exo_core.sandbox.bwrap`); the file tools refuse them (:meth:`ExodFiles.why`).
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

__all__ = ["ExodFiles"]

# The store's private names (exo_core.store.layout): folders at its top, and the databases with their side files.
_STORE_PRIVATE_DIRS = ("indexes", "raw", ".exo", ".git")
_STORE_PRIVATE_FILES = tuple(
    db + side for db in ("ledger.sqlite", "items.sqlite") for side in ("", "-wal", "-shm", "-journal")
) + ("MANIFEST.json",)
# More entries than this in the home is not a home we made: stop counting inodes rather than stall a tool.
_MAX_HOME_ENTRIES = 20_000
# Folders of the home that hold no secret, only bulk (model files, caches): hidden, but not searched for links.
_BULK_DIRS = ("models", "cache")


def _real(path: Path) -> Path:
    return Path(os.path.realpath(os.path.abspath(path)))


def _within(path: Path, root: Path) -> bool:
    return path == root or root in path.parents


@dataclass(frozen=True, slots=True)
class ExodFiles:
    """The Exo home and the stores exod owns, and the workspaces tools work in (every path resolved)."""

    home: Path
    stores: tuple[Path, ...] = ()
    workspaces: tuple[Path, ...] = ()

    @classmethod
    def of(cls, home: Path, *, stores: Iterable[Path] = (), workspaces: Iterable[Path] = ()) -> ExodFiles:
        """The files of ``home`` and ``stores``, with every path resolved now."""
        return cls(
            _real(home),
            tuple(dict.fromkeys(_real(s) for s in stores)),
            tuple(dict.fromkeys(_real(w) for w in workspaces)),
        )

    # -- what is hidden ----------------------------------------------------------------------------------

    def hidden_folders(self) -> list[Path]:
        """Folders no tool process may see: the home, and each store's private folders."""
        folders = [self.home]
        for store in self.stores:
            folders.extend(store / name for name in _STORE_PRIVATE_DIRS)
        return folders

    def hidden_files(self) -> list[Path]:
        """Single files no tool process may see: each store's databases and manifest."""
        return [store / name for store in self.stores for name in _STORE_PRIVATE_FILES]

    def people_roots(self) -> list[Path]:
        """Folders inside the home that stay the person's: workspaces and stores kept there."""
        return [root for root in (*self.workspaces, *self.stores) if root != self.home and self.home in root.parents]

    # -- the file tools' judgement -----------------------------------------------------------------------

    def why(self, path: Path, *, follow: bool = True) -> str:
        """Why ``path`` is exod's own ('' when it is not), by its resolved place and by its inode.

        With ``follow=False`` a final symbolic link is judged itself (what a delete removes).
        """
        if follow:
            target = _real(path)
        else:
            target = _real(path.parent) / path.name
        why = self._why_place(target)
        if why:
            return why
        try:
            info = os.stat(target, follow_symlinks=follow)
        except OSError:
            return ""  # nothing there yet: a new file is judged by its place alone
        return self.why_inode(info)

    def why_inode(self, info: os.stat_result) -> str:
        """Why the file with ``info`` is exod's own: the same device and inode as one of its files."""
        if not stat.S_ISREG(info.st_mode) or info.st_nlink < 2:
            return ""  # one name only: its place (judged already) is the only way to it
        key = (info.st_dev, info.st_ino)
        for path in self._own_files():
            try:
                theirs = os.stat(path, follow_symlinks=False)
            except OSError:
                continue
            if (theirs.st_dev, theirs.st_ino) == key:
                return f"another name (a hard link) of exod's own file {path}"
        return ""

    def linked_elsewhere(self) -> list[Path]:
        """exod's own files that have another name somewhere (a hard link), which a sandbox cannot hide."""
        found = []
        for path in self._own_files():
            try:
                info = os.stat(path, follow_symlinks=False)
            except OSError:
                continue
            if stat.S_ISREG(info.st_mode) and info.st_nlink > 1:
                found.append(path)
        return found

    def _why_place(self, target: Path) -> str:
        for store in self.stores:
            if store in target.parents:
                rel = target.relative_to(store)
                if rel.parts[0] in _STORE_PRIVATE_DIRS or rel.name in _STORE_PRIVATE_FILES:
                    return "a private file of the store (ledger, items, raw corpus, indexes, manifest)"
        if not _within(target, self.home):
            return ""
        if any(_within(target, root) for root in self.people_roots()):
            return ""
        return "exod's own file in the Exo home (keys, token, trust, sockets, sessions, policy, settings)"

    def _own_files(self) -> Iterator[Path]:
        yield from self.hidden_files()
        skip = {*self.people_roots(), *(self.home / name for name in _BULK_DIRS)}
        seen = 0
        for folder in self.hidden_folders():
            for root, dirs, files in os.walk(folder):
                dirs[:] = [d for d in dirs if Path(root, d) not in skip]
                for name in files:
                    seen += 1
                    if seen > _MAX_HOME_ENTRIES:
                        return
                    yield Path(root, name)
