"""The engine: command dispatch and the assembled core."""

from exo_core.engine.core import Core, CoreOptions
from exo_core.engine.dispatch import Engine, Handler

__all__ = ["Core", "CoreOptions", "Engine", "Handler"]
