"""Registries of command and event types, each capped at 30 types.

The cap keeps the surface small on purpose (docs/protocol.md): a feature that needs more
adds fields or reuses a type rather than inventing one-off methods. Registering
a 31st type raises :class:`RegistryFullError` at import time, so the mistake
cannot ship.
"""

from __future__ import annotations

import dataclasses
import re
import typing
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

from exo_core.errors import ExoError

__all__ = ["TypeRegistry", "RegistryFullError", "MAX_TYPES", "COMMANDS", "EVENTS", "command_type", "event_type"]

MAX_TYPES = 30

_NAME = re.compile(r"^[a-z]+(\.[a-z_]+)?$")

T = TypeVar("T")


class RegistryFullError(ExoError):
    """A 31st type was registered, or a name was registered twice."""

    code = "internal"


class TypeRegistry:
    """Maps wire type names to frozen, slotted body dataclasses."""

    def __init__(self, kind: str, *, cap: int = MAX_TYPES) -> None:
        self.kind = kind
        self.cap = cap
        self._types: dict[str, type[Any]] = {}

    @typing.dataclass_transform(frozen_default=True)
    def register(self, name: str) -> Callable[[type[T]], type[T]]:
        """Class decorator: make ``cls`` a frozen, slotted dataclass and register it as the body of ``name``."""

        def decorate(cls: type[T]) -> type[T]:
            body = dataclasses.dataclass(frozen=True, slots=True)(cls)
            self.add(name, body)
            return body

        return decorate

    def add(self, name: str, cls: type[Any]) -> None:
        """Register ``cls`` under ``name``; refuses duplicates and the 31st type."""
        if not _NAME.match(name):
            raise RegistryFullError(f"{self.kind} type name {name!r} must look like 'noun.verb'")
        if name in self._types:
            raise RegistryFullError(f"{self.kind} type {name!r} is already registered")
        if len(self._types) >= self.cap:
            raise RegistryFullError(
                f"refusing {self.kind} type {name!r}: the protocol allows at most {self.cap} "
                f"{self.kind} types; add a field to an existing type instead"
            )
        if not dataclasses.is_dataclass(cls):
            raise RegistryFullError(f"{self.kind} body for {name!r} must be a dataclass")
        params = cls.__dataclass_params__  # type: ignore[attr-defined]  # set by @dataclass; typeshed omits it
        if not params.frozen or not hasattr(cls, "__slots__"):
            raise RegistryFullError(f"{self.kind} body for {name!r} must be frozen and slotted")
        self._types[name] = cls

    def get(self, name: str) -> type[Any] | None:
        """The body class of ``name``, or ``None`` when unknown."""
        return self._types.get(name)

    def __contains__(self, name: object) -> bool:
        return name in self._types

    def __iter__(self) -> Iterator[str]:
        return iter(sorted(self._types))

    def __len__(self) -> int:
        return len(self._types)

    def items(self) -> list[tuple[str, type[Any]]]:
        """``(name, body class)`` pairs sorted by name."""
        return sorted(self._types.items())


COMMANDS = TypeRegistry("command")
EVENTS = TypeRegistry("event")


# Module-level decorators for the two registries: type checkers read ``dataclass_transform`` on a
# function (mypy does not on a bound method), so the bodies' fields are known where they are built.
@typing.dataclass_transform(frozen_default=True)
def command_type(name: str) -> Callable[[type[T]], type[T]]:
    """Class decorator: a frozen, slotted dataclass registered as the body of command ``name``."""
    return COMMANDS.register(name)


@typing.dataclass_transform(frozen_default=True)
def event_type(name: str) -> Callable[[type[T]], type[T]]:
    """Class decorator: a frozen, slotted dataclass registered as the body of event ``name``."""
    return EVENTS.register(name)
