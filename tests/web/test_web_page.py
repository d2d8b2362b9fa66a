"""The web page exod serves, in a real headless Chromium against a real exod over TCP.

One walk through flow 4: pair with a code, a streamed turn, an approval card
answered by a click (the core runs the tool), a taste row edited (the node file
in the store changes), the store browser, then exod restarts under the page and
the page resumes, having shown every event of the session exactly once.

Set ``EXO_WEB_SCREENSHOTS=<dir>`` to keep the screenshots (docs/web/ holds them).
"""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path

import pytest
from chromium_cdp import CHROMIUM, Chromium
from exo_testkit import write_script
from webkit import free_port, home_with_taste, pair_code

from exo_core.client import ExoClient
from exo_core.store.store import Store

pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (scripts/install_system.sh)")

SCRIPT = [
    {"text": "Hello from Exo, streamed a few letters at a time.", "delay": 0.03, "chunk": 3},
    {
        "text": "I will write the file.",
        "tool_calls": [{"name": "bash", "arguments": {"command": "echo approved > made.txt; rm -f old.txt"}}],
    },
    {"text": "Made it."},
    {
        "text": "Here is the fix.",
        "tool_calls": [
            {
                "name": "ui",
                "arguments": {
                    "kind": "diff",
                    "title": "README typo",
                    "data": {"path": "README.md", "diff": "@@ -1 +1 @@\n-teh cat\n+the cat"},
                },
            }
        ],
    },
    {"text": "Still here after the restart."},
]

# Records every distinct partial text of the streaming answer, to prove it streamed.
WATCH_STREAM = """
window.partials = [];
new MutationObserver(() => {
  const live = document.querySelector('.msg.streaming');
  if (live && window.partials[window.partials.length - 1] !== live.textContent) window.partials.push(live.textContent);
}).observe(document.getElementById('transcript'), {subtree: true, childList: true, characterData: true});
true
"""


def shots_dir(tmp_path: Path) -> Path:
    return Path(os.environ["EXO_WEB_SCREENSHOTS"]) if os.environ.get("EXO_WEB_SCREENSHOTS") else tmp_path / "shots"


