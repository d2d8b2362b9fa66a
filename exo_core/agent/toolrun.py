"""One tool call inside a turn: gate, hooks, approval, run, record (docs/gate.md; docs/architecture.md, "One turn").

Order for each call:

1. ``tool.started`` (with the tool's risk hint);
2. the gate classifies and decides (allow, log, ask, deny); a gate that
   crashes asks rather than allows;
3. ``pre_tool_call`` hooks may block (the reason goes to the model as an error
   result) or ask; they can only make the outcome stricter;
4. on ``ask``: ``approval.requested``, wait for any client's answer,
   ``approval.resolved``, the ``post_approval_response`` hooks, and an
   ``approval`` ledger entry; ``allow_always`` tells the gate for the run.
   A tool that changes files first has what it replaces kept for undo
   (``deps.snapshots``) and its change previewed (:mod:`exo_core.agent.file_guard`):
   a change that removes lines the person's message does not name, or one
   that could not be kept, is asked, the card carrying the diff;
5. the tool runs (the registry turns failures into error results);
   ``transform_tool_result`` hooks may rewrite the text;
6. the result is stored (``tool.completed``, ``message.completed``), the
   ``post_tool_call`` hooks see it, and an ``action`` ledger entry records
   the call, its cell, the outcome and the answer (referring to the approval).

Secrets (private keys, this machine's ledger seed and token in any of their
encoded forms, bearer tokens …) are replaced by placeholders (``deps.redactor``)
in everything that leaves this module: streamed output (redacted as one
stream, exo_core.agent.redact_stream), the result, the arguments shown in
events and approval cards, and the ledger entries. Output is bounded per call
and per turn, and a call runs at most ``[output] timeout_seconds``
(exo_core.agent.output). A file tool is told the resolved paths the gate
judged and touches no other (exo_core.tools.safe_fs); every process a
tool starts runs in the OS sandbox (``deps.sandbox``), with the network only
when the gate's cell for the call says data leaves the machine.
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Any, Literal

from exo_core.agent.deps import LoopDeps
from exo_core.agent.file_guard import FileCheck, check_change
from exo_core.agent.output import CallOutput, TurnOutput, bound_text, stored_size
from exo_core.agent.questions import ASK_PERSON
from exo_core.agent.redaction import redact_data
from exo_core.agent.seams import GateOutcome
from exo_core.errors import BadBodyError, ExoError
from exo_core.protocol import events as ev
from exo_core.protocol.safejson import MAX_VALUE_DEPTH, value_too_deep
from exo_core.seams.model import ToolCall
from exo_core.sessions.session_store import MessageRecord
from exo_core.tools.snapshots import Kept
from exo_core.tools.spec import ToolContext, ToolResult

__all__ = ["run_tool_call", "store_tool_result", "emit_message", "record"]

log = logging.getLogger(__name__)

GateAction = Literal["allow", "log", "ask", "deny"]

# A stream quiet this long shows the whole lines it holds back (a command's progress line, its prompt).
QUIET_SECONDS = 0.3


async def run_tool_call(
    deps: LoopDeps,
    session_id: str,
    turn_id: str,
    call: ToolCall,
    *,
    output: TurnOutput | None = None,
    request: str = "",
) -> None:
    """Gate, approve, run and record one tool call; never raises for a tool's failure.

    ``output``: the turn's output budget, shared by its calls (a fresh one per call when omitted).
    ``request`` is what the person asked in this turn: a file change removing lines it does not name is asked.
    """
    output = output or TurnOutput(deps.output)
    tool = deps.tools.get(call.name)
    risk = tool.spec.risk if tool else "low"
    shown = redact_data(deps.redactor, call.arguments)
    await deps.hub.emit(
        session_id,
        "tool.started",
        ev.ToolStarted(turn_id=turn_id, call_id=call.id, name=call.name, arguments=shown, risk=risk),
    )
    started = time.monotonic()
    # An unknown tool is let through to the registry, whose error result names the tools there are.
    outcome = _check(deps, tool, call) if tool else GateOutcome("allow", call.name, risk)
    summary = deps.redactor.redact(outcome.summary)
    action, reason = outcome.action, outcome.reason
    verdict = await deps.hooks.pre_tool_call(
        tool_name=call.name, arguments=call.arguments, call_id=call.id, session_id=session_id, gate=action
    )
    if verdict is not None and verdict.action == "block":
        action, reason = "deny", verdict.reason
    elif verdict is not None and verdict.action == "ask" and action in ("allow", "log"):
        action, reason = "ask", verdict.reason
    diff = ""
    if tool is not None and tool.spec.changes_files and outcome.targets and action != "deny":
        action, reason, diff = await _guard_files(
            deps, session_id, turn_id, call, outcome.targets, request, action, reason
        )
    reason = deps.redactor.redact(reason)
    decision, refs = (
        await _ask(deps, session_id, turn_id, call, outcome, risk, reason, shown, summary, diff)
        if action == "ask"
        else (action, ())
    )
    bounded = output.call(deps.redactor)
    if action == "deny":
        result = ToolResult.error(f"blocked: {reason or 'not allowed'}")
    elif decision == "deny":
        result = ToolResult.error("the person denied this action")
    else:
        result = await _execute(deps, session_id, call, outcome, bounded)
    result = await _bounded(deps, result, bounded, output)
    await store_tool_result(deps, session_id, turn_id, call, result, started)
    await deps.hooks.notify(
        "post_tool_call",
        tool_name=call.name,
        arguments=call.arguments,
        call_id=call.id,
        session_id=session_id,
        ok=not result.is_error,
        result=result.content,
    )
    await record(
        deps,
        "action",
        {
            "session": session_id,
            "turn": turn_id,
            "call": call.id,
            "tool": call.name,
            "arguments": shown,
            "outcome": outcome.action if tool else "unknown_tool",
            "final": action,
            "decision": "deny" if action == "deny" else decision,
            "reason": reason,
            "axes": dict(outcome.axes),
            "keys": list(outcome.keys),
            "summary": summary,
            "ok": not result.is_error,
            "blocked_by": verdict.owner if verdict is not None and verdict.action == "block" else "",
            # Tool output is data, never the person's words: it is kept inside the action.
            "result": result.content[:2000],
        },
        refs=refs,
    )


async def _guard_files(
    deps: LoopDeps,
    session_id: str,
    turn_id: str,
    call: ToolCall,
    targets: tuple[str, ...],
    request: str,
    action: GateAction,
    reason: str,
) -> tuple[GateAction, str, str]:
    """Keep what the call replaces and preview its change: the action (``ask`` when it must be), its reason
    and the diff to show."""
    if deps.snapshots is not None:
        try:
            kept = await asyncio.to_thread(deps.snapshots.keep, session_id, turn_id, targets)
        except (ExoError, OSError, ValueError) as exc:
            log.warning("could not keep the files %s changes: %s", call.name, exc)
            kept = Kept(not_kept=tuple((target, "the copy could not be made") for target in targets))
        if kept.not_kept and action != "ask":
            path, why = kept.not_kept[0]
            action, reason = "ask", f"this change to {path} could not be kept for undo: {why}"
    try:
        check: FileCheck | None = await asyncio.to_thread(check_change, call.name, call.arguments, targets, request)
    except (OSError, ValueError):
        log.exception("could not preview %s; asking the person instead", call.name)
        return "ask", reason or f"could not preview what {call.name} changes", ""
    if check is None:
        return action, reason, ""
    diff = deps.redactor.redact(check.diff)
    if check.unnamed and action != "ask":
        return "ask", check.reason(), diff
    return action, reason, diff


def _check(deps: LoopDeps, tool: Any, call: ToolCall) -> GateOutcome:
    try:
        return deps.gate.check(tool.spec, call.arguments)
    except Exception as exc:  # a gate bug must fail closed (ask), never open and never end the turn
        log.exception("the gate failed on %s; asking the person instead", call.name)
        return GateOutcome(
            "ask",
            f"{call.name} (the gate failed: {type(exc).__name__})",
            tool.spec.risk,
            "the gate could not classify this call",
            rule_key="",
        )


async def _ask(
    deps: LoopDeps,
    session_id: str,
    turn_id: str,
    call: ToolCall,
    outcome: GateOutcome,
    risk: str,
    reason: str,
    shown: dict[str, Any],
    summary: str,
    diff: str = "",
) -> tuple[str, tuple[str, ...]]:
    # The card shows the arguments, summary and diff with secrets redacted, like every event.
    answer = await deps.approvals.request(
        session_id,
        turn_id=turn_id,
        call_id=call.id,
        tool=call.name,
        summary=summary,
        risk=outcome.risk,
        arguments=shown,
        reason=reason,
        diff=diff,
    )
    await deps.hooks.notify(
        "post_approval_response",
        tool_name=call.name,
        arguments=call.arguments,
        call_id=call.id,
        session_id=session_id,
        request_id=answer.request_id,
        decision=answer.decision,
    )
    if answer.decision == "allow_always" and outcome.rule_key:
        deps.gate.allow_always(outcome.rule_key)
    entry = await record(
        deps,
        "approval",
        {
            "session": session_id,
            "turn": turn_id,
            "call": call.id,
            "request_id": answer.request_id,
            "tool": call.name,
            "summary": summary,
            "risk": risk,
            "reason": reason,
            "rule_key": outcome.rule_key,
            "decision": "deny" if answer.decision == "deny" else "allow",
            "always": answer.decision == "allow_always",
            "answer_reason": deps.redactor.redact(answer.reason) if answer.reason else answer.reason,
        },
    )
    return answer.decision, ((entry,) if entry else ())


async def _bounded(deps: LoopDeps, result: ToolResult, bounded: CallOutput, output: TurnOutput) -> ToolResult:
    """``result`` redacted, then cut to its share of the call's budget (head and tail kept), the turn charged."""
    # Up to a few hundred kilobytes: redacted in a worker thread, so a big result never stalls the loop.
    redacted = await asyncio.to_thread(deps.redactor.redact, result.content)
    # Even with the turn's budget spent the model reads the start and end of the result (the exit status).
    text, cut = bound_text(redacted, max(bounded.result_bytes, 1024))
    # The result is kept four times: the tool message, its search index and two events.
    output.spend(4 * stored_size(text))
    return ToolResult(text, result.is_error, result.truncated or cut)


