"""The agent loop: one turn as a short series of steps (docs/architecture.md).

1. (the runner) close any tool call left dangling by a crash;
2. store the person's message, emit ``message.completed`` then ``turn.started``;
3. build the system prompt: base prompt plus the memory provider's block;
4. build a fresh model input from the context engine, fitted to the model's
   window when its transport declares one (docs/context.md, "Sized to the model");
5. stream one model call (``message.delta``, ``reasoning.delta``, ``usage.updated``);
6. store the reply; run requested tools in order (``tool.started``, ``tool.output``,
   ``tool.completed``), store each result; go back to 4;
7. emit ``turn.completed`` with the stop reason and usage, tell the memory
   provider, emit ``session.updated``.

Limits: at most ``max_iterations`` tool rounds; a retryable model error is
retried (exponential backoff) only while nothing of that call has been shown;
an interrupt keeps partial text marked ``interrupted`` and gives every tool
call a result; any unexpected error ends the turn with ``error`` and a clean
``turn.completed`` (fail soft), never a hung session.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from exo_core.agent.claims import NOT_DONE, claims_done
from exo_core.agent.deps import BASE_PROMPT, LoopDeps, LoopSettings
from exo_core.agent.named_files import pointed_reads, unread
from exo_core.agent.outcome import explain_turn_end
from exo_core.agent.output import TurnOutput
from exo_core.agent.seams import (
    HistoryView,
    MemoryParts,
    PartedMemory,
    TextFix,
    VerbatimContext,
    ViewingContextEngine,
    to_chat_messages,
)
from exo_core.agent.toolrun import emit_message as _emit_message
from exo_core.agent.toolrun import record as _record
from exo_core.agent.toolrun import run_tool_call as _run_tool
from exo_core.agent.toolrun import store_tool_result as _store_tool_result
from exo_core.context.fit import Draft, recalled_message, render
from exo_core.context.window import Fitted, fit_input, fit_request
from exo_core.errors import ExoError, MalformedToolCallError, ModelError, RetryableModelError
from exo_core.protocol import events as ev
from exo_core.protocol.safejson import MAX_VALUE_DEPTH, value_too_deep
from exo_core.seams.model import (
    ContextWindow,
    Finish,
    ModelRequest,
    ReasoningDelta,
    TextDelta,
    ToolCall,
    ToolCallChunk,
    UsageChunk,
    WindowedTransport,
)
from exo_core.sessions.session_store import MessageRecord, TurnRecord
from exo_core.tools.spec import ToolResult

__all__ = ["LoopDeps", "LoopSettings", "run_turn", "system_text", "INTERRUPTED_RESULT", "BASE_PROMPT"]

log = logging.getLogger(__name__)

INTERRUPTED_RESULT = "interrupted before completion"
_DELTA_WINDOW = 64


async def run_turn(
    deps: LoopDeps,
    session_id: str,
    turn: TurnRecord,
    steer: deque[str],
    *,
    resumed: bool = False,
    pending: tuple[ToolCall, ...] = (),
) -> str:
    """Run one turn to its end; returns the stop reason. Never raises for model/tool failures.

    ``pending`` holds tool calls of a resumed turn that were waiting for an
    approval when the core stopped; they run (re-using that request) first.
    """
    state = _TurnState()
    try:
        if not resumed:
            msg = await deps.sessions.add_message(session_id, "user", turn.text, turn_id=turn.id)
            await _emit_message(deps, msg)
            await _record(deps, "utterance", {"session": session_id, "turn": turn.id, "text": turn.text})
        await deps.hub.emit(
            session_id, "turn.started", ev.TurnStarted(turn_id=turn.id, mode=turn.mode, resumed=resumed)
        )
        if not resumed and deps.facts is not None:
            saved = await deps.facts.take(session_id, turn.text)
            if saved is not None:
                return await _answer_directly(deps, session_id, turn, saved, state)
        memory = await _memory_parts(deps, session_id, turn.text)
        system = system_text(deps.settings.base_prompt, memory, deps.settings.layout)
        toolsets = await _chosen_toolsets(deps, turn.text)
        offered = deps.tools if toolsets is None else deps.tools.view(toolsets)  # availability: per round
        pointed = await _pointed(deps, turn.text, tuple(s.to_model() for s in offered.specs()))
        made: list[ToolCall] = list(pending)
        await _run_calls(deps, session_id, turn.id, pending, state, turn.text)
        reason = "iteration_cap"
        for _round in range(deps.settings.max_iterations):
            history = await deps.sessions.messages(session_id)
            request = ModelRequest(
                messages=(),
                tools=tuple(s.to_model() for s in offered.specs()),
                max_tokens=deps.settings.max_tokens,
                pointed=unread(pointed, made),
            )
            request = await _sized_request(deps, session_id, turn.id, system, memory, history, request, state)
            text, calls = await _call_model(deps, session_id, turn.id, request, state)
            if not calls and not state.acted and claims_done(text):
                text = await _not_done(deps, session_id, turn.id, text)
            state.partial, state.calls = "", []
            reply = await deps.sessions.add_message(
                session_id,
                "assistant",
                text,
                turn_id=turn.id,
                tool_calls=[{"id": c.id, "name": c.name, "arguments": c.arguments} for c in calls],
            )
            await _emit_message(deps, reply)
            if not calls:
                reason = "end"
                state.answer = text
                break
            made.extend(calls)
            await _run_calls(deps, session_id, turn.id, calls, state, turn.text)
            while steer:
                note = steer.popleft()
                steered = await deps.sessions.add_message(session_id, "user", note, turn_id=turn.id)
                await _emit_message(deps, steered)
                await _record(deps, "utterance", {"session": session_id, "turn": turn.id, "text": note, "steer": True})
        else:
            await deps.hub.emit(
                session_id,
                "notice",
                ev.Notice(text=f"stopped after {deps.settings.max_iterations} tool rounds", level="warning"),
            )
        return await _finish(deps, session_id, turn, reason, state)
    except asyncio.CancelledError:
        task = asyncio.current_task()
        if task is not None:
            task.uncancel()
        reason, error = "interrupted", None
    except ExoError as exc:
        log.warning("turn %s failed: %s", turn.id, exc)
        reason, error = "error", f"{exc.code}: {exc.message}"
    except Exception as exc:  # fail soft: a bug ends the turn, never hangs the session
        log.exception("turn %s crashed", turn.id)
        reason, error = "error", f"internal: {type(exc).__name__}: {exc}"
    await _close_interrupted(deps, session_id, turn.id, state)
    return await _finish(deps, session_id, turn, reason, state, error=error)


@dataclass(slots=True, eq=False)
class _TurnState:
    """What an interrupt must close (streamed-but-unstored text, unanswered calls), the answer and the usage."""

    partial: str = ""
    calls: list[ToolCall] = field(default_factory=list)
    answer: str = ""
    acted: bool = False  # a tool ran: a turn may end without words and still have done what was asked
    input_tokens: int = 0
    output_tokens: int = 0
    cost: float = 0.0
    trim_reported: bool = False
    trim_noticed: bool = False
    output: TurnOutput | None = None  # the turn's tool-output budget, made at its first call


async def _not_done(deps: LoopDeps, session_id: str, turn_id: str, text: str) -> str:
    """The reply with :data:`NOT_DONE` added (streamed too) and a warning notice: it claimed a finished
    action, yet no tool ran in the turn."""
    note = ("\n\n" if text.strip() else "") + NOT_DONE
    await deps.hub.emit(session_id, "message.delta", ev.MessageDelta(turn_id=turn_id, text=note))
    await deps.hub.emit(
        session_id,
        "notice",
        ev.Notice(text="The answer said it was done, but no tool ran: nothing changed.", level="warning"),
    )
    return text + note


async def _run_calls(
    deps: LoopDeps, session_id: str, turn_id: str, calls: Sequence[ToolCall], state: _TurnState, request: str
) -> None:
    """Run ``calls`` in order; the ones not yet run stay in ``state.calls`` for an interrupt to close."""
    state.calls = list(calls)
    if state.output is None:
        state.output = TurnOutput(deps.output)
    for call in calls:
        await _run_tool(deps, session_id, turn_id, call, output=state.output, request=request)
        state.calls.remove(call)
        state.acted = True


async def _pointed(deps: LoopDeps, text: str, tools: Sequence[dict[str, Any]]) -> tuple[ToolCall, ...]:
    """The reads of workspace files the person's message names (exo_core.agent.named_files), off the loop."""
    if not text.strip():
        return ()
    try:
        return await asyncio.to_thread(pointed_reads, text, deps.workspace, tools)
    except OSError as exc:  # an unreadable workspace points at nothing; the model decides as before
        log.warning("could not look for the files the message names: %s", exc)
        return ()