async def test_the_page_pairs_streams_approves_edits_taste_and_survives_a_restart(
    exod_factory, exo_home: Path, workspace: Path, tmp_path: Path
) -> None:
    store_root = home_with_taste(exo_home)
    port = free_port()
    d = exod_factory(
        exo_home, write_script(tmp_path / "s.json", SCRIPT), workspace, extra=["--tcp", f"127.0.0.1:{port}"]
    )
    banner = d.log.read_text()
    assert f"listening on http://127.0.0.1:{port}" in banner and "enter the code" in banner
    base = f"http://127.0.0.1:{port}"
    shots = shots_dir(tmp_path)
    browser = await Chromium(tmp_path / "chromium").start()
    try:
        # Pairing: the page asks for a code; the token never appears in a URL or the page.
        await browser.navigate(base + "/")
        await browser.wait_for("!document.getElementById('pair').hidden")
        await browser.screenshot(shots / "pair.png")
        await browser.type("#pair-code", "WRNG-CODE")
        await browser.click("#pair-go")
        await browser.wait_for("document.getElementById('pair-error').textContent.includes('wrong')")
        await browser.type("#pair-code", pair_code(exo_home))
        await browser.click("#pair-go")
        await browser.wait_for("!document.getElementById('app').hidden && window.exo.session")
        assert await browser.eval("document.cookie") == "", "the session cookie is HttpOnly"
        token = (exo_home / "token").read_text().strip()
        assert token not in await browser.eval("document.documentElement.outerHTML + location.href")
        session = await browser.eval("window.exo.session")

        # A streamed turn.
        await browser.wait_for("document.getElementById('conn').textContent === 'live'")
        await browser.eval(WATCH_STREAM)
        await browser.type("#prompt", "hello?")
        await browser.press_enter()
        await browser.wait_for(
            "document.querySelector('#transcript').textContent.includes(%s)" % json.dumps(SCRIPT[0]["text"])
        )
        partials = await browser.eval("window.partials")
        assert len(partials) >= 3 and all(SCRIPT[0]["text"].startswith(p) for p in partials), partials
        await browser.wait_for("window.exo.running.size === 0")

        # An approval card, answered by a click; the core receives it and runs the tool.
        await browser.type("#prompt", "make the file please")
        await browser.click("#send")
        await browser.wait_for("!!document.querySelector('.card.approval button[data-decision=allow]')")
        await browser.screenshot(shots / "approval.png")
        await browser.click(".card.approval button[data-decision=allow]")
        await browser.wait_for("document.querySelector('.card.approval .resolution')?.textContent === 'allow'")
        await browser.wait_for("document.querySelector('#transcript').textContent.includes('Made it.')")
        assert (workspace / "made.txt").read_text() == "approved\n"

        # A taste row edited; the change is in the store's node file.
        await browser.click("#tab-taste")
        await browser.wait_for("document.querySelectorAll('#taste-rows tr').length === 2")
        row = "#taste-rows tr[data-id='taste/commit-style']"
        assert "work/commit-log" in await browser.eval(f'document.querySelector("{row}").textContent')
        await browser.type(f"{row} input.taste-text", "Commit messages are one short imperative line.")
        await browser.click(f"{row} button.save")
        await browser.wait_for("document.getElementById('taste-msg').textContent === 'edited taste/commit-style'")
        node = Store.open(store_root).read_node("taste/commit-style")
        assert node.summary == "Commit messages are one short imperative line."
        assert (
            "summary: Commit messages are one short imperative line."
            in (store_root / "taste/commit-style.md").read_text()
        )
        await browser.screenshot(shots / "taste.png")

        # The store browser: pack, nodes, links and evidence.
        await browser.click("#tab-store")
        await browser.wait_for("document.getElementById('store-pack').textContent.includes('Pack')")
        await browser.click("#store-nodes .nodelink[title='taste/commit-style']")
        await browser.wait_for(
            "document.getElementById('store-detail').textContent.includes('evidence-for → work/commit-log')"
        )
        await browser.click("#store-detail .nodelink")
        await browser.wait_for(
            "document.getElementById('store-detail').textContent.includes('linked from taste/commit-style')"
        )
        await browser.screenshot(shots / "store.png")
        await browser.click("#tab-chat")

        # exod restarts under the page; the page reconnects by itself and resumes.
        shown_before = await browser.eval("window.exo.log.length")
        d.stop()
        await browser.wait_for("document.getElementById('conn').textContent.startsWith('reconnecting')")
        d.start()
        await browser.wait_for("document.getElementById('conn').textContent === 'live'", timeout=30)
        await browser.type("#prompt", "show me the fix")
        await browser.press_enter()
        await browser.wait_for(
            "document.querySelector('#transcript').textContent.includes('Still here after the restart.')"
        )
        await browser.wait_for("window.exo.running.size === 0")
        # The model opened a diff panel (ui tool): the page draws it in full.
        assert await browser.eval("document.querySelector('.panel-diff h3').textContent") == "diff: README typo"
        assert await browser.eval("document.querySelector('.panel-diff .add').textContent") == "+the cat"
        assert await browser.eval("document.querySelector('.panel-diff .del').textContent") == "-teh cat"
        await browser.screenshot(shots / "chat.png")

        async with ExoClient(d.url) as client:
            for _ in range(100):  # a turn's last event is session.updated, right after turn.completed
                page = await client.request("events.subscribe", {"since": 0, "session": session, "limit": 10000})
                if page["events"][-1]["type"] == "session.updated":
                    break
                await asyncio.sleep(0.05)
        stored = [e["seq"] for e in page["events"]]
        await browser.wait_for(f"window.exo.log.length >= {len(stored)}")
        shown = await browser.eval("window.exo.log")
        assert shown == stored, "the page showed every event of its session exactly once, in order"
        assert len(shown) > shown_before
        assert await browser.eval("document.querySelectorAll('.msg.user').length") == 3
        assert await browser.eval("document.querySelectorAll('.card.approval').length") == 1
        assert not [line for line in browser.console if line.startswith("exception")], browser.console
    finally:
        await browser.close()
