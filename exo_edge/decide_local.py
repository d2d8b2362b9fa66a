"""The local decision provider: one forward pass of the local GGUF model (docs/decisions.md).

The device needs no second model. The question becomes a few-shot
*completion* prompt, which suits a base model such as Gemma 3 270M, and the
model evaluates it once. Nothing is sampled and no text is written: the
probability of each option is read from the next-token distribution after
``Answer:`` and renormalised over the options. Two styles:

* ``letters``: the options are lettered (``A. correction: ...``) and the
  examples answer with the letter; an option's share is the mass on its letter
  (`` A`` and ``A``).
* ``words`` (the default): the options are listed by a one-word name and the
  examples answer with it; an option's share is the mass on the first token
  of its word. A base model continues with a meaningful word far better than
  with a letter (see ``docs/benchmarks.md``, "Decisions": the small model is
  near chance with letters).

The head of the prompt (options and examples) is the same for every call of
one question. After its first evaluation its KV-cache state is kept (about
3 MB for Gemma 3 270M) and put back before each later decision on that
question, so a decision evaluates only the message's own tokens, even right
after a generation or another question replaced the cache.

The provider shares the :class:`~exo_edge.llama_transport.LlamaTransport`
that answers turns: it runs in that model's worker, between calls.
"""

from __future__ import annotations

import ctypes
import functools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from exo_core.decisions.chat_prompt import WORDS, answer_words, chat_messages, example_draft, one_line
from exo_core.decisions.providers import DRAFT_NOTE, cut_draft
from exo_core.seams.decision import BadProviderOutput, Question
from exo_core.seams.home import ExoHome
from exo_edge.grammar_decode import common_prefix
from exo_edge.llama_transport import LlamaSettings, LlamaTransport

__all__ = [
    "STYLES",
    "WORDS",
    "LocalDecisionProvider",
    "ForwardPass",
    "render_prompt",
    "answer_words",
    "local_decision_provider",
    "transport_for_file",
    "chat_messages",
]

STYLES = ("words", "letters", "chat")


def render_prompt(question: Question, state: str, style: str = "words", draft: str | None = None) -> tuple[str, str]:
    """The completion prompt as (head, tail): the head is the same for every call of ``question``.

    With ``draft`` (the assistant's text the message answers) each example and the message follow the
    draft they answer (``Assistant: ...``); the head is then that of the question's draft prompt.
    For ``style="chat"`` see :func:`chat_messages` (the model's own template renders them).
    """
    if style not in ("words", "letters"):
        raise ValueError("style must be words or letters for a completion prompt")
    names = answer_words(question, style)
    if style == "letters":
        listed = [
            f"{n}. {o.replace('_', ' ')}: {question.describe(o)}" for n, o in zip(names, question.options, strict=True)
        ]
    else:
        listed = [f"- {n}: {question.describe(o)}" for n, o in zip(names, question.options, strict=True)]
    head = question.text + "\n" + "\n".join(listed)
    if draft is not None:
        head += "\n" + DRAFT_NOTE
    for i, (text, label) in enumerate(question.examples):
        head += "\n\n" + example_draft(question, i, draft is not None, "Assistant: ")
        head += f"Message: {one_line(text)}\nAnswer: {names[question.options.index(label)]}"
    # The tail starts with the blank line, so head and tail tokenized apart give the same tokens as
    # the whole prompt would ("\n\n" is one token).
    if draft is not None:
        return head, f"\n\nAssistant: {cut_draft(draft)}\nMessage: {one_line(state)}\nAnswer:"
    return head, f"\n\nMessage: {one_line(state)}\nAnswer:"


# Stand for the message and the draft while the chat template renders, so the prompt can be cut around them.
_SENTINEL = "\u2063EXO-MESSAGE\u2063"
_DRAFT_SENTINEL = "\u2063EXO-DRAFT\u2063"
_KEEP_CHATS = 64  # rendered chat templates kept per provider (one per question, or per message with neighbours)


@dataclass(frozen=True, slots=True)
class ForwardPass:
    """What one pass cost: tokens evaluated and reused, where the head came from, the options' mass.

    ``head`` is ``cached`` (still in the KV cache), ``restored`` (its saved state put back) or
    ``evaluated`` (the question's first decision).
    """

    evaluated: int
    reused: int
    head: str
    mass: float

    @property
    def restored(self) -> bool:
        """Whether the head's saved state had to be put back."""
        return self.head == "restored"