async def _memory_parts(deps: LoopDeps, session_id: str, text: str) -> MemoryParts:
    """The memory provider's block for ``text``, in parts when the provider can give them."""
    try:
        if isinstance(deps.memory, PartedMemory):
            return await deps.memory.system_parts(session_id, text)
        return MemoryParts(pack=await deps.memory.system_block(session_id, text))
    except Exception:  # fail soft: a broken memory provider is skipped for this call
        log.exception("memory provider failed; continuing without it")
        return MemoryParts()


def system_text(base: str, memory: MemoryParts, layout: str) -> str:
    """The system prompt: the base prompt, then the pack. The retrieved beliefs go just before the
    current turn (:func:`_with_recalled`), so the system prompt is the same on every turn; in the
    ``system`` layout they follow the pack here instead."""
    if layout == "system":
        block = memory.pack.rstrip()
        if memory.recalled:
            block += f"\n\n{memory.heading}\n" + "\n".join(memory.recalled)
        block = block.strip()
        return base + ("\n\n" + block + "\n" if block else "")
    pack = memory.pack.strip()
    return base + ("\n\n" + pack if pack else "")


def _with_recalled(
    built: list[Any], memory: MemoryParts, history: Sequence[MessageRecord], turn_id: str, layout: str
) -> list[Any]:
    """``built`` (an engine's input, one message per stored message of its tail) with the beliefs retrieved
    for this message just before the current turn: the layout of :func:`exo_core.context.fit.render`."""
    notes = recalled_message(memory.heading, memory.recalled)
    if notes is None or layout == "system":
        return built
    turn_messages = len(history) - _current_index(history, 0, turn_id)
    first = 1 if built and built[0].role == "system" else 0
    at = max(first, len(built) - turn_messages)
    return [*built[:at], notes, *built[at:]]


