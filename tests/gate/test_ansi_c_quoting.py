"""``$'...'`` is read as bash reads it (bash(1), "ANSI-C Quoting"), checked against a real bash: the gate
must see the command bash will run, so an escape bash decodes differently is a way past the gate."""

from __future__ import annotations

import shutil
import subprocess

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from exo_core.gate import Policy, evaluate
from exo_core.gate.shell import ansi_c_text, parse_shell

BASH = shutil.which("bash")
needs_bash = pytest.mark.skipif(BASH is None, reason="bash is not installed")


def _bash_word(raw: str) -> str:
    """What bash passes as the argument ``$'raw'`` (bytes read as Latin-1, one character each)."""
    assert BASH is not None
    script = "printf '%s' $'" + raw + "'"
    done = subprocess.run([BASH, "-c", script], capture_output=True, timeout=10, check=True)
    return done.stdout.decode("latin-1")


def _as_bytes(word: str) -> str:
    """A decoded word as bash would write it out: a character above 0xFF in UTF-8, the rest as one byte."""
    return "".join(c if ord(c) < 0x100 else c.encode("utf-8").decode("latin-1") for c in word)


CASES = [
    r"rm",
    r"\x72\x6d",
    r"\162\155",
    r"\u0072m",
    r"\U00000072m",
    r"rm\0 -rf",
    r"r\x6d\0x",
    r"a\x",
    r"\u",
    r"\c?",
    r"\cA",
    r"\ca",
    r"\c\\x",
    r"\777",
    r"\1234",
    r"\#",
    r"\x7",
    r"\N{LATIN SMALL LETTER A}",
    r"a\tb\nc\\d\'e\"f\?g\eh\Ei\aj\bk\fl\vm\rn",
]


@needs_bash
@pytest.mark.parametrize("raw", CASES)
def test_the_word_is_the_word_bash_makes(raw: str) -> None:
    assert _as_bytes(ansi_c_text(raw)) == _bash_word(raw)


_PIECES = st.sampled_from(["\\", "x", "u", "U", "c", "0", "7", "1", "a", "f", "?", "e", "N", "{", "n", "m", "r", "9"])


@needs_bash
@settings(max_examples=60, deadline=None)
@given(st.lists(_PIECES, max_size=12).map("".join))
def test_any_escape_mix_reads_as_bash_reads_it(raw: str) -> None:
    trailing = len(raw) - len(raw.rstrip("\\"))
    if trailing % 2:
        raw += "n"  # a lone backslash at the end would escape the closing quote
    assert _as_bytes(ansi_c_text(raw)) == _bash_word(raw)


def test_a_nul_ends_the_word_so_rm_is_still_seen() -> None:
    parsed = parse_shell("$'rm\\0x' -rf ~")
    assert [list(c.argv) for c in parsed.commands] == [["rm", "-rf", "~"]]
    assert evaluate("bash", {"command": "$'rm\\0x' -rf ~"}, Policy()).outcome == "ask"
