"""Canonical JSON: the documented byte contract, and a strict decoder fuzzed with Hypothesis."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from exo_core.errors import BadBodyError, CorruptDataError
from exo_core.ledger.canonical import canonical_json, parse_canonical

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**70), 2**70)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4),
    max_leaves=20,
)


def test_contract_bytes() -> None:
    doc = {"b": [1, 2.5, None, True], "a": "naïve ☃", "é": {"z": 1, "y": "x"}}
    assert canonical_json(doc) == '{"a":"naïve ☃","b":[1,2.5,null,true],"é":{"y":"x","z":1}}'.encode()


def test_tuples_become_lists_and_keys_must_be_strings() -> None:
    assert canonical_json({"a": (1, 2)}) == b'{"a":[1,2]}'
    with pytest.raises(BadBodyError, match="not a string"):
        canonical_json({1: "x"})


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf, b"bytes", object(), {"s": "\ud800"}])
def test_refuses_what_json_cannot_carry_exactly(bad: object) -> None:
    with pytest.raises(BadBodyError):
        canonical_json({"v": bad})


def test_refuses_deep_nesting() -> None:
    doc: object = 1
    for _ in range(40):
        doc = [doc]
    with pytest.raises(BadBodyError, match="deeper"):
        canonical_json(doc)


@pytest.mark.parametrize(
    "raw",
    [
        b'{"b":1,"a":2}',
        b'{"a": 1}',
        b'{"a":1,"a":1}',
        b"\xff",
        b"NaN",
        b'{"a":1e400}',
        b'{"a":"\\u00e9"}',
        b" 1",
        b"1.0e0",
        b"",
    ],
)
def test_parse_refuses_non_canonical(raw: bytes) -> None:
    with pytest.raises(CorruptDataError):
        parse_canonical(raw)


@given(json_values)
@settings(max_examples=300, deadline=None)
def test_round_trip(value: object) -> None:
    data = canonical_json(value)
    assert parse_canonical(data) == value
    assert canonical_json(parse_canonical(data)) == data


@given(st.binary(max_size=200))
@settings(max_examples=500, deadline=None)
def test_parse_arbitrary_bytes_only_raises_corrupt(data: bytes) -> None:
    try:
        value = parse_canonical(data)
    except CorruptDataError:
        return
    assert canonical_json(value) == data
