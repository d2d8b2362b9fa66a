"""Choosing the summarizer transport from a spec (``--summarizer``, ``$EXO_SUMMARIZER``, config).

The summarizer is any model on the ``aux`` role (docs/context.md). An empty spec means
the core's own model transport (a router sends ``role="aux"`` requests to its
aux route; on a device that is the local model). ``scripted-summary[:...]``
selects the deterministic :class:`~exo_core.context.scripted.ScriptedSummarizer`;
anything else is resolved like the main model's spec.
"""

from __future__ import annotations

import os

from exo_core.context.config import ContextConfig
from exo_core.seams.home import ExoHome
from exo_core.seams.model import ModelTransport

__all__ = ["resolve_summarizer"]


def resolve_summarizer(home: ExoHome, override: str | None = None) -> ModelTransport | None:
    """The summarizer transport, or ``None`` for "use the core's model".

    The spec in force is ``override``, else ``$EXO_SUMMARIZER``, else ``[context] summarizer``.
    """
    spec = override or os.environ.get("EXO_SUMMARIZER") or ContextConfig.from_config(home.config()).summarizer
    if not spec:
        return None
    from exo_core.context.scripted import SPEC_PREFIX, ScriptedSummarizer

    if spec.startswith(SPEC_PREFIX):
        return ScriptedSummarizer.from_spec(spec)
    from exo_core.engine.models import resolve_model

    return resolve_model(home, spec)
