"""Whether a tool call a model proposes is grounded in what the person asked.

A small instruction-tuned model offered tools calls one for nearly anything:
Qwen2.5-Coder 0.5B, asked "What is the capital of France?" with exod's tools,
answers with a call. Text or call is therefore not the model's decision
alone (docs/models.md, "Text or a tool call"). The model proposes; this
module says whether the proposal acts on something the person actually
gave, and a call that does not is answered in words instead.

The sources a call may draw on are the person's last message and whatever
happened after it in the turn (tool results, earlier calls): a file a tool
listed may be read next; a file nobody mentioned may not.

A call is *grounded* when

1. every **name** among its arguments — a value without spaces, such as a
   path or a command word — appears in the sources (a path also by its
   file name), and every file name inside a longer value does too;
2. at least one argument is **anchored** in the person's own last message:
   a name that appears there, or a short phrase sharing a content word with
   it (a tool's output may supply a name, never the reason to act); long
   free text (a file's new content, a patch) is the model's own writing and
   anchors nothing;
3. it is not an **echo**: a free-text argument that only restates the
   person's question (asking the person their own question back, or
   searching memory for it, which the memory provider has already done for
   this message) adds nothing an answer in words would not; a question
   made only of the person's words is one, even when it drops part of the
   message (a file name they gave);
4. a tool whose description says it works on **files** names one: a call
   to apply a "patch" of ``good morning`` to no file acts on nothing. A
   file is named by a path or a name with an extension, or by a bare name
   the person's message calls a file ("delete the file called notes", "my
   notes file"): a file need not have an extension;
5. it is not a **repeat** of a call already made since the person's message
   (its result is already there to answer from);
6. a call that **changes** something (the gate's own classification,
   :func:`exo_core.gate.classify.classify`, places it off the lowest cell:
   a write, an edit, a deletion, a command that is not a plain read) is
   **asked for**: a word of the person's message is the tool's own verb (in
   its name or description and in no offered read-only tool's) and the turn
   has not called that tool yet, or a word of the message reaches the call's
   arguments without having been used by the turn already (an earlier call's
   arguments, a tool's result). The verb asks for one call of its tool: after
   "Delete the file called notes." deleted ``notes``, a second ``delete_file``
   of the path its result printed carries nothing the person asked for that
   the turn has not done, and the answer is given in words; "Delete a.txt and
   b.txt" still gets its second call, for ``b.txt``. Reading ``todo.txt`` to answer
   "what is the first item?" uses the file name; an edit of that file then
   carries nothing the person asked for, only the file's own lines, and the
   answer is given in words (docs/models.md, "Text or a tool call").

These are rules about the person's words, not about any tool's name, so a
plugin's tools are judged the same way.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from exo_core.gate.axes import Axes
from exo_core.gate.classify import classify
from exo_core.seams.model import ChatMessage, ToolCall

__all__ = [
    "Grounding",
    "LONG_TEXT",
    "call_grounding",
    "content_words",
    "files_called",
    "grounding_sources",
    "own_words",
    "read_only_words",
]

# Longer string arguments are the model's own writing (a file's content), not a reference to anything.
LONG_TEXT = 120
# The share of the question's content words an argument must repeat to count as restating it.
_ECHO_SHARE = 0.6
_WORD = re.compile(r"[a-z0-9]+")
_FILES = re.compile(r"\bfiles?\b", re.IGNORECASE)
_FILE_NAME = re.compile(r"[\w.-]*\w\.[a-z0-9]{1,8}\b|[\w.-]*/[\w./-]+")
# A name the person calls a file, extension or not: "the file called notes", "a file named Makefile", "my notes file".
_CALLED_FILE = re.compile(
    r"\bfile\s+(?:called|named)\s+[\"'`]?([\w.-]*\w)|\b(?:my|the|our|this|that)\s+([\w.-]*\w)\s+file\b",
    re.IGNORECASE,
)
_STOP = frozenset(
    "a an the of to in on at for by with from and or but is are was were be been am do does did "
    "what which who whom whose when where why how this that these those it its i me my we our you "
    "your he she they them his her their there here please can could would should will shall may "
    "might must tell show give let about into as if then than so just any some all no not yes".split()
)


@dataclass(frozen=True, slots=True)
class Grounding:
    """The verdict on one call: ``grounded``, and ``reason`` in words either way."""

    grounded: bool
    reason: str


def content_words(text: str) -> set[str]:
    """The words of ``text`` that carry meaning: lower-cased, two letters or more, no function words."""
    return {w for w in _WORD.findall(text.lower()) if len(w) > 1 and w not in _STOP}


_words = content_words


def _tool_words(tool: Mapping[str, Any]) -> set[str]:
    return content_words(str(tool.get("name", "")).replace("_", " ") + " " + str(tool.get("description", "")))


def read_only_words(tools: Sequence[Mapping[str, Any]], *, besides: str) -> set[str]:
    """The words of every offered tool but ``besides`` that only reads (its name and description).

    A word a read-only tool also has ("file", "text") cannot tell that the
    person asked for a change, nor which tool they named.
    """
    out: set[str] = set()
    for tool in tools:
        name = str(tool.get("name", ""))
        if name != besides and not _changes(name, {}):
            out |= _tool_words(tool)
    return out


def own_words(name: str, tools: Sequence[Mapping[str, Any]]) -> set[str]:
    """Tool ``name``'s own words: in its name or description and in no other offered read-only tool's (rule 6)."""
    spec = next((t for t in tools if t.get("name") == name), None)
    if spec is None:
        return set()
    return _tool_words(spec) - read_only_words(tools, besides=name)


def grounding_sources(messages: Sequence[ChatMessage]) -> str:
    """The text a call may draw on: the person's last message and everything after it."""
    last_user = max((i for i, m in enumerate(messages) if m.role == "user"), default=-1)
    if last_user < 0:
        return ""
    parts = []
    for m in messages[last_user:]:
        parts.append(m.content)
        parts.extend(str(v) for c in m.tool_calls for v in c.arguments.values())
    return "\n".join(parts)


