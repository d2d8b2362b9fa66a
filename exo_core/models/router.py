"""The model router (docs/models.md §3): roles, fallback, credential cooldowns, cost.

Code asks for a *role* (``main``, ``aux``, ``decision``), never a model. A
role is an ordered list of ``provider:model`` routes, continued by its
fallback roles (decision → aux → main, aux → main). For each route the router
tries each credential that is not cooling down, in order, and streams.

* It falls back only **before output** (text, reasoning or a tool call). After
  that the error goes to the caller: one reply never splices two models.
* It never falls back on a **bad request** (400, 413, 422).
* When everything is exhausted it raises one :class:`RoutesExhaustedError`
  saying why for each route and when the next one reopens.

The router is itself a :class:`~exo_core.seams.model.ModelTransport`. It
imports none of its transports: ``local`` routes come from the ``local``
factory it is given, hosted ones from the ``hosted`` factory it is given,
else from the edge's (:class:`exo_core.edge.EdgeKit`), made on first use;
without one those routes fail with a clear reason and the router falls back
as for any failed route.
"""

from __future__ import annotations

import os
import time
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import replace
from pathlib import Path

from exo_core.agent.scripted import ScriptedModel
from exo_core.context.window import estimated_window, fit_request
from exo_core.edge import edge_or_installed
from exo_core.errors import ConfigError, ModelError
from exo_core.models.catalog import (
    HOSTED_KINDS,
    ROLE_FALLBACK,
    ROLES,
    Catalog,
    Credential,
    Route,
    load_catalog,
    parse_route,
)
from exo_core.models.cooldown import Clock, CooldownBook
from exo_core.models.cost import priced
from exo_core.seams.edge import EdgeKit, HostedFactory, LocalFactory
from exo_core.seams.failures import FailureKind, NoUsableRouteError, ProviderError, RoutesExhaustedError, classify
from exo_core.seams.home import ExoHome
from exo_core.seams.model import (
    ClosableTransport,
    ContextWindow,
    Finish,
    ModelChunk,
    ModelRequest,
    ModelTransport,
    ReasoningDelta,
    TextDelta,
    ToolCallChunk,
    UsageChunk,
    WarmingTransport,
    WindowedTransport,
)

__all__ = ["ModelRouter", "LocalFactory", "HostedFactory", "build_router", "DEFAULT_HOSTED_WINDOW"]

# The window assumed for a hosted route whose provider sets no context_window (tokens): small enough
# for any current hosted chat model, so an unknown window never overflows.
DEFAULT_HOSTED_WINDOW = 8192

_OUTPUT = (TextDelta, ReasoningDelta, ToolCallChunk)


