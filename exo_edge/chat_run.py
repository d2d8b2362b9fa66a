"""One generation for a chat-template model, with its native tool calls and the core's say on them.

Run in :class:`~exo_edge.llama_transport.LlamaTransport`'s worker. With tools
offered and ``tool_choice="auto"``:

1. The prompt is the model's own template with the tools (:mod:`exo_edge.chat_template`),
   evaluated once (the prefix the last call left in the KV cache is reused).
2. **Does the model mean to call?** The next-token distribution after the
   assistant's header gives the probability that the answer opens a call
   (:func:`call_openers`: ``<tool_call>``, or the bare ``{`` or ```` ``` ````
   fence Qwen2.5-Coder 0.5B actually writes). Below :data:`CALL_SHARE` the
   answer is text, unless the person's message opens with an offered tool's
   verb (:func:`exo_core.agent.asking.asked_tools`, ``bidden``: "Run the
   tests"): the person's imperative asks for a call whatever the model's mass.
3. **What call?** The offered tools are ranked by how likely the model is
   to name each one after ``<tool_call>\n{"name": "`` (one evaluation). The
   candidates (:func:`call_candidates`) are first the tools whose verb the
   person used (``named``, up to :data:`CANDIDATES`, in the model's order),
   then the model's likeliest (up to :data:`CANDIDATES`, each after the first
   with at least :data:`CANDIDATE_SHARE` of the offered names' mass). For each,
   the call's JSON is generated greedily under a
   grammar built from that tool's schema, so it always parses
   (:func:`~exo_edge.grammar_decode.greedy_under_grammar`).
4. **Is the call grounded?** A read the person's words point to (they named
   an existing workspace file: ``request.pointed``) is the answer when the
   model leans to text (:func:`_pointed_call`) or ranks another tool first;
   when it ranks the read first it writes the read (a line range, say) and
   the judge rules, the pointed read standing in if it is turned down.
   Otherwise the core's judge
   (:func:`exo_core.agent.grounding.call_grounding`) checks each candidate
   against the person's words; the first it accepts is the answer. When it
   accepts none, the answer is generated as text from the prompt rendered
   without the tools and with the calls told in words, as in step 6: text
   sampled where the model meant to call describes the call instead of
   answering.
5. **Text** is sampled with the call openers banned at its first position and
   streamed piece by piece from its first token: once the answer is text it
   stays text.
6. **A call written as text.** The ban covers the first token only, and the
   0.5B, answering after a tool's result, wrote ``({"name": "ask_person", ...})``
   as its "text" (docs/benchmarks.md §15). So text whose start is call-shaped
   (:func:`~exo_edge.written_calls.call_shaped`: a ``{`` or ``<tool_call>`` behind brackets, quotes or a
   fence) is held back, not streamed. When it is over, a call it spells
   (:func:`~exo_edge.written_calls.written_call`) goes to the judge like any proposal; if the judge
   accepts it, it is the answer's call. Otherwise the answer is generated
   again from the prompt rendered without the tools and with the calls told
   in words (:func:`~exo_edge.written_calls.calls_as_notes`), where the model has no call to write,
   and streamed.

``required`` or a tool name goes straight to step 3 (no judge: the caller
asked for a call). Without tools the template is rendered without them and
the answer streams.

:class:`ChatDecision` records steps 2-4 (``transport.last_decision``) for the
benchmarks and the log.
"""

from __future__ import annotations

import dataclasses
import math
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from exo_core.agent.asking import AskedTools, asked_tools
from exo_core.agent.grounding import Grounding, call_grounding
from exo_core.seams.failures import FailureKind, ProviderError
from exo_core.seams.model import ChatMessage, ModelRequest, TextDelta, ToolCall
from exo_edge.chat_template import (
    CALL_OPEN,
    ChatTemplate,
    MalformedToolCall,
    native_call_grammar,
    parse_native_calls,
)
from exo_edge.grammar_decode import common_prefix, greedy_under_grammar
from exo_edge.llama_load import Draw
from exo_edge.written_calls import call_shaped, calls_as_notes, written_call

__all__ = [
    "CALL_SHARE",
    "CANDIDATES",
    "CANDIDATE_SHARE",
    "AskedReader",
    "ChatDecision",
    "CallJudge",
    "HeadPrep",
    "call_candidates",
    "call_openers",
    "run_chat",
]

# The probability of opening a call at the first position from which the model's call is
# generated and put to the judge (chosen on the development requests, docs/models.md).
CALL_SHARE = 0.25
_OPENINGS = (CALL_OPEN, "{", "```")
# How many tools are tried from each source (the person's verbs, the model's likeliest names), and the
# share of the names' mass a runner-up of the model's needs to be tried.
CANDIDATES = 3
CANDIDATE_SHARE = 0.05

