"""Where a file tool's path lands: the workspace, outside it, a file that holds credentials, or exod's own.

The file tools (``read_file``, ``write_file``, ``edit_file``, ``delete_file``,
``apply_patch``) are judged here, by the path *resolved* the way the tool will
resolve it (:func:`exo_core.tools.safe_fs.resolve_target`: ``~`` expanded,
relative to the workspace, every symbolic link followed), so ``ln -s ~ link``
then ``write_file link/.bashrc`` is a write in the person's home, not in the
workspace. The tool is told the resolved paths judged here and touches no
other (docs/security.md, "Agent tools").

Four places, strictest first:

* ``protected``: another name (a hard link) of any file below, judged by its
  inode; the Exo home's keys, token, sockets and sessions database,
  any file named like a ledger key, the private files of a store (ledger,
  items, raw corpus, indexes); and anything else in the Exo home (its
  policy, settings, trust anchors and plugins decide what the agent may do,
  so they are outside every tool's view), except a workspace inside it and
  the store's curated files. Denied: no policy lowers it.
* ``sensitive``: files that usually hold credentials (``.ssh``, ``.gnupg``,
  ``.aws``, ``.netrc``, ``/etc/shadow`` …) and, for writes, files that run
  code later (shell start-up files, ``.git/hooks``): asked even inside the
  workspace.
* ``inside``: below a workspace root (both resolved). ``/tmp`` and
  ``/var/tmp`` are not: other users and programs share them.
* ``outside``: everything else.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from exo_core.gate.scope import Scope
from exo_core.sandbox.exod_files import ExodFiles
from exo_core.tools.safe_fs import resolve_target

__all__ = ["FilePlace", "place", "protected"]

Place = Literal["protected", "sensitive", "inside", "outside"]

# Folders and names that usually hold someone's credentials: reading them is asked, wherever they are.
_SECRET_DIRS = frozenset({".ssh", ".gnupg", ".aws", ".kube", ".docker", ".password-store", ".azure", ".gcloud"})
_SECRET_NAMES = frozenset(
    {".netrc", ".git-credentials", ".pgpass", ".npmrc", ".pypirc", "id_rsa", "id_dsa", "id_ecdsa", "id_ed25519"}
)
_SYSTEM_SECRETS = frozenset(
    {Path("/etc/shadow"), Path("/etc/gshadow"), Path("/etc/sudoers"), Path("/etc/master.passwd")}
)
# Files that run code later (at the next login, commit or boot): writing them is asked, wherever they are.
_RUNS_LATER = frozenset(
    {".bashrc", ".bash_profile", ".bash_login", ".bash_logout", ".profile", ".zshrc", ".zprofile", ".zshenv"}
)
# In the Exo home: what a read may never see (docs/security.md); a write anywhere in the home is refused.
_HOME_SECRET_DIRS = frozenset({"keys", "run"})
_HOME_SECRET_NAMES = ("token", "sessions.sqlite")


@dataclass(frozen=True, slots=True)
class FilePlace:
    """A judged path: where it resolved to, which place that is, and why; ``linked`` when a link moved it."""

    path: Path
    place: Place
    why: str
    linked: bool = False


def place(raw: str, scope: Scope, *, writing: bool, follow: bool = True) -> FilePlace:
    """Judge the path ``raw`` as a file tool resolves it; ``follow=False`` keeps a final link itself (delete)."""
    lexical = _lexical(raw, scope)
    try:
        target = resolve_target(lexical, follow=follow)
    except (OSError, ValueError):
        target = lexical  # a path the system cannot resolve (a NUL byte): judged as written; the tool fails on it
    linked = target != lexical
    for path in dict.fromkeys((lexical, target)):
        why = _protected(path, scope, writing=writing)
        if why:
            return FilePlace(target, "protected", why, linked)
    why = _another_name_of_exods(target, scope, follow=follow)
    if why:
        return FilePlace(target, "protected", why, linked)
    why = _sensitive(target, writing=writing) or _sensitive(lexical, writing=writing)
    if why:
        return FilePlace(target, "sensitive", why, linked)
    for root in scope.workspace:
        real_root = resolve_target(root)
        if target == real_root or real_root in target.parents:
            return FilePlace(target, "inside", "inside the workspace", linked)
    if linked and _inside_lexically(lexical, scope):
        return FilePlace(target, "outside", f"a symbolic link leads outside the workspace, to {target}", linked)
    return FilePlace(target, "outside", "outside the workspace", linked)


def _lexical(raw: str, scope: Scope) -> Path:
    # As exo_core.tools.files.resolve_path does it: ~ expanded, relative paths against the workspace.
    path = Path(os.path.expanduser(raw))
    if not path.is_absolute():
        path = (scope.workspace[0] if scope.workspace else Path.cwd()) / path
    return Path(os.path.normpath(path))


def _inside_lexically(path: Path, scope: Scope) -> bool:
    return any(path == root or root in path.parents for root in scope.workspace)


def protected(path: Path, scope: Scope, *, writing: bool) -> str:
    """Why the resolved ``path`` is exod's own (''/not): the shell gate asks the same question (targets.py)."""
    return _protected(path, scope, writing=writing)


def _protected(path: Path, scope: Scope, *, writing: bool) -> str:
    from exo_core.ledger.keys import KEY_FILE_NAME  # the ledger pulls in nacl: imported only when judging a file
    from exo_core.store.layout import is_private  # the store package is heavy for `exo gate check`

    if path.name == KEY_FILE_NAME:
        return "a ledger signing key"
    if scope.exo_home is not None:
        for home in dict.fromkeys((scope.exo_home, resolve_target(scope.exo_home))):
            if path != home and home not in path.parents:
                continue
            rel = path.relative_to(home)
            top = rel.parts[0] if rel.parts else ""
            if top in _HOME_SECRET_DIRS or len(rel.parts) == 1 and top.startswith(_HOME_SECRET_NAMES):
                return "the Exo home's keys, token, sockets or sessions"
            # A workspace may live in the home (the device image's is <home>/workspace): it stays writable.
            ours = [
                form
                for root in (*scope.stores, *scope.workspace)
                for form in (root, resolve_target(root))
                if home in form.parents
            ]
            if not any(path == root or root in path.parents for root in ours):
                return "the Exo home: exod's own policy, settings, trust anchors and plugins"
    for store in scope.stores:
        for root in dict.fromkeys((store, resolve_target(store))):
            if root in path.parents and is_private(path.relative_to(root)):
                return "a private file of the store (ledger, items, raw corpus, indexes)"
    return ""


def _another_name_of_exods(path: Path, scope: Scope, *, follow: bool) -> str:
    """Why ``path`` is a hard link to one of exod's own files ('' when it is not): judged by its inode."""
    if scope.exo_home is None:
        return ""
    try:
        info = os.stat(path, follow_symlinks=follow)
    except (OSError, ValueError):
        return ""
    if info.st_nlink < 2:
        return ""  # one name only: its place, judged above, is the only way to it
    files = ExodFiles.of(scope.exo_home, stores=scope.stores, workspaces=scope.workspace)
    return files.why_inode(info)


def _sensitive(path: Path, *, writing: bool) -> str:
    parts = set(path.parts[:-1])
    if parts & _SECRET_DIRS or path.name in _SECRET_NAMES or path in _SYSTEM_SECRETS:
        return "a file that usually holds credentials"
    if writing and (path.name in _RUNS_LATER or {".git", "hooks"} <= parts):
        return "a file that runs code later (a shell start-up file or a git hook)"
    return ""
