"""Spoken answers to numbered questions."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from device.answers import parse_option

DAYS = ["Monday", "Tuesday", "Friday morning"]


@pytest.mark.parametrize(
    "heard, options, expected",
    [
        ("two", DAYS, 2),
        ("Two.", DAYS, 2),
        ("the second one", DAYS, 2),
        ("option 3", DAYS, 3),
        ("number one please", DAYS, 1),
        ("3", DAYS, 3),
        ("Tuesday", DAYS, 2),
        ("friday", DAYS, 3),
        ("the last one", DAYS, 3),
        ("I want to go", DAYS, None),
        ("five", DAYS, None),
        ("yes", ["Yes", "No"], 1),
        ("no thanks", ["Yes", "No"], 2),
        ("yeah sure", ["Send it", "Keep it"], 1),
        ("nope", ["Send it", "Keep it"], 2),
        ("yes", DAYS, None),
        ("", DAYS, None),
        ("to", DAYS, 2),
        ("I want to go on the first", DAYS, 1),
    ],
)
def test_parse_option(heard: str, options: list[str], expected: int | None) -> None:
    assert parse_option(heard, options) == expected


@given(st.text(max_size=80), st.lists(st.text(min_size=1, max_size=20), max_size=9))
def test_any_words_give_a_valid_option_or_none(heard: str, options: list[str]) -> None:
    result = parse_option(heard, options)
    assert result is None or 1 <= result <= len(options)
