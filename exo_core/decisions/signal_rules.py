"""The signal question's rules in code and cue words (docs/decisions.md §7).

Written from how people phrase each kind of message, not from the labelled set's sentences
(the set's older part was read to check them, its newer part was not; the held-out files were read only once
they had been scored and became fit data: the first two for the changes after commit 4d12265, the third for
those after fa13973, the fourth for those after 886a31c):

* a **correction** says the assistant's last answer or action was wrong: it names what the assistant did
  ("you forgot ...", "you booked ..."), what the person said
  ("I said ...", "I asked for ..."), or judges the result ("that's not what I asked", "too long"). A message
  that opens with "no," or "wrong" is left to a model (the retired rules below: such openings also answer
  questions and decline);
* a **rule** is a standing instruction: a scope in time ("from now on", "next time", "whenever you
  ...") or over a class of things ("any e-mail about ...", "always use ..."), or "stop doing ...";
* **neither**: questions, thanks and greetings, one-off requests, the person taking back their own message
  ("wrong chat, sorry").

A rule settles a case only when no rule of another option fires too (``decider.py``), so each
stays precise and a model decides the rest. The patterns have no nested quantifiers: they run on
whatever the person typed (``tests/decisions/test_signal_input.py`` feeds them 100 KB).
"""

from __future__ import annotations

import json
from pathlib import Path

from exo_core.seams.decision import Rule

__all__ = ["SIGNAL_RULES", "SIGNAL_CUES", "SIGNAL_RULE_CONFIDENCE"]

# The probability a settlement by these rules gives its option (``Question.rule_confidence``), instead of 1:
# how often the rules were right on messages they were not written from, each message judged by the newest
# version of the rules written without it. Measured by benchmarks/bench_decisions_rule_history.py, which writes
# the data file (its header says how to regenerate it; docs/benchmarks.md, "The rules' confidence"). One
# number for all the rules: per rule there are too few settlements (docs/decisions.md §2).
RULE_CONFIDENCE_FILE = Path(__file__).resolve().parent / "data" / "signal_rule_confidence.json"
_MEASURED = json.loads(RULE_CONFIDENCE_FILE.read_text(encoding="utf-8"))
SIGNAL_RULE_CONFIDENCE = _MEASURED["right"] / _MEASURED["settled"]

