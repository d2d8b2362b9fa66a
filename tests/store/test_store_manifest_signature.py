"""The signed manifest and the trust anchor file under arbitrary bytes (Hypothesis), and round trips."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from exo_core.errors import ConflictError, CorruptDataError
from exo_core.ledger import Anchor, Signer, TrustStore
from exo_core.store.errors import StoreFormatError
from exo_core.store.export_manifest import build_manifest, read_manifest

OWNER = Signer.from_seed(bytes(range(32)))


def _signed(root: Path) -> bytes:
    root.mkdir(exist_ok=True)
    (root / "pack.md").write_text("# Pack\n")
    return build_manifest(
        root,
        export_id="e1",
        exported_at="2026-01-01T00:00:00+00:00",
        store_id="st_" + "a" * 32,
        store_format=2,
        ledger={},
        owner=OWNER.key_id,
        signer=OWNER,
    )


def test_a_signed_manifest_round_trips_and_any_edit_breaks_it(tmp_path: Path) -> None:
    raw = _signed(tmp_path)
    (tmp_path / "MANIFEST.json").write_bytes(raw)
    manifest = read_manifest(tmp_path)
    assert manifest is not None and manifest.signature_ok()
    assert manifest.signer == OWNER.key_id and manifest.owner == OWNER.key_id
    doc = json.loads(raw)
    doc["exported_at"] = "2027-01-01T00:00:00+00:00"  # any field, re-digested: the signature no longer holds
    doc.pop("digest")
    signature = doc.pop("signature")
    canonical = json.dumps(doc, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()
    doc["digest"] = hashlib.sha256(canonical).hexdigest()
    doc["signature"] = signature
    (tmp_path / "MANIFEST.json").write_bytes(
        json.dumps(doc, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()
    )
    edited = read_manifest(tmp_path)
    assert edited is not None and not edited.signature_ok()


@given(st.integers(0, 2000), st.binary(min_size=1, max_size=8))
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_mutated_manifest_bytes_fail_typed_or_fail_the_signature(tmp_path: Path, at: int, junk: bytes) -> None:
    raw = _signed(tmp_path)
    at = at % len(raw)
    mutated = raw[:at] + junk + raw[at + len(junk) :]
    (tmp_path / "MANIFEST.json").write_bytes(mutated)
    try:
        manifest = read_manifest(tmp_path)
    except StoreFormatError:
        return
    assert manifest is not None
    if mutated != raw:
        assert not manifest.signature_ok()


@given(st.dictionaries(st.sampled_from(["v", "ledger", "owner", "machine", "how", "x"]), st.from_type(object)))
@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_anchor_files_decode_strictly(tmp_path: Path, doc: dict[str, object]) -> None:
    try:
        anchor = Anchor.from_json(doc, where=tmp_path / "x.json")
    except CorruptDataError:
        return
    assert anchor.owner.startswith("ed25519:")


def test_a_pinned_owner_is_never_replaced(tmp_path: Path) -> None:
    trust = TrustStore(tmp_path / "trust")
    other = Signer.from_seed(bytes(range(1, 33))).key_id
    trust.pin("st_" + "b" * 32, OWNER.key_id, machine=None, how="init")
    assert trust.pin("st_" + "b" * 32, OWNER.key_id, machine=other, how="import").machine == other
    with pytest.raises(ConflictError) as info:
        trust.pin("st_" + "b" * 32, other, machine=None, how="import")
    assert "never trusted from a store" in str(info.value)
    assert oct((tmp_path / "trust").stat().st_mode & 0o777) == "0o700"
    with pytest.raises(CorruptDataError):
        trust.anchor("../escape")
