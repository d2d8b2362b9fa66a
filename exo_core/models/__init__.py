"""Model routing for Exo: catalog, router with fallback and cooldown, cost.

The transports are implementations of the model seam and live outside the
core: the local GGUF one and the hosted ones (OpenAI-compatible, Anthropic)
come from the edge (:class:`exo_core.edge.EdgeKit`), the hosted ones made on
first use.

The wiring (what ``resolve_model(home, "local")`` does)::

    from exo_core.edge import installed_edge
    from exo_core.models import build_router
    edge = installed_edge()
    router = build_router(home, local=edge.local_factory(home), edge=edge)
    async for chunk in router.stream(ModelRequest(messages=..., role="main")): ...

See docs/models.md.
"""

from exo_core.models.catalog import Catalog, Credential, ModelPrice, Route, load_catalog, parse_route
from exo_core.models.cooldown import CooldownBook
from exo_core.models.cost import usage_cost
from exo_core.models.router import LocalFactory, ModelRouter, build_router
from exo_core.seams.failures import (
    FailureKind,
    NoUsableRouteError,
    ProviderError,
    RetryableProviderError,
    RoutesExhaustedError,
)

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
