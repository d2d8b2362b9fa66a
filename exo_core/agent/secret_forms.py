"""The forms a known secret can take in tool output: its text, reversed, and encoded.

A command that reads a secret need not print it as it is: ``rev``, ``base64``,
``base32``, ``xxd -p``, ``od -An -tx1`` and a URL-encoder all carry it past a
search for the exact text. For each known value this module lists the strings
that any such output must contain, so a redactor can find them:

* the text itself and the text reversed;
* for a value written in hex (the ledger seed), its other case and its bytes;
* hex (both cases) and ``%XX`` URL-encoding of every byte;
* base64 (standard and URL-safe) and base32 at every alignment: the encoding
  of a secret that starts at byte offset k of the encoded data depends on
  ``k mod 3`` (``k mod 5`` for base32), so each alignment gives its own string.
  Only the characters made wholly of the secret's bits are listed; the one or
  two characters at either end that mix in neighbouring bytes are named by
  :attr:`Form.before` and :attr:`Form.after`, so a redactor removes them too;
* every encoding above reversed as well (``base64 | rev``).

Whitespace is not part of any form: a redactor searches text with its
whitespace removed, which covers encoders that wrap lines (``base64`` at 76
columns) or space their bytes (``od``).
"""

from __future__ import annotations

import base64
import re
from collections.abc import Iterable
from dataclasses import dataclass

__all__ = ["Form", "secret_forms", "MIN_SECRET"]

MIN_SECRET = 16  # shorter values would redact ordinary words
_HEX = re.compile(r"(?:[0-9A-Fa-f]{2})+")


@dataclass(frozen=True, slots=True)
class Form:
    """One string a secret can appear as; ``before``/``after``: partly-secret characters beside it."""

    text: str
    before: int = 0
    after: int = 0

    def reversed(self) -> Form:
        return Form(self.text[::-1], self.after, self.before)


def secret_forms(values: Iterable[str]) -> tuple[Form, ...]:
    """Every form of every value at least :data:`MIN_SECRET` long; longest first, each text once."""
    found: dict[str, Form] = {}
    for value in values:
        if len(value) < MIN_SECRET:
            continue
        for form in _forms_of(value):
            if len(form.text) >= MIN_SECRET and form.text not in found:
                found[form.text] = form
    return tuple(sorted(found.values(), key=lambda f: len(f.text), reverse=True))


def _forms_of(value: str) -> list[Form]:
    texts = {value, value[::-1]}
    if _HEX.fullmatch(value):
        texts |= {value.lower(), value.upper()}
    payloads = {text.encode("utf-8") for text in texts}
    if _HEX.fullmatch(value):
        raw = bytes.fromhex(value)
        payloads |= {raw, raw[::-1]}
    forms = [Form(text) for text in texts]
    for payload in payloads:
        encoded = _encodings(payload)
        forms += encoded
        forms += [form.reversed() for form in encoded]
    return forms


def _encodings(data: bytes) -> list[Form]:
    hexed = data.hex()
    forms = [Form(hexed), Form(hexed.upper())]
    forms += [Form("".join(f"%{b:02X}" for b in data)), Form("".join(f"%{b:02x}" for b in data))]
    for lead in range(3):
        encoded = base64.b64encode(bytes(lead) + data).decode("ascii")
        forms.append(_aligned(encoded, lead, len(data), bits=6))
        forms.append(_aligned(base64.urlsafe_b64encode(bytes(lead) + data).decode("ascii"), lead, len(data), bits=6))
    for lead in range(5):
        encoded = base64.b32encode(bytes(lead) + data).decode("ascii")
        forms.append(_aligned(encoded, lead, len(data), bits=5))
        forms.append(_aligned(encoded.lower(), lead, len(data), bits=5))
    return forms


def _aligned(encoded: str, lead: int, size: int, *, bits: int) -> Form:
    """The characters of ``encoded`` made only of the ``size`` bytes that follow ``lead`` bytes of padding."""
    start_bit, end_bit = lead * 8, (lead + size) * 8
    first = -(-start_bit // bits)  # the first character that starts at or after the secret's first bit
    last = end_bit // bits  # one past the last character that ends at or before its last bit
    before = first - start_bit // bits
    after = -(-end_bit // bits) - last
    return Form(encoded[first:last], before, after)
