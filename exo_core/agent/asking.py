"""Which offered tools the person's own words name: the judge's "asked for" evidence, read before the model's.

The judge (:mod:`exo_core.agent.grounding`, rule 6) accepts a call that
changes something only when one of the person's words is the tool's own. A
local model's choice is made earlier than that, by two numbers of its own:
how likely its answer opens a call, and how likely it names each tool first.
Both missed what the person's words said outright (docs/benchmarks.md §13):
asked to "Run the tests with pytest", the 0.5B's call mass was 0.12 and it
answered with instructions; asked to "Write 'buy milk' to the file todo.txt",
``write_file`` was not among the three tools it named likeliest.

The same evidence can be read before the model decides. A tool's **verbs** are
the words of its name and the first word of its description (tool
descriptions open with what the tool does: "Delete a file.", "Run a bash
command ..."), less any word another offered read-only tool also has (as in
rule 6: "file" names no tool). Then

* **named**: the tools whose verb is among the person's words. The chat path
  tries them first, whatever the model's rank of their names.
* **bidden**: the tools whose verb is the message's leading word, the
  imperative ("Delete the draft.", "Please run ls", "Can you read x.md?").
  The chat path treats such a message as asking for a call even when the
  model's call mass is low.

Neither decides anything: every candidate still goes to the judge, and a
call it turns down is answered in words. These are rules about the person's
words and the tools' own names and descriptions, so a plugin's tools are read
the same way.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from exo_core.agent.grounding import content_words, read_only_words
from exo_core.seams.model import ChatMessage

__all__ = ["AskedTools", "asked_tools", "leading_word", "tool_verbs"]

_WORD = re.compile(r"[a-z0-9]+")
# Words that may come before a request's imperative without being it ("Please delete ...", "OK, run ...").
_COURTESY = frozenset("please kindly ok okay now then so and also just go ahead".split())
# "Can you ..." and its kin: a request put as a question, whose verb follows "you".
_MODALS = frozenset("can could would will".split())


@dataclass(frozen=True, slots=True)
class AskedTools:
    """The offered tools the person's last message names by a verb (``named``) and by its leading one (``bidden``).

    Both in the offered order; ``bidden`` is empty once the turn has acted
    since the message (a tool's result is there: the imperative was served).
    """

    named: tuple[str, ...] = ()
    bidden: tuple[str, ...] = ()


def tool_verbs(name: str, tools: Sequence[Mapping[str, Any]]) -> set[str]:
    """The words that name tool ``name``: its name's words and its description's first, less read-only tools'."""
    spec = next((t for t in tools if t.get("name") == name), None)
    if spec is None:
        return set()
    description = _WORD.findall(str(spec.get("description", "")).lower())
    words = content_words(name.replace("_", " ") + " " + " ".join(description[:1]))
    return words - read_only_words(tools, besides=name)


def leading_word(text: str) -> str | None:
    """The word a request opens with, after courtesies and a "can you": its imperative if it has one."""
    words = _WORD.findall(text.lower())
    at = 0
    while at < len(words):
        word = words[at]
        if word in _COURTESY:
            at += 1
        elif word in _MODALS and at + 1 < len(words) and words[at + 1] == "you":
            at += 2
        else:
            return word
    return None


def asked_tools(messages: Sequence[ChatMessage], tools: Sequence[Mapping[str, Any]]) -> AskedTools:
    """The tools among ``tools`` that the person's last message names (see the module docstring)."""
    last_user = max((i for i, m in enumerate(messages) if m.role == "user"), default=-1)
    if last_user < 0:
        return AskedTools()
    text = messages[last_user].content
    said = content_words(text)
    lead = leading_word(text)
    acted = last_user < len(messages) - 1
    named: list[str] = []
    bidden: list[str] = []
    for tool in tools:
        name = str(tool.get("name", ""))
        verbs = tool_verbs(name, tools)
        if verbs & said:
            named.append(name)
        if lead is not None and lead in verbs and not acted:
            bidden.append(name)
    return AskedTools(tuple(named), tuple(bidden))
