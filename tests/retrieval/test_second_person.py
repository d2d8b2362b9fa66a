"""The store's words about its person reach the model addressed to that person (exo_core/retrieval/second_person.py)."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from exo_core.retrieval.second_person import addressed


@pytest.mark.parametrize(
    ("store_words", "as_said_to_them"),
    [
        ("The person's manager is Dana.", "Your manager is Dana."),
        ("The person lives in Porto.", "You live in Porto."),
        ("Tea, as the person always prefers.", "Tea, as you always prefer."),
        ("The person is allergic to peanuts.", "You are allergic to peanuts."),
        ("The person has two kids and the person doesn't drive.", "You have two kids and you don't drive."),
        (
            "The person watches birds; the person studies law; the person goes home.",
            "You watch birds; you study law; you go home.",
        ),
        ("The person said on 2026-01-02:", "You said on 2026-01-02:"),
        ("Ask the person before sending.", "Ask you before sending."),
        ("## Who I am", "## Who you are"),
        ("- I'm allergic to peanuts.", "- You're allergic to peanuts."),
        ("I was born in 1990; my sister swims.", "You were born in 1990; your sister swims."),
        (
            "## Needs my approval\n\n- Anything that pays waits for my answer.",
            "## Needs your approval\n\n- Anything that pays waits for your answer.",
        ),
        (
            "[people/sister] Sister: The person's sister lives in Porto\nMy sister Ana moved to Porto.",
            "[people/sister] Sister: Your sister lives in Porto\nYour sister Ana moved to Porto.",
        ),
        ("It is mine; I did it myself.", "It is yours; you did it yourself."),
    ],
)
def test_the_person_and_the_first_person_become_you(store_words: str, as_said_to_them: str) -> None:
    assert addressed(store_words) == as_said_to_them


def test_quoted_speech_keeps_its_words() -> None:
    node = 'The person said on 2026-01-02:\n\n> I\'m allergic to peanuts\n\nThey wrote "my sister is here".'
    assert addressed(node) == (
        'You said on 2026-01-02:\n\n> I\'m allergic to peanuts\n\nThey wrote "my sister is here".'
    )


def test_words_that_only_contain_the_names_are_left_alone() -> None:
    text = "The personal trainer, Myra, missed the meeting; Ian is imminent."
    assert addressed(text) == text


_NEUTRAL = st.text(alphabet=st.sampled_from(list("abcdefghjklnopqrstuvwxz ,.;\n-[]/0123456789")), max_size=80)
_PIECES = st.lists(
    st.one_of(
        _NEUTRAL,
        st.sampled_from(["the person", "The person's", "the person lives", "I", "I am", "my", "me", "Myself"]),
    ),
    max_size=12,
)


@given(_NEUTRAL)
def test_text_with_no_person_in_it_is_unchanged(text: str) -> None:
    assert addressed(text) == text


@given(_PIECES)
def test_no_first_or_third_person_of_the_person_is_left(pieces: list[str]) -> None:
    text = " ".join(pieces)
    out = addressed(text)
    assert not re.search(r"\bthe person\b", out, re.I), out
    assert not re.search(r"\b(I|my|me|myself)\b", out, re.I), out
