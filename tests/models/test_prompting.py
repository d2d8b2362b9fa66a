"""Completion prompts for base models, tool grammars and the local provider's settings."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from exo_core.errors import ConfigError
from exo_core.seams.home import ExoHome
from exo_core.seams.model import ChatMessage, ToolCall
from exo_edge.local import local_settings
from exo_edge.manifest import PromptFormat, find_manifest
from exo_edge.prompting import parse_tool_call, render_completion, tool_grammar

FMT = PromptFormat(format="completion", preamble="An assistant.", examples=(("2+2?", "4."),), stop=("\nQuestion:",))
TIMER = {
    "name": "set_timer",
    "description": "Start a timer",
    "parameters": {"type": "object", "properties": {"minutes": {"type": "integer"}}, "required": ["minutes"]},
}


def test_completion_prompt_layout() -> None:
    prompt = render_completion((ChatMessage("system", "PACK"), ChatMessage("user", "Who?")), FMT)
    assert prompt == ("An assistant.\n\nPACK\n\nQuestion: 2+2?\nAnswer: 4.\n\nQuestion: Who?\nAnswer:")


def test_prefix_is_stable_across_turns() -> None:
    sys_msg = ChatMessage("system", "PACK")
    one = render_completion((sys_msg, ChatMessage("user", "A?")), FMT)
    two = render_completion(
        (sys_msg, ChatMessage("user", "A?"), ChatMessage("assistant", "a."), ChatMessage("user", "B?")), FMT
    )
    assert two.startswith(one)  # the KV cache of turn one is a prefix of turn two


def test_tool_round_in_prompt() -> None:
    call = ToolCall("call_0", "set_timer", {"minutes": 5})
    prompt = render_completion(
        (
            ChatMessage("user", "Timer 5"),
            ChatMessage("assistant", "", tool_calls=(call,)),
            ChatMessage("tool", "done", tool_call_id="call_0"),
        ),
        FMT,
        (TIMER,),
    )
    assert "- set_timer(minutes: integer): Start a timer" in prompt
    assert prompt.endswith(
        'Question: Timer 5\nAnswer: CALL {"name": "set_timer", "arguments": {"minutes": 5}}\nResult: done\nAnswer:'
    )


def test_parse_tool_call() -> None:
    call = parse_tool_call(' CALL {"name": "set_timer", "arguments": {"minutes": 3}}')
    assert call == ToolCall("call_0", "set_timer", {"minutes": 3})
    assert parse_tool_call(" Paris.") is None
    with pytest.raises(ValueError):
        parse_tool_call(" CALL {broken")


def test_tool_grammar_compiles() -> None:
    llama_cpp = pytest.importorskip("llama_cpp", reason="needs scripts/install_edge.sh")
    for choice in ("auto", "required", "set_timer"):
        text = tool_grammar((TIMER,), choice)
        assert text.count("root ::=") == 1
        llama_cpp.LlamaGrammar.from_string(text, verbose=False)
    with pytest.raises(ValueError):
        tool_grammar((TIMER,), "nosuch")


def test_local_settings_from_config(tmp_path: Path) -> None:
    home = ExoHome(tmp_path)
    (tmp_path / "config.toml").write_text("[models.local]\nn_ctx = 1024\nn_threads = 1\n")
    s = local_settings(home, "gemma-3-270m")
    assert (s.n_ctx, s.n_threads, s.n_batch) == (1024, 1, 256)
    assert s.prompt == find_manifest("gemma-3-270m").prompt
    assert s.model_path.name == "gemma-3-270m-q4_k_m.gguf"
    (tmp_path / "config.toml").write_text("[models.local]\nn_gpu = 3\n")
    with pytest.raises(ConfigError):
        local_settings(home, "gemma-3-270m")
    (tmp_path / "config.toml").write_text("[models.local]\nn_ctx = 0\n")
    with pytest.raises(ConfigError):
        local_settings(home, "gemma-3-270m")


def test_local_memory_settings_from_config(tmp_path: Path) -> None:
    home = ExoHome(tmp_path)
    (tmp_path / "config.toml").write_text("")
    s = local_settings(home, "gemma-3-270m")
    assert (s.n_ubatch, s.kv_type, s.flash_attn, s.swa_full, s.use_mmap) == (256, "f16", False, True, True)
    (tmp_path / "config.toml").write_text(
        '[models.local]\nn_ubatch = 32\nkv_type = "q8_0"\nflash_attn = true\nuse_mmap = false\n'
    )
    s = local_settings(home, "gemma-3-270m")
    assert (s.n_ubatch, s.kv_type, s.flash_attn, s.use_mmap) == (32, "q8_0", True, False)
    for bad, named in (
        ('kv_type = "q4"', "kv_type"),
        ("flash_attn = 1", "flash_attn"),
        ('kv_type = "q8_0"\nflash_attn = false', "needs flash_attn"),
    ):
        (tmp_path / "config.toml").write_text(f"[models.local]\n{bad}\n")
        with pytest.raises(ConfigError, match=named):
            local_settings(home, "gemma-3-270m")


def test_manifest_prompt_examples_are_pairs() -> None:
    fmt = find_manifest("gemma-3-270m").prompt
    assert fmt is not None and all(len(e) == 2 for e in fmt.examples)
    assert json.dumps(list(fmt.stop))
