"""LedgerRecorder: the agent loop's Recorder, backed by the signed ledger.

The loop calls :meth:`LedgerRecorder.record` from a worker thread for each
piece of a turn as it happens: the person's message (``utterance``), each
tool call with its gate outcome (``action``), each approval answer
(``approval``) and each verdict (``verdict``). Tool, web and file content
belongs *inside* an ``action`` body (e.g. ``result``), never in an
``utterance``: an utterance is the person's own words, and the learning loop
treats it as such.

The recorder does not swallow errors: a write that fails raises the ledger's
typed error (:class:`~exo_core.errors.StorageError`, or
:class:`~exo_core.errors.BadBodyError` for a malformed body), and the loop
decides whether the turn can continue unrecorded.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from exo_core.errors import BadBodyError
from exo_core.ledger.keys import Signer
from exo_core.ledger.kinds import validate_kind
from exo_core.ledger.ledger import HeadWitness, Ledger

__all__ = ["LedgerRecorder"]

# Checkpoints are the ledger's own bookkeeping, written by export and sync; an enrolment and a
# policy change are the owner's deliberate acts ('exo store enrol', 'exo gate set'): a turn writes none.
_TURN_KINDS_REFUSED = frozenset({"checkpoint", "enrol", "policy"})


class LedgerRecorder:
    """Satisfies :class:`exo_core.seams.recorder.Recorder` by appending signed entries."""

    __slots__ = ("ledger", "scope", "_owns")

    def __init__(self, ledger: Ledger, *, scope: str | None = None, owns: bool = False) -> None:
        if ledger.signer is None:
            raise BadBodyError("LedgerRecorder needs a ledger opened with a signing key", field="signer")
        self.ledger = ledger
        self.scope = scope if scope is not None else ledger.scope
        self._owns = owns

    @classmethod
    def for_store(
        cls,
        store_dir: str | Path,
        signer: Signer,
        *,
        scope: str = "person",
        clock: Callable[[], float] = time.time,
        witness: HeadWitness | None = None,
    ) -> LedgerRecorder:
        """Open (creating if needed) ``<store_dir>/ledger.sqlite`` for recording as ``scope``.

        ``witness`` (the Exo home's :class:`~exo_core.ledger.witness.HomeWitness`) keeps a
        signed record of each head this machine wrote, so a later rollback of the file is caught.
        """
        ledger = Ledger.open_store(store_dir, signer=signer, create=True, scope=scope, clock=clock, witness=witness)
        return cls(ledger, scope=scope, owns=True)

    def record(self, kind: str, body: Mapping[str, Any], *, refs: tuple[str, ...] = ()) -> str | None:
        """Append ``body`` as a ``kind`` entry referring to ``refs``; return the new entry id."""
        if validate_kind(kind) in _TURN_KINDS_REFUSED:
            raise BadBodyError(f"a turn cannot record a {kind!r} entry", field="kind")
        return self.ledger.append(kind, body, refs=refs, scope=self.scope).id

    def close(self) -> None:
        """Close the ledger if this recorder opened it."""
        if self._owns:
            self.ledger.close()
