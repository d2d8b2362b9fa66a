"""The terminal client: prompt, transcript, palette, inline approvals (stdlib only)."""

from exo_core.terminal.app import COMMANDS, TerminalChat, terminal_capabilities
from exo_core.terminal.prefs import TerminalPrefs, load_prefs, prefs_path

__all__ = ["TerminalChat", "COMMANDS", "terminal_capabilities", "TerminalPrefs", "load_prefs", "prefs_path"]
