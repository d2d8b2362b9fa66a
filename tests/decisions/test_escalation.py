"""Where an abstention goes (issue 21): the larger model, the person (``question.asked``), the queue."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from exo_core.agent.scripted import ScriptedModel
from exo_core.decisions import Decider
from exo_core.decisions.escalation import Escalation
from exo_core.decisions.logprobs import logprob_request
from exo_core.decisions.uses import SIGNAL
from exo_core.engine.core import Core, CoreOptions
from exo_core.ledger import Ledger
from exo_core.seams.failures import FailureKind, ProviderError
from exo_core.seams.home import ExoHome
from exo_edge.proposal_queue import ProposalQueue, prompt_for

from .conftest import Scripted

UNSURE = {"correction": 0.4, "rule": 0.35, "neither": 0.25}  # below the signal threshold (0.6)
TEXT = "hmm, the second one maybe"  # no rule settles it


async def test_a_confident_first_decision_goes_nowhere(store: tuple[Path, Any]) -> None:
    larger = Scripted("laptop", {"rule": 1.0})
    settled = await Escalation(Decider([Scripted("local", {"neither": 0.9})]), larger=larger).decide(SIGNAL, TEXT)
    assert (settled.route, settled.decision.chosen, larger.calls) == ("decided", "neither", 0)
    by_rule = await Escalation(Decider([]), larger=larger).decide(SIGNAL, "From now on, sign as J.")
    assert (by_rule.route, by_rule.decision.chosen, by_rule.decision.via, larger.calls) == (
        "decided",
        "rule",
        "rule",
        0,
    )


async def test_the_larger_model_decides_when_reachable_and_both_decisions_are_recorded(
    store: tuple[Path, Any],
) -> None:
    folder, recorder = store
    decider = Decider([Scripted("local", UNSURE)], recorder=recorder)
    settled = await Escalation(decider, larger=Scripted("laptop", {"correction": 0.9, "rule": 0.1})).decide(
        SIGNAL, TEXT
    )
    assert settled.route == "larger"
    assert (settled.first.chosen, settled.first.escalate) == (None, "main")
    assert (settled.decision.chosen, settled.decision.provider) == ("correction", "laptop")
    with Ledger.open_store(folder) as ledger:
        providers = [e.body["provider"] for e in ledger.entries(kind="decision")]
    assert providers == ["local", "laptop"]


async def test_unreachable_or_unsure_larger_model_queues_what_learning_needs_once(
    tmp_path: Path, store: tuple[Path, Any]
) -> None:
    _, recorder = store
    queue = ProposalQueue(tmp_path / "queue.sqlite")
    try:
        down = Scripted("laptop", error=ProviderError("connection refused", kind=FailureKind.NETWORK))
        escalation = Escalation(Decider([Scripted("local", UNSURE)], recorder=recorder), larger=down, queue=queue)
        settled = await escalation.decide(SIGNAL, TEXT)
        assert (settled.route, settled.decision.chosen, down.calls) == ("queued", None, 1)
        jobs = queue.pending()
        assert [(j.kind, j.key) for j in jobs] == [("decide", f"decide:{settled.first.entry_id}")]
        assert jobs[0].inputs["state"] == TEXT and jobs[0].inputs["options"] == list(SIGNAL.options)
        request = prompt_for(jobs[0])  # what the drainer sends the larger model when it is back
        assert TEXT in request.messages[-1].content and "correction" in request.messages[0].content
        # ... as the live larger model is asked: the same chat turns, one token, its top log probabilities.
        assert request == logprob_request(SIGNAL, TEXT) and request.top_logprobs == 20
        unsure = Escalation(Decider([Scripted("local", UNSURE)]), larger=Scripted("laptop", UNSURE), queue=queue)
        again = await unsure.decide(SIGNAL, TEXT)
        assert again.route == "queued" and queue.counts() == {"queued": 2}  # no ledger id: keyed by a hash
        await unsure.decide(SIGNAL, TEXT)
        assert queue.counts() == {"queued": 2}  # the same message is queued once
    finally:
        queue.close()


async def test_without_anywhere_to_go_it_stays_an_abstention() -> None:
    settled = await Escalation(Decider([Scripted("local", UNSURE)])).decide(SIGNAL, TEXT, waiting=True)
    assert (settled.route, settled.decision.chosen, settled.decision.escalate) == ("unsettled", None, "main")


async def test_a_person_waiting_is_asked_and_their_answer_labels_the_decision(
    tmp_path: Path, store: tuple[Path, Any]
) -> None:
    folder, recorder = store
    core = Core.open(
        ExoHome(tmp_path / "home"),
        model=ScriptedModel([]),
        options=CoreOptions(workspace=tmp_path, synchronous="NORMAL"),
    )  # type: ignore[arg-type]
    await core.__aenter__()
    try:
        created = (await core.engine.handle_raw({"id": "1", "type": "session.create", "body": {}})).to_wire()
        session = created["result"]["session"]["id"]
        queue = ProposalQueue(tmp_path / "queue.sqlite")
        escalation = Escalation(
            Decider([Scripted("local", UNSURE)], recorder=recorder), asker=core.questions, queue=queue, ask_timeout=30
        )
        task = asyncio.ensure_future(escalation.decide(SIGNAL, TEXT, waiting=True, session_id=session))
        for _ in range(500):
            if core.questions.open_questions():
                break
            await asyncio.sleep(0.01)
        [question_id] = core.questions.open_questions()
        await core.questions.answer(question_id, option=2)  # the second option: rule
        settled = await task
        queue_counts = queue.counts()
        queue.close()
    finally:
        await core.__aexit__(None, None, None)
    assert (settled.route, settled.decision.chosen, settled.decision.via) == ("asked", "rule", "person")
    assert queue_counts == {}  # asked, not queued
    with Ledger.open_store(folder) as ledger:
        [label] = [e for e in ledger.entries(kind="outcome")]
    assert label.body["label"] == "rule" and label.body["signal"] == "person"
    assert label.refs == (settled.first.entry_id,)


async def test_a_device_decision_below_defer_below_goes_to_the_larger_model(store: tuple[Path, Any]) -> None:
    folder, recorder = store
    sure_enough = {"correction": 0.8, "rule": 0.1, "neither": 0.1}  # above the threshold (0.6), below 0.9
    larger = Scripted("laptop", {"rule": 0.95, "correction": 0.05})
    escalation = Escalation(
        Decider([Scripted("local", sure_enough)], recorder=recorder), larger=larger, defer_below=0.9
    )
    settled = await escalation.decide(SIGNAL, TEXT)
    assert (settled.route, settled.decision.chosen, settled.decision.provider) == ("larger", "rule", "laptop")
    assert settled.first.chosen == "correction", "the device's own decision is kept as the first (labels refer to it)"
    with Ledger.open_store(folder) as ledger:
        providers = [e.body["provider"] for e in ledger.entries(kind="decision")]
    assert providers == ["local", "laptop"]
    # At or above the bar the device's decision stands and the larger model is not asked.
    sure = Escalation(Decider([Scripted("local", {"neither": 0.9})]), larger=larger, defer_below=0.9)
    assert (await sure.decide(SIGNAL, TEXT)).route == "decided" and larger.calls == 1


async def test_a_deferred_decision_stands_when_the_larger_model_abstains_or_fails() -> None:
    sure_enough = {"correction": 0.7, "rule": 0.2, "neither": 0.1}
    for larger in (
        Scripted("laptop", UNSURE),
        Scripted("laptop", error=ProviderError("connection refused", kind=FailureKind.NETWORK)),
    ):
        escalation = Escalation(Decider([Scripted("local", sure_enough)]), larger=larger, defer_below=0.9)
        settled = await escalation.decide(SIGNAL, TEXT)
        assert (settled.route, settled.decision.chosen, settled.decision.provider) == ("decided", "correction", "local")
        assert larger.calls == 1


async def test_rules_and_a_zero_bar_never_defer() -> None:
    larger = Scripted("laptop", {"neither": 1.0})
    by_rule = await Escalation(Decider([]), larger=larger, defer_below=1.0).decide(SIGNAL, "From now on, sign as J.")
    assert (by_rule.route, by_rule.decision.via, larger.calls) == ("decided", "rule", 0)
    never = Escalation(Decider([Scripted("local", {"correction": 0.61})]), larger=larger, defer_below=0.0)
    assert (await never.decide(SIGNAL, TEXT)).route == "decided" and larger.calls == 0
    alone = Escalation(Decider([Scripted("local", {"correction": 0.61})]), defer_below=0.9)  # no larger model
    assert (await alone.decide(SIGNAL, TEXT)).decision.chosen == "correction"
