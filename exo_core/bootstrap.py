"""Creating an Exo home and its first store (``exo init``).

Idempotent: an existing home or store is kept as it is (never overwritten),
so running ``exo init`` twice, or after an update, loses nothing.
"""

from __future__ import annotations

import json
from pathlib import Path

from exo_core.errors import ConfigError
from exo_core.home import ExoHome
from exo_core.ledger import ensure_signing_key
from exo_core.private_files import private_dir, private_file
from exo_core.store import init_store

__all__ = ["init_home"]


def init_home(home: ExoHome, *, store: str | None = None, model: str | None = None) -> list[str]:
    """Create the home folders, ``config.toml`` and the store; returns what was done."""
    report: list[str] = []
    private_dir(home.root)  # the home is the person's alone (docs/security.md, "Private files")
    for folder in (home.run_dir, home.keys_dir):
        private_dir(folder, parents=False)
    store_path = Path(store).expanduser().resolve() if store else home.root / "store"
    if not home.config_path.exists():
        # A JSON string is a TOML basic string (same escapes), control characters included.
        lines = [f"store = {json.dumps(str(store_path), ensure_ascii=False)}"]
        if model:
            lines.append(f"model = {json.dumps(model, ensure_ascii=False)}")
        private_file(home.config_path).write_text("\n".join(lines) + "\n", encoding="utf-8")
        report.append(f"wrote {home.config_path}")
    else:
        configured = home.store_path()
        if store and configured != store_path:
            raise ConfigError(f"{home.config_path} already names store {configured}; edit it to change stores")
        store_path = configured
        report.append(f"kept {home.config_path}")
    signer = ensure_signing_key(home.keys_dir)
    report.append(f"signing key {signer.key_id}")
    if store_path.exists() and any(store_path.iterdir()):
        report.append(f"kept store {store_path}")
    else:
        init_store(store_path, owner_key_ids=[signer.key_id])
        report.append(f"created store {store_path} from store_template/ (owner {signer.key_id})")
    report.append(f"Exo home ready at {home.root}")
    return report
