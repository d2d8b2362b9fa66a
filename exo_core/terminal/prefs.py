"""Terminal taste: theme and keys, in the person's own file, never in project config.

``$XDG_CONFIG_HOME/exo/terminal.toml`` (default ``~/.config/exo/terminal.toml``)::

    theme = "dark"          # dark | light | plain
    [keys]
    palette = "ctrl+p"
    expand = "ctrl+o"
    interrupt = "ctrl+c"

A missing file means the defaults; a malformed one is a clear error naming it.
"""

from __future__ import annotations

import os
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from exo_core.errors import ConfigError

__all__ = ["TerminalPrefs", "THEMES", "prefs_path", "load_prefs"]

# Role -> SGR parameters.
THEMES: dict[str, dict[str, str]] = {
    "dark": {
        "user": "36;1",
        "assistant": "0",
        "tool": "2",
        "ok": "32",
        "bad": "31",
        "ask": "33;1",
        "panel": "34;1",
        "notice": "33",
        "status": "7",
        "dim": "2",
        "prompt": "36",
    },
    "light": {
        "user": "34;1",
        "assistant": "0",
        "tool": "90",
        "ok": "32",
        "bad": "31",
        "ask": "35;1",
        "panel": "34",
        "notice": "35",
        "status": "7",
        "dim": "90",
        "prompt": "34",
    },
    "plain": {},
}
_DEFAULT_KEYS = {"palette": "ctrl+p", "expand": "ctrl+o", "interrupt": "ctrl+c"}


@dataclass(frozen=True, slots=True)
class TerminalPrefs:
    """The person's terminal taste."""

    theme: str = "dark"
    keys: dict[str, str] = field(default_factory=lambda: dict(_DEFAULT_KEYS))

    def paint(self, role: str, text: str) -> str:
        """``text`` in the theme's colour for ``role``."""
        code = THEMES.get(self.theme, {}).get(role)
        return f"\x1b[{code}m{text}\x1b[0m" if code else text


def prefs_path() -> Path:
    """Where the terminal taste file lives."""
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "exo" / "terminal.toml"


def load_prefs(path: Path | None = None) -> TerminalPrefs:
    """Read the taste file (defaults when it does not exist)."""
    path = path or prefs_path()
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return TerminalPrefs()
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path} is not valid TOML ({exc}); fix or delete it") from exc
    theme = data.get("theme", "dark")
    if theme not in THEMES:
        raise ConfigError(f"{path}: theme {theme!r} is not one of {', '.join(THEMES)}")
    raw_keys = data.get("keys", {})
    if not isinstance(raw_keys, dict) or not all(isinstance(v, str) for v in raw_keys.values()):
        raise ConfigError(f'{path}: [keys] maps actions to key names like "ctrl+p"')
    return TerminalPrefs(theme=theme, keys={k: raw_keys.get(k, default) for k, default in _DEFAULT_KEYS.items()})