CallJudge = Callable[[ToolCall, Sequence[ChatMessage], Sequence[Mapping[str, Any]]], Grounding]
# Called with the model, the prompt's tokens and the tools the prompt was rendered with, before the prompt
# is read: the transport puts the state of the prompt's fixed head in place (exo_edge.prefix_state).
HeadPrep = Callable[[Any, list[int], Sequence[Mapping[str, Any]]], None]
AskedReader = Callable[[Sequence[ChatMessage], Sequence[Mapping[str, Any]]], AskedTools]


@dataclass(frozen=True, slots=True)
class ChatDecision:
    """How the last chat call chose between text and a tool call.

    ``call_share`` is the probability of the call-opening token at the first
    position (``None`` when the choice was not the model's: no tools, or a
    call was required); ``proposed`` the call the model wrote, if any;
    ``verdict`` the judge's reason for keeping or dropping it; ``mode`` what
    was answered (``text`` or ``call``); ``bidden`` the tools the person's
    leading word named (a call was tried for them even below :data:`CALL_SHARE`).
    """

    mode: str
    call_share: float | None
    proposed: ToolCall | None
    verdict: str
    bidden: tuple[str, ...] = ()


def call_openers(llm: Any) -> frozenset[int]:
    """The tokens an answer that is a call starts with: the call tag, ``{`` or a code fence.

    Qwen2.5-Coder 0.5B, offered tools in its template, almost never writes
    ``<tool_call>`` (its probability at the first position was below 0.001 on
    every development request): it writes the call's JSON bare (``{"``) or in
    a ````json`` fence. Any token whose text starts so counts. One scan of the
    vocabulary per load (151,936 tokens for Qwen: well under a second).
    """
    out = set()
    for token in range(llm.n_vocab()):
        text = llm.detokenize([token], special=True).decode("utf-8", "replace").lstrip()
        if text.startswith(_OPENINGS):
            out.add(token)
    return frozenset(out)


def _eval_prompt(llm: Any, tokens: list[int]) -> int:
    """Evaluate ``tokens`` after the prefix already cached; returns how many were reused."""
    reused = min(common_prefix(llm.input_ids[: llm.n_tokens].tolist(), tokens), len(tokens) - 1)
    llm.n_tokens = reused  # eval() drops the KV cache past this point
    llm.eval(tokens[reused:])
    return reused


def _share(llm: Any, tokens: frozenset[int]) -> float:
    """The probability that the next token is one of ``tokens`` (softmax of the last logits)."""
    import llama_cpp
    import numpy as np

    logits = np.ctypeslib.as_array(llama_cpp.llama_get_logits_ith(llm.ctx, -1), shape=(llm.n_vocab(),))
    weights = np.exp(logits - logits.max())
    ids = np.fromiter(tokens, dtype=np.int64, count=len(tokens))
    return float(weights[ids].sum() / weights.sum())


def _call(llm: Any, tokens: list[int], request: ModelRequest, choice: str, cancel: threading.Event) -> dict[str, Any]:
    """The call's JSON, greedily under the grammar of ``choice`` (a tool name, or any), after the opening tag."""
    head = llm.tokenize((CALL_OPEN + "\n").encode("utf-8"), add_bos=False, special=True)
    return greedy_under_grammar(
        llm,
        tokens + head,
        native_call_grammar(request.tools, choice),
        max_tokens=request.max_tokens,
        cancel=cancel,
    )


def _ranked_tools(llm: Any, tokens: list[int], tools: Sequence[Mapping[str, Any]]) -> list[tuple[str, float]]:
    """The offered tools, likeliest first, as the model would name them in a call.

    The prompt, the opening tag and ``{"name": "`` are evaluated once; each
    tool is scored by the probability of the first token where its name's
    tokens part from the others' common head (names sharing that token tie
    and keep their offered order), as a share of the mass on all offered names.
    """
    head = CALL_OPEN + '\n{"name": "'
    spelled = {
        str(t["name"]): llm.tokenize((head + str(t["name"])).encode("utf-8"), add_bos=False, special=True)
        for t in tools
    }
    shared = min(common_prefix(a, b) for a in spelled.values() for b in spelled.values())
    first = next(iter(spelled.values()))[:shared]
    _eval_prompt(llm, tokens + first)
    import llama_cpp
    import numpy as np

    logits = np.ctypeslib.as_array(llama_cpp.llama_get_logits_ith(llm.ctx, -1), shape=(llm.n_vocab(),))
    weights = np.exp(logits - logits.max())
    scored = [(name, float(weights[ids[shared]]) if len(ids) > shared else 0.0) for name, ids in spelled.items()]
    # shares among the offered names: the model's mass on names it invents ("save_note") is left out
    total = sum(w for _, w in scored) or 1.0
    return sorted(((name, w / total) for name, w in scored), key=lambda item: -item[1])