async def _execute(
    deps: LoopDeps, session_id: str, call: ToolCall, outcome: GateOutcome, bounded: CallOutput
) -> ToolResult:
    # Streamed output is redacted as one stream per channel and bounded: head shown, middle counted, tail at the end.
    # The lock keeps the events in the order their text was taken from ``bounded``. A stream's release task
    # is cancelled only while it sleeps (it is in ``sleeping``), never once it has taken text to show.
    in_order = asyncio.Lock()
    sleeping: dict[str, asyncio.Task[None]] = {}
    latest: dict[str, asyncio.Task[None]] = {}

    async def show(pieces: list[tuple[str, str]]) -> None:
        for stream, text in pieces:
            await deps.hub.emit(session_id, "tool.output", ev.ToolOutput(call_id=call.id, text=text, stream=stream))

    async def release_when_quiet(stream: str) -> None:
        await asyncio.sleep(QUIET_SECONDS)
        sleeping.pop(stream, None)
        async with in_order:
            await show(bounded.release(stream))

    async def emit_output(text: str, stream: str) -> None:
        waiting = sleeping.pop(stream, None)
        if waiting is not None:
            waiting.cancel()
        async with in_order:
            await show(bounded.feed(text, stream))
        if not bounded.capped:
            sleeping[stream] = latest[stream] = asyncio.create_task(release_when_quiet(stream))

    async def emit_panel(kind: str, title: str, data: dict[str, Any]) -> None:
        if value_too_deep(data):
            raise BadBodyError(f"a panel's data may nest at most {MAX_VALUE_DEPTH} levels of objects and arrays")
        shown = redact_data(deps.redactor, data)
        await deps.hub.emit(
            session_id, "ui.panel", ev.UiPanel(kind=kind, title=deps.redactor.redact(title), data=shown)
        )

    async def session_search(query: str, limit: int) -> list[dict[str, Any]]:
        hits = await deps.sessions.search(query, limit=limit)
        return [h.to_wire() for h in hits]

    context = ToolContext(
        workspace=deps.workspace,
        call_id=call.id,
        emit_output=emit_output,
        session_id=session_id,
        extra={"emit_panel": emit_panel, "session_search": session_search},
        checked_paths=frozenset(outcome.targets) if outcome.targets is not None else None,
        sandbox=deps.sandbox,
        # The network is the tool's only when the gate judged (and allowed) an effect that leaves this machine.
        network=outcome.axes.get("exposure", "private") != "private",
    )
    # Asking the person waits for them, not for a process, and has its own limit (AskPersonTool).
    limit = None if call.name == ASK_PERSON.name else deps.output.timeout_seconds
    try:
        result = await asyncio.wait_for(deps.tools.run(call.name, call.arguments, context, cut=False), limit)
    except TimeoutError:
        result = ToolResult.error(
            f"stopped after {limit:g} s: the longest a tool call may run here ([output] timeout_seconds "
            "in config.toml), whatever timeout it asked for; its output so far was shown as it came"
        )
    finally:
        for waiting in sleeping.values():
            waiting.cancel()
        await asyncio.gather(*latest.values(), return_exceptions=True)
    async with in_order:
        await show(bounded.finish())
    if bounded.capped:
        result = ToolResult(f"{bounded.note()}\n{result.content}", result.is_error, True)
    text = await deps.hooks.transform_tool_result(
        result.content, tool_name=call.name, arguments=call.arguments, call_id=call.id, session_id=session_id
    )
    return result if text == result.content else ToolResult(text, result.is_error, result.truncated)


