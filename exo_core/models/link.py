"""The link check: what a hosted provider's route must have before the router may use it.

The device sends an engine the person's pack, the beliefs retrieved for the question and the
conversation. An engine beyond this machine is a stranger on the network (docs/security.md, "The
laptop's engine"): its route must use TLS (``https://``) and carry a key (``api_key``, or a set of
``key_env`` variables). A route that lacks either is refused when the config is read, before any
connection is made, unless the person accepts that risk by its name in the provider's
``allow_insecure`` (``"plain-http"``, ``"no-key"``). Loopback routes (``localhost``, 127.0.0.0/8,
``::1``) never leave the machine and need neither.
"""

from __future__ import annotations

import json
from urllib.parse import urlsplit

from exo_core.errors import ConfigError
from exo_core.seams.link import INSECURE_CHOICES, is_loopback_host, pinned_context

__all__ = ["check_link"]


def check_link(where: str, base_url: str, *, has_key: bool, allow: tuple[str, ...], tls_cert: str = "") -> None:
    """Raise :class:`ConfigError` when the route at ``base_url`` leaves this machine without TLS or a key
    and the person has not accepted that by name in ``allow``."""
    unknown = sorted(set(allow) - set(INSECURE_CHOICES))
    if unknown:
        raise ConfigError(f"{where}.allow_insecure: unknown {unknown}; the choices are {list(INSECURE_CHOICES)}")
    parts = urlsplit(base_url)
    if tls_cert and parts.scheme != "https":
        raise ConfigError(f"{where}.tls_cert pins a certificate, so base_url must start with https://")
    if tls_cert:
        try:
            pinned_context(tls_cert)
        except ConfigError as exc:
            raise ConfigError(f"{where}.tls_cert: {exc.message}") from exc
    if is_loopback_host(parts.hostname or ""):
        return
    missing = []
    if parts.scheme != "https":
        missing.append("plain-http")
    if not has_key:
        missing.append("no-key")
    refused = [risk for risk in missing if risk not in allow]
    if not refused:
        return
    why = {"plain-http": "it is plain HTTP (no TLS)", "no-key": "it has no key (api_key or key_env)"}
    reasons = " and ".join(why[risk] for risk in refused)
    raise ConfigError(
        f"{where}: {parts.hostname} is beyond this machine and {reasons}, so the person's pack and "
        "conversation would cross the network unprotected. Use the config `exo models serve` printed "
        f"(https, api_key, tls_cert), or accept the risk by name: allow_insecure = {json.dumps(refused)}"
    )
