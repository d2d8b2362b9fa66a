"""Choosing the model transport exod answers with, from a short spec.

Specs: ``none`` (no model: every model call fails with a clear error, while
everything that needs no model, such as onboarding, works), ``scripted:PATH``
(a scripted model file: tests and demos), or ``local``: the model router
over ``[models.roles]`` of ``config.toml``, its ``local:`` routes served by
the edge's on-device GGUF once fetched (:mod:`exo_core.edge`). Only ``local`` can switch
routes at run time (``models.set``); a provider of ``kind = "scripted"`` lets
tests route to script files through it. The spec comes from ``--model``, else
``$EXO_MODEL``, else ``model`` in ``config.toml``, else ``local``.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from pathlib import Path

from exo_core.agent.scripted import ScriptedModel
from exo_core.edge import edge_or_installed
from exo_core.errors import ConfigError, ModelError
from exo_core.seams.edge import EdgeKit
from exo_core.seams.home import ExoHome
from exo_core.seams.model import ModelChunk, ModelRequest, ModelTransport

__all__ = ["model_spec", "resolve_model", "NoModel"]

_NO_RUNTIME = (
    "the local model runtime is not installed; run the README's set-up command (it installs "
    "llama-cpp-python and runs `exo models fetch`), or pass --model scripted:FILE"
)


class NoModel:
    """The ``none`` spec: a transport that refuses every call."""

    async def stream(self, request: ModelRequest) -> AsyncIterator[ModelChunk]:
        raise ModelError("no model is configured in this exod (--model none); set 'model' in config.toml")
        yield  # pragma: no cover - makes this an async generator


def model_spec(home: ExoHome, override: str | None = None) -> str:
    """The model spec in force for ``home``."""
    if override or os.environ.get("EXO_MODEL"):
        return override or os.environ["EXO_MODEL"]
    configured = home.config().get("model")
    if configured is not None and not isinstance(configured, str):
        raise ConfigError(f"{home.config_path}: 'model' must be a string such as 'local' or 'scripted:/path'")
    return configured or "local"


def resolve_model(home: ExoHome, spec: str, *, edge: EdgeKit | None = None) -> ModelTransport:
    """The transport for ``spec``; a clear :class:`ConfigError` when it cannot be built.

    ``local`` is the model router with ``edge``'s local and hosted transports (default: the installed edge).
    """
    if spec == "none":
        return NoModel()
    if spec.startswith("scripted:"):
        return ScriptedModel.from_file(Path(spec[len("scripted:") :]).expanduser())
    if spec == "local":
        kit = edge_or_installed(edge)
        if kit.local_factory is None:
            raise ConfigError(_NO_RUNTIME)
        try:
            local = kit.local_factory(home)
        except ImportError as exc:
            raise ConfigError(_NO_RUNTIME) from exc
        from exo_core.models.router import build_router  # the catalog and router load only for this spec

        return build_router(home, local=local, edge=kit)
    raise ConfigError(f"unknown model spec {spec!r}; use 'local', 'none' or 'scripted:PATH'")
