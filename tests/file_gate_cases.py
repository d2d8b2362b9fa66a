"""The file-tool gate table (issue 19): a real folder world and each call with the outcome it must get.

Imported by ``tests/gate/test_file_gate_table.py`` (judged in process) and
``tests/agent/test_denied_end_to_end.py`` (run through a real exod with every
approval denied). Paths use placeholders filled from :class:`World`:
``{ws}`` the workspace, ``{home}`` the Exo home, ``{store}`` its store,
``{user}`` the person's home folder (``$HOME``, so ``~`` means it), ``{tag}``
a name unique to the run (for files under ``/tmp`` and ``/var/tmp``).
"""

from __future__ import annotations

import os
import secrets
import socket
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["World", "build_world", "FILE_CASES", "fill", "SEED_HEX", "FAKE_SSH_KEY"]

# A seed and key body that exist only in tests; the e2e test looks for them everywhere.
SEED_HEX = "5eed" * 16
FAKE_SSH_KEY = (
    "-----BEGIN OPENSSH PRIVATE KEY-----\n"
    "b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW\n"
    "QyNTUxOQAAACBfakekeybodyfakekeybodyfakekeybodyfakekeybodyAAAAAAAAAAAAA\n"
    "-----END OPENSSH PRIVATE KEY-----\n"
)


@dataclass(frozen=True, slots=True)
class World:
    """The folders of one table run."""

    ws: Path
    home: Path
    store: Path
    user: Path
    tag: str

    def fill(self, text: str) -> str:
        """``text`` with the placeholders replaced."""
        return text.format(ws=self.ws, home=self.home, store=self.store, user=self.user, tag=self.tag)


def build_world(root: Path, *, home: Path | None = None) -> World:
    """Workspace, person's home and Exo home (made here unless ``home`` is an initialised one) under ``root``."""
    ws, user = root / "ws", root / "user"
    home = home or root / "exohome"
    store = home / "store"
    for folder in (ws / "sub", user / ".ssh", user / "x", home / "keys", home / "run", store, root / "outside"):
        folder.mkdir(parents=True, exist_ok=True)
    (ws / "a.txt").write_text("alpha\n")
    (ws / ".ssh").mkdir(exist_ok=True)
    (ws / ".ssh" / "id_ed25519").write_text(FAKE_SSH_KEY)
    (root / "outside" / "outside.txt").write_text("outside\n")
    (ws / "outside.txt").unlink(missing_ok=True)
    (user / ".ssh" / "id_rsa").write_text(FAKE_SSH_KEY)
    (user / ".bashrc").write_text("# the person's shell\n")
    (user / "notes.txt").write_text("alpha notes\n")
    (user / "x" / "keep.txt").write_text("keep\n")
    key = home / "keys" / "ledger-ed25519.key"
    if not key.exists():
        key.write_text(f"exo-ed25519-seed-v1 {SEED_HEX}\n")
        key.chmod(0o600)
    token = home / "token"
    if not token.exists():
        token.write_text(secrets.token_urlsafe(32) + "\n")
        token.chmod(0o600)
    for name in ("sessions.sqlite", "config.toml", "gate.toml"):
        path = home / name
        if not path.exists():
            path.write_text("")
    sock = home / "run" / "exod.sock"
    if not sock.exists():
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        listener.bind(str(sock))
        listener.close()  # the socket file stays, as a stale one from a killed exod would
    for name in ("ledger.sqlite", "items.sqlite"):
        if not (store / name).exists():
            (store / name).write_text("")
    if not (store / "pack.md").exists():
        (store / "pack.md").write_text("# pack\n")
    # Symbolic links inside the workspace: to the person's home, to the key, to files outside and inside.
    for name, target in (
        ("homelink", user),
        ("keylink", key),
        ("outlink.txt", user / "notes.txt"),
        ("inlink.txt", ws / "a.txt"),
    ):
        link = ws / name
        if not link.is_symlink():
            link.symlink_to(target)
    return World(ws=ws, home=home, store=store, user=user, tag=f"exo-sec-{os.getpid()}-{secrets.token_hex(3)}")


