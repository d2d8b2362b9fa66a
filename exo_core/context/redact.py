"""Replacing secrets with placeholders before text reaches a summarizer or a summary (docs/context.md).

The summarizer prompt asks the model to do this too, but a small local model
cannot be trusted with it, so the engine scrubs mechanically twice: the
transcript before it is sent, and the summary before it is stored. Patterns
aim at things that are secrets by shape (provider keys, tokens, private keys,
credentials in URLs) or by the word before them ("password: ...", "my token
is ..."). Hex strings (commit ids, checksums) are values, not secrets, and are
kept exact.

Failure mode: a secret in a shape none of these patterns knows passes through.
The placeholder names the kind (``[secret:api_key]``) so the summary stays
useful.
"""

from __future__ import annotations

import re

from exo_core.store import leaks

__all__ = ["redact"]

# Secrets by shape (private keys, provider keys, tokens, "password: x", credentials in URLs) are
# the store's leak patterns, one list for the whole core; the placeholder names each kind as it
# does here (api-key -> [secret:api_key]). "password = x" and "user:pw@" keep their name / user.
_NAMED = (leaks.ASSIGNED_SECRET, leaks.URL_CREDENTIAL)
_SHAPES = tuple((kind, pattern) for kind, pattern in leaks.LEAK_PATTERNS if pattern not in _NAMED)
# "my password is x", "the api key was x", "PIN: 1234"
_SPOKEN = re.compile(
    r"(?i)\b(password|passphrase|passcode|pin|secret|token|api key|access key|private key)"
    r"(\s+(?:is|was|=|:)\s+|\s*:\s*)(['\"]?)([^\s'\"]{3,})\3"
)
# Long mixed strings that look random; pure hex (ids, checksums) is left alone.
_OPAQUE = re.compile(
    r"(?<![A-Za-z0-9/_.\-])(?=[A-Za-z0-9+/_\-]*[0-9])(?=[A-Za-z0-9+/_\-]*[a-z])"
    r"(?=[A-Za-z0-9+/_\-]*[A-Z])[A-Za-z0-9+/_\-]{32,}={0,2}(?![A-Za-z0-9/_.\-])"
)


def _kind(word: str) -> str:
    word = word.lower().replace("-", "_").replace(" ", "_")
    for kind in (
        "password",
        "passphrase",
        "passcode",
        "pin",
        "api_key",
        "apikey",
        "access_key",
        "private_key",
        "client_secret",
        "token",
        "secret",
        "pwd",
        "passwd",
    ):
        if kind in word:
            return {"apikey": "api_key", "pwd": "password", "passwd": "password"}.get(kind, kind)
    return "secret"


def redact(text: str) -> str:
    """``text`` with every recognised secret replaced by a ``[secret:kind]`` placeholder."""
    out = text
    for kind, pattern in _SHAPES:
        out = pattern.sub(f"[secret:{kind.replace('-', '_')}]", out)
    for named in (leaks.ASSIGNED_SECRET, _SPOKEN):  # the word before the value names the kind
        out = named.sub(
            lambda m: (
                m.group(0)
                if m.group(4).startswith("[secret")
                else f"{m.group(1)}{m.group(2)}[secret:{_kind(m.group(1))}]"
            ),
            out,
        )
    out = leaks.URL_CREDENTIAL.sub(lambda m: f"{m.group('user')}:[secret:password]", out)
    return _OPAQUE.sub("[secret:token]", out)
