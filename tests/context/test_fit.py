"""Fitting one input to a model's window: the trimming order, pairing, the current message, the exact re-check."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import replace

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from exo_core.context.fit import ContextWindowTooSmallError, Draft, draft_texts, draft_tokens, fit, render
from exo_core.context.window import answer_room, fit_input, fit_request
from exo_core.seams.model import ChatMessage, ContextWindow, ModelRequest, ToolCall


def words(text: str) -> int:
    """The tests' tokenizer: one token per word (a real tokenizer is exercised in test_window_model.py)."""
    return len(text.split())


def counts(draft: Draft) -> dict[str, int]:
    return {t: words(t) for t in draft_texts(draft)}


class WordCounter:
    """Counts words; ``measure`` adds ``extra`` so the parts do not add up to the whole (as with a real template)."""

    def __init__(self, extra: int = 0) -> None:
        self.extra = extra
        self.measured: list[int] = []

    async def count(self, texts: Sequence[str]) -> list[int]:
        return [words(t) for t in texts]

    async def measure(self, request: ModelRequest) -> int:
        total = self.extra + 3
        for m in request.messages:
            total += words(m.content) + 4
            total += sum(words(json.dumps(c.arguments)) + 1 for c in m.tool_calls)
        total += sum(words(json.dumps(t)) for t in request.tools)
        self.measured.append(total)
        return total


def block(tag: str, n: int) -> str:
    return " ".join(f"{tag}{k}" for k in range(n))


def exchange(k: int, size: int = 20) -> list[ChatMessage]:
    return [
        ChatMessage(role="user", content=block(f"ask{k}-", size)),
        ChatMessage(role="assistant", content=block(f"answer{k}-", size)),
    ]


def sample_draft() -> Draft:
    tail: list[ChatMessage] = []
    for k in range(3):
        tail += exchange(k)
    current = len(tail)
    tail.append(ChatMessage(role="user", content=block("now", 30)))
    return Draft(
        base=block("base", 10),
        pack=block("pack", 40),
        recalled=(block("rec0-", 15), block("rec1-", 15), block("rec2-", 15)),
        recall_heading="## Recalled",
        history=(block("old0-", 25), block("old1-", 25), block("old2-", 25)),
        tail=tuple(tail),
        current=current,
    )


def state(d: Draft) -> dict[str, int]:
    """How much of each part is left, for checking the order."""
    earlier = [m for m in d.tail[: d.current] if m.role == "user"]
    return {
        "history": len(d.history),
        "exchanges": len(earlier),
        "recalled": len(d.recalled),
        "pack": words(d.pack),
        "current": words(d.tail[d.current].content),
    }


def test_a_draft_that_fits_is_left_alone() -> None:
    d = sample_draft()
    total = draft_tokens(d, counts(d), overhead=4)
    out, trimmed = fit(d, counts(d), total, overhead=4)
    assert out == d and not trimmed.any and trimmed.tokens_after == total


def test_trimming_follows_the_stated_order_as_the_room_shrinks() -> None:
    d = sample_draft()
    total = draft_tokens(d, counts(d), overhead=4)
    full = state(d)
    seen = []
    for room in range(total, 0, -3):
        try:
            out, trimmed = fit(d, counts(d), room, overhead=4)
        except ContextWindowTooSmallError:
            break
        assert draft_tokens(out, counts(out) | counts(d), overhead=4) <= room or trimmed.tokens_after <= room
        left = state(out)
        seen.append(left)
        # A later step starts only when every earlier one is exhausted.
        if left["exchanges"] < full["exchanges"]:
            assert left["history"] == 0
        if left["recalled"] < full["recalled"]:
            assert left["history"] == 0 and left["exchanges"] <= 1
        if left["exchanges"] == 0:
            assert left["recalled"] == 0
        if left["pack"] < full["pack"]:
            assert left["recalled"] == 0 and left["exchanges"] == 0 and trimmed.pack_cut
        if left["current"] < full["current"]:
            assert left["pack"] == 0 and trimmed.current_cut
        # Never the current message itself, and the base prompt whole.
        assert out.tail[out.current].role == "user" and out.tail[out.current].content.startswith("now0")
        assert out.base == d.base
    # The walk went through every step down to cutting the current message.
    assert seen[0] == full and seen[-1]["current"] < full["current"]
    assert [s["history"] for s in seen] == sorted((s["history"] for s in seen), reverse=True)


