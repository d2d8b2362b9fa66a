"""How a model call failed: typed provider errors and their failure kinds.

Every transport ends a failed call by raising one of these, carrying the HTTP
status (None for network failures), a retryable flag and any ``retry_after``
the provider stated. The router classifies each into a :class:`FailureKind`,
which decides fallback (never on a bad request) and the cooldown.
"""

from __future__ import annotations

import email.utils
import enum
import time

from exo_core.errors import ModelError, RetryableModelError

__all__ = [
    "FailureKind",
    "ProviderError",
    "RetryableProviderError",
    "RoutesExhaustedError",
    "NoUsableRouteError",
    "kind_for_status",
    "error_for_status",
    "parse_retry_after",
    "classify",
]


class FailureKind(enum.Enum):
    """Why a call failed, as far as fallback and cooldown care."""

    BAD_REQUEST = "bad_request"  # 400, 413, 422: the request is wrong; no fallback
    AUTH = "auth"                # 401, 403: the key is wrong or revoked
    BILLING = "billing"          # 402: out of credit
    NOT_FOUND = "not_found"      # 404: unknown model or path
    RATE_LIMIT = "rate_limit"    # 429 (or a provider's overload signal)
    SERVER = "server"            # 5xx
    NETWORK = "network"          # refused, reset, timeout, stream cut
    UNAVAILABLE = "unavailable"  # a local model that cannot run (missing file, ...)


_RETRYABLE = {FailureKind.RATE_LIMIT, FailureKind.SERVER, FailureKind.NETWORK}


class ProviderError(ModelError):
    """A provider failed in a way retrying the same call will not fix."""

    code = "model_error"

    def __init__(self, message: str, *, kind: FailureKind, status: int | None = None,
                 provider: str = "") -> None:
        super().__init__(message)
        self.kind = kind
        self.status = status
        self.provider = provider
        self.retry_after: float | None = None

    @property
    def retryable(self) -> bool:
        """False: see :class:`RetryableProviderError`."""
        return False


class RetryableProviderError(RetryableModelError):
    """A provider failed transiently (429, 5xx, network); ``retry_after`` if it said."""

    code = "model_retry"

    def __init__(self, message: str, *, kind: FailureKind, status: int | None = None,
                 provider: str = "", retry_after: float | None = None) -> None:
        super().__init__(message, retry_after=retry_after)
        self.kind = kind
        self.status = status
        self.provider = provider

    @property
    def retryable(self) -> bool:
        """True: trying again later may succeed."""
        return True


class RoutesExhaustedError(RetryableModelError):
    """Every route of a role failed or is cooling down.

    ``reasons`` says why for each route and credential; ``retry_after`` is the
    number of seconds until the first one reopens.
    """

    code = "model_retry"

    def __init__(self, message: str, *, reasons: tuple[str, ...], retry_after: float) -> None:
        super().__init__(message, retry_after=retry_after)
        self.reasons = reasons


class NoUsableRouteError(ModelError):
    """No route of a role can be tried at all (no keys, nothing configured)."""

    code = "model_error"

    def __init__(self, message: str, *, reasons: tuple[str, ...]) -> None:
        super().__init__(message)
        self.reasons = reasons


def kind_for_status(status: int) -> FailureKind:
    """The failure kind of an HTTP error status."""
    if status in (400, 413, 422):
        return FailureKind.BAD_REQUEST
    if status in (401, 403):
        return FailureKind.AUTH
    if status == 402:
        return FailureKind.BILLING
    if status == 404:
        return FailureKind.NOT_FOUND
    if status in (408, 409, 425, 429):
        return FailureKind.RATE_LIMIT if status == 429 else FailureKind.SERVER
    if status == 529:  # Anthropic "overloaded"
        return FailureKind.RATE_LIMIT
    if status >= 500:
        return FailureKind.SERVER
    return FailureKind.BAD_REQUEST


def error_for_status(status: int, detail: str, *, provider: str,
                     retry_after: float | None = None) -> ProviderError | RetryableProviderError:
    """The typed error for an HTTP error response, with a message that says what to do."""
    kind = kind_for_status(status)
    hint = {
        FailureKind.BAD_REQUEST: "the request was rejected as invalid; another route would fail the same way",
        FailureKind.AUTH: "check the API key in the provider's key variable",
        FailureKind.BILLING: "the account is out of credit",
        FailureKind.NOT_FOUND: "check the model name and base_url in the catalog or config.toml",
        FailureKind.RATE_LIMIT: "rate limited",
        FailureKind.SERVER: "the provider had a server error",
    }.get(kind, "")
    message = f"{provider}: HTTP {status}: {detail.strip()[:300] or 'no detail'} ({hint})"
    if kind in _RETRYABLE:
        return RetryableProviderError(message, kind=kind, status=status, provider=provider,
                                      retry_after=retry_after)
    return ProviderError(message, kind=kind, status=status, provider=provider)


def parse_retry_after(value: str | None, *, now: float | None = None) -> float | None:
    """Seconds from a ``Retry-After`` header (delta-seconds or an HTTP date)."""
    if not value:
        return None
    value = value.strip()
    try:
        seconds = float(value)
    except ValueError:
        try:
            when = email.utils.parsedate_to_datetime(value)
        except (TypeError, ValueError):
            return None
        if when is None:
            return None
        seconds = when.timestamp() - (time.time() if now is None else now)
    return max(0.0, seconds)


def classify(exc: ModelError) -> FailureKind:
    """The failure kind of any model error (transport-specific or generic)."""
    kind = getattr(exc, "kind", None)
    if isinstance(kind, FailureKind):
        return kind
    if isinstance(exc, RetryableModelError):
        return FailureKind.NETWORK
    return FailureKind.UNAVAILABLE