async def _chosen_toolsets(deps: LoopDeps, text: str) -> frozenset[str] | None:
    """The toolsets the toolset decision chose for this turn; ``None`` offers every tool."""
    if deps.toolsets is None:
        return None
    try:
        return await deps.toolsets.choose(text, sorted({s.toolset for s in deps.tools.specs()}))
    except ExoError as exc:
        log.warning("the toolset decision failed; offering every tool: %s", exc)
        return None


async def _build_context(deps: LoopDeps, session_id: str, system: str, history: list[MessageRecord]) -> list[Any]:
    try:
        return await deps.context.build(session_id, system, history)
    except Exception:  # fail soft: fall back to the verbatim conversation
        log.exception("context engine failed; sending the conversation verbatim")
        return await VerbatimContext().build(session_id, system, history)


async def _sized_request(
    deps: LoopDeps,
    session_id: str,
    turn_id: str,
    system: str,
    memory: MemoryParts,
    history: list[MessageRecord],
    request: ModelRequest,
    state: _TurnState,
) -> ModelRequest:
    """``request`` with this call's input, fitted to the model's window when the model declares one.

    The window is the one of the route that would serve the call now
    (docs/context.md, "Sized to the model"); without one the input is the
    engine's, unbudgeted.
    """
    window = await _window(deps, request.role)
    if window is None or not isinstance(deps.context, ViewingContextEngine):
        built = await _build_context(deps, session_id, system, history)
        built = _with_recalled(built, memory, history, turn_id, deps.settings.layout)
        if window is None:
            return replace(request, messages=tuple(built))
        return await fit_request(window, replace(request, messages=tuple(built)))
    try:
        view = await deps.context.history_view(session_id, system, history)
    except Exception:  # fail soft: fall back to the verbatim conversation
        log.exception("context engine failed; sending the conversation verbatim, fitted to the window")
        view = HistoryView()
    tail = history[view.tail_start :]
    draft = Draft(
        base=deps.settings.base_prompt,
        pack=memory.pack,
        recalled=memory.recalled,
        recall_heading=memory.heading,
        history=view.elements,
        tail=tuple(to_chat_messages(tail)),
        current=_current_index(history, view.tail_start, turn_id),
        layout=deps.settings.layout,
    )
    try:
        fitted = await fit_input(window, draft, request)
    except ModelError as exc:
        # Counting needs the model (a local model that cannot load): the call fails or falls back with
        # that cause, and the router fits the input to the route that answers.
        log.warning("could not count for the model's window (%s); sending the input unbudgeted", exc.message)
        return replace(request, messages=tuple(render(draft)))
    await _report_trim(deps, session_id, fitted, state)
    return fitted.request


