"""The reviewer inside a real exod: corrections in the ledger, a turn completes, taste is promoted and shown."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from exo_core.client import ExoClient
from exo_core.ledger import Ledger, load_signing_key
from exo_testkit import write_script
from exod_kit import events_head, follow, fresh_home


def correct_in_two_sessions(home: Path) -> None:
    with Ledger.open_store(home / "store", signer=load_signing_key(home / "keys")) as ledger:
        for session in ("earlier-1", "earlier-2"):
            draft = ledger.append(
                "action", {"tool": "reply", "outcome": "log", "session": session, "text": "Done \u2014 the tests pass."}
            )
            ledger.append(
                "verdict",
                {"verdict": "edit", "judged": draft.id, "session": session, "text": "Done. The tests pass."},
                refs=(draft.id,),
            )


async def turn_and_watch(url: str, text: str, want: str | None, seen: list[Any]) -> None:
    async with ExoClient(url, client_name="test") as client:
        await client.hello()
        session = (await client.request("session.create", {"title": "learn"}))["session"]["id"]
        since = await events_head(client)
        await client.request("turn.send", {"session": session, "text": text})
        awaited = "turn.completed" if want is None else want
        await follow(client, since, lambda event, _seen: event.type == awaited, seen=seen)


def test_exod_reviews_after_a_turn_and_shows_learned_taste(tmp_path: Path, exod_factory: Any) -> None:
    home, ws = fresh_home(tmp_path)
    script = write_script(tmp_path / "script.json", [{"text": "Noted."}] * 4)
    exod = exod_factory(home, script, ws)
    correct_in_two_sessions(home)
    seen: list[Any] = []
    asyncio.run(turn_and_watch(exod.url, "Thanks, that was the fix.", "taste.updated", seen))
    updated = next(e for e in seen if e.type == "taste.updated")
    assert updated.body["id"] == "taste/em-dash" and updated.body["change"] == "promoted"
    assert updated.session is None, "taste is core-wide"
    assert "[[taste/em-dash]]" in (home / "store" / "pack.md").read_text()
    assert (home / "store" / "taste" / "em-dash.md").is_file()
    with Ledger.open_store(home / "store") as ledger:
        proposals = len(list(ledger.entries(kind="proposal")))
        assert ledger.verify().ok
    # A turn with nothing new to learn: the reviewer skips it and writes nothing.
    quiet: list[Any] = []
    asyncio.run(turn_and_watch(exod.url, "And the next thing?", None, quiet))
    assert exod.stop() == 0
    with Ledger.open_store(home / "store") as ledger:
        assert len(list(ledger.entries(kind="proposal"))) == proposals
    assert not [e for e in quiet if e.type == "taste.updated"]


async def edit_delete_then_turn(url: str) -> tuple[dict[str, Any], list[Any]]:
    async with ExoClient(url, client_name="test") as client:
        await client.hello()
        since = await events_head(client)
        listed = await client.request("taste.list", {})
        await client.request("taste.edit", {"id": "taste/em-dash", "text": "Use commas, never em dashes."})
        await client.request("taste.edit", {"id": "taste/em-dash", "delete": True})
        session = (await client.request("session.create", {"title": "after"}))["session"]["id"]
        await client.request("turn.send", {"session": session, "text": "ok"})

        def deleted_after_the_turn(event: Any, seen: list[Any]) -> bool:
            deleted = event.type == "taste.updated" and event.body.get("change") == "deleted"
            return deleted and any(e.type == "turn.completed" for e in seen)

        seen = await follow(client, since, deleted_after_the_turn)
        return listed, seen


def test_the_person_edits_and_deletes_learned_taste_over_the_protocol(tmp_path: Path, exod_factory: Any) -> None:
    """taste.list/taste.edit are the web's handlers over the taste nodes; the loop reads what they record."""
    home, ws = fresh_home(tmp_path)
    correct_in_two_sessions(home)
    with Ledger.open_store(home / "store", signer=load_signing_key(home / "keys")) as ledger:
        from exo_core.learning import Learner
        from exo_core.store import Store

        Learner(Store.open(home / "store"), ledger).review()
    exod = exod_factory(home, write_script(tmp_path / "s.json", [{"text": "ok"}] * 3), ws)
    listed, seen = asyncio.run(edit_delete_then_turn(exod.url))
    assert any(r["id"] == "taste/em-dash" for r in listed["rows"]), "the promoted lesson is a plain taste node"
    assert "[[taste/em-dash]]" not in (home / "store" / "pack.md").read_text(), "it left the pack"
    assert exod.stop() == 0
    with Ledger.open_store(home / "store") as ledger:
        from exo_core.learning import LessonBook

        book = LessonBook()
        for entry in ledger.entries():
            book.apply(entry)
    lesson = book.lessons["taste/em-dash"]
    assert lesson.claim == "Use commas, never em dashes.", "the person's edit is the lesson's wording"
    assert lesson.rejected_at >= 0 and not lesson.promoted_by and lesson.weight(book.last_ts) == 0.0


async def deny_pushes_then_answer(url: str, home: Path) -> list[Any]:
    async with ExoClient(url, client_name="device") as client:
        await client.hello()
        since = await events_head(client)
        session = (await client.request("session.create", {"title": "push"}))["session"]["id"]
        await client.request("turn.send", {"session": session, "text": "ok"})

        async def answer_yes(event: Any) -> None:
            if event.type == "question.asked":
                assert event.body["options"] == ["Yes", "No"]
                await client.request("question.answer", {"question_id": event.body["question_id"], "option": 1})

        def rule_updated(event: Any, _seen: list[Any]) -> bool:
            return event.type == "taste.updated" and event.body["id"] == "rules/ask-before-push"

        return await follow(client, since, rule_updated, on_event=answer_yes)


def test_a_guarded_lesson_is_asked_and_the_button_answer_promotes_it(tmp_path: Path, exod_factory: Any) -> None:
    home, ws = fresh_home(tmp_path)
    with Ledger.open_store(home / "store", signer=load_signing_key(home / "keys")) as ledger:
        for session in ("p1", "p2", "p3"):
            approval = ledger.append(
                "approval",
                {
                    "session": session,
                    "tool": "bash",
                    "decision": "deny",
                    "summary": "git push origin main",
                    "request_id": session,
                },
            )
            ledger.append(
                "action",
                {
                    "session": session,
                    "tool": "bash",
                    "outcome": "ask",
                    "decision": "deny",
                    "arguments": {"command": "git push origin main"},
                },
                refs=(approval.id,),
            )
    exod = exod_factory(home, write_script(tmp_path / "s.json", [{"text": "ok"}] * 3), ws)
    seen = asyncio.run(deny_pushes_then_answer(exod.url, home))
    kinds = [e.type for e in seen]
    assert kinds.index("question.asked") < kinds.index("question.answered") < kinds.index("taste.updated")
    assert exod.stop() == 0
    with Ledger.open_store(home / "store") as ledger:
        promotion = next(e for e in ledger.entries(kind="promotion") if e.body["target"] == "rules/ask-before-push")
        answer = next(e for e in ledger.entries(kind="utterance") if "answer_to" in e.body)
    assert promotion.body["by"] == "person" and answer.id in promotion.refs
    assert (home / "store" / "rules" / "ask-before-push.md").is_file()
