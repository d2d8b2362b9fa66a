"""Views rebuild from an empty state across every segment, byte-identically."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from exo_core.errors import ConflictError, NotFoundError
from exo_core.ledger import DEFAULT_VIEWS, Ledger, Signer, ViewRegistry, rebuild_views, sync_ledgers, views_dir
from exo_core.ledger.entry import StoredEntry

MakeLedger = Callable[..., Ledger]


def _forked_store(make_ledger: MakeLedger, filler: Callable[[Ledger, int], list[str]], tmp_path: Path) -> Ledger:
    ledger = make_ledger()
    filler(ledger, 30)
    shutil.copyfile(ledger.path, tmp_path / "other.sqlite")
    with Ledger.open(tmp_path / "other.sqlite", signer=Signer.generate()) as other:
        filler(other, 7)
        filler(ledger, 4)
        sync_ledgers(ledger, other)
    assert len(ledger.segments()) == 2
    return ledger


def test_rebuild_is_byte_identical_after_deleting_views(
    make_ledger: MakeLedger,
    filler: Callable[[Ledger, int], list[str]],
    tmp_path: Path,
) -> None:
    ledger = _forked_store(make_ledger, filler, tmp_path)
    out = views_dir(tmp_path)
    first = {name: path.read_bytes() for name, path in rebuild_views(ledger, out).items()}
    assert set(first) == {"kind_summary", "ref_index"}
    shutil.rmtree(tmp_path / "indexes")
    second = {name: path.read_bytes() for name, path in rebuild_views(ledger, out).items()}
    assert first == second
    # the fork segment's entries are counted: a rebuild that read only main would miss them
    main, fork = ledger.segments()
    assert fork.count > 0
    assert f'"segments":{{"0":{main.count},"1":{fork.count}}}'.encode() in first["kind_summary"]


def test_rebuild_never_starts_from_the_current_view(
    make_ledger: MakeLedger,
    filler: Callable[[Ledger, int], list[str]],
    tmp_path: Path,
) -> None:
    ledger = make_ledger()
    filler(ledger, 12)
    out = views_dir(tmp_path)
    clean = rebuild_views(ledger, out)["kind_summary"].read_bytes()
    (out / "kind_summary.json").write_bytes(b'{"entries":999,"asserted":"by hand"}')
    assert rebuild_views(ledger, out)["kind_summary"].read_bytes() == clean


def test_ref_index_collects_verdicts(make_ledger: MakeLedger, tmp_path: Path) -> None:
    ledger = make_ledger()
    draft = ledger.append("utterance", {"text": "draft"})
    verdict = ledger.append("verdict", {"verdict": "should_have_been", "judged": draft.id}, refs=[draft.id])
    data = rebuild_views(ledger, tmp_path / "v", only=["ref_index"])["ref_index"].read_bytes()
    assert f'"verdicts":{{"{draft.id}":[{{"id":"{verdict.id}","verdict":"should_have_been"}}]}}'.encode() in data


class _Count:
    name = "count"

    def fresh(self) -> list[int]:
        return [0]

    def apply(self, state: list[int], entry: StoredEntry) -> None:
        state[0] += 1

    def render(self, state: Any) -> bytes:
        return f"{state[0]}\n".encode()


def test_registry(make_ledger: MakeLedger, tmp_path: Path) -> None:
    registry = ViewRegistry([_Count()])
    with pytest.raises(ConflictError):
        registry.register(_Count())
    with pytest.raises(NotFoundError):
        DEFAULT_VIEWS.select(["nope"])
    ledger = make_ledger()
    ledger.append("utterance", {"text": "x"})
    assert rebuild_views(ledger, tmp_path / "v", registry=registry)["count"].read_bytes() == b"1\n"
