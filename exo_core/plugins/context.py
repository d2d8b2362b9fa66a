"""What a plugin's ``register(ctx)`` may do, each step undoable so a failed plugin leaves nothing behind.

Every ``register_*`` call takes effect at once (a later call in the same
``register`` can rely on an earlier one) and pushes its undo step onto the
context's journal. If ``register`` raises, the host runs the journal
backwards: tools, hooks, commands, channels, skills and slot claims all go.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from exo_core.agent.seams import ToolingMemory
from exo_core.errors import ConfigError, ConflictError
from exo_core.hooks import HookRegistry
from exo_core.tools.function import FunctionTool
from exo_core.tools.registry import ToolRegistry
from exo_core.tools.spec import Risk, ToolSpec

__all__ = ["PluginContext", "PluginCommand", "PluginRegistries", "SLOTS"]

# A plugin names a tool's risk as text; each accepted one as the tool spec's literal type.
_RISKS: dict[str, Risk] = {"low": "low", "medium": "medium", "high": "high"}

SLOTS = ("memory_provider", "context_engine")


@dataclass(frozen=True, slots=True)
class PluginCommand:
    """A slash command a plugin offers to clients (``/name args``)."""

    name: str
    handler: Callable[..., Any]
    description: str
    owner: str


class PluginRegistries(Protocol):
    """Where a plugin's registrations go (the :class:`~exo_core.plugins.host.PluginHost` holds them)."""

    tools: ToolRegistry
    hooks: HookRegistry
    slots: dict[str, tuple[str, Any]]
    commands: dict[str, PluginCommand]
    channels: dict[str, Any]
    skills: dict[str, str]


class PluginContext:
    """The object passed to ``register(ctx)``; records every registration for rollback."""

    def __init__(self, host: PluginRegistries, owner: str) -> None:
        self._host = host
        self.owner = owner
        self.registered: list[str] = []
        self._undo: list[Callable[[], object]] = []

    def register_tool(
        self,
        name: str,
        schema: dict[str, Any],
        handler: Callable[..., Any],
        *,
        description: str = "",
        risk: str = "medium",
        toolset: str | None = None,
        effects: tuple[str, ...] = (),
        check: Callable[[], bool] | None = None,
        ability: str = "",
    ) -> None:
        """Offer a tool to the model; ``schema`` is the JSON Schema of its arguments.

        ``ability`` says in a few words what the tool lets the assistant do ("book tables"); the
        store's generated note of what this Exo can do names it (docs/store.md, "What this Exo can do").
        """
        if risk not in _RISKS:
            raise ConfigError(f"tool {name!r}: risk must be low, medium or high")
        spec = ToolSpec(
            name,
            description or (handler.__doc__ or name).strip(),
            schema,
            _RISKS[risk],
            toolset or self.owner,
            tuple(effects),
            ability=ability,
        )
        self._host.tools.add(FunctionTool(spec, handler, available=check))
        self._did(f"tool:{name}", lambda: self._host.tools.remove(name))

    def register_hook(self, name: str, callback: Callable[..., Any]) -> None:
        """Add a hook callback (names: :data:`exo_core.hooks.HOOK_NAMES`)."""
        self._host.hooks.register(name, callback, owner=self.owner)
        self._did(f"hook:{name}", lambda: None)  # hooks are removed by owner in one step, below

    def register_command(self, name: str, handler: Callable[..., Any], description: str = "") -> None:
        """Offer a slash command to clients."""
        held = self._host.commands.get(name)
        self._add(
            self._host.commands,
            "command",
            name,
            PluginCommand(name, handler, description, self.owner),
            f"command /{name} is already registered by {held.owner if held else ''}",
        )

    def register_channel(self, name: str, channel: Any) -> None:
        """Offer a channel (a way to reach the person: a chat bridge, a mail box)."""
        self._add(self._host.channels, "channel", name, channel, f"channel {name!r} is already registered")

    def register_skill(self, name: str, text: str) -> None:
        """Offer a skill: instructions the model may load by name."""
        self._add(self._host.skills, "skill", name, text, f"skill {name!r} is already registered")

    def _add(self, table: dict[str, Any], kind: str, name: str, value: Any, taken: str) -> None:
        if name in table:
            raise ConflictError(taken)
        table[name] = value
        self._did(f"{kind}:{name}", lambda: table.pop(name, None))

    def register_memory_provider(self, provider: Any) -> None:
        """Take the memory provider slot (exclusive); a provider's ``tools()`` are registered too."""
        self._claim("memory_provider", provider)
        tools = provider.tools() if isinstance(provider, ToolingMemory) else ()
        for tool in tools:
            self._host.tools.add(tool)
            self._did(f"tool:{tool.spec.name}", functools.partial(self._host.tools.remove, tool.spec.name))

    def register_context_engine(self, engine: Any) -> None:
        """Take the context engine slot (exclusive)."""
        self._claim("context_engine", engine)

    def _claim(self, slot: str, value: Any) -> None:
        holder = self._host.slots.get(slot)
        if holder is not None:
            raise ConflictError(
                f"the {slot.replace('_', ' ')} slot is held by plugin {holder[0]!r}; disable one of the two plugins"
            )
        self._host.slots[slot] = (self.owner, value)
        self._did(f"slot:{slot}", lambda: self._host.slots.pop(slot, None))

    def _did(self, what: str, undo: Callable[[], object]) -> None:  # what undo returns is not used
        self.registered.append(what)
        self._undo.append(undo)

    def rollback(self) -> None:
        """Undo everything this plugin registered, newest first."""
        for undo in reversed(self._undo):
            undo()
        self._host.hooks.remove_owner(self.owner)
        self._undo.clear()
        self.registered.clear()
