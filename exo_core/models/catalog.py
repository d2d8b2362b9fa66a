"""The model catalog: providers, routes, roles, prices and timeouts, as data.

The packaged ``catalog.toml`` is the default; the ``[models]`` table of the
Exo home's ``config.toml`` overrides it (providers merge key by key, a role
given there replaces the catalog's). Keys come only from the environment
variables a provider names in ``key_env``; every one that is set becomes a
separate :class:`Credential`.
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from exo_core.errors import ConfigError
from exo_core.models.link import check_link
from exo_core.seams.model import Timeouts

__all__ = [
    "ROLES",
    "ROLE_FALLBACK",
    "ModelPrice",
    "ProviderSpec",
    "Route",
    "Credential",
    "Timeouts",
    "Catalog",
    "parse_route",
    "load_catalog",
    "HOSTED_KINDS",
    "PROVIDER_KINDS",
    "default_catalog_path",
]

ROLES = ("main", "aux", "decision")
# Where a role's chain continues when its own routes are empty or exhausted.
ROLE_FALLBACK: Mapping[str, tuple[str, ...]] = {"main": (), "aux": ("main",), "decision": ("aux", "main")}
# The one list of provider kinds (docs/models.md). Hosted kinds are reached over HTTP at a provider's
# base_url, through the edge's hosted transports (one per kind); ``local`` is the edge's GGUF runtime;
# ``scripted``: the model part of a route is the path of a scripted-model file (tests and demos).
HOSTED_KINDS = ("openai", "anthropic")
PROVIDER_KINDS = (*HOSTED_KINDS, "local", "scripted")


@dataclass(frozen=True, slots=True)
class ModelPrice:
    """List prices in dollars per million tokens."""

    input: float = 0.0
    output: float = 0.0
    cache_read: float | None = None
    cache_write: float | None = None


@dataclass(frozen=True, slots=True)
class ProviderSpec:
    """One provider: its transport kind, base URL, key variables and known models."""

    name: str
    kind: str
    base_url: str = ""
    key_env: tuple[str, ...] = ()
    models: Mapping[str, ModelPrice] = field(default_factory=dict)
    # The models' window in tokens, for sizing each input (docs/context.md); 0: the router's default.
    context_window: int = 0
    # Put the model's proposed tool calls to the core's judge before they run (docs/models.md, "Text or a tool
    # call"): for small models on an engine (the laptop's); off for hosted ones, whose calls it would second-guess.
    judge_calls: bool = False
    # A key written in config.toml itself (the one `exo models serve` prints); never shown in a repr.
    api_key: str = field(default="", repr=False)
    # The PEM certificate this provider's TLS must present (a self-signed engine's, pinned); "": the system's CAs.
    tls_cert: str = ""
    # Risks of the link the person accepted by name (exo_core.models.link.INSECURE_CHOICES).
    allow_insecure: tuple[str, ...] = ()
    # One request at a time from this process, the person's turn first (an engine); false: a hosted service.
    serial: bool = True


@dataclass(frozen=True, slots=True)
class Route:
    """``provider:model``; the model part may itself contain colons or slashes."""

    provider: str
    model: str

    def __str__(self) -> str:
        return f"{self.provider}:{self.model}"


@dataclass(frozen=True, slots=True)
class Credential:
    """One key of a provider (``env`` names its variable; None for keyless servers)."""

    provider: str
    env: str | None
    key: str | None = field(default=None, repr=False)

    @property
    def id(self) -> str:
        """Stable id used by the cooldown book: ``provider`` or ``provider#VAR``."""
        return self.provider if self.env is None else f"{self.provider}#{self.env}"


@dataclass(frozen=True, slots=True)
class Catalog:
    """Providers, roles and timeouts after merging the user's config."""

    providers: Mapping[str, ProviderSpec]
    roles: Mapping[str, tuple[Route, ...]]
    timeouts: Timeouts = Timeouts()

    def provider(self, name: str) -> ProviderSpec:
        """The provider called ``name``."""
        try:
            return self.providers[name]
        except KeyError:
            raise ConfigError(
                f"unknown model provider {name!r}; known: {', '.join(sorted(self.providers))}. "
                "Add it under [models.providers.NAME] in config.toml"
            ) from None

    def price(self, route: Route) -> ModelPrice | None:
        """The list price of ``route``'s model, when the catalog knows it."""
        spec = self.providers.get(route.provider)
        return None if spec is None else spec.models.get(route.model)

    def credentials(self, provider: str, env: Mapping[str, str]) -> tuple[Credential, ...]:
        """Every usable credential of ``provider``: one per set key variable.

        A provider with an ``api_key`` in config.toml has that one; one with no
        ``key_env`` (a local server) has one keyless credential; one whose
        variables are all unset has none.
        """
        spec = self.provider(provider)
        if spec.api_key:
            return (Credential(provider, None, spec.api_key),)
        return (
            tuple(Credential(provider, var, env[var]) for var in spec.key_env if env.get(var))
            if spec.key_env
            else (Credential(provider, None),)
        )

    def check_route(self, route: Route) -> Route:
        """``route`` if its provider exists, else a :class:`ConfigError`."""
        self.provider(route.provider)
        return route


def parse_route(text: str) -> Route:
    """``"provider:model"`` as a :class:`Route`."""
    provider, _, model = text.partition(":") if isinstance(text, str) else ("", "", "")
    if not provider or not model:
        raise ConfigError(
            f"model route {text!r} must be written provider:model, e.g. local:qwen2.5-coder-0.5b-instruct"
        )
    return Route(provider, model)


