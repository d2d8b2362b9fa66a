"""The signal rules on ordinary wording (issue 21 item 1; issue 22's chat corrections).

These sentences were written for this test from how people phrase corrections and standing rules;
none is from the labelled set or the held-out messages. A rule settles a message only when every
rule that fires agrees (``Decider._by_rule``), so a message that mixes kinds stays open for a model.
"""

from __future__ import annotations

import asyncio

import pytest

from exo_core.decisions import Decider
from exo_core.decisions.uses import SIGNAL


def _settled(text: str) -> str | None:
    decision = asyncio.run(Decider([]).decide(SIGNAL, text, record=False))
    if decision.via != "rule":
        return None
    return decision.chosen


@pytest.mark.parametrize(
    ("text", "label"),
    [
        # issue 22: typed in chat after drafts, they must teach without any model
        ("Too long. Make it shorter, and no exclamation marks.", "correction"),
        ("No exclamation marks. Keep it shorter.", "correction"),
        ("From now on, never use exclamation marks", "rule"),
        ("Make that a bit warmer.", "correction"),
        ("The date is the 14th, not the 15th.", "correction"),
        ("Use metric units when you give me distances.", "rule"),
        ("Put a disclaimer in every report you send.", "rule"),
        ("Sign off with 'Best' in any email to clients.", "rule"),
        ("I'd rather have bullet points than paragraphs.", "rule"),
        ("Don't schedule meetings before 10.", "rule"),
        ("Keep my notes sorted by date.", "rule"),
        ("By the way, when does the train leave?", "neither"),
        ("Tell me a story about a dragon.", "neither"),
        ("Send the slides to Ana.", "neither"),
        # session 9: general wording the rules missed (written for this test, not from any data set)
        ("That isn't what I asked for.", "correction"),
        ("Too technical for the newsletter.", "correction"),
        ("More casual please, it's for friends.", "correction"),
        ("Tone it down a bit.", "correction"),
        ("Could you stop using so many adjectives?", "rule"),
        ("Make it a habit to add the link.", "rule"),
        ("Let's keep that as a standing rule.", "rule"),
        ("Don't cc Pedro on anything anymore.", "rule"),
        ("Ab sofort bitte alles auf Deutsch.", "rule"),
        ("Désormais, écris-moi en français.", "rule"),
        ("Yep, looks right.", "neither"),
        ("Merci beaucoup !", "neither"),
        ("Never heard of it, what is it?", "neither"),
        # session 12: a part of the draft named in a few words, a sentence after a question, the person's own slip
        ("Make the opening paragraph less stiff.", "correction"),
        ("Keep the second bullet point more concise.", "correction"),
        ("Did you get my note? You left out the budget line.", "correction"),
        ("Oops, wrong tab.", "neither"),
        ("ignore me, figured it out", "neither"),
        ("sorry wrong window lol", "neither"),
        ("nvm, found it", "neither"),
        ("The fee should be 12.75, not 1275.", "correction"),
        ("The letter is for Mrs. Duarte, not her son.", "correction"),
        ("C'était vendredi, pas samedi.", "correction"),
        ("Era o Rui, não o Tiago.", "correction"),
        ("Didn't I say no onions?", "correction"),
        ("Shouldn't it be 'fewer'?", "correction"),
        ("Sounds like a textbook wrote it.", "correction"),
        ("That doesn't sound like me.", "correction"),
        ("Warmer than that, she's my aunt.", "correction"),
        ("Could you make it a bit friendlier?", "correction"),
        ("Can you rephrase that?", "correction"),
        ("You rounded the prices, keep the cents.", "correction"),
        ("You didn't include the address.", "correction"),
        ("Get it down to two sentences.", "correction"),
        ("Cool. Where's the nearest pharmacy?", "neither"),
        ("Thanks! And when does the market close?", "neither"),
        ("Nope, that's it for now.", "neither"),
        ("No thanks, I'm all set.", "neither"),
        ("Perfect, send it.", "neither"),
        ("Ship it now!", "neither"),
        ("Hang on, let me look at my calendar.", "neither"),
        ("I'll get back to you on that.", "neither"),
        ("On anything medical, check with my doctor's office first.", "rule"),
        ("Use the blue header for anything that goes to the board.", "rule"),
        ("Next time, ask before you book.", "rule"),
        ("Put the summary first next time, not last.", "rule"),
        # session 12, ninth pass: "next time" before an instruction, a refusal "no ... ever"; a denied judgement and the
        # person's own typo no longer settle a correction
        ("fine. next time just send me the pdf, no summary", "rule"),
        ("Next time don't cc the whole team.", "rule"),
        ("Next time please add the tracking number.", "rule"),
        ("Invoices to the landlord: no abbreviations ever.", "rule"),
        ("No phone calls on Sundays, ever.", "rule"),
        ("That's wrong, the flight is at 9.", "correction"),
    ],
)
def test_ordinary_wording_is_settled_by_the_rules(text: str, label: str) -> None:
    assert _settled(text) == label