def call_candidates(ranked: Sequence[tuple[str, float]], named: Sequence[str]) -> list[str]:
    """The tools to write a call for, in the order they go to the judge.

    ``ranked`` is every offered tool with its share of the model's mass on
    names, likeliest first; ``named`` the tools whose verb the person used.
    Those come first (the person's own word is better evidence of the tool
    than the first token of its name: asked to "Write ... to the file
    todo.txt", the 0.5B ranked ``write_file`` below three others), up to
    :data:`CANDIDATES`, in the model's order; then the model's likeliest, up
    to :data:`CANDIDATES`, a runner-up only with :data:`CANDIDATE_SHARE`.
    """
    first = [name for name, _ in ranked if name in named][:CANDIDATES]
    out = list(first)
    for rank, (name, share) in enumerate(ranked[:CANDIDATES]):
        if rank > 0 and share < CANDIDATE_SHARE:
            break
        if name not in out:
            out.append(name)
    return out


def _grounded_call(
    llm: Any,
    tokens: list[int],
    request: ModelRequest,
    judge: CallJudge,
    cancel: threading.Event,
    named: Sequence[str],
    pointed: ToolCall | None = None,
) -> tuple[dict[str, Any] | None, ToolCall | None, ToolCall | None, str]:
    """The first call the judge accepts among :func:`call_candidates`.

    Returns the accepted generation's summary and call (both ``None`` when
    every candidate was turned down; the summary alone when interrupted),
    the first proposal, and the verdicts (each with the candidate's whole-call
    log-probability, for the benchmarks: docs/benchmarks.md §13).

    With a ``pointed`` call (a read of a file the person named), the model
    writes its own call only when it ranks that tool first (it may choose a
    line range); otherwise, or when its call is turned down, the pointed call
    is the answer. Asked "Open todo.txt: what should I return?", the 0.5B's
    likeliest call was ``recall {"query": "what should I return?"}``
    (docs/benchmarks.md §15).
    """
    first: ToolCall | None = None
    verdicts = []
    ranked = _ranked_tools(llm, tokens, request.tools)
    if pointed is not None:
        # The model writes the pointed read itself only when it ranks that tool first (a line range, say).
        candidates = [name for name, _ in ranked[:1] if name == pointed.name]
    else:
        candidates = call_candidates(ranked, named)
    for name in candidates:
        result = _call(llm, tokens, request, name, cancel)
        if result["interrupted"]:
            return result, None, first, "interrupted"
        try:
            call = _parsed(result, request)
        except MalformedToolCall as exc:  # a candidate cut at max_tokens is one the person never sees
            verdicts.append(f"{name}: {exc.message}")
            continue
        first = first or call
        grounding = judge(call, request.messages, request.tools)
        verdicts.append(f"{grounding.reason} (log p {result['logprob']:.2f})")
        if grounding.grounded:
            return result, call, first, grounding.reason
    if pointed is not None:
        summary = {"text": "", "finish": "tool_calls", "interrupted": False, "first_at": None}
        verdicts.append(f"the person named the file {pointed.arguments.get('path')!r}: {pointed.name}")
        return summary, pointed, first, "; ".join(verdicts)
    return None, None, first, "; ".join(verdicts)


def _parsed(result: dict[str, Any], request: ModelRequest) -> ToolCall:
    """The one call in a constrained generation, or a :class:`MalformedToolCall`."""
    if result["finish"] == "length":
        raise MalformedToolCall(
            f"the local model's tool call was cut at max_tokens {request.max_tokens}; raise max_tokens",
            text=result["text"],
        )
    calls = parse_native_calls(CALL_OPEN + result["text"], request.tools)
    if not calls:
        raise MalformedToolCall(f"the local model's tool call did not parse: {result['text'][:120]!r}", text="")
    return calls[0]


