"""The decision as chat turns for an instruction-tuned model (docs/decisions.md §3).

One prompt, two readers: the local GGUF model renders these turns with its own chat template and reads the
option words' next-token probabilities in-process (:mod:`exo_edge.decide_local`, the ``chat`` style), and
the larger model's engine is sent the same turns over HTTP and asked for the same probabilities as
``top_logprobs`` (:class:`~exo_core.decisions.logprobs.LogprobProvider`). Each option is answered by one
plain word (:func:`answer_words`): an instruction-tuned model reads a word better than a letter.
"""

from __future__ import annotations

import string

from exo_core.decisions.providers import DRAFT_NOTE, cut_draft
from exo_core.seams.decision import Question

__all__ = ["LETTERS", "WORDS", "answer_words", "chat_messages", "one_line"]

LETTERS = string.ascii_uppercase
# One plain word per option where the option's label is not one (what the base model reads best).
WORDS = {"core": "files", "neither": "other", "session_tree": "history", "file_preview": "file"}


def answer_words(question: Question, style: str = "words") -> list[str]:
    """What each option is called in the prompt's answers: its letter, or one word."""
    if style == "letters":
        return list(LETTERS[: len(question.options)])
    # "chat" answers with the same words as "words": an instruction-tuned model reads them best too.
    return [WORDS.get(o, o.replace("_", " ").split()[0]) for o in question.options]


def one_line(text: str) -> str:
    """One line of at most 600 characters; lone surrogates (undecodable bytes from argv) become U+FFFD,
    so the text always encodes to UTF-8 for the tokenizer."""
    line = " ".join(text.split())[:600]
    return line.encode("utf-8", "replace").decode("utf-8")


def example_draft(question: Question, index: int, shown: bool, label: str) -> str:
    """The line with example ``index``'s draft (empty when drafts are not shown or the question has none)."""
    if not shown or len(question.example_drafts) != len(question.examples):
        return ""
    return f"{label}{cut_draft(question.example_drafts[index])}\n"


def chat_messages(question: Question, state: str, draft: str | None = None) -> list[dict[str, str]]:
    """The decision as chat turns for an instruction-tuned model: the options in the system turn,
    each worked example as a user turn answered by one word, then ``state`` as the last user turn.

    With ``draft`` each user turn first shows the assistant's answer it replies to
    (``Assistant's answer: ...``; the examples' from ``question.example_drafts``)."""
    names = answer_words(question, "chat")
    listed = "\n".join(f"- {n}: {question.describe(o)}" for n, o in zip(names, question.options, strict=True))
    system = f"You sort the messages a person sends to their assistant after it answered. {question.text}\n"
    if draft is not None:
        system += DRAFT_NOTE + "\n"
    system += f"Answer with exactly one word from this list:\n{listed}"
    messages = [{"role": "system", "content": system}]
    for i, (text, label) in enumerate(question.examples):
        shown = example_draft(question, i, draft is not None, "Assistant's answer: ")
        messages.append({"role": "user", "content": shown + "Message: " + one_line(text)})
        messages.append({"role": "assistant", "content": names[question.options.index(label)]})
    last = "Message: " + one_line(state)
    if draft is not None:
        last = f"Assistant's answer: {cut_draft(draft)}\n{last}"
    messages.append({"role": "user", "content": last})
    return messages