_NOT_A_QUESTION = r"(?![^?]*\?\s*$)"
# "Can you put the cc's back? You dropped Ana.": a sentence after a question is a sentence too.
_SENTENCE = r"(?:^|[.;!?]\s+|,\s*(?:and|but|so)?\s*)"
_ASSISTANT_DID = (
    r"forgot|missed|left (?:out|off)|used|wrote|put|got|gave|booked|sent|replied|added|mixed up|confused|"
    r"misspell?ed|misspelt|misunderstood|misread|spelled|spelt|called|picked|chose|scheduled|deleted|removed|"
    r"changed|ignored|skipped|dropped|swapped|translated|set|invited|copied|cc'?d|attached|made|said|typed|"
    r"listed|ordered|added|addressed|blocked|rounded|counted|assumed|repeated|duplicated|doubled|converted|"
    r"calculated|formatted|overwrote|"
    # "You didn't attach anything.": what it left undone ("you didn't have to" is thanks, so no "have").
    r"(?:didn'?t|did not|haven'?t|have not) (?:attach|include|add|send|book|mention|change|fix|update|use|put|cc|"
    r"copy|answer|list|remove|delete|save|translate|invite|count|check|sign|spell|follow|read)"
)
_STANDING_VERBS = (
    r"use|put|send|write|ask|include|add|book|schedule|copy|cc|sign|call|reply|address|mention|share|suggest|"
    r"check|keep|give|start|end|open|round|spell|format|double-check|remind|tell|let|make|leave|list|sort|save|"
    r"file|answer|respond|translate|show|read|order|pick|choose|go|be|say|refer|greet"
)
# A rule settles only while the upper end of the 95 % Wilson interval of its precision on messages its version
# never saw (the rule history's ``by_rule_newest_without``) is at least the rules' pooled confidence; a rule below
# it is wrong more often than every settlement says, and its messages go to the models instead. one-off-request
# is kept below it: it settles the plain requests that make up most of what a person types, which would otherwise
# each be escalated, and asked about on a board with no model (docs/studies/signal-decisions.md, ninth pass).
SIGNAL_RULES = (
    Rule(
        "says-wrong",
        # "Not saying it's wrong", "doesn't mean that's wrong", "I'm not sure it's wrong": the judgement is denied.
        r"^(?![\s\S]*(?:\bnot|n'?t|\bnever) (?:saying|say|sure|think|mean|means|suggesting|claiming|implying)"
        r"(?: that)? (?:that'?s|that is|this is|it'?s|it is|you'?re|you are|these are|those are|this was|that was) "
        r"(?:wrong|incorrect|mistaken)\b)[\s\S]*?"
        r"(?:\b(?:that'?s|that is|this is|it'?s|it is|you'?re|you are|these are|those are|this was|that was)\s+"
        r"(?:wrong|incorrect|mistaken|not (?:right|correct|it|true|what i (?:asked|meant|wanted|said|need)))\b|"
        r"\b(?:that|this|it|these|those) (?:isn'?t|wasn'?t|aren'?t|weren'?t) (?:right|correct|true|"
        r"what i (?:asked|meant|wanted|said|need))\b)",
        "correction",
    ),
    Rule(
        "i-said",
        # "Exactly what I wanted", "just the tone I meant": praise, not what the draft missed.
        r"^(?![\s\S]*\b(?:exactly|just|precisely) (?:what|how|the \w+) i (?:wanted|meant|asked for|needed)\b)"
        r"[\s\S]*?\bi (?:said|asked(?: you)?(?: for)?|told you|meant|wanted|specified|didn'?t (?:say|ask|want|mean)|"
        r"did not (?:say|ask|want|mean)|never (?:said|asked))\b" + _NOT_A_QUESTION,
        "correction",
    ),
    Rule(
        "you-did",
        _SENTENCE + r"(?:but |and |sorry,? )?you(?:'ve| have)? (?:" + _ASSISTANT_DID + r")\b" + _NOT_A_QUESTION,
        "correction",
    ),
    Rule(
        "the-thing-you-did",
        r"\b(?:the|that|this) \w+ you (?:used|wrote|put|gave|picked|sent|booked|added|chose|suggested|found|got|"
        r"made|typed|listed|attached)\b(?! (?:yesterday|earlier|last week)\b)" + _NOT_A_QUESTION,
        "correction",
    ),
    Rule(
        "too-much",
        r"^\s*(?:(?:no|hmm+|ugh),?\s*)?(?:(?:way |much |far |a bit |slightly )?too (?:long|short|formal|casual|"
        r"wordy|much|many|few|stiff|vague|blunt|cold|informal|late|early|expensive|cheesy|pushy|polite|chatty|"
        r"salesy|flowery|harsh|technical|complicated|generic|repetitive|robotic|dry|negative|aggressive|"
        r"long-winded)|"
        r"(?:make it |a bit |bit )?(?:shorter|longer|simpler|briefer|warmer|friendlier)|try again|redo (?:it|that)|"
        r"do (?:it|that) again|"
        # "Less formal, it's my brother.": a comparative with nothing before it is about the draft just shown.
        r"(?:a bit |a little |much |way |far )?(?:less|more) (?:formal|casual|polite|direct|concise|friendly|"
        r"technical|detailed|personal|professional)|"
        # "Tone it down.", "Cut it down to three lines.": an edit of the draft itself.
        r"(?:please\s+)?(?:cut|trim|shorten|tone|simplify|soften|tighten|reword|rephrase|rewrite|redo) "
        r"(?:it|that)(?: down| up)?)\b" + _NOT_A_QUESTION,
        "correction",
    ),
    Rule(
        "make-it-er",
        # "Keep it shorter.", "Make the second bullet warmer": a comparative is relative to the draft just shown,
        # and so is a part of it named in a few words ("my ..." would be a class of things: "keep my notes shorter").
        _SENTENCE + r"(?:please\s+)?(?:make|keep|get) (?:it|this|that|them|(?:the|this|that|these|those) "
        r"(?:\w+ ){0,2}\w+) (?:a (?:bit|little|lot) |much |way |even |far )?(?:shorter|longer|simpler|briefer|"
        r"warmer|friendlier|clearer|tighter|punchier|softer|firmer|calmer|plainer|less \w+|"
        r"more (?:formal|casual|polite|direct|concise|specific|detailed)|"
        # "Keep it under 100 words.": a length for the draft just shown.
        r"(?:down )?(?:to|under|below|within) (?:\d+|one|two|three|four|five|six|ten) (?:words|lines|sentences|"
        r"characters|chars|paragraphs|bullets|bullet points|pages))\b" + _NOT_A_QUESTION,
        "correction",
    ),
    Rule(
        "is-x-not-y",
        # "Her surname is Costa, not Correia.", "It should be 'Dear Dr. Lopes', not 'Hi Lopes'": a fact set right.
        # A full stop inside it belongs to a title ("Dr.") or a number ("84.50"), not the end of a sentence.
        r"\b(?:is|was|are|were|should be|ends in|ends with|starts with|it'?s|that'?s)\s"
        r"(?:[^,.!?;]|\.(?=\d)|(?<=\b(?:dr|mr|ms|st|jr|sr))\.|(?<=\bmrs)\.){1,60},\s*not\s"
        r"(?!only\b|just\b|too\b|before\b|after\b|later\b|earlier\b)" + _NOT_A_QUESTION,
        "correction",
    ),
    Rule(
        "is-x-not-y-elsewhere",
        # "C'est le 12, pas le 21.", "Era para amanhã, não para hoje.": the same in the neighbouring languages,
        # after their verb "to be" ("pas de problème", "não precisa" decline, so they are left out).
        r"(?:\b(?:é|era|foi|são|eram|est|était|ist|war|sind|è|sono|es|fue|son)|c'est)\s[^,.!?;]{1,60},\s*"
        r"(?:pas|não|nicht|non|no)\s(?!(?:de problème|problema|problem|besoin|precisa|nötig|necesario|hace falta|"
        r"obrigad|gracias|merci|danke|grazie)\b)" + _NOT_A_QUESTION,
        "correction",
    ),
    Rule(
        "did-i-not-say",
        # "Didn't I ask for the afternoon?", "Shouldn't that be 'its'?": a question pointing back at what was said.
        r"^\s*(?:didn'?t (?:i|we) (?:say|ask|tell|mention|agree|decide|want|specify|pick|choose)|"
        r"shouldn'?t (?:it|that|this|these|those|there) (?:be|say|read)|wasn'?t (?:it|that|this) (?:supposed|meant))\b",
        "correction",
    ),
    Rule(
        "sounds-like",
        # "Sounds like a robot wrote it.", "Doesn't sound like me at all.": how the draft reads.
        r"\b(?:sounds|reads) like (?:a|an|some) (?:\w+ ){0,2}(?:wrote|typed|drafted|made) (?:it|this|that)\b|"
        r"\b(?:doesn'?t|does not|don'?t) (?:sound|read) like (?:me|i (?:talk|write|speak))\b|"
        r"\b(?:sounds|reads) nothing like\b",
        "correction",
    ),
    Rule(
        "than-that",
        # "Gentler than that.", "Much less formal than this.": a comparative measured against the draft.
        r"^\s*(?:(?:much|a bit|a little|way|even|far) )?(?:\w+er|more \w+|less \w+) than (?:that|this)\b"
        + _NOT_A_QUESTION,
        "correction",
    ),
    Rule(
        "redo-it-please",
        # "Can you make it shorter?", "Could you redo it as a list?": a request about the draft ("it", "that"; "this"
        # may be the person's own text).
        r"^\s*(?:(?:can|could|would|will) (?:you|u)|pls|please) (?:please |pls )?(?:(?:redo|rewrite|reword|"
        r"rephrase|shorten|simplify|soften|tighten) (?:it|that)|tone (?:it|that) down|(?:make|say|write) (?:it|that) "
        r"(?:a (?:bit|little|lot) |much |way |even )?(?:shorter|longer|simpler|briefer|warmer|friendlier|clearer|"
        r"tighter|punchier|softer|firmer|calmer|plainer|more \w+|less \w+))\b",
        "correction",
    ),
    Rule(
        "when-you-do",
        # "Use 24-hour time when you tell me the time.": a condition on what the assistant does, any time.
        r"\b(?:when|whenever|if) you (?:tell|write|send|reply|book|schedule|give|suggest|make|draft|answer|"
        r"list|show|read|mention|summari[sz]e|plan|quote|translate|email|text|message)\b" + _NOT_A_QUESTION,
        "rule",
    ),
    Rule(
        "in-any-message",
        r"\b(?:in|for|on|to) (?:any|every|all|each)(?: of)?(?: my| the| future)? (?:message|e-?mail|mail|letter|"
        r"note|reply|replies|text|document|invite|invitation|meeting|event|list|report|draft|answer|summary|"
        r"summaries|booking|calendar entr(?:y|ies)|contract|invoice)s?\b",
        "rule",
    ),
    Rule(
        "for-anything",
        # "For anything school-related, cc Rafael.", "aisle on anything under three hours": a class of things.
        r"\b(?:for|on|in|to) anything\b(?! else\b)" + _NOT_A_QUESTION,
        "rule",
    ),
    Rule(
        "every-thing-you",
        r"\b(?:every|each|any|all(?: the)?) \w+s? (?:you|i) (?:send|write|draft|book|make|schedule|add|save|"
        r"create|file|get|receive|forward)\b" + _NOT_A_QUESTION,
        "rule",
    ),
    Rule(
        "i-prefer",
        # "I'd rather you kept it shorter" points back at the draft: a correction, left to a model.
        r"^(?!.*\b(?:it|that|this|shorter|longer|instead)\b)\s*i(?: really)?"
        r"(?: prefer|'d prefer| would prefer|'d rather| would rather| like my| hate it when|"
        r" don'?t like it when| can'?t stand it when| want all| want my \w+s)\b" + _NOT_A_QUESTION,
        "rule",
    ),
    Rule(
        "dont-do-kind",
        # "Don't suggest restaurants that need a car", "..., so don't book calls before noon": a class of things.
        _SENTENCE + r"(?:so\s+)?(?:please\s+)?(?:don'?t|do not) (?:" + _STANDING_VERBS + r"|suggest|recommend|"
        r"book|schedule|accept) (?:me )?(?:any )?(?:\w+ )?\w+s (?:that|which|who|before|after|on|at|during|"
        r"unless|without|with|from|longer|shorter|more|over|under)\b" + _NOT_A_QUESTION,
        "rule",
    ),
    Rule(
        "keep-my-things",
        r"^\s*(?:please\s+)?keep (?:my \w+(?: \w+)?s|all (?:my )?\w+|a copy of (?:every|each|all|any))\b",
        "rule",
    ),
    Rule(
        "from-now-on",
        r"\b(?:from now on|from here on|going forward|henceforth|in (?:the )?future\b|from today on|"
        r"starting (?:now|today),|for future reference|as a (?:general |standing )?(?:rule|thing|habit)|by default|"
        r"make (?:it|that|this) a (?:rule|habit|standing \w+)|make (?:it )?a habit|"
        r"unless i (?:say|tell you|ask) otherwise|every time (?:you|i|we|there|someone|anyone|it)|"
        r"each time (?:you|i|we)|whenever (?:you|i|we|someone|anyone|there|it)|"
        # "Next time, ask first" ("next time," never matched: a \b cannot follow the comma); "see you next time" is
        # a goodbye.
        r"(?<!see you )(?<!until )(?<!till )(?<!\btil )next time(?=\s*[,:;]| you\b)|"
        # "next time just send the link", "next time don't ask": an instruction after it; a question ("what do I do
        # next time?") is not one.
        r"(?<!see you )next time,? (?:(?:just|please|pls|plz|only|try to) \w+|(?:don'?t|dont|do not|never|always|"
        r"skip|ask|" + _STANDING_VERBS + r")\b)(?![^?]*\?\s*$)|"
        r"any ?time (?:you|i|we|someone|anyone))\b",
        "rule",
    ),
    Rule(
        "from-now-on-elsewhere",
        # The same scopes in the languages people around here also write in (German, French, Spanish, Portuguese,
        # Italian): "ab jetzt", "à partir de maintenant", "de ahora en adelante", "sempre que", "d'ora in poi".
        r"\b(?:ab jetzt|von jetzt an|ab sofort|ab heute|künftig|zukünftig|in zukunft|jedes mal,? wenn|immer wenn|"
        r"à partir de (?:maintenant|aujourd'hui|demain)|dorénavant|désormais|à l'avenir|chaque fois que|"
        r"de ahora en adelante|a partir de (?:ahora|hoy|agora|hoje)|de aquí en adelante|siempre que|cada vez que|"
        r"daqui (?:para a frente|em diante|pra frente)|de agora em diante|sempre que|d'ora in poi|da ora in poi|"
        r"ogni volta che)\b" + _NOT_A_QUESTION,
        "rule",
    ),
    Rule(
        "not-anymore",
        # "I don't want reminders about the gym anymore.", "Don't round numbers, ever.": a standing refusal; "I don't
        # want it anymore" is about one thing, left open.
        _SENTENCE + r"(?:please\s+)?(?:i (?:don'?t|do not) want|(?:don'?t|do not) \w+)"
        r"(?! (?:it|that|this|them|the|those|these|one)\b)[^.?!]{0,80}(?:\b(?:anymore|any more|ever again)|,\s*ever)\b"
        + _NOT_A_QUESTION,
        "rule",
    ),
    Rule(
        "no-x-ever",
        # "Texts to mum: no emojis ever.", "No jazz in my playlists, ever.": a standing refusal; "no one ever
        # replies" and "no reply ever came" are remarks (the "ever" must end the clause).
        r"(?:^|[=:;,.!]\s*)no (?!one\b|body\b|idea\b|way\b|wonder\b|doubt\b)\w+[^.?!=]{0,60}?(?:\s|,\s*)ever\b"
        r"(?=\s*(?:[.!,;]|$))" + _NOT_A_QUESTION,
        "rule",
    ),
    Rule(
        "imperative-always",
        # "Never thought of that", "Always a pleasure", "Never really understood it": remarks about the person's
        # own experience, not instructions (an adverb may come between).
        _SENTENCE + r"(?:please\s+)?(?:always|never|don'?t ever|do not ever|never ever)\b"
        r"(?! (?:really |quite |fully |once |even )?(?:mind|thought|knew|heard|seen|been|reali[sz]ed|noticed|"
        r"understood|got|liked|used|had|tried|learn(?:ed|t)|(?:an? )?(?:pleasure|joy|treat)|happy|glad|good|nice|"
        r"great|fun)\b)" + _NOT_A_QUESTION,
        "rule",
    ),
    Rule(
        "always-does",
        r"\b(?:always|never)\s+(?:" + _STANDING_VERBS + r")\b" + _NOT_A_QUESTION,
        "rule",
    ),
    Rule(
        "stop-doing",
        r"^\s*(?:please\s+)?(?:(?:can|could|would|will) you (?:please )?)?(?:stop|quit) "
        r"(?:adding|using|putting|sending|calling|writing|suggesting|booking|"
        r"including|cc'?ing|copying|signing|asking|saying|starting|ending|making|giving|scheduling|mentioning|"
        r"apologi[sz]ing|being|replying|adding|recommending|offering|opening|closing)\b",
        "rule",
    ),
    Rule(
        "keep-in-mind",
        r"^\s*(?:please\s+)?(?:remember|keep in mind|bear in mind|note|take note|for the record)(?: that|,|:)",
        "rule",
    ),
    Rule(
        "whenever-you",
        r"^\s*(?:when|if|once)\s+(?:you|i)\s+(?:ever\s+)?(?:write|draft|send|reply|book|schedule|summari[sz]e|"
        r"plan|suggest|answer|make|create|add|set|email|message|text|order|buy|pick|choose|translate|share|"
        r"prepare|list|sort|save|file|forward|respond|recommend|get (?:an?|any))\b" + _NOT_A_QUESTION,
        "rule",
    ),
    Rule(
        "any-kind",
        r"^\s*(?:any|all|every|each)(?:thing| \w+| \w+ \w+) (?:about|from|for|to|with|related|involving|that|"
        r"should|must|goes|go|gets|get|needs?|has to|have to|in)\b" + _NOT_A_QUESTION,
        "rule",
    ),
    Rule(
        "plain-question",
        # "Why is there a retry loop here?" questions what the draft did as often as it asks about the world, so
        # "why" is left to a model.
        r"^\s*(?:what|when|where|who|how|which|is|are|can|could|would|will|do|does|should|may|have|has)\b"
        # "Where are the eggs I mentioned?" points back at what the person said, "Can you add the logo back?" at
        # what the draft lost: corrections, left to a model.
        r"(?!.*\b(?:always|never|from now on|in future|anymore|any more|stop|wrong|instead|not what|"
        # "Where's the part about the deposit?" asks what the draft lost.
        r"i (?:mentioned|said|asked for|told you|wanted|meant)|the (?:part|bit|section|line) (?:about|on)|"
        r"redo|rewrite|reword|rephrase|shorten|simplify|"
        r"tone \w+ down|shorter|longer|simpler|(?:put|add|bring)\b[^.?!]*\bback|"
        r"(?:make|say|write) (?:it|that) (?:a bit |a little |much |way )?(?:more|less|\w+er))\b)[^.!]*\?\s*$",
        "neither",
    ),
    Rule(
        "question-at-the-end",
        # "I always forget, what's the wifi password?": a question after a lead-in is still a question.
        r"^(?!.{0,400}\b(?:from now on|in future|anymore|any more|wrong|instead|not what)\b)"
        r"[^?]{0,200}[,;:]\s*(?:what|when|where|who|how|which)\b[^.!?]{0,200}\?\s*$",
        "neither",
    ),
    Rule(
        "one-off-request",
        # "Book a table for two at 8 tonight.", "Tell me a joke.": a request about one specific thing, with
        # nothing that scopes it over time or points back at the draft (those words keep it open): a comparative
        # ("make the intro more ...") is relative to the draft, and "put/add ... back" restores what it lost.
        r"^(?!\s*(?:please\s+)?(?:can you\s+|could you\s+)?(?:put|add|bring)\b[^.?!]*\bback\b)"
        r"\s*(?:please\s+)?(?:can you\s+|could you\s+)?(?:play|add|translate|send|help|summari[sz]e|look up|"
        r"find|search|tell|convert|write|draft|read|book|order|remind|show|check|create|plan|call|set|cancel|buy|"
        r"get|open|give|compose|prepare|calculate|turn|start|put|make)\b"
        r"(?: (?:me|us|up|on|off|out))? (?:a|an|the|some|more|something|\d+|\"|milk|\w+ and \w+ to the)\b"
        r"(?!.*\b(?:always|never|every|each|any|all|whenever|when you|if you|from now|in future|future|"
        r"default|instead|not|\w+n'?t|wrong|again|rather|should|make sure|unless|prefer|other|still|"
        r"shorter|longer|simpler|more|less|fewer|too|actually|meant|said|asked|keep|habit|rule|routine|standard)\b)",
        "neither",
    ),
    Rule(
        "thanks-then-question",
        # "Thanks. What's the weather tomorrow?", "Looks good. Can you also book a taxi?": an acknowledgement, then a
        # new question; words that point back at the draft keep it open, as in plain-question.
        r"^\s*(?:(?:thanks|thank you|thx|ok|okay|great|nice(?: one)?|cool|got it|looks (?:good|great|fine)|perfect|"
        r"lovely|awesome|alright|interesting|good (?:morning|afternoon|evening)|hi|hello|hey|lol|haha)[\s,.!]+){1,2}"
        r"(?:(?:also|and|btw|now|so)[\s,]+)?(?:what|when|where|who|how|which|is|are|can|could|will|would|do|does)\b"
        r"(?![^?]*\b(?:always|never|from now on|in future|anymore|any more|stop|wrong|instead|not what|redo|rewrite|"
        r"reword|rephrase|shorten|simplify|shorter|longer|simpler|did you|you forgot|i (?:mentioned|said|asked for|"
        r"told you|wanted|meant))\b)[^.!?]{0,200}\?\s*$",
        "neither",
    ),
    Rule(
        "no-thanks",
        # "No, that's all for today.", "Nope, nothing to add.": declining more, not a correction; a "but",
        # "instead" or "as it was" after it keeps it open.
        r"^\s*(?:(?:no+|nope|nah)[\s,.!]+){1,2}(?:thanks|thank you|thx|that'?s (?:all|fine|it|everything)|"
        r"i'?m (?:good|fine|ok|okay|all set)|nothing(?: else| more| to (?:add|change))?|not (?:yet|now|today|"
        r"for now|right now)|all good|leave it(?: as it is)?|we'?re (?:good|done|fine)|it'?s (?:fine|ok|okay|great|"
        r"good|perfect))\b(?![^\n]*\b(?:but|though|however|instead|actually|meant|wrong|should|again|not what|"
        r"as it was|before|original|back|always|never|next time|from now on|stop|anymore|any more|every|each|"
        r"don'?t)\b)",
        "neither",
    ),
    Rule(
        "send-it",
        # "Send it.", "Great, post it now.": the draft is approved as it is.
        r"^\s*(?:(?:ok(?:ay)?|great|good|perfect|looks (?:good|great|fine)|lovely|nice|cool|yes|yep|sure|fine|"
        r"all good)[\s,.!]+)*(?:please\s+)?(?:send|post|publish|ship|submit) (?:it|that)"
        r"(?: (?:now|off|out|as is|then|please|to (?:him|her|them|\w+)))*[\s.!]*$",
        "neither",
    ),
    Rule(
        "get-back-later",
        # "Hold on, let me check with Ana first.", "I'll think about it and get back to you.": not yet an answer.
        r"^\s*(?:(?:hold on|wait|hang on|hm+|ok(?:ay)?)[\s,.!]+)?(?:let me (?:think|check|sleep on|read|look)|"
        r"i'?ll (?:think about it|get back to you|come back to (?:this|it))|i need to check)\b"
        r"(?![^\n]*\b(?:but|instead|wrong|should|not what|always|never|next time|from now on|you (?:forgot|missed|"
        r"used|put|got|wrote))\b)",
        "neither",
    ),
    Rule(
        "own-slip",
        # "Oops, wrong tab.", "Ignore me, found it.": the person takes back their own message. Whatever goes on to
        # say what is right ("..., I meant Friday", "..., it's the 5th") or names the assistant keeps it open.
        r"^\s*(?:(?:oops|sorry|argh|ugh|ah|oh(?: no)?|wait|sry)[\s,.!]+)*(?:wrong (?:chat|thread|window|tab|button|"
        r"conversation|channel|group(?: chat)?|app|screen|key)|ignore (?:that|this|me|my (?:last|previous)"
        r"(?: message| one)?)|disregard (?:that|this|me|my (?:last|previous)(?: message| one)?)|nvm|my bad)\b"
        r"(?![^\n]*\b(?:you|your|meant|instead|should|actually|not|\w+n'?t|but|please|pls|use|make|change|send|put|"
        r"add|it'?s|is|was|are|were|i said|i asked)\b)[^\n\d]{0,80}$",
        "neither",
    ),
    Rule(
        "thanks-or-greeting",
        # A short acknowledgement, in English or a neighbouring language; "but", "too", "next time" and the like
        # qualify it ("OK, but shorter"), so they keep it open.
        r"^\s*(?:thanks|thank you|thx|cheers|great|perfect|awesome|nice|cool|lovely|brilliant|ok|okay|sounds good|"
        r"good (?:morning|night|evening|afternoon)|hi|hello|hey|bye|goodbye|see you|never ?mind|no worries|"
        r"no thanks|got it|all good|looks good|that'?s (?:great|perfect|fine|all|lovely|good)|yes|yep|yeah|yup|sure|"
        r"fine|haha+|wow|love it|go ahead|will do|noted|sounds great|obrigad[oa]|merci|danke|gracias|grazie|"
        r"perfeito|parfait|perfecto|d'accord|sim|oui|s[ií]|ja|claro|genau|super)\b"
        r"(?![\w ,'!.]*\b(?:but|though|however|except|instead|not|\w+n'?t|too|shorter|longer|next time|always|never|"
        r"again|actually|mas|aber|mais|pero)\b)[\w ,'!.]{0,40}$",
        "neither",
    ),
)

# For the rules-only provider (a board with no model): words that lean one way without settling it.
SIGNAL_CUES = {
    "correction": (
        " not ",
        "n't",
        "meant",
        "actually",
        "instead",
        "should be",
        "mistake",
        "wrong",
        "rather",
        "typo",
        "fix",
        "you ",
        "again",
        "still",
        "the other",
        "supposed to",
    ),
    "rule": (
        "always",
        "never",
        "every",
        "whenever",
        "prefer",
        "remember",
        "by default",
        "don't",
        "do not",
        "stop",
        "make sure",
        "keep",
        "any ",
        "all ",
        "when you",
        "unless",
        "i like",
        "i want",
        "i hate",
        "my ",
    ),
    "neither": (
        "?",
        "thanks",
        "thank you",
        "can you",
        "please",
        "what",
        "how",
        "hello",
        "great",
        "today",
        "tonight",
        "tomorrow",
        "this ",
        "a ",
    ),
}
