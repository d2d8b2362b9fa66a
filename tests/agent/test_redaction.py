"""Issue 19, item 1: secrets are redacted from tool results (shapes from ``store/leaks.py`` plus this machine's own).

The seed of the ledger key and the TCP token have no telling shape (hex, url-safe
base64), so the redactor also knows their exact values from the Exo home.
"""

from __future__ import annotations

import base64
import secrets
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from exo_core.agent.redact_stream import StreamRedactor
from exo_core.agent.redaction import SecretRedactor
from exo_core.ledger.keys import create_signing_key
from exo_core.store.leaks import find_leaks

PEM = (
    "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEAtotallyfakekeymaterial0123456789\n-----END RSA PRIVATE KEY-----\n"
)


def _home(tmp_path: Path) -> tuple[Path, str, str]:
    home = tmp_path / "home"
    signer = create_signing_key(home / "keys")
    token = secrets.token_urlsafe(32)
    (home / "token").write_text(token + "\n")
    return home, signer.seed().hex(), token


def test_the_home_secrets_and_known_shapes_are_redacted(tmp_path: Path) -> None:
    home, seed, token = _home(tmp_path)
    redactor = SecretRedactor.for_home(home)
    text = (
        f"key file: exo-ed25519-seed-v1 {seed}\nbare: {seed}\nupper: {seed.upper()}\n"
        f"b64: {base64.b64encode(bytes.fromhex(seed)).decode()}\ntoken: {token}\n"
        f"Authorization: Bearer abcdefghijklmnopqrstuvwxyz012345\n{PEM}sha256 of a file: {'ab' * 32}\n"
    )
    out = redactor.redact(text)
    for secret in (seed, seed.upper(), token, "totallyfakekeymaterial", "abcdefghijklmnopqrstuvwxyz012345"):
        assert secret not in out, out
    assert "sha256 of a file: " + "ab" * 32 in out, "hex that is not this machine's seed stays"
    assert out.count("[redacted:") >= 6


def test_a_value_on_the_next_line_and_unicode_before_it_are_handled() -> None:
    redactor = SecretRedactor()
    text = "İİİ straße\npassword:\n  hunter2hunter2\nAuthorization: Bearer\n abcdefghijklmnopqrstuvwxyz0123\nrest\n"
    out = redactor.redact(text)
    assert "hunter2hunter2" not in out and "abcdefghijklmnopqrstuvwxyz0123" not in out, out
    assert out.startswith("İİİ straße\n") and out.endswith("rest\n")


def test_the_key_file_line_is_a_leak_the_store_lint_knows() -> None:
    assert [leak.kind for leak in find_leaks("exo-ed25519-seed-v1 " + "0f" * 32)] == ["private-key"]


def test_a_token_written_after_the_redactor_was_made_is_known(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    redactor = SecretRedactor.for_home(home)
    token = secrets.token_urlsafe(32)
    (home / "token").write_text(token + "\n")
    assert token not in redactor.redact(f"the token is {token}")


def test_nested_data_is_redacted(tmp_path: Path) -> None:
    home, seed, _token = _home(tmp_path)
    data = {"path": "x", "content": [f"seed {seed}", 3, {"k": PEM}]}
    out = SecretRedactor.for_home(home).redact_data(data)
    assert seed not in str(out) and "totallyfake" not in str(out) and out["content"][1] == 3


@settings(max_examples=60, deadline=None)
@given(cuts=st.lists(st.integers(min_value=1, max_value=200), max_size=12))
def test_a_stream_cut_anywhere_never_shows_a_secret(cuts: list[int]) -> None:
    seed = "5eed" * 16
    redactor = SecretRedactor(known=(seed,))
    text = f"start\nexo-ed25519-seed-v1 {seed}\nmiddle {seed} end\n{PEM}tail line\n"
    stream = StreamRedactor(redactor)
    shown, at = [], 0
    for size in cuts:
        shown.append(stream.feed(text[at : at + size]))
        at += size
    shown.append(stream.feed(text[at:]))
    shown.append(stream.flush())
    out = "".join(shown)
    assert seed not in out and "totallyfakekeymaterial" not in out
    assert out.startswith("start\n") and out.endswith("tail line\n")