def default_catalog_path() -> Path:
    """The packaged catalog.toml beside this module."""
    return Path(__file__).with_name("catalog.toml")


def _float(value: Any, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
        raise ConfigError(f"{where} must be a non-negative number")
    return float(value)


def _table(value: Any, where: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise ConfigError(f"{where} must be a table")
    return value


def _price(data: Any, where: str) -> ModelPrice:
    unknown = set(_table(data, where)) - {"input", "output", "cache_read", "cache_write"}
    if unknown:
        raise ConfigError(f"{where}: unknown price keys {sorted(unknown)}")
    return ModelPrice(**{k: _float(v, f"{where}.{k}") for k, v in data.items()})  # absent: the defaults


def _provider(name: str, data: Any, where: str) -> ProviderSpec:
    kind = _table(data, where).get("kind")
    if kind not in PROVIDER_KINDS:
        raise ConfigError(f"{where}.kind must be one of {PROVIDER_KINDS}, not {kind!r}")
    base_url = data.get("base_url", "")
    if not isinstance(base_url, str) or (kind in HOSTED_KINDS and not base_url.startswith(("http://", "https://"))):
        raise ConfigError(f"{where}.base_url must be an http(s) URL")
    key_env = [data["key_env"]] if isinstance(data.get("key_env"), str) else data.get("key_env", [])
    if not isinstance(key_env, list) or not all(isinstance(k, str) and k for k in key_env):
        raise ConfigError(f"{where}.key_env must be a list of environment variable names")
    models = {m: _price(p, f"{where}.models.{m}") for m, p in _table(data.get("models", {}), f"{where}.models").items()}
    window = data.get("context_window", 0)
    if isinstance(window, bool) or not isinstance(window, int) or window < 0:
        raise ConfigError(f"{where}.context_window must be the model's window in tokens (a positive integer)")
    judge_calls = data.get("judge_calls", False)
    if not isinstance(judge_calls, bool):
        raise ConfigError(f"{where}.judge_calls must be true or false")
    api_key = data.get("api_key", "")
    tls_cert = data.get("tls_cert", "")
    allow = data.get("allow_insecure", [])
    if not isinstance(api_key, str) or not isinstance(tls_cert, str):
        raise ConfigError(f"{where}.api_key and {where}.tls_cert must be strings")
    serial = data.get("serial", True)
    if not isinstance(serial, bool):
        raise ConfigError(f"{where}.serial must be true or false")
    if not isinstance(allow, list) or not all(isinstance(a, str) for a in allow):
        raise ConfigError(f'{where}.allow_insecure must be a list of names, e.g. ["plain-http"]')
    if kind in HOSTED_KINDS:
        check_link(where, base_url, has_key=bool(api_key or key_env), allow=tuple(allow), tls_cert=tls_cert)
    return ProviderSpec(
        name,
        kind,
        base_url.rstrip("/"),
        tuple(key_env),
        models,
        window,
        judge_calls,
        api_key=api_key,
        tls_cert=tls_cert,
        allow_insecure=tuple(allow),
        serial=serial,
    )


def _merge(base: dict[str, Any], over: Mapping[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for key, value in over.items():
        out[key] = _merge(out[key], value) if isinstance(value, dict) and isinstance(out.get(key), dict) else value
    return out


def _routes(value: Any, where: str) -> tuple[Route, ...]:
    if not isinstance(value, (str, list)):
        raise ConfigError(f"{where} must be a list of provider:model routes")
    return tuple(parse_route(v) for v in ([value] if isinstance(value, str) else value))


def load_catalog(
    config: Mapping[str, Any] | None = None, *, path: Path | None = None, env: Mapping[str, str] | None = None
) -> Catalog:
    """The catalog at ``path`` (default: packaged) overridden by ``config["models"]``.

    ``$EXO_MODELS_MAIN`` (comma-separated routes) overrides the main role last,
    so a device can point ``main`` at a laptop without editing files.
    """
    source = path or default_catalog_path()
    try:
        data = tomllib.loads(source.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(f"model catalog {source} cannot be read ({exc})") from exc
    merged = _merge(data, _table((config or {}).get("models", {}), "config.toml: [models]"))
    providers_raw = _table(merged.get("providers", {}), "models.providers")
    providers = {n: _provider(n, p, f"models.providers.{n}") for n, p in providers_raw.items()}
    roles_raw = _table(merged.get("roles", {}), "models.roles")
    if set(roles_raw) - set(ROLES):
        raise ConfigError(f"models.roles: unknown roles {sorted(set(roles_raw) - set(ROLES))}; roles are {ROLES}")
    roles = {r: _routes(roles_raw.get(r, []), f"models.roles.{r}") for r in ROLES}
    override = (env if env is not None else os.environ).get("EXO_MODELS_MAIN")
    if override:
        roles["main"] = tuple(parse_route(r.strip()) for r in override.split(",") if r.strip())
    t = _table(merged.get("timeouts", {}), "models.timeouts")
    timeouts = Timeouts(
        **{k: _float(t[k], f"models.timeouts.{k}") for k in ("connect", "first_byte", "idle", "total") if k in t}
    )
    catalog = Catalog(providers, roles, timeouts)
    for routes in roles.values():
        for route in routes:
            catalog.check_route(route)
    return catalog
