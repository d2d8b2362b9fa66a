"""The three decisions wired now (docs/decisions.md §7): signal, toolset, panel.

* :data:`SIGNAL` — is this message of the person's a ``correction``, a
  ``rule``, or ``neither``? Feeds the learning loop (docs/learning.md §1); below the
  threshold it escalates to the main model (the reviewer), never guesses.
* :func:`toolset_question` — which toolset does this turn need? Narrows the
  tools the model sees; below the threshold every tool stays offered.
* :data:`PANEL` — should a panel open, and which? Below the threshold: no panel.

Each carries its rules in code (exact patterns that settle the answer; they
run first) and cue words for the rules-only provider, plus a few worked
examples for model providers. :func:`signal`, :func:`toolset` and
:func:`panel` are the functions other parts call.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from exo_core.decisions.decider import Decider
from exo_core.decisions.signal_rules import SIGNAL_CUES, SIGNAL_RULE_CONFIDENCE, SIGNAL_RULES
from exo_core.seams.decision import Decision, Question, Rule

__all__ = [
    "SIGNAL",
    "TOOLSET",
    "PANEL",
    "TOOLSETS",
    "USES",
    "toolset_question",
    "signal",
    "toolset",
    "panel",
    "chosen_toolsets",
]

SIGNAL = Question(
    "signal",
    "choice",
    "Is this message a correction, a rule, or neither?",
    ("correction", "rule", "neither"),
    # Each line names the forms new writers' messages took that shorter one-liners did not cover
    # (docs/studies/signal-decisions.md, seventh and eighth passes): a correction stated as a plain fact or a
    # question, a preference stated as a fact about the person, a rule that comes with thanks, a "no" that
    # corrects nothing.
    # A correction is about the answer, so venting about something else is not one.
    (
        "the person says the assistant's last answer or action was wrong or should be different: a wrong fact, "
        "name or date, something missing or extra, the wrong tone, length or format (often said as a plain fact "
        "or a question about that answer)",
        "a standing instruction or preference for later tasks too, not only this one: how things should always "
        "be done, or a lasting fact about the person or their life to keep in mind (also when it comes with "
        "thanks or approval)",
        "anything else: a new one-off request, a question, thanks, praise, agreement or small talk (also "
        "complaints or news about the person's own day, not about the answer), and a "
        '"no" that turns down an offer or says nothing needs changing',
    ),
    threshold=0.6,
    fallback="main",
    rules=SIGNAL_RULES,
    cues=SIGNAL_CUES,
    rule_confidence=SIGNAL_RULE_CONFIDENCE,  # measured on later messages; the toolset and panel rules keep 1
    examples=(
        ("No, the meeting is on Tuesday, not Thursday.", "correction"),
        ("From now on, write dates as YYYY-MM-DD.", "rule"),
        ("What time does the bakery open?", "neither"),
        ("You used the old address, it's 12 Rua Nova now.", "correction"),
        ("I never want flights that leave before 8am.", "rule"),
        ("Draft a reply to the landlord.", "neither"),
        ("That's the wrong file, I meant the budget one.", "correction"),
        ("Sign my work emails with just my first name.", "rule"),
        ("Thanks, that looks good.", "neither"),
        ("Hm, Friday is a bank holiday here.", "correction"),
        ("I don't drink, so skip wine bars when you plan our evenings.", "rule"),
        ("No, that's fine as it is, nothing else.", "neither"),
        ("bit stiff for my sister?", "correction"),
        ("Great, send it. And I like the key point first in anything for my team.", "rule"),
        ("Nice spot, I'd never have seen that typo.", "neither"),
        ("ugh, the train is late again and it's pouring", "neither"),
        ("Schreib meiner Oma immer auf Deutsch, sie liest kein Englisch.", "rule"),
        ("Merci, tu m'as sauvé la journée !", "neither"),
    ),
    # The draft each example answers, for a provider that reads it (docs/decisions.md §3).
    example_drafts=(
        "I've put the meeting with the architects in your calendar for Thursday at 10:00.",
        "Your invoice is due on 14/03/2025.",
        "I've added croissants and bread to tomorrow's shopping list.",
        "Here's the delivery form with your address: 4 Avenida Central.",
        "I found a 6:15 flight to Madrid for 89 euros.",
        "You have three unread e-mails: from the landlord, the bank and the gym.",
        "I've attached notes.pdf to the e-mail.",
        "Here's the e-mail to the team, signed with your full name and job title.",
        "Here's the revised cover letter.",
        "I've booked the plumber for Friday at 9:00.",
        "For Saturday: dinner at 7, then the new wine bar on Rua Augusta.",
        "I've sent the form. Anything else you'd like me to change?",
        "Dear Ms. Silva, I write to inform you that the family dinner will take place on Sunday.",
        "Here's the update for the team: three paragraphs on the quarter, with the decision at the end.",
        "I found a typo in the contract: 'recieve' in clause 4. I've fixed it.",
        "I've moved your 9:00 call to 9:30 so you can make the train.",
        "Here's the birthday message for your grandmother, in English.",
        "Ta réservation est faite : table pour deux, vendredi à 20 h.",
    ),
)

_TOOLSET_DESCRIPTIONS = {
    "none": "no tool: just answer in words",
    "core": "read, write or edit files",
    "shell": "run a shell command (git, tests, scripts, installs)",
    "memory": "look up past conversations or what the person saved",
    "ui": "show something on the person's screen",
}
TOOLSETS = tuple(_TOOLSET_DESCRIPTIONS)


def toolset_question(toolsets: Iterable[str] = TOOLSETS[1:]) -> Question:
    """The toolset question over the registry's ``toolsets`` (plus ``none``)."""
    order = {name: i for i, name in enumerate(TOOLSETS)}  # known toolsets first, in the table's order
    options = ("none", *sorted(set(toolsets) - {"none"}, key=lambda name: (order.get(name, len(order)), name)))
    known = set(options)
    return Question(
        "toolset",
        "choice",
        "Which tools does this request need?",
        options,
        tuple(_TOOLSET_DESCRIPTIONS.get(o, f"the {o} tools") for o in options),
        threshold=0.7,
        fallback="default",
        rules=tuple(r for r in _TOOLSET_RULES if r.option in known),
        cues={o: c for o, c in _TOOLSET_CUES.items() if o in known},
        examples=tuple(e for e in _TOOLSET_EXAMPLES if e[1] in known),
    )