def test_history_goes_oldest_first_and_recalled_lowest_ranked_first() -> None:
    d = sample_draft()
    total = draft_tokens(d, counts(d), overhead=4)
    out, trimmed = fit(d, counts(d), total - 30, overhead=4)
    assert out.history == d.history[2:] and trimmed.history_dropped == 2
    no_history = Draft(**{**_fields(d), "history": ()})
    total = draft_tokens(no_history, counts(no_history), overhead=4)
    # Two earlier exchanges go (oldest first), the last one stays while recalled notes go.
    out, trimmed = fit(no_history, counts(no_history), total - 100, overhead=4)
    assert trimmed.exchanges_dropped == 2 and out.tail[0].content.startswith("ask2-0")
    assert out.recalled == d.recalled[:2] and trimmed.recalled_dropped == 1


def _fields(d: Draft) -> dict[str, object]:
    return {name: getattr(d, name) for name in Draft.__slots__}


def test_a_huge_tool_result_is_cut_first_keeping_its_head_and_end() -> None:
    call = ToolCall("c1", "bash", {"command": "make test"})
    output = "START " + block("line", 2000) + " FAILED: exit 2"
    tail = (
        ChatMessage(role="user", content="run the tests"),
        ChatMessage(role="assistant", content="", tool_calls=(call,)),
        ChatMessage(role="tool", content=output, tool_call_id="c1"),
    )
    d = Draft(base="base prompt", history=(block("old", 50),), tail=tail, current=0)
    out, trimmed = fit(d, counts(d), 400, overhead=4)
    result = out.tail[2].content
    assert trimmed.tool_results_cut == 1 and result.startswith("START") and result.endswith("FAILED: exit 2")
    assert "left out to fit the model's window" in result
    assert out.history == d.history  # the cut alone made room: nothing else went
    assert [m.role for m in out.tail] == ["user", "assistant", "tool"] and out.tail[1].tool_calls == (call,)


def test_an_exchange_goes_with_its_tool_calls_and_results() -> None:
    call = ToolCall("c1", "read_file", {"path": "a.txt"})
    tail = (
        ChatMessage(role="user", content=block("first", 30)),
        ChatMessage(role="assistant", content="", tool_calls=(call,)),
        ChatMessage(role="tool", content=block("file", 30), tool_call_id="c1"),
        ChatMessage(role="assistant", content=block("said", 10)),
        ChatMessage(role="user", content=block("second", 10)),
        ChatMessage(role="assistant", content=block("reply", 10)),
        ChatMessage(role="user", content="and now?"),
    )
    d = Draft(base="base", tail=tail, current=6)
    total = draft_tokens(d, counts(d), overhead=4)
    out, trimmed = fit(d, counts(d), total - 10, overhead=4)
    assert trimmed.exchanges_dropped == 1 and [m.role for m in out.tail] == ["user", "assistant", "user"]
    assert out.current == 2 and out.tail[2].content == "and now?"


def test_the_base_prompt_alone_too_big_is_a_config_error_naming_where_n_ctx_is_set() -> None:
    window = ContextWindow(n_ctx=64, counter=WordCounter(), where="[models.local] n_ctx in config.toml")
    d = Draft(base=block("base", 80), tail=(ChatMessage(role="user", content="hi"),))
    with pytest.raises(ContextWindowTooSmallError, match=r"\[models.local\] n_ctx in config.toml"):
        run(fit_input(window, d, ModelRequest(messages=())))


