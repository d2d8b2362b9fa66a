"""A call written out as text (docs/models.md, "Text or a tool call"; exo_edge/written_calls.py; exo_edge/chat_run.py step 6), without a model.

Qwen2.5-Coder 0.5B, answering after a tool's result with the call openers
banned at the first position, wrote ``({"name": "ask_person", ...})`` as its
text. The chat path holds back any answer whose start is call-shaped and reads
the call it spells; these tests pin down what counts as either.
"""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from exo_core.seams.model import ChatMessage, ToolCall
from exo_edge.written_calls import call_shaped, calls_as_notes, written_call

READ = {
    "name": "read_file",
    "description": "Read a UTF-8 text file.",
    "parameters": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
}
ASK = {
    "name": "ask_person",
    "description": "Ask the person a question.",
    "parameters": {"type": "object", "properties": {"question": {"type": "string"}}, "required": ["question"]},
}
TOOLS = [READ, ASK]


@pytest.mark.parametrize(
    "start",
    [
        '{"name"',
        '({"name": "ask_person"',
        '[{"',
        '  \n{"',
        "```json\n{",
        "```\n{",
        "<tool_call>",
        '"{"',
        "**{",
        '>{"name"',
        "-> {",
        "\u2192 <tool_call>",
    ],
)
def test_a_call_behind_brackets_quotes_or_a_fence_is_call_shaped(start: str) -> None:
    assert call_shaped(start) is True


@pytest.mark.parametrize(
    "start",
    [
        "The first item",
        "(The first item",
        "Paris.",
        "- buy oat milk",
        "```python\nprint",
        "I can't",
        '"Paris"',
        "56",
        "<b>Paris",
        "> quoted",
    ],
)
def test_prose_is_told_apart_at_its_first_letter(start: str) -> None:
    assert call_shaped(start) is False


@pytest.mark.parametrize("start", ["", " ", "(", "``", "```", "```js", "<tool", "```json"])
def test_a_start_too_short_to_tell_waits(start: str) -> None:
    assert call_shaped(start) is None


def test_the_models_wrapped_call_is_read_as_the_call_it_spells() -> None:
    text = '({"name": "ask_person", "arguments": {"question": "What is the name of the oat milk?"}})'
    call = written_call(text, TOOLS)
    assert call is not None
    assert call.name == "ask_person"
    assert call.arguments == {"question": "What is the name of the oat milk?"}


def test_a_tagged_or_fenced_call_is_read_too() -> None:
    tagged = written_call('<tool_call>\n{"name": "read_file", "arguments": {"path": "todo.txt"}}\n</tool_call>', TOOLS)
    fenced = written_call('```json\n{"name": "read_file", "arguments": {"path": "todo.txt"}}\n```', TOOLS)
    assert tagged is not None and tagged.arguments == {"path": "todo.txt"}
    assert fenced is not None and fenced.arguments == {"path": "todo.txt"}


@pytest.mark.parametrize(
    "text",
    [
        '{"answer": "oat milk"}',  # JSON, but no tool
        '{"name": "delete_everything", "arguments": {}}',  # a tool nobody offered
        '{"name": "read_file", "arguments": "not json"}',
        '({"name": "read_file", "arguments": {"path": ',  # cut at max_tokens
        "[1, 2, 3]",
        "{",
    ],
)
def test_text_that_spells_no_offered_call_is_no_call(text: str) -> None:
    assert written_call(text, TOOLS) is None


@given(st.text(max_size=200))
def test_any_text_is_a_call_or_none_and_never_an_error(text: str) -> None:
    shaped = call_shaped(text)
    assert shaped in (True, False, None)
    call = written_call(text, TOOLS)
    assert call is None or call.name in ("read_file", "ask_person")


def test_calls_are_told_in_words_for_the_prompt_without_tools() -> None:
    read = ToolCall(id="call_0", name="read_file", arguments={"path": "todo.txt"})
    messages = [
        ChatMessage("system", "You are Exo."),
        ChatMessage("user", "Read the file todo.txt and tell me the first item on it."),
        ChatMessage("assistant", "", tool_calls=(read,)),
        ChatMessage("tool", "buy oat milk\ncall the plumber", tool_call_id="call_0"),
    ]
    told = calls_as_notes(messages)
    assert [m.role for m in told] == ["system", "user"]
    assert not any(m.tool_calls for m in told)
    assert told[1].content == (
        "Read the file todo.txt and tell me the first item on it.\n\n"
        "What read_file(path='todo.txt') returned:\nbuy oat milk\ncall the plumber"
    )
    # a result whose call is unknown, after an assistant's words, is still told, as its own message
    lone = calls_as_notes([ChatMessage("assistant", "Let me look."), ChatMessage("tool", "42", tool_call_id="x")])
    assert [(m.role, m.content) for m in lone] == [("assistant", "Let me look."), ("user", "What a tool returned:\n42")]
