"""Sync of two used copies: every entry of both survives, the fork is reported."""

from __future__ import annotations

from pathlib import Path

from exo_core.ledger import CheckpointBook, Ledger, Signer, create_signing_key
from exo_core.store import ItemStore, Link, Node, Store
from exo_core.store.transfer import export_store, import_store
from exo_core.store.verify import verify_store
from exo_core.store.items import Item
from exo_core.store.ledger_bridge import checkpoint_hook, open_ledger
from exo_core.store.sync import sync_stores
from store_fixtures import ledger, signer, store  # noqa: F401  (pytest fixtures)

K = 25


def _node(node_id: str, summary: str) -> Node:
    return Node(
        id=node_id,
        title="T",
        type="fact",
        domain=node_id.split("/")[0],
        summary=summary,
        load_when="",
        confidence="medium",
        stability="durable",
        valid_from="2025-01-01",
        links=(Link("see-also", "work/INDEX"),),
    )


def test_two_used_copies_sync_without_loss(store: Store, ledger: Ledger, signer: Signer, tmp_path: Path) -> None:
    for i in range(5):
        ledger.append("utterance", {"text": f"shared {i}"})
    store.write_node(_node("work/shared", "A belief both copies start with."))
    store.write_node(_node("work/both", "Edited in both copies later."))
    ledger.close()
    export_store(store.root, tmp_path / "export", ledger_hook=checkpoint_hook(signer))
    # Machine B has its own key; the import adds it to the owners.
    signer_b = create_signing_key(tmp_path / "home-b" / "keys")
    b_root = import_store(tmp_path / "export", tmp_path / "b" / "store", owner_key_id=signer_b.key_id)
    a, b = Store.open(store.root), Store.open(b_root)
    # Both copies are used: k entries each, an item each, node edits.
    la, lb = open_ledger(a.root, signer=signer), open_ledger(b.root, signer=signer_b)
    size_before = la.count()
    for i in range(K):
        la.append("utterance", {"text": f"on A {i}"})
        lb.append("utterance", {"text": f"on B {i}"})
    with ItemStore(a.items_path, la) as items:
        items.put(Item.new(source_kind="note", source_ref="a.md", title="from A", body="a"))
    with ItemStore(b.items_path, lb) as items:
        items.put(Item.new(source_kind="note", source_ref="b.md", title="from B", body="b"))
    la.close()
    lb.close()
    a.write_node(_node("work/only-a", "Written on A only."))
    b.write_node(_node("work/shared", "A belief both copies start with, refined on B."))
    a.write_node(_node("work/both", "Edited in both copies later, A's way."))
    b.write_node(_node("work/both", "Edited in both copies later, B's way."))
    # A store's STORE.toml gained B's key on import; A must learn it from the sync.
    book = CheckpointBook(tmp_path / "book.sqlite")
    report = sync_stores(a.root, b.root, signer=signer, live=(a.root, b.root), book=book)
    text = report.render()
    assert report.forked, text
    fork = report.ledger.fork
    assert fork is not None and fork.local.signature_ok() and fork.foreign.signature_ok()
    assert fork.local.head != fork.foreign.head and fork.base.size >= 5
    assert "FORK" in text
    for root in (a.root, b.root):
        led = Ledger.open(root / "ledger.sqlite")
        texts = {e.body.get("text") for e in led.entries(kind="utterance")}
        assert {f"on A {i}" for i in range(K)} <= texts and {f"on B {i}" for i in range(K)} <= texts
        assert led.count() >= size_before + 2 * K + 2
        led.close()
        with ItemStore(root / "items.sqlite", None) as items:
            assert {i.title for i in items.all()} >= {"from A", "from B"}
        v = verify_store(root, live=True)
        assert v.ok, v.render()
        assert "fork segments" in v.render()
    # Curated files: one-sided changes travel, two-sided ones are kept and reported.
    assert (b.root / "work" / "only-a.md").exists()
    assert "refined on B" in (a.root / "work" / "shared.md").read_text()
    assert "A's way" in (a.root / "work" / "both.md").read_text()
    assert "B's way" in (b.root / "work" / "both.md").read_text()
    assert any("work/both.md" in c for c in report.conflicts)
    kept = list((a.root / ".exo" / "conflicts").rglob("both.md"))
    assert kept and "B's way" in kept[0].read_text()
    assert signer_b.key_id in Store.open(a.root).config.owner_keys
    assert book.for_ledger(a.config.store_id)
    # Syncing again changes nothing more and finds nothing new.
    again = sync_stores(a.root, b.root, signer=signer, live=(a.root, b.root), book=book)
    assert again.ledger.into_local.imported == 0
    assert again.copied == [] and again.conflicts == [c for c in again.conflicts]


