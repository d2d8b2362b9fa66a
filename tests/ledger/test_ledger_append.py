"""Appending: kinds and bodies checked, refs resolved, idempotency, append-only triggers."""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Callable
from pathlib import Path

import pytest

from exo_core.errors import (
    BadBodyError,
    ClosedResourceError,
    ConflictError,
    CorruptDataError,
    NotFoundError,
    UsageError,
)
from exo_core.ledger import KINDS, Ledger, NewEntry, Signer
from exo_core.ledger.canonical import canonical_json, sha256_hex
from exo_core.ledger.entry import chain_hash, genesis_hash

MakeLedger = Callable[..., Ledger]


def test_entry_fields_follow_the_documented_byte_rules(make_ledger: MakeLedger, signer: Signer) -> None:
    ledger = make_ledger()
    first = ledger.append("utterance", {"text": "hi ☃"})
    second = ledger.append("rule", {"text": "short commit messages"}, refs=[first.id])
    expected = canonical_json(
        {
            "v": 1,
            "kind": "utterance",
            "scope": "person",
            "author": signer.key_id,
            "ts": first.ts,
            "refs": [],
            "body": {"text": "hi ☃"},
        }
    )
    assert first.content == expected
    assert first.id == sha256_hex(expected)
    assert first.prev == genesis_hash("test-ledger") == ledger.genesis
    assert first.chain == chain_hash(first.prev, first.id)
    assert second.prev == first.chain and second.pos == 2 and second.refs == (first.id,)
    assert ledger.head().size == 2 and ledger.head().chain == second.chain
    assert ledger.get(first.id[:8]) == first
    assert [e.id for e in ledger.entries()] == [first.id, second.id]


def test_every_kind_has_a_rule_and_unknown_kinds_are_refused(make_ledger: MakeLedger) -> None:
    assert set(KINDS) == {
        "utterance",
        "rule",
        "action",
        "approval",
        "verdict",
        "outcome",
        "proposal",
        "promotion",
        "rejection",
        "item",
        "retrieval",
        "decision",
        "checkpoint",
        "enrol",
        "policy",
        "resolve",
    }
    ledger = make_ledger()
    with pytest.raises(BadBodyError) as info:
        ledger.append("memory", {"text": "x"})
    assert info.value.field == "kind"
    assert ledger.count() == 0


@pytest.mark.parametrize(
    ("kind", "body", "field"),
    [
        ("utterance", {}, "body.text"),
        ("utterance", {"text": ""}, "body.text"),
        ("action", {"tool": "bash"}, "body.outcome"),
        ("approval", {"decision": "maybe"}, "body.decision"),
        ("verdict", {"verdict": "meh", "judged": "0" * 64}, "body.verdict"),
        ("verdict", {"verdict": "accept"}, "body.judged"),
        ("retrieval", {"node_ids": "n1", "item_ids": []}, "body.node_ids"),
        ("decision", {"decider": "rules", "prompt": "the raw question text"}, "body.prompt"),
        ("checkpoint", {"size": -1, "head": "0" * 64}, "body.size"),
        ("item", {"item_id": 5}, "body.item_id"),
        ("policy", {"file": "gate.toml"}, "body.sha256"),
        ("utterance", {"text": float("nan")}, "body.text"),
    ],
)
def test_bad_bodies_name_the_field_and_write_nothing(
    make_ledger: MakeLedger, kind: str, body: dict, field: str
) -> None:
    ledger = make_ledger()
    with pytest.raises(BadBodyError) as info:
        ledger.append(kind, body)
    assert info.value.field == field
    assert ledger.count() == 0


def test_refs_must_resolve_and_verdict_target_must_be_a_ref(make_ledger: MakeLedger) -> None:
    ledger = make_ledger()
    judged = ledger.append("utterance", {"text": "draft"})
    with pytest.raises(BadBodyError, match="names no entry"):
        ledger.append("outcome", {"status": "done"}, refs=["a" * 64])
    with pytest.raises(BadBodyError, match="not an entry id"):
        ledger.append("outcome", {"status": "done"}, refs=["xyz"])
    with pytest.raises(BadBodyError, match="must also be in refs"):
        ledger.append("verdict", {"verdict": "reject", "judged": judged.id})
    ok = ledger.append("verdict", {"verdict": "reject", "judged": judged.id}, refs=[judged.id])
    assert ok.refs == (judged.id,)
    assert ledger.count() == 2


