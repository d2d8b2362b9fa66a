"""The context engine: a fresh, complete and bounded model input on every turn (docs/context.md).

* :mod:`.config` — the tunables, with the design's defaults; the token estimate.
* :mod:`.tree` — addresses, the tail, the view plan and the merge rule (pure).
* :mod:`.nodes` — the ``summary_nodes`` table.
* :mod:`.lanes` — live and import lanes, bounded queues, pausing, settling.
* :mod:`.prompt` / :mod:`.redact` — the summarizer's prompt and secret scrubbing.
* :mod:`.view` — rendering a view as the model input.
* :mod:`.engine` — :class:`SummaryTreeContext`, the default engine.
* :mod:`.fit` / :mod:`.window` — each input fitted to the model's window, in a stated order.
* :mod:`.importer` — past conversations from chat exports into sessions.
* :mod:`.scripted` — a deterministic summarizer transport for tests and demos.

Only the configuration is imported here; the rest loads on first use.
"""

from __future__ import annotations

from exo_core.context.config import ContextConfig, estimate_tokens

__all__ = ["ContextConfig", "estimate_tokens"]