async def _window(deps: LoopDeps, role: str) -> ContextWindow | None:
    """The window of the model that would serve ``role`` now, when its transport declares one."""
    if not isinstance(deps.model, WindowedTransport):
        return None
    try:
        return await deps.model.context_window(role)
    except ModelError as exc:
        # The call itself will fail with the same cause, and say it; sizing is skipped.
        log.warning("the model's window is unknown (%s); sending the input unbudgeted", exc.message)
        return None


def _current_index(history: Sequence[MessageRecord], tail_start: int, turn_id: str) -> int:
    """Where the current turn starts in the tail (its person's message): it is never dropped."""
    for index in range(tail_start, len(history)):
        if history[index].turn_id == turn_id:
            return index - tail_start
    if any(m.turn_id == turn_id for m in history[:tail_start]):
        return 0  # the turn began before the tail: all of the tail is this turn's
    users = [i for i in range(tail_start, len(history)) if history[i].role == "user"]
    return users[-1] - tail_start if users else len(history) - tail_start


async def _report_trim(deps: LoopDeps, session_id: str, fitted: Fitted, state: _TurnState) -> None:
    """Once per turn: ``context.compacted`` when the input was trimmed, a notice when the pack or message was."""
    trimmed = fitted.trimmed
    if trimmed.any and not state.trim_reported:
        state.trim_reported = True
        await deps.hub.emit(
            session_id,
            "context.compacted",
            ev.ContextCompacted(tokens_before=trimmed.tokens_before, tokens_after=trimmed.tokens_after),
        )
    if trimmed.loud and not state.trim_noticed:
        state.trim_noticed = True
        await deps.hub.emit(session_id, "notice", ev.Notice(text=trimmed.describe(), level="warning"))


async def _call_model(
    deps: LoopDeps, session_id: str, turn_id: str, request: ModelRequest, state: _TurnState
) -> tuple[str, list[ToolCall]]:
    attempt = 0
    # Deltas are queued without waiting for the disk so a burst shares one commit;
    # at most _DELTA_WINDOW are in flight, and all are saved before the call returns
    # or is retried (so each attempt starts with none in flight).
    in_flight: deque[asyncio.Future[Any]] = deque()

    async def delta(event_type: str, body: Any) -> None:
        in_flight.append(deps.hub.emit_nowait(session_id, event_type, body))
        while len(in_flight) > _DELTA_WINDOW:
            await in_flight.popleft()

    while True:
        shown = False
        text: list[str] = []
        calls: list[ToolCall] = []
        fix = await _style_fix(deps)
        try:
            async for chunk in deps.model.stream(request):
                if isinstance(chunk, TextDelta) and chunk.text:
                    shown = True
                    piece = fix.feed(chunk.text) if fix is not None else chunk.text
                    if not piece:
                        continue
                    text.append(piece)
                    state.partial = "".join(text)
                    await delta("message.delta", ev.MessageDelta(turn_id=turn_id, text=piece))
                elif isinstance(chunk, ReasoningDelta) and chunk.text:
                    shown = True
                    await delta("reasoning.delta", ev.ReasoningDelta(turn_id=turn_id, text=chunk.text))
                elif isinstance(chunk, ToolCallChunk):
                    shown = True
                    calls.append(_checked_call(chunk.call))
                elif isinstance(chunk, UsageChunk):
                    await _settle(in_flight)
                    state.input_tokens += chunk.input_tokens
                    state.output_tokens += chunk.output_tokens
                    state.cost += chunk.cost
                    session = await deps.sessions.touch(session_id, add_cost=chunk.cost)
                    await deps.hub.emit(
                        session_id,
                        "usage.updated",
                        ev.UsageUpdated(
                            turn_id=turn_id,
                            input_tokens=chunk.input_tokens,
                            output_tokens=chunk.output_tokens,
                            cost=chunk.cost,
                            session_cost=session.cost,
                            model=chunk.model,
                            cache_read_tokens=chunk.cache_read_tokens,
                            evaluated_tokens=max(0, chunk.input_tokens - chunk.cache_read_tokens),
                        ),
                    )
                elif isinstance(chunk, Finish):
                    break
            held = fix.flush() if fix is not None else ""
            if held:
                text.append(held)
                await delta("message.delta", ev.MessageDelta(turn_id=turn_id, text=held))
            await _settle(in_flight)
            return "".join(text), calls
        except RetryableModelError as exc:
            await _settle(in_flight)
            attempt += 1
            wait = exc.retry_after if exc.retry_after is not None else deps.settings.backoff_base * 2 ** (attempt - 1)
            # Past a long stated window (the router already fell back through every route) waiting
            # would hang the turn, so it ends with the error instead.
            if shown or attempt > deps.settings.max_retries or wait > deps.settings.max_retry_wait:
                raise
            log.info("model call failed (%s); retry %d in %.2fs", exc.message, attempt, wait)
            await deps.clock.sleep(wait)
        except BaseException:
            # Whatever else ends the call (an error, an interrupt), deltas already queued are saved first.
            await asyncio.shield(_settle(in_flight))
            raise


