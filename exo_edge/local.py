"""The local model provider: what the router calls for ``local:<model>`` routes.

``local_transport(home)`` is what exod uses for its ``local`` model spec: the
model router built from the home's config, with local routes wired here.

``local_factory(home)`` returns a function from a model name (the model
part of the route: a shipped manifest such as ``qwen2.5-coder-0.5b-instruct``,
or a file registered with ``exo models add``) to one shared
:class:`~exo_edge.llama_transport.LlamaTransport`. Settings come from the
``[models.local]`` table of the home's config.toml::

    [models.local]
    n_ctx = 2048      # context window (tokens); every input is fitted to it (docs/context.md)
    n_threads = 2     # decode threads; 1 stands in for a slow board
    n_batch = 256     # prompt tokens evaluated per batch
    n_ubatch = 256    # tokens per compute step (bounds llama.cpp's compute buffer)
    kv_type = "f16"   # KV cache: f16, or q8_0 (half the size; changed a tool call here)
    flash_attn = false # a q8_0 KV cache needs it
    swa_full = true   # full-length sliding-window cache: lets a turn reuse the last prompt's prefix
    use_mmap = true   # map the GGUF (file pages the kernel can drop) instead of copying it
    prefix_cache = true # keep the prompt's fixed head's state in $EXO_HOME/cache/prefix (exo_edge/prefix_state.py)

Nothing is loaded until the first call, and nothing is imported for it either:
the transport, the manifests and the model-file helpers are imported when a
``local:`` route is first used, so idle exod holds none of them
(docs/benchmarks.md §2; ``tests/models/test_lazy_imports.py`` pins it).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from exo_core.errors import ConfigError, NotFoundError
from exo_core.models.router import ModelRouter, build_router
from exo_core.seams.home import ExoHome

if TYPE_CHECKING:
    from exo_edge.llama_transport import LlamaSettings, LlamaTransport
    from exo_edge.manifest import PromptFormat, Sampling

__all__ = ["local_settings", "local_factory", "local_transport"]

_INT_KEYS = ("n_ctx", "n_threads", "n_batch", "n_ubatch", "seed")
_BOOL_KEYS = ("flash_attn", "swa_full", "use_mmap", "prefix_cache")


def _local_config(config: Mapping[str, Any]) -> dict[str, Any]:
    from exo_edge.llama_transport import KV_TYPES  # imported on first use: see the module docstring

    models = config.get("models", {})
    table = models.get("local", {}) if isinstance(models, dict) else {}
    if not isinstance(table, dict):
        raise ConfigError("config.toml: [models.local] must be a table")
    out: dict[str, Any] = {}
    for key, value in table.items():
        if key == "kv_type":
            if value not in KV_TYPES:
                raise ConfigError(f"config.toml: models.local.kv_type must be one of {', '.join(KV_TYPES)}")
        elif key in _BOOL_KEYS:
            if not isinstance(value, bool):
                raise ConfigError(f"config.toml: models.local.{key} must be true or false")
        elif key not in _INT_KEYS:
            raise ConfigError(
                f"config.toml: [models.local] has unknown key {key!r}; "
                f"known: {', '.join((*_INT_KEYS, 'kv_type', *_BOOL_KEYS))}"
            )
        elif isinstance(value, bool) or not isinstance(value, int) or value < (0 if key == "seed" else 1):
            raise ConfigError(f"config.toml: models.local.{key} must be a positive integer")
        out[key] = value
    if out.get("kv_type") == "q8_0" and not out.get("flash_attn"):
        raise ConfigError("config.toml: models.local.kv_type q8_0 needs flash_attn = true")
    return out


def _model_source(home: ExoHome, name: str) -> tuple[Path, PromptFormat, Sampling, int | None]:
    """The file, prompt format, sampling and trained context length of ``name``: a model registered
    with ``exo models add`` (llama-cpp-python's sampling), else a shipped manifest (its file wherever
    fetched)."""
    from exo_edge.manifest import PromptFormat, Sampling, find_manifest, load_manifests
    from exo_edge.paths import locate_model_file
    from exo_edge.registered import load_registered

    registered = load_registered(home)
    if name in registered:
        entry = registered[name]
        return entry.checked_path(), entry.prompt, Sampling(), entry.context_length
    try:
        manifest = find_manifest(name)
    except NotFoundError as exc:
        shipped = ", ".join(m.name for m in load_manifests())
        added = ", ".join(sorted(registered)) or "none"
        raise NotFoundError(
            f"no local model named {name!r}; shipped: {shipped}; registered: {added}. "
            "Register a GGUF you have with `exo models add FILE`"
        ) from exc
    primary = manifest.primary_file
    path = locate_model_file(primary.name, home) or home.models_dir / primary.name
    context = manifest.extra.get("context_length")
    if isinstance(context, bool) or not isinstance(context, int):
        context = None
    return Path(path), manifest.prompt or PromptFormat(), manifest.sampling, context


def local_settings(home: ExoHome, name: str, *, overrides: Mapping[str, Any] | None = None) -> LlamaSettings:
    """Settings for the local model ``name``: its file, prompt format, and ``[models.local]``.

    ``n_ctx`` is capped at the model's trained context length when that is known.
    """
    from exo_edge.llama_transport import LlamaSettings

    path, prompt, sampling, context = _model_source(home, name)
    cfg = _local_config(home.config())
    cfg.update(overrides or {})
    cfg.setdefault("n_threads", min(2, os.cpu_count() or 1))
    if cfg.pop("prefix_cache", True):
        cfg.setdefault("state_dir", home.root / "cache" / "prefix")
    if context is not None and cfg.get("n_ctx", 0) > context:
        cfg["n_ctx"] = context
    return LlamaSettings(model_path=path, prompt=prompt, sampling=sampling, name=name, **cfg)


def local_factory(home: ExoHome, *, overrides: Mapping[str, Any] | None = None) -> Callable[[str], LlamaTransport]:
    """A router ``local=`` factory: one lazily loaded transport per local model name."""
    cache: dict[str, LlamaTransport] = {}

    def make(name: str) -> LlamaTransport:
        from exo_edge.llama_transport import LlamaTransport

        if name not in cache:
            cache[name] = LlamaTransport(local_settings(home, name, overrides=overrides))
        return cache[name]

    return make


def local_transport(home: ExoHome, *, overrides: Mapping[str, Any] | None = None) -> ModelRouter:
    """The transport exod answers with on a device: the model router over the home's roles,
    with ``local:`` routes served by the GGUF in the home's models folder.

    With the default catalog ``main`` is ``local:qwen2.5-coder-0.5b-instruct`` only (the
    ``standard`` board profile's model; ``exo init`` writes the home's profile); a
    ``[models.roles]`` table in config.toml can put a laptop's server first and
    keep the local model as the fallback. Call ``await router.aclose()`` at shutdown.
    """
    return build_router(home, local=local_factory(home, overrides=overrides))
