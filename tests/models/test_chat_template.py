"""Native tool calls for chat-template models, without a model: rendering, parsing, the call grammar.

The template is Qwen2.5's own (tests/fixtures/qwen2.5-chat-template.jinja, read
out of the GGUF's metadata), rendered by llama-cpp-python's sandboxed renderer.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from exo_core.seams.model import ChatMessage, ToolCall
from exo_edge.chat_template import (
    ChatTemplate,
    MalformedToolCall,
    native_call_grammar,
    parse_native_calls,
    template_messages,
    template_tools,
)

QWEN = (Path(__file__).resolve().parents[1] / "fixtures" / "qwen2.5-chat-template.jinja").read_text(encoding="utf-8")
READ = {
    "name": "read_file",
    "description": "Read a UTF-8 text file.",
    "parameters": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
}
BASH = {
    "name": "bash",
    "description": "Run a bash command.",
    "parameters": {
        "type": "object",
        "properties": {"command": {"type": "string"}, "timeout": {"type": "integer"}},
        "required": ["command"],
    },
}
TOOLS = (READ, BASH)


def _qwen() -> ChatTemplate:
    template = ChatTemplate.from_metadata({"tokenizer.chat_template": QWEN}, {"eos": "<|im_end|>"})
    assert template is not None
    return template


def test_a_template_with_tool_call_tags_is_native_and_one_without_is_not() -> None:
    assert _qwen().native
    plain = ChatTemplate.from_metadata({"tokenizer.chat_template": "{{ messages[0]['content'] }}"}, {})
    assert plain is not None and not plain.native
    assert ChatTemplate.from_metadata({}, {}) is None


def test_messages_carry_calls_as_tool_calls_and_results_in_the_tool_role() -> None:
    call = ToolCall("call_0", "read_file", {"path": "todo.txt"})
    out = template_messages(
        [
            ChatMessage("system", "base prompt"),
            ChatMessage("system", "the pack"),
            ChatMessage("user", "Read todo.txt"),
            ChatMessage("assistant", "", tool_calls=(call,)),
            ChatMessage("tool", "buy milk", tool_call_id="call_0"),
        ]
    )
    assert [m["role"] for m in out] == ["system", "user", "assistant", "tool"]
    assert out[0]["content"] == "base prompt\n\nthe pack"  # one system turn: templates read messages[0]
    assert out[2]["tool_calls"][0]["function"] == {"name": "read_file", "arguments": {"path": "todo.txt"}}
    assert out[3] == {"role": "tool", "content": "buy milk", "tool_call_id": "call_0"}
    assert template_tools([READ])[0] == {"type": "function", "function": READ}


def test_qwen_sees_its_tools_its_calls_and_their_results_in_its_own_format() -> None:
    pytest.importorskip("llama_cpp", reason="llama-cpp-python renders chat templates (scripts/install_edge.sh)")
    call = ToolCall("call_0", "read_file", {"path": "todo.txt"})
    prompt = _qwen().render(
        [
            ChatMessage("system", "You are Exo."),
            ChatMessage("user", "Read todo.txt"),
            ChatMessage("assistant", "", tool_calls=(call,)),
            ChatMessage("tool", "buy milk", tool_call_id="call_0"),
        ],
        TOOLS,
    )
    assert prompt.startswith("<|im_start|>system\nYou are Exo.\n\n# Tools")
    assert json.dumps(template_tools([READ])[0], ensure_ascii=False) in prompt
    assert '<tool_call>\n{"name": "read_file", "arguments": {"path": "todo.txt"}}\n</tool_call>' in prompt
    assert "<|im_start|>user\n<tool_response>\nbuy milk\n</tool_response><|im_end|>" in prompt
    assert prompt.endswith("<|im_start|>assistant\n")
    # what the model wrote comes back as the same call
    written = prompt.split("<|im_start|>assistant\n", 1)[1].split("<|im_end|>", 1)[0]
    assert parse_native_calls(written, TOOLS) == (call,)
    # no tools offered: the template's plain system turn
    assert "# Tools" not in _qwen().render([ChatMessage("user", "hi")])


def test_a_template_that_refuses_the_conversation_is_a_typed_error() -> None:
    pytest.importorskip("llama_cpp", reason="llama-cpp-python renders chat templates (scripts/install_edge.sh)")
    from exo_core.seams.failures import ProviderError

    strict = ChatTemplate.from_metadata(
        {"tokenizer.chat_template": "{{ raise_exception('roles must alternate') }}"}, {}
    )
    assert strict is not None
    with pytest.raises(ProviderError, match="roles must alternate"):
        strict.render([ChatMessage("user", "hi")])


@pytest.mark.parametrize(
    ("text", "want"),
    [
        ('<tool_call>\n{"name": "bash", "arguments": {"command": "ls"}}\n</tool_call>', ("bash", {"command": "ls"})),
        ('<tool_call>{"name": "bash", "arguments": "{\\"command\\": \\"ls\\"}"}', ("bash", {"command": "ls"})),
        (
            '<tool_call>\n```json\n{"name": "read_file", "parameters": {"path": "a"}}\n```\n',
            ("read_file", {"path": "a"}),
        ),
        ('<tool_call>{"name": "bash", "arguments": null}</tool_call>', ("bash", {})),
    ],
)
def test_calls_parse_closing_tag_or_not_arguments_as_object_or_string(text: str, want: tuple[str, dict]) -> None:
    (call,) = parse_native_calls(text, TOOLS)
    assert (call.name, call.arguments) == want


def test_plain_text_has_no_call_and_two_blocks_are_two_calls() -> None:
    assert parse_native_calls("Paris is the capital of France.", TOOLS) == ()
    two = parse_native_calls(
        '<tool_call>{"name": "bash", "arguments": {"command": "ls"}}</tool_call>\n'
        '<tool_call>{"name": "read_file", "arguments": {"path": "x"}}</tool_call>',
        TOOLS,
    )
    assert [(c.id, c.name) for c in two] == [("call_0", "bash"), ("call_1", "read_file")]


@pytest.mark.parametrize(
    ("text", "names"),
    [
        ("<tool_call>read the file please</tool_call>", "not JSON"),
        ('<tool_call>{"arguments": {}}</tool_call>', "names no tool"),
        ('<tool_call>{"name": "rm_rf", "arguments": {}}</tool_call>', "not among the offered tools"),
        ('<tool_call>{"name": "bash", "arguments": "{oops"}</tool_call>', "not JSON"),
        ('<tool_call>{"name": "bash", "arguments": [1]}</tool_call>', "not an object"),
    ],
)
def test_garbage_after_the_opening_tag_is_a_typed_error_that_quotes_it(text: str, names: str) -> None:
    with pytest.raises(MalformedToolCall, match=names) as info:
        parse_native_calls(text, TOOLS)
    assert info.value.code == "bad_tool_call" and info.value.text


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.text(max_size=300))
def test_any_text_is_either_calls_or_a_typed_error(text: str) -> None:
    for candidate in (text, "<tool_call>" + text):
        try:
            calls = parse_native_calls(candidate, TOOLS)
        except MalformedToolCall:
            continue
        assert all(isinstance(c, ToolCall) and isinstance(c.arguments, dict) for c in calls)


_ARGS = st.dictionaries(
    st.text(min_size=1, max_size=12),
    st.one_of(st.text(max_size=40), st.integers(), st.booleans(), st.none(), st.lists(st.integers(), max_size=3)),
    max_size=4,
)


@settings(max_examples=150, deadline=None)
@given(_ARGS)
@example({"command": "</tool_call>"})  # found by Hypothesis: the first closing tag is not the block's end
def test_a_rendered_call_parses_back_to_itself(arguments: dict) -> None:
    pytest.importorskip("llama_cpp", reason="llama-cpp-python renders chat templates (scripts/install_edge.sh)")
    call = ToolCall("call_0", "bash", arguments)
    prompt = _qwen().render([ChatMessage("user", "go"), ChatMessage("assistant", "", tool_calls=(call,))], TOOLS)
    written = prompt.split("<|im_start|>assistant", 1)[1].split("<|im_end|>", 1)[0]
    assert parse_native_calls(written, TOOLS) == (call,)


def test_the_call_grammar_compiles_and_names_only_offered_tools() -> None:
    llama_cpp = pytest.importorskip("llama_cpp", reason="llama-cpp-python compiles grammars (scripts/install_edge.sh)")
    for choice in ("auto", "required", "bash"):
        text = native_call_grammar(TOOLS, choice)
        assert llama_cpp.LlamaGrammar.from_string(text, verbose=False) is not None
        assert '\\"bash\\"' in text
    assert '\\"read_file\\"' not in native_call_grammar(TOOLS, "bash")
    with pytest.raises(ValueError, match="not among the offered tools"):
        native_call_grammar(TOOLS, "nosuch")


def test_an_argument_holding_the_closing_tag_parses_whole() -> None:
    """A file's content may say ``</tool_call>``: the call's JSON is read whole, not cut at the first tag."""
    body = '{"name": "bash", "arguments": {"command": "echo \'</tool_call>\' > tags.txt"}}'
    calls = parse_native_calls(f"<tool_call>\n{body}\n</tool_call>\n<tool_call>\n{body}\n</tool_call>", TOOLS)
    assert [c.arguments for c in calls] == [{"command": "echo '</tool_call>' > tags.txt"}] * 2
    assert [c.id for c in calls] == ["call_0", "call_1"]
    fenced = parse_native_calls(f"<tool_call>\n```json\n{body}\n```\n</tool_call>", TOOLS)
    assert fenced[0].arguments == {"command": "echo '</tool_call>' > tags.txt"}


def test_a_later_system_message_stays_in_place_for_qwen_and_joins_the_next_question_elsewhere() -> None:
    pytest.importorskip("llama_cpp", reason="llama-cpp-python renders chat templates (scripts/install_edge.sh)")
    qwen = _qwen()
    assert qwen.later_system  # Qwen's template renders a system message after the first as a turn of its own
    head = ChatMessage("system", "You are Exo.\n\nthe pack")
    notes = ChatMessage("system", "## Recalled\nthe sister lives in Porto")
    first = qwen.render([head, notes, ChatMessage("user", "Where does my sister live?")], TOOLS)
    later = qwen.render(
        [
            head,
            ChatMessage("user", "Where does my sister live?"),
            ChatMessage("assistant", "In Porto."),
            ChatMessage("system", "## Recalled\nthe cat is called Pepper"),
            ChatMessage("user", "And my cat?"),
        ],
        TOOLS,
    )
    fixed = qwen.render([head], TOOLS).rsplit("<|im_start|>assistant", 1)[0]
    # the tools come right after the base prompt and pack, so both prompts open with the same head
    assert first.startswith(fixed) and later.startswith(fixed) and "# Tools" in fixed
    assert "the sister lives in Porto" not in fixed
    assert "<|im_start|>system\n## Recalled\nthe cat is called Pepper<|im_end|>\n<|im_start|>user\nAnd my cat?" in later
    # a template that reads only messages[0]: leading system messages merge, a later one opens the next question
    plain = ChatTemplate.from_metadata({"tokenizer.chat_template": "{{ messages[0]['content'] }}"}, {})
    assert plain is not None and not plain.later_system
    out = template_messages(
        [head, ChatMessage("user", "hi"), ChatMessage("assistant", "hello"), notes, ChatMessage("user", "sister?")],
        later_system=False,
    )
    assert [m["role"] for m in out] == ["system", "user", "assistant", "user"]
    assert out[3]["content"] == "## Recalled\nthe sister lives in Porto\n\nsister?"


def test_the_grammar_path_folds_system_messages_for_templates_that_take_one() -> None:
    from exo_edge.prompting import chat_messages

    out = chat_messages(
        [
            ChatMessage("system", "base"),
            ChatMessage("system", "## Recalled\nsister: Porto"),
            ChatMessage("user", "Where does my sister live?"),
            ChatMessage("assistant", "In Porto."),
            ChatMessage("system", "## Recalled\ncat: Pepper"),
            ChatMessage("user", "And my cat?"),
        ]
    )
    assert [m["role"] for m in out] == ["system", "user", "assistant", "user"]
    assert out[0]["content"] == "base\n\n## Recalled\nsister: Porto"
    assert out[3]["content"] == "## Recalled\ncat: Pepper\n\nAnd my cat?"
