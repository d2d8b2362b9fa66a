"""Two clients on one session over TCP — the terminal (paired with `exo pair`) and the web page
(paired in the browser): the same events in the same order, and the first approval answer wins."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import pytest
from chromium_cdp import CHROMIUM, Chromium
from exo_testkit import write_script
from terminal.tmux_driver import TMUX, Tmux
from webkit import exo, free_port, pair_code

from exo_core.client import ExoClient

pytestmark = pytest.mark.skipif(
    CHROMIUM is None or TMUX is None, reason="needs chromium and tmux (scripts/install_system.sh)"
)

SCRIPT = [
    {"text": "Hi from the one core.", "delay": 0.02, "chunk": 4},
    {
        "text": "Removing it.",
        "tool_calls": [{"name": "bash", "arguments": {"command": "echo gone > decided.txt; rm -f old.txt"}}],
    },
    {"text": "Finished."},
]


def shown(log: Path) -> list[int]:
    return [int(line.split()[0]) for line in log.read_text().splitlines()] if log.exists() else []


async def test_terminal_and_web_share_a_session_and_the_first_answer_wins(
    exod_factory, exo_home: Path, workspace: Path, tmp_path: Path
) -> None:
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    d = exod_factory(
        exo_home, write_script(tmp_path / "s.json", SCRIPT), workspace, extra=["--tcp", f"127.0.0.1:{port}"]
    )
    laptop = {"XDG_CONFIG_HOME": str(tmp_path / "laptop-config")}
    paired = exo("pair", "--connect", url, "--code", pair_code(exo_home), home=tmp_path / "laptop", env=laptop)
    assert paired.returncode == 0, paired.stderr
    term = Tmux(
        [sys.executable, "-m", "exo_core.cli", "chat", "--connect", url, "--event-log", str(tmp_path / "terminal.log")],
        cwd=workspace,
        env={**laptop, "EXO_HOME": str(tmp_path / "laptop")},
    )
    browser = await Chromium(tmp_path / "chromium").start()
    try:
        term.wait_for("· live ·")
        async with ExoClient(d.url) as client:
            session = (await client.request("session.list", {}))["sessions"][0]["id"]
        await browser.navigate(f"{url}/#{session}")
        await browser.type("#pair-code", pair_code(exo_home))
        await browser.click("#pair-go")
        await browser.wait_for(f"window.exo.session === '{session}'")
        await browser.wait_for("document.getElementById('conn').textContent === 'live'")

        term.line("hello both")
        await browser.wait_for("document.getElementById('transcript').textContent.includes('Hi from the one core.')")
        term.wait_for("Hi from the one core.")
        await browser.type("#prompt", "now remove it")
        await browser.press_enter()
        term.wait_for("y allow · n deny · a always")
        await browser.wait_for("!!document.querySelector('.card.approval button[data-decision=allow]')")
        # Both answer at once: the web page clicks Allow, the terminal presses n.
        await browser.click(".card.approval button[data-decision=allow]")
        term.type("n")
        await browser.wait_for("!!document.querySelector('.card.approval .resolution')")
        decision = await browser.eval("document.querySelector('.card.approval .resolution').textContent")
        assert decision in ("allow", "deny")
        await browser.wait_for("document.getElementById('transcript').textContent.includes('Finished.')")
        term.wait_for("Finished.")
        term.keys("C-o")  # unfold the finished turn: the terminal saw the same resolution
        term.wait_for(f"→ {decision}")
        assert (workspace / "decided.txt").exists() == (decision == "allow")
        await browser.wait_for("window.exo.running.size === 0")
        async with ExoClient(d.url) as client:
            for _ in range(100):  # the turn's last event is session.updated, right after turn.completed
                page = await client.request("events.subscribe", {"since": 0, "session": session, "limit": 10000})
                if page["events"][-1]["type"] == "session.updated":
                    break
                time.sleep(0.05)
        stored = [e["seq"] for e in page["events"]]
        await browser.wait_for(f"window.exo.log.length >= {len(stored)}")
        web_seqs = await browser.eval("window.exo.log")
        deadline = time.monotonic() + 10
        while len(terminal_seqs := shown(tmp_path / "terminal.log")) < len(stored) and time.monotonic() < deadline:
            time.sleep(0.05)
    finally:
        await browser.close()
        term.close()
    assert terminal_seqs == web_seqs == stored, "both clients saw the same events in the same order"
    resolved = [e for e in page["events"] if e["type"] == "approval.resolved"]
    assert len(resolved) == 1 and resolved[0]["body"]["decision"] == decision, "one answer won"
