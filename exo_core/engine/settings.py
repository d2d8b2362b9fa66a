"""``models.set``, ``config.get`` and ``config.set``: run-time settings a client may change.

Every change is checked first, then written to ``$EXO_HOME/config.toml``
(atomically; the rest of the file, comments included, is kept), then applied,
then announced to every client as a core-wide ``notice``. A bad input changes
nothing. ``models.set`` needs exod's model to be the router (model spec
``local``); the router reads its roles when a model call starts, so the next
call uses the new routes and a reply already streaming finishes on its route.

``config.set`` takes only the keys of :data:`SETTINGS`: the ones marked
``now`` are read by the running core on its next use, the others at start-up
(the response says ``applies: restart``).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import re
import tomllib
from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any, Protocol

from exo_core.agent.seams import ContextEngine
from exo_core.atomic import atomic_write_text
from exo_core.context.config import ContextConfig
from exo_core.context.engine import SummaryTreeContext
from exo_core.decisions.setup import DecisionSettings
from exo_core.errors import BadBodyError, ConfigError, NotFoundError, UnsupportedError
from exo_core.events.hub import Hub
from exo_core.models.catalog import ROLES, parse_route
from exo_core.models.router import ModelRouter
from exo_core.protocol import commands as cmd
from exo_core.protocol import events as ev
from exo_core.seams.home import ExoHome
from exo_core.seams.model import ModelTransport

__all__ = ["RuntimeSettings", "SETTINGS", "set_toml_value"]


# "table.key" -> (the table's loader, which checks a value and gives its default; read live by the core?)
SETTINGS: dict[str, tuple[Callable[[Mapping[str, Any]], Any], bool]] = {
    **{
        f"context.{k}": (ContextConfig.from_config, True)
        for k in ("tail", "view_budget", "settle_seconds", "message_chars")
    },
    "decisions.toolsets": (DecisionSettings.from_config, False),
}


def set_toml_value(text: str, table: str, key: str, value: Any) -> str:
    """``text`` with ``key`` of ``[table]`` set to ``value``; a :class:`ConfigError` when the file's
    layout (an inline or dotted table) keeps that from being done line by line."""
    line = f"{key} = {json.dumps(value, ensure_ascii=False)}"  # JSON's scalars and escapes are TOML's
    lines = text.splitlines()
    header = next(
        (i for i, s in enumerate(lines) if re.fullmatch(rf"\s*\[\s*{re.escape(table)}\s*\]\s*(#.*)?", s)), None
    )
    if header is None:
        lines += ["", f"[{table}]", line]
    else:
        end = next((i for i in range(header + 1, len(lines)) if lines[i].lstrip().startswith("[")), len(lines))
        at = next((i for i in range(header + 1, end) if re.match(rf"\s*{re.escape(key)}\s*=", lines[i])), None)
        if at is None:
            lines[header + 1 : header + 1] = [line]
        else:
            stop = at
            while stop < end:  # a value may span lines (a long array)
                stop += 1
                with contextlib.suppress(tomllib.TOMLDecodeError):
                    tomllib.loads("\n".join(lines[at:stop]))
                    break
            lines[at:stop] = [line]
    out = "\n".join(lines).lstrip("\n") + "\n"
    with contextlib.suppress(tomllib.TOMLDecodeError, KeyError, TypeError):
        if functools.reduce(lambda d, k: d[k], (*table.split("."), key), tomllib.loads(out)) == value:
            return out
    raise ConfigError(
        f"config.toml: cannot set {table}.{key} line by line (is [{table}] written inline "
        f"or with dotted keys?); set it by hand"
    )


class SettingsCore(Protocol):
    """What the runtime settings read of a running core (:class:`~exo_core.engine.core.Core` is one)."""

    @property
    def home(self) -> ExoHome: ...

    @property
    def hub(self) -> Hub: ...

    @property
    def model(self) -> ModelTransport: ...

    @property
    def context(self) -> ContextEngine: ...


class RuntimeSettings:
    """The three handlers over one core (``models.set``, ``config.get``, ``config.set``).

    They are served from the one table, :mod:`exo_core.engine.handlers`.
    """

    def __init__(self, core: SettingsCore) -> None:
        self._core = core
        self._lock = asyncio.Lock()  # one read-modify-write of config.toml at a time

    async def _persist(self, table: str, key: str, value: Any, apply: Callable[[], None], note: str) -> None:
        path = self._core.home.config_path

        def write() -> None:  # file work runs off the event loop
            text = path.read_text(encoding="utf-8") if path.exists() else ""
            atomic_write_text(path, set_toml_value(text, table, key, value))

        async with self._lock:
            await asyncio.to_thread(write)
            apply()
        await self._core.hub.emit(None, "notice", ev.Notice(text=note))

    async def models_set(self, body: cmd.ModelsSet) -> dict[str, Any]:
        """Replace a role's routes now and in config.toml ``[models.roles]``."""
        router = self._core.model
        if not isinstance(router, ModelRouter):
            raise UnsupportedError(
                "models.set needs exod's model to be the router (model spec 'local', [models.roles])"
            )
        if body.role not in ROLES:
            raise BadBodyError(f"unknown role {body.role!r}; roles are {', '.join(ROLES)}", field="role")
        if not body.routes and body.role == "main":
            raise BadBodyError("the main role needs at least one provider:model route", field="routes")
        try:
            routes = [str(router.catalog.check_route(parse_route(r))) for r in body.routes]
        except ConfigError as exc:
            raise BadBodyError(exc.message, field="routes") from None
        await self._persist(
            "models.roles",
            body.role,
            routes,
            lambda: router.set_role(body.role, routes),
            f"model role {body.role} now routes to {', '.join(routes) or 'its fallback roles'}",
        )
        return {"role": body.role, "routes": routes, "chain": [str(r) for r in router.chain(body.role)]}

    def _value(self, key: str) -> tuple[Any, str]:
        if key not in SETTINGS:
            raise NotFoundError(f"no run-time setting {key!r}; known: {', '.join(SETTINGS)}", field="key")
        loader, live = SETTINGS[key]
        name = key.split(".")[1]
        if live and isinstance(self._core.context, SummaryTreeContext):
            return getattr(self._core.context.config, name), "now"
        return getattr(loader(self._core.home.config()), name), "restart"

    async def config_get(self, body: cmd.ConfigGet) -> dict[str, Any]:
        """One setting, or all of them: ``{settings: {key: {value, applies}}}``."""
        keys = [body.key] if body.key else list(SETTINGS)
        settings: dict[str, dict[str, Any]] = {}
        for key in keys:
            value, applies = self._value(key)
            settings[key] = {"value": value, "applies": applies}
        return {"settings": settings}

    async def config_set(self, body: cmd.ConfigSet) -> dict[str, Any]:
        """Check, persist and (for ``now`` keys) apply one setting."""
        previous, applies = self._value(body.key)
        table, name = body.key.split(".")
        try:
            SETTINGS[body.key][0]({table: {name: body.value}})
        except ConfigError as exc:
            raise BadBodyError(f"{body.key}: {exc.message}", field="value") from None

        def apply() -> None:
            context = self._core.context
            # "now": _value found the summary-tree engine, which reads its config on each use.
            if applies == "now" and isinstance(context, SummaryTreeContext):
                context.config = replace(context.config, **{name: body.value})

        await self._persist(
            table, name, body.value, apply, f"setting {body.key} is now {json.dumps(body.value)} (applies {applies})"
        )
        return {"key": body.key, "value": body.value, "previous": previous, "applies": applies}