@dataclass(frozen=True, slots=True)
class _Head:
    tokens: tuple[int, ...]
    state: Any  # a ctypes buffer: the KV cache of sequence 0 after the head


class LocalDecisionProvider:
    """A :class:`~exo_core.seams.decision.DecisionProvider` over the local GGUF model."""

    def __init__(
        self, transport: LlamaTransport, *, timeout: float = 0.5, style: str = "words", keep_heads: int = 8
    ) -> None:
        if style not in STYLES:
            raise ValueError(f"style must be one of {', '.join(STYLES)}")
        self.transport = transport
        self.style = style
        self.name = f"local:{transport.name}" + ("" if style == "words" else f":{style}")
        self.timeout = timeout
        self.keep_heads = keep_heads
        self.last: ForwardPass | None = None
        self._heads: dict[str, _Head] = {}
        self._ids: dict[str, tuple[int, ...]] = {}
        self._chats: dict[str, tuple[str, ...]] = {}

    async def load(self) -> None:
        """Load the model now (so the first decision is not spent loading it)."""
        await self.transport.load()

    async def warm(self, question: Question, *, drafts: bool = False) -> None:
        """Evaluate and keep ``question``'s head now, so its first decision costs what the others do;
        with ``drafts``, the head of its draft prompt first (the plain head stays in the cache)."""
        shapes = (True, False) if drafts else (False,)
        for with_draft in shapes:
            await self.transport.run_exclusive(functools.partial(self._warm_head, question, with_draft))

    def _warm_head(self, question: Question, with_draft: bool, llm: Any) -> _Head:
        """In the model's worker: evaluate one of ``question``'s prompt heads and keep it cached."""
        if self.style == "chat":
            return self._head(llm, self._chat_parts(llm, question, with_draft)[0], True)
        head, _ = render_prompt(question, "", self.style, "" if with_draft else None)
        return self._head(llm, head, False)

    async def probabilities(self, question: Question, state: str) -> Mapping[str, float]:
        """One forward pass; each option's share of the next-token distribution."""
        return await self._probabilities(question, state, None)

    async def probabilities_after(self, question: Question, state: str, draft: str) -> Mapping[str, float]:
        """As :meth:`probabilities`, the message shown after the draft it answers (a head of its own)."""
        return await self._probabilities(question, state, draft)

    async def _probabilities(self, question: Question, state: str, draft: str | None) -> Mapping[str, float]:
        names = answer_words(question, self.style)
        if self.style == "chat":
            shares = await self.transport.run_exclusive(
                lambda llm: self._chat_forward(llm, question, state, draft, names)
            )
        else:
            head, tail = render_prompt(question, state, self.style, draft)
            parts = ((tail, False),)
            shares = await self.transport.run_exclusive(lambda llm: self._forward(llm, head, False, parts, names))
        return dict(zip(question.options, shares, strict=True))

    def _chat_forward(
        self, llm: Any, question: Question, state: str, draft: str | None, names: Sequence[str]
    ) -> list[float]:
        """The chat style: the template's head, then the message (never read as special tokens: a person
        typing ``<|im_end|>`` stays text), then the template's end of turn and the assistant's start.
        With a draft, the draft (as text too) and the template's words between it and the message first."""
        if draft is None:
            head, after = self._chat_parts(llm, question, False)
            return self._forward(llm, head, True, ((one_line(state), False), (after, True)), names)
        head, between, after = self._chat_parts(llm, question, True)
        pieces = ((cut_draft(draft), False), (between, True), (one_line(state), False), (after, True))
        return self._forward(llm, head, True, pieces, names)

    def _chat_parts(self, llm: Any, question: Question, with_draft: bool) -> tuple[str, ...]:
        """The model's chat template rendered around the message: (head, after), or with a draft
        (head, between the draft and the message, after). Kept per question and shape."""
        # The examples are part of the key: a question whose examples are chosen per message (nearest
        # neighbours, exo_core.decisions.neighbours) renders a head of its own for each message. So are the
        # descriptions: two prompts that differ only there (a benchmark comparing them) are two heads.
        shown = (*question.examples, *question.example_drafts)
        named = (question.mechanism, question.text, *question.options, *question.descriptions, str(with_draft))
        key = "\0".join((*named, repr(shown)))
        found = self._chats.get(key)
        if found is not None:
            return found
        template = llm.metadata.get("tokenizer.chat_template")
        if not template:
            raise BadProviderOutput(f"{self.transport.name} has no chat template; use the words style")
        from exo_edge.template_limits import BoundedChatFormatter

        def token_text(token: int) -> str:
            if token < 0:
                return ""
            return llm.detokenize([token], special=True).decode("utf-8", errors="replace")

        formatter = BoundedChatFormatter(
            template,
            eos_token=token_text(llm.token_eos()),
            bos_token=token_text(llm.token_bos()),
            add_generation_prompt=True,
        )
        draft = _DRAFT_SENTINEL if with_draft else None
        prompt = formatter(messages=chat_messages(question, _SENTINEL, draft)).prompt
        if prompt.count(_SENTINEL) != 1 or prompt.count(_DRAFT_SENTINEL) != int(with_draft):
            raise BadProviderOutput(f"{self.transport.name}'s chat template did not render the message once")
        before, after = prompt.split(_SENTINEL)
        parts: tuple[str, ...] = (before, after)
        if with_draft:
            head, between = before.split(_DRAFT_SENTINEL)
            parts = (head, between, after)
        if len(self._chats) >= _KEEP_CHATS:
            self._chats.pop(next(iter(self._chats)))
        self._chats[key] = parts
        return parts

    def _forward(
        self, llm: Any, head: str, special: bool, tail: Sequence[tuple[str, bool]], names: Sequence[str]
    ) -> list[float]:
        """In the model's worker: restore or evaluate the head, evaluate the tail, read the last logits.

        ``tail`` is text pieces, each with whether its special tokens are read as such.
        """
        import numpy as np

        groups = [self._token_ids(llm, n) for n in names]
        if len({g[0] for g in groups}) < len(groups):
            raise BadProviderOutput(f"two options start with the same token ({', '.join(names)}); use letters")
        fresh = head not in self._heads
        head_tokens = self._head(llm, head, special)
        tokens = list(head_tokens.tokens)
        for text, piece_special in tail:
            tokens += llm.tokenize(text.encode("utf-8"), add_bos=False, special=piece_special)
        if len(tokens) >= llm.n_ctx():
            raise BadProviderOutput(f"the decision prompt has {len(tokens)} tokens; n_ctx is {llm.n_ctx()}")
        # The tail is always evaluated whole from the end of the head: the same batch from the same
        # state gives the same numbers, whatever the cache held before (llama.cpp's results depend
        # slightly on how a prompt is split into batches).
        reused = len(head_tokens.tokens)
        restored = common_prefix(llm.input_ids[: llm.n_tokens].tolist(), tokens) < reused
        if restored:
            _restore(llm, head_tokens)
        llm.n_tokens = reused  # eval() drops the KV cache past this point
        llm.eval(tokens[reused:])
        logits = np.ctypeslib.as_array(llm._ctx.get_logits_ith(-1), shape=(llm.n_vocab(),))
        top = float(logits.max())
        log_total = top + math.log(float(np.exp(logits - top).sum()))
        logps = [float(np.logaddexp.reduce([logits[i] - log_total for i in group])) for group in groups]
        if fresh:
            where = "evaluated"
        elif restored:
            where = "restored"
        else:
            where = "cached"
        self.last = ForwardPass(len(tokens) - reused, reused, where, sum(math.exp(lp) for lp in logps))
        best = max(logps)
        shares = [math.exp(lp - best) for lp in logps]
        return [s / sum(shares) for s in shares]

    def _head(self, llm: Any, head: str, special: bool) -> _Head:
        """The head's tokens and KV state, evaluated and saved the first time it is seen."""
        found = self._heads.pop(head, None)
        if found is not None:
            self._heads[head] = found  # most recently used last: the first to go is the least used
            return found
        import llama_cpp

        tokens = llm.tokenize(head.encode("utf-8"), add_bos=True, special=special)
        reused = min(common_prefix(llm.input_ids[: llm.n_tokens].tolist(), tokens), len(tokens) - 1)
        # A head that differs per message (its examples chosen for it) shares its start with a saved
        # one (the question's head without examples): put that back rather than read it again, and
        # always read on from exactly there, so a message gets the same numbers whatever the cache held.
        base = self._longest_saved(tokens)
        if base is not None:
            if reused < base[0]:
                _restore(llm, base[1])
            reused = min(base[0], len(tokens) - 1)
        llm.n_tokens = reused
        llm.eval(tokens[reused:])
        ctx = llm._ctx.ctx
        size = llama_cpp.llama_state_seq_get_size(ctx, 0)
        buffer = (ctypes.c_uint8 * size)()
        if llama_cpp.llama_state_seq_get_data(ctx, buffer, size, 0) != size:
            raise BadProviderOutput("llama.cpp could not save the decision prompt's cache")
        if len(self._heads) >= self.keep_heads:
            self._heads.pop(next(iter(self._heads)))
        self._heads[head] = _Head(tuple(tokens), buffer)
        return self._heads[head]

    def _longest_saved(self, tokens: Sequence[int]) -> tuple[int, _Head] | None:
        """The saved head sharing the longest start with ``tokens`` (and that length), if any shares one."""
        best: tuple[int, _Head] | None = None
        for saved in self._heads.values():
            shared = common_prefix(list(saved.tokens), list(tokens))
            if shared > 0 and (best is None or shared > best[0]):
                best = (shared, saved)
        return best

    def _token_ids(self, llm: Any, name: str) -> tuple[int, ...]:
        """The first token of `` name`` (and of ``name`` / `` Name``): where the answer's mass is read."""
        if name not in self._ids:
            if self.style == "chat":  # the assistant's turn starts a line: the word has no space before it
                spellings = (name, name.capitalize())
            elif len(name) == 1:
                spellings = (f" {name}", name)
            else:
                spellings = (f" {name}", f" {name.capitalize()}")
            ids = [llm.tokenize(s.encode("utf-8"), add_bos=False, special=False)[0] for s in spellings]
            self._ids[name] = tuple(dict.fromkeys(ids))
        return self._ids[name]


