"""Every protocol command type is served from the one table (exo_core/engine/handlers.py)."""

from __future__ import annotations

from pathlib import Path

from exo_core.agent.scripted import ScriptedModel
from exo_core.engine.core import Core, CoreOptions
from exo_core.engine.handlers import core_handlers, store_handlers
from exo_core.engine.onboarding import Onboarding
from exo_core.protocol import COMMANDS
from exo_core.seams.home import ExoHome
from exo_core.seams.recorder import NullRecorder
from exo_core.web.taste import TasteRows


async def test_the_tables_serve_every_command_type_once(tmp_path: Path) -> None:
    core = Core.open(ExoHome(tmp_path / "home"), model=ScriptedModel([]), options=CoreOptions(synchronous="NORMAL"))
    async with core:
        served = core_handlers(core)
        store = store_handlers(
            TasteRows(tmp_path / "store", core.hub, NullRecorder()), Onboarding(tmp_path / "store", core)
        )
    assert not set(served) & set(store), "a command type is served twice"
    assert sorted({*served, *store}) == sorted(COMMANDS)


async def test_a_core_answers_its_own_table_and_no_more(tmp_path: Path) -> None:
    """Without exod's store folder the store's commands answer ``unsupported``; the core's own are served."""
    core = Core.open(ExoHome(tmp_path / "home"), model=ScriptedModel([]), options=CoreOptions(synchronous="NORMAL"))
    async with core:
        config = await core.engine.handle("config.get", "c1", _decoded("config.get"))
        taste = await core.engine.handle("taste.list", "c2", _decoded("taste.list"))
    assert config.ok
    assert not taste.ok and taste.error is not None and taste.error.code == "unsupported"


def _decoded(command_type: str) -> object:
    from exo_core.protocol import decode_command

    _, body = decode_command({"id": "x", "type": command_type, "body": {}})
    return body