async def store_tool_result(
    deps: LoopDeps, session_id: str, turn_id: str, call: ToolCall, result: ToolResult, started: float
) -> None:
    """Store a call's result as a tool message and emit ``tool.completed`` then ``message.completed``."""
    msg = await deps.sessions.add_message(
        session_id,
        "tool",
        result.content,
        turn_id=turn_id,
        tool_call_id=call.id,
        status="error" if result.is_error else "complete",
    )
    await deps.hub.emit(
        session_id,
        "tool.completed",
        ev.ToolCompleted(
            call_id=call.id,
            name=call.name,
            ok=not result.is_error,
            result=result.content,
            duration_ms=int((time.monotonic() - started) * 1000),
            truncated=result.truncated,
        ),
    )
    await emit_message(deps, msg)


async def emit_message(deps: LoopDeps, msg: MessageRecord) -> None:
    """Emit ``message.completed`` for a stored message."""
    await deps.hub.emit(
        msg.session_id,
        "message.completed",
        ev.MessageCompleted(
            message_id=msg.id,
            role=msg.role,
            content=msg.content,
            turn_id=msg.turn_id,
            tool_calls=msg.tool_calls,
            tool_call_id=msg.tool_call_id,
            status=msg.status,
        ),
    )


async def record(deps: LoopDeps, kind: str, body: dict[str, Any], *, refs: tuple[str, ...] = ()) -> str | None:
    """Mirror one entry into the ledger through the recorder seam; returns its id (``None`` if not kept)."""
    try:
        return await asyncio.to_thread(deps.recorder.record, kind, body, refs=refs)
    except ExoError:
        # The ledger refusing an entry must not lose the turn; it is logged loudly.
        log.exception("could not mirror a %s into the ledger", kind)
        return None
