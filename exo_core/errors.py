"""The one error hierarchy of Exo.

Every error Exo raises on purpose derives from :class:`ExoError`. Each class is
named for the condition and, where it matters, for whose fault it is, and
carries a stable wire ``code`` that the protocol sends in an error response::

    ExoError                         code          whose fault
    ├── UsageError                   bad_request   the caller's: fix the input
    │   ├── ProtocolError            bad_request
    │   │   ├── MalformedMessageError malformed    not JSON / not an object / bad UTF-8
    │   │   ├── UnknownCommandError   unknown_command
    │   │   ├── BadBodyError          bad_body     names the offending field
    │   │   └── PayloadTooLargeError  too_large
    │   ├── NotFoundError            not_found
    │   ├── ConflictError            conflict      state does not allow it now
    │   ├── ConfigError              bad_config
    │   └── UnsupportedError         unsupported   not built in this core
    ├── AccessDeniedError            unauthorized  foreign Host/Origin, another uid (HTTP 403)
    │   └── BearerTokenError         unauthorized  missing/wrong bearer token (HTTP 401)
    ├── ResourceError                unavailable   the environment's
    │   ├── ClosedResourceError      closed        *we* closed it; using it is a bug
    │   ├── BrokenResourceError      broken        the peer or the disk broke it
    │   └── StorageError             storage       a file or database could not be used
    │       └── CorruptDataError     corrupt       stored bytes fail their own checks
    ├── ModelError                   model_error   a model provider failed
    │   └── RetryableModelError      model_retry   rate limit, 5xx, network: try again
    └── InternalError                internal      ours: a bug, reported, connection kept

Each class also carries the ``http_status`` an HTTP front end answers it with.

Other libraries' errors are translated at the boundary with ``raise ... from``
so the original stays on ``__cause__``. Messages say what was wrong and how to
fix it.
"""

from __future__ import annotations

__all__ = [
    "ExoError",
    "UsageError",
    "ProtocolError",
    "MalformedMessageError",
    "UnknownCommandError",
    "BadBodyError",
    "PayloadTooLargeError",
    "NotFoundError",
    "ConflictError",
    "ConfigError",
    "UnsupportedError",
    "AccessDeniedError",
    "BearerTokenError",
    "ResourceError",
    "ClosedResourceError",
    "BrokenResourceError",
    "StorageError",
    "CorruptDataError",
    "ModelError",
    "MalformedToolCallError",
    "RetryableModelError",
    "InternalError",
]


class ExoError(Exception):
    """Base of every error Exo raises on purpose.

    ``code`` is the stable wire name sent in error responses; ``field`` names
    the offending input field where there is one.
    """

    code: str = "error"
    # The HTTP status an HTTP front end answers this error with when it is raised there
    # (exo_core/server/http.py, exo_core/web/routes.py): the caller's fault unless a class says otherwise.
    http_status: int = 400

    def __init__(self, message: str, *, field: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.field = field


class UsageError(ExoError):
    """The caller asked for something invalid; fixing the input fixes it."""

    code = "bad_request"


class ProtocolError(UsageError):
    """A message on the wire does not follow the protocol (its code is its parent's, ``bad_request``)."""


class MalformedMessageError(ProtocolError):
    """The bytes are not a JSON object (bad JSON, bad UTF-8, wrong shape)."""

    code = "malformed"


class UnknownCommandError(ProtocolError):
    """The command ``type`` is not one this core knows."""

    code = "unknown_command"


class BadBodyError(ProtocolError):
    """A command body field is missing, unknown or of the wrong type."""

    code = "bad_body"


class PayloadTooLargeError(ProtocolError):
    """A request body exceeds the size limit."""

    code = "too_large"
    http_status = 413


class NotFoundError(UsageError):
    """A named thing (session, message, node, file) does not exist."""

    code = "not_found"
    http_status = 404


class ConflictError(UsageError):
    """The request is valid but the current state does not allow it."""

    code = "conflict"


class ConfigError(UsageError):
    """A configuration value or file is invalid."""

    code = "bad_config"


class UnsupportedError(UsageError):
    """The request is well formed but this core does not implement it."""

    code = "unsupported"


class AccessDeniedError(ExoError):
    """The caller is not allowed: foreign Host or Origin, other uid (HTTP 403); see also :class:`BearerTokenError`."""

    code = "unauthorized"
    http_status = 403


class BearerTokenError(AccessDeniedError):
    """No or a wrong bearer token: the caller must authenticate (HTTP 401)."""

    http_status = 401


class ResourceError(ExoError):
    """Something in the environment is unavailable."""

    code = "unavailable"


class ClosedResourceError(ResourceError):
    """Used after *this side* closed it: a programming error in the caller."""

    code = "closed"


class BrokenResourceError(ResourceError):
    """The other side (peer, process, disk) broke it; reconnecting may help."""

    code = "broken"


class StorageError(ResourceError):
    """A file or database could not be read or written."""

    code = "storage"


class CorruptDataError(StorageError):
    """Stored bytes fail their own integrity checks (hash, signature, schema)."""

    code = "corrupt"


class ModelError(ExoError):
    """A model provider failed in a way retrying will not fix.

    ``status`` is the provider's HTTP status and ``retry_after`` the seconds it asked to wait, when
    the failure came with them (the router's cooldowns read both; ``None`` otherwise).
    """

    code = "model_error"
    status: int | None = None
    retry_after: float | None = None


class MalformedToolCallError(ModelError):
    """The model asked for a tool call exod will not take apart (arguments nested too deep); nothing ran."""


class RetryableModelError(ModelError):
    """A model provider failed transiently (rate limit, 5xx, network)."""

    code = "model_retry"

    def __init__(self, message: str, *, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class InternalError(ExoError):
    """A bug inside Exo. Reported as ``internal``; the connection stays up."""

    code = "internal"
    http_status = 500
