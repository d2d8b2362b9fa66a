"""The hook registry: validated names, callbacks per owner, and fail-soft dispatch.

Four hooks are fired by the agent loop around every tool call:

* ``pre_tool_call(tool_name, arguments, call_id, session_id, gate)`` may
  return ``"block"`` (the call does not run; the reason goes to the model as
  an error result) or ``"ask"`` / ``"approve"`` (ask the person first), as a
  string, a ``{"action": …, "reason": …}`` mapping or a :class:`HookVerdict`;
* ``post_approval_response(tool_name, arguments, call_id, session_id, request_id, decision)``;
* ``post_tool_call(tool_name, arguments, call_id, session_id, ok, result)``;
* ``transform_tool_result(tool_name, arguments, call_id, session_id, result)``
  may return a new result text.

The other names (model calls, turns, sessions, compaction, commands,
subagents, skills) are reserved: registering them is accepted and validated,
but the loop does not fire them yet. Callbacks take keyword arguments and
should accept ``**kwargs`` so new fields do not break them; they may be plain
functions or coroutines. A callback that raises is logged and skipped — one
broken plugin never breaks a turn — but a block it returned before is still
honoured, and any block among several hooks wins.
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from exo_core.errors import ConfigError

__all__ = ["HookRegistry", "HookVerdict", "HOOK_NAMES", "FIRED_HOOKS", "RESERVED_HOOKS"]

log = logging.getLogger(__name__)

FIRED_HOOKS: tuple[str, ...] = ("pre_tool_call", "post_approval_response", "post_tool_call", "transform_tool_result")
RESERVED_HOOKS: tuple[str, ...] = (
    "pre_llm_call",
    "post_llm_call",
    "on_turn_start",
    "on_turn_end",
    "on_session_start",
    "on_session_end",
    "on_session_reset",
    "pre_compact",
    "post_compact",
    "on_command",
    "subagent_start",
    "subagent_stop",
    "on_skill_load",
    "on_skill_run",
)
HOOK_NAMES: frozenset[str] = frozenset(FIRED_HOOKS + RESERVED_HOOKS)
_ACTIONS = {"block": "block", "deny": "block", "ask": "ask", "approve": "ask"}

Callback = Callable[..., Any]


@dataclass(frozen=True, slots=True)
class HookVerdict:
    """What ``pre_tool_call`` hooks decided together: ``block`` or ``ask``, with the reason and who."""

    action: str
    reason: str = ""
    owner: str = ""


@dataclass(frozen=True, slots=True)
class _Entry:
    name: str
    callback: Callback
    owner: str


class HookRegistry:
    """Callbacks by hook name, in registration order."""

    def __init__(self) -> None:
        self._entries: list[_Entry] = []

    def register(self, name: str, callback: Callback, *, owner: str = "") -> None:
        """Add ``callback`` to hook ``name``; an unknown name is a :class:`ConfigError`."""
        if name not in HOOK_NAMES:
            raise ConfigError(f"unknown hook {name!r}; hooks are: {', '.join(sorted(HOOK_NAMES))}")
        if not callable(callback):
            raise ConfigError(f"hook {name!r} needs a callable, not {type(callback).__name__}")
        self._entries.append(_Entry(name, callback, owner))

    def remove_owner(self, owner: str) -> int:
        """Drop every callback ``owner`` registered (plugin rollback); returns how many."""
        before = len(self._entries)
        self._entries = [e for e in self._entries if e.owner != owner]
        return before - len(self._entries)

    def callbacks(self, name: str) -> list[Callback]:
        """The callbacks registered for ``name``."""
        return [e.callback for e in self._entries if e.name == name]

    async def pre_tool_call(self, **fields: Any) -> HookVerdict | None:
        """Run every ``pre_tool_call`` hook; the strictest verdict (block over ask), or ``None``."""
        verdict: HookVerdict | None = None
        for entry in self._of("pre_tool_call"):
            ok, raw = await self._call(entry, fields)
            found = _verdict(raw, entry.owner) if ok else None
            if found is not None and (verdict is None or found.action == "block" and verdict.action != "block"):
                verdict = found
        return verdict

    async def notify(self, name: str, **fields: Any) -> None:
        """Run the observer hook ``name`` (``post_tool_call``, ``post_approval_response``)."""
        for entry in self._of(name):
            await self._call(entry, fields)

    async def transform_tool_result(self, result: str, **fields: Any) -> str:
        """Pass ``result`` through every ``transform_tool_result`` hook in order."""
        for entry in self._of("transform_tool_result"):
            ok, raw = await self._call(entry, {**fields, "result": result})
            if ok and isinstance(raw, str):
                result = raw
            elif ok and raw is not None:
                log.warning(
                    "hook %s (%s) returned %s, not text; result kept",
                    entry.name,
                    entry.owner or "core",
                    type(raw).__name__,
                )
        return result

    def _of(self, name: str) -> list[_Entry]:
        return [e for e in self._entries if e.name == name]

    async def _call(self, entry: _Entry, fields: Mapping[str, Any]) -> tuple[bool, Any]:
        try:
            result = entry.callback(**fields)
            if inspect.isawaitable(result):
                result = await result
        except Exception:  # a failing hook is logged and skipped (docs/plugins.md)
            log.exception("hook %s of %s failed; skipped", entry.name, entry.owner or "core")
            return False, None
        return True, result


def _verdict(raw: Any, owner: str) -> HookVerdict | None:
    if isinstance(raw, HookVerdict):
        return raw
    mapping = isinstance(raw, Mapping)
    action = (raw.get("action") or raw.get("decision")) if mapping else raw
    reason = str(raw.get("reason") or raw.get("message") or "") if mapping else ""
    normalized = _ACTIONS.get(str(action).lower()) if isinstance(action, str) else None
    if normalized is None:
        if action not in (None, "allow", "continue"):
            log.warning("hook pre_tool_call of %s returned %r; expected block, ask or nothing", owner or "core", raw)
        return None
    return HookVerdict(normalized, reason or f"{normalized} by {owner or 'a hook'}", owner)
