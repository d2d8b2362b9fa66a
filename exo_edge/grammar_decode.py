"""Greedy decoding under a GBNF grammar that checks the likeliest tokens first.

llama-cpp-python's sampler chain applies a grammar to the *whole* vocabulary
before it picks a token. With Gemma 3's 262,144 tokens that means decoding
every token's text and matching it against the grammar's stacks at every
step: about 1.5 tokens/s on one core here, and transient allocations that
lifted exod's peak RSS by 140-180 MB during a tool call.

:func:`greedy_under_grammar` gives the same tokens as that chain at
temperature 0 (the likeliest token the grammar allows) at a fraction of the
cost: it ranks the logits, offers the grammar only the ``top`` likeliest
candidates (and the end-of-generation tokens), and takes the best one it
accepts. When none of them is allowed it widens to ``64 * top``, and only
then to the whole vocabulary, as before (on exod's first tool call in the
footprint conversation: 1 step of 19 widened once, none went further). Generation ends when the grammar
lets an end-of-generation token through (the call is complete), after
``max_tokens``, or when ``cancel`` is set.
"""

from __future__ import annotations

import ctypes
import threading
import time
from typing import Any

from exo_core.seams.failures import FailureKind, ProviderError

__all__ = ["greedy_under_grammar", "common_prefix"]

_TOP = 64


def _token_data_dtype() -> Any:
    import numpy as np

    return np.dtype([("id", np.int32), ("logit", np.float32), ("p", np.float32)])


def common_prefix(a: list[int], b: list[int]) -> int:
    """How many leading tokens ``a`` and ``b`` share (the KV-cache prefix a prompt can reuse)."""
    n = 0
    for x, y in zip(a, b, strict=False):  # the shorter list ends the shared prefix
        if x != y:
            break
        n += 1
    return n


def greedy_under_grammar(
    llm: Any, prompt: list[int], grammar: str, *, max_tokens: int, cancel: threading.Event, top: int = _TOP
) -> dict[str, Any]:
    """Continue ``prompt`` (tokens) greedily under the GBNF ``grammar`` (root rule ``root``).

    Returns the summary :class:`~exo_edge.llama_transport.LlamaTransport` reads:
    ``text``, ``finish`` (``end`` or ``length``), ``interrupted``, ``first_at``,
    and ``logprob``: the sum over the emitted tokens of their log-probability
    under the model's own (unconstrained) distribution, how sure the model is of
    the whole text (``exo_edge.chat_run`` reports it with each candidate call).
    The prefix already in ``llm``'s KV cache is reused, as a completion would.
    """
    import llama_cpp
    import numpy as np

    vocab = llama_cpp.llama_model_get_vocab(llm.model)
    sampler = llama_cpp.llama_sampler_init_grammar(vocab, grammar.encode("utf-8"), b"root")
    if not sampler:
        raise ProviderError(
            "llama.cpp could not parse the tool-call grammar for the offered tools",
            kind=FailureKind.BAD_REQUEST,
            provider="local",
        )
    n_vocab = llm.n_vocab()
    eog = np.array(
        [
            t
            for t in (llm.token_eos(), *_named(llm, ("<end_of_turn>", "<eos>")))
            if 0 <= t < n_vocab and llama_cpp.llama_vocab_is_eog(vocab, t)
        ],
        dtype=np.int64,
    )
    pieces: list[bytes] = []
    finish, interrupted, first_at = "length", False, None
    logprob = 0.0
    try:
        reused = min(common_prefix(llm.input_ids[: llm.n_tokens].tolist(), prompt), len(prompt) - 1)
        llm.n_tokens = reused  # eval() drops the KV cache past this point
        llm.eval(prompt[reused:])
        for _ in range(max_tokens):
            if cancel.is_set():
                interrupted = True
                break
            logits = np.ctypeslib.as_array(llama_cpp.llama_get_logits_ith(llm.ctx, -1), shape=(n_vocab,))
            token = None
            for width in (top, top * 64, n_vocab):  # widen only when none of the likeliest is allowed
                # the likeliest tokens, plus end-of-generation: a complete call allows only that
                best = (
                    np.union1d(np.argpartition(logits, -width)[-width:], eog) if width < n_vocab else np.arange(n_vocab)
                )
                token = _pick(llama_cpp, sampler, best[np.argsort(logits[best])[::-1]], logits)
                if token is not None:
                    break
            if token is None or llama_cpp.llama_vocab_is_eog(vocab, token):
                finish = "end"
                break
            llama_cpp.llama_sampler_accept(sampler, token)
            top_logit = float(logits.max())
            log_total = top_logit + float(np.log(np.exp(logits - top_logit).sum()))
            logprob += float(logits[token]) - log_total
            first_at = first_at or time.perf_counter()
            pieces.append(llm.detokenize([token]))
            llm.eval([token])
    finally:
        llama_cpp.llama_sampler_free(sampler)
    return {
        "text": b"".join(pieces).decode("utf-8", "replace"),
        "finish": finish,
        "saw_call": False,
        "interrupted": interrupted,
        "first_at": first_at,
        "logprob": logprob,
    }


def _named(llm: Any, names: tuple[str, ...]) -> list[int]:
    """Token ids of special tokens spelled ``names`` (those that are one token)."""
    ids = (llm.tokenize(n.encode("utf-8"), add_bos=False, special=True) for n in names)
    return [t[0] for t in ids if len(t) == 1]


def _pick(llama_cpp: Any, sampler: Any, ids: Any, logits: Any) -> int | None:
    """The first of ``ids`` (likeliest first) the grammar allows, or ``None``."""
    import numpy as np

    data = np.zeros(len(ids), dtype=_token_data_dtype())  # llama_token_data: id, logit, p
    data["id"] = ids
    data["logit"] = logits[ids]
    array = llama_cpp.llama_token_data_array(data.ctypes.data_as(llama_cpp.llama_token_data_p), len(ids), -1, True)
    llama_cpp.llama_sampler_apply(sampler, ctypes.byref(array))
    allowed = np.flatnonzero(data["logit"] != -np.inf)  # the grammar sets rejected logits to -inf
    return int(data["id"][allowed[0]]) if len(allowed) else None