def test_scope_is_recorded_and_checked(make_ledger: MakeLedger) -> None:
    ledger = make_ledger(scope="agent:writer")
    assert ledger.append("utterance", {"text": "a"}).scope == "agent:writer"
    assert ledger.append("utterance", {"text": "b"}, scope="group:team").scope == "group:team"
    for bad in ("Person", "agent:", "agent:UPPER", "robot:x"):
        with pytest.raises(BadBodyError):
            ledger.append("utterance", {"text": "c"}, scope=bad)


def test_idempotency_key_makes_a_retry_a_no_op(make_ledger: MakeLedger) -> None:
    ledger = make_ledger()
    first = ledger.append("utterance", {"text": "once"}, idem="turn-1")
    again = ledger.append("utterance", {"text": "once"}, idem="turn-1")
    assert again == first and ledger.count() == 1
    with pytest.raises(ConflictError, match="turn-1"):
        ledger.append("utterance", {"text": "different"}, idem="turn-1")
    assert ledger.count() == 1


def test_timestamps_strictly_increase_even_with_a_stuck_or_backward_clock(tmp_path: Path, signer: Signer) -> None:
    times = iter([1000.0, 1000.0, 999.0, 1000.5])
    ledger = Ledger.open(tmp_path / "l.sqlite", signer=signer, create=True, clock=lambda: next(times))
    stamps = [ledger.append("utterance", {"text": "same"}).ts for _ in range(4)]
    assert stamps == [1_000_000, 1_000_001, 1_000_002, 1_000_500]
    assert len({e.id for e in ledger.entries()}) == 4 and ledger.verify().ok
    ledger.close()


def test_batch_is_one_transaction(make_ledger: MakeLedger) -> None:
    ledger = make_ledger()
    good = [NewEntry("utterance", {"text": f"m{i}"}) for i in range(5)]
    with pytest.raises(BadBodyError):
        ledger.append_many([*good, NewEntry("nope", {})])
    assert ledger.count() == 0
    stored = ledger.append_many(good)
    assert [e.pos for e in stored] == [1, 2, 3, 4, 5]
    assert stored[1].prev == stored[0].chain


def test_database_refuses_update_and_delete(make_ledger: MakeLedger) -> None:
    ledger = make_ledger()
    ledger.append("utterance", {"text": "kept"})
    raw = sqlite3.connect(ledger.path)
    for sql in (
        "UPDATE entries SET kind='rule'",
        "DELETE FROM entries",
        "UPDATE meta SET value='x'",
        "DELETE FROM segments",
        "UPDATE segments SET origin='x'",
        "DELETE FROM meta",
    ):
        with pytest.raises(sqlite3.DatabaseError, match="append-only"):
            raw.execute(sql)
    raw.close()
    assert ledger.verify().ok and ledger.count() == 1


def test_read_only_and_closed(make_ledger: MakeLedger, tmp_path: Path) -> None:
    make_ledger().append("utterance", {"text": "x"})
    reader = Ledger.open(tmp_path / "ledger.sqlite")
    assert reader.ledger_id == "test-ledger"
    with pytest.raises(UsageError, match="signing key"):
        reader.append("utterance", {"text": "y"})
    reader.close()
    with pytest.raises(ClosedResourceError):
        reader.head()
    with pytest.raises(NotFoundError):
        Ledger.open(tmp_path / "missing.sqlite")
    with pytest.raises(ConflictError):
        Ledger.open(tmp_path / "ledger.sqlite", ledger_id="another")


def test_get_errors(make_ledger: MakeLedger) -> None:
    ledger = make_ledger()
    with pytest.raises(NotFoundError):
        ledger.get("abcdef")
    with pytest.raises(UsageError):
        ledger.get("XYZ")


def test_not_a_ledger_file(tmp_path: Path) -> None:
    path = tmp_path / "junk.sqlite"
    path.write_bytes(b"this is not a database" * 100)
    with pytest.raises(CorruptDataError):
        Ledger.open(path)


def test_threads_share_one_ledger(make_ledger: MakeLedger) -> None:
    ledger = make_ledger()
    errors: list[BaseException] = []

    def work(k: int) -> None:
        try:
            for i in range(25):
                ledger.append("utterance", {"text": f"t{k}-{i}"})
        except BaseException as exc:  # collected and re-raised by the assertion below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert ledger.count() == 100 and ledger.head().size == 100 and ledger.verify().ok
