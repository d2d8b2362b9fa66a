"""A chat-template model's own prompt format, tools included, and its tool calls read back.

A model with a chat template (Qwen2.5, Qwen3, ...) was trained on one way of
being offered tools and of calling them. Qwen's template lists the tools as
JSON inside ``<tools></tools>`` in the system turn and expects a call as::

    <tool_call>
    {"name": "read_file", "arguments": {"path": "todo.txt"}}
    </tool_call>

:class:`ChatTemplate` renders the GGUF's own Jinja template (as llama-cpp-python's
``Jinja2ChatFormatter`` does, but under the limits of :mod:`exo_edge.template_limits`)
with the offered tools, the earlier calls as the assistant's ``tool_calls`` and
the results as the template's ``tool`` role, so the model sees exactly what it was
trained on. A template that renders the tools but not a ``<tool_call>`` block is
not *native*: the transport then keeps the ``CALL`` grammar of :mod:`exo_edge.prompting`.

:func:`parse_native_calls` reads the calls out of generated text: JSON
objects inside the call tags (the closing tag may be missing at the end),
``arguments`` as an object or as a JSON string; anything else is a
:class:`MalformedToolCall` that quotes what the model wrote.
:func:`native_call_grammar` is the GBNF for one call's JSON (after the
opening tag), built from the offered tools' schemas.
"""

from __future__ import annotations

import dataclasses
import json
import re
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from exo_core.seams.failures import FailureKind, ProviderError
from exo_core.seams.model import ChatMessage, ToolCall
from exo_edge.prompting import call_schema
from exo_edge.template_limits import TemplateLimitError, bounded_formatter

__all__ = [
    "CALL_OPEN",
    "CALL_CLOSE",
    "MalformedToolCall",
    "ChatTemplate",
    "template_messages",
    "template_tools",
    "parse_native_calls",
    "native_call_grammar",
]

CALL_OPEN = "<tool_call>"
CALL_CLOSE = "</tool_call>"
# What may stand between the opening tag and the call's JSON: whitespace and a code fence.
_CALL_LEAD = re.compile(r"\s*(?:```(?:json)?\s*)?")
_FENCE = re.compile(r"^```(?:json)?\s*|\s*```$")


class MalformedToolCall(ProviderError):
    """The model opened a tool call but what followed is not a call to an offered tool."""

    code = "bad_tool_call"

    def __init__(self, message: str, *, text: str) -> None:
        super().__init__(message, kind=FailureKind.SERVER, provider="local")
        self.text = text


@dataclass(frozen=True, slots=True)
class ChatTemplate:
    """A GGUF's chat template, ready to render messages and tools.

    ``native`` says the template writes calls in ``<tool_call>`` tags (the
    Hermes style Qwen uses); only then are tools passed to it.
    ``later_system`` says it renders a system message after the first one as
    a turn of its own (Qwen's does): the history view and the beliefs retrieved
    for the current message then stay where the core put them, after the tools
    (:func:`template_messages`).
    """

    source: str
    bos_token: str
    eos_token: str
    native: bool
    later_system: bool = False

    @classmethod
    def from_metadata(cls, metadata: Mapping[str, str], token_text: Mapping[str, str]) -> ChatTemplate | None:
        """The template in a GGUF's metadata (``None`` when the file has none).

        ``token_text`` holds the text of the ``bos`` and ``eos`` tokens, which
        some templates write themselves.
        """
        source = metadata.get("tokenizer.chat_template")
        if not source:
            return None
        native = "tools" in source and CALL_OPEN in source
        template = cls(source, token_text.get("bos", ""), token_text.get("eos", ""), native)
        return dataclasses.replace(template, later_system=template.renders_later_system())

    def renders_later_system(self) -> bool:
        """Whether the template renders a system message that is not the first as a turn of its own.

        Tried once on a probe conversation: a template that refuses it, or drops its text, does not.
        """
        probe = [
            ChatMessage("system", "exo-probe-first"),
            ChatMessage("system", "exo-probe-second"),
            ChatMessage("user", "exo-probe-question"),
        ]
        try:
            text = self._render_as_is(template_messages(probe, later_system=True), None)
        except Exception:  # noqa: BLE001 - jinja2 raises many kinds; each means the template refuses the probe
            return False
        second, question = text.find("exo-probe-second"), text.find("exo-probe-question")
        return text.find("exo-probe-first") < second < question and text.count("exo-probe-second") == 1

    def render(
        self,
        messages: Sequence[ChatMessage],
        tools: Sequence[Mapping[str, Any]] = (),
        *,
        cancel: threading.Event | None = None,
    ) -> str:
        """The prompt text for ``messages``, ending where the assistant answers.

        ``tools`` are given to the template only when it is native. The template
        runs under :data:`~exo_edge.template_limits.RENDER_LIMITS` and stops when
        ``cancel`` is set (:class:`~exo_edge.template_limits.TemplateLimitError`);
        a template error (one that refuses a role order, say) is a :class:`ProviderError`.
        """
        formatter = bounded_formatter(self.source, self.eos_token, self.bos_token)
        offered = template_tools(tools) if (tools and self.native) else None
        try:
            laid_out = template_messages(messages, later_system=self.later_system)
            return formatter(messages=laid_out, tools=offered, cancel=cancel).prompt
        except TemplateLimitError:
            raise
        except Exception as exc:  # jinja2 raises many kinds; all mean the template refused
            raise ProviderError(
                f"the model's chat template could not render this conversation ({type(exc).__name__}: {exc}); "
                "register the model with a completion [prompt] format instead",
                kind=FailureKind.BAD_REQUEST,
                provider="local",
            ) from exc

    def _render_as_is(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None) -> str:
        formatter = bounded_formatter(self.source, self.eos_token, self.bos_token)
        return formatter(messages=messages, tools=tools).prompt


