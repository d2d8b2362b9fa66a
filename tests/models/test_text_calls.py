"""Tool calls left in an OpenAI-compatible server's text (``<tool_call>`` blocks) are split out, however streamed."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from exo_core.seams.failures import ProviderError
from exo_edge.hosted.text_calls import TextCallFilter


def _run(pieces: list[str], names: frozenset[str] = frozenset()) -> tuple[str, list[tuple[str, dict]]]:
    f = TextCallFilter("laptop", names)
    shown = "".join(f.feed(p) for p in pieces) + f.finish()
    return shown, [(c.name, c.arguments) for c in f.calls]


def _split(text: str, cuts: list[int]) -> list[str]:
    points = sorted({c % (len(text) + 1) for c in cuts})
    edges = [0, *points, len(text)]
    return [text[a:b] for a, b in zip(edges, edges[1:])]


CALL = '<tool_call>\n{"name": "read_file", "arguments": {"path": "notes.txt"}}\n</tool_call>'


def test_a_whole_call_becomes_a_call_and_no_text() -> None:
    assert _run([CALL]) == ("", [("read_file", {"path": "notes.txt"})])


def test_plain_text_passes_with_its_inner_white_space() -> None:
    assert _run(["The capital", " of France is", " Paris.\n"]) == ("The capital of France is Paris.\n", [])


def test_text_before_a_call_is_kept_and_arguments_as_a_string_are_parsed() -> None:
    shown, calls = _run(['Let me look. <tool_call>{"name": "t", "arguments": "{\\"a\\": 1}"}</tool_call>\n'])
    assert shown == "Let me look." and calls == [("t", {"a": 1})]


def test_a_call_left_open_at_the_end_is_parsed() -> None:
    assert _run(['<tool_call>\n{"name": "t", "arguments": {}}\n']) == ("", [("t", {})])


@pytest.mark.parametrize(
    "bad",
    ["<tool_call>not json</tool_call>", '<tool_call>{"arguments": {}}</tool_call>', '<tool_call>["t"]'],
)
def test_a_broken_call_is_a_typed_error_naming_it(bad: str) -> None:
    with pytest.raises(ProviderError) as info:
        _run([bad])
    assert "laptop" in str(info.value) and "tool call" in str(info.value)


OFFERED = frozenset({"read_file", "t"})
FENCED = '```json\n{\n  "name": "read_file",\n  "arguments": {\n    "path": "notes.txt"\n  }\n}\n```'


@pytest.mark.parametrize(
    "answer", [FENCED, '{"name": "read_file", "arguments": {"path": "notes.txt"}}', FENCED.replace("```json", "```")]
)
def test_a_whole_answer_that_is_one_call_object_is_a_call(answer: str) -> None:
    """What Qwen2.5-Coder 0.5B writes on llama_cpp.server: the call as the whole answer, often fenced."""
    assert _run([answer], OFFERED) == ("", [("read_file", {"path": "notes.txt"})])
    assert _run(list(answer), OFFERED) == ("", [("read_file", {"path": "notes.txt"})])


@pytest.mark.parametrize(
    "answer",
    [
        '```python\nprint({"name": 1})\n```',
        '{"name": "not_offered", "arguments": {}}',
        '{"name": "read_file", "arguments": {}, "extra": 1}',
        '```json\n{"name": "read_file"}\n```\nThat is the call I would make.',
        '{"a": 1} is a JSON object.',
        "Sure, here it is.",
    ],
)
def test_anything_else_stays_the_text_it_is(answer: str) -> None:
    assert _run([answer], OFFERED) == (answer, [])
    assert _run(list(answer), OFFERED) == (answer, [])


def test_prose_streams_at_once_even_with_tools_offered() -> None:
    f = TextCallFilter("laptop", OFFERED)
    assert f.feed("The") == "The" and f.feed(" capital") == " capital"  # not a call: shown at once
    g = TextCallFilter("laptop", OFFERED)
    assert g.feed("  ") == "" and g.feed("``") == "" and g.feed("`python\n") == "  ```python"


texts = st.text(alphabet=st.sampled_from(list("ab <>/_tolc\n.")), max_size=30)


@settings(max_examples=300, deadline=None)
@given(
    before=texts,
    after=texts,
    cuts=st.lists(st.integers(min_value=0, max_value=400), max_size=8),
    call=st.sampled_from([CALL, FENCED, "{", "```", "```json\n"]),
    names=st.sampled_from([frozenset(), OFFERED]),
)
def test_any_split_of_the_stream_gives_the_same_result(
    before: str, after: str, cuts: list[int], call: str, names: frozenset[str]
) -> None:
    text = before + call + after
    try:
        whole = _run([text], names)
    except ProviderError:
        with pytest.raises(ProviderError):
            _run(_split(text, cuts), names)
        return
    assert _run(_split(text, cuts), names) == whole
    # what is shown never contains a tagged call's JSON
    if call == CALL:
        assert json.dumps("notes.txt") not in whole[0] or "notes.txt" in before + after
