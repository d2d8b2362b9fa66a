"""taste.list / taste.edit over the store's taste nodes, through a real exod with a real store and ledger."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from exo_testkit import write_script
from webkit import exo, home_with_taste

from exo_core.client import ExoClient
from exo_core.errors import BadBodyError, NotFoundError
from exo_core.store.store import Store


async def test_rows_edit_and_delete_reach_the_store_the_ledger_and_the_stream(
        exod_factory, exo_home: Path, workspace: Path, tmp_path: Path) -> None:
    store_root = home_with_taste(exo_home)
    d = exod_factory(exo_home, write_script(tmp_path / "s.json", []), workspace)
    async with ExoClient(d.url) as client:
        start = (await client.hello())["last_seq"]
        rows = (await client.request("taste.list", {}))["rows"]
        assert [(r["id"], r["weight"]) for r in rows] == [("taste/commit-style", 0.9), ("taste/greeting", 0.3)]
        assert rows[0]["evidence"] == ["ses_demo#12", "work/commit-log"]
        edited = await client.request("taste.edit", {"id": "taste/commit-style", "text": "  One short line.  "})
        assert edited["change"] == "edited" and edited["row"]["text"] == "One short line."
        assert Store.open(store_root).read_node("taste/commit-style").summary == "One short line."
        await client.request("taste.edit", {"id": "taste/greeting", "delete": True})
        assert [r["id"] for r in (await client.request("taste.list", {}))["rows"]] == ["taste/commit-style"]
        retired = Store.open(store_root).read_node("taste/greeting")
        assert retired.valid_until is not None, "deleted rows are retired, the file stays as history"
        with pytest.raises(BadBodyError):
            await client.request("taste.edit", {"id": "taste/commit-style", "text": "   "})
        with pytest.raises(NotFoundError):
            await client.request("taste.edit", {"id": "taste/nothing", "text": "x"})
        page = await client.request("events.subscribe", {"since": start})
    updates = [(e["session"], e["body"]["id"], e["body"]["change"]) for e in page["events"] if e["type"] == "taste.updated"]
    assert updates == [(None, "taste/commit-style", "edited"), (None, "taste/greeting", "deleted")]
    d.stop()
    log = exo("ledger", "log", "--json", home=exo_home)
    assert log.returncode == 0, log.stderr
    entries = [json.loads(line) for line in log.stdout.splitlines()]
    kinds = [(e["kind"], e["body"].get("target")) for e in entries]
    assert ("rule", "taste/commit-style") in kinds and ("rejection", "taste/greeting") in kinds
    assert exo("ledger", "verify", home=exo_home).returncode == 0


async def test_without_a_store_taste_says_how_to_make_one(exod_factory, exo_home: Path, workspace: Path,
                                                           tmp_path: Path) -> None:
    d = exod_factory(exo_home, write_script(tmp_path / "s.json", []), workspace)
    async with ExoClient(d.url) as client:
        with pytest.raises(NotFoundError, match="exo init"):
            await client.request("taste.list", {})
