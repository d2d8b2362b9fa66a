"""Which offered tools the person's words name (exo_core.agent.asking), with exod's real tool list and a plugin's."""

from __future__ import annotations

from typing import Any

import pytest

from exo_core.agent.asking import AskedTools, asked_tools, leading_word, tool_verbs
from exo_core.agent.questions import AskPersonTool
from exo_core.seams.model import ChatMessage, ToolCall
from exo_core.tools import builtin_tools

# A plugin's tool: nothing in the core knows its name, only its own words say what it does.
WATER = {
    "name": "water_plants",
    "description": "Water the plants in one room of the house.",
    "parameters": {"type": "object", "properties": {"room": {"type": "string"}}, "required": ["room"]},
}


def _exod_tools() -> list[dict[str, Any]]:
    """What the agent loop offers: the built-in tools and ask_person (as bench_exod_tools builds them)."""
    registry = builtin_tools()
    registry.add(AskPersonTool(None))  # type: ignore[arg-type]  # only its spec is read
    return [spec.to_model() for spec in registry.specs()]


def _asked(said: str, tools: list[dict[str, Any]] | None = None) -> AskedTools:
    offered = _exod_tools() if tools is None else tools
    return asked_tools([ChatMessage("system", "You are Exo."), ChatMessage("user", said)], offered)


def test_a_tools_verbs_are_its_names_words_and_its_descriptions_first_less_what_readers_share() -> None:
    tools = _exod_tools()
    assert tool_verbs("delete_file", tools) == {"delete"}  # "file" is read_file's too: it names no tool
    assert tool_verbs("bash", tools) == {"bash", "run"}
    assert tool_verbs("write_file", tools) == {"write", "create"}
    assert tool_verbs("no_such_tool", tools) == set()


@pytest.mark.parametrize(
    ("said", "lead"),
    [
        ("Delete the draft.", "delete"),
        ("Please run git log", "run"),
        ("OK, now create a file called a.txt", "create"),
        ("Could you please read x.md?", "read"),
        ("What is the capital of Peru?", "what"),
        ("Can I run a marathon without training?", "can"),
        ("please", None),
        ("", None),
    ],
)
def test_the_leading_word_comes_after_courtesies_and_a_can_you(said: str, lead: str | None) -> None:
    assert leading_word(said) == lead


def test_a_verb_anywhere_names_the_tool_and_a_leading_one_bids_it() -> None:
    asked = _asked("Please delete the file draft.tmp")
    assert asked == AskedTools(named=("delete_file",), bidden=("delete_file",))
    later = _asked("Look at draft.tmp, then delete it")
    assert later == AskedTools(named=("delete_file",), bidden=())


@pytest.mark.parametrize(
    "said",
    [
        "What is the boiling point of water?",
        "How do I run faster?",
        "Translate 'good morning' into Spanish.",
        "Give me one tip for sleeping better.",
        "Hello!",
    ],
)
def test_questions_and_chat_bid_no_tool(said: str) -> None:
    assert _asked(said).bidden == ()


def test_a_plugins_tool_is_named_by_its_own_words_like_a_builtin() -> None:
    tools = [*_exod_tools(), WATER]
    assert _asked("Water the plants in the kitchen.", tools) == AskedTools(("water_plants",), ("water_plants",))
    assert _asked("Water the plants in the kitchen.").bidden == ()  # not offered: nothing to bid


def test_once_the_turn_has_acted_the_imperative_is_served() -> None:
    call = ToolCall("c1", "delete_file", {"path": "draft.tmp"})
    messages = [
        ChatMessage("user", "Delete draft.tmp"),
        ChatMessage("assistant", "", tool_calls=(call,)),
        ChatMessage("tool", "deleted", tool_call_id="c1"),
    ]
    asked = asked_tools(messages, _exod_tools())
    assert asked.bidden == ()
    assert asked.named == ("delete_file",)  # a candidate still (the judge turns a repeat down)


def test_no_message_from_the_person_names_nothing() -> None:
    assert asked_tools([ChatMessage("system", "You are Exo.")], _exod_tools()) == AskedTools()
