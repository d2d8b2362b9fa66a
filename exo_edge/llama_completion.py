"""The generations that stream through llama-cpp-python's completion API, run in the model's worker.

Two of the transport's paths (the third, a chat template with native tool
calls, is :mod:`exo_edge.chat_run`):

* **The completion format** (:func:`run_completion`): a base-model prompt
  rendered by :func:`exo_edge.prompting.render_completion`. With
  ``tool_choice="auto"`` the answer is generated freely and streamed, held
  back only while it could still begin with ``CALL``; if it does, generation
  stops and the call's JSON is generated under a grammar from the tools'
  schemas (the prompt prefix is still in the KV cache). ``required`` or a
  tool name goes straight to the constrained call. Free text never pays for
  grammar sampling over the 262k-token vocabulary. The answer streams through
  :class:`exo_edge.answer_tidy.AnswerTidy` (set by the manifest's
  ``[prompt]``), and decoding stops as soon as it says the answer is complete.
* **A chat template without native tool calls** (:func:`run_chat_grammar`):
  the tools, when offered, under one text-or-``CALL`` grammar.

Each returns the call's summary (what :meth:`LlamaTransport.stream
<exo_edge.llama_transport.LlamaTransport.stream>` turns into chunks) and its
:class:`CallStats`. Text pieces go out through ``emit`` as they come.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any, Protocol

from exo_core.seams.failures import FailureKind, ProviderError
from exo_core.seams.model import ModelRequest, TextDelta, ToolCall
from exo_edge.answer_tidy import AnswerTidy
from exo_edge.chat_run import CallJudge
from exo_edge.grammar_decode import common_prefix, greedy_under_grammar
from exo_edge.llama_load import Draw, LlamaSettings, trim_heap
from exo_edge.llama_window import WHERE, chat_formatter
from exo_edge.prompting import (
    CALL_PREFIX,
    call_grammar,
    chat_messages,
    parse_tool_call,
    render_completion,
    tool_grammar,
)

__all__ = ["DECIDE_TOKENS", "CallStats", "CompletionPath", "run_chat_grammar", "run_completion"]

_log = logging.getLogger(__name__)

DECIDE_TOKENS = 4  # greedy tokens that decide between a tool call and text

Emit = Callable[[Any], None]


class CompletionPath(Protocol):
    """The shape of :func:`run_completion` and :func:`run_chat_grammar`: one call, its summary and cost."""

    def __call__(
        self,
        llm: Any,
        request: ModelRequest,
        *,
        settings: LlamaSettings,
        emit: Emit,
        cancel: threading.Event,
        use_tools: bool,
        stop: list[str],
        start: float,
    ) -> tuple[dict[str, Any], CallStats]: ...


@dataclass(frozen=True, slots=True)
class CallStats:
    """What the last call cost: tokens, reused prefix, timings (seconds)."""

    prompt_tokens: int
    reused_tokens: int
    output_tokens: int
    prompt_seconds: float
    total_seconds: float
    interrupted: bool


def _generate(
    llm: Any,
    prompt: Any,
    request: ModelRequest,
    *,
    draw: Draw,
    stop: list[str],
    grammar: Any,
    emit: Emit,
    cancel: threading.Event,
    watch_call: bool,
    stream_text: bool,
    tidy: AnswerTidy | None = None,
) -> dict[str, Any]:
    """One llama.cpp generation in the worker.

    ``watch_call`` holds text back while the answer could still begin with
    ``CALL`` and stops as soon as it does (the caller then generates the
    call under a grammar); any other answer is streamed from there on.
    Streamed text goes through ``tidy``, which may end the answer early.
    """
    stream = llm.create_completion(
        prompt,
        max_tokens=request.max_tokens,
        stop=stop,
        stream=True,
        grammar=grammar,
        **draw.kwargs(request),
    )
    pieces: list[str] = []
    held = watch_call
    saw_call = interrupted = False
    finish = "end"
    first_at: float | None = None
    try:
        for chunk in stream:
            if cancel.is_set():
                interrupted = True
                break
            choice = chunk["choices"][0]
            piece = choice.get("text")
            if choice.get("finish_reason") == "length":
                finish = "length"
            if not piece:
                continue
            first_at = first_at or time.perf_counter()
            pieces.append(piece)
            if held:
                head = "".join(pieces).lstrip()
                if head.startswith(CALL_PREFIX.strip()):
                    saw_call = True
                    break
                if head and not CALL_PREFIX.strip().startswith(head):
                    held = False
                    if stream_text and _say(emit, tidy, "".join(pieces)):
                        break
                continue
            if stream_text and _say(emit, tidy, piece):
                break
    finally:
        stream.close()
    text = "".join(pieces)
    if held and not saw_call and text and stream_text:
        _say(emit, tidy, text)  # a short answer that only looked like the start of CALL
    return {"text": text, "finish": finish, "saw_call": saw_call, "interrupted": interrupted, "first_at": first_at}


def run_completion(
    llm: Any,
    request: ModelRequest,
    *,
    settings: LlamaSettings,
    emit: Emit,
    cancel: threading.Event,
    use_tools: bool,
    stop: list[str],
    start: float,
    judge: CallJudge | None = None,
) -> tuple[dict[str, Any], CallStats]:
    """A completion-format call: render, decide text or ``CALL``, generate; the summary and its cost.

    ``judge`` reads a call the model chose (``tool_choice`` auto) against the conversation, as the chat
    path's judge does (docs/models.md, "Text or a tool call"): a call it turns down gives way to the call
    the core found the person's words point to (``request.pointed``), else to an answer in words.
    """
    try:
        fmt = settings.prompt
        after_call = use_tools and request.tool_choice == "auto" and _called_since_question(request)
        if after_call:
            # A small base model copies the CALL it just made: after a tool result
            # it answers from the result, without the tool list and its worked
            # examples (one tool round per question); an answer that still starts
            # another CALL is cut to nothing.
            use_tools = False
        prompt = render_completion(request.messages, fmt, request.tools if use_tools else ())
        tokens = llm.tokenize(prompt.encode("utf-8"), add_bos=True, special=False)
        limit = settings.n_ctx - request.max_tokens
        if len(tokens) > limit:
            raise ProviderError(
                f"the prompt has {len(tokens)} tokens but only {limit} fit in n_ctx "
                f"{settings.n_ctx} with max_tokens {request.max_tokens}; shorten the "
                f"context or raise n_ctx ({WHERE})",
                kind=FailureKind.BAD_REQUEST,
                provider="local",
            )
        reused = common_prefix(list(llm._input_ids), tokens)
        mode = "call" if use_tools and request.tool_choice != "auto" else "text"
        result: dict[str, Any] = {
            "text": "",
            "finish": "end",
            "saw_call": False,
            "interrupted": False,
            "first_at": None,
        }
        tidy = AnswerTidy(fmt)
        draw = settings.draw
        pointed: ToolCall | None = None
        if mode == "text" and use_tools:
            # call or text? decided greedily on the first few tokens, whatever the
            # temperature, so sampling noise does not turn a call into prose
            head = _generate(
                llm,
                tokens,
                replace(request, temperature=0.0, max_tokens=DECIDE_TOKENS),
                draw=draw,
                stop=stop,
                grammar=None,
                emit=emit,
                cancel=cancel,
                watch_call=True,
                stream_text=False,
            )
            result = head
            if head["saw_call"]:
                mode = "call"
            elif head["text"] and not head["interrupted"]:
                complete = _say(emit, tidy, head["text"])
                if head["finish"] == "length" and request.max_tokens > DECIDE_TOKENS and not complete:
                    rest_prompt = tokens + llm.tokenize(head["text"].encode("utf-8"), add_bos=False, special=False)
                    rest = _generate(
                        llm,
                        rest_prompt,
                        replace(request, max_tokens=request.max_tokens - DECIDE_TOKENS),
                        draw=draw,
                        stop=stop,
                        grammar=None,
                        emit=emit,
                        cancel=cancel,
                        watch_call=False,
                        stream_text=True,
                        tidy=tidy,
                    )
                    result = {
                        **rest,
                        "text": head["text"] + rest["text"],
                        "first_at": head["first_at"] or rest["first_at"],
                    }
        elif mode == "text":
            result = _text_answer(
                llm, tokens, request, watch_call=after_call, draw=draw, stop=stop, emit=emit, cancel=cancel, tidy=tidy
            )
        if mode == "call" and not result["interrupted"]:
            call_prompt = tokens + llm.tokenize(b" " + CALL_PREFIX.rstrip().encode(), add_bos=False, special=False)
            # arguments greedily: a call is an instruction, not prose to vary
            result = greedy_under_grammar(
                llm,
                call_prompt,
                call_grammar(request.tools, request.tool_choice),
                max_tokens=request.max_tokens,
                cancel=cancel,
            )
            cut = result["finish"] == "length" and not result["interrupted"]
            turned_down = None
            if not cut and request.tool_choice == "auto" and judge is not None:
                turned_down = _turned_down(result["text"], request, judge)
            if turned_down is not None:
                _log.info("the local model's call was turned down: %s", turned_down)
            if turned_down is not None and request.pointed:
                # the call the core found the person's words point to (docs/models.md, "Text or a tool call")
                pointed = request.pointed[0]
            elif (cut or turned_down is not None) and request.tool_choice == "auto":
                # the usage counts the prompt the words came from, as the chat path's does
                words_prompt = render_completion(request.messages, fmt, ())
                tokens = llm.tokenize(words_prompt.encode("utf-8"), add_bos=True, special=False)
                reused = common_prefix(list(llm._input_ids), tokens)
                result = _words_instead(llm, tokens, request, draw=draw, stop=stop, emit=emit, cancel=cancel, tidy=tidy)
                mode = "text"
    finally:
        trim_heap()
    end = time.perf_counter()
    summary, stats = _summary(
        llm, result, mode=mode, text=result["text"], prompt_tokens=len(tokens), reused=reused, span=(start, end)
    )
    if pointed is not None:
        summary["call"] = pointed
    return summary, stats


def _turned_down(text: str, request: ModelRequest, judge: CallJudge) -> str | None:
    """Why ``judge`` turns down the call ``text`` writes, or None when it stands.

    On the ``small`` board Gemma 270M proposed ``delete_file {"path": "text"}``, a file nobody named
    (docs/benchmarks.md §6); the gate would have asked the person about it. A call that does not
    parse is left to the transport, which reports it as a typed error.
    """
    try:
        call = parse_tool_call(CALL_PREFIX + text)
    except (ValueError, KeyError):
        return None
    if call is None:
        return None
    grounding = judge(call, request.messages, request.tools)
    if grounding.grounded:
        return None
    return grounding.reason


def _words_instead(
    llm: Any,
    tokens: list[int],
    request: ModelRequest,
    *,
    draw: Draw,
    stop: list[str],
    emit: Emit,
    cancel: threading.Event,
    tidy: AnswerTidy,
) -> dict[str, Any]:
    """The answer in words, from the prompt without tools, after a call that ran to ``max_tokens``.

    A base model sometimes begins a call and never closes it (Gemma 270M wrote a
    512-token ``ask_person`` question in the `small` answer benchmark,
    docs/benchmarks.md §15). Nobody saw that call, and failing the turn would
    cost the person the answer and the route its health, so the question is
    answered without the tool list, as the chat path does with a cut candidate
    (docs/models.md, "Text or a tool call"). ``tokens`` is that prompt.
    """
    return _text_answer(
        llm, tokens, request, watch_call=True, draw=draw, stop=stop, emit=emit, cancel=cancel, tidy=tidy
    )


def _text_answer(
    llm: Any,
    tokens: list[int],
    request: ModelRequest,
    *,
    watch_call: bool,
    draw: Draw,
    stop: list[str],
    emit: Emit,
    cancel: threading.Event,
    tidy: AnswerTidy,
) -> dict[str, Any]:
    """An answer in words, streamed; with ``watch_call``, one that begins ``CALL`` anyway ends with no text
    (the model copying a call where none is offered: no words rather than a call shown as text)."""
    result = _generate(
        llm,
        tokens,
        request,
        draw=draw,
        stop=stop,
        grammar=None,
        emit=emit,
        cancel=cancel,
        watch_call=watch_call,
        stream_text=True,
        tidy=tidy,
    )
    if result["saw_call"]:
        return {**result, "text": ""}
    return result


def run_chat_grammar(
    llm: Any,
    request: ModelRequest,
    *,
    settings: LlamaSettings,
    emit: Emit,
    cancel: threading.Event,
    use_tools: bool,
    stop: list[str],
    start: float,
) -> tuple[dict[str, Any], CallStats]:
    """A chat template without native tool calls: tools, when offered, in one constrained pass."""
    grammar = None
    if use_tools:
        import llama_cpp

        grammar = llama_cpp.LlamaGrammar.from_string(tool_grammar(request.tools, request.tool_choice), verbose=False)
        stop = [x for x in stop if x != "\n"]
    # The model's template renders under limits here (never llama-cpp-python's unbounded chat handler).
    formatter = chat_formatter(llm)
    if formatter is None:
        raise ProviderError(
            "the model has no chat template; register it with a completion format",
            kind=FailureKind.BAD_REQUEST,
            provider="local",
        )
    rendered = formatter(messages=chat_messages(request.messages), cancel=cancel)
    result = _generate(
        llm,
        llm.tokenize(rendered.prompt.encode("utf-8"), add_bos=False, special=True),
        request,
        draw=settings.draw,
        stop=[*stop, *rendered.stop],
        grammar=grammar,
        emit=emit,
        cancel=cancel,
        watch_call=False,
        stream_text=grammar is None,
    )
    end = time.perf_counter()
    text = result["text"]
    mode = "text"
    if grammar is not None:
        if text.strip().startswith(CALL_PREFIX.strip()):
            mode, text = "call", text.strip()[len(CALL_PREFIX) :]
        else:
            emit(TextDelta(text.strip()))
    return _summary(llm, result, mode=mode, text=text, prompt_tokens=0, reused=0, span=(start, end))


def _summary(
    llm: Any,
    result: dict[str, Any],
    *,
    mode: str,
    text: str,
    prompt_tokens: int,
    reused: int,
    span: tuple[float, float],
) -> tuple[dict[str, Any], CallStats]:
    """The call's summary for the stream and its cost; ``span`` is when the call started and generation ended."""
    start, end = span
    out_tokens = len(llm.tokenize(text.encode("utf-8"), add_bos=False, special=False)) if text else 0
    first_at = result["first_at"] or end
    stats = CallStats(prompt_tokens, reused, out_tokens, first_at - start, end - start, result["interrupted"])
    summary = {
        "mode": mode,
        "text": text,
        "finish": result["finish"],
        "prompt_tokens": prompt_tokens,
        "reused": reused,
        "output_tokens": out_tokens,
        "interrupted": result["interrupted"],
    }
    return summary, stats


def _say(emit: Emit, tidy: AnswerTidy | None, text: str) -> bool:
    """Emit ``text`` (tidied); True when the answer is complete and decoding should stop."""
    shown = tidy.feed(text) if tidy is not None else text
    if shown:
        emit(TextDelta(shown))
    return tidy is not None and tidy.done


def _called_since_question(request: ModelRequest) -> bool:
    """Whether a tool was already called after the last user message."""
    for m in reversed(request.messages):
        if m.role == "user":
            return False
        if m.role == "assistant" and m.tool_calls:
            return True
    return False
