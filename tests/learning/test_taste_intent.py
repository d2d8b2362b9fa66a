"""Issue 22 item 3: taste edits and rejections keep the person's intent, through a real exod and `exo`."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from exo_core.client import ExoClient
from exo_core.errors import NotFoundError
from exo_core.ledger import Ledger
from exo_core.store import Store
from exo_core.store.onboard import _node as onboarding_node
from exo_testkit import write_script
from exod_kit import events_head, exo, follow, fresh_home, store_lint

NEW_TONE = "Plain and direct, and no exclamation marks at all."


def ledger_size(home: Path) -> int:
    with Ledger.open_store(home / "store") as ledger:
        return len(list(ledger.entries()))


def lint_clean(home: Path) -> str:
    out = store_lint(home)
    assert out.returncode == 0, out.stdout + out.stderr
    return out.stdout


async def edit_tone_then_turn(url: str) -> tuple[int, list[Any]]:
    async with ExoClient(url, client_name="test") as client:
        await client.hello()
        since = await events_head(client)
        await client.request("taste.edit", {"id": "taste/tone", "text": NEW_TONE})
        head = await events_head(client)
        with pytest.raises(NotFoundError, match="taste/nowhere"):
            await client.request("taste.edit", {"id": "taste/nowhere", "text": "Shorter."})
        session = (await client.request("session.create", {"title": "tone"}))["session"]["id"]
        await client.request("turn.send", {"session": session, "text": "ok"})

        def promoted(event: Any, _seen: list[Any]) -> bool:
            return event.type == "taste.updated" and event.body.get("change") == "promoted"

        return head, await follow(client, since, promoted)


def test_an_edited_tone_row_is_learned_linted_clean_and_comes_back_when_the_lesson_is_rejected(
    tmp_path: Path, exod_factory: Any
) -> None:
    home, ws = fresh_home(tmp_path)
    store = Store.open(home / "store")
    store.write_node(
        onboarding_node("taste/tone", "preference", "Tone", "Preferred tone: Formal.", "reply | draft", "2026-11-01")
    )
    exod = exod_factory(home, write_script(tmp_path / "s.json", [{"text": "ok"}] * 3), ws)
    before_missing = ledger_size(home)
    asyncio.run(edit_tone_then_turn(exod.url))
    assert exod.stop() == 0

    tone = store.read_node("taste/tone")
    assert NEW_TONE in tone.body and "Formal" not in tone.body, "the body says what the summary says"
    learned = store.read_node("taste/tone-learned")
    assert learned.summary.startswith(NEW_TONE) and learned.valid_until is None
    assert f"- {NEW_TONE} [[taste/tone-learned]]" in store.pack_text()
    assert "0 error(s), 0 warning(s)" in lint_clean(home), "the learner's pack line trips no [pack-copy]"
    # taste.edit of a missing row: not_found, and the ledger got exactly the one edit's rule (+ review entries).
    with Ledger.open_store(home / "store") as ledger:
        targets = [e.body.get("target") for e in ledger.entries() if e.n > before_missing]
    assert "taste/nowhere" not in targets

    # A rejection of something that does not exist: typed, named, nothing appended.
    size = ledger_size(home)
    bad = exo(home, "learn", "reject", "taste/nonexistent")
    assert bad.returncode == 2 and "[not_found]" in bad.stderr and "taste/nonexistent" in bad.stderr
    assert ledger_size(home) == size

    # Rejecting the learned lesson brings back the belief it superseded: the tone row stays.
    ok = exo(home, "learn", "reject", "taste/tone-learned", "--reason", "not like that")
    assert ok.returncode == 0, ok.stderr
    assert ledger_size(home) == size + 1
    assert store.read_node("taste/tone-learned").valid_until is not None
    restored = store.read_node("taste/tone")
    assert restored.valid_until is None and restored.summary == NEW_TONE
    assert "[[taste/tone-learned]]" not in store.pack_text()
    assert "0 error(s), 0 warning(s)" in lint_clean(home)
    rebuilt = exo(home, "learn", "rebuild")
    assert rebuilt.returncode == 0, rebuilt.stderr
    assert store.read_node("taste/tone").valid_until is None, "a rebuild from the ledger agrees"
