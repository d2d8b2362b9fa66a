"""The one table of protocol command handlers (docs/architecture.md, "Where to add things").

Every command type a client can send (``exo_core/protocol/commands.py``) is served by the handler
named here, and nowhere else registers one: the engine's own session, turn and event commands, the
core's question broker and runtime settings, and the handlers over the person's store folder (taste
rows and onboarding), which exod adds once the core is open on that folder. A command type no table
names answers ``unsupported``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from exo_core.agent.questions import QuestionBroker
from exo_core.engine.dispatch import Engine, Handler
from exo_core.engine.settings import RuntimeSettings, SettingsCore

if TYPE_CHECKING:
    from exo_core.engine.onboarding import Onboarding
    from exo_core.web.taste import TasteRows

__all__ = ["ServedCore", "core_handlers", "store_handlers"]


class ServedCore(SettingsCore, Protocol):
    """What the command table serves of a core (:class:`~exo_core.engine.core.Core` is one)."""

    @property
    def engine(self) -> Engine: ...

    @property
    def questions(self) -> QuestionBroker: ...


def core_handlers(core: ServedCore) -> dict[str, Handler]:
    """The commands every core serves, a test core without a store folder included."""
    engine = core.engine
    settings = RuntimeSettings(core)
    return {
        "hello": engine.hello,
        "session.create": engine.session_create,
        "session.list": engine.session_list,
        "session.get": engine.session_get,
        "session.fork": engine.session_fork,
        "session.resume": engine.session_resume,
        "session.undo": engine.session_undo,
        "turn.send": engine.turn_send,
        "turn.interrupt": engine.turn_interrupt,
        "approval.respond": engine.approval_respond,
        "events.subscribe": engine.events_page,
        "search": engine.search,
        "question.answer": core.questions.handle_answer,
        "models.set": settings.models_set,
        "config.get": settings.config_get,
        "config.set": settings.config_set,
    }


def store_handlers(taste: TasteRows, onboarding: Onboarding) -> dict[str, Handler]:
    """The commands over the person's store folder, which exod opens the core on (exo_core/daemon.py)."""
    return {"taste.list": taste.list, "taste.edit": taste.edit, "store.onboard": onboarding.start}
