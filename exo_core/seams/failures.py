"""How a model call failed: typed provider errors and their failure kinds.

Every transport ends a failed call by raising one of these, carrying the HTTP
status (None for network failures), a retryable flag and any ``retry_after``
the provider stated (the hosted transports map HTTP statuses to kinds in
``exo_edge.hosted.http``). The router classifies each into a :class:`FailureKind`,
which decides fallback (never on a bad request) and the cooldown.
"""

from __future__ import annotations

import enum

from exo_core.errors import ModelError, RetryableModelError

__all__ = [
    "FailureKind",
    "ProviderError",
    "RetryableProviderError",
    "RoutesExhaustedError",
    "NoUsableRouteError",
    "classify",
    "PROVIDER_FAILURES",
]


class FailureKind(enum.Enum):
    """Why a call failed, as far as fallback and cooldown care."""

    BAD_REQUEST = "bad_request"  # 400, 413, 422: the request is wrong; no fallback
    AUTH = "auth"  # 401, 403: the key is wrong or revoked
    BILLING = "billing"  # 402: out of credit
    NOT_FOUND = "not_found"  # 404: unknown model or path
    RATE_LIMIT = "rate_limit"  # 429 (or a provider's overload signal)
    SERVER = "server"  # 5xx
    NETWORK = "network"  # refused, reset, timeout, stream cut
    UNAVAILABLE = "unavailable"  # a local model that cannot run (missing file, ...)


class ProviderError(ModelError):
    """A provider failed in a way retrying the same call will not fix."""

    retryable = False  # see RetryableProviderError

    def __init__(self, message: str, *, kind: FailureKind, status: int | None = None, provider: str = "") -> None:
        super().__init__(message)
        self.kind = kind
        self.status = status
        self.provider = provider
        self.retry_after: float | None = None


class RetryableProviderError(RetryableModelError):
    """A provider failed transiently (429, 5xx, network); ``retry_after`` if it said."""

    retryable = True  # trying again later may succeed

    def __init__(
        self,
        message: str,
        *,
        kind: FailureKind,
        status: int | None = None,
        provider: str = "",
        retry_after: float | None = None,
    ) -> None:
        super().__init__(message, retry_after=retry_after)
        self.kind = kind
        self.status = status
        self.provider = provider


class RoutesExhaustedError(RetryableModelError):
    """Every route of a role failed or is cooling down.

    ``reasons`` says why for each route and credential; ``retry_after`` is the
    number of seconds until the first one reopens.
    """

    def __init__(self, message: str, *, reasons: tuple[str, ...], retry_after: float) -> None:
        super().__init__(message, retry_after=retry_after)
        self.reasons = reasons


class NoUsableRouteError(ModelError):
    """No route of a role can be tried at all (no keys, nothing configured)."""

    def __init__(self, message: str, *, reasons: tuple[str, ...]) -> None:
        super().__init__(message)
        self.reasons = reasons


# The model errors that carry their own :class:`FailureKind` (``kind``): a provider's, classified where it failed.
PROVIDER_FAILURES = (ProviderError, RetryableProviderError)


def classify(exc: ModelError) -> FailureKind:
    """The failure kind of any model error (transport-specific or generic)."""
    if isinstance(exc, PROVIDER_FAILURES):
        return exc.kind
    if isinstance(exc, RetryableModelError):
        return FailureKind.NETWORK
    return FailureKind.UNAVAILABLE
