"""The link to a model provider, as both sides name it: what counts as this machine, the risks a person
may accept by name, and the TLS context that trusts one pinned certificate.

The core's link check (:mod:`exo_core.models.link`) refuses a route beyond this machine without TLS or a
key; the edge's transports and ``exo models serve`` use the same words (docs/security.md, "The laptop's
engine").
"""

from __future__ import annotations

import ipaddress
import ssl

from exo_core.errors import ConfigError

__all__ = ["INSECURE_CHOICES", "is_loopback_host", "pinned_context"]

# The risks of a route beyond loopback a person may accept by name, per provider:
# ``allow_insecure = ["plain-http"]``.
INSECURE_CHOICES = ("plain-http", "no-key")


def is_loopback_host(host: str) -> bool:
    """Whether ``host`` names this machine only (``localhost``, 127.0.0.0/8, ``::1``)."""
    name = host.strip("[]").lower()
    if name == "localhost":
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


def pinned_context(cert_pem: str) -> ssl.SSLContext:
    """A client TLS context that trusts exactly ``cert_pem`` (the engine's self-signed certificate).

    The host name is not checked: the only anchor is a certificate whose private key never left the
    laptop, so a LAN address or name the certificate does not list still proves nothing else answers.
    """
    try:
        context = ssl.create_default_context(cadata=cert_pem)
    except (ssl.SSLError, ValueError) as exc:
        raise ConfigError(f"the pinned engine certificate is not a PEM certificate ({exc})") from exc
    context.check_hostname = False
    return context
