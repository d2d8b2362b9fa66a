"""Issue 22 item 2: facts the person states in chat become store beliefs, through a real exod and `exo`."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from exo_core.client import ExoClient
from exo_core.ledger import Ledger
from exo_core.learning.facts import MAX_FACT_CHARS, FactTooLongError, detect, domain_of
from exo_core.store import Store
from exo_core.store.node import Node
from exo_testkit import write_script
from exod_kit import exo, fresh_home, store_lint, take_turn

SECRET = "hunter2-blue-kite"


def belief(node_id: str, summary: str) -> Node:
    return Node(
        id=node_id,
        title=node_id.split("/")[1].title(),
        type="fact",
        domain=node_id.split("/")[0],
        summary=summary,
        load_when="",
        confidence="high",
        stability="durable",
        valid_from="2026-01-10",
        sources=("onboarding interview",),
        body=f"\n{summary}\n",
    )


async def say(url: str, texts: list[str], answers: dict[str, int] | None = None) -> list[dict[str, Any]]:
    """One session; each text a turn. Returns, per turn, the reply, the error and the questions asked."""
    out = []
    async with ExoClient(url, client_name="test") as client:
        await client.hello()
        session = (await client.request("session.create", {"title": "facts"}))["session"]["id"]
        for text in texts:
            turn: dict[str, Any] = {"reply": None, "error": None, "asked": []}

            async def note(event: Any, turn: dict[str, Any] = turn, text: str = text) -> None:
                if event.type == "question.asked":
                    turn["asked"].append(event.body["text"])
                    option = (answers or {}).get(text, 2)
                    await client.request(
                        "question.answer", {"question_id": event.body["question_id"], "option": option}
                    )
                if event.type == "message.completed" and event.body["role"] == "assistant":
                    turn["reply"] = event.body["content"]
                if event.type == "turn.completed":
                    turn["error"] = event.body.get("error")

            await take_turn(client, session, text, on_event=note)
            out.append(turn)
    return out


def recall(home: Path, query: str) -> list[str]:
    found = exo(home, "recall", query, "--no-embed", "--json")
    assert found.returncode == 0, found.stderr
    return [block["id"] for block in json.loads(found.stdout)["blocks"]]


def curated_text(store: Path) -> str:
    return "\n".join(p.read_text(encoding="utf-8") for p in store.rglob("*.md"))


def test_five_stated_facts_are_stored_replace_old_beliefs_and_are_recalled_next_session(
    tmp_path: Path, exod_factory: Any
) -> None:
    home, ws = fresh_home(tmp_path)
    store = Store.open(home / "store")
    store.write_node(belief("people/sister", "Your sister lives in Lisbon."))
    store.ensure_domain("health")
    store.write_node(belief("health/dentist", "Your dentist is on Tuesday."))
    exod = exod_factory(home, write_script(tmp_path / "s.json", [{"text": "You're welcome."}] * 20), ws)
    turns = asyncio.run(
        say(
            exod.url,
            [
                "Remember that my sister moved to Porto.",
                "My dentist is now on Friday.",
                "Remember that my brother's name is Tomas.",
                "Remember that my gym is on Rua Augusta.",
                "Remember that my favourite tea is sencha.",
                "Thanks!",
            ],
        )
    )
    assert exod.stop() == 0
    replies = [t["reply"] for t in turns]
    assert replies[0] == "Saved: your sister lives in Porto \u2014 replaces Lisbon."
    assert replies[1] == "Saved: your dentist is on Friday \u2014 replaces Tuesday."
    assert replies[2] == "Saved: your brother's name is Tomas."
    assert replies[5] == "You're welcome.", "a message that states no fact goes to the model"
    assert not any(t["asked"] for t in turns), "nothing here is guarded or private"

    # History kept: the old beliefs are retired, the new ones supersede them.
    sister, old_sister = store.read_node("people/sister-2"), store.read_node("people/sister")
    assert old_sister.valid_until is not None and old_sister.summary == "Your sister lives in Lisbon."
    assert ("supersedes", "people/sister") in [(ln.type, ln.target) for ln in sister.links]
    assert "> Remember that my sister moved to Porto." in sister.body, "the person's words are the evidence"
    assert store.read_node("health/dentist").valid_until is not None
    assert store.read_node("health/dentist-2").summary == "Your dentist is on Friday."

    # A new session: exod's retrieval finds each fact.
    for query, node_id in (
        ("where does my sister live", "people/sister-2"),
        ("when is my dentist", "health/dentist-2"),
        ("what is my brother's name", "people/brother-name"),
        ("where is my gym", "self/gym"),
        ("which tea do I like", "self/favourite-tea"),
    ):
        assert node_id in recall(home, query), query
    lint = store_lint(home)
    assert lint.returncode == 0 and "0 error(s), 0 warning(s)" in lint.stdout, lint.stdout


def test_a_huge_remember_and_a_secret_are_handled_without_half_writes(tmp_path: Path, exod_factory: Any) -> None:
    home, ws = fresh_home(tmp_path)
    before = sorted(p.name for p in (home / "store").rglob("*.md"))
    exod = exod_factory(home, write_script(tmp_path / "s.json", []), ws)
    password = f"Remember that my wifi password is {SECRET}."
    huge = "Remember that " + "my notes go on and on " * 2400
    assert len(huge) > 50_000
    turns = asyncio.run(say(exod.url, [huge, password], answers={password: 2}))
    assert turns[0]["error"] is not None and turns[0]["error"].startswith("fact_too_long:")
    assert turns[1]["asked"] and "private" in turns[1]["asked"][0] and turns[1]["reply"] == "Not saved."
    assert SECRET not in turns[1]["asked"][0], "the question goes to every client: no secret in it"
    assert sorted(p.name for p in (home / "store").rglob("*.md")) == before, "nothing written"
    # Asked again, and allowed: a private node, the secret masked in every curated file and out of the pack.
    allowed = asyncio.run(say(exod.url, [password], answers={password: 1}))
    assert exod.stop() == 0
    assert allowed[0]["reply"] == "Saved: a private note (kept out of the pack).", allowed
    node = Store.open(home / "store").read_node("self/wifi-password")
    assert node.private and SECRET not in curated_text(home / "store")
    with Ledger.open_store(home / "store") as ledger:
        assert ledger.verify().ok
    lint = store_lint(home)
    assert lint.returncode == 0 and "0 error(s)" in lint.stdout, lint.stdout


def test_the_rules_read_what_they_document() -> None:
    assert detect("What is my dentist?") is None
    assert detect("my boss is annoying") is None, "'my S is V' counts only after 'remember'"
    fact = detect("my sister has moved to Porto")
    assert fact is not None and (fact.key, fact.claim, domain_of(fact)) == (
        "sister",
        "your sister lives in Porto",
        "people",
    )
    with pytest.raises(FactTooLongError, match=str(MAX_FACT_CHARS)):
        detect("Remember: " + "x" * (MAX_FACT_CHARS + 1))


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=300))
def test_detect_never_fails_on_any_text(text: str) -> None:
    fact = detect(text)
    if fact is not None:
        assert fact.key and fact.claim


class Buttons:
    """The question broker's seam: answers each question with the next option, and keeps what was asked."""

    def __init__(self, *options: int) -> None:
        self.options = list(options)
        self.asked: list[str] = []

    async def ask(self, session_id: str, text: str, options: list[str] | tuple[str, ...] = ()) -> Any:
        from exo_core.agent.questions import Answer

        self.asked.append(text)
        return Answer(option=self.options.pop(0), text=None)


async def test_a_guarded_fact_is_asked_first_and_nobody_to_ask_writes_nothing(tmp_path: Path) -> None:
    from exo_core.learning.facts import StatedFacts

    assert exo(tmp_path / "home", "init").returncode == 0
    store = Store.open(tmp_path / "home" / "store")
    said = "Remember that my standing rule is now to ask before paying."
    assert await StatedFacts(store).take("ses_1", said) == "Not saved.", "no broker: never unasked"
    buttons = Buttons(2, 1)
    assert await StatedFacts(store, buttons).take("ses_1", said) == "Not saved."
    assert [n.id for n in store.nodes() if n.id.startswith("rules/standing")] == []
    saved = await StatedFacts(store, buttons).take("ses_1", said)
    assert saved == "Saved: your standing rule is to ask before paying." and len(buttons.asked) == 2
    assert "rules" in buttons.asked[0] and store.read_node("rules/standing-rule").type == "fact"