def _restore(llm: Any, head: _Head) -> None:
    """Put the head's saved KV state back as sequence 0 and tell llama-cpp-python which tokens it holds."""
    import llama_cpp

    llm._ctx.kv_cache_seq_rm(0, 0, -1)
    size = len(head.state)
    if llama_cpp.llama_state_seq_set_data(llm._ctx.ctx, head.state, size, 0) != size:
        raise BadProviderOutput("llama.cpp could not restore the decision prompt's cache")
    llm.input_ids[: len(head.tokens)] = head.tokens
    llm.n_tokens = len(head.tokens)


def transport_for_file(path: Path, *, name: str = "", threads: int = 1, n_ctx: int = 2048) -> LlamaTransport:
    """A transport of its own over a GGUF file given by path (a model without a manifest yet, or a
    larger model loaded on this machine for a benchmark). Its own prompt format is the model's chat
    template, which is what the ``chat`` style reads."""
    return LlamaTransport(
        LlamaSettings(model_path=Path(path), n_ctx=n_ctx, n_threads=threads, name=name or Path(path).stem)
    )


def local_decision_provider(
    home: ExoHome,
    *,
    name: str = "gemma-3-270m",
    timeout: float = 0.5,
    transport: LlamaTransport | None = None,
    style: str | None = None,
    model_file: str = "",
) -> LocalDecisionProvider:
    """The provider over ``transport`` (the one answering turns), else a transport of its own.

    Its own transport is ``model_file`` (a GGUF in the models folder, or a path) when given, loaded by
    path with the model's own chat template; else the manifest ``name``. ``style`` defaults to
    ``chat`` for a model prompted through its chat template and ``words`` for a base model.
    """
    if transport is None and model_file:
        from exo_core.errors import NotFoundError
        from exo_edge.paths import locate_model_file

        path = Path(model_file).expanduser() if "/" in model_file else locate_model_file(model_file, home)
        if path is None or not path.is_file():
            raise NotFoundError(
                f"the decision model file {model_file} is not in the models folder; "
                "fetch it or set [decisions] local_file to a GGUF path"
            )
        transport = transport_for_file(path)
    if transport is None:
        from exo_edge.local import local_factory

        transport = local_factory(home)(name)
    if style is None:
        style = "chat" if transport.settings.prompt.format == "chat" else "words"
    return LocalDecisionProvider(transport, timeout=timeout, style=style)