def template_tools(tools: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Tool descriptions as chat templates expect them: OpenAI's ``{"type": "function", "function": ...}``."""
    out = []
    for tool in tools:
        function = {
            "name": tool["name"],
            "description": str(tool.get("description", "")).strip(),
            "parameters": tool.get("parameters") or {"type": "object", "properties": {}},
        }
        out.append({"type": "function", "function": function})
    return out


def template_messages(messages: Sequence[ChatMessage], *, later_system: bool = False) -> list[dict[str, Any]]:
    """Messages as a chat template reads them: calls as ``tool_calls``, results in the ``tool`` role.

    Arguments stay objects (Qwen's template writes them with ``tojson``).
    With ``later_system`` (the template renders them: :attr:`ChatTemplate.later_system`)
    every system message stays where it is. Otherwise, as several templates take
    only ``messages[0]`` as the system turn, system messages at the start are
    merged into the first, and a later one (the beliefs retrieved for the current
    message) goes at the head of the person's message that follows it.
    """
    out: list[dict[str, Any]] = []
    notes: list[str] = []  # later system messages waiting for the person's next message
    for m in messages:
        if m.role == "system" and not later_system and out and out[-1]["role"] != "system":
            notes.append(m.content.strip())
        elif m.role == "system" and not later_system and out:
            out[-1]["content"] = out[-1]["content"].rstrip() + "\n\n" + m.content.strip()
        elif m.role == "user" and notes:
            out.append({"role": "user", "content": "\n\n".join([*notes, m.content])})
            notes = []
        elif m.role == "tool":
            out.append({"role": "tool", "content": m.content, "tool_call_id": m.tool_call_id or ""})
        elif m.role == "assistant" and m.tool_calls:
            calls = [
                {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": dict(c.arguments)}}
                for c in m.tool_calls
            ]
            out.append({"role": "assistant", "content": m.content, "tool_calls": calls})
        else:
            out.append({"role": m.role, "content": m.content})
    if notes:  # nothing of the person's followed them: they belong to the system turn
        out[0]["content"] = out[0]["content"].rstrip() + "\n\n" + "\n\n".join(notes)
    return out


def _one_call(body: str, index: int, names: set[str]) -> ToolCall:
    text = _FENCE.sub("", body.strip())
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise MalformedToolCall(f"the model's tool call is not JSON: {text[:120]!r}", text=body) from exc
    if not isinstance(data, dict) or not isinstance(data.get("name"), str):
        raise MalformedToolCall(f"the model's tool call names no tool: {text[:120]!r}", text=body)
    name = data["name"]
    if names and name not in names:
        raise MalformedToolCall(
            f"the model called {name!r}, which is not among the offered tools ({', '.join(sorted(names))})",
            text=body,
        )
    arguments = data.get("arguments", data.get("parameters", {}))
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments) if arguments.strip() else {}
        except json.JSONDecodeError as exc:
            raise MalformedToolCall(f"the arguments of {name} are not JSON: {arguments[:120]!r}", text=body) from exc
    if arguments is None:
        arguments = {}
    if not isinstance(arguments, dict):
        raise MalformedToolCall(f"the arguments of {name} are not an object: {arguments!r:.120}", text=body)
    return ToolCall(id=f"call_{index}", name=name, arguments=arguments)


def parse_native_calls(text: str, tools: Sequence[Mapping[str, Any]] = ()) -> tuple[ToolCall, ...]:
    """Every ``<tool_call>`` block in ``text`` as a :class:`ToolCall` (none: plain text).

    ``tools`` (when given) limits the names a call may use.
    """
    names = {str(t["name"]) for t in tools}
    calls: list[ToolCall] = []
    opening = text.find(CALL_OPEN)
    while opening >= 0:
        body, end = _call_body(text, opening + len(CALL_OPEN))
        calls.append(_one_call(body, len(calls), names))
        opening = text.find(CALL_OPEN, end)
    return tuple(calls)


def _call_body(text: str, start: int) -> tuple[str, int]:
    """One call block's text from ``start`` (after the opening tag), and where the block ends.

    The call's JSON object is read whole first: an argument may itself hold
    ``</tool_call>`` (a file's content, a command's text), so the first closing
    tag is not the block's end. Text that is no JSON object runs to the
    closing tag (or the end), for :func:`_one_call` to quote in its error.
    """
    lead = _CALL_LEAD.match(text, start)
    brace = lead.end() if lead else start
    if text.startswith("{", brace):
        try:
            _, end = json.JSONDecoder().raw_decode(text, brace)
        except json.JSONDecodeError:
            pass
        else:
            return text[start:end], end
    closing = text.find(CALL_CLOSE, start)
    if closing < 0:
        return text[start:], len(text)
    return text[start:closing], closing + len(CALL_CLOSE)


def native_call_grammar(tools: Sequence[Mapping[str, Any]], choice: str = "auto") -> str:
    """GBNF for the JSON of one call, ``{"name": ..., "arguments": {...}}``, to an offered tool.

    It follows the opening tag and its newline; ``choice`` names a tool to
    force it (``auto``/``required``: any offered tool).
    """
    from llama_cpp.llama_grammar import json_schema_to_gbnf  # lazy: heavy

    only = None if choice in ("auto", "required") else choice
    return json_schema_to_gbnf(json.dumps(call_schema(tools, only)))
