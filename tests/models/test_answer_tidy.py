"""Answer clean-up for completion models, and how an interrupted answer is rendered."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from exo_core.agent.seams import to_chat_messages
from exo_core.errors import ConfigError
from exo_core.seams.model import INTERRUPTED_MARK, ChatMessage
from exo_core.sessions.db import open_writer
from exo_core.sessions.session_store import SessionStore
from exo_edge.answer_tidy import AnswerTidy, tidy_answer
from exo_edge.manifest import PromptFormat, find_manifest, load_manifest
from exo_edge.prompting import render_completion

TIDY = PromptFormat(format="completion", strip_open_quote=True, sentence_min_words=2)
FMT = PromptFormat(format="completion", preamble="Notes.", stop=("\nQuestion:",))


@pytest.mark.parametrize(
    "raw,shown",
    [
        # the README's scripted run: a stray opening quote and a second sentence
        (' "The capital of France is Paris. I want to ask you about this:', " The capital of France is Paris."),
        (' "Hamlet" is a play', " Hamlet"),  # the quote closes: the quoted answer is complete
        (" “Paris” she said", " Paris"),
        (" Yellow.", " Yellow."),
        (" Paris", " Paris"),  # no sentence end: nothing to cut
        (" Hello! I can help with your notes. Ask me", " Hello! I can help with your notes."),
        (" Dr. Costa. She sees", " Dr. Costa."),  # a title's period is no sentence end
        (" The 8:15 a.m. train. It is", " The 8:15 a.m. train."),
        (" 3.5 km. Every", " 3.5 km."),
        (' She signs them "M." always. Then', ' She signs them "M." always.'),  # quotes only stripped at the start
    ],
)
def test_tidy_answer(raw: str, shown: str) -> None:
    assert tidy_answer(raw, TIDY) == shown


def test_tidy_is_the_same_piece_by_piece_and_says_when_done() -> None:
    raw = ' "The capital of France is Paris. I want to ask you about this:'
    for size in (1, 2, 3, 5):
        tidy = AnswerTidy(TIDY)
        shown = "".join(tidy.feed(raw[i : i + size]) for i in range(0, len(raw), size))
        assert shown == " The capital of France is Paris." and tidy.done
        assert tidy.feed(" more") == ""  # nothing after the end


def test_tidy_is_off_by_default() -> None:
    raw = ' "Paris is lovely. I want to ask'
    tidy = AnswerTidy(PromptFormat(format="completion"))
    assert tidy.feed(raw) == raw and not tidy.done
    assert tidy_answer(raw, dataclasses.replace(TIDY, sentence_min_words=0)) == " Paris is lovely. I want to ask"
    assert tidy_answer(raw, dataclasses.replace(TIDY, strip_open_quote=False)) == ' "Paris is lovely.'


def test_one_word_sentence_does_not_end_the_answer_at_two_words() -> None:
    assert tidy_answer(" Yes. She does. And", TIDY) == " Yes. She does."
    assert tidy_answer(" Yes. She does. And", dataclasses.replace(TIDY, sentence_min_words=1)) == " Yes."


def _history() -> tuple[ChatMessage, ...]:
    return (
        ChatMessage("system", "PACK"),
        ChatMessage("user", "What does she drink?"),
        ChatMessage("assistant", "She drinks green" + INTERRUPTED_MARK),
        ChatMessage("user", "Where does her mother live?"),
    )


def test_interrupted_answer_is_kept_with_its_mark_by_default() -> None:
    prompt = render_completion(_history(), FMT)
    assert "Question: What does she drink?\nAnswer: She drinks green\n[interrupted]\n\n" in prompt
    assert prompt.endswith("Question: Where does her mother live?\nAnswer:")


def test_interrupted_exchange_is_dropped_for_a_base_model() -> None:
    prompt = render_completion(_history(), dataclasses.replace(FMT, interrupted="drop"))
    assert prompt == "Notes.\n\nPACK\n\nQuestion: Where does her mother live?\nAnswer:"
    # a finished answer before it stays
    done = (ChatMessage("user", "Who?"), ChatMessage("assistant", "Marta."), *_history()[1:])
    prompt = render_completion(done, dataclasses.replace(FMT, interrupted="drop"))
    assert prompt == ("Notes.\n\nQuestion: Who?\nAnswer: Marta.\n\nQuestion: Where does her mother live?\nAnswer:")


def test_interrupted_last_answer_leaves_the_question_open() -> None:
    msgs = _history()[:3]
    prompt = render_completion(msgs, dataclasses.replace(FMT, interrupted="drop"))
    assert prompt.endswith("PACK\n\nQuestion: What does she drink?\nAnswer:")
    assert "green" not in prompt


def test_the_store_marks_what_render_completion_drops(tmp_path: Path) -> None:
    """The mark comes from the session store's ``interrupted`` status (the loop's seam)."""
    conn = open_writer(tmp_path / "sessions.sqlite")
    try:
        store = SessionStore(conn)
        sid = store.create_session().id
        store.add_message(sid, "user", "What does she drink?")
        store.add_message(sid, "assistant", "She drinks green", status="interrupted")
        store.add_message(sid, "user", "Where does her mother live?")
        messages = to_chat_messages(store.messages(sid))
    finally:
        conn.close()
    assert messages[1].content == "She drinks green" + INTERRUPTED_MARK
    prompt = render_completion(messages, dataclasses.replace(FMT, interrupted="drop"))
    assert "green" not in prompt and "drink" not in prompt


@pytest.mark.parametrize(
    "line,needle",
    [
        ("strip_open_quote = 1", "strip_open_quote must be true or false"),
        ("sentence_min_words = -1", "sentence_min_words must be a whole number"),
        ('sentence_min_words = "2"', "sentence_min_words must be a whole number"),
        ('interrupted = "hide"', "interrupted must be one of"),
    ],
)
def test_bad_clean_up_settings_are_config_errors(tmp_path: Path, line: str, needle: str) -> None:
    path = tmp_path / "m.toml"
    path.write_text(
        'name="x"\nkind="gguf"\nlicence="l"\n[[sources]]\npackage="p"\nversion="1"\n'
        '[[files]]\nname="a"\nbuild="copy"\npackage="p"\nmember="m"\n'
        f'[prompt]\nformat="completion"\n{line}\n'
    )
    with pytest.raises(ConfigError) as info:
        load_manifest(path)
    assert needle in info.value.message


def test_shipped_gemma_format_turns_the_clean_up_on() -> None:
    fmt = find_manifest("gemma-3-270m").prompt
    assert fmt is not None
    assert fmt.strip_open_quote and fmt.sentence_min_words >= 1 and fmt.interrupted == "drop"
