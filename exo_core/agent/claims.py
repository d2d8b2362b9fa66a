"""A reply that says something was done when no tool ran in the turn: never left standing as done.

A small model asked to "add 'call the plumber' to my todo.txt" may answer "I've added it to your
list" without calling a tool. Nothing changed, and the person would believe otherwise. After the
stream, the loop checks a reply of a turn in which no tool ran: when it claims a finished action
(:func:`claims_done`), a note saying nothing was changed is added to the reply on every screen.
"""

from __future__ import annotations

import re

__all__ = ["NOT_DONE", "claims_done"]

NOT_DONE = "(Not done: no tool ran in this turn, so nothing was changed. Ask again to do it.)"

_DONE_VERBS = (
    r"added|appended|written|wrote|saved|updated|created|deleted|removed|sent|scheduled|booked|inserted|"
    r"renamed|moved|changed|edited|replaced|put|noted|recorded|stored|set up"
)
_CLAIM = re.compile(
    r"(?:\b(?:i(?:'ve| have)?|i've now|i have now|it's|it is|it has|that's|that has|has|have|was|were|is now|are now)"
    r"\s+(?:been\s+|now\s+|just\s+|successfully\s+)*(?:" + _DONE_VERBS + r")\b)"
    r"|^\s*(?:done|all done|(?:" + _DONE_VERBS + r"))\b",
    re.IGNORECASE | re.MULTILINE,
)
_NEGATED = re.compile(r"\b(?:not|n't|cannot|can't|couldn't|unable|won't)\b", re.IGNORECASE)


def claims_done(reply: str) -> bool:
    """Whether ``reply`` says an action is finished ("I've added ...", "Done.", "The file has been updated")."""
    for sentence in re.split(r"(?<=[.!?])\s+|\n", reply):
        if _CLAIM.search(sentence) and not _NEGATED.search(sentence):
            return True
    return False
