"""Creating an Exo home and its first store (``exo init``).

Idempotent: an existing home or store is kept as it is (never overwritten),
so running ``exo init`` twice, or after an update, loses nothing.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from exo_core.errors import ConfigError, StorageError
from exo_core.home import ExoHome

__all__ = ["init_home", "template_dir"]


def template_dir() -> Path:
    """The ``store_template/`` folder shipped beside the packages."""
    here = Path(__file__).resolve().parent.parent / "store_template"
    if not here.is_dir():
        raise StorageError(f"store_template/ not found at {here}; reinstall Exo from its source tree")
    return here


def _quote(value: str) -> str:
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def init_home(home: ExoHome, *, store: str | None = None, model: str | None = None) -> list[str]:
    """Create the home folders, ``config.toml`` and the store; returns what was done."""
    report: list[str] = []
    home.root.mkdir(parents=True, exist_ok=True)
    for folder in (home.run_dir, home.keys_dir):
        folder.mkdir(exist_ok=True)
        os.chmod(folder, 0o700)
    store_path = Path(store).expanduser().resolve() if store else home.root / "store"
    if not home.config_path.exists():
        lines = [f"store = {_quote(str(store_path))}"]
        if model:
            lines.append(f"model = {_quote(model)}")
        home.config_path.write_text("\n".join(lines) + "\n", encoding="utf-8")
        report.append(f"wrote {home.config_path}")
    else:
        configured = home.store_path()
        if store and configured != store_path:
            raise ConfigError(f"{home.config_path} already names store {configured}; edit it to change stores")
        store_path = configured
        report.append(f"kept {home.config_path}")
    if store_path.exists() and any(store_path.iterdir()):
        report.append(f"kept store {store_path}")
    else:
        shutil.copytree(template_dir(), store_path, dirs_exist_ok=True)
        report.append(f"created store {store_path} from store_template/")
    report.append(f"Exo home ready at {home.root}")
    return report
