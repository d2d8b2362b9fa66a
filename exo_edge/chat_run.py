"""One generation for a chat-template model, with its native tool calls and the core's say on them.

Run in :class:`~exo_edge.llama_transport.LlamaTransport`'s worker. With tools
offered and ``tool_choice="auto"``:

1. The prompt is the model's own template with the tools (:mod:`exo_edge.chat_template`),
   evaluated once (the prefix the last call left in the KV cache is reused).
2. **Does the model mean to call?** The next-token distribution after the
   assistant's header gives the probability of the call-opening token
   (``<tool_call>``, one token in Qwen's vocabulary). Below :data:`CALL_SHARE`
   the answer is text.
3. **What call?** The call's JSON is generated greedily under a grammar
   built from the offered tools' schemas, so it always parses and names an
   offered tool (:func:`~exo_edge.grammar_decode.greedy_under_grammar`).
4. **Is the call grounded?** The core's judge
   (:func:`exo_core.agent.grounding.call_grounding`) checks the call against
   the person's words. A call that does not act on anything the person said
   is dropped, and the answer is generated as text from the same evaluated
   prompt.
5. **Text** is sampled with the call-opening token banned and streamed
   piece by piece from its first token: once the answer is text it stays text.

``required`` or a tool name goes straight to step 3 (no judge: the caller
asked for a call). Without tools the template is rendered without them and
the answer streams.

:class:`ChatDecision` records steps 2-4 (``transport.last_decision``) for the
benchmarks and the log.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from exo_core.agent.grounding import Grounding, call_grounding
from exo_core.agent.model import ChatMessage, ModelRequest, TextDelta, ToolCall
from exo_core.models.failures import FailureKind, ProviderError
from exo_edge.chat_template import CALL_OPEN, ChatTemplate, MalformedToolCall, native_call_grammar, parse_native_calls
from exo_edge.grammar_decode import common_prefix, greedy_under_grammar

__all__ = ["CALL_SHARE", "ChatDecision", "CallJudge", "run_chat"]

# The call-opening token's probability from which the model's call is taken as a proposal.
CALL_SHARE = 0.5

CallJudge = Callable[[ToolCall, Sequence[ChatMessage]], Grounding]


@dataclass(frozen=True, slots=True)
class ChatDecision:
    """How the last chat call chose between text and a tool call.

    ``call_share`` is the probability of the call-opening token at the first
    position (``None`` when the choice was not the model's: no tools, or a
    call was required); ``proposed`` the call the model wrote, if any;
    ``verdict`` the judge's reason for keeping or dropping it; ``mode`` what
    was answered (``text`` or ``call``).
    """

    mode: str
    call_share: float | None
    proposed: ToolCall | None
    verdict: str


def _open_token(llm: Any) -> int | None:
    ids = llm.tokenize(CALL_OPEN.encode("utf-8"), add_bos=False, special=True)
    return ids[0] if len(ids) == 1 else None


def _eval_prompt(llm: Any, tokens: list[int]) -> int:
    """Evaluate ``tokens`` after the prefix already cached; returns how many were reused."""
    reused = min(common_prefix(llm.input_ids[: llm.n_tokens].tolist(), tokens), len(tokens) - 1)
    llm.n_tokens = reused  # eval() drops the KV cache past this point
    llm.eval(tokens[reused:])
    return reused


def _share(llm: Any, token: int) -> float:
    """The probability of ``token`` as the next token (softmax of the last logits)."""
    import llama_cpp
    import numpy as np

    logits = np.ctypeslib.as_array(llama_cpp.llama_get_logits_ith(llm.ctx, -1), shape=(llm.n_vocab(),))
    top = float(logits.max())
    return float(math.exp(float(logits[token]) - top) / np.exp(logits - top).sum())


def _call(llm: Any, tokens: list[int], request: ModelRequest, cancel: threading.Event) -> dict[str, Any]:
    """The call's JSON, greedily under the tools' grammar, after the opening tag."""
    head = llm.tokenize((CALL_OPEN + "\n").encode("utf-8"), add_bos=False, special=True)
    return greedy_under_grammar(
        llm,
        tokens + head,
        native_call_grammar(request.tools, request.tool_choice),
        max_tokens=request.max_tokens,
        cancel=cancel,
    )


def _text(
    llm: Any,
    tokens: list[int],
    request: ModelRequest,
    *,
    stop: list[str],
    seed: int,
    banned: int | None,
    emit: Callable[[Any], None],
    cancel: threading.Event,
) -> dict[str, Any]:
    """Sample the answer as text and emit each piece as it comes."""
    processors = None
    if banned is not None:

        def ban(_ids: Any, scores: Any) -> Any:
            scores[banned] = -math.inf  # the answer is text: the call-opening token is out
            return scores

        processors = [ban]
    stream = llm.create_completion(
        tokens,
        max_tokens=request.max_tokens,
        temperature=request.temperature,
        stop=stop or None,
        stream=True,
        seed=seed,
        logits_processor=processors,
    )
    pieces: list[str] = []
    finish, interrupted, first_at = "end", False, None
    try:
        for chunk in stream:
            if cancel.is_set():
                interrupted = True
                break
            choice = chunk["choices"][0]
            if choice.get("finish_reason") == "length":
                finish = "length"
            piece = choice.get("text")
            if not piece:
                continue
            if first_at is None:
                first_at = time.perf_counter()
            pieces.append(piece)
            emit(TextDelta(piece))
    finally:
        stream.close()
    return {"text": "".join(pieces), "finish": finish, "interrupted": interrupted, "first_at": first_at}


def run_chat(
    llm: Any,
    template: ChatTemplate,
    request: ModelRequest,
    *,
    n_ctx: int,
    seed: int,
    stop: list[str],
    judge: CallJudge = call_grounding,
    emit: Callable[[Any], None],
    cancel: threading.Event,
) -> tuple[dict[str, Any], ChatDecision]:
    """One call; returns the transport's summary and the decision (see the module docstring)."""
    use_tools = bool(request.tools) and request.tool_choice != "none" and template.native
    prompt = template.render(request.messages, request.tools if use_tools else ())
    tokens = llm.tokenize(prompt.encode("utf-8"), add_bos=False, special=True)
    limit = n_ctx - request.max_tokens
    if len(tokens) > limit:
        raise ProviderError(
            f"the prompt has {len(tokens)} tokens but only {limit} fit in n_ctx {n_ctx} with max_tokens "
            f"{request.max_tokens}; shorten the context or raise n_ctx",
            kind=FailureKind.BAD_REQUEST,
            provider="local",
        )
    opener = _open_token(llm) if use_tools else None
    reused = common_prefix(llm.input_ids[: llm.n_tokens].tolist(), tokens)
    share: float | None = None
    want_call = use_tools and request.tool_choice != "auto"
    if use_tools and request.tool_choice == "auto" and opener is not None:
        reused = _eval_prompt(llm, tokens)
        share = _share(llm, opener)
        want_call = share >= CALL_SHARE
    proposed: ToolCall | None = None
    verdict = "no tools offered" if not use_tools else "the model answered in words"
    if want_call:
        result = _call(llm, tokens, request, cancel)
        if result["interrupted"]:
            return _summary("text", result, tokens, reused), ChatDecision("text", share, None, "interrupted")
        if result["finish"] == "length":
            raise MalformedToolCall(
                f"the local model's tool call was cut at max_tokens {request.max_tokens}; raise max_tokens",
                text=result["text"],
            )
        calls = parse_native_calls(CALL_OPEN + result["text"], request.tools)
        if not calls:
            raise MalformedToolCall(f"the local model's tool call did not parse: {result['text'][:120]!r}", text="")
        proposed = calls[0]
        if request.tool_choice != "auto":
            verdict = f"a call to {request.tool_choice} was required"
            return _summary("call", result, tokens, reused, proposed), ChatDecision("call", share, proposed, verdict)
        grounding = judge(proposed, request.messages)
        verdict = grounding.reason
        if grounding.grounded:
            return _summary("call", result, tokens, reused, proposed), ChatDecision("call", share, proposed, verdict)
    result = _text(llm, tokens, request, stop=stop, seed=seed, banned=opener, emit=emit, cancel=cancel)
    return _summary("text", result, tokens, reused), ChatDecision("text", share, proposed, verdict)


def _summary(
    mode: str, result: dict[str, Any], tokens: list[int], reused: int, call: ToolCall | None = None
) -> dict[str, Any]:
    return {
        "mode": mode,
        "text": result["text"],
        "call": call,
        "finish": result["finish"],
        "interrupted": result["interrupted"],
        "first_at": result["first_at"],
        "prompt_tokens": len(tokens),
        "reused": reused,
    }
