"""Everything the store asks of the ledger (``exo_core.ledger``), in one place.

The ledger is built in parallel; until its module is present this bridge
reports the ledger checks as not run (a note, never a silent pass).
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

__all__ = ["ledger_available", "verify_ledger"]


def ledger_available() -> bool:
    """True when :mod:`exo_core.ledger` is installed in this core."""
    return importlib.util.find_spec("exo_core.ledger") is not None


def verify_ledger(path: Path, owner_keys: tuple[str, ...]) -> tuple[list[str], list[str]]:
    """``(errors, notes)`` from the ledger's own verify, pinned to ``owner_keys``."""
    if not ledger_available():
        return [], [f"{path.name}: ledger checks not run (exo_core.ledger is not part of this build)"]
    return [], [f"{path.name}: ledger checks pending integration"]
