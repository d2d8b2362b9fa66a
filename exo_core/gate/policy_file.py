"""The gate's policy file is exod's alone: changed by the person through ``exo gate set``, every change in the ledger.

No tool can reach ``$EXO_HOME/gate.toml``: the sandbox hides the Exo home from every tool process and
the file tools refuse it (:mod:`exo_core.sandbox`). The person changes it with ``exo gate set FILE``,
which checks the new policy, shows what changes, asks on the terminal, writes the file (0600,
atomically) and appends a ``policy`` entry to the store's signed ledger with the old and new digests.
A change made any other way (an editor) is found when exod starts, by its digest against the last
``policy`` entry, and recorded then as a change made outside ``exo``: the ledger holds the digest of
every policy exod ever ran under. Not its text: the policy belongs to this machine's home, and the
ledger travels with the store to other machines.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import TYPE_CHECKING

from exo_core.errors import ConfigError
from exo_core.gate.policy import Policy

if TYPE_CHECKING:
    from exo_core.ledger import Ledger

__all__ = ["POLICY_FILE", "policy_digest", "recorded_digest", "set_policy", "record_found_change", "policy_diff"]

POLICY_FILE = "gate.toml"
# The digest recorded for "no policy file: the built-in default".
_DEFAULT = "default"


def policy_digest(path: Path) -> str:
    """The sha256 of the policy file at ``path``, or ``"default"`` when there is none."""
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except FileNotFoundError:
        return _DEFAULT


def recorded_digest(ledger: Ledger) -> str | None:
    """The digest of the last policy the ledger records (``None``: it records none yet)."""
    last = None
    for entry in ledger.entries(kind="policy"):
        if entry.body.get("file") == POLICY_FILE:
            last = entry
    return None if last is None else str(last.body.get("sha256"))


def policy_diff(old: str, new: str) -> str:
    """The change from ``old`` to ``new`` as a unified diff of the policy file."""
    import difflib  # only when a person changes the policy: not imported by an idle exod (docs/benchmarks.md §2)

    lines = difflib.unified_diff(
        old.splitlines(keepends=True), new.splitlines(keepends=True), POLICY_FILE + " (now)", POLICY_FILE + " (new)"
    )
    return "".join(lines)


def set_policy(home: Path, text: str, ledger: Ledger, *, by: str) -> str:
    """Check ``text`` as a gate policy, write it as ``home``'s ``gate.toml`` and record it; returns the entry id.

    A policy that does not load is a :class:`ConfigError` and changes nothing.
    """
    import tomllib

    from exo_core.atomic import atomic_write_text

    try:
        Policy.from_mapping(tomllib.loads(text))
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"the new gate policy is not valid TOML ({exc}); nothing was changed") from exc
    path = home / POLICY_FILE
    before = policy_digest(path)
    atomic_write_text(path, text, mode=0o600)
    return _record(ledger, before=before, after=policy_digest(path), by=by)


def record_found_change(home: Path, ledger: Ledger) -> str | None:
    """Record the policy file as exod finds it when it differs from the last recorded one (an edit by hand)."""
    path = home / POLICY_FILE
    now = policy_digest(path)
    last = recorded_digest(ledger)
    if now == (last or _DEFAULT):
        return None
    return _record(ledger, before=last or "", after=now, by="found changed when exod started")


def _record(ledger: Ledger, *, before: str, after: str, by: str) -> str:
    body = {"file": POLICY_FILE, "sha256": after, "previous": before, "by": by}
    return ledger.append("policy", body).id
