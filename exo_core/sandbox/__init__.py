"""The OS sandbox for tool processes, and the judgement of which files are exod's own.

Every process a tool starts (the ``bash`` tool's commands, and through them
tests, interpreters, anything exec'd) runs under :class:`Sandbox`: the system
read-only, the workspace read-write, nothing of the Exo home or a store's
private files, a clean environment, no network unless the gate allowed a
network effect, and resource limits. The gate decides consequences; the
sandbox makes a wrong "allow" harmless for secrets (docs/security.md,
"The sandbox").
"""

from exo_core.sandbox.bwrap import INSTALL_HINT, Sandbox, SandboxLimits, clean_environment
from exo_core.sandbox.exod_files import ExodFiles

__all__ = ["Sandbox", "SandboxLimits", "ExodFiles", "clean_environment", "INSTALL_HINT"]
