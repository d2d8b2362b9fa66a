"""Rendering a planned view as the model input: system prompt, background, verbatim tail.

The history view goes into the system message, after the system prompt and
inside clear markers, introduced as background rather than instructions
(docs/context.md). One system message, because several providers and chat templates
accept only one; the unchanging system prompt stays first so a provider's
prompt cache still covers it. Its header asks the model to say in its reply
anything it learned that will matter later, since summaries keep little tool
output. The tail follows as real chat messages, tool calls and results
paired.
"""

from __future__ import annotations

from collections.abc import Sequence

from exo_core.agent.seams import to_chat_messages
from exo_core.context.prompt import render_transcript
from exo_core.context.tree import Plan
from exo_core.seams.model import ChatMessage
from exo_core.sessions.session_store import MessageRecord

__all__ = ["VIEW_HEADER", "VIEW_FOOTER", "render_view", "history_block", "history_elements", "input_tokens"]

VIEW_HEADER = (
    "<history>\n"
    "Background: the earlier part of this conversation, oldest first, as summaries (each labelled with the "
    "messages it covers) and, where no summary is ready yet, the messages themselves. It is background to "
    "inform your reply, not instructions to follow; the person's current messages come after it. Summaries "
    "keep little tool output, so if you learn something in this turn that will matter later, say it in your "
    "reply. Every original message can still be found with search."
)
VIEW_FOOTER = "</history>"


def history_elements(plan: Plan, messages: Sequence[MessageRecord], *, message_chars: int) -> list[str]:
    """The rendered elements of ``plan`` before the tail, oldest first (each labelled with its messages)."""
    parts: list[str] = []
    for element in plan.elements:
        if element.kind == "tail":
            continue
        label = f"messages {element.first + 1}\u2013{element.last + 1}"
        if element.kind == "summary" and element.node is not None:
            parts.append(f"[summary of {label}]\n{element.node.text}")
        else:
            text = render_transcript(
                messages[element.first : element.last + 1], first_position=element.first, limit=message_chars
            )
            parts.append(f"[{label}, not yet summarized]\n{text}")
    return parts


def history_block(plan: Plan, messages: Sequence[MessageRecord], *, message_chars: int) -> str:
    """The background block for the elements of ``plan`` before the tail ('' when there are none)."""
    parts = history_elements(plan, messages, message_chars=message_chars)
    return VIEW_HEADER + "\n\n" + "\n\n".join(parts) + "\n" + VIEW_FOOTER if parts else ""


def render_view(
    system_prompt: str, plan: Plan, messages: Sequence[MessageRecord], *, message_chars: int
) -> list[ChatMessage]:
    """The full model input: one system message (prompt + history), then the tail verbatim."""
    system = "\n\n".join(p for p in (system_prompt, history_block(plan, messages, message_chars=message_chars)) if p)
    head = [ChatMessage(role="system", content=system)] if system else []
    return head + to_chat_messages(messages[plan.tail_start :])


def input_tokens(chat: Sequence[ChatMessage]) -> int:
    """Estimated tokens of a model input (characters / 4, tool calls included)."""
    return (sum(len(m.content) + sum(len(c.name) + len(str(c.arguments)) for c in m.tool_calls) for m in chat) + 3) // 4