def _strings(value: Any) -> list[str]:
    """Every string inside an argument value (lists and objects walked)."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, Mapping):
        return [s for v in value.values() for s in _strings(v)]
    if isinstance(value, (list, tuple)):
        return [s for v in value for s in _strings(v)]
    return []


def _numbers(value: Any) -> list[int | float]:
    """Every number inside an argument value (booleans are not numbers here)."""
    if isinstance(value, bool):
        return []
    if isinstance(value, (int, float)):
        return [value]
    if isinstance(value, Mapping):
        return [n for v in value.values() for n in _numbers(v)]
    if isinstance(value, (list, tuple)):
        return [n for v in value for n in _numbers(v)]
    return []


def _name_appears(name: str, sources: str) -> bool:
    """Whether ``name`` (a path, a command word) is in ``sources``, whole or by its file name."""
    low, text = name.lower().strip(), sources.lower()
    base = low.rstrip("/").rsplit("/", 1)[-1]
    return any(_whole(part, text) for part in {low, base} if part)


def _whole(part: str, text: str) -> bool:
    """``part`` in ``text`` as a whole word (``ls`` is not in "tools"), quotes and brackets aside."""
    return re.search(r"(?<![\w-])" + re.escape(part) + r"(?![\w-])", text) is not None


def call_grounding(
    call: ToolCall, messages: Sequence[ChatMessage], tools: Sequence[Mapping[str, Any]] = ()
) -> Grounding:
    """Judge ``call`` against the conversation it was proposed in (see the module docstring).

    ``tools`` are the offered tool descriptions (name, description, parameters).
    """
    sources = grounding_sources(messages)
    if not sources.strip():
        return Grounding(False, "there is no message from the person to act on")
    if _repeats(call, messages):
        return Grounding(False, f"{call.name}: the same call was already made for this message")
    spec = next((t for t in tools if t.get("name") == call.name), None)
    asked = next((m.content for m in reversed(messages) if m.role == "user"), "")
    if spec is not None and _FILES.search(str(spec.get("description", ""))) and not _names_a_file(call, asked):
        return Grounding(False, f"{call.name} works on files, and the call names none")
    source_words = _words(asked)
    # a number the person said anchors a call ("a timer for 5 minutes"); one they did not (a default
    # start line) neither anchors nor spoils it
    anchored = any(_whole(str(n), asked.lower()) for n in _numbers(call.arguments))
    for value in (s for v in call.arguments.values() for s in _strings(v)):
        text = value.strip()
        if not text:
            continue
        if not re.search(r"\s", text):
            if not _name_appears(text, sources):
                return Grounding(False, f"{call.name}: {text!r} is not in the person's words")
            anchored = anchored or _name_appears(text, asked) or bool(_words(text) & source_words)
            continue
        for name in _FILE_NAME.findall(text.lower()):
            if not _name_appears(name, sources):
                return Grounding(False, f"{call.name}: the file {name!r} is not in the person's words")
        if len(text) > LONG_TEXT:
            continue
        if _restates(text, messages):
            return Grounding(False, f"{call.name}: {text!r} only restates the person's question")
        anchored = anchored or bool(_words(text) & source_words)
    if not anchored:
        return Grounding(False, f"{call.name}: none of its arguments refers to anything the person said")
    if _changes(call.name, call.arguments) and not _asked_for(call, messages, tools, source_words, said=asked):
        return Grounding(False, f"{call.name}: it changes something, and the person asked for no change")
    return Grounding(True, f"{call.name}: its arguments come from the person's words")


def _changes(name: str, arguments: Mapping[str, Any]) -> bool:
    """Whether the gate places calling ``name`` with ``arguments`` above a plain private read (rule 6)."""
    return classify(name, arguments).axes != Axes()


def _asked_for(
    call: ToolCall, messages: Sequence[ChatMessage], tools: Sequence[Mapping[str, Any]], asked: set[str], *, said: str
) -> bool:
    """Whether the person's message asks for the change ``call`` makes (rule 6).

    Either one of their words is the tool's own (name or description) and no
    read-only offered tool's, and the turn has not called that tool since their
    message, or one of their words is in the call's arguments and not yet in
    anything the turn did since their message (a name they said, such as
    ``b.txt``, counts whole: "Delete a.txt and b.txt").
    """
    if own_words(call.name, tools) & asked and not _called_since_message(call.name, messages):
        return True
    since = _since_message(messages)
    used = _words(since)
    given = set()
    for value in call.arguments.values():
        for text in _strings(value):
            given |= _words(text)
            name = text.strip()
            if name and not re.search(r"\s", name) and _name_appears(name, said) and not _name_appears(name, since):
                return True
        given |= {str(n) for n in _numbers(value)}
    return bool((given & asked) - used)


def _since_message(messages: Sequence[ChatMessage]) -> str:
    """What the turn did after the person's last message: the calls' arguments and the tools' results."""
    last_user = max((i for i, m in enumerate(messages) if m.role == "user"), default=-1)
    parts = []
    for m in messages[last_user + 1 :]:
        parts.append(m.content)
        parts.extend(s for c in m.tool_calls for v in c.arguments.values() for s in _strings(v))
    return "\n".join(parts)


