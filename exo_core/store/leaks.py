"""Leak patterns: secrets and contact numbers that must not sit in curated files.

Lint reports them (rule ``leak-<kind>``); importers call :func:`redact` on
every piece of text *before* anything is written, so a secret pasted into a
note or a chat never reaches the store, the ledger or the items table.

The patterns favour catching real secrets over silence: a false positive is a
lint finding the person can reword, a false negative is a leaked key.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["Leak", "find_leaks", "redact", "LEAK_PATTERNS", "LEAK_TRIGGERS", "ASSIGNED_SECRET", "URL_CREDENTIAL"]


@dataclass(frozen=True, slots=True)
class Leak:
    """One suspected secret: its kind, 1-based line, and a masked preview (its first four characters at most)."""

    kind: str
    line: int
    preview: str


# "password = x", "DB_PASSWORD=x", "api_key: 'x'": the name, the separator, the quote and the value as groups,
# so a redactor can keep the name (exo_core.context.redact does). Placeholders (<…>, ${…}, [...], ***, xxx)
# are not secrets.
ASSIGNED_SECRET = re.compile(
    r"(?i)\b(?P<name>(?:[a-z0-9_]*_)?(?:password|passwd|pwd|passphrase|secret|token|api[_-]?key|apikey"
    r"|access[_-]?key|access[_-]?token|private[_-]?key|client[_-]?secret|auth[_-]?token))"
    r"(?P<sep>\s*[:=]\s*)(?P<quote>[\"']?)(?![<\[{$]|\*{3}|x{3})(?P<value>[^\s\"'`]{3,})(?P=quote)"
)
# "scheme://user:password@host": the user and the password.
URL_CREDENTIAL = re.compile(r"(?<=://)(?P<user>[^\s:/@]+):(?P<value>[^\s@/]+)(?=@)")

LEAK_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = (
    # The whole armoured block, so redaction removes the key body too; an
    # unterminated block runs to the end of the text.
    (
        "private-key",
        re.compile(r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----(?:.*?-----END [A-Z0-9 ]+-----|.*\Z)", re.S),
    ),
    # An Exo ledger key file's line (exo_core.ledger.keys): the seed signs as this machine.
    ("private-key", re.compile(r"exo-ed25519-seed-v\d+\s+[0-9A-Fa-f]{64}")),
    # A crypt(3) password hash, as /etc/shadow holds them.
    ("password", re.compile(r"\$(?:1|2[abxy]?|5|6|y|gy|7)\$[./0-9A-Za-z$]{8,}")),
    ("api-key", re.compile(r"\bAKIA[0-9A-Z]{16}\b")),
    ("api-key", re.compile(r"\bsk-(?:proj-|ant-)?[A-Za-z0-9_-]{20,}")),
    ("api-key", re.compile(r"\b(?:ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{30,}\b")),
    ("api-key", re.compile(r"\bgithub_pat_[A-Za-z0-9_]{30,}\b")),
    ("api-key", re.compile(r"\bxox[abposr]-[A-Za-z0-9-]{10,}")),
    ("api-key", re.compile(r"\bAIza[0-9A-Za-z_-]{35}\b")),
    ("api-key", re.compile(r"\bglpat-[A-Za-z0-9_-]{20,}\b")),
    ("token", re.compile(r"\beyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}")),
    ("token", re.compile(r"(?i)\bbearer\s+[A-Za-z0-9._~+/-]{20,}=*")),
    ("password", ASSIGNED_SECRET),
    ("password", URL_CREDENTIAL),
)
# Lower-case text each pattern cannot match without (one of them must occur): a cheap test that lets a
# redactor skip a pattern, or a line, before running the regular expression (exo_core.agent.redaction).
LEAK_TRIGGERS: dict[re.Pattern[str], tuple[str, ...]] = dict(
    zip(
        (pattern for _kind, pattern in LEAK_PATTERNS),
        (
            ("-----begin",),
            ("exo-ed25519-seed",),
            ("$1$", "$2", "$5$", "$6$", "$y$", "$gy$", "$7$"),
            ("akia",),
            ("sk-",),
            ("ghp_", "gho_", "ghu_", "ghs_", "ghr_"),
            ("github_pat_",),
            ("xox",),
            ("aiza",),
            ("glpat-",),
            ("eyj",),
            ("bearer",),
            ("pass", "pwd", "secret", "token", "key"),
            ("://",),
        ),
        strict=True,
    )
)
_PHONE = re.compile(r"(?<![\w/.:+-])(?:\+\d{1,3}[ .-]?)?(?:\(\d{1,4}\)[ .-]?)?\d{2,5}(?:[ .-]\d{2,5}){1,5}(?![\w/:-])")
_DATEISH = re.compile(r"\d{4}-\d{2}-\d{2}|\d{2}:\d{2}")


def _is_phone(found: str) -> bool:
    digits = sum(ch.isdigit() for ch in found)
    plus = found.startswith("+")
    # A bare run of digits (an id, a count) is not a phone number unless it
    # carries a '+' country prefix; phone numbers are written in groups.
    grouped = plus or "(" in found or re.search(r"[ .-]", found) is not None
    return grouped and (10 <= digits <= 15 or (plus and digits >= 8)) and not _DATEISH.search(found)


def _spans(text: str) -> list[tuple[int, int, str]]:
    spans = sorted(
        [(m.start(), m.end(), kind) for kind, pattern in LEAK_PATTERNS for m in pattern.finditer(text)]
        + [(m.start(), m.end(), "phone") for m in _PHONE.finditer(text) if _is_phone(m.group())]
    )
    merged: list[tuple[int, int, str]] = []
    for start, end, kind in spans:
        if merged and start < merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], end), merged[-1][2])
        else:
            merged.append((start, end, kind))
    return merged


def find_leaks(text: str) -> list[Leak]:
    """Every suspected secret in ``text`` with its line."""
    return [
        Leak(kind, text.count("\n", 0, start) + 1, (text[start : start + 4] + "…") if end - start > 6 else "…")
        for start, end, kind in _spans(text)
    ]


def redact(text: str) -> tuple[str, int]:
    """``text`` with each suspected secret replaced by ``[redacted:<kind>]``; and the count."""
    spans = _spans(text)
    for start, end, kind in reversed(spans):  # from the end, so earlier offsets stay valid
        text = f"{text[:start]}[redacted:{kind}]{text[end:]}"
    return text, len(spans)
