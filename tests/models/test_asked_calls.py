"""The person's verbs in the chat path (exo_edge/chat_run.py steps 2-3; exo_core.agent.asking).

The candidate order is checked without a model; the real Qwen2.5-Coder 0.5B
(``-m model``, skipped when it is not fetched) shows a plugin's tool, named by
its own verb, called through the transport, and a question bidding nothing.
"""

from __future__ import annotations

import asyncio
import importlib.util
from collections.abc import Iterator

import pytest

from exo_core.agent.loop import BASE_PROMPT
from exo_core.seams.model import ChatMessage, ModelRequest, TextDelta, ToolCall, ToolCallChunk
from exo_core.tools import builtin_tools
from exo_edge.chat_run import CANDIDATE_SHARE, CANDIDATES, call_candidates
from exo_edge.llama_transport import LlamaSettings, LlamaTransport
from exo_edge.manifest import find_manifest
from exo_edge.paths import locate_model_file

QWEN = "qwen2.5-coder-0.5b-instruct"
RANKED = [("apply_patch", 0.5), ("ask_person", 0.3), ("edit_file", 0.1), ("write_file", 0.06), ("ui", 0.04)]


def test_the_tools_the_person_named_go_first_then_the_models_likeliest() -> None:
    assert call_candidates(RANKED, ("write_file",)) == ["write_file", "apply_patch", "ask_person", "edit_file"]
    assert call_candidates(RANKED, ()) == ["apply_patch", "ask_person", "edit_file"]
    assert call_candidates(RANKED, ("edit_file",)) == ["edit_file", "apply_patch", "ask_person"]


def test_each_source_is_bounded_and_a_faint_runner_up_is_not_tried() -> None:
    named = tuple(name for name, _ in RANKED)
    assert call_candidates(RANKED, named)[:CANDIDATES] == [name for name, _ in RANKED[:CANDIDATES]]
    assert len(call_candidates(RANKED, named)) == CANDIDATES
    faint = [("bash", 0.9), ("read_file", CANDIDATE_SHARE / 2), ("recall", CANDIDATE_SHARE / 4)]
    assert call_candidates(faint, ()) == ["bash"]
    assert call_candidates(faint, ("recall",)) == ["recall", "bash"]  # named: tried whatever its share


WATER = {
    "name": "water_plants",
    "description": "Water the plants in one room of the house.",
    "parameters": {"type": "object", "properties": {"room": {"type": "string"}}, "required": ["room"]},
}
TIMER = {
    "name": "set_timer",
    "description": "Start a kitchen timer.",
    "parameters": {"type": "object", "properties": {"minutes": {"type": "integer"}}, "required": ["minutes"]},
}


@pytest.fixture(scope="module")
def qwen() -> Iterator[LlamaTransport]:
    if importlib.util.find_spec("llama_cpp") is None:
        pytest.skip("llama-cpp-python is not installed (scripts/install_edge.sh)")
    manifest = find_manifest(QWEN)
    path = locate_model_file(manifest.primary_file.name)
    if path is None or manifest.prompt is None:
        pytest.skip(f"{QWEN} is not fetched on this machine (run `exo models fetch {QWEN}`)")
    transport = LlamaTransport(
        LlamaSettings(model_path=path, prompt=manifest.prompt, n_ctx=2048, n_threads=1, name=manifest.name)
    )
    yield transport
    asyncio.run(transport.aclose())


def _ask(said: str) -> ModelRequest:
    return ModelRequest(
        messages=(ChatMessage("system", "You are Exo, a personal assistant."), ChatMessage("user", said)),
        tools=(TIMER, WATER),
        temperature=0.0,
        max_tokens=48,
    )


@pytest.mark.model
async def test_a_plugins_tool_bidden_by_its_verb_is_called_and_a_question_bids_none(qwen: LlamaTransport) -> None:
    chunks = [c async for c in qwen.stream(_ask("Water the plants in the kitchen."))]
    calls = [c.call for c in chunks if isinstance(c, ToolCallChunk)]
    decision = qwen.last_decision
    assert decision is not None and decision.bidden == ("water_plants",)
    assert [(c.name, c.arguments) for c in calls] == [("water_plants", {"room": "kitchen"})]
    [c async for c in qwen.stream(_ask("How often should ferns get water?"))]
    assert qwen.last_decision is not None and qwen.last_decision.bidden == ()


def _after_the_read(tools: tuple[dict[str, object], ...]) -> ModelRequest:
    read = ToolCall(id="call_0", name="read_file", arguments={"path": "todo.txt", "start": 1, "end": 1})
    return ModelRequest(
        messages=(
            ChatMessage("system", BASE_PROMPT),
            ChatMessage("user", "Read the file todo.txt and tell me the first item on it."),
            ChatMessage("assistant", "", tool_calls=(read,)),
            ChatMessage("tool", "buy oat milk\n", tool_call_id="call_0"),
        ),
        tools=tools,
        temperature=0.0,
        max_tokens=60,
    )


def _exods_tools() -> tuple[dict[str, object], ...]:
    return tuple(spec.to_model() for spec in builtin_tools().specs())


@pytest.mark.model
async def test_after_a_read_a_call_turned_down_leaves_an_answer_from_the_result(qwen: LlamaTransport) -> None:
    # the 0.5B asks for the same read again; the judge turns it down (made already), and the words
    # come from the prompt without tools: from the tools' prompt it described the read instead
    chunks = [c async for c in qwen.stream(_after_the_read(_exods_tools()))]
    decision = qwen.last_decision
    text = "".join(c.text for c in chunks if isinstance(c, TextDelta))
    assert decision is not None and decision.mode == "text", decision
    assert decision.verdict.endswith("answered from the prompt without tools"), decision
    assert not [c for c in chunks if isinstance(c, ToolCallChunk)]
    assert "oat milk" in text.lower() and '"name"' not in text and "read_file" not in text, text
    # offered no tools at all, the earlier call is told in words too, not rendered as a call to copy
    chunks = [c async for c in qwen.stream(_after_the_read(()))]
    text = "".join(c.text for c in chunks if isinstance(c, TextDelta))
    assert "oat milk" in text.lower() and '"name"' not in text, text
