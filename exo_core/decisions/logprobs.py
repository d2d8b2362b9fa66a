"""The larger model's decision over HTTP, read as probabilities (docs/decisions.md §3, §7a).

:class:`LogprobProvider` sends an OpenAI-compatible engine (the laptop's ``llama_cpp.server``) the turns the
in-process chat style reads (:func:`~exo_core.decisions.chat_prompt.chat_messages`: the options as words,
the worked examples, the redacted message), asks for one token at temperature 0 with ``top_logprobs``, and
takes each option's share of the engine's most likely first tokens, renormalised over the options. The
numbers are the model's own, as in-process, so calibration has something to work on; a single answer at a
fixed confidence (what :class:`~exo_core.decisions.providers.HostedProvider` gives) is right or wrong and
nothing in between.

A token counts for an option when it is the start of the option's word as the answer's first line writes
it (``correction``/``Correction``: ``cor``, ``correct``, ``Correction``); one that starts two options'
words counts for neither. In-process only each spelling's first token is read (``cor``, ``Correction``):
over HTTP the engine names tokens by their text, not their id, so the two sums differ by the mass on the
word's other beginnings (``correct``). Measured in docs/studies/signal-decisions.md, "Fifth pass".

An engine that sends no log probabilities (one that does not support them, or a route to a kind that
never does) is not given an invented confidence: :class:`NoLogprobs` is raised, a provider failure, so
the decision abstains and goes on to the person or the queue (docs/decisions.md §7a).

Three paths read the larger model this way, with one request (:func:`logprob_request`) and one reading
(:func:`read_top`): exod's live larger model, the ``hosted`` decision provider (``providers = ["hosted"]``,
named ``hosted:chat``), and the proposal queue's drain of a queued decision (``exo_edge/proposal_queue.py``),
which streams the request itself (to count the call's cost) and reads the first :class:`TopTokens` it got.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import TYPE_CHECKING, cast

from exo_core.decisions.chat_prompt import answer_words, chat_messages
from exo_core.decisions.providers import redact
from exo_core.seams.decision import BadProviderOutput, Question
from exo_core.seams.model import ChatMessage, ClosableTransport, ModelRequest, ModelTransport, TopTokens

if TYPE_CHECKING:
    from exo_core.seams.model import Role

__all__ = ["HOSTED", "TOP_LOGPROBS", "LogprobProvider", "NoLogprobs", "logprob_request", "option_shares", "read_top"]

TOP_LOGPROBS = 20  # the most OpenAI's API accepts; past the 20th a token's mass is negligible here
# The ``hosted`` provider's name: ``:chat`` because its numbers are the chat style's shares, not the one letter at
# a fixed 0.9 it was before (ledger entries under plain ``hosted``), so the two are never calibrated together.
HOSTED = "hosted:chat"


class NoLogprobs(BadProviderOutput):
    """The engine answered without the log probabilities it was asked for."""

    code = "no_logprobs"


def option_shares(question: Question, top: TopTokens, *, provider: str = "provider") -> dict[str, float]:
    """Each option's share of the mass on the tokens in ``top`` that start its answer word (see the module
    docstring), renormalised over the options; :class:`BadProviderOutput` when none starts one.

    A log probability that is not a finite number is skipped, and one above 0 (an engine's rounding, or
    garbage) counts as 0 (a probability of 1): the shares are always finite."""
    words = answer_words(question, "chat")
    spellings = [(word, word.capitalize()) for word in words]
    mass = dict.fromkeys(question.options, 0.0)
    for token, logprob in top.tokens:
        if not isinstance(logprob, (int, float)) or not math.isfinite(logprob):
            continue
        starts = [o for o, forms in zip(question.options, spellings, strict=True) if _starts(token, forms)]
        if len(starts) == 1:
            mass[starts[0]] += math.exp(min(float(logprob), 0.0))
    total = sum(mass.values())
    if total <= 0.0:
        shown = ", ".join(repr(token) for token, _ in top.tokens[:5]) or "none"
        raise BadProviderOutput(
            f"{provider}: none of the engine's {len(top.tokens)} most likely tokens starts an option word "
            f"({', '.join(words)}); its top: {shown}"
        )
    return {option: value / total for option, value in mass.items()}


def read_top(question: Question, top: TopTokens | None, *, provider: str) -> dict[str, float]:
    """The options' shares of the answer's first ``top`` tokens (:func:`option_shares`); :class:`NoLogprobs`
    when the engine sent none (``top`` is ``None`` or empty)."""
    if top is None or not top.tokens:
        raise NoLogprobs(
            f"{provider} answered without log probabilities (top_logprobs), so it gives no probability per "
            "option and nothing is made up: point this route at an engine that returns top_logprobs on chat "
            "completions (llama-cpp-python's server does; Anthropic's API does not)"
        )
    return option_shares(question, top, provider=provider)


def logprob_request(
    question: Question,
    state: str,
    draft: str | None = None,
    *,
    role: str = "decision",
    top_logprobs: int = TOP_LOGPROBS,
) -> ModelRequest:
    """The request sent: the chat style's turns over the redacted message (and draft), one token at
    temperature 0 with the ``top_logprobs`` most likely first tokens; background work, so an engine
    shared with the person's turn answers the turn first."""
    shown_draft = None if draft is None else redact(draft)
    turns = chat_messages(question, redact(state), shown_draft)
    messages = tuple(ChatMessage(cast("Role", turn["role"]), turn["content"]) for turn in turns)
    return ModelRequest(
        messages=messages, max_tokens=1, temperature=0.0, role=role, top_logprobs=top_logprobs, background=True
    )


def _starts(token: str, spellings: tuple[str, ...]) -> bool:
    return bool(token) and any(spelling.startswith(token) for spelling in spellings)


class LogprobProvider:
    """A :class:`~exo_core.seams.decision.DecisionProvider` over an engine's ``top_logprobs`` (module docstring).

    ``transport`` is what answers the role (exod's router holding the larger model's route alone).
    """

    def __init__(
        self,
        transport: ModelTransport,
        *,
        name: str = HOSTED,
        role: str = "decision",
        timeout: float = 2.0,
        top_logprobs: int = TOP_LOGPROBS,
    ) -> None:
        self.transport = transport
        self.name = name
        self.role = role
        self.timeout = timeout
        self.top_logprobs = top_logprobs

    def request(self, question: Question, state: str, draft: str | None = None) -> ModelRequest:
        """The request sent (:func:`logprob_request`)."""
        return logprob_request(question, state, draft, role=self.role, top_logprobs=self.top_logprobs)

    async def probabilities(self, question: Question, state: str) -> Mapping[str, float]:
        """The options' shares of the engine's first token; :class:`NoLogprobs` when it sent none."""
        return await self._ask(self.request(question, state), question)

    async def probabilities_after(self, question: Question, state: str, draft: str) -> Mapping[str, float]:
        """As :meth:`probabilities`, with the draft ``state`` answers shown before it."""
        return await self._ask(self.request(question, state, draft), question)

    async def aclose(self) -> None:
        """Close the transport when it holds anything (the router's HTTP session)."""
        if isinstance(self.transport, ClosableTransport):
            await self.transport.aclose()

    async def _ask(self, request: ModelRequest, question: Question) -> Mapping[str, float]:
        first: TopTokens | None = None
        async for chunk in self.transport.stream(request):
            if isinstance(chunk, TopTokens) and first is None:
                first = chunk
        return read_top(question, first, provider=self.name)