def test_fit_input_reserves_answer_and_tools_and_rechecks_the_whole_request() -> None:
    counter = WordCounter(extra=40)  # the template adds 40 tokens the parts do not show
    window = ContextWindow(n_ctx=512, counter=counter, message_overhead=4)
    tools = ({"name": "bash", "description": block("desc", 30), "parameters": {"type": "object"}},)
    d = sample_draft()
    fitted = run(fit_input(window, d, ModelRequest(messages=(), tools=tools, max_tokens=512)))
    assert fitted.request.max_tokens == answer_room(window, 512) == 128
    assert fitted.prompt_tokens <= 512 - 128 and fitted.prompt_tokens == counter.measured[-1]
    assert fitted.request.messages[-1].content == d.tail[-1].content
    assert fitted.request.tools == tools and fitted.trimmed.any


def test_fit_request_cuts_a_long_transcript_to_the_window() -> None:
    window = ContextWindow(n_ctx=300, counter=WordCounter())
    request = ModelRequest(
        messages=(
            ChatMessage(role="system", content="summarize this"),
            ChatMessage(role="user", content="BEGIN " + block("w", 2000) + " END"),
        ),
        max_tokens=300,
    )
    out = run(fit_request(window, request))
    assert out.messages[0].content == "summarize this"
    text = out.messages[1].content
    assert text.startswith("BEGIN") and text.endswith("END") and run(window.counter.measure(out)) <= 300 - 75
    small = ModelRequest(messages=(ChatMessage(role="user", content="hello"),), max_tokens=50)
    assert run(fit_request(window, small)) == small


def run(coro):  # type: ignore[no-untyped-def] - a tiny helper for sync property tests
    import asyncio

    return asyncio.run(coro)


@st.composite
def drafts(draw: st.DrawFn) -> Draft:
    tail: list[ChatMessage] = []
    n_ex = draw(st.integers(0, 5))
    for k in range(n_ex + 1):
        tail.append(ChatMessage(role="user", content=block(f"u{k}-", draw(st.integers(1, 60)))))
        for c in range(draw(st.integers(0, 2))):
            call = ToolCall(f"c{k}{c}", "bash", {"command": "ls"})
            tail.append(ChatMessage(role="assistant", content="", tool_calls=(call,)))
            tail.append(ChatMessage(role="tool", content=block("out", draw(st.integers(1, 400))), tool_call_id=call.id))
        if k < n_ex:
            tail.append(ChatMessage(role="assistant", content=block("a", draw(st.integers(1, 60)))))
    current = max(i for i, m in enumerate(tail) if m.role == "user")
    return Draft(
        base=block("base", draw(st.integers(1, 20))),
        pack=block("pack", draw(st.integers(0, 80))),
        recalled=tuple(block(f"r{i}-", draw(st.integers(1, 30))) for i in range(draw(st.integers(0, 4)))),
        recall_heading="## Recalled",
        history=tuple(block(f"h{i}-", draw(st.integers(1, 80))) for i in range(draw(st.integers(0, 4)))),
        tail=tuple(tail),
        current=current,
    )


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(d=drafts(), room=st.integers(20, 1500))
def test_any_fit_is_within_the_room_keeps_pairs_and_the_current_message(d: Draft, room: int) -> None:
    try:
        out, trimmed = fit(d, counts(d), room, overhead=4)
    except ContextWindowTooSmallError:
        assert words(d.base) + 8 > room or room < 200
        return
    assert trimmed.tokens_after <= room
    current = out.tail[out.current]
    assert current.role == "user" and current.content.split()[0] == d.tail[d.current].content.split()[0]
    asked = set()
    for m in out.tail:
        asked.update(c.id for c in m.tool_calls)
        if m.role == "tool":
            assert m.tool_call_id in asked  # never a result whose call was dropped
    assert out.tail[0].role == "user"
    rendered = render(out)
    assert rendered[0].role == "system" and rendered[0].content.startswith(d.base)