def fill(world: World, arguments: dict[str, Any]) -> dict[str, Any]:
    """``arguments`` with every string's placeholders replaced."""
    return {k: world.fill(v) if isinstance(v, str) else v for k, v in arguments.items()}


def _patch(old: str, new: str, body: str = "@@ -1 +1 @@\n-alpha\n+beta\n") -> dict[str, str]:
    return {"patch": f"--- {old}\n+++ {new}\n{body}"}


# (tool, arguments, outcome, what the case is about). Outcomes under the default policy.
FILE_CASES: list[tuple[str, dict[str, Any], str, str]] = [
    # read_file: inside allowed; outside asked; the Exo home's secrets and the store's private files denied
    ("read_file", {"path": "a.txt"}, "allow", "inside, relative"),
    ("read_file", {"path": "{ws}/a.txt"}, "allow", "inside, absolute"),
    ("read_file", {"path": "sub/../a.txt"}, "allow", "inside through .."),
    ("read_file", {"path": "../outside/outside.txt"}, "ask", ".. leads outside"),
    ("read_file", {"path": "~/notes.txt"}, "ask", "the person's home"),
    ("read_file", {"path": "~/.ssh/id_rsa"}, "ask", "an ssh key"),
    ("read_file", {"path": "/etc/shadow"}, "ask", "password hashes"),
    ("read_file", {"path": "/etc/hostname"}, "ask", "a system file"),
    ("read_file", {"path": "/tmp/{tag}.txt"}, "ask", "/tmp is not the workspace"),
    ("read_file", {"path": "/var/tmp/{tag}.txt"}, "ask", "/var/tmp is not the workspace"),
    ("read_file", {"path": "{home}/keys/ledger-ed25519.key"}, "deny", "the ledger signing key"),
    ("read_file", {"path": "{home}/keys/../keys/ledger-ed25519.key"}, "deny", "the key through .."),
    ("read_file", {"path": "{home}/token"}, "deny", "the TCP token"),
    ("read_file", {"path": "{home}/run/exod.sock"}, "deny", "the daemon's socket"),
    ("read_file", {"path": "{home}/sessions.sqlite"}, "deny", "every message"),
    ("read_file", {"path": "{home}/config.toml"}, "deny", "the home's settings: exod's own, outside every tool's view"),
    ("read_file", {"path": "{store}/ledger.sqlite"}, "deny", "the store's ledger"),
    ("read_file", {"path": "{store}/items.sqlite"}, "deny", "the store's items"),
    ("read_file", {"path": "{store}/pack.md"}, "ask", "a curated store file: outside"),
    ("read_file", {"path": "keylink"}, "deny", "a link in the workspace to the key"),
    ("read_file", {"path": "homelink/notes.txt"}, "ask", "through a link to the person's home"),
    ("read_file", {"path": "outlink.txt"}, "ask", "a link to a file outside"),
    ("read_file", {"path": "inlink.txt"}, "allow", "a link to a file inside"),
    ("read_file", {"path": ".ssh/id_ed25519"}, "ask", "a key file inside the workspace"),
    # write_file: inside logged; outside (links, .., /tmp) asked; the Exo home and store private files denied
    ("write_file", {"path": "notes/new.md", "content": "x"}, "log", "inside, a new folder"),
    ("write_file", {"path": "sub/../b.txt", "content": "x"}, "log", "inside through .."),
    ("write_file", {"path": "../outside/outside.txt", "content": "x"}, "ask", ".. leads outside"),
    ("write_file", {"path": "homelink/.bashrc", "content": "x"}, "ask", "ln -s ~ link; link/.bashrc"),
    ("write_file", {"path": "~/.bashrc", "content": "x"}, "ask", "a shell start-up file"),
    ("write_file", {"path": "outlink.txt", "content": "x"}, "ask", "a link to a file outside"),
    ("write_file", {"path": "/tmp/{tag}.txt", "content": "x"}, "ask", "/tmp is not the workspace"),
    ("write_file", {"path": "/var/tmp/{tag}.txt", "content": "x"}, "ask", "/var/tmp is not the workspace"),
    ("write_file", {"path": "/etc/cron.d/{tag}", "content": "x"}, "ask", "a system folder"),
    ("write_file", {"path": "{home}/keys/ledger-ed25519.key", "content": "x"}, "deny", "the signing key"),
    ("write_file", {"path": "keylink", "content": "x"}, "deny", "a link to the key"),
    ("write_file", {"path": "{home}/token", "content": "x"}, "deny", "the TCP token"),
    ("write_file", {"path": "{home}/gate.toml", "content": "x"}, "deny", "the gate's own policy"),
    ("write_file", {"path": "{home}/plugins/evil.py", "content": "x"}, "deny", "code exod loads"),
    ("write_file", {"path": "{store}/ledger.sqlite", "content": "x"}, "deny", "the store's ledger"),
    ("write_file", {"path": "{store}/pack.md", "content": "x"}, "ask", "a curated store file: outside"),
    # edit_file: the same places as write_file (it asked less before)
    ("edit_file", {"path": "a.txt", "old": "alpha", "new": "beta"}, "log", "inside"),
    ("edit_file", {"path": "inlink.txt", "old": "alpha", "new": "beta"}, "log", "a link to a file inside"),
    ("edit_file", {"path": "/etc/hosts", "old": "localhost", "new": "x"}, "ask", "a system file"),
    ("edit_file", {"path": "~/.bashrc", "old": "shell", "new": "x"}, "ask", "outside: asked like write_file"),
    ("edit_file", {"path": "homelink/.bashrc", "old": "shell", "new": "x"}, "ask", "through a link to ~"),
    ("edit_file", {"path": "../outside/outside.txt", "old": "outside", "new": "x"}, "ask", ".. leads outside"),
    ("edit_file", {"path": "/tmp/{tag}.txt", "old": "a", "new": "b"}, "ask", "/tmp is not the workspace"),
    ("edit_file", {"path": "{home}/config.toml", "old": "a", "new": "b"}, "deny", "the home's settings"),
    ("edit_file", {"path": "{store}/ledger.sqlite", "old": "a", "new": "b"}, "deny", "the store's ledger"),
    # delete_file: always asked; the Exo home's and the store's private files denied
    ("delete_file", {"path": "a.txt"}, "ask", "inside: no copy is kept"),
    ("delete_file", {"path": "~/notes.txt"}, "ask", "outside"),
    ("delete_file", {"path": "homelink/x/keep.txt"}, "ask", "through a link to ~"),
    ("delete_file", {"path": "keylink"}, "ask", "the link itself (not the key) is removed"),
    ("delete_file", {"path": "/tmp/{tag}.txt"}, "ask", "/tmp is not the workspace"),
    ("delete_file", {"path": "{home}/keys/ledger-ed25519.key"}, "deny", "the signing key"),
    ("delete_file", {"path": "{home}/run/exod.sock"}, "deny", "the daemon's socket"),
    ("delete_file", {"path": "{store}/ledger.sqlite"}, "deny", "the store's ledger"),
    # apply_patch: each file it reads or writes is judged like the tools above
    ("apply_patch", _patch("a/a.txt", "b/a.txt"), "log", "inside"),
    ("apply_patch", _patch("a/a.txt", "/dev/null", "@@ -1 +0,0 @@\n-alpha\n"), "ask", "a deletion inside"),
    ("apply_patch", _patch("~/.bashrc", "~/.bashrc", "@@ -1 +1 @@\n-# the person's shell\n+x\n"), "ask", "outside"),
    ("apply_patch", _patch("homelink/notes.txt", "homelink/notes.txt"), "ask", "through a link to ~"),
    ("apply_patch", _patch("{home}/gate.toml", "{home}/gate.toml", "@@ -0,0 +1 @@\n+x\n"), "deny", "the policy"),
    (
        "apply_patch",
        _patch("{home}/keys/ledger-ed25519.key", "b/stolen.txt", "@@ -1 +1 @@\n-x\n+x\n"),
        "deny",
        "copying the key into the workspace",
    ),
]
