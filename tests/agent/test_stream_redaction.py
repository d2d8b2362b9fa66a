"""Redaction of a whole stream, cut anywhere, and of the encodings a command can put a secret in.

A secret must not leave in pieces that join back whole across ``tool.output``
events, nor in a form a reader decodes: reversed (``rev``), hex (``xxd -p``,
``od -An -tx1``), base64 and base32 (wrapped or not, at any offset in the data
encoded), URL-encoded, or encoded then reversed.
"""

from __future__ import annotations

import base64
import binascii
import re
import secrets
import string
import urllib.parse
from collections.abc import Callable

from hypothesis import given, settings
from hypothesis import strategies as st

from exo_core.agent.redact_stream import HOLD_LIMIT, StreamRedactor, redact_tail
from exo_core.agent.redaction import SecretRedactor

_FILLER = string.ascii_letters + string.digits + " \n.,:=/+-_"


def _wrap(text: str, width: int) -> str:
    return "\n".join(text[i : i + width] for i in range(0, len(text), width)) + "\n"


# Each encoding takes (bytes before the secret, the secret, bytes after) as a command reading a file would.
ENCODINGS: dict[str, Callable[[bytes, bytes, bytes], str]] = {
    "plain": lambda a, s, b: (a + s + b).decode(),
    "rev": lambda a, s, b: (a + s + b).decode()[::-1],
    "hex": lambda a, s, b: (a + s + b).hex(),
    "HEX": lambda a, s, b: (a + s + b).hex().upper(),
    "xxd -p": lambda a, s, b: _wrap((a + s + b).hex(), 60),
    "od -An -tx1": lambda a, s, b: _wrap(" ".join(f"{x:02x}" for x in a + s + b), 48),
    "base64": lambda a, s, b: _wrap(base64.b64encode(a + s + b).decode(), 76),
    "base64 -w0": lambda a, s, b: base64.b64encode(a + s + b).decode(),
    "urlsafe base64": lambda a, s, b: base64.urlsafe_b64encode(a + s + b).decode(),
    "base32": lambda a, s, b: _wrap(base64.b32encode(a + s + b).decode(), 76),
    "base64 | rev": lambda a, s, b: _wrap(base64.b64encode(a + s + b).decode(), 76)[::-1],
    "rev | base64": lambda a, s, b: base64.b64encode((a + s + b)[::-1]).decode(),
    "url-encoded": lambda a, s, b: urllib.parse.quote((a + s + b).decode(), safe=""),
    "every byte %XX": lambda a, s, b: "".join(f"%{x:02X}" for x in a + s + b),
}