class ModelRouter:
    """Routes each request's role to a working provider; implements ModelTransport."""

    def __init__(
        self,
        catalog: Catalog,
        *,
        env: Mapping[str, str] | None = None,
        clock: Clock = time.monotonic,
        local: LocalFactory | None = None,
        hosted: HostedFactory | None = None,
        edge: EdgeKit | None = None,
        background: bool = False,
    ) -> None:
        self.catalog = catalog
        # Every request through this router is background work (a decision, a queued job): an engine
        # serves the person's turn first and may cut such a request off for it (docs/models.md, "Concurrency").
        self.background = background
        self.env = dict(os.environ if env is None else env)
        self.cooldowns = CooldownBook(clock)
        self.local = local
        self.hosted = hosted
        self.edge = edge  # makes the hosted transports when ``hosted`` is not given (default: the installed edge)
        self._roles: dict[str, tuple[Route, ...]] = dict(catalog.roles)
        self._transports: dict[tuple[str, str], ModelTransport] = {}

    # -- roles ----------------------------------------------------------------------
    def set_role(self, role: str, routes: Sequence[str]) -> None:
        """Replace ``role``'s routes at run time (``models.set``); each route is checked against the catalog."""
        self._roles[_role(role)] = tuple(self.catalog.check_route(parse_route(r)) for r in routes)

    def chain(self, role: str) -> tuple[Route, ...]:
        """The full ordered route list for ``role``, its fallback roles' routes appended."""
        roles = (_role(role), *ROLE_FALLBACK[role])
        # dict.fromkeys: each route once, at its first place.
        return tuple(dict.fromkeys(route for r in roles for route in self._roles.get(r, ())))

    # -- transports -----------------------------------------------------------------
    def _transport(self, route: Route, cred: Credential) -> ModelTransport:
        key = (str(route), cred.id)
        transport = self._transports.get(key)
        if transport is not None:
            return transport
        spec = self.catalog.provider(route.provider)
        if spec.kind == "local":
            if self.local is None:
                raise ModelError(
                    f"{route}: no local model runtime is wired into this core "
                    "(install the edge extras and start exod with exo_edge)"
                )
            transport = self.local(route.model)
        elif spec.kind == "scripted":
            transport = ScriptedModel.from_file(Path(route.model).expanduser())
        else:
            transport = self._hosted(route).transport(
                spec.kind,
                base_url=spec.base_url,
                model=route.model,
                api_key=cred.key,
                provider=route.provider,
                judge_calls=spec.judge_calls,
                tls_cert=spec.tls_cert,
                serial=spec.serial,
            )
        self._transports[key] = transport
        return transport

    def _hosted(self, route: Route) -> HostedFactory:
        if self.hosted is not None:
            return self.hosted
        make = edge_or_installed(self.edge).hosted
        missing = f"{route}: the hosted-provider transports (exo_edge.hosted) are not installed in this core"
        if make is None:
            raise ProviderError(missing, kind=FailureKind.UNAVAILABLE, provider=route.provider)
        try:
            self.hosted = make(self.catalog.timeouts)
        except ImportError as exc:
            raise ProviderError(missing, kind=FailureKind.UNAVAILABLE, provider=route.provider) from exc
        return self.hosted

    # -- the window -----------------------------------------------------------------
    async def warm(self, request: ModelRequest) -> str:
        """Have the route that would serve ``request.role`` now read its fixed head (the router's
        :class:`WarmingTransport`); a route whose transport cannot says so."""
        for route in self.chain(request.role):
            for cred in self.catalog.credentials(route.provider, self.env):
                if self.cooldowns.remaining(cred.id) > 0:
                    continue
                try:
                    transport = self._transport(route, cred)
                except ModelError:
                    break
                if isinstance(transport, WarmingTransport):
                    return await transport.warm(request)
                return f"{route} keeps no prompt state"
        return "no route"

    async def context_window(self, role: str) -> ContextWindow | None:
        """The window of the route that would serve ``role`` now (the router's :class:`WindowedTransport`).

        That is the first route of the chain with a credential that is not
        cooling down. Its transport's own window when it declares one (the
        local model's tokenizer); else ``context_window`` of its provider in
        the catalog, counted by estimate; else, for hosted kinds,
        :data:`DEFAULT_HOSTED_WINDOW`. A fallback to a route with a smaller
        window is fitted again in :meth:`stream`.
        """
        for route in self.chain(role):
            for cred in self.catalog.credentials(route.provider, self.env):
                if self.cooldowns.remaining(cred.id) > 0:
                    continue
                try:
                    return await self._route_window(route, cred, role)
                except ModelError:
                    break  # this route cannot even be built; stream() falls back past it too
        return None

    async def _route_window(self, route: Route, cred: Credential, role: str) -> ContextWindow | None:
        transport = self._transport(route, cred)
        window = await transport.context_window(role) if isinstance(transport, WindowedTransport) else None
        if window is not None:
            return window
        spec = self.catalog.provider(route.provider)
        where = f"[models.providers.{route.provider}] context_window in config.toml"
        if spec.context_window:
            return estimated_window(spec.context_window, model=str(route), where=where)
        if spec.kind in HOSTED_KINDS:
            return estimated_window(DEFAULT_HOSTED_WINDOW, model=str(route), where=where)
        return None

    async def _fitted(self, transport: ModelTransport, request: ModelRequest) -> ModelRequest:
        """``request`` fitted to ``transport``'s window (a fallback route's may be smaller than the first's)."""
        if not isinstance(transport, WindowedTransport):
            return request
        window = await transport.context_window(request.role)
        if window is None:
            return request
        return await fit_request(window, request)

    # -- streaming ------------------------------------------------------------------
    async def stream(self, request: ModelRequest) -> AsyncIterator[ModelChunk]:
        """Stream ``request`` from the first route that works, falling back before output."""
        if self.background and not request.background:
            request = replace(request, background=True)
        reasons: list[str] = []
        reopen: list[float] = []  # empty at the end: no credential could even be tried
        for route in self.chain(request.role):
            creds = self.catalog.credentials(route.provider, self.env)
            if not creds:
                reasons.append(f"{route}: no key (set {' or '.join(self.catalog.provider(route.provider).key_env)})")
                continue
            price = self.catalog.price(route)
            for cred in creds:
                wait = self.cooldowns.remaining(cred.id)
                if wait > 0:
                    rest = self.cooldowns.get(cred.id)
                    why = rest.detail if rest is not None else "failed"
                    reasons.append(f"{route} [{cred.id}]: cooling down after {why}; reopens in {wait:.0f} s")
                    reopen.append(wait)
                    continue
                started = False
                held: list[ModelChunk] = []
                try:
                    transport = self._transport(route, cred)
                    agen = transport.stream(await self._fitted(transport, request))
                    try:
                        async for chunk in agen:
                            # Usage or a finish before any output is held: the call may still fail and fall back.
                            held.append(priced(chunk, price, route.model) if isinstance(chunk, UsageChunk) else chunk)
                            started = started or isinstance(chunk, _OUTPUT)
                            if started:
                                for h in held:
                                    yield h
                                held.clear()
                    finally:
                        await _aclose(agen)
                except ModelError as exc:
                    kind = classify(exc)
                    status = exc.status
                    rest = self.cooldowns.fail(
                        cred.id,
                        kind,
                        retry_after=exc.retry_after,
                        lone=len(creds) == 1,
                        detail=kind.value + (f" (HTTP {status})" if status else ""),
                    )
                    if started or kind is FailureKind.BAD_REQUEST:
                        raise
                    wait = max(0.0, rest.until - self.cooldowns.clock())
                    reasons.append(f"{route} [{cred.id}]: {exc.message}; reopens in {wait:.0f} s")
                    reopen.append(wait)
                    continue
                self.cooldowns.succeed(cred.id)
                for h in held:
                    yield h
                if not any(isinstance(h, Finish) for h in held) and not started:
                    yield Finish("end")
                return
        if not reopen:
            raise NoUsableRouteError(
                f"no usable model route for role {request.role!r}: "
                + "; ".join(reasons or ["no routes configured (set [models.roles] in config.toml)"]),
                reasons=tuple(reasons),
            )
        soonest = min(reopen)
        raise RoutesExhaustedError(
            f"every model route for role {request.role!r} failed: "
            + "; ".join(reasons)
            + f". The next route reopens in {soonest:.0f} s.",
            reasons=tuple(reasons),
            retry_after=soonest,
        )

    async def aclose(self) -> None:
        """Close the hosted transports' HTTP session and any local transports that can be closed."""
        if self.hosted is not None:
            await self.hosted.aclose()
        for t in self._transports.values():
            await _aclose(t)
        self._transports.clear()


def _role(role: str) -> str:
    if role not in ROLES:
        raise ConfigError(f"unknown model role {role!r}; roles are {', '.join(ROLES)}")
    return role


async def _aclose(closable: object) -> None:
    """Close a stream or a transport that can be closed (an optional capability of the model seam)."""
    if isinstance(closable, ClosableTransport):
        await closable.aclose()


def build_router(
    home: ExoHome,
    *,
    local: LocalFactory | None = None,
    env: Mapping[str, str] | None = None,
    clock: Clock = time.monotonic,
    edge: EdgeKit | None = None,
    background: bool = False,
) -> ModelRouter:
    """The router for an Exo home: catalog + ``[models]`` of its config.toml; hosted routes from ``edge``;
    ``background``: every request it sends is background work (see :class:`ModelRouter`)."""
    catalog = load_catalog(home.config(), env=env)
    return ModelRouter(catalog, env=env, clock=clock, local=local, edge=edge, background=background)
