"""The local decision provider: one forward pass of the local GGUF model (§13.5).

The device needs no second model. The question is rendered as a few-shot
*completion* prompt, which suits a base model such as Gemma 3 270M::

    Is this message a correction, a rule, or neither?
    A. correction: it says the assistant's last answer ... was wrong
    B. rule: ...
    C. neither: ...

    Message: No, the meeting is on Tuesday, not Thursday.
    Answer: A
    ...
    Message: <state>
    Answer:

and the model evaluates it once. The probability of each option is read from
the next-token distribution: the mass on that option's letter (`` A`` and
``A``), renormalised over the options. Nothing is sampled and no text is
written. The head of the prompt is the same for every call of one question,
so llama.cpp's KV cache keeps it and only the message's own tokens are
evaluated (unless a generation on the same model replaced the cache).

The provider shares the :class:`~exo_edge.llama_transport.LlamaTransport`
that answers turns, so it runs in that model's worker, between calls.
"""

from __future__ import annotations

import math
import string
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from exo_core.decisions.question import BadProviderOutput, Question
from exo_core.home import ExoHome
from exo_edge.llama_transport import LlamaTransport

__all__ = ["LocalDecisionProvider", "ForwardPass", "render_prompt", "local_decision_provider"]

LETTERS = string.ascii_uppercase


def render_prompt(question: Question, state: str) -> tuple[str, str]:
    """The prompt as (head, tail): the head is the same for every call of ``question``."""
    lines = [question.text]
    lines += [f"{LETTERS[i]}. {o.replace('_', ' ')}: {question.describe(o)}" for i, o in enumerate(question.options)]
    head = "\n".join(lines) + "\n"
    for text, label in question.examples:
        head += f"\nMessage: {_one_line(text)}\nAnswer: {LETTERS[question.options.index(label)]}\n"
    return head, f"\nMessage: {_one_line(state)}\nAnswer:"


def _one_line(text: str) -> str:
    return " ".join(text.split())[:600]


@dataclass(frozen=True, slots=True)
class ForwardPass:
    """What one pass cost: tokens evaluated, tokens reused from the cache, and the options' share."""

    evaluated: int
    reused: int
    mass: float


class LocalDecisionProvider:
    """A :class:`~exo_core.decisions.question.DecisionProvider` over the local GGUF model."""

    def __init__(self, transport: LlamaTransport, *, timeout: float = 0.5) -> None:
        self.transport = transport
        self.name = f"local:{transport.name}"
        self.timeout = timeout
        self.last: ForwardPass | None = None
        self._letter_ids: dict[str, tuple[int, ...]] = {}

    async def load(self) -> None:
        """Load the model now (so the first decision is not spent loading it)."""
        await self.transport.load()

    async def probabilities(self, question: Question, state: str) -> Mapping[str, float]:
        """One forward pass; the options' letters' probabilities, renormalised."""
        head, tail = render_prompt(question, state)
        letters = LETTERS[:len(question.options)]
        shares = await self.transport.run_exclusive(lambda llm: self._forward(llm, head + tail, letters))
        return dict(zip(question.options, shares))

    def _forward(self, llm: Any, prompt: str, letters: str) -> list[float]:
        """In the model's worker: evaluate the uncached part of ``prompt``, read the last logits."""
        import numpy as np

        tokens = llm.tokenize(prompt.encode("utf-8"), add_bos=True, special=False)
        if len(tokens) >= llm.n_ctx():
            raise BadProviderOutput(f"the decision prompt has {len(tokens)} tokens; n_ctx is {llm.n_ctx()}")
        cached = llm.input_ids[:llm.n_tokens].tolist()
        reused = 0
        for a, b in zip(cached, tokens):
            if a != b:
                break
            reused += 1
        reused = min(reused, len(tokens) - 1)  # always evaluate at least one token to get fresh logits
        llm.n_tokens = reused  # eval() drops the KV cache past this point
        llm.eval(tokens[reused:])
        logits = np.ctypeslib.as_array(llm._ctx.get_logits_ith(-1), shape=(llm.n_vocab(),))
        top = float(logits.max())
        log_total = top + math.log(float(np.exp(logits - top).sum()))
        ids = [self._ids(llm, letter) for letter in letters]
        logps = [float(np.logaddexp.reduce([logits[i] - log_total for i in group])) for group in ids]
        mass = sum(math.exp(lp) for lp in logps)
        self.last = ForwardPass(len(tokens) - reused, reused, mass)
        best = max(logps)
        shares = [math.exp(lp - best) for lp in logps]
        total = sum(shares)
        return [s / total for s in shares]

    def _ids(self, llm: Any, letter: str) -> tuple[int, ...]:
        """The single-token spellings of ``letter`` after ``Answer:`` (`` A``, ``A``)."""
        if letter not in self._letter_ids:
            found = []
            for spelling in (f" {letter}", letter):
                ids = llm.tokenize(spelling.encode("utf-8"), add_bos=False, special=False)
                if len(ids) == 1:
                    found.append(ids[0])
            if not found:
                raise BadProviderOutput(f"the local model has no single token for the option letter {letter}")
            self._letter_ids[letter] = tuple(dict.fromkeys(found))
        return self._letter_ids[letter]


def local_decision_provider(home: ExoHome, *, name: str = "gemma-3-270m", timeout: float = 0.5,
                            transport: LlamaTransport | None = None) -> LocalDecisionProvider:
    """The provider over ``transport`` (the one answering turns), else a transport of its own for ``name``."""
    if transport is None:
        from exo_edge.local import local_factory

        transport = local_factory(home)(name)
    return LocalDecisionProvider(transport, timeout=timeout)
