"""The hook registry: validated names, fail-soft dispatch, block wins, transforms chain."""

from __future__ import annotations

from typing import Any

import pytest

from exo_core.errors import ConfigError
from exo_core.hooks import FIRED_HOOKS, RESERVED_HOOKS, HookRegistry, HookVerdict


def test_names_are_validated_and_reserved_ones_accepted() -> None:
    hooks = HookRegistry()
    for name in FIRED_HOOKS + RESERVED_HOOKS:
        hooks.register(name, lambda **kw: None, owner="p")
    with pytest.raises(ConfigError, match="unknown hook 'pre_tool_cal'"):
        hooks.register("pre_tool_cal", lambda **kw: None)
    with pytest.raises(ConfigError, match="callable"):
        hooks.register("post_tool_call", "not a function")  # type: ignore[arg-type]
    assert hooks.remove_owner("p") == len(FIRED_HOOKS) + len(RESERVED_HOOKS)


async def test_a_failing_hook_is_skipped_and_a_block_still_wins(caplog: pytest.LogCaptureFixture) -> None:
    hooks = HookRegistry()
    seen: list[str] = []

    def broken(**kw: Any) -> None:
        raise RuntimeError("hook bug")

    async def ask(**kw: Any) -> str:
        seen.append("ask")
        return "approve"

    hooks.register("pre_tool_call", ask, owner="a")
    hooks.register("pre_tool_call", broken, owner="b")
    hooks.register("pre_tool_call", lambda **kw: {"action": "block", "reason": "no pushing on Fridays"}, owner="c")
    hooks.register("pre_tool_call", lambda **kw: "ask", owner="d")
    verdict = await hooks.pre_tool_call(tool_name="bash", arguments={}, call_id="1", session_id="s", gate="allow")
    assert verdict == HookVerdict("block", "no pushing on Fridays", "c")
    assert seen == ["ask"] and "hook bug" in caplog.text


async def test_transforms_chain_and_observers_are_told() -> None:
    hooks = HookRegistry()
    told: list[dict[str, Any]] = []
    hooks.register("transform_tool_result", lambda result, **kw: result + "!")
    hooks.register("transform_tool_result", lambda result, **kw: 42)  # not text: ignored
    hooks.register("transform_tool_result", lambda result, **kw: result.upper())
    hooks.register("post_tool_call", lambda **kw: told.append(kw))
    assert await hooks.transform_tool_result("ok", tool_name="t") == "OK!"
    await hooks.notify("post_tool_call", tool_name="t", ok=True)
    assert told == [{"tool_name": "t", "ok": True}]
    assert await HookRegistry().pre_tool_call(tool_name="x") is None
