"""From bytes a client sent to bytes exod answers, with no way out but a typed response.

Both byte transports (``POST /command`` and stdio lines) go through here:

* :func:`decode_untrusted` decodes a command; a body over :data:`OFF_LOOP_BYTES`
  is decoded in a worker thread, so the Python part of decoding a large body
  (checking a list of 100,000 values, say) does not hold the event loop that
  every other client is waiting on.
* :func:`answer_bytes` decodes and handles one command and never raises: an
  :class:`~exo_core.errors.ExoError` is its typed error, anything else is
  ``internal``, logged through a :class:`~exo_core.server.quietlog.QuietLog` so a
  client that triggers the same bug a million times writes a few log lines.
* :func:`response_bytes` encodes a response; should a handler's result ever
  hold text that is not valid Unicode, the client gets ``internal`` rather than
  a broken connection or a dead stdio loop.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from exo_core.engine.dispatch import Engine
from exo_core.errors import ExoError
from exo_core.protocol import Command, ErrorInfo, Response, decode_command
from exo_core.server.quietlog import QuietLog

__all__ = ["OFF_LOOP_BYTES", "answer_bytes", "decode_untrusted", "failure_for", "response_bytes"]

log = logging.getLogger(__name__)
_quiet = QuietLog(log)

OFF_LOOP_BYTES = 256 * 1024


async def decode_untrusted(data: bytes) -> tuple[Command, Any]:
    """Decode one command from a client (raises only :class:`ExoError`)."""
    if len(data) <= OFF_LOOP_BYTES:
        return decode_command(data)
    return await asyncio.to_thread(decode_command, data)


def failure_for(exc: BaseException, command_id: str | None = None) -> Response:
    """The typed response for ``exc``: its own code for an ExoError, ``internal`` (logged, quietly) otherwise."""
    if isinstance(exc, ExoError):
        return Response.failure(command_id, ErrorInfo(exc.code, exc.message, exc.field))
    _quiet.log(logging.ERROR, f"intake: {type(exc).__name__}", "a command failed unexpectedly", exc_info=exc)
    return Response.failure(command_id, ErrorInfo("internal", f"internal error: {type(exc).__name__}"))


async def answer_bytes(engine: Engine, data: bytes) -> Response:
    """Decode and handle one command; always a response, never an exception."""
    try:
        command, body = await decode_untrusted(data)
    except Exception as exc:  # noqa: BLE001 - every input gets a typed answer (ExoError) or 'internal'
        return failure_for(exc)
    return await engine.handle(command.type, command.id, body)


def response_bytes(response: Response) -> bytes:
    """``response`` as UTF-8 JSON; an unencodable one becomes ``internal`` instead of an exception."""
    try:
        return response.to_json().encode("utf-8")
    except (UnicodeEncodeError, ValueError, TypeError) as exc:
        _quiet.log(logging.ERROR, "intake: unencodable response", "a response could not be encoded", exc_info=exc)
    fallback = Response.failure(None, ErrorInfo("internal", "the answer held text that is not valid Unicode"))
    return fallback.to_json().encode("utf-8")