_TOOLSET_RULES = (
    Rule(
        "shell-command",
        r"\b(git (push|pull|commit|status|log|diff|clone|checkout|rebase|stash)|pytest|npm |pip "
        r"install|make (test|build|install)|docker|run (the )?(tests?|script|build))\b",
        "shell",
    ),
    Rule(
        "file-name",
        r"\b(open|read|edit|write|create|rename|fix|update|append to)\b.*\b[\w-]+\.(md|txt|py|json|"
        r"toml|ya?ml|csv|js|ts|html|cfg|ini)\b",
        "core",
    ),
    Rule(
        "past-talk",
        r"\b(what did (i|we|you) (say|decide|agree|tell)|remind me what|last (week|time|session) "
        r"(i|we|you))\b",
        "memory",
    ),
    Rule("small-talk", r"^\s*(hi|hello|hey|thanks|thank you|ok|okay|great|good morning|good night)\b[\s.!]*$", "none"),
)
_TOOLSET_CUES = {
    "none": ("?", "explain", "what is", "why", "how do", "thanks", "write me", "translate", "suggest"),
    "core": ("file", "readme", "notes", "document", "edit", "open", ".md", ".txt", ".py", "save", "draft"),
    "shell": ("run", "git", "commit", "push", "install", "test", "build", "script", "command", "disk", "process"),
    "memory": ("remember", "last time", "earlier", "before", "did i", "we talked", "what did", "said", "mentioned"),
    "ui": ("show", "screen", "display", "panel", "table", "diff"),
}
_TOOLSET_EXAMPLES = (
    ("Correct the spelling mistakes in chapter2.md.", "core"),
    ("Tag this commit as v1.2 and push it.", "shell"),
    ("What did we agree about the school run last month?", "memory"),
    ("Explain what a mortgage is.", "none"),
    ("Show the timetable on the screen.", "ui"),
    ("Add a line to my shopping list file.", "core"),
    ("Is the backup drive mounted?", "shell"),
)