def _decodings(text: str) -> list[bytes]:
    """Every reading of ``text`` a person could try: as is, reversed, and decoded from each encoding at each offset."""
    squeezed = re.sub(r"\s+", "", text)
    out: list[bytes] = []
    for candidate in (text, squeezed, squeezed[::-1], text[::-1]):
        out.append(candidate.encode())
        out.append(urllib.parse.unquote_to_bytes(candidate))
        for run in re.findall(r"[0-9A-Fa-f]{32,}", candidate):
            for off in (0, 1):
                part = run[off:]
                out.append(bytes.fromhex(part[: len(part) // 2 * 2]))
        for run in re.findall(r"[A-Za-z0-9+/_-]{20,}", candidate):
            for off in range(4):
                part = run[off:]
                part = part[: len(part) // 4 * 4]
                for decode in (base64.b64decode, base64.urlsafe_b64decode):
                    try:
                        out.append(decode(part))
                    except (binascii.Error, ValueError):
                        pass
        for run in re.findall(r"[A-Za-z2-7]{24,}", candidate):
            for off in range(8):
                part = run[off:].upper()
                try:
                    out.append(base64.b32decode(part[: len(part) // 8 * 8]))
                except (binascii.Error, ValueError):
                    pass
    return out


def _leaks(secret: str, shown: str) -> list[str]:
    """Ways ``shown`` still carries ``secret`` (or a 16-character piece of it) for someone who decodes it."""
    pieces = [secret.encode()] + [secret[i : i + 16].encode() for i in range(0, len(secret) - 15, 4)]
    decoded = b"\0".join(_decodings(shown))
    return [piece.decode() for piece in pieces if piece in decoded or piece[::-1] in decoded]


def _run(redactor: SecretRedactor, text: str, cuts: list[int]) -> tuple[list[str], str]:
    stream = StreamRedactor(redactor)
    events, at = [], 0
    for size in cuts:
        events.append(stream.feed(text[at : at + size]))
        at += size
    events.append(stream.feed(text[at:]))
    events.append(stream.flush())
    return [e for e in events if e], "".join(events)


@settings(max_examples=200, deadline=None)
@given(
    secret=st.binary(min_size=24, max_size=48).map(lambda b: base64.urlsafe_b64encode(b).decode().rstrip("=")),
    encoding=st.sampled_from(sorted(ENCODINGS)),
    before=st.text(alphabet=_FILLER, max_size=40),
    after=st.text(alphabet=_FILLER, max_size=40),
    outside=st.tuples(st.text(alphabet=_FILLER, max_size=300), st.text(alphabet=_FILLER, max_size=300)),
    cuts=st.lists(st.integers(min_value=1, max_value=400), max_size=20),
)
def test_any_split_of_any_encoding_never_shows_the_secret(
    secret: str, encoding: str, before: str, after: str, outside: tuple[str, str], cuts: list[int]
) -> None:
    redactor = SecretRedactor(known=(secret,))
    encoded = ENCODINGS[encoding](before.encode(), secret.encode(), after.encode())
    text = outside[0] + encoded + outside[1]
    events, joined = _run(redactor, text, cuts)
    assert not _leaks(secret, joined), (encoding, joined)
    assert "[redacted:exo-secret]" in joined
    assert joined.startswith(outside[0][: max(0, len(outside[0]) - 8)].rstrip()[:-1] or "")


@settings(max_examples=40, deadline=None)
@given(cuts=st.lists(st.integers(min_value=1, max_value=5000), min_size=1, max_size=40))
def test_the_ledger_seed_in_every_form_across_a_long_stream(cuts: list[int]) -> None:
    seed = secrets.token_hex(32)
    redactor = SecretRedactor(known=(seed,))
    raw = bytes.fromhex(seed)
    line = f"exo-ed25519-seed-v1 {seed}\n".encode()
    forms = [fn(b"x" * n, line, b"") for n, fn in enumerate(ENCODINGS.values())]
    forms += [base64.b64encode(raw).decode(), raw.hex().upper(), seed[::-1]]
    text = "".join(f"{'filler ' * 60}\n{form}\n" for form in forms)
    _events, joined = _run(redactor, text, cuts)
    assert not _leaks(seed, joined) and not _leaks(seed[:32], joined) and not _leaks(seed[32:], joined)
    assert joined.count("filler") == 60 * len(forms), "text around the secrets is all shown"


def test_the_held_tail_is_flushed_at_the_end() -> None:
    redactor = SecretRedactor(known=("s" * 40,))
    stream = StreamRedactor(redactor)
    shown = stream.feed("short output without a newline")
    assert shown == "", "held: a secret could still be arriving"
    assert stream.flush() == "short output without a newline"
    assert stream.flush() == ""


def test_what_is_shown_early_never_changes() -> None:
    # Output is shown as it arrives once it is further from the end than a secret can reach.
    redactor = SecretRedactor(known=("q" * 40,))
    stream = StreamRedactor(redactor)
    first = stream.feed("a" * 10_000)
    assert len(first) == 10_000 - redactor.reach + 1


def test_a_private_key_block_longer_than_the_hold_is_dropped_to_its_end() -> None:
    stream = StreamRedactor(SecretRedactor())
    body = "QUJD" * (HOLD_LIMIT // 2)
    text = f"before\n-----BEGIN PRIVATE KEY-----\n{body}\n-----END PRIVATE KEY-----\nafter\n"
    shown = [stream.feed(text[i : i + 4096]) for i in range(0, len(text), 4096)] + [stream.flush()]
    joined = "".join(shown)
    assert "QUJDQUJD" not in joined and joined.startswith("before\n") and joined.endswith("after\n")
    assert joined.count("[redacted:private-key]") == 1


def test_a_tail_kept_after_dropped_output_leaves_out_a_secret_cut_at_its_start() -> None:
    secret = secrets.token_urlsafe(32)
    redactor = SecretRedactor(known=(secret,))
    kept = secret[10:] + "\n" + "z" * 3000 + secret + "\nend\n"
    shown, skipped = redact_tail(redactor, kept)
    assert secret[10:] not in shown and secret not in shown and shown.endswith("[redacted:exo-secret]\nend\n")
    assert skipped >= len(secret) - 10


def test_a_quiet_stream_releases_its_whole_lines_and_holds_the_rest() -> None:
    stream = StreamRedactor(SecretRedactor(known=("s" * 40,)))
    assert stream.feed("compiling 1/3\ncompiling 2/") == ""
    assert stream.release() == "compiling 1/3\n", "the finished line shows while the command runs"
    assert stream.release() == ""
    assert stream.feed("3\n") == ""
    assert stream.release() == "compiling 2/3\n"


def test_release_keeps_back_a_line_whose_value_may_follow_and_a_secret_in_the_held_lines() -> None:
    secret = secrets.token_urlsafe(32)
    stream = StreamRedactor(SecretRedactor(known=(secret,)))
    stream.feed("ok\nAPI_PASSWORD=\n")
    assert stream.release() == "ok\n", "the value of 'API_PASSWORD=' may come on the next line"
    assert "hunter2hunter2" not in stream.feed("hunter2hunter2\n") + stream.flush()
    other = StreamRedactor(SecretRedactor(known=(secret,)))
    other.feed(f"token {secret}\nnext\n")
    released = other.release()
    assert secret not in released and "[redacted:exo-secret]" in released


def test_release_never_shows_part_of_an_open_private_key_block() -> None:
    stream = StreamRedactor(SecretRedactor())
    stream.feed("before\n-----BEGIN PRIVATE KEY-----\nQUJDQUJD\n")
    assert stream.release() == ""
    joined = stream.feed("-----END PRIVATE KEY-----\nafter\n") + stream.release() + stream.flush()
    assert "QUJDQUJD" not in joined and "before\n" in joined


@given(cuts=st.lists(st.integers(min_value=1, max_value=300), min_size=1, max_size=30), quiet=st.data())
@settings(max_examples=60, deadline=None)
def test_releases_at_line_ends_never_show_a_one_line_secret(cuts: list[int], quiet: st.DataObject) -> None:
    secret = secrets.token_urlsafe(32)
    redactor = SecretRedactor(known=(secret,))
    text = "".join(f"line {n} {secret if n % 7 == 3 else 'plain'} password: hunter{n}x9\n" for n in range(40))
    stream = StreamRedactor(redactor)
    shown, at = [], 0
    for cut in cuts:
        shown.append(stream.feed(text[at : at + cut]))
        at += cut
        if quiet.draw(st.booleans()):
            shown.append(stream.release())
    shown += [stream.feed(text[at:]), stream.flush()]
    joined = "".join(shown)
    assert secret not in joined and "hunter3x9" not in joined
    assert joined.count("line ") == 40
