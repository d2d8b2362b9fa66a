"""Which keys to trust for a store folder, decided from outside it (docs/security.md, "The ledger's trust anchor").

:func:`store_trust` turns this machine's :class:`~exo_core.ledger.anchor.MachineTrust`
into the pins for one store folder, in this order:

1. an anchor this machine holds for the store: owner ∪ this machine ∪ keys
   the owner enrolled. ``STORE.toml``'s ``owner_keys`` are then ignored (a
   note names any it lists that are not trusted);
2. no anchor, but an owner named by the caller (``--owner``) or, on first
   use, by the export's signed manifest: that owner ∪ keys it enrolled;
3. no anchor and no manifest (or no trust given at all: library callers):
   ``STORE.toml``'s owner keys, with a note that they prove nothing.

:func:`manifest_signature_problems` then checks an export's signature
against the same pins.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from exo_core.errors import ExoError
from exo_core.store.export_manifest import Manifest

if TYPE_CHECKING:
    from exo_core.ledger import Checkpoint, MachineTrust

__all__ = ["StoreTrust", "store_trust", "manifest_signature_problems", "pin_home_store"]


@dataclass(frozen=True, slots=True)
class StoreTrust:
    """The outcome of :func:`store_trust` for one folder."""

    pins: frozenset[str] | None  # None: any valid signature is accepted
    owner: str | None  # the owner key the pins rest on (None: STORE.toml only)
    anchored: bool  # True when the pins come from an anchor this machine holds
    seen_heads: tuple[Checkpoint, ...] = ()
    notes: tuple[str, ...] = ()
    errors: tuple[str, ...] = ()


def _enrolled(ledger_path: Path, owner: str) -> frozenset[str]:
    from exo_core.ledger import Ledger, enrolled_keys

    if not ledger_path.is_file():
        return frozenset()
    try:
        with Ledger.open(ledger_path) as ledger:
            return enrolled_keys(ledger, owner)
    except ExoError:
        return frozenset()  # an unreadable ledger is reported by verify itself


def _ledger_id(ledger_path: Path, fallback: str) -> str:
    from exo_core.ledger import Ledger

    with contextlib.suppress(ExoError):
        with Ledger.open(ledger_path) as ledger:
            return ledger.ledger_id
    return fallback


def store_trust(
    root: Path,
    *,
    store_id: str,
    listed_keys: tuple[str, ...],
    trust: MachineTrust | None,
    owner: str | None = None,
    manifest: Manifest | None = None,
    also_enrolled: tuple[Path, ...] = (),
) -> StoreTrust:
    """The pins for the store folder ``root`` (see the module docstring for the order).

    ``also_enrolled``: other ledgers of the same store whose owner-signed
    enrolments count too (a sync passes the other copy's, which it verifies)."""
    from exo_core.store import layout

    ledger_path = root / layout.LEDGER

    def enrolled(owner_key: str) -> frozenset[str]:
        keys = _enrolled(ledger_path, owner_key)
        for other in also_enrolled:
            keys |= _enrolled(other, owner_key)
        return keys

    if trust is None:
        listed = frozenset(listed_keys) or None
        said = ("no machine trust given: authors pinned to STORE.toml's owner keys only",) if listed else ()
        return StoreTrust(listed, None, False, notes=said)
    ledger_id = _ledger_id(ledger_path, store_id) if ledger_path.is_file() else store_id
    seen = trust.seen_head(ledger_path)
    seen_heads = (seen.checkpoint,) if seen is not None else ()
    errors: list[str] = []
    if seen is not None and not ledger_path.is_file():
        errors.append(
            f"{layout.LEDGER}: missing, but this machine wrote ledger {seen.checkpoint.ledger_id} here up to "
            f"height {seen.checkpoint.size}: it was removed or the folder was rolled back to an older copy"
        )
    anchor = trust.anchor(ledger_id) if ledger_id else None
    if anchor is not None:
        if owner is not None and owner != anchor.owner:
            errors.append(f"this machine pins owner key {anchor.owner[:24]}… for store {ledger_id}, not {owner[:24]}…")
        pins = frozenset({anchor.owner, *enrolled(anchor.owner)})
        if anchor.machine is not None:
            pins |= {anchor.machine}
        others = len(pins) - 1
        notes = [f"authors pinned to the owner key this machine pinned ({anchor.how}) and {others} other key(s)"]
        strangers = sorted(set(listed_keys) - pins)
        if strangers:
            notes.append(
                f"STORE.toml lists {len(strangers)} key(s) the owner has not enrolled (first {strangers[0][:24]}…); "
                "they are not trusted: only 'exo store enrol' on the owner's machine adds a key"
            )
        return StoreTrust(pins, anchor.owner, True, seen_heads, tuple(notes), tuple(errors))
    claimed = owner or (manifest.owner if manifest is not None and manifest.owner else None)
    if claimed is not None:
        pins = frozenset({claimed, *enrolled(claimed)})
        source = "--owner" if owner else "the export's manifest (first use: compare it with the old machine)"
        note = f"no trust anchor for store {ledger_id} on this machine: owner key {claimed} taken from {source}"
        return StoreTrust(pins, claimed, False, seen_heads, (note,), tuple(errors))
    legacy = frozenset(listed_keys) or None
    note = (
        f"no trust anchor for store {ledger_id} on this machine: authors pinned to STORE.toml's owner keys, "
        "which anyone who can write the folder can change; 'exo init' (on the machine that made the store) "
        "or 'exo store import' pins the owner"
    )
    return StoreTrust(legacy, None, False, seen_heads, (note,), tuple(errors))


def manifest_signature_problems(
    manifest: Manifest, trusted: StoreTrust, *, required: bool
) -> tuple[list[str], list[str]]:
    """``(errors, notes)`` about the export's signature under ``trusted``'s pins.

    ``required``: an unsigned manifest is an error (the CLI); otherwise a note
    (library callers that sign nothing themselves).
    """
    from exo_core.store import layout

    name = layout.MANIFEST
    if not manifest.signer:
        message = (
            f"{name} is not signed: anyone who edited a file could have re-hashed it; "
            "export the store again with 'exo store export' on a machine that holds its key"
        )
        return ([message], []) if required else ([], [message])
    if not manifest.signature_ok():
        return [f"{name}: the signature does not match its content: the export was altered after it was signed"], []
    if trusted.pins is not None and manifest.signer not in trusted.pins:
        return [
            f"{name} is signed by key {manifest.signer}, which this machine does not trust for this store "
            "(not the pinned owner's and not enrolled by it). If another machine of yours made this copy, "
            f"enrol that machine's key first: 'exo store enrol {manifest.signer}' on the owner's machine"
        ], []
    if trusted.pins is None:
        return [], [f"{name} is signed by {manifest.signer[:24]}… (no owner known here to check it against)"]
    return [], [f"{name} signed by a trusted key ({manifest.signer[:24]}…)"]


def pin_home_store(trust: MachineTrust, store_root: Path, *, created: bool) -> str:
    """Pin the owner of the home's store at ``exo init``; one line saying what was done.

    A store this machine just made is owned by this machine's key, and any
    head once recorded at its path is forgotten (a new ledger is there on
    purpose). A store from before anchors existed is pinned to this machine's
    key when STORE.toml lists it, else to the first key listed (the machine
    that made it): trust on first use, said in the line returned.
    """
    from exo_core.store import layout
    from exo_core.store.store_toml import read_config

    config = read_config(store_root)
    machine = trust.machine_key
    if created:
        trust.forget_head(store_root / layout.LEDGER)
    current = trust.anchor(config.store_id)
    if current is not None:
        return f"kept trust anchor: owner {current.owner} (pinned by {current.how})"
    if machine is not None and (created or machine in config.owner_keys or not config.owner_keys):
        owner = machine
    elif config.owner_keys:
        owner = config.owner_keys[0]
    else:
        return "no owner key to pin: run 'exo init' again once this machine has its key"
    anchor = trust.pin(config.store_id, owner, how="init")
    first_use = "" if owner == machine else " (taken from STORE.toml on first use: check it on the owner's machine)"
    return f"pinned owner key {anchor.owner} for store {config.store_id} in {trust.anchors.root}{first_use}"
