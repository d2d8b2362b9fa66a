"""The local GGUF transport with the real Gemma 3 270M model (skipped when not fetched).

Fetch once per machine with ``exo models fetch``; tests find the file in
``$EXO_MODELS_DIR`` or the shared cache ``~/.cache/exo/models``.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

from exo_core.agent.grounding import Grounding
from exo_core.errors import ClosedResourceError
from exo_core.models import FailureKind, ModelRouter, ProviderError, load_catalog
from exo_core.seams.model import (
    INTERRUPTED_MARK,
    ChatMessage,
    Finish,
    ModelChunk,
    ModelRequest,
    TextDelta,
    ToolCall,
    ToolCallChunk,
    UsageChunk,
)
from exo_edge.answer_tidy import tidy_answer
from exo_edge.hosted import HostedTransports
from exo_edge.llama_transport import LlamaSettings, LlamaTransport
from exo_edge.manifest import PromptFormat, find_manifest
from exo_edge.paths import locate_model_file

from .fake_provider import FakeClock

PACK = (
    "Notes about the person:\n- Name: Ana Ruiz. Lives in Lisbon.\n"
    "- Works as a nurse at Santa Maria hospital.\n- Has a dog called Biscuit.\n"
    "- Prefers tea over coffee."
)
TIMER = {
    "name": "set_timer",
    "description": "Start a kitchen timer",
    "parameters": {"type": "object", "properties": {"minutes": {"type": "integer"}}, "required": ["minutes"]},
}


def _model_path() -> Path:
    try:
        import llama_cpp  # noqa: F401
    except ImportError:
        pytest.skip("llama-cpp-python is not installed (run scripts/install_edge.sh)")
    manifest = find_manifest("gemma-3-270m")
    path = locate_model_file(manifest.primary_file.name)
    if path is None:
        pytest.skip("the local model is not fetched on this machine (run `exo models fetch`)")
    return path


@pytest.fixture(scope="module")
def settings() -> LlamaSettings:
    manifest = find_manifest("gemma-3-270m")
    assert manifest.prompt is not None
    return LlamaSettings(model_path=_model_path(), prompt=manifest.prompt, n_ctx=1024, n_threads=2, name=manifest.name)


@pytest.fixture(scope="module")
def transport(settings: LlamaSettings) -> Iterator[LlamaTransport]:
    t = LlamaTransport(settings)
    yield t
    asyncio.run(t.aclose())


def ask(question: str, **kw: object) -> ModelRequest:
    return ModelRequest(
        messages=(ChatMessage("system", PACK), ChatMessage("user", question)),
        temperature=0.0,
        max_tokens=int(kw.pop("max_tokens", 32)),
        **kw,
    )  # type: ignore[arg-type]


def text_of(chunks: list[ModelChunk]) -> str:
    return "".join(c.text for c in chunks if isinstance(c, TextDelta))


@pytest.mark.model
async def test_streams_an_answer_from_the_pack(transport: LlamaTransport) -> None:
    assert not transport.loaded  # lazy: nothing loaded before the first call
    ticks = 0

    async def ticker() -> None:
        nonlocal ticks
        while True:
            await asyncio.sleep(0.005)
            ticks += 1

    tick_task = asyncio.create_task(ticker())
    chunks = [c async for c in transport.stream(ask("What is the dog called?"))]
    tick_task.cancel()
    assert "Biscuit" in text_of(chunks)
    assert ticks > 3  # the event loop kept running while the model loaded and decoded
    usage = [c for c in chunks if isinstance(c, UsageChunk)]
    assert len(usage) == 1 and usage[0].input_tokens > 50 and usage[0].cost == 0.0
    assert isinstance(chunks[-1], Finish) and chunks[-1].reason == "end"
    mem = transport.memory()
    assert mem["rss_after_load"] > mem["model_file"] // 2


@pytest.mark.model
async def test_unchanged_prefix_is_reused(transport: LlamaTransport) -> None:
    [c async for c in transport.stream(ask("Where does Ana live?"))]
    chunks = [c async for c in transport.stream(ask("What does Ana drink?"))]
    (usage,) = [c for c in chunks if isinstance(c, UsageChunk)]
    assert transport.last is not None
    assert transport.last.reused_tokens > 50  # preamble + pack kept in the KV cache
    assert usage.cache_read_tokens == transport.last.reused_tokens
    assert text_of(chunks).strip()  # what it answers is the quality benchmark's business


@pytest.mark.model
async def test_tool_call_under_grammar_parses_and_runs(transport: LlamaTransport) -> None:
    chunks = [
        c
        async for c in transport.stream(
            ask("Set a timer for 5 minutes.", tools=(TIMER,), tool_choice="required", max_tokens=48)
        )
    ]
    (call,) = [c.call for c in chunks if isinstance(c, ToolCallChunk)]
    assert call.name == "set_timer" and isinstance(call.arguments["minutes"], int)
    assert isinstance(chunks[-1], Finish) and chunks[-1].reason == "tool_calls"

    timers: list[int] = []

    def set_timer(minutes: int) -> str:  # the "tool" the call runs
        timers.append(minutes)
        return f"timer set for {minutes} minutes"

    result = set_timer(**call.arguments)
    assert timers == [call.arguments["minutes"]]
    # with the tools still offered, the model then answers in text from the result
    follow = ModelRequest(
        messages=(
            ChatMessage("system", PACK),
            ChatMessage("user", "Set a timer for 5 minutes."),
            ChatMessage("assistant", "", tool_calls=(call,)),
            ChatMessage("tool", result, tool_call_id=call.id),
        ),
        tools=(TIMER,),
        temperature=0.0,
        max_tokens=24,
    )
    answer = [c async for c in transport.stream(follow)]
    assert not [c for c in answer if isinstance(c, ToolCallChunk)]
    assert text_of(answer).strip()


@pytest.mark.model
async def test_grammar_decoding_matches_the_whole_vocabulary_sampler(transport: LlamaTransport) -> None:
    """The top-k-first decoder picks what llama-cpp-python's chain picks with the grammar over every token."""
    import threading

    import llama_cpp

    from exo_edge.grammar_decode import greedy_under_grammar
    from exo_edge.prompting import CALL_PREFIX, call_grammar, render_completion

    assert transport.settings.prompt is not None
    shell = {
        "name": "bash",
        "description": "Run a shell command",
        "parameters": {"type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]},
    }
    for question, tools in (
        ("Set a timer for 12 minutes.", (TIMER,)),
        ("Please delete my notes file, notes.txt.", (TIMER, shell)),
    ):
        grammar = call_grammar(tools, "required")
        req = ask(question, tools=tools)
        prompt = render_completion(req.messages, transport.settings.prompt, tools)

        def both(llm: object) -> tuple[str, str]:
            tokens = llm.tokenize(prompt.encode(), add_bos=True, special=False)  # type: ignore[attr-defined]
            tokens += llm.tokenize(b" " + CALL_PREFIX.rstrip().encode(), add_bos=False, special=False)  # type: ignore[attr-defined]
            ours = greedy_under_grammar(llm, tokens, grammar, max_tokens=48, cancel=threading.Event())
            chain = llm.create_completion(
                tokens,
                max_tokens=48,
                temperature=0.0,  # type: ignore[attr-defined]
                grammar=llama_cpp.LlamaGrammar.from_string(grammar, verbose=False),
            )
            return ours["text"], chain["choices"][0]["text"]

        ours, chain = await transport.run_exclusive(both)
        assert ours == chain and ours.lstrip().startswith("{"), (ours, chain)
    with pytest.raises(ProviderError) as bad:
        await transport.run_exclusive(
            lambda llm: greedy_under_grammar(llm, [2, 100], "root ::= (", max_tokens=4, cancel=threading.Event())
        )
    assert bad.value.kind == FailureKind.BAD_REQUEST


@pytest.mark.model
async def test_auto_tool_choice_calls_or_answers(transport: LlamaTransport) -> None:
    # the model decides: a request for the tool becomes a call, a question stays text
    call_chunks = [c async for c in transport.stream(ask("Set a timer for 5 minutes.", tools=(TIMER,), max_tokens=48))]
    (call,) = [c.call for c in call_chunks if isinstance(c, ToolCallChunk)]
    assert call.name == "set_timer"
    text_chunks = [c async for c in transport.stream(ask("What is the dog called?", tools=(TIMER,), max_tokens=16))]
    assert not [c for c in text_chunks if isinstance(c, ToolCallChunk)]
    assert text_of(text_chunks).strip()
    assert isinstance(text_chunks[-1], Finish) and text_chunks[-1].reason == "end"


@pytest.mark.model
async def test_a_call_the_judge_turns_down_becomes_words(settings: LlamaSettings) -> None:
    # The same request as above opens the same call; a judge that turns it down (through the transport's
    # own seam) leaves the person words from the prompt without tools, as on the chat path.
    seen: list[ToolCall] = []

    def refuse(call: ToolCall, messages: Sequence[ChatMessage], tools: Sequence[Mapping[str, Any]]) -> Grounding:
        seen.append(call)
        return Grounding(False, "turned down for the test")

    judged = LlamaTransport(settings, judge=refuse)
    try:
        request = ask("Set a timer for 5 minutes.", tools=(TIMER,), max_tokens=48)
        chunks = [c async for c in judged.stream(request)]
        required = [c async for c in judged.stream(dataclasses.replace(request, tool_choice="required"))]
    finally:
        await judged.aclose()
    assert [c.name for c in seen] == ["set_timer"]  # judged once: a required call is not the model's choice
    assert not [c for c in chunks if isinstance(c, ToolCallChunk)]
    assert text_of(chunks).strip() and "CALL" not in text_of(chunks)
    assert isinstance(chunks[-1], Finish) and chunks[-1].reason != "tool_calls"
    assert [c.call.name for c in required if isinstance(c, ToolCallChunk)] == ["set_timer"]


@pytest.mark.model
async def test_a_call_cut_at_max_tokens_becomes_words_unless_a_call_was_required(transport: LlamaTransport) -> None:
    # "Set a timer" opens a call (above); 6 tokens cannot hold its JSON. With the choice left to
    # the model the person gets words, not a failed turn; when a call was required, a typed error.
    chunks = [c async for c in transport.stream(ask("Set a timer for 5 minutes.", tools=(TIMER,), max_tokens=6))]
    assert not [c for c in chunks if isinstance(c, ToolCallChunk)]
    assert isinstance(chunks[-1], Finish) and chunks[-1].reason != "tool_calls"
    assert "{" not in text_of(chunks)  # no half-written call shown as text
    # the usage counts the prompt the words came from (without the tool list), as a plain question's does
    words_usage = [c for c in chunks if isinstance(c, UsageChunk)]
    plain = [c async for c in transport.stream(ask("Set a timer for 5 minutes.", max_tokens=6))]
    plain_usage = [c for c in plain if isinstance(c, UsageChunk)]
    assert words_usage[-1].input_tokens == plain_usage[-1].input_tokens
    with pytest.raises(ProviderError, match="cut at max_tokens 6"):
        required = ask("Set a timer for 5 minutes.", tools=(TIMER,), tool_choice="required", max_tokens=6)
        [c async for c in transport.stream(required)]


@pytest.mark.model
async def test_interrupt_stops_generation(settings: LlamaSettings) -> None:
    # no stop strings: the model would write for max_tokens without the interrupt
    free = dataclasses.replace(settings, prompt=PromptFormat(format="completion", stop=()))
    t = LlamaTransport(free)
    try:
        request = ModelRequest(
            messages=(ChatMessage("user", "Tell me a long story about a dog."),), temperature=0.8, max_tokens=600
        )
        agen = t.stream(request)
        got = []
        async for c in agen:
            got.append(c)
            if len(got) == 5:
                break
        await agen.aclose()
        assert t.last is not None and t.last.interrupted
        assert t.last.output_tokens < 100
        # the model is free again at once
        again = [c async for c in t.stream(ask("What is the dog called?", max_tokens=8))]
        assert isinstance(again[-1], Finish)
    finally:
        await t.aclose()
    with pytest.raises(ClosedResourceError):
        [c async for c in t.stream(ask("x"))]


@pytest.mark.model
async def test_router_uses_local_model_when_the_laptop_is_down(transport: LlamaTransport, clock: FakeClock) -> None:
    config = {
        "models": {
            "providers": {"laptop": {"kind": "openai", "base_url": "http://127.0.0.1:9/v1"}},
            "roles": {"main": ["laptop:big", "local:gemma-3-270m"]},
        }
    }
    hosted = HostedTransports()
    router = ModelRouter(load_catalog(config, env={}), env={}, clock=clock, local=lambda name: transport, hosted=hosted)
    try:
        chunks = [c async for c in router.stream(ask("What is the dog called?"))]
    finally:
        await hosted.aclose()
    assert "Biscuit" in text_of(chunks)
    (usage,) = [c for c in chunks if isinstance(c, UsageChunk)]
    assert usage.model == "gemma-3-270m"


async def test_missing_model_file_says_how_to_fix(tmp_path: Path) -> None:
    t = LlamaTransport(LlamaSettings(model_path=tmp_path / "nope.gguf"))
    try:
        with pytest.raises(ProviderError) as info:
            [c async for c in t.stream(ask("hi"))]
    finally:
        await t.aclose()
    assert info.value.kind is FailureKind.UNAVAILABLE
    assert "exo models fetch" in info.value.message


@pytest.mark.model
async def test_local_transport_for_exod(tmp_path: Path) -> None:
    _model_path()
    from exo_core.seams.home import ExoHome
    from exo_edge.local import local_transport

    # this file tests Gemma; the catalog's default main is the standard profile's Qwen
    (tmp_path / "config.toml").write_text('[models.roles]\nmain = ["local:gemma-3-270m"]\n')
    router = local_transport(ExoHome(tmp_path), overrides={"n_ctx": 512})
    try:
        assert [str(r) for r in router.chain("main")] == ["local:gemma-3-270m"]
        chunks = [c async for c in router.stream(ask("What is the dog called?", max_tokens=8))]
    finally:
        await router.aclose()
    assert isinstance(chunks[-1], Finish)
    assert any(isinstance(c, TextDelta) for c in chunks)


@pytest.mark.model
async def test_clean_up_and_interrupted_history_through_the_model(transport: LlamaTransport) -> None:
    """The manifest's clean-up streamed by the real model equals the pure function over the raw answer."""
    shipped = transport.settings
    raw_fmt = dataclasses.replace(shipped.prompt, strip_open_quote=False, sentence_min_words=0, interrupted="keep")
    question = ask("What should I cook tonight?", tools=(TIMER,))

    async def answer(fmt: PromptFormat) -> str:
        transport.settings = dataclasses.replace(shipped, prompt=fmt)
        # the same call first, so both answers are computed from the same KV-cache state
        # (reused prefixes are evaluated in other batches, which can move a greedy choice)
        [c async for c in transport.stream(ask("Where does Ana live?"))]
        return text_of([c async for c in transport.stream(question)])

    try:
        raw, shown = await answer(raw_fmt), await answer(shipped.prompt)
    finally:
        transport.settings = shipped
    assert shown == tidy_answer(raw, shipped.prompt)
    assert not shown.lstrip().startswith('"') and shown.count('"') % 2 == 0

    # an interrupted exchange is left out: the prompt is the one of the question alone
    alone = [c async for c in transport.stream(ask("What is the dog called?"))]
    after = [
        c
        async for c in transport.stream(
            ModelRequest(
                messages=(
                    ChatMessage("system", PACK),
                    ChatMessage("user", "Where does Ana work?"),
                    ChatMessage("assistant", "She works as a" + INTERRUPTED_MARK),
                    ChatMessage("user", "What is the dog called?"),
                ),
                temperature=0.0,
                max_tokens=32,
            )
        )
    ]
    (u_alone,) = [c for c in alone if isinstance(c, UsageChunk)]
    (u_after,) = [c for c in after if isinstance(c, UsageChunk)]
    assert u_after.input_tokens == u_alone.input_tokens
    assert "Biscuit" in text_of(after)
