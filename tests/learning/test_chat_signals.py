"""Issue 22 item 1: person messages after a draft become verdicts and rules, through a real exod and `exo`."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from exo_core.client import ExoClient
from exo_core.ledger import Ledger
from exo_testkit import write_script
from exod_kit import events_head, exo, follow, fresh_home, take_turn

DRAFT = "Great news!!! The note for Sam is ready!"
CORRECTION = "No, that's wrong: no exclamation marks, keep it calm."
RULE = "From now on, never use exclamation marks."


async def chat(url: str, texts: list[str], *, until_promoted: bool = False) -> None:
    """The turns, one after another; with ``until_promoted``, then wait for the reviewer's promotion.

    The reviewer runs after each turn in the background and the next turn cancels it, so the last review
    may still be running when the turns end; exod stopping then would cut it short (seen on a loaded CI
    machine). Waiting for its ``taste.updated`` (replayed from before the first turn) makes the test
    about what is learned, not about how fast."""
    async with ExoClient(url, client_name="test") as client:
        await client.hello()
        since = await events_head(client)
        session = (await client.request("session.create", {"title": "signals"}))["session"]["id"]
        for text in texts:
            await take_turn(client, session, text)
        if until_promoted:
            await follow(
                client,
                since,
                lambda event, _seen: event.type == "taste.updated" and event.body.get("change") == "promoted",
                timeout=120.0,
            )


def test_a_correction_becomes_a_verdict_on_the_draft_and_a_rule_a_stated_rule(
    tmp_path: Path, exod_factory: Any
) -> None:
    home, ws = fresh_home(tmp_path)
    script = write_script(tmp_path / "s.json", [{"text": DRAFT}] + [{"text": "Understood."}] * 20)
    exod = exod_factory(home, script, ws)
    asyncio.run(
        chat(
            exod.url, ["Write a note to Sam about the move.", CORRECTION, RULE, "What time is it?"], until_promoted=True
        )
    )
    assert exod.stop() == 0
    with Ledger.open_store(home / "store") as ledger:
        entries = list(ledger.entries())
        assert ledger.verify().ok
    drafts = {e.id: e for e in entries if e.kind == "action" and e.body.get("tool") == "reply"}
    verdicts = [e for e in entries if e.kind == "verdict"]
    rules = [e for e in entries if e.kind == "rule"]
    assert len(verdicts) == 1, "one correction, one verdict; the question after a draft is no verdict"
    judged = drafts[verdicts[0].body["judged"]]
    assert judged.body["text"] == DRAFT and verdicts[0].refs == (judged.id,)
    assert verdicts[0].body["reason"] == CORRECTION and verdicts[0].body["verdict"] == "reject"
    assert 0.0 < verdicts[0].body["probability"] <= 1.0
    assert [r.body["text"] for r in rules] == [RULE]
    metrics = json.loads(exo(home, "learn", "metrics", "--json").stdout)
    assert metrics["windows"][0]["verdicts"] == {"reject": 1}
    # The reviewer inside exod read both as it reads the web editor's edits: the rule promoted the lesson.
    promotions = [e for e in entries if e.kind == "promotion"]
    assert [(p.body["target"], p.body["by"]) for p in promotions] == [("taste/exclamation", "person")]
    proposals = [e for e in entries if e.kind == "proposal"]
    assert any(verdicts[0].id in p.refs for p in proposals), "the correction is cited as evidence"
    assert "[[taste/exclamation]]" in (home / "store" / "pack.md").read_text()
    review = exo(home, "learn", "review", "--json")
    assert review.returncode == 0 and json.loads(review.stdout)["proposals"] == 0, "nothing left unread"


def test_a_stated_fact_is_no_rule_and_a_rule_with_a_secret_is_not_recorded(tmp_path: Path, exod_factory: Any) -> None:
    """The CI failure of session 4: "Remember that my wifi password is ..." became a stated rule and reached the pack.

    The facts seam owns a stated fact; "remember" over an instruction or a preference stays a rule;
    a rule that carries a secret shape is never recorded (its words would become a pack line).
    """
    home, ws = fresh_home(tmp_path)
    script = write_script(tmp_path / "s.json", [{"text": "Understood."}] * 20)
    exod = exod_factory(home, script, ws)
    token = "ghp_" + "A1b2C3d4" * 5
    fact = "Remember that my sister moved to Porto."
    preference = "Remember that I prefer short replies."
    leaky = f"From now on, always sign my pull requests with {token}."
    asyncio.run(chat(exod.url, [fact, "No, that's wrong.", preference, leaky]))
    assert exod.stop() == 0
    with Ledger.open_store(home / "store") as ledger:
        entries = list(ledger.entries())
    rules = [e.body["text"] for e in entries if e.kind == "rule"]
    assert rules == [preference], rules
    # The store's "Saved: ..." confirmation is no draft, so the "no" after it is no verdict on taste.
    replies = [e.body["text"] for e in entries if e.kind == "action" and e.body.get("tool") == "reply"]
    assert not [r for r in replies if r.startswith("Saved:")], replies
    assert not [e for e in entries if e.kind == "verdict"]
    assert token not in json.dumps([e.body for e in entries if e.kind != "utterance"])
    assert token not in (home / "store" / "pack.md").read_text()
    assert "Porto" in (home / "store" / "people" / "sister.md").read_text()