def test_a_turn_of_many_tool_rounds_keeps_every_call_and_the_newest_result() -> None:
    tail: list[ChatMessage] = [ChatMessage(role="user", content="fix the build")]
    for k in range(20):
        call = ToolCall(f"c{k}", "bash", {"command": f"make step{k}"})
        tail.append(ChatMessage(role="assistant", content="", tool_calls=(call,)))
        tail.append(
            ChatMessage(role="tool", content=f"BEGIN{k} " + block(f"o{k}-", 150) + f" END{k}", tool_call_id=call.id)
        )
    d = Draft(base="base prompt", tail=tuple(tail), current=0)
    out, trimmed = fit(d, counts(d), 700, overhead=4)
    assert trimmed.tokens_after <= 700 and not trimmed.current_cut
    assert [m.tool_calls for m in out.tail] == [m.tool_calls for m in d.tail]  # every call is still there
    newest = out.tail[-1].content
    assert newest.startswith("BEGIN19") and newest.endswith("END19")
    assert "left out to fit the model's window" in out.tail[2].content


def test_a_window_taken_by_the_tools_and_the_answer_says_so() -> None:
    window = ContextWindow(n_ctx=400, counter=WordCounter(), model="tiny", where="[models.local] n_ctx in config.toml")
    tools = tuple({"name": f"t{k}", "description": block("d", 40)} for k in range(8))
    d = Draft(base="base", tail=(ChatMessage(role="user", content="hi"),))
    with pytest.raises(ContextWindowTooSmallError) as info:
        run(fit_input(window, d, ModelRequest(messages=(), tools=tools, max_tokens=100)))
    message = info.value.message
    assert "tiny" in message and "(100)" in message and "[models.local] n_ctx in config.toml" in message
    assert "fewer tools" in message


def test_the_input_is_laid_out_for_reuse_fixed_head_first_this_turns_notes_last() -> None:
    call = ToolCall("c0", "read_file", {"path": "todo.txt"})
    tail = (
        ChatMessage(role="user", content="earlier question"),
        ChatMessage(role="assistant", content="earlier answer"),
        ChatMessage(role="user", content="what is on my list?"),
        ChatMessage(role="assistant", content="", tool_calls=(call,)),
        ChatMessage(role="tool", content="buy milk", tool_call_id="c0"),
    )
    d = Draft(
        base="base prompt",
        pack="the pack",
        recalled=("[people/sister] lives in Porto",),
        recall_heading="## Recalled",
        history=("[summary] they talked",),
        tail=tail,
        current=2,
    )
    out = render(d)
    assert out[0] == ChatMessage(role="system", content="base prompt\n\nthe pack")  # the same on every turn
    assert out[1].role == "system" and "[summary] they talked" in out[1].content
    assert out[2:4] == list(tail[:2])
    assert out[4] == ChatMessage(role="system", content="## Recalled\n[people/sister] lives in Porto")
    assert out[5:] == list(tail[2:])  # the current turn, its call and result after this turn's notes
    # another message's notes change nothing before the conversation
    other = render(replace(d, recalled=("[self/pet] a grey cat",)))
    assert other[:4] == out[:4] and other[4] != out[4]
    # the earlier layout: everything but the tail in one system message
    old = render(replace(d, layout="system"))
    assert old[0].role == "system" and "lives in Porto" in old[0].content and old[1:] == list(tail)


def test_the_token_count_follows_the_layout() -> None:
    d = sample_draft()
    counted = counts(d)
    reuse = draft_tokens(d, counted, overhead=4)
    one_system = draft_tokens(replace(d, layout="system"), counted, overhead=4)
    assert reuse == one_system + 4 * (bool(d.recalled) + bool(d.history))  # each its own message