def _text(
    llm: Any,
    tokens: list[int],
    request: ModelRequest,
    *,
    stop: list[str],
    draw: Draw,
    banned: frozenset[int],
    emit: Callable[[Any], None],
    cancel: threading.Event,
    hold: bool = False,
) -> dict[str, Any]:
    """Sample the answer as text and emit each piece as it comes.

    ``banned`` tokens may not open the answer (the call openers: the answer is
    text); later, a code block or a brace is the answer's own business. With
    ``hold``, pieces wait until :func:`call_shaped` can tell; an answer that is
    call-shaped is never emitted, and the summary says ``held``.
    """
    processors = None
    if banned:
        import numpy as np

        ids = np.fromiter(banned, dtype=np.int64, count=len(banned))
        first = len(tokens)

        def ban(input_ids: Any, scores: Any) -> Any:
            if len(input_ids) == first:
                scores[ids] = -math.inf
            return scores

        processors = [ban]
    stream = llm.create_completion(
        tokens,
        max_tokens=request.max_tokens,
        stop=stop or None,
        stream=True,
        **draw.kwargs(request),
        logits_processor=processors,
    )
    pieces: list[str] = []
    finish, interrupted, first_at = "end", False, None
    # None: still deciding whether the answer is a call written as text; False: streaming; True: held back
    held: bool | None = None if hold else False
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
            if held is None:
                held = call_shaped("".join(pieces))
                if held is False:
                    emit(TextDelta("".join(pieces)))
            elif held is False:
                emit(TextDelta(piece))
    finally:
        stream.close()
    text = "".join(pieces)
    if held is None and text:  # the whole answer was too short to tell: it is text
        emit(TextDelta(text))
    return {"text": text, "finish": finish, "interrupted": interrupted, "first_at": first_at, "held": held is True}


def run_chat(
    llm: Any,
    template: ChatTemplate,
    request: ModelRequest,
    *,
    n_ctx: int,
    draw: Draw,
    stop: list[str],
    openers: frozenset[int],
    judge: CallJudge = call_grounding,
    asking: AskedReader = asked_tools,
    emit: Callable[[Any], None],
    cancel: threading.Event,
    prepare: HeadPrep | None = None,
) -> tuple[dict[str, Any], ChatDecision]:
    """One call; returns the transport's summary and the decision (see the module docstring).

    ``openers`` are the model's call-opening tokens (:func:`call_openers`);
    ``asking`` reads which tools the person's words name (steps 2 and 3);
    ``prepare`` is told the prompt's tokens before any of them is read.
    """
    use_tools = bool(request.tools) and request.tool_choice != "none" and template.native
    if use_tools:
        prompt = template.render(request.messages, request.tools, cancel=cancel)
    else:  # earlier calls rendered natively, the model writes more of them even offered no tools (step 6)
        prompt = template.render(calls_as_notes(request.messages), (), cancel=cancel)
    tokens = llm.tokenize(prompt.encode("utf-8"), add_bos=False, special=True)
    limit = n_ctx - request.max_tokens
    if len(tokens) > limit:
        raise ProviderError(
            f"the prompt has {len(tokens)} tokens but only {limit} fit in n_ctx {n_ctx} with max_tokens "
            f"{request.max_tokens}; shorten the context or raise n_ctx",
            kind=FailureKind.BAD_REQUEST,
            provider="local",
        )
    if prepare is not None:
        prepare(llm, tokens, request.tools if use_tools else ())
    banned = openers if use_tools else frozenset()
    reused = common_prefix(llm.input_ids[: llm.n_tokens].tolist(), tokens)
    share: float | None = None
    want_call = use_tools and request.tool_choice != "auto"
    asked = AskedTools()
    if use_tools and request.tool_choice == "auto" and openers:
        reused = _eval_prompt(llm, tokens)
        share = _share(llm, openers)
        asked = asking(request.messages, request.tools)
        want_call = share >= CALL_SHARE or bool(asked.bidden)
    proposed: ToolCall | None = None
    verdict = "no tools offered" if not use_tools else "the model answered in words"
    pointed = request.pointed[0] if use_tools and request.tool_choice == "auto" and request.pointed else None
    if pointed is not None and not want_call:
        return _pointed_call(pointed, tokens, reused, share)
    if want_call and request.tool_choice != "auto":
        result = _call(llm, tokens, request, request.tool_choice, cancel)
        if result["interrupted"]:
            return _summary("text", result, tokens, reused), ChatDecision("text", share, None, "interrupted")
        proposed = _parsed(result, request)
        verdict = f"a call ({request.tool_choice}) was required"
        return _summary("call", result, tokens, reused, proposed), ChatDecision("call", share, proposed, verdict)
    if want_call:
        found, accepted, proposed, verdict = _grounded_call(llm, tokens, request, judge, cancel, asked.named, pointed)
        if found is not None and accepted is None:  # interrupted while writing a candidate
            decision = ChatDecision("text", share, proposed, verdict, asked.bidden)
            return _summary("text", found, tokens, reused), decision
        if found is not None:
            decision = ChatDecision("call", share, accepted, verdict, asked.bidden)
            return _summary("call", found, tokens, reused, accepted), decision
        summary, decision = _words_without_tools(
            llm,
            template,
            request,
            share,
            proposed,
            verdict,
            stop=stop,
            draw=draw,
            openers=openers,
            emit=emit,
            cancel=cancel,
        )
        return summary, dataclasses.replace(decision, bidden=asked.bidden)
    result = _text(llm, tokens, request, stop=stop, draw=draw, banned=banned, emit=emit, cancel=cancel, hold=use_tools)
    if result["held"] and result["interrupted"]:
        # the person never saw it, so none of it is the answer (kept, it would show the model a call next turn)
        result = {**result, "text": ""}
    if not result["held"] or result["interrupted"]:
        return _summary("text", result, tokens, reused), ChatDecision("text", share, proposed, verdict, asked.bidden)
    evaluated = (tokens, reused)
    summary, decision = _written_out(
        llm,
        template,
        request,
        result,
        evaluated,
        share,
        stop=stop,
        draw=draw,
        judge=judge,
        openers=openers,
        emit=emit,
        cancel=cancel,
    )
    return summary, dataclasses.replace(decision, bidden=asked.bidden)


