"""The signed, hash-chained, append-only ledger (docs/ledger.md).

Everything Exo knows about a person is a view computed from this record. The
public API, one concept per module:

* :mod:`.canonical` — canonical JSON, the byte form hashes cover;
* :mod:`.keys`      — Ed25519 signing keys in the Exo home, key ids;
* :mod:`.kinds`     — entry kinds, scopes and body rules;
* :mod:`.entry`     — entry byte rules: id, chain hash, signature, row decoding;
* :mod:`.ledger`    — :class:`Ledger`: open, append, read;
* :mod:`.checkpoint`— signed checkpoints and the machine's checkpoint book;
* :mod:`.witness`   — checkpointing an open ledger; the home's witness of every commit;
* :mod:`.chain_check` — ``verify()``: every id, link, chain hash and signature;
* :mod:`.anchor`    — the trust anchor outside the store: pinned owner, enrolled keys;
* :mod:`.chain_sync` — syncing two copies; forks kept as explicit segments;
* :mod:`.views`     — rebuildable views and their registry;
* :mod:`.recorder`  — :class:`LedgerRecorder`, the agent loop's Recorder.

See ``docs/ledger.md`` for the formats and the sync/fork model.
"""

from exo_core.ledger.anchor import Anchor, MachineTrust, TrustStore, enrolled_keys, trusted_keys
from exo_core.ledger.canonical import canonical_json, parse_canonical, sha256_hex
from exo_core.ledger.chain_check import Problem, VerifyReport, verify_ledger
from exo_core.ledger.chain_sync import (
    Fork,
    ImportResult,
    SyncReport,
    common_prefix,
    forks,
    import_entries,
    snapshot_ledger,
    sync_ledgers,
)
from exo_core.ledger.checkpoint import Checkpoint, CheckpointBook, SeenHead
from exo_core.ledger.entry import NewEntry, StoredEntry, chain_hash, genesis_hash
from exo_core.ledger.keys import Signer, create_signing_key, ensure_signing_key, is_key_id, key_id_of, load_signing_key
from exo_core.ledger.kinds import KINDS, VERDICTS
from exo_core.ledger.ledger import LEDGER_FILE_NAME, Head, HeadWitness, Ledger, Segment
from exo_core.ledger.recorder import LedgerRecorder
from exo_core.ledger.views import DEFAULT_VIEWS, ViewBuilder, ViewRegistry, rebuild_views, render_views, views_dir
from exo_core.ledger.witness import HomeWitness, make_checkpoint, record_checkpoint

__all__ = [
    "canonical_json",
    "parse_canonical",
    "sha256_hex",
    "Signer",
    "create_signing_key",
    "load_signing_key",
    "ensure_signing_key",
    "key_id_of",
    "is_key_id",
    "KINDS",
    "VERDICTS",
    "NewEntry",
    "StoredEntry",
    "genesis_hash",
    "chain_hash",
    "Ledger",
    "Head",
    "Segment",
    "LEDGER_FILE_NAME",
    "Checkpoint",
    "CheckpointBook",
    "make_checkpoint",
    "record_checkpoint",
    "HomeWitness",
    "SeenHead",
    "HeadWitness",
    "Anchor",
    "TrustStore",
    "MachineTrust",
    "enrolled_keys",
    "trusted_keys",
    "Problem",
    "VerifyReport",
    "verify_ledger",
    "ImportResult",
    "Fork",
    "SyncReport",
    "import_entries",
    "common_prefix",
    "sync_ledgers",
    "forks",
    "snapshot_ledger",
    "ViewBuilder",
    "ViewRegistry",
    "DEFAULT_VIEWS",
    "rebuild_views",
    "render_views",
    "views_dir",
    "LedgerRecorder",
]