@pytest.mark.parametrize(
    "text",
    [
        "Tell me the joke again, but shorter.",  # points back at the draft: not a fresh one-off request
        "Write a summary, and always put the date first.",  # a request carrying a rule
        "Book the other table, not this one.",
        "The slides are fine, not too long.",  # not a fact set right
        "Make the poster more colourful.",  # a comparative is relative to the draft
        "Could you add the old intro back in?",  # restores what the draft lost
        "Put the signature back, please.",
    ],
)
def test_a_request_that_points_back_or_carries_a_rule_is_not_called_one_off(text: str) -> None:
    assert _settled(text) != "neither"


@pytest.mark.parametrize(
    ("text", "never"),
    [
        ("No, I'm fine, thanks.", "correction"),  # declining more is not a correction
        ("Nope, nothing for now.", "correction"),
        ("Nah, not yet.", "correction"),
        ("Always happy to help you.", "rule"),  # a remark, not an instruction
        ("Never thought about it that way.", "rule"),
        ("Exactly the layout I wanted, thanks.", "correction"),  # praise, not what the draft missed
        ("Yes, but make it shorter.", "neither"),  # an acknowledgement qualified by "but" is not settled neither
        ("Sim, mas mais curto.", "neither"),
        ("I don't want it anymore, cancel the order.", "rule"),  # about one thing, not a standing refusal
        ("Rewrite this paragraph for me: the cat sat.", "correction"),  # "this" may be the person's own text
        ("Wrong chat, sorry!", "correction"),  # the person's own slip, not the assistant's
        ("No wait, wrong thread.", "correction"),
        ("Nope, my bad, ignore that.", "correction"),
        ("Make my e-mails shorter.", "correction"),  # "my e-mails" is a class of things, maybe a standing rule
        ("Ignore that, I meant the Friday call.", "neither"),  # says what is right: not only taken back
        ("Oops, wrong tab, it's the 5th not the 6th.", "neither"),
        ("my bad, you should use the new address", "neither"),
        ("Oh no, that's awful news.", "correction"),  # dismay, not a "no" to the draft
        ("Non, pas de problème.", "correction"),  # declining in French
        ("You didn't have to do that, thank you!", "correction"),
        ("Can you tell me more about it?", "correction"),  # a question, not a request to redo the draft
        ("Keep it under 50 euros.", "correction"),  # a budget, not a length for the draft
        ("Didn't you say it might rain?", "correction"),  # asks about what the assistant said
        ("Can you rewrite this paragraph?", "correction"),  # "this" may be the person's own text
        ("Thanks. Can you make it shorter?", "neither"),  # points back at the draft
        ("OK. Did you forget the attachment?", "neither"),
        ("Nope, that's fine, but use the old logo.", "neither"),
        ("No, it's fine as it was before.", "neither"),  # back to the earlier version: a correction
        ("Send it to Marta instead.", "neither"),
        ("Hold on, let me check, that date looks wrong.", "neither"),
        ("See you next time, bye!", "rule"),
        ("Is there a discount on anything?", "rule"),  # a question
        ("Let me know if you need anything else.", "rule"),
        ("Where's the bit about the parking?", "neither"),  # asks what the draft lost
        # session 12, ninth pass
        ("Why is the deadline set to Friday?", "neither"),  # "why is ..." questions the draft as often as not
        ("why are there two greetings??", "neither"),
        ("I'm not saying that's wrong, but how did you get 40 hours?", "correction"),  # the judgement is denied
        ("It doesn't mean it's wrong, I just want to understand the total.", "correction"),
        ("I wouldn't say it's incorrect, only unusual.", "correction"),
        ("Sorry, I made a typo in my note to the landlord. Can you check the bus times?", "correction"),
        ("my typo, not yours, carry on", "correction"),
        ("Until next time, take care!", "rule"),  # a goodbye
        ("What should I pack next time?", "rule"),  # a question about next time
        ("next time can you ask before booking?", "neither"),  # a question: left to a model
        ("Nobody ever answers that phone.", "rule"),  # a remark
        ("No one ever replies to those e-mails, ever.", "rule"),
        ("No reply ever came from the council.", "rule"),
    ],
)
def test_look_alikes_are_not_settled_the_wrong_way(text: str, never: str) -> None:
    assert _settled(text) != never


@pytest.mark.parametrize(
    "text",
    [
        "Wrong restaurant, it was the Italian one.",
        "Hmm, no. The other venue.",
        "There's a typo in the heading.",
        "No, the plumber hasn't called back yet.",  # the kind of "no" the retired rule got wrong
        "Nope, never been there. Is it far?",
    ],
)
def test_the_retired_rules_leave_their_messages_to_a_model(text: str) -> None:
    # starts-with-no and wrong-thing were right on 4 of 14 and 7 of 10 messages their versions never saw
    # (docs/studies/signal-decisions.md, ninth pass): a model, or the person, decides these now.
    assert _settled(text) is None
    assert not {rule.name for rule in SIGNAL.rules} & {"starts-with-no", "wrong-thing"}


def test_a_remark_about_the_persons_own_experience_is_not_a_standing_rule() -> None:
    for text in ("Never really understood how mortgages work.", "Never once tried sushi, funny enough."):
        assert _settled(text) != "rule", text
    assert _settled("Never send me read receipts.") == "rule"
