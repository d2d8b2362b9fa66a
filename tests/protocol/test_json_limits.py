"""Issue 19 items 4 and 6: inputs that once escaped the codec as untyped exceptions.

Each case was found by attacking exod on purpose: an integer of more than 4,300
digits raised ``ValueError`` from ``json.loads``; a lone surrogate escape in a
string passed decoding and broke the UTF-8 encoding of the reply (or reached
SQLite); ``NaN`` and ``1e999`` became floats that canonical JSON refuses. Every
one must now be a typed :class:`~exo_core.errors.ProtocolError` naming the problem.
"""

from __future__ import annotations

import json
import os

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from exo_core.errors import ExoError, MalformedMessageError, PayloadTooLargeError
from exo_core.protocol import decode_command, parse_json_object
from exo_core.protocol.codec import MAX_DEPTH
from exo_core.protocol.canonical import canonical_bytes

EXAMPLES = int(os.environ.get("EXO_FUZZ_EXAMPLES", "150"))


def hello(body_text: str, command_id: str = '"1"') -> str:
    return '{"id":' + command_id + ',"type":"hello","body":' + body_text + "}"


def config_set(value_text: str) -> str:
    return '{"id":"1","type":"config.set","body":{"key":"k","value":' + value_text + "}}"


@pytest.mark.parametrize(
    ("text", "names"),
    [
        (hello('{"protocol":' + "9" * 5000 + "}"), "integer"),
        (config_set("9" * 30), "integer"),
        (config_set("[-" + "9" * 30 + "]"), "integer"),
        (config_set('{"x":1e999}'), "finite"),
        (config_set("NaN"), "finite"),
        (config_set("-Infinity"), "finite"),
        (hello('{"protocol":1}', command_id='"a\\ud800b"'), "surrogate"),
        (config_set('{"\\udfff":1}'), "surrogate"),
        (hello('{"protocol":1,"client":"x\\udbff"}'), "surrogate"),
    ],
)
def test_numbers_and_strings_json_cannot_carry_are_malformed(text: str, names: str) -> None:
    with pytest.raises(MalformedMessageError, match=names):
        decode_command(text)


def test_a_valid_surrogate_pair_and_big_but_safe_numbers_pass() -> None:
    _, body = decode_command(hello('{"protocol":1,"client":"\\ud83d\\ude00"}'))
    assert body.client == "\U0001f600"
    _, body = decode_command(config_set("[9007199254740992,-9007199254740992,1.5e300]"))
    assert body.value == [2**53, -(2**53), 1.5e300]


def test_nesting_is_bounded_before_parsing() -> None:
    deep = hello("[" * 50_000 + "]" * 50_000)
    with pytest.raises(MalformedMessageError, match="nested"):
        decode_command(deep)
    brackets_in_strings = hello('{"protocol":1,"client":"' + "[" * 5000 + '"}')
    assert decode_command(brackets_in_strings)[1].client == "[" * 5000
    at_limit = {"a": 1}
    for _ in range(MAX_DEPTH - 1):
        at_limit = {"a": at_limit}
    assert parse_json_object(json.dumps(at_limit)) == at_limit
    with pytest.raises(MalformedMessageError, match="nested"):
        parse_json_object(json.dumps({"a": at_limit}))


json_text = st.lists(
    st.characters(codec="utf-8") | st.sampled_from(["\\ud800", "\\udc00", "\\ud83d\\ude00", '"', "\\", "[", "{"]),
    max_size=30,
).map("".join)


@given(
    st.one_of(
        json_text.map(lambda t: hello('{"protocol":1,"client":"' + t + '"}')),
        st.integers().map(lambda n: hello('{"protocol":' + str(n) + "}")),
        st.from_regex(r"-?[0-9]{1,400}(\.[0-9]{1,30})?([eE][+-]?[0-9]{1,5})?", fullmatch=True).map(
            lambda n: config_set(n)
        ),
        json_text.map(lambda t: hello('{"protocol":1}', command_id='"' + t + '"')),
    )
)
@settings(max_examples=EXAMPLES * 2, deadline=None)
def test_whatever_decodes_can_be_encoded_again(text: str) -> None:
    try:
        command, _ = decode_command(text)
    except ExoError as exc:
        assert exc.code in {"malformed", "bad_body"} and exc.message
        canonical_bytes({"message": exc.message, "field": exc.field})  # the error itself is sendable
        return
    canonical_bytes(command.to_wire())


def test_breadth_is_bounded_before_parsing_but_long_text_is_not() -> None:
    wide = config_set("[" + ",".join(["1"] * 200_000) + "]")
    with pytest.raises(PayloadTooLargeError, match="values"):
        decode_command(wide)
    many_strings = config_set("[" + ",".join(['"a\\"b"'] * 200_000) + "]")
    with pytest.raises(PayloadTooLargeError, match="values"):
        decode_command(many_strings)
    text = "a, [{1} " * 200_000
    _, body = decode_command(json.dumps({"id": "1", "type": "turn.send", "body": {"session": "s", "text": text}}))
    assert body.text == text
