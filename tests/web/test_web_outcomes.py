"""The web page says what happened, in a real headless Chromium against a real exod over TCP: an empty
answer and a failed turn are explained with what to do, and a message typed while exod is down waits
with a visible mark and is sent exactly once when the page is live again."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from chromium_cdp import CHROMIUM, Chromium
from exo_testkit import write_script
from webkit import free_port, pair_code

pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (scripts/install_system.sh)")

SCRIPT = [
    {"text": ""},
    {"text": "Got it while you were away."},
    {"error": "fatal", "times": 1, "then": {"text": "unused"}},
]
TRANSCRIPT = "document.querySelector('#transcript').textContent"


def _user_messages(home: Path, text: str) -> int:
    db = sqlite3.connect(home / "sessions.sqlite")
    try:
        return db.execute("SELECT count(*) FROM messages WHERE role = 'user' AND content = ?", (text,)).fetchone()[0]
    finally:
        db.close()


async def test_empty_failed_and_offline_on_the_web_page(exod_factory, exo_home: Path, workspace: Path, tmp_path: Path):
    port = free_port()
    d = exod_factory(
        exo_home, write_script(tmp_path / "s.json", SCRIPT), workspace, extra=["--tcp", f"127.0.0.1:{port}"]
    )
    browser = await Chromium(tmp_path / "chromium").start()
    try:
        await browser.navigate(f"http://127.0.0.1:{port}/")
        await browser.wait_for("!document.getElementById('pair').hidden")
        await browser.type("#pair-code", pair_code(exo_home))
        await browser.click("#pair-go")
        await browser.wait_for("!document.getElementById('app').hidden && window.exo.session")
        await browser.wait_for("document.getElementById('conn').textContent === 'live'")

        # 1. An empty answer is explained.
        await browser.type("#prompt", "hello?")
        await browser.press_enter()
        await browser.wait_for(f"{TRANSCRIPT}.includes('The model returned an empty answer.')")
        assert await browser.eval("!!document.querySelector('.turn-hint')")

        # 2. exod is down: the message waits with a mark, then is sent once when the page is live again.
        d.kill()
        await browser.wait_for("document.getElementById('conn').textContent.startsWith('reconnecting')")
        await browser.type("#prompt", "are you there?")
        await browser.press_enter()
        await browser.wait_for(f"{TRANSCRIPT}.includes('will send when connected: are you there?')")
        d.start()
        await browser.wait_for(f"{TRANSCRIPT}.includes('Got it while you were away.')", timeout=60)
        await browser.wait_for(f"{TRANSCRIPT}.includes('sent: are you there?')")
        assert _user_messages(exo_home, "are you there?") == 1

        # 3. A failed turn is explained with the fix.
        await browser.type("#prompt", "one more")
        await browser.press_enter()
        await browser.wait_for(f"{TRANSCRIPT}.includes('The model failed: scripted failure.')")
    finally:
        await browser.close()
