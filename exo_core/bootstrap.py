"""Creating an Exo home and its first store (``exo init``).

Idempotent: an existing home or store is kept as it is (never overwritten),
so running ``exo init`` twice, or after an update, loses nothing. A board
profile (:mod:`exo_core.models.boards`) goes into a new ``config.toml``; an
older one that names no board and sets no ``[models.roles]`` or
``[models.local]`` of its own gets the profile added, the rest of it kept.
"""

from __future__ import annotations

import json
import os
import tomllib
from pathlib import Path

from exo_core.errors import ConfigError, ExoError
from exo_core.ledger import ensure_signing_key
from exo_core.models.boards import BoardProfile, profile_config
from exo_core.private_files import private_dir, private_file
from exo_core.seams.home import ExoHome
from exo_core.store import Store, init_store
from exo_core.store.abilities import Board, refresh_abilities
from exo_core.tools.spec import ToolSpec, abilities

__all__ = ["init_home", "refresh_abilities_note", "default_tool_specs"]


def _apply_board(home: ExoHome, profile: BoardProfile, explicit: bool) -> str:
    """Add ``profile`` to an existing config.toml that has none; what was done."""
    config = home.config()
    current = config.get("board")
    if current is not None:
        if current != profile.name and explicit:
            raise ConfigError(
                f"{home.config_path} already has board = {current!r}; to switch to {profile.name!r} edit its "
                "board, [models.roles] and [models.local] (docs/models.md, Board profiles)"
            )
        return f"kept board {current}"
    models = config.get("models", {})
    if isinstance(models, dict) and ("roles" in models or "local" in models):
        return f"kept {home.config_path}'s own [models] settings (board {profile.name} not applied)"
    top, tables = profile_config(profile)
    old = home.config_path.read_text(encoding="utf-8")
    text = top + "\n" + old.rstrip("\n") + "\n\n" + tables
    try:
        tomllib.loads(text)
    except tomllib.TOMLDecodeError:
        return f"kept {home.config_path} as it is: add the {profile.name} board's tables by hand (docs/models.md)"
    tmp = home.config_path.with_name(".config.toml.tmp")
    tmp.write_text(text, encoding="utf-8")
    os.chmod(tmp, home.config_path.stat().st_mode & 0o777)
    os.replace(tmp, home.config_path)
    return f"added board {profile.name} to {home.config_path}"


def default_tool_specs() -> list[ToolSpec]:
    """The tools exod offers on a home with no plugins: the built-in ones and ``ask_person`` (engine/core.py)."""
    from exo_core.agent.questions import ASK_PERSON
    from exo_core.tools import builtin_tools

    return [*builtin_tools().specs(), ASK_PERSON]


def _board(home: ExoHome) -> Board | None:
    """The home's board profile and its model, when config.toml names a known board."""
    from exo_core.models.boards import BOARDS

    name = home.config().get("board")
    profile = BOARDS.get(name) if isinstance(name, str) else None
    if profile is None:
        return None
    return Board(profile.name, profile.model)


def refresh_abilities_note(home: ExoHome, store_path: Path, specs: list[ToolSpec]) -> str:
    """Write or refresh the store's note of what this Exo can do (exo_core/store/abilities.py); what was done.

    ``exo init`` passes :func:`default_tool_specs`; exod passes the tools it offers (plugins included).
    """
    return refresh_abilities(Store.open(store_path), abilities(specs), board=_board(home))


def init_home(
    home: ExoHome,
    *,
    store: str | None = None,
    model: str | None = None,
    board: BoardProfile | None = None,
    explicit_board: bool = False,
) -> list[str]:
    """Create the home folders, ``config.toml`` and the store; returns what was done.

    ``board`` (a profile) writes its model roles and settings into the config;
    ``explicit_board`` (the person named it) makes a conflicting existing
    board an error instead of a note.
    """
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
        text = "\n".join(lines) + "\n"
        if board is not None:
            top, tables = profile_config(board)
            text = top + "\n" + text + "\n" + tables
        private_file(home.config_path).write_text(text, encoding="utf-8")
        report.append(f"wrote {home.config_path}" + (f" (board {board.name})" if board else ""))
    else:
        configured = home.store_path()
        if store and configured != store_path:
            raise ConfigError(f"{home.config_path} already names store {configured}; edit it to change stores")
        store_path = configured
        report.append(f"kept {home.config_path}")
        if board is not None:
            report.append(_apply_board(home, board, explicit_board))
    signer = ensure_signing_key(home.keys_dir)
    report.append(f"signing key {signer.key_id}")
    if store_path.exists() and any(store_path.iterdir()):
        report.append(f"kept store {store_path}")
    else:
        init_store(store_path, owner_key_ids=[signer.key_id])
        report.append(f"created store {store_path} from store_template/ (owner {signer.key_id})")
    try:
        report.append(refresh_abilities_note(home, store_path, default_tool_specs()))
    except ExoError as exc:  # the home is ready without it; exod tries again when it starts
        report.append(f"did not write the note of what this Exo can do: {exc.message}")
    report.append(f"Exo home ready at {home.root}")
    return report