def _checked_call(call: ToolCall) -> ToolCall:
    """``call`` if its arguments can be stored, shown and redacted; nesting past the protocol's depth is refused."""
    if value_too_deep(call.arguments):
        raise MalformedToolCallError(
            f"the model asked for {call.name[:64]!r} with arguments nested deeper than {MAX_VALUE_DEPTH} levels of "
            "objects and arrays; nothing was run"
        )
    return call


async def _settle(in_flight: deque[asyncio.Future[Any]]) -> None:
    while in_flight:
        await in_flight.popleft()


async def _close_interrupted(deps: LoopDeps, session_id: str, turn_id: str, state: _TurnState) -> None:
    """Keep partial text (marked) and give every unanswered tool call a result."""
    if state.partial:
        msg = await deps.sessions.add_message(
            session_id, "assistant", state.partial, turn_id=turn_id, status="interrupted"
        )
        await _emit_message(deps, msg)
        state.partial = ""
    for call in list(state.calls):
        await _store_tool_result(
            deps, session_id, turn_id, call, ToolResult.error(INTERRUPTED_RESULT), time.monotonic()
        )
    state.calls = []


async def _style_fix(deps: LoopDeps) -> TextFix | None:
    """The style seam's fixer for one model call; a failing seam leaves the text as written."""
    if deps.style is None:
        return None
    try:
        return await deps.style.fix()
    except ExoError as exc:
        log.warning("the enforced taste could not be read; the reply is left as written: %s", exc)
        return None


async def _answer_directly(deps: LoopDeps, session_id: str, turn: TurnRecord, text: str, state: _TurnState) -> str:
    """End the turn with ``text`` as the reply, no model call (a stated fact was stored).

    The reply goes out as one ``message.delta`` too: streaming clients (the line client, the
    terminal) print deltas, so without it a piped ``exo chat`` showed nothing for a saved fact.
    """
    await deps.hub.emit(session_id, "message.delta", ev.MessageDelta(turn_id=turn.id, text=text))
    reply = await deps.sessions.add_message(session_id, "assistant", text, turn_id=turn.id)
    await _emit_message(deps, reply)
    state.answer = text
    return await _finish(deps, session_id, turn, "end", state)


async def _finish(
    deps: LoopDeps, session_id: str, turn: TurnRecord, reason: str, state: _TurnState, *, error: str | None = None
) -> str:
    status = {"end": "completed", "iteration_cap": "completed", "interrupted": "interrupted"}.get(reason, "error")
    await deps.sessions.set_turn_status(turn.id, status, reason)
    usage = {"input_tokens": state.input_tokens, "output_tokens": state.output_tokens, "cost": round(state.cost, 8)}
    hint = explain_turn_end(reason, error, answer=state.answer, acted=state.acted)
    await deps.hub.emit(
        session_id,
        "turn.completed",
        ev.TurnCompleted(turn_id=turn.id, stop_reason=reason, usage=usage, error=error, hint=hint),
    )
    if reason == "end":
        try:
            await deps.memory.on_exchange(session_id, turn.text, state.answer)
        except Exception:  # fail soft: memory is told best-effort
            log.exception("memory provider failed in on_exchange")
    session = await deps.sessions.touch(session_id)
    count = len(await deps.sessions.messages(session_id))
    await deps.hub.emit(
        session_id,
        "session.updated",
        ev.SessionUpdated(session_id=session_id, title=session.title, message_count=count, reason=f"turn {reason}"),
    )
    return reason
