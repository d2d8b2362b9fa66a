"""Shared fixtures for the store tests: a machine key, fresh stores, a ledger.

Not named conftest.py: other test folders import their root conftest by
basename (``from conftest import ...``), which a second conftest.py would shadow.
Test modules import these fixtures by name instead.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from exo_core.ledger import Ledger, Signer, create_signing_key
from exo_core.store import Store, init_store
from exo_core.store.ledger_bridge import open_ledger


@pytest.fixture()
def signer(tmp_path: Path) -> Signer:
    """This machine's ledger key, in a throwaway keys folder."""
    return create_signing_key(tmp_path / "home" / "keys")


@pytest.fixture()
def store(tmp_path: Path, signer: Signer) -> Store:
    """A fresh person store made from store_template/ with its empty ledger."""
    return init_store(tmp_path / "store", owner_key_ids=[signer.key_id])


@pytest.fixture()
def ledger(store: Store, signer: Signer) -> Iterator[Ledger]:
    """The store's ledger opened for writing with the machine key."""
    opened = open_ledger(store.root, signer=signer)
    yield opened
    opened.close()