def _called_since_message(name: str, messages: Sequence[ChatMessage]) -> bool:
    """Whether the turn has called tool ``name`` since the person's last message."""
    last_user = max((i for i, m in enumerate(messages) if m.role == "user"), default=-1)
    return any(c.name == name for m in messages[last_user + 1 :] for c in m.tool_calls)


def _repeats(call: ToolCall, messages: Sequence[ChatMessage]) -> bool:
    """Whether the same tool was already called with the same arguments since the person's message."""
    last_user = max((i for i, m in enumerate(messages) if m.role == "user"), default=-1)
    for m in messages[last_user + 1 :]:
        if any(c.name == call.name and c.arguments == call.arguments for c in m.tool_calls):
            return True
    return False


def files_called(text: str) -> set[str]:
    """The names ``text`` calls a file ("the file called notes", "my notes file"), lower-cased."""
    return {(a or b).lower() for a, b in _CALLED_FILE.findall(text)}


def _names_a_file(call: ToolCall, asked: str) -> bool:
    """Whether any argument is or holds a file name or path, or is a name the person called a file (rule 4).

    Grounded or not: rule 1 checks that.
    """
    called = files_called(asked)
    for value in (s for v in call.arguments.values() for s in _strings(v)):
        low = value.lower().strip()
        if _FILE_NAME.search(low) or low.rstrip("/").rsplit("/", 1)[-1] in called:
            return True
    return False


def _restates(text: str, messages: Sequence[ChatMessage]) -> bool:
    """Whether ``text`` repeats most of the person's last message, which is a question."""
    last = next((m.content for m in reversed(messages) if m.role == "user"), "")
    if not last.rstrip().endswith("?"):
        return False
    asked = _words(last)
    if not asked:
        return False
    said = _words(text)
    if text.rstrip().endswith("?") and said and said <= asked:
        # a question back made only of the person's own words ("Open todo.txt: what should I return?" ->
        # ask "What should I return?"), however much of their message it leaves out
        return True
    return len(said & asked) >= _ECHO_SHARE * len(asked)
