"""The order of one decision call (docs/decisions.md §2): rules, providers, threshold, fallback, record.

1. **Rules in code.** When the rules of the question that match (:class:`~.question.Rule`) all name one
   option, they settle it (provider ``rules``, ``via: rule``) with the question's rule probabilities
   (:meth:`~.question.Question.rule_probabilities`: ``rule_confidence`` for that option, how often the
   rules were right on messages written after them; 1 where that was never measured).
2. **Providers in the person's order**, each within its own timeout (0.5 s
   local, 2 s hosted by default, measured on the injectable clock). A
   timeout, a rate limit, a network error or an answer that is not a
   probability per option moves on to the next provider.
3. **Calibration** per provider and mechanism; the raw numbers are kept.
4. **Threshold** on the calibrated probability of the best option. Below it
   (or when every provider failed) the decision abstains: the question's
   safe default is applied, or it escalates to the main model or the person.
5. **Record**: one ``decision`` ledger entry (hashes and numbers only).

A decision never raises for a provider's failure and never waits longer than
the providers' timeouts added up: a turn never blocks on it.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from exo_core.clock import Clock, SystemClock
from exo_core.decisions.calibration import CalibrationBook
from exo_core.decisions.record import decision_body
from exo_core.errors import ExoError
from exo_core.seams.decision import Decision, DecisionProvider, DraftReadingProvider, Question, normalise
from exo_core.seams.failures import PROVIDER_FAILURES
from exo_core.seams.recorder import Recorder

__all__ = ["Decider", "failure_reason"]

log = logging.getLogger(__name__)


def failure_reason(exc: BaseException) -> str:
    """A one-word reason for the ledger: ``timeout``, a provider failure kind, or the error code."""
    if isinstance(exc, TimeoutError):
        return "timeout"
    if isinstance(exc, PROVIDER_FAILURES):
        return exc.kind.value
    if isinstance(exc, ExoError):
        return exc.code
    return type(exc).__name__


class Decider:
    """Runs questions through rules and the configured providers; records each decision."""

    def __init__(
        self,
        providers: Sequence[DecisionProvider] = (),
        *,
        calibration: CalibrationBook | None = None,
        recorder: Recorder | None = None,
        clock: Clock | None = None,
    ) -> None:
        self.providers = tuple(providers)
        self.calibration = calibration or CalibrationBook()
        self.recorder = recorder
        self.clock = clock or SystemClock()

    async def decide(
        self, question: Question, state: str, *, draft: str | None = None, record: bool = True
    ) -> Decision:
        """Answer ``question`` about ``state``; never raises for a provider's failure.

        ``draft`` is the assistant's text ``state`` answers, when the caller knows it: a provider that
        reads drafts (:class:`DraftReadingProvider`) is shown it. Rules read the state alone.
        """
        start = self.clock.monotonic()
        decision = self._by_rule(question, state) or await self._by_providers(question, state, draft or None)
        decision = replace(decision, seconds=max(0.0, self.clock.monotonic() - start))
        if record and self.recorder is not None:
            decision = replace(decision, entry_id=await self._record(question, state, decision))
        return decision

    def _by_rule(self, question: Question, state: str) -> Decision | None:
        fired = [rule for rule in question.rules if rule.matches(state)]
        # Rules settle a case only when every rule that fires agrees ("No, from now on ..." is both a
        # correction and a rule): a settlement must not depend on the order the rules are listed in.
        if len({rule.option for rule in fired}) != 1:
            return None
        rule = fired[0]
        # Not 1: the rules are wrong on some messages written after them (docs/decisions.md §2). The same
        # numbers are the raw ones; rules are not a fitted provider, so nothing calibrates them.
        probabilities = question.rule_probabilities(rule.option)
        return Decision(
            question.mechanism,
            question.options,
            probabilities,
            probabilities,
            rule.option,
            "rules",
            "rule",
            applied=rule.option,
            rule=rule.name,
        )

    async def _by_providers(self, question: Question, state: str, draft: str | None) -> Decision:
        failures: list[tuple[str, str]] = []
        for provider in self.providers:
            try:
                raw = normalise(question, await self._bounded(provider, question, state, draft), provider.name)
            except (TimeoutError, ExoError) as exc:
                log.info("decision provider %s failed on %s: %s", provider.name, question.mechanism, exc)
                failures.append((provider.name, failure_reason(exc)))
                continue
            used, calibrated = self.calibration.apply(provider.name, question.mechanism, raw)
            best = max(question.options, key=lambda o: used[o])
            if used[best] >= question.threshold:
                return Decision(
                    question.mechanism,
                    question.options,
                    used,
                    raw,
                    best,
                    provider.name,
                    "provider",
                    calibrated=calibrated,
                    applied=best,
                    failures=tuple(failures),
                )
            return _fallback(question, used, raw, provider.name, calibrated, failures)
        even = {o: 1.0 / len(question.options) for o in question.options}
        return _fallback(question, even, even, "none", False, failures)

    async def _bounded(
        self, provider: DecisionProvider, question: Question, state: str, draft: str | None
    ) -> Mapping[str, float]:
        """The provider's answer, or :class:`TimeoutError` once its timeout passes on the clock."""
        if draft is not None and isinstance(provider, DraftReadingProvider):
            call = provider.probabilities_after(question, state, draft)
        else:
            call = provider.probabilities(question, state)
        task = asyncio.ensure_future(call)
        timer = asyncio.ensure_future(self.clock.sleep(provider.timeout))
        try:
            await asyncio.wait({task, timer}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            timer.cancel()
            late = not task.done()
            if late:
                task.cancel()
                task.add_done_callback(_consume)
        if late:
            raise TimeoutError(f"{provider.name} took longer than {provider.timeout} s")
        return task.result()

    async def _record(self, question: Question, state: str, decision: Decision) -> str | None:
        assert self.recorder is not None
        try:
            return await asyncio.to_thread(self.recorder.record, "decision", decision_body(question, state, decision))
        except ExoError:
            log.exception("could not record a %s decision in the ledger", question.mechanism)
            return None


def _fallback(
    question: Question,
    used: Mapping[str, float],
    raw: Mapping[str, float],
    provider: str,
    calibrated: bool,
    failures: list[tuple[str, str]],
) -> Decision:
    """Below the threshold: abstain, apply the safe default or escalate."""
    default = question.default if question.fallback == "default" else None
    escalate = None if question.fallback == "default" else question.fallback
    return Decision(
        question.mechanism,
        question.options,
        dict(used),
        dict(raw),
        None,
        provider,
        "fallback",
        calibrated=calibrated,
        applied=default,
        escalate=escalate,
        failures=tuple(failures),
    )


def _consume(task: asyncio.Future[Any]) -> None:
    """Retrieve a late provider's outcome so it is not reported as never retrieved."""
    if not task.cancelled():
        task.exception()