def _pointed_call(
    call: ToolCall, tokens: list[int], reused: int, share: float | None
) -> tuple[dict[str, Any], ChatDecision]:
    """The call the person's words point to (a named workspace file's read), made for the model.

    The core found it grounded already (:mod:`exo_core.agent.named_files`):
    the person named a file that exists while asking about it, so its content
    comes first, and the model decides the rest with it in front of it.
    """
    why = f"the person named the file {call.arguments.get('path')!r}: {call.name}"
    result = {"text": "", "finish": "tool_calls", "interrupted": False, "first_at": None}
    return _summary("call", result, tokens, reused, call), ChatDecision("call", share, call, why)


def _written_out(
    llm: Any,
    template: ChatTemplate,
    request: ModelRequest,
    held: dict[str, Any],
    evaluated: tuple[list[int], int],
    share: float | None,
    *,
    stop: list[str],
    draw: Draw,
    judge: CallJudge,
    openers: frozenset[int],
    emit: Callable[[Any], None],
    cancel: threading.Event,
) -> tuple[dict[str, Any], ChatDecision]:
    """A text answer held back as call-shaped: the judge's call, or text from the prompt without tools (step 6)."""
    written = written_call(held["text"], request.tools)
    verdict = "the text was call-shaped but spelled no offered call"
    if written is not None:
        grounding = judge(written, request.messages, request.tools)
        if grounding.grounded:
            tokens, reused = evaluated
            summary = _summary("call", {**held, "first_at": None}, tokens, reused, written)
            return summary, ChatDecision("call", share, written, f"a call written as text: {grounding.reason}")
        verdict = f"a call written as text ({written.name}) turned down: {grounding.reason}"
    return _words_without_tools(
        llm, template, request, share, written, verdict, stop=stop, draw=draw, openers=openers, emit=emit, cancel=cancel
    )


def _words_without_tools(
    llm: Any,
    template: ChatTemplate,
    request: ModelRequest,
    share: float | None,
    proposed: ToolCall | None,
    verdict: str,
    *,
    stop: list[str],
    draw: Draw,
    openers: frozenset[int],
    emit: Callable[[Any], None],
    cancel: threading.Event,
) -> tuple[dict[str, Any], ChatDecision]:
    """The answer in words from the prompt without tools, the calls made so far told as notes (steps 4 and 6).

    Text sampled from a prompt where the model meant to call describes the call
    instead of answering: after reading ``todo.txt`` the 0.5B wanted the same read
    again and, turned down, wrote "To read the file todo.txt ... you can use the
    `read_file` function"; from this prompt it wrote "The first item ... is `buy
    oat milk`" (docs/models.md, "Text or a tool call").
    """
    prompt = template.render(calls_as_notes(request.messages), (), cancel=cancel)
    tokens = llm.tokenize(prompt.encode("utf-8"), add_bos=False, special=True)
    reused = common_prefix(llm.input_ids[: llm.n_tokens].tolist(), tokens)
    result = _text(llm, tokens, request, stop=stop, draw=draw, banned=openers, emit=emit, cancel=cancel)
    decision = ChatDecision("text", share, proposed, verdict + "; answered from the prompt without tools")
    return _summary("text", result, tokens, reused), decision


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
