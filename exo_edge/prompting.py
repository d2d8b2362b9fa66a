"""Prompts for local models: completion formats for base models, and tool grammars.

A base model (no chat template) is prompted as a document it can continue::

    <preamble>

    <system messages: the pack, retrieved notes>

    Tools you can call: ...            (only when tools are offered)

    Question: <example>                (few-shot examples from the manifest)
    Answer: <example answer>

    Question: <user>
    Answer:

An answer the person interrupted (its text ends with ``INTERRUPTED_MARK``)
is kept with its mark, or, with the format's ``interrupted = "drop"``, left
out together with its question: a base model continues whatever it is shown,
and a cut-off answer invites it to write more cut-off answers.

The unchanging head (preamble, pack) comes first so the KV cache of that
prefix is reused between turns. A tool call is written
``CALL {"name": ..., "arguments": {...}}``; the JSON after ``CALL`` is generated
under a llama.cpp grammar built from each tool's JSON Schema
(:func:`call_grammar`), so even a 270M model emits calls that parse.
:func:`tool_grammar` (text or ``CALL`` in one grammar) serves chat-template models.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

from exo_core.seams.model import INTERRUPTED_MARK, ChatMessage, ToolCall
from exo_edge.manifest import PromptFormat

__all__ = [
    "CALL_PREFIX",
    "render_completion",
    "tool_grammar",
    "call_grammar",
    "parse_tool_call",
    "chat_messages",
    "call_schema",
]

CALL_PREFIX = "CALL "


_EXAMPLE_VALUES: dict[str, Any] = {
    "integer": 1,
    "number": 1.5,
    "boolean": True,
    "string": "text",
    "array": [],
    "object": {},
}


def _example_arguments(schema: dict[str, Any]) -> dict[str, Any]:
    """Placeholder arguments that satisfy a simple JSON Schema (for the worked example)."""
    props = schema.get("properties", {}) or {}
    required = schema.get("required") or list(props)
    out: dict[str, Any] = {}
    for key in required:
        spec = props.get(key, {})
        if spec.get("enum"):
            out[key] = spec["enum"][0]
        else:
            kind = spec.get("type", "string")
            out[key] = _EXAMPLE_VALUES.get(kind if isinstance(kind, str) else "string", "text")
    return out


def _tools_block(tools: Sequence[dict[str, Any]], fmt: PromptFormat) -> str:
    lines = [
        "Tools you can call. To call one, answer with CALL followed by JSON, e.g. "
        'CALL {"name": "tool_name", "arguments": {...}}.'
    ]
    for t in tools:
        params = t.get("parameters", {}).get("properties", {})
        args = ", ".join(f"{k}: {v.get('type', 'any')}" for k, v in params.items())
        lines.append(f"- {t['name']}({args}): {t.get('description', '').strip()}")
    # One worked example per tool, a few at most. A small base model copies these examples, so a tool whose
    # spec says it is irreversible whatever its arguments (``delete_file``; ToolSpec.irreversible) gets none:
    # a copied example must never propose an act that cannot be undone. Measured: benchmarks/bench_exod_tools.py.
    safe = [t for t in tools if not t.get("irreversible")]
    for t in safe[:4]:
        example = {"name": t["name"], "arguments": _example_arguments(t.get("parameters") or {})}
        ask = (t.get("description") or f"Use {t['name']}").strip().rstrip(".")
        lines.append(f"\n{fmt.user_prefix}{ask}.\n{fmt.assistant_prefix} {CALL_PREFIX}{json.dumps(example)}")
    return "\n".join(lines)


def _assistant_text(m: ChatMessage) -> str:
    if m.tool_calls:
        call = m.tool_calls[0]
        return CALL_PREFIX + json.dumps({"name": call.name, "arguments": call.arguments})
    return m.content.strip()


def _interrupted(m: ChatMessage) -> bool:
    return not m.tool_calls and m.content.endswith(INTERRUPTED_MARK)


def render_completion(messages: Sequence[ChatMessage], fmt: PromptFormat, tools: Sequence[dict[str, Any]] = ()) -> str:
    """The completion prompt for ``messages``; it ends where the model should answer."""
    sep = fmt.turn_separator
    head: list[str] = []
    if fmt.preamble:
        head.append(fmt.preamble.strip())
    system = [m.content.strip() for m in messages if m.role == "system" and m.content.strip()]
    if system:
        head.append(fmt.system_prefix + "\n\n".join(system))
    for q, a in fmt.examples:
        head.append(f"{fmt.user_prefix}{q}\n{fmt.assistant_prefix} {a}")
    if tools:
        head.append(_tools_block(tools, fmt))
    turns: list[str] = []
    current = ""
    question, dropped = "", False  # dropped: an interrupted answer to current was left out
    for m in messages:
        if m.role == "system":
            continue
        if m.role == "user":
            if current and not dropped:
                turns.append(current)
            current = f"{fmt.user_prefix}{m.content.strip()}\n{fmt.assistant_prefix}"
            question, dropped = current, False
        elif m.role == "assistant" and fmt.interrupted == "drop" and _interrupted(m):
            # should nothing follow, the question stays open for a fresh answer
            current, dropped = question, True
        elif m.role == "assistant":
            current += " " + _assistant_text(m)
        elif m.role == "tool":
            current += f"\n{fmt.tool_prefix}{m.content.strip()}\n{fmt.assistant_prefix}"
    if not current.endswith(fmt.assistant_prefix):
        # the conversation ends on the assistant: let it continue with a new answer line
        current += f"\n{fmt.assistant_prefix}"
    turns.append(current)
    return sep.join(head + turns)


def call_schema(tools: Sequence[Mapping[str, Any]], only: str | None) -> dict[str, Any]:
    """JSON Schema of one call ``{"name": ..., "arguments": ...}`` to an offered tool (or only to ``only``)."""
    alts = []
    for t in tools:
        if only is not None and t["name"] != only:
            continue
        params = t.get("parameters") or {"type": "object", "properties": {}}
        alts.append(
            {
                "type": "object",
                "properties": {"name": {"const": t["name"]}, "arguments": params},
                "required": ["name", "arguments"],
            }
        )
    if not alts:
        raise ValueError(f"tool_choice names {only!r}, which is not among the offered tools")
    return alts[0] if len(alts) == 1 else {"oneOf": alts}


def tool_grammar(tools: Sequence[dict[str, Any]], choice: str = "auto") -> str:
    """GBNF constraining the answer to a tool call (``required``/a name) or text-or-call (``auto``).

    The answer begins after the format's ``Answer:`` prefix, so it starts with a space.
    """
    from llama_cpp.llama_grammar import json_schema_to_gbnf  # lazy: heavy

    only = None if choice in ("auto", "required") else choice
    gbnf = json_schema_to_gbnf(json.dumps(call_schema(tools, only)))
    gbnf = re.sub(r"^root ::=", "call-json ::=", gbnf, count=1, flags=re.MULTILINE)
    if choice == "auto":
        root = 'root ::= " " ( "CALL " call-json | answer-text )\nanswer-text ::= [^C\\n] [^\\n]*\n'
    else:
        root = 'root ::= " CALL " call-json\n'
    return root + gbnf


def call_grammar(tools: Sequence[dict[str, Any]], choice: str = "required") -> str:
    """GBNF for one call after ``CALL``: a space, then ``{"name": ..., "arguments": {...}}``.

    The space belongs to the call, not to the prompt: the prompt ends with ``CALL`` because
    the tokenizer spells the examples' `` {"`` as one token; a prompt ending in a lone space
    token made ``{`` so unlikely that the first step searched all 262,144 tokens (+50 MB peak).

    ``choice`` names one tool to force it; ``auto``/``required`` allow any offered tool.
    """
    from llama_cpp.llama_grammar import json_schema_to_gbnf  # lazy: heavy

    only = None if choice in ("auto", "required") else choice
    gbnf = json_schema_to_gbnf(json.dumps(call_schema(tools, only)))
    return 'root ::= " " call-json\n' + re.sub(r"^root ::=", "call-json ::=", gbnf, count=1, flags=re.MULTILINE)


def parse_tool_call(text: str, index: int = 0) -> ToolCall | None:
    """The tool call in a grammar-constrained answer, or None when it is plain text."""
    body = text.strip()
    if not body.startswith(CALL_PREFIX):
        return None
    data = json.loads(body[len(CALL_PREFIX) :])
    return ToolCall(id=f"call_{index}", name=data["name"], arguments=data.get("arguments") or {})


def chat_messages(messages: Sequence[ChatMessage]) -> list[dict[str, Any]]:
    """Messages for a model with its own chat template (tool turns as plain text).

    Many templates refuse a system turn anywhere but first, so system messages at the
    start are merged into one, and a later one (the beliefs retrieved for the current
    message) goes at the head of the person's message that follows it.
    """
    out: list[dict[str, Any]] = []
    notes: list[str] = []
    for m in messages:
        if m.role == "system" and out and out[-1]["role"] == "system":
            out[-1]["content"] = out[-1]["content"].rstrip() + "\n\n" + m.content.strip()
        elif m.role == "system" and out:
            notes.append(m.content.strip())
        elif m.role == "user" and notes:
            out.append({"role": "user", "content": "\n\n".join([*notes, m.content])})
            notes = []
        elif m.role == "tool":
            out.append({"role": "user", "content": f"Tool result: {m.content}"})
        elif m.role == "assistant" and m.tool_calls:
            out.append({"role": "assistant", "content": _assistant_text(m)})
        else:
            out.append({"role": m.role, "content": m.content})
    if notes:  # nothing of the person's followed them: they belong to the system turn
        out[0]["content"] = out[0]["content"].rstrip() + "\n\n" + "\n\n".join(notes)
    return out
