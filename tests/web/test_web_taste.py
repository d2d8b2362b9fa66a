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
    exod_factory, exo_home: Path, workspace: Path, tmp_path: Path
) -> None:
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
    updates = [
        (e["session"], e["body"]["id"], e["body"]["change"]) for e in page["events"] if e["type"] == "taste.updated"
    ]
    assert updates == [(None, "taste/commit-style", "edited"), (None, "taste/greeting", "deleted")]
    d.stop()
    log = exo("ledger", "log", "--json", home=exo_home)
    assert log.returncode == 0, log.stderr
    entries = [json.loads(line) for line in log.stdout.splitlines()]
    kinds = [(e["kind"], e["body"].get("target")) for e in entries]
    assert ("rule", "taste/commit-style") in kinds and ("rejection", "taste/greeting") in kinds
    assert exo("ledger", "verify", home=exo_home).returncode == 0


async def test_without_a_store_taste_says_how_to_make_one(
    exod_factory, exo_home: Path, workspace: Path, tmp_path: Path
) -> None:
    d = exod_factory(exo_home, write_script(tmp_path / "s.json", []), workspace)
    async with ExoClient(d.url) as client:
        with pytest.raises(NotFoundError, match="exo init"):
            await client.request("taste.list", {})


async def test_learned_rows_carry_the_learners_weights_and_hand_written_rows_say_theirs_is_stated(
    exod_factory, exo_home: Path, workspace: Path, tmp_path: Path
) -> None:
    from exo_core.learning import Learner
    from exo_core.ledger import Ledger, load_signing_key

    store_root = home_with_taste(exo_home)
    with Ledger.open_store(store_root, signer=load_signing_key(exo_home / "keys")) as ledger:
        for session in ("earlier-1", "earlier-2"):  # the same correction twice: the learner promotes it
            draft = ledger.append(
                "action", {"tool": "reply", "outcome": "log", "session": session, "text": "Done \u2014 the tests pass."}
            )
            ledger.append(
                "verdict",
                {"verdict": "edit", "judged": draft.id, "session": session, "text": "Done. The tests pass."},
                refs=(draft.id,),
            )
        Learner(Store.open(store_root), ledger).review()
    d = exod_factory(exo_home, write_script(tmp_path / "s.json", []), workspace)
    async with ExoClient(d.url) as client:
        rows = {r["id"]: r for r in (await client.request("taste.list", {}))["rows"]}
    assert d.stop() == 0
    with Ledger.open_store(store_root) as ledger:
        learned = {r["id"]: r for r in Learner(Store.open(store_root), ledger).rows()}
    row, truth = rows["taste/em-dash"], learned["taste/em-dash"]
    assert row["weight_source"] == "learner" and row["weight"] == truth["weight"]
    assert row["evidence_count"] == len(truth["evidence"]) == 2
    assert row["weight"] != {"high": 0.9, "medium": 0.6, "low": 0.3}[row["confidence"]], "not the stand-in"
    assert (rows["taste/commit-style"]["weight_source"], rows["taste/commit-style"]["weight"]) == ("confidence", 0.9)
