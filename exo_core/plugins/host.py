"""The plugin host: finds plugins, calls their ``register(ctx)``, keeps a record of each.

Two sources (docs/plugins.md):

* folders holding ``plugin.yaml`` (or ``plugin.json``) and a Python file with
  ``register(ctx)`` — by default ``$EXO_HOME/plugins/<name>/``;
* installed packages advertising an ``exo.plugins`` entry point whose object
  is ``register`` itself or a module that has it.

One bad plugin never stops the core: if importing or ``register`` raises,
everything it registered is rolled back and the error is kept on its
:class:`PluginRecord`. The memory provider and context engine are exclusive
slots; a second claimant fails with a clear error and is rolled back whole.
When no plugin takes the memory slot, the core's default (the store's
retrieval, when configured) stays.
"""

from __future__ import annotations

import dataclasses
import functools
import importlib.util
import logging
import sys
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from exo_core.errors import ConfigError, ExoError
from exo_core.hooks import HookRegistry
from exo_core.plugins.context import PluginCommand, PluginContext
from exo_core.plugins.plugin_yaml import read_manifest
from exo_core.tools.registry import ToolRegistry

if TYPE_CHECKING:
    from importlib.metadata import EntryPoint

    from _typeshed import DataclassInstance

__all__ = ["PluginHost", "PluginRecord", "ENTRY_POINT_GROUP"]

log = logging.getLogger(__name__)

# The core's options, a dataclass with ``memory`` and ``context`` fields (the engine's CoreOptions).
Options = TypeVar("Options", bound="DataclassInstance")

ENTRY_POINT_GROUP = "exo.plugins"


@dataclass(frozen=True, slots=True)
class PluginRecord:
    """One plugin's outcome: ``loaded`` with what it registered, or ``failed`` with the error."""

    name: str
    source: str
    status: str
    registered: tuple[str, ...] = ()
    error: str = ""


class PluginHost:
    """Loads plugins into a tool registry and hook registry, and holds the slots and extras they add."""

    def __init__(self, tools: ToolRegistry | None = None, hooks: HookRegistry | None = None) -> None:
        self.tools = tools if tools is not None else ToolRegistry()
        self.hooks = hooks if hooks is not None else HookRegistry()
        self.slots: dict[str, tuple[str, Any]] = {}
        self.commands: dict[str, PluginCommand] = {}
        self.channels: dict[str, Any] = {}
        self.skills: dict[str, str] = {}
        self.records: dict[str, PluginRecord] = {}

    def load_folder(self, folder: Path) -> PluginRecord:
        """Load the plugin in ``folder``."""
        try:
            manifest = read_manifest(folder)
        except ConfigError as exc:
            return self._failed(folder.name, str(folder), exc)
        entry = folder / manifest.entry
        if not entry.is_file():
            return self._failed(
                manifest.name,
                str(folder),
                ConfigError(f"{entry} is missing; the manifest's 'entry' names the file with register()"),
            )

        def load() -> Callable[[PluginContext], Any]:
            module_name = f"exo_plugin_{manifest.name.replace('-', '_')}"
            spec = importlib.util.spec_from_file_location(module_name, entry, submodule_search_locations=[str(folder)])
            if spec is None or spec.loader is None:
                raise ConfigError(f"cannot import {entry}")
            module = importlib.util.module_from_spec(spec)
            sys.modules[module_name] = module
            try:
                spec.loader.exec_module(module)
            except BaseException:
                sys.modules.pop(module_name, None)
                raise
            return _register_of(module, str(entry))

        return self._load(manifest.name, str(folder), load)

    def load_folders(self, root: Path) -> list[PluginRecord]:
        """Load every plugin folder under ``root`` (sorted by name); nothing when ``root`` is absent."""
        if not root.is_dir():
            return []
        return [
            self.load_folder(p)
            for p in sorted(root.iterdir())
            if p.is_dir() and ((p / "plugin.yaml").exists() or (p / "plugin.json").exists())
        ]

    def load_entry_points(self) -> list[PluginRecord]:
        """Load every installed package's ``exo.plugins`` entry point."""
        from importlib.metadata import entry_points  # scanning installed packages: only when asked

        return [
            self._load(ep.name, f"entry point {ep.value}", functools.partial(_register_of_entry_point, ep))
            for ep in entry_points(group=ENTRY_POINT_GROUP)
        ]

    def register(self, name: str, register: Callable[[PluginContext], Any], *, source: str = "code") -> PluginRecord:
        """Load a plugin given as a ``register`` function (tests, embedded plugins)."""
        return self._load(name, source, lambda: register)

    def _load(self, name: str, source: str, load: Callable[[], Callable[[PluginContext], Any]]) -> PluginRecord:
        if name in self.records and self.records[name].status == "loaded":
            return self._failed(name, source, ConfigError(f"a plugin named {name!r} is already loaded"))
        context = PluginContext(self, name)
        try:
            register = load()
            register(context)
        except Exception as exc:  # noqa: BLE001 - one bad plugin never stops the core (docs/plugins.md); it is rolled back
            context.rollback()
            return self._failed(name, source, exc)
        record = PluginRecord(name, source, "loaded", tuple(context.registered))
        self.records[name] = record
        log.info("plugin %s loaded from %s: %s", name, source, ", ".join(record.registered) or "nothing")
        return record

    def _failed(self, name: str, source: str, exc: BaseException) -> PluginRecord:
        message = exc.message if isinstance(exc, ExoError) else f"{type(exc).__name__}: {exc}"
        log.warning("plugin %s (%s) failed to load and was rolled back: %s", name, source, message)
        record = PluginRecord(name, source, "failed", (), message)
        self.records[name] = record
        return record

    def apply(self, options: Options) -> Options:
        """``options`` (the core's) with the slots the plugins took (tools and hooks are already in its registries)."""
        changes = {
            option: self.slots[slot][1]
            for slot, option in (("memory_provider", "memory"), ("context_engine", "context"))
            if slot in self.slots
        }
        return dataclasses.replace(options, **changes) if changes else options

    @classmethod
    def loaded(
        cls, tools: ToolRegistry, hooks: HookRegistry, folders: Iterable[Path] = (), *, entry_points: bool = False
    ) -> PluginHost:
        """A host loading into ``tools`` and ``hooks`` from ``folders`` (and entry points)."""
        host = cls(tools, hooks)
        for folder in folders:
            host.load_folders(folder)
        if entry_points:
            host.load_entry_points()
        return host


def _register_of_entry_point(ep: EntryPoint) -> Callable[[PluginContext], Any]:
    """The ``register`` function of an installed package's entry point (loaded when called)."""
    return _register_of(ep.load(), ep.value)


def _register_of(obj: Any, where: str) -> Callable[[PluginContext], Any]:
    register = obj if callable(obj) and not isinstance(obj, type(sys)) else getattr(obj, "register", None)
    if not callable(register):
        raise ConfigError(f"{where} has no register(ctx) function")
    return register
