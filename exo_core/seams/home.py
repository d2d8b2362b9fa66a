"""The Exo home: the machine-local folder beside the person's store.

Layout (docs/architecture.md; the store folder: docs/store.md)::

    $EXO_HOME (default ~/.exo)
      config.toml        machine settings; ``store = "<path>"`` points at the store folder
      sessions.sqlite    sessions, messages, events (the hub's record)
      token              bearer token for TCP (0600, created on demand)
      run/exod.sock      the daemon's Unix socket (run/ is 0700)
      keys/              signing keys (0700)
      trust/             the owner key pinned per store, outside it (0700; docs/security.md)
      ledger-checkpoints.sqlite  checkpoints and the heads this machine wrote (docs/ledger.md §6)
      models/            model files assembled by ``exo models fetch``

The store folder is the person and moves between machines; the home does not.
Everything in the home is the person's alone: folders 0700, files 0600
(:mod:`exo_core.private_files`).
"""

from __future__ import annotations

import os
import tomllib
from dataclasses import dataclass
from pathlib import Path

from exo_core.errors import ConfigError

__all__ = ["ExoHome", "default_home_path"]


def default_home_path() -> Path:
    """``$EXO_HOME`` if set, else ``~/.exo``."""
    env = os.environ.get("EXO_HOME")
    return Path(env).expanduser() if env else Path.home() / ".exo"


class _Under:
    """A path inside the home, read as an attribute (``home.sessions_db``); the layout is the table below."""

    def __init__(self, *parts: str) -> None:
        self.parts = parts

    def __get__(self, home: ExoHome, owner: type | None = None) -> Path:
        return home.root.joinpath(*self.parts)


@dataclass(frozen=True, slots=True)
class ExoHome:
    """Paths inside one Exo home. Creating the object touches no files."""

    root: Path

    @classmethod
    def from_env(cls, override: str | os.PathLike[str] | None = None) -> ExoHome:
        """The home named by ``override``, else ``$EXO_HOME``, else ``~/.exo``."""
        root = Path(override).expanduser() if override else default_home_path()
        return cls(root.resolve())

    config_path = _Under("config.toml")
    sessions_db = _Under("sessions.sqlite")
    token_path = _Under("token")
    run_dir = _Under("run")
    socket_path = _Under("run", "exod.sock")
    keys_dir = _Under("keys")
    trust_dir = _Under("trust")
    models_dir = _Under("models")
    # What the file tools replaced, per session and turn, for session.undo (exo_core.tools.snapshots).
    snapshots_dir = _Under("snapshots")

    def config(self) -> dict[str, object]:
        """The parsed ``config.toml`` (empty when the file is missing)."""
        try:
            raw = self.config_path.read_bytes()
        except FileNotFoundError:
            return {}
        try:
            return tomllib.loads(raw.decode("utf-8"))
        except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
            raise ConfigError(f"{self.config_path} is not valid TOML ({exc}); fix or delete the file") from exc

    def store_path(self, override: str | os.PathLike[str] | None = None) -> Path:
        """The store folder: ``override`` (``--store``), else config ``store``, else ``<home>/store``."""
        if override:
            return Path(override).expanduser().resolve()
        configured = self.config().get("store")
        if configured is not None:
            if not isinstance(configured, str):
                raise ConfigError(f"{self.config_path}: 'store' must be a path string")
            path = Path(configured).expanduser()
            return (path if path.is_absolute() else self.root / path).resolve()
        return self.root / "store"
