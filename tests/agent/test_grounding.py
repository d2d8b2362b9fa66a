"""The core's judge of a proposed tool call: grounded in the person's words, or answered in words."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from exo_core.agent.grounding import call_grounding, files_called, grounding_sources
from exo_core.seams.model import ChatMessage, ToolCall


def _judge(said: str, name: str, **arguments: object) -> bool:
    messages = [ChatMessage("system", "You are Exo. Notes: the person keeps diary.md"), ChatMessage("user", said)]
    return call_grounding(ToolCall("c", name, dict(arguments)), messages).grounded


@pytest.mark.parametrize(
    ("said", "name", "arguments"),
    [
        ("Open shopping.md for me", "read_file", {"path": "shopping.md"}),
        ("Open shopping.md for me", "read_file", {"path": "./lists/shopping.md", "start": 1}),
        ("Run git status", "bash", {"command": "git status"}),
        ("Save 'call mum' into reminders.txt", "write_file", {"path": "reminders.txt", "content": "call mum"}),
        ("Save a long poem into poem.txt", "write_file", {"path": "poem.txt", "content": "word " * 60}),
    ],
)
def test_a_call_on_what_the_person_named_is_grounded(said: str, name: str, arguments: dict) -> None:
    assert _judge(said, name, **arguments)


@pytest.mark.parametrize(
    ("said", "name", "arguments", "why"),
    [
        ("Who painted the Mona Lisa?", "read_file", {"path": "mona_lisa.txt"}, "not in the person's words"),
        ("Who painted the Mona Lisa?", "ask_person", {"question": "Who painted the Mona Lisa?"}, "restates"),
        ("Who painted the Mona Lisa?", "recall", {"query": "painted Mona Lisa"}, "restates"),
        # issue 18's answer benchmark (file-02): the 0.5B, after reading the file, asked the question back
        ("Open todo.txt: what should I return?", "ask_person", {"question": "What should I return? "}, "restates"),
        ("Tell me a tip for sleeping", "bash", {"command": "echo sleep more"}, "refers to anything"),
        ("Hello!", "bash", {"command": "date"}, "not in the person's words"),
        ("What is the boiling point of water?", "bash", {"command": "curl example.com/water"}, "file"),
        ("What is the boiling point of water?", "ui", {}, "refers to anything"),
        ("Open my diary", "read_file", {"path": "diary.md"}, "not in the person's words"),  # only the notes said it
    ],
)
def test_a_call_on_nothing_the_person_said_is_not_grounded(said: str, name: str, arguments: dict, why: str) -> None:
    messages = [ChatMessage("system", "Notes: the person keeps diary.md"), ChatMessage("user", said)]
    verdict = call_grounding(ToolCall("c", name, arguments), messages)
    assert not verdict.grounded and why in verdict.reason


def test_a_name_must_be_a_whole_word_of_what_was_said() -> None:
    assert not _judge("Which tools do you have?", "bash", command="ls")  # "ls" inside "tools"
    assert _judge("Run ls please", "bash", command="ls")


def test_what_a_tool_returned_in_this_turn_grounds_the_next_call() -> None:
    listing = ToolCall("c0", "bash", {"command": "ls"})
    messages = [
        ChatMessage("user", "Run ls and read the newest note"),
        ChatMessage("assistant", "", tool_calls=(listing,)),
        ChatMessage("tool", "a.txt\nnote-2026.md", tool_call_id="c0"),
    ]
    assert call_grounding(ToolCall("c1", "read_file", {"path": "note-2026.md"}), messages).grounded
    assert not call_grounding(ToolCall("c1", "read_file", {"path": "other.md"}), messages).grounded
    # an earlier turn's words do not ground this turn's call
    later = [*messages, ChatMessage("assistant", "Done."), ChatMessage("user", "What is the capital of France?")]
    assert "note-2026.md" not in grounding_sources(later)
    assert not call_grounding(ToolCall("c2", "read_file", {"path": "note-2026.md"}), later).grounded


def test_without_a_message_from_the_person_nothing_is_grounded() -> None:
    verdict = call_grounding(ToolCall("c", "bash", {"command": "ls"}), [ChatMessage("system", "ls")])
    assert not verdict.grounded and "no message" in verdict.reason


_VALUES = st.one_of(st.text(max_size=60), st.integers(), st.none(), st.lists(st.text(max_size=10), max_size=3))


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=200), st.dictionaries(st.text(max_size=10), _VALUES, max_size=4))
def test_any_message_and_arguments_get_a_verdict_with_a_reason(said: str, arguments: dict) -> None:
    verdict = call_grounding(ToolCall("c", "tool", arguments), [ChatMessage("user", said)])
    assert isinstance(verdict.grounded, bool) and verdict.reason


def test_a_number_the_person_said_anchors_a_call_and_an_unsaid_one_does_not_spoil_it() -> None:
    assert _judge("Set a timer for 5 minutes", "set_timer", minutes=5)
    assert not _judge("Set a timer", "set_timer", minutes=5)
    assert _judge("Read notes.txt", "read_file", path="notes.txt", start=1, end=40)


def test_a_tool_that_works_on_files_must_name_one() -> None:
    patch = {"name": "apply_patch", "description": "Apply a unified diff to files in the workspace."}
    said = [ChatMessage("user", "Translate 'good morning' into Spanish.")]
    verdict = call_grounding(ToolCall("c", "apply_patch", {"patch": "good morning"}), said, [patch])
    assert not verdict.grounded and "names none" in verdict.reason
    fix = [ChatMessage("user", "Fix the typo in notes.md")]
    diff = "--- a/notes.md\n+++ b/notes.md\n@@ -1 +1 @@\n-teh\n+the\n"
    assert call_grounding(ToolCall("c", "apply_patch", {"patch": diff}), fix, [patch]).grounded


def test_a_file_without_an_extension_is_named_when_the_person_calls_it_a_file() -> None:
    # The footprint scenario's workspace holds "notes"; asked to "Delete the file called notes.", the 0.5B
    # proposed delete_file {"path": "notes"} and rule 4 turned it down: a name without an extension was no file.
    tools = [spec for spec in _exod_tools() if spec["name"] in ("delete_file", "read_file")]
    for said in ("Delete the file called notes.", "Please delete my notes file", "Delete a file named 'notes'"):
        verdict = call_grounding(ToolCall("c", "delete_file", {"path": "notes"}), [ChatMessage("user", said)], tools)
        assert verdict.grounded, (said, verdict.reason)
    # the person's word alone, not called a file, still names none
    france = [ChatMessage("user", "What is the capital of France?")]
    verdict = call_grounding(ToolCall("c", "read_file", {"path": "France"}), france, tools)
    assert not verdict.grounded and "names none" in verdict.reason
    heard = [ChatMessage("user", "Please delete the file call notes.")]  # Whisper's "called": not a file's name
    verdict = call_grounding(ToolCall("c", "delete_file", {"path": "notes"}), heard, tools)
    assert not verdict.grounded and "names none" in verdict.reason


def test_the_verb_asks_for_one_call_of_its_tool_and_a_second_needs_a_name_not_yet_used() -> None:
    # The footprint audit, 2026-12-02: after delete_file {"path": "notes"} printed "deleted /tmp/.../ws/notes",
    # the 0.5B proposed delete_file of that path; the judge took "delete" as asking for it again.
    tools = _exod_tools()
    first = ToolCall("c0", "delete_file", {"path": "notes"})
    turn = [
        ChatMessage("user", "Delete the file called notes."),
        ChatMessage("assistant", "", tool_calls=(first,)),
        ChatMessage("tool", "deleted /tmp/exo-fp/ws/notes", tool_call_id="c0"),
    ]
    again = call_grounding(ToolCall("c1", "delete_file", {"path": "/tmp/exo-fp/ws/notes"}), turn, tools)
    assert not again.grounded and "asked for no change" in again.reason
    two = [
        ChatMessage("user", "Delete a.txt and b.txt"),
        ChatMessage("assistant", "", tool_calls=(ToolCall("c0", "delete_file", {"path": "a.txt"}),)),
        ChatMessage("tool", "deleted /ws/a.txt", tool_call_id="c0"),
    ]
    assert call_grounding(ToolCall("c1", "delete_file", {"path": "b.txt"}), two, tools).grounded
    assert not call_grounding(ToolCall("c1", "delete_file", {"path": "/ws/a.txt"}), two, tools).grounded


def test_files_called_reads_the_names_a_message_calls_files() -> None:
    assert files_called("Delete the file called notes.") == {"notes"}
    assert files_called('Open a file named "Makefile" and the todo.txt file') == {"makefile", "todo.txt"}
    assert files_called("Please file notes on the meeting") == set()
    assert files_called("Delete the file notes") == set()


def test_after_a_result_the_reason_to_act_must_still_come_from_the_person() -> None:
    read = ToolCall("c0", "read_file", {"path": "todo.txt"})
    turn = [
        ChatMessage("user", "Read the file todo.txt"),
        ChatMessage("assistant", "", tool_calls=(read,)),
        ChatMessage("tool", "buy milk\ncall the plumber", tool_call_id="c0"),
    ]
    echo = call_grounding(ToolCall("c1", "bash", {"command": "echo 'buy milk' && call the plumber"}), turn)
    assert not echo.grounded and "refers to anything" in echo.reason
    again = call_grounding(ToolCall("c1", "read_file", {"path": "todo.txt"}), turn)
    assert not again.grounded and "already made" in again.reason


def _exod_tools() -> list[dict]:
    from exo_core.tools import builtin_tools

    return [spec.to_model() for spec in builtin_tools().specs()]


def _after_reading(said: str, content: str) -> list[ChatMessage]:
    read = ToolCall("c0", "read_file", {"path": "todo.txt"})
    return [
        ChatMessage("user", said),
        ChatMessage("assistant", "", tool_calls=(read,)),
        ChatMessage("tool", content, tool_call_id="c0"),
    ]


TODO = "buy oat milk\ncall the plumber\nreturn the library books\n"


@pytest.mark.parametrize(
    ("said", "old", "new"),
    [
        ("Read the file todo.txt and tell me the first item on it.", "buy oat milk", "buy oat milk (done)"),
        ("Open todo.txt: what should I return?", "return the library books", "returned the library books"),
    ],
)
def test_a_question_about_a_file_read_is_answered_not_turned_into_an_edit(said: str, old: str, new: str) -> None:
    edit = ToolCall("c1", "edit_file", {"path": "todo.txt", "old": old, "new": new})
    verdict = call_grounding(edit, _after_reading(said, TODO), _exod_tools())
    assert not verdict.grounded and "asked for no change" in verdict.reason


@pytest.mark.parametrize(
    ("said", "call"),
    [
        (
            "Open todo.txt and add 'water the plants' to it.",
            ToolCall("c1", "write_file", {"path": "todo.txt", "content": TODO + "water the plants\n"}),
        ),
        (
            "Read todo.txt, then replace oat milk with soy milk.",
            ToolCall("c1", "edit_file", {"path": "todo.txt", "old": "oat milk", "new": "soy milk"}),
        ),
        ("Read todo.txt and delete it.", ToolCall("c1", "delete_file", {"path": "todo.txt"})),
    ],
)
def test_a_change_the_person_asked_for_after_a_read_is_grounded(said: str, call: ToolCall) -> None:
    assert call_grounding(call, _after_reading(said, TODO), _exod_tools()).grounded


@pytest.mark.parametrize(
    ("said", "call"),
    [
        ("Please delete my notes file, notes.txt.", ToolCall("c", "delete_file", {"path": "notes.txt"})),
        ("Delete the file old.log.", ToolCall("c", "delete_file", {"path": "old.log"})),
        ("Run the tests with pytest.", ToolCall("c", "bash", {"command": "pytest"})),
        (
            "Write 'buy milk' to the file todo.txt.",
            ToolCall("c", "write_file", {"path": "todo.txt", "content": "buy milk"}),
        ),
        ("Create a file hello.txt that says hi.", ToolCall("c", "write_file", {"path": "hello.txt", "content": "hi"})),
    ],
)
def test_a_change_asked_for_in_the_first_round_is_grounded(said: str, call: ToolCall) -> None:
    # the exod tool benchmark's requests that should act (benchmarks/bench_exod_tools.py), with exod's real tools
    assert call_grounding(call, [ChatMessage("user", said)], _exod_tools()).grounded
