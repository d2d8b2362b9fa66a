"""The protocol client every screen uses."""

from exo_core.client.client import ExoClient, error_from_wire

__all__ = ["ExoClient", "error_from_wire"]
