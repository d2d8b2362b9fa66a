"""Thirty edit requests through a real exod: no line lost that a request did not name, undo byte for byte.

Each request works on its own real file in the workspace. The scripted model (the production model seam)
plays a careless small model for some of them: asked to append or replace one line, it rewrites the whole
file with ``write_file`` and drops lines. The kinds: append (with ``append_file``, and as a lossy rewrite),
insert a line, replace a named line, rename a named heading, and a replace done as a lossy rewrite.
The person denies every approval. Then:

* no file lost a line its request did not name;
* every change that would have removed an unnamed line was asked first, its card carrying a diff with
  that line as a removal; changes that remove nothing, or only what the request named, were not asked;
* ``session.undo`` of all thirty turns returns every file to its first bytes.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from exo_testkit import write_script

from exo_core.client import ExoClient

START = "# Plan\n## Ideas\n- buy milk\n- walk the dog\n- call mum\n"


def _requests() -> list[tuple[str, str, dict[str, Any], bool]]:
    """(file, request, the model's call, whether the call drops a line the request does not name)."""
    cases: list[tuple[str, str, dict[str, Any], bool]] = []
    for n in range(8):
        name = f"append{n}.md"
        cases.append(
            (
                name,
                f"Append the line '- pay rent {n}' to {name}",
                {"name": "append_file", "arguments": {"path": name, "content": f"- pay rent {n}"}},
                False,
            )
        )
    for n in range(6):
        name = f"lossy{n}.md"
        cases.append(
            (
                name,
                f"Add '- pay rent {n}' to {name}",
                {"name": "write_file", "arguments": {"path": name, "content": f"# Plan\n- pay rent {n}\n"}},
                True,
            )
        )
    for n in range(4):
        name = f"insert{n}.md"
        cases.append(
            (
                name,
                f"Insert '- buy eggs' after '- buy milk' in {name}",
                {
                    "name": "edit_file",
                    "arguments": {"path": name, "old": "- buy milk", "new": "- buy milk\n- buy eggs"},
                },
                False,
            )
        )
    for n in range(4):
        name = f"replace{n}.md"
        cases.append(
            (
                name,
                f"Replace the line 'buy milk' with 'buy oat milk' in {name}",
                {"name": "edit_file", "arguments": {"path": name, "old": "- buy milk", "new": "- buy oat milk"}},
                False,
            )
        )
    for n in range(4):
        name = f"heading{n}.md"
        cases.append(
            (
                name,
                f"Rename the heading Ideas to Plans in {name}",
                {"name": "edit_file", "arguments": {"path": name, "old": "## Ideas", "new": "## Plans"}},
                False,
            )
        )
    for n in range(4):
        name = f"badreplace{n}.md"
        rewritten = "# Plan\n## Ideas\n- buy oat milk\n"
        cases.append(
            (
                name,
                f"Replace 'buy milk' with 'buy oat milk' in {name}",
                {"name": "write_file", "arguments": {"path": name, "content": rewritten}},
                True,
            )
        )
    return cases


def _named(line: str, request: str) -> bool:
    words = line.lstrip("#-* ").strip().lower()
    return bool(words) and words in request.lower()


async def test_thirty_edits_lose_no_unnamed_line_ask_every_removal_and_undo_restores(
    tmp_path: Path, exod_factory: Any, exo_home: Path, workspace: Path
) -> None:
    cases = _requests()
    assert len(cases) == 30
    replies: list[dict[str, Any]] = []
    for _name, _request, call, _lossy in cases:
        replies += [{"text": "", "tool_calls": [call]}, {"text": "OK."}]
    for name, *_rest in cases:
        (workspace / name).write_text(START, encoding="utf-8")
    # The whole session verbatim: the scripted model picks its reply by the assistant messages it is sent.
    (exo_home / "config.toml").write_text("[context]\ntail = 200\nleaf_size = 200\n", encoding="utf-8")
    exod = exod_factory(exo_home, write_script(tmp_path / "script.json", replies), workspace)
    asked_lossy = asked_other = 0
    async with ExoClient(exod.url) as client:
        await client.hello()
        session = (await client.request("session.create", {"title": "thirty edits"}))["session"]["id"]
        for name, request, call, lossy in cases:
            turn = (await client.request("turn.send", {"session": session, "text": request}))["turn_id"]
            cards: list[dict[str, Any]] = []

            async def follow() -> None:
                async for event in client.events(session=session):
                    if event.type == "approval.requested":
                        cards.append(dict(event.body))
                        await client.request(
                            "approval.respond", {"request_id": event.body["request_id"], "decision": "deny"}
                        )
                    if event.type == "turn.completed" and event.body.get("turn_id") == turn:
                        return

            await asyncio.wait_for(follow(), 60)
            after = (workspace / name).read_text(encoding="utf-8").splitlines()
            lost = [line for line in START.splitlines() if line not in after and not _named(line, request)]
            assert lost == [], f"{request!r} lost {lost}"
            if lossy:
                asked_lossy += 1
                assert len(cards) == 1 and cards[0]["diff"].count("\n-") >= 1, request
                assert any(
                    f"-{line}" in cards[0]["diff"] for line in START.splitlines() if line not in _call_lines(call)
                )
            else:
                asked_other += len(cards)
        assert asked_lossy == 10 and asked_other == 0

        for _ in range(200):
            if not (await client.request("session.get", {"session": session}))["running"]:
                break
            await asyncio.sleep(0.05)
        undone = await client.request("session.undo", {"session": session, "turns": 30})
        assert len(undone["undone_turns"]) == 30 and undone["not_restored"] == []
    for name, *_rest in cases:
        assert (workspace / name).read_bytes() == START.encode("utf-8"), name


def _call_lines(call: dict[str, Any]) -> list[str]:
    return str(call["arguments"].get("content", "")).splitlines()
