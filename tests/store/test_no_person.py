"""Mechanism, not person (paper §9, §24): no line of exo_core, exo_edge or device
names a person, an account, an e-mail address, a machine or a home folder.

The scan looks at every text file of those packages. A hit fails with file,
line and what matched. The allowlist is small and explicit: each entry is
(file suffix, exact matched text) with a reason.
"""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SCANNED = ("exo_core", "exo_edge", "device")
SUFFIXES = {
    ".py",
    ".md",
    ".toml",
    ".json",
    ".txt",
    ".js",
    ".ts",
    ".html",
    ".css",
    ".sh",
    ".cfg",
    ".ini",
    ".yaml",
    ".yml",
}

# (path suffix, matched text): why it is allowed.
ALLOWLIST: dict[tuple[str, str], str] = {}

_RESERVED_MAIL = re.compile(
    r"@(?:[\w-]+\.)*(?:example\.(?:com|org|net)|[\w-]+\.(?:example|invalid|test|localhost))$", re.I
)
PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("e-mail address", re.compile(r"\b[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}\b")),
    (
        "home folder",
        re.compile(
            r"(?:/home/|/Users/|[A-Za-z]:\\\\?Users\\\\?)(?![<{$*])(?!USER\b|user\b|username\b|name\b)[A-Za-z0-9._-]+"
        ),
    ),
    (
        "account URL",
        re.compile(
            r"\b(?:github|gitlab|twitter|x|instagram|facebook|linkedin|mastodon\.social)\.com/(?!features|orgs|settings|login|about)[A-Za-z0-9_.-]+",
            re.I,
        ),
    ),
    # Host names appear in strings and URLs ('pi.local', user@host.lan), not as
    # attribute access like fork.local.size.
    ("LAN host name", re.compile(r"(?<=[\"'/@])[a-z0-9-]+\.(?:local|lan|home\.arpa|internal)(?![\w.(])")),
    ("private IP address", re.compile(r"\b(?:192\.168|10\.\d{1,3}|172\.(?:1[6-9]|2\d|3[01]))\.\d{1,3}\.\d{1,3}\b")),
    ("machine name", re.compile(r"\b[A-Za-z]+[-'](?:s-)?(?:MacBook|macbook|laptop|desktop|iPhone|PC)\b")),
)
# Common given names, written capitalised as a person's name would be. Words
# that are also ordinary English (May, Will, Mark, Bill, Grace...) are left out.
NAMES = set(
    """James John Robert Michael David Richard Joseph Thomas Charles Christopher Daniel Matthew Anthony Donald
    Steven Paul Andrew Joshua Kenneth Kevin Brian George Edward Ronald Timothy Jason Jeffrey Ryan Jacob Gary
    Nicholas Eric Jonathan Stephen Larry Justin Scott Brandon Benjamin Samuel Gregory Frank Alexander Raymond
    Patrick Jack Dennis Jerry Tyler Aaron Jose Adam Henry Nathan Douglas Zachary Peter Kyle Walter Ethan Jeremy
    Harold Keith Christian Roger Noah Gerald Carl Terry Sean Austin Arthur Lawrence Jesse Dylan Bryan Joe Jordan
    Mary Patricia Jennifer Linda Elizabeth Barbara Susan Jessica Sarah Karen Nancy Lisa Betty Margaret Sandra
    Ashley Kimberly Emily Donna Michelle Dorothy Carol Amanda Melissa Deborah Stephanie Rebecca Sharon Laura
    Cynthia Kathleen Amy Shirley Angela Helen Anna Brenda Pamela Nicole Emma Samantha Katherine Christine Debra
    Rachel Catherine Carolyn Janet Ruth Maria Heather Diane Virginia Julie Joyce Victoria Olivia Kelly Christina
    Lauren Joan Evelyn Judith Megan Cheryl Andrea Hannah Martha Jacqueline Gloria Teresa Ann Sara Madison Frances
    Kathryn Janice Jean Abigail Alice Julia Judy Sophia Denise Amber Doris Marilyn Danielle Beverly Isabella
    Theresa Diana Natalie Brittany Charlotte Marie Kayla Alexis Lori Bob Alice Carol Dave Eve Mallory Trent
    Peggy Victor Walter Sam Alex Chris Pat Max Ben Tom Tim Jim Kim Jan Lars Sven Hans Jens Anja Ingrid Klaus
    Jürgen Pierre Jean-Luc François Giovanni Giuseppe Luca Marco Matteo Sofia Lucia Carlos Javier Miguel Pablo
    Juan Hiroshi Takeshi Yuki Kenji Wei Li Ming Raj Priya Arjun Ravi Ahmed Mohammed Fatima Ali Omar Olga Ivan
    Dmitri Sergei Natasha""".split()
)
NAME = re.compile(r"\b(" + "|".join(sorted((re.escape(n) for n in NAMES), key=len, reverse=True)) + r")\b")


