"""Model routing for Exo: catalog, router with fallback and cooldown, cost.

The transports are implementations of the model seam and live outside the
core: the local GGUF one in ``exo_edge.local``, the hosted ones (OpenAI-compatible,
Anthropic) in ``exo_edge.hosted``, which the router imports on first use.

The lead's wiring::

    from exo_core.models import build_router
    router = build_router(home, local=exo_edge.local_factory(home))
    async for chunk in router.stream(ModelRequest(messages=..., role="main")): ...

See docs/models.md.
"""

from exo_core.models.catalog import Catalog, Credential, ModelPrice, Route, load_catalog, parse_route
from exo_core.models.cooldown import CooldownBook
from exo_core.models.cost import usage_cost
from exo_core.models.failures import (
    FailureKind,
    NoUsableRouteError,
    ProviderError,
    RetryableProviderError,
    RoutesExhaustedError,
)
from exo_core.models.router import LocalFactory, ModelRouter, build_router

__all__ = [
    "Catalog",
    "Credential",
    "ModelPrice",
    "Route",
    "load_catalog",
    "parse_route",
    "CooldownBook",
    "usage_cost",
    "FailureKind",
    "NoUsableRouteError",
    "ProviderError",
    "RetryableProviderError",
    "RoutesExhaustedError",
    "LocalFactory",
    "ModelRouter",
    "build_router",
]
