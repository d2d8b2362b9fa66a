"""The terminal client's parts without a terminal: keys, palette, attachments, taste file, transcript."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from exo_core.errors import ConfigError
from exo_core.protocol import Event
from exo_core.terminal.attach import expand_refs, run_shell
from exo_core.terminal.keys import KeyDecoder
from exo_core.terminal.palette import Entry, Palette, fuzzy_score
from exo_core.terminal.prefs import TerminalPrefs, load_prefs, prefs_path
from exo_core.terminal.transcript import Transcript


def test_keys_decode_text_controls_and_split_escape_sequences() -> None:
    d = KeyDecoder()
    assert d.feed(b"hi\r\x7f\x10\x0f") == ["h", "i", "enter", "backspace", "ctrl+p", "ctrl+o"]
    assert d.feed(b"\x1b[") == [] and d.feed(b"A") == ["up"]
    assert d.feed(b"\x1b[5~\x1b[3~\x1bOH") == ["pageup", "delete", "home"]
    assert d.feed(b"\x1b") + d.flush() == ["esc"]
    assert d.feed("é".encode()[:1]) == [] and d.feed("é".encode()[1:]) == ["é"]


def test_palette_is_fuzzy_and_ranks_word_starts_first() -> None:
    assert fuzzy_score("sess", "/sessions — list sessions") is not None
    assert fuzzy_score("xyz", "/sessions") is None
    palette = Palette(
        [Entry("/search — WORDS search past sessions", "/search"), Entry("/sessions — list", "/sessions")]
    )
    for ch in "sessi":
        palette.key(ch)
    assert palette.matches()[0].run == "/sessions"
    palette.key("down")
    assert palette.key("esc") is False


def test_at_refs_attach_files_and_line_ranges(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("one\ntwo\nthree\n")
    text, problems = expand_refs("look at @a.txt:2-3 and @a.txt:1 and @missing.md, mail me@example.com", tmp_path)
    assert "[attached: a.txt lines 2-3]\n```\ntwo\nthree\n```" in text
    assert "[attached: a.txt lines 1-1]\n```\none\n```" in text
    assert problems == ["@missing.md: no such file here"]
    _text, empty = expand_refs("@a.txt:3-1", tmp_path)
    assert empty == ["@a.txt:3-1: the range is empty"]


async def test_bang_runs_here_with_a_timeout(tmp_path: Path) -> None:
    assert await run_shell("echo $((6*7)); exit 3", tmp_path) == (3, "42\n")
    status, out = await asyncio.wait_for(run_shell("sleep 30", tmp_path, timeout=0.3), 10)
    assert status == -9 and "killed" in out


def test_terminal_taste_lives_in_the_users_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    assert prefs_path() == tmp_path / "exo" / "terminal.toml"
    assert load_prefs() == TerminalPrefs()
    prefs_path().parent.mkdir(parents=True)
    prefs_path().write_text('theme = "light"\n[keys]\npalette = "ctrl+k"\n')
    prefs = load_prefs()
    assert prefs.theme == "light" and prefs.keys["palette"] == "ctrl+k" and prefs.keys["expand"] == "ctrl+o"
    prefs_path().write_text('theme = "neon"\n')
    with pytest.raises(ConfigError, match="neon"):
        load_prefs()
    prefs_path().write_text("theme = [\n")
    with pytest.raises(ConfigError, match="not valid TOML"):
        load_prefs()


def ev(seq: int, event_type: str, **body: object) -> Event:
    return Event(id=f"e{seq}", seq=seq, session="s", type=event_type, ts="", body=dict(body))


def test_transcript_streams_folds_and_shows_shaped_panels() -> None:
    t = Transcript()
    plain = TerminalPrefs(theme="plain")
    t.apply(ev(1, "message.completed", message_id=1, role="user", content="hi", turn_id="t1"))
    t.apply(ev(2, "turn.started", turn_id="t1"))
    t.apply(ev(3, "message.delta", turn_id="t1", text="Hel"))
    assert t.running and t.render(40, plain, expanded=False)[-1] == "Hel"
    t.apply(ev(4, "message.delta", turn_id="t1", text="lo"))
    t.apply(ev(5, "message.completed", message_id=2, role="assistant", content="Hello", turn_id="t1"))
    t.apply(ev(6, "tool.started", turn_id="t1", call_id="c1", name="bash", arguments={"command": "ls"}))
    t.apply(ev(7, "tool.output", call_id="c1", text="a.txt\n"))
    t.apply(ev(8, "tool.completed", call_id="c1", name="bash", ok=True, result="a.txt", duration_ms=3))
    t.apply(
        ev(9, "ui.panel", turn_id="t1", kind="diff", title="x", data={"form": "line", "line": "[diff] x — a +1 -0"})
    )
    t.apply(ev(10, "message.completed", message_id=3, role="assistant", content="Done.", turn_id="t1"))
    t.apply(ev(11, "turn.completed", turn_id="t1", stop_reason="end"))
    folded = t.render(60, plain, expanded=False)
    assert folded[0] == "› hi" and "Done." in folded and "Hello" not in folded
    assert "  ▣ [diff] x — a +1 -0" in folded and not any("a.txt" in line for line in folded)
    full = t.render(60, plain, expanded=True)
    assert "Hello" in full and "    │ a.txt" in full and "  ✓ bash (3 ms) command='ls'" in full
