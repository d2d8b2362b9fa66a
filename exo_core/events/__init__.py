"""The event hub: numbers every event, saves it, then delivers it (docs/protocol.md).

A low-level part below the agent: the agent loop, the engine, the context engine and the web page
emit through it, and the transports in :mod:`exo_core.server` deliver what it stored.
"""

from exo_core.events.hub import Hub, StoredEvent, Subscription

__all__ = ["Hub", "StoredEvent", "Subscription"]