def _identity_words() -> list[str]:
    """This machine's own identity: the git author's e-mail and the home folder's owner."""
    words = []
    try:
        mail = subprocess.run(
            ["git", "config", "user.email"], capture_output=True, text=True, cwd=REPO, timeout=10
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        mail = ""
    if mail and not _RESERVED_MAIL.search(mail) and "noreply" not in mail:
        words.append(mail)
    owner = Path.home().name
    if owner and owner not in {"root", "runner", "user", "ci", "build", "home", "nobody", "builder"}:
        words.append(owner)
    return words


def scan(roots: list[Path], extra: list[str] = ()) -> list[str]:  # type: ignore[assignment]
    """Every hit as 'path:line: what: text'."""
    hits = []
    literal = [re.compile(rf"(?<![\w.]){re.escape(w)}(?![\w])") for w in extra]
    for root in roots:
        for path in sorted(root.rglob("*")):
            if not path.is_file() or path.suffix not in SUFFIXES or "__pycache__" in path.parts:
                continue
            try:
                text = path.read_text(encoding="utf-8")
            except UnicodeDecodeError:
                continue
            rel = path.relative_to(root.parent).as_posix()
            for number, line in enumerate(text.split("\n"), start=1):
                found: list[tuple[str, str]] = []
                for what, pattern in PATTERNS:
                    for m in pattern.finditer(line):
                        if what == "e-mail address" and _RESERVED_MAIL.search(m.group(0)):
                            continue
                        found.append((what, m.group(0)))
                found.extend(("personal name", m.group(0)) for m in NAME.finditer(line))
                found.extend(("this machine's identity", m.group(0)) for p in literal for m in p.finditer(line))
                for what, match in found:
                    if any(rel.endswith(suffix) and match == text_ for (suffix, text_) in ALLOWLIST):
                        continue
                    hits.append(f"{rel}:{number}: {what}: {match!r}")
    return hits


def test_core_names_no_person() -> None:
    roots = [REPO / name for name in SCANNED if (REPO / name).is_dir()]
    assert roots, "nothing to scan"
    hits = scan(roots, _identity_words())
    assert not hits, "mechanism, not person — remove these or add a reasoned ALLOWLIST entry:\n" + "\n".join(hits)


@pytest.mark.parametrize(
    "line",
    [
        "contact = 'someone.real@gmail.com'",
        "path = '/home/jdoe/.exo'",
        "path = '/Users/Jane/notes'",
        "url = 'https://github.com/somebody'",
        "host = 'kitchen-pi.local'",
        "addr = '192.168.1.23'",
        "# Dave's laptop",
        "greet = 'Hello, Priya'",
    ],
)
def test_scanner_catches_planted_person(tmp_path: Path, line: str) -> None:
    pkg = tmp_path / "exo_core"
    pkg.mkdir()
    (pkg / "mod.py").write_text(f"x = 1\n{line}\n")
    hits = scan([pkg])
    assert hits and hits[0].startswith("exo_core/mod.py:2:")


@pytest.mark.parametrize(
    "line",
    [
        "mail = 'person@example.org'",
        "p = Path.home() / '.exo'",
        "p = '/home/<user>/.exo'",
        "ip = '127.0.0.1'",
        "t = 'the person'",
        "# mark the entry; will retry in May",
    ],
)
def test_scanner_ignores_mechanism(tmp_path: Path, line: str) -> None:
    pkg = tmp_path / "exo_core"
    pkg.mkdir()
    (pkg / "mod.py").write_text(line + "\n")
    assert scan([pkg]) == []


def test_identity_words_are_scanned(tmp_path: Path) -> None:
    pkg = tmp_path / "device"
    pkg.mkdir()
    (pkg / "a.py").write_text("owner = 'zq-unique-owner'\n")
    assert scan([pkg], ["zq-unique-owner"])
    assert os.sep  # the scan is path-separator agnostic: it reads files, not names
