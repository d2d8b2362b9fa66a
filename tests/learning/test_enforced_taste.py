"""Enforced taste with a mechanical fix is applied to the reply as it streams (exo_core.learning.enforce).

Found by the real-model end-to-end test: the 0.5B kept writing "Always stay calm, Sam!" right after
the person's correction and rule, with the lesson in the pack. Through a real exod with a scripted
model here: the streamed deltas, the stored message and the draft the learner reads all lose the
exclamation marks once the lesson is enforced, code's ``!=`` stays, and a rejected lesson stops
being applied on the next turn.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from exo_core.client import ExoClient
from exo_core.learning.enforce import StreamFix
from exo_core.ledger import Ledger, load_signing_key
from exo_testkit import write_script
from exod_kit import exo, fresh_home

LOUD = "Great news!!! Sam's note is ready! Check that a != b."


def _whole(text: str, keys: frozenset[str]) -> str:
    fix = StreamFix(keys)
    return fix.feed(text) + fix.flush()


def test_sentence_ending_exclamations_become_one_period_and_code_is_left_alone() -> None:
    keys = frozenset({"exclamation"})
    assert _whole(LOUD, keys) == "Great news. Sam's note is ready. Check that a != b."
    assert _whole("Happy birthday, Sam!", keys) == "Happy birthday, Sam."
    assert _whole('She said "wow!" and left', keys) == 'She said "wow." and left'
    assert _whole("if (!ready) return", keys) == "if (!ready) return"
    assert _whole("No dash \u2014 here!", frozenset({"em_dash"})) == "No dash - here!"


@given(st.text(alphabet="ab !=\n.\u2014\"'", max_size=40), st.lists(st.integers(0, 40), max_size=6))
def test_the_fix_does_not_depend_on_how_the_reply_is_cut_into_pieces(text: str, cuts: list[int]) -> None:
    keys = frozenset({"exclamation", "em_dash"})
    points = sorted({0, len(text), *(c for c in cuts if c <= len(text))})
    fix = StreamFix(keys)
    streamed = "".join(fix.feed(text[a:b]) for a, b in zip(points, points[1:], strict=False)) + fix.flush()
    assert streamed == _whole(text, keys)


async def _turn(url: str, text: str) -> tuple[str, str]:
    """One turn in a fresh session: the streamed text and the stored reply."""
    async with ExoClient(url, client_name="test") as client:
        await client.hello()
        session = (await client.request("session.create", {"title": "taste"}))["session"]["id"]
        deltas: list[str] = []
        stored: list[str] = []
        turn = (await client.request("turn.send", {"session": session, "text": text}))["turn_id"]

        async def watch() -> None:
            async for event in client.events(session=session):
                if event.type == "message.delta":
                    deltas.append(event.body["text"])
                if event.type == "message.completed" and event.body.get("role") == "assistant":
                    stored.append(event.body["content"])
                if event.type == "turn.completed" and event.body.get("turn_id") == turn:
                    return

        await asyncio.wait_for(watch(), 30)
        return "".join(deltas), stored[-1]


def test_an_enforced_lesson_is_applied_to_streamed_replies_until_it_is_rejected(
    tmp_path: Path, exod_factory: Any
) -> None:
    home, ws = fresh_home(tmp_path)
    with Ledger.open_store(home / "store", signer=load_signing_key(home / "keys")) as ledger:
        ledger.append("rule", {"text": "From now on, never use exclamation marks.", "session": "s0"})
    assert exo(home, "learn", "review").returncode == 0
    assert "[[taste/exclamation]]" in (home / "store" / "pack.md").read_text()
    script = write_script(tmp_path / "s.json", [{"text": LOUD}] * 4)
    exod = exod_factory(home, script, ws)
    calm = "Great news. Sam's note is ready. Check that a != b."
    assert asyncio.run(_turn(exod.url, "Tell me about Sam's note.")) == (calm, calm)
    rejected = exo(home, "learn", "reject", "taste/exclamation", "--reason", "exclamation marks are fine")
    assert rejected.returncode == 0, rejected.stderr
    assert asyncio.run(_turn(exod.url, "And again?")) == (LOUD, LOUD)
    assert exod.stop() == 0
    with Ledger.open_store(home / "store") as ledger:
        drafts = [e.body["text"] for e in ledger.entries(kind="action") if e.body.get("tool") == "reply"]
    assert drafts == [calm, LOUD], "the learner reads the draft the person saw"
