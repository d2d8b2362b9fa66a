"""Hooks (docs/plugins.md): named points where plugins watch and steer tool calls."""

from exo_core.hooks.registry import FIRED_HOOKS, HOOK_NAMES, RESERVED_HOOKS, HookRegistry, HookVerdict

__all__ = ["HookRegistry", "HookVerdict", "HOOK_NAMES", "FIRED_HOOKS", "RESERVED_HOOKS"]
