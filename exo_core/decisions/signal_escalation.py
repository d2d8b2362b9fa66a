"""The signal decision inside exod, with somewhere for an abstention to go (docs/decisions.md §7a).

exod reads every person message with the signal decision (:mod:`exo_core.learning.chat_signals`).
:class:`SignalSettler` runs it: the rules, the configured providers, then
:class:`~exo_core.decisions.escalation.Escalation` when they abstain:

* the **larger model** decides when it is reachable: ``[decisions] larger``, by default the first route
  of the ``main`` role that is off the device (the laptop's engine, ``main = ["laptop:...", "local:..."]``).
  It runs through a router of its own that holds only that route, so while the laptop is away the local
  model standing in for it in the ``main`` role never answers in the larger model's name. It is asked
  as :class:`~exo_core.decisions.logprobs.LogprobProvider` (the option words' probabilities from the
  engine's ``top_logprobs``, calibrated as ``<route>:chat``); an engine that sends none makes it abstain.
  It also takes what a device model decided below ``defer_below`` (0.9), the device's answer standing
  when it abstains;
* without it, a message that **answers a draft** and may teach (not an ordinary greeting, question or
  request: :mod:`exo_core.decisions.signal_ask`) is put to the person (``question.asked``, worded for
  them, short and silent on a voice client, when ``ask_person`` is on): they are in the conversation,
  and their answer labels the decision;
* anything else, or a question left unanswered, is **queued** for the larger model (the proposal queue,
  kind ``decide``) with the session and the draft it answers.

exod's composition root (``exo_core/cli/serve_cmd.py``) builds it with the proposal queue and the core's
question broker; both are optional (no queue: the abstention stays one, and nothing is learned from it).
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any

from exo_core.decisions.decider import Decider
from exo_core.decisions.escalation import DecisionQueue, Escalation, PersonAsker, PersonWording
from exo_core.decisions.logprobs import LogprobProvider
from exo_core.decisions.setup import DecisionSettings, with_neighbours
from exo_core.decisions.signal_ask import worth_asking
from exo_core.decisions.uses import SIGNAL
from exo_core.edge import EdgeKit
from exo_core.errors import ConfigError
from exo_core.seams.decision import Decision
from exo_core.seams.home import ExoHome

__all__ = ["OFF_DEVICE_KINDS", "SignalSettler", "build_signal_settler", "larger_route", "signal_wording"]

log = logging.getLogger(__name__)

OFF_DEVICE_KINDS = ("openai", "anthropic")  # provider kinds served elsewhere (a "local" model is this device's)
MAX_QUOTED = 120  # characters of the person's message quoted back in the question


def signal_wording(text: str) -> PersonWording:
    """The signal question as the person sees it, quoting their message (options in ``SIGNAL``'s order)."""
    quoted = " ".join(text.split())
    if len(quoted) > MAX_QUOTED:
        quoted = quoted[: MAX_QUOTED - 3] + "..."
    return PersonWording(
        f'Should I learn from "{quoted}"?',
        ("Yes: it corrects your last answer", "Yes: it is a rule from now on", "No: neither"),
        short="Learn from that?",
        quiet=True,
    )


def larger_route(
    config: Mapping[str, Any], settings: DecisionSettings, *, env: Mapping[str, str] | None = None
) -> str | None:
    """The route the larger model is reached on, or ``None`` (``larger = "none"``, or no such route in ``main``)."""
    from exo_core.models import load_catalog, parse_route

    if settings.larger == "none":
        return None
    catalog = load_catalog(config, env=env)
    if settings.larger:
        try:
            chosen = catalog.check_route(parse_route(settings.larger))
        except ConfigError as exc:
            raise ConfigError(f"config.toml: decisions.larger: {exc.message}") from exc
        return str(chosen)
    for route in catalog.roles.get("main", ()):
        if catalog.provider(route.provider).kind in OFF_DEVICE_KINDS:
            return str(route)
    return None


class SignalSettler:
    """Decides a person message's signal, escalating an abstention (see the module's docstring)."""

    def __init__(
        self,
        escalation: Escalation,
        *,
        ask_person: bool = True,
        show_draft: bool = True,
        closers: Sequence[Callable[[], Awaitable[None]]] = (),
    ) -> None:
        self.escalation = escalation
        self.ask_person = ask_person
        self.show_draft = show_draft
        self._closers = tuple(closers)

    async def decide(self, text: str, session: str, draft: str | None, draft_text: str | None = None) -> Decision:
        """The signal of ``text`` in ``session``; ``draft`` is the ledger id of the draft it answers, if any,
        and ``draft_text`` its words (shown to the models that read drafts when ``show_draft``, §3 of
        docs/decisions.md)."""
        waiting = self.ask_person and draft is not None and worth_asking(text)
        shown = draft_text if self.show_draft else None
        settled = await self.escalation.decide(
            SIGNAL,
            text,
            waiting=waiting,
            session_id=session,
            asked=signal_wording(text),
            context={"session": session, "draft": draft},
            draft=shown,
        )
        if settled.route != "decided":
            log.info("signal decision abstained on the device; %s (by %s)", settled.route, settled.decision.provider)
        return settled.decision

    async def aclose(self) -> None:
        """Close the larger model's router (its HTTP session)."""
        for close in self._closers:
            await close()


def build_signal_settler(
    home: ExoHome,
    decider: Decider,
    *,
    queue: DecisionQueue | None = None,
    asker: PersonAsker | None = None,
    env: Mapping[str, str] | None = None,
    edge: EdgeKit | None = None,
) -> SignalSettler:
    """A settler over ``decider`` with the home's ``[decisions]`` escalation settings (``edge``: whose
    sentence embedder picks the larger model's examples when ``neighbours`` names it)."""
    from exo_core.models import build_router
    from exo_core.models.catalog import ROLES

    config = home.config()
    settings = DecisionSettings.from_config(config)
    route = larger_route(config, settings, env=env)
    larger = None
    closers: list[Callable[[], Awaitable[None]]] = []
    if route is not None:
        # Background work: the engine answers the person's turn first (docs/models.md, "Concurrency").
        router = build_router(home, env=env, background=True)
        for role in ROLES:  # every role of this router is the one route: no fallback to a smaller model
            router.set_role(role, [route])
        # The option words' probabilities from the engine's top_logprobs, as the in-process chat style reads
        # them (docs/decisions.md §7a); an engine without them makes the decision abstain, never guess.
        asked = LogprobProvider(router, name=f"{route}:chat", timeout=settings.larger_timeout)
        larger = with_neighbours(asked, home, settings, model="larger", edge=edge)
        closers.append(router.aclose)
    escalation = Escalation(
        decider,
        larger=larger,
        queue=queue,
        asker=asker,
        ask_timeout=settings.ask_timeout,
        defer_below=settings.defer_below,
    )
    return SignalSettler(escalation, ask_person=settings.ask_person, show_draft=settings.show_draft, closers=closers)