def test_sync_prefix_is_not_a_fork(store: Store, ledger: Ledger, signer: Signer, tmp_path: Path) -> None:
    ledger.append("utterance", {"text": "one"})
    ledger.close()
    export_store(store.root, tmp_path / "x", ledger_hook=checkpoint_hook(signer))
    b_root = import_store(tmp_path / "x", tmp_path / "b")
    la = open_ledger(store.root, signer=signer)
    la.append("utterance", {"text": "two"})
    la.close()
    report = sync_stores(store.root, b_root, signer=signer, live=(store.root, b_root))
    assert not report.forked
    lb = Ledger.open(b_root / "ledger.sqlite")
    assert "two" in {e.body.get("text") for e in lb.entries()}
    lb.close()


def test_deletions_travel_and_never_beat_a_concurrent_edit(
    store: Store, ledger: Ledger, signer: Signer, tmp_path: Path
) -> None:
    for name in ("gone-a", "gone-b", "del-a-edit-b", "edit-a-del-b", "later"):
        store.write_node(_node(f"work/{name}", f"The {name} belief."))
    ledger.close()
    export_store(store.root, tmp_path / "export", ledger_hook=checkpoint_hook(signer))
    a, b = store, Store.open(import_store(tmp_path / "export", tmp_path / "b"))
    (a.root / "work" / "gone-a.md").unlink()
    (b.root / "work" / "gone-b.md").unlink()
    (a.root / "work" / "del-a-edit-b.md").unlink()
    b.write_node(_node("work/del-a-edit-b", "Refined on B while A deleted it."))
    a.write_node(_node("work/edit-a-del-b", "Refined on A while B deleted it."))
    (b.root / "work" / "edit-a-del-b.md").unlink()
    report = sync_stores(a.root, b.root, signer=signer, live=(a.root, b.root))
    for root in (a.root, b.root):  # a one-sided deletion is applied to the other copy
        assert not (root / "work" / "gone-a.md").exists() and not (root / "work" / "gone-b.md").exists()
    assert "work/gone-a.md deleted A -> B" in report.copied and "work/gone-b.md deleted B -> A" in report.copied
    # Edit against delete: reported, each copy keeps its own state, the edit is in both.
    assert sorted(c.split(":")[0] for c in report.conflicts) == ["work/del-a-edit-b.md", "work/edit-a-del-b.md"]
    assert any("deleted in A, changed in B" in c for c in report.conflicts)
    assert "Refined on B" in (b.root / "work" / "del-a-edit-b.md").read_text()
    assert not (a.root / "work" / "del-a-edit-b.md").exists()
    saved = list((a.root / ".exo" / "conflicts").rglob("del-a-edit-b.md"))
    assert len(saved) == 1 and "Refined on B" in saved[0].read_text()
    assert "Refined on A" in (a.root / "work" / "edit-a-del-b.md").read_text()
    assert any("Refined on A" in p.read_text() for p in (b.root / ".exo" / "conflicts").rglob("edit-a-del-b.md"))
    # Nothing reappears on the next sync; the unresolved conflicts are reported again.
    again = sync_stores(a.root, b.root, signer=signer, live=(a.root, b.root))
    assert again.copied == [] and len(again.conflicts) == 2
    assert not (a.root / "work" / "gone-a.md").exists() and not (b.root / "work" / "gone-a.md").exists()
    # After a sync the base is the synced state: a later deletion travels too, and resolving by
    # deleting in both copies ends the conflict.
    (b.root / "work" / "later.md").unlink()
    (b.root / "work" / "del-a-edit-b.md").unlink()
    third = sync_stores(a.root, b.root, signer=signer, live=(a.root, b.root))
    assert third.copied == ["work/later.md deleted B -> A"] and len(third.conflicts) == 1
    assert not (a.root / "work" / "later.md").exists()
    for root in (a.root, b.root):
        v = verify_store(root, live=True)
        assert v.ok, v.render()
