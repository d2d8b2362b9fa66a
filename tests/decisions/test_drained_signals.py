"""A queued signal decision teaches once the larger model answers it (issues 21 and 22; docs/decisions.md §7a).

Through the real seams: exod's :class:`ChatSignals` records the drafts and reads each person message
with a :class:`SignalSettler` whose device provider is unsure and whose larger model is away, so the
abstentions are queued in a real :class:`ProposalQueue` file with ``context = {session, draft}``.
:func:`drain` then sends them over HTTP to a small aiohttp server scripted to answer option letters,
and appends to the real signed ledger: the larger model's ``decision``, plus the verdict or rule it
teaches, the same entry the live path records. A second drain, and a drain after a kill between the
append and the job's ``done`` mark, record nothing more.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

from models.fake_provider import FakeProvider, Reply, openai_chunks

from exo_core.decisions import Decider
from exo_core.decisions.escalation import Escalation
from exo_core.decisions.signal_escalation import SignalSettler
from exo_core.learning.chat_signals import ChatSignals
from exo_core.ledger import Ledger, ensure_signing_key
from exo_edge.hosted import HttpClient, OpenAICompatTransport
from exo_edge.proposal_queue import DrainReport, ProposalQueue, drain

from .conftest import Scripted

UNSURE = {"correction": 0.4, "rule": 0.35, "neither": 0.25}  # below the signal threshold (0.6): escalates
DRAFT = "Great news!!! The note for Sam is ready, and it is a long one!"
CORRECTION = "hmm, the second one maybe"
RULE = "keep the notes to Sam brief"
NO_DRAFT = "hmm, the third one maybe"
TOKEN = "ghp_" + "A1b2C3d4" * 5
SECRET_RULE = f"push with {TOKEN} every time"
FACT = "my dentist is now on Friday"  # the facts seam's; the live path never queues it, the drain must not teach it
NEITHER = "what about tuesday then"
MISSING_DRAFT = "hmm, the first one maybe"
GONE = "ab" * 32  # a draft id that names no entry of this ledger


async def _drain(server: FakeProvider, queue: ProposalQueue, ledger: Ledger) -> DrainReport:
    client = HttpClient()
    try:
        transport = OpenAICompatTransport(
            client, base_url=server.base_url("laptop"), model="big", api_key=None, provider="laptop"
        )
        return await drain(queue, transport, ledger, batch=50)
    finally:
        await client.aclose()


async def test_drained_signal_decisions_record_the_verdict_or_rule_once(
    tmp_path: Path, store: tuple[Path, Any]
) -> None:
    folder, recorder = store
    queue = ProposalQueue(tmp_path / "queue.sqlite")
    decider = Decider([Scripted("local", UNSURE)], recorder=recorder)
    settler = SignalSettler(Escalation(decider, queue=queue))  # no larger model, nobody to ask: queued
    chat = ChatSignals(None, recorder, settler.decide)
    for session, text in (("s1", CORRECTION), ("s2", RULE), ("s4", SECRET_RULE), ("s6", NEITHER)):
        assert await chat.on_message(session, {"role": "assistant", "content": DRAFT}) == "action"
        assert await chat.on_message(session, {"role": "user", "content": text}) is None  # queued: nothing yet
    assert await chat.on_message("s3", {"role": "user", "content": NO_DRAFT}) is None
    assert await chat.on_message("s5", {"role": "user", "content": FACT}) is None  # the facts seam's, not queued
    await settler.decide(FACT, "s5", None)  # as if it had been queued: the drain must not make it a rule
    await settler.decide(MISSING_DRAFT, "s7", GONE)
    draft_of = {e.body["session"]: e.id for e in recorder.ledger.entries(kind="action")}
    jobs = queue.pending()
    assert [j.inputs["state"] for j in jobs] == [CORRECTION, RULE, SECRET_RULE, NEITHER, NO_DRAFT, FACT, MISSING_DRAFT]
    assert jobs[0].inputs["context"] == {"session": "s1", "draft": draft_of["s1"]}

    server = FakeProvider()
    await server.start()
    signer = ensure_signing_key(tmp_path / "keys")
    ledger = Ledger.open_store(folder, signer=signer)
    try:
        # One answer per job, in queue order: A correction, B rule, C neither (a word is read too).
        for answer in (" A", "B", "(B)", "C", "A", " B", "correction"):
            server.script("laptop", Reply(events=openai_chunks(answer)))
        before = ledger.count()
        report = await _drain(server, queue, ledger)
        assert (report.done, report.already, report.stopped) == (7, 0, "empty")
        assert "A. correction:" in server.seen[0].body["messages"][0]["content"]
        chosen = [e.body["chosen"] for e in ledger.entries(kind="decision") if e.body["provider"] == "queue"]
        assert chosen == ["correction", "rule", "rule", "neither", "correction", "rule", "correction"]

        [verdict] = list(ledger.entries(kind="verdict"))
        expected = {"verdict": "reject", "judged": draft_of["s1"], "session": "s1", "reason": CORRECTION}
        assert verdict.body == {**expected, "probability": 0.9}
        assert (verdict.refs, verdict.scope) == ((draft_of["s1"],), "person")
        [rule] = list(ledger.entries(kind="rule"))
        assert rule.body == {"text": RULE, "session": "s2", "probability": 0.9} and rule.scope == "person"
        assert not [e for e in ledger.entries() if TOKEN in str(e.body) and e.kind != "utterance"]
        written = ledger.count()
        assert written == before + 7 + 2  # seven decisions, one verdict, one rule

        # Drained again: nothing is queued, nothing asked, nothing recorded.
        again = await _drain(server, queue, ledger)
        assert (again.done, again.already, again.stopped, ledger.count()) == (0, 0, "empty", written)
        # A drainer killed after the append but before the done mark: the jobs are found, not asked again.
        db = sqlite3.connect(tmp_path / "queue.sqlite")
        with db:
            db.execute("UPDATE jobs SET state='queued'")
        db.close()
        asked = len(server.seen)
        retried = await _drain(server, queue, ledger)
        assert (retried.done, retried.already, ledger.count(), len(server.seen)) == (0, 7, written, asked)
        assert ledger.verify().ok
    finally:
        ledger.close()
        queue.close()
        await server.stop()


async def test_the_live_and_the_drained_path_record_the_same_entry(tmp_path: Path, store: tuple[Path, Any]) -> None:
    """The same message decided live (a sure device provider) and drained: equal bodies but the probability."""
    folder, recorder = store
    queue = ProposalQueue(tmp_path / "queue.sqlite")
    sure = ChatSignals(None, recorder, SignalSettler(Escalation(Decider([Scripted("local", {"rule": 0.95})]))).decide)
    unsure = SignalSettler(Escalation(Decider([Scripted("local", UNSURE)], recorder=recorder), queue=queue))
    queued = ChatSignals(None, recorder, unsure.decide)
    assert await sure.on_message("live", {"role": "user", "content": RULE}) == "rule"
    assert await queued.on_message("later", {"role": "user", "content": RULE}) is None

    server = FakeProvider()
    await server.start()
    ledger = Ledger.open_store(folder, signer=ensure_signing_key(tmp_path / "keys"))
    try:
        server.script("laptop", Reply(events=openai_chunks("B")))
        assert (await _drain(server, queue, ledger)).done == 1
        live, drained = [e.body for e in ledger.entries(kind="rule")]
        assert {**live, "session": "later", "probability": 0.9} == drained
    finally:
        ledger.close()
        queue.close()
        await server.stop()