PANEL = Question(
    "panel",
    "choice",
    "Should a panel open on the screen, and which one?",
    ("none", "diff", "file_preview", "taste", "session_tree", "table"),
    (
        "no panel: a spoken or written answer is enough",
        "the changes made to files",
        "the contents of one file",
        "what the assistant has learned about the person's taste",
        "the branches and history of this conversation",
        "figures or a list laid out as a table",
    ),
    threshold=0.7,
    fallback="default",
    default="none",
    rules=(
        Rule("show-diff", r"\b(show|see|view|review) (me )?(the |what |your )?(diff|changes|changed)\b", "diff"),
        Rule(
            "show-file",
            r"\b(show|open|preview|display|view) (me )?(the )?(file )?[\w-]+\.(md|txt|py|json|toml|"
            r"csv|pdf|png|jpg|html)\b",
            "file_preview",
        ),
        Rule(
            "learned-taste",
            r"\bwhat (have|did) you learn(ed|t)? about me\b|\bmy (taste|preferences) "
            r"(panel|list)\b",
            "taste",
        ),
        Rule("as-table", r"\b(as|in|into) a table\b|\btabulate\b", "table"),
        Rule("session-tree", r"\b(session tree|branches of (this|our) (chat|conversation))\b", "session_tree"),
    ),
    cues={
        "none": ("?", "what is", "how", "why", "tell me", "thanks", "call", "remind"),
        "diff": ("changes", "changed", "diff", "edited", "what did you change", "before and after"),
        "file_preview": ("file", "open", "preview", "document", "contents", "read me"),
        "taste": ("learned", "about me", "preferences", "taste", "know about me", "my style"),
        "session_tree": ("branch", "fork", "history", "earlier version", "go back to", "conversation"),
        "table": ("table", "compare", "list", "columns", "spreadsheet", "side by side", "figures"),
    },
    examples=(
        ("Let me see your edits to the speech.", "diff"),
        ("Open shopping.txt.", "file_preview"),
        ("What's the capital of Chile?", "none"),
        ("What do you know about my tastes in music?", "taste"),
        ("Compare the gym memberships on price and hours.", "table"),
        ("Return to the branch where we chose the red sofa.", "session_tree"),
    ),
)


TOOLSET = toolset_question()
USES = {"signal": SIGNAL, "toolset": TOOLSET, "panel": PANEL}


async def signal(decider: Decider, text: str, *, draft: str | None = None) -> Decision:
    """Is the person's message ``text`` a correction, a rule, or neither? (for the learning loop)

    ``draft`` is the assistant's text it answers, when known (a model that reads drafts sees it).
    ``applied`` is ``None`` when unsure, with ``escalate == "main"``: queue it
    for the reviewer's larger model instead of guessing.
    """
    return await decider.decide(SIGNAL, text, draft=draft)


async def toolset(decider: Decider, text: str, toolsets: Iterable[str] = TOOLSETS[1:]) -> Decision:
    """Which of ``toolsets`` does a turn starting with ``text`` need? ``applied`` ``None``: offer all."""
    names = tuple(toolsets)
    return await decider.decide(TOOLSET if names == TOOLSETS[1:] else toolset_question(names), text)


async def panel(decider: Decider, text: str) -> Decision:
    """Should a panel open for ``text``, and which? ``applied`` is ``none`` when no panel should."""
    return await decider.decide(PANEL, text)


def chosen_toolsets(decision: Decision, available: Sequence[str]) -> frozenset[str] | None:
    """The toolsets to offer after a toolset decision; ``None`` offers everything."""
    if decision.applied is None:
        return None
    return frozenset() if decision.applied == "none" else frozenset({decision.applied}) & set(available)
