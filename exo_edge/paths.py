"""Where model files live: the Exo home's models folder, or a shared one.

``exo models fetch`` places files in ``$EXO_HOME/models`` and keeps the built
originals in the machine's shared cache (``~/.cache/exo/models``). Setting
``EXO_MODELS_DIR`` points every home (and the tests) at one folder of already
fetched files, so a fresh test home needs no fetch of its own.
"""

from __future__ import annotations

import os
from pathlib import Path

from exo_core.seams.home import ExoHome

__all__ = ["cache_root", "shared_models_dir", "models_dir_for", "locate_model_file"]


def cache_root() -> Path:
    """``$EXO_CACHE_DIR`` if set, else ``~/.cache/exo``."""
    env = os.environ.get("EXO_CACHE_DIR")
    return Path(env).expanduser() if env else Path.home() / ".cache" / "exo"


def shared_models_dir() -> Path:
    """Where fetch keeps built model files shared by every Exo home on this machine."""
    return cache_root() / "models"


def models_dir_for(home: ExoHome) -> Path:
    """``$EXO_MODELS_DIR`` if set, else ``home.models_dir``: where fetch places files."""
    env = os.environ.get("EXO_MODELS_DIR")
    return Path(env).expanduser() if env else home.models_dir


def locate_model_file(name: str, home: ExoHome | None = None) -> Path | None:
    """The first existing ``name`` in: the home's models folder, ``$EXO_MODELS_DIR``,
    then the shared cache. ``None`` when it was never fetched on this machine."""
    candidates: list[Path] = []
    if home is not None:
        candidates.append(home.models_dir)
    env = os.environ.get("EXO_MODELS_DIR")
    if env:
        candidates.append(Path(env).expanduser())
    candidates.append(shared_models_dir())
    for folder in candidates:
        path = folder / name
        if path.is_file():
            return path
    return None
