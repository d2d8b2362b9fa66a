"""Whether a message the device could not classify is worth putting to the person ("Should I learn from ...?").

Asking interrupts. Most of what a person types is an ordinary turn: a greeting or thanks, a question,
a request ("add 'call the plumber' to my todo.txt"). Such a message teaches nothing, so the device
does not ask about it; only a message that may correct the last answer or set a rule is asked about.

A message is *ordinary* when it carries no sign of a correction or a rule and it reads as a greeting,
a thank-you, a question or a request (by its opening words, or a question mark at its end). The signs
are written from how people phrase corrections ("not", "instead", "I said", "too long", "you forgot")
and rules ("always", "never", "from now on", "next time", "stop", "don't"). A message in a language
these words do not cover is not ordinary by this test, so it is still asked about: missing a lesson
costs more than one question.
"""

from __future__ import annotations

import re

__all__ = ["ordinary_turn", "worth_asking"]

_SIGNS = re.compile(
    # "never mind", "no rush", "no worries": not a no to the draft.
    r"\b(?:no(?! (?:rush|worries|problem|hurry)\b)|nope|nah|not|never(?! mind\b| thought\b)|wrong|incorrect|"
    r"instead|rather|actually|meant|mistake|typo|"
    r"should (?:be|have|say|read)|supposed to|too (?:long|short|formal|casual|much|many|late|early|wordy|vague)|"
    r"shorter|longer|less|fewer|again|still|i said|i asked|i told|i wanted|i meant|"
    r"you (?:forgot|missed|left|used|wrote|put|got|gave|sent|added|mixed|confused|misspel\w*|misunderstood|"
    r"misread|called|picked|chose|deleted|removed|changed|ignored|skipped|dropped|made|said|assumed|overwrote)|"
    r"(?:did|didn'?t|did not|haven'?t|have not) you|always|from now on|next time|in (?:the )?future|going forward|"
    r"whenever|every time|each time|by default|stop|don'?t|do not|prefer|remember|make sure|from here on)\b"
    r"|n't\b",
    re.IGNORECASE,
)
_GREETING = re.compile(
    r"^\s*(?:hi|hello|hey|hiya|yo|good(?: (?:morning|afternoon|evening|night))?|morning|evening|thanks|thank you|"
    r"thx|ta|cheers|great|perfect|brilliant|lovely|nice|cool|awesome|ok(?:ay)?|got it|sounds good|bye|see you|"
    r"night|(?:that )?looks? (?:good|great|fine|perfect|lovely|right)|that'?s (?:the one|it|fine|great|perfect|"
    r"good|lovely|right)|right|sure|yes|yep|yeah|fine|alright|ah,? ok(?:ay)?|aww|haha|never mind|no rush|"
    r"no worries)\b"
    r"|^\s*(?:hm+|ah|oh|wow|\W{1,4})\s*[.!?]*\s*$",  # a sound, an emoji or a mark alone
    re.IGNORECASE,
)
_REQUEST = re.compile(
    r"^\s*(?:please|pls|can you|could you|would you|will you|can i|could i|may i|i need|i'd like|i would like|"
    r"help me|let'?s|add|append|insert|put|write|create|make|draft|send|book|remind me|set|schedule|show|tell me|"
    r"give me|list|read|open|search|look up|find|check|summari[sz]e|translate|call|email|text|rename|move|copy|"
    r"save|note|plan|start|run|play|what|what's|when|where|who|whose|how|why|which|is|are|am|was|were|do|does|"
    r"did|have|has|should|shall|any|now|also|then|and|share|post|i'll|i will|done)\b",
    re.IGNORECASE,
)


def ordinary_turn(text: str) -> bool:
    """Whether ``text`` is a greeting, thanks, question or request with no sign of a correction or rule."""
    words = " ".join(text.split())
    if not words or _SIGNS.search(words):
        return False
    return bool(_GREETING.match(words) or _REQUEST.match(words) or words.endswith("?"))


def worth_asking(text: str) -> bool:
    """Whether the person should be asked if ``text`` teaches something (see the module's docstring)."""
    return not ordinary_turn(text)
