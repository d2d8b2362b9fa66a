"""A queued signal decision teaches once the larger model answers it (issues 21 and 22; docs/decisions.md §7a).

Through the real seams: exod's :class:`ChatSignals` records the drafts and reads each person message
with a :class:`SignalSettler` whose device provider is unsure and whose larger model is away, so the
abstentions are queued in a real :class:`ProposalQueue` file with ``context = {session, draft}``.
:func:`drain` then sends them over HTTP to a small aiohttp server scripted to answer one token with its
``top_logprobs`` (as llama_cpp.server does), and appends to the real signed ledger: the larger model's
``decision`` with the option probabilities it read, plus the verdict or rule it teaches at that
probability, the same entry the live path records. An answer below the threshold, or without log
probabilities, is an abstention that teaches nothing; a route that fails leaves the job queued. A second
drain, and a drain after a kill between the append and the job's ``done`` mark, record nothing more.
"""

from __future__ import annotations

import math
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from models.fake_provider import FakeProvider, Reply, openai_chunks

from exo_core.decisions import SIGNAL, Decider, record_label
from exo_core.decisions.escalation import Escalation
from exo_core.decisions.record import labelled_samples
from exo_core.decisions.signal_escalation import SignalSettler
from exo_core.learning.chat_signals import ChatSignals
from exo_core.ledger import Ledger, ensure_signing_key
from exo_edge.hosted import HttpClient, OpenAICompatTransport
from exo_edge.proposal_queue import DrainReport, ProposalQueue, drain

from .conftest import Scripted, logprob_chunks

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
ROUTE = "laptop:big"
LARGER = "laptop:big:chat"  # the name exod's live larger model has on this route: one calibration for both


def _top(**mass: float) -> Reply:
    """One token whose top log probabilities put ``mass`` on each option word (``other`` is neither's)."""
    return Reply(events=logprob_chunks([(word, math.log(p)) for word, p in mass.items()]))


async def _drain(
    server: FakeProvider, queue: ProposalQueue, ledger: Ledger, *, route: str = ROUTE, batch: int = 50
) -> DrainReport:
    client = HttpClient()
    try:
        transport = OpenAICompatTransport(
            client, base_url=server.base_url("laptop"), model="big", api_key=None, provider="laptop"
        )
        return await drain(queue, transport, ledger, batch=batch, route=route)
    finally:
        await client.aclose()


def _drained(ledger: Ledger) -> list[dict[str, Any]]:
    return [e.body for e in ledger.entries(kind="decision") if e.body.get("source") == "queue"]


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
        # One answer per job, in queue order: the mass on each option word's first tokens (cor, correct, Rule...).
        server.script(
            "laptop",
            _top(correction=0.6, cor=0.2, rule=0.1, other=0.05, I=0.05),  # correction 0.8 / 0.95
            _top(rule=0.7, Rule=0.2, cor=0.1),  # rule 0.9
            _top(rule=0.95, other=0.05),
            _top(other=0.9, rule=0.1),
            _top(correct=0.8, other=0.2),
            _top(rule=0.85, cor=0.15),
            _top(correction=0.7, rule=0.3),
        )
        before = ledger.count()
        report = await _drain(server, queue, ledger)
        assert (report.done, report.already, report.stopped) == (7, 0, "empty")
        body = server.seen[0].body
        assert (body["max_tokens"], body["logprobs"], body["top_logprobs"]) == (1, True, 20)
        assert "- correction:" in body["messages"][0]["content"]  # the chat style's words, not letters
        drained = _drained(ledger)
        assert [d["chosen"] for d in drained] == [
            "correction",
            "rule",
            "rule",
            "neither",
            "correction",
            "rule",
            "correction",
        ]
        first = drained[0]
        assert (first["provider"], first["via"], first["calibrated"], first["escalate"]) == (
            LARGER,
            "provider",
            False,
            None,
        )
        assert first["raw"] == pytest.approx(
            {"correction": 0.8 / 0.95, "rule": 0.1 / 0.95, "neither": 0.05 / 0.95}, abs=1e-6
        )
        assert first["p"] == first["raw"] and first["threshold"] == 0.6 and first["failures"] == []

        [verdict] = list(ledger.entries(kind="verdict"))
        expected = {"verdict": "reject", "judged": draft_of["s1"], "session": "s1", "reason": CORRECTION}
        assert verdict.body == {**expected, "probability": pytest.approx(0.8 / 0.95)}
        assert (verdict.refs, verdict.scope) == ((draft_of["s1"],), "person")
        [rule] = list(ledger.entries(kind="rule"))
        assert (
            rule.body == {"text": RULE, "session": "s2", "probability": pytest.approx(0.9)} and rule.scope == "person"
        )
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
        server.script("laptop", _top(rule=0.9, other=0.1))
        assert (await _drain(server, queue, ledger)).done == 1
        live, drained = [e.body for e in ledger.entries(kind="rule")]
        assert {**live, "session": "later", "probability": pytest.approx(0.9)} == drained
    finally:
        ledger.close()
        queue.close()
        await server.stop()


async def test_an_unsure_or_probability_less_answer_is_an_abstention_and_a_failing_route_leaves_the_job_queued(
    tmp_path: Path, store: tuple[Path, Any]
) -> None:
    """Below the threshold, or no log probabilities (none, null, garbage, no option word): the job is answered as
    an abstention that says why and teaches nothing, never a made-up confidence. A 500 or a 429 is the route
    failing: nothing is recorded and the job waits for the next drain."""
    folder, recorder = store
    queue = ProposalQueue(tmp_path / "queue.sqlite")
    settler = SignalSettler(Escalation(Decider([Scripted("local", UNSURE)], recorder=recorder), queue=queue))
    rules = [f"keep the notes to Sam brief, take {n}" for n in range(5)]
    for n, text in enumerate(rules):
        await settler.decide(text, f"s{n}", None)
    server = FakeProvider()
    await server.start()
    ledger = Ledger.open_store(folder, signer=ensure_signing_key(tmp_path / "keys"))
    try:
        before = ledger.count()
        for failing in (Reply(status=500), Reply(status=429, headers={"Retry-After": "1"})):
            server.script("laptop", failing)
            report = await _drain(server, queue, ledger)
            assert (report.done, report.already) == (0, 0) and report.stopped.startswith("route unavailable")
            assert ledger.count() == before and len(queue.pending()) == 5
        assert queue.pending()[0].attempts == 2

        server.script(
            "laptop",
            _top(rule=0.5, other=0.4, cor=0.1),  # the larger model is unsure too: below 0.6
            Reply(events=openai_chunks("rule")),  # an engine that sends no log probabilities
            Reply(events=logprob_chunks([("rule", -0.1)], shape={"content": None})),
            Reply(events=logprob_chunks([("rule", -0.1)], shape="rule: 0.9")),
            Reply(events=logprob_chunks([("Sure", -0.1), ("I", -2.0)])),  # no token starts an option word
        )
        report = await _drain(server, queue, ledger)
        assert (report.done, report.stopped) == (5, "empty")
        drained = _drained(ledger)
        assert [(d["chosen"], d["applied"], d["escalate"]) for d in drained] == [(None, None, None)] * 5
        unsure, *failed = drained
        assert unsure["provider"] == LARGER and unsure["via"] == "fallback" and unsure["failures"] == []
        assert unsure["raw"] == pytest.approx({"correction": 0.1, "rule": 0.5, "neither": 0.4}, abs=1e-6)
        reasons = [d["failures"] for d in failed]
        assert reasons == [[[LARGER, "no_logprobs"]]] * 3 + [[[LARGER, "bad_decision_output"]]]
        # No number of its own: the even split a failed decision carries, under provider "none" (never calibrated).
        assert all(
            d["provider"] == "none"
            and d["raw"] == pytest.approx({"correction": 1 / 3, "rule": 1 / 3, "neither": 1 / 3}, abs=1e-6)
            for d in failed
        )
        assert not list(ledger.entries(kind="rule")) and not list(ledger.entries(kind="verdict"))
        written = ledger.count()
        assert written == before + 5

        again = await _drain(server, queue, ledger)
        assert (again.done, again.already, ledger.count()) == (0, 0, written)
        db = sqlite3.connect(tmp_path / "queue.sqlite")
        with db:
            db.execute("UPDATE jobs SET state='queued'")
        db.close()
        asked = len(server.seen)
        retried = await _drain(server, queue, ledger)
        assert (retried.done, retried.already, ledger.count(), len(server.seen)) == (0, 5, written, asked)
        assert ledger.verify().ok
    finally:
        ledger.close()
        queue.close()
        await server.stop()


async def test_a_drained_decision_is_calibrated_with_the_live_larger_models_labels(
    tmp_path: Path, store: tuple[Path, Any]
) -> None:
    """The drain calibrates with the book fitted from the ledger's labels under ``<route>:chat``, the live
    larger model's name on that route: labels that say its 0.9 for "rule" is right half the time make the
    same answer drained an abstention; drained on another route (no labels) it is not calibrated and chosen.
    Once labelled, the drained decision is one more sample of that same calibration."""
    folder, recorder = store
    live = Decider([Scripted(LARGER, {"rule": 0.9, "correction": 0.05, "neither": 0.05})], recorder=recorder)
    for n in range(12):  # the live larger model's decisions, labelled by the person: right on half
        decided = await live.decide(SIGNAL, f"message number {n}")
        assert decided.chosen == "rule" and not decided.calibrated
        record_label(recorder, decided, "person", label="rule" if n % 2 else "neither")
    queue = ProposalQueue(tmp_path / "queue.sqlite")
    settler = SignalSettler(Escalation(Decider([Scripted("local", UNSURE)], recorder=recorder), queue=queue))
    await settler.decide(RULE, "s1", None)
    await settler.decide(RULE + " please", "s2", None)
    server = FakeProvider()
    await server.start()
    ledger = Ledger.open_store(folder, signer=ensure_signing_key(tmp_path / "keys"))
    try:
        server.script("laptop", _top(rule=0.9, cor=0.05, other=0.05), _top(rule=0.9, cor=0.05, other=0.05))
        assert (await _drain(server, queue, ledger, batch=1)).done == 1
        assert (await _drain(server, queue, ledger, route="elsewhere:m", batch=1)).done == 1
        pooled, apart = _drained(ledger)
        assert pooled["provider"] == LARGER and pooled["calibrated"] is True
        assert pooled["raw"]["rule"] == pytest.approx(0.9) and pooled["p"]["rule"] < SIGNAL.threshold
        assert pooled["chosen"] is None  # unsure once calibrated: it teaches nothing
        assert apart["provider"] == "elsewhere:m:chat" and apart["calibrated"] is False and apart["chosen"] == "rule"
        [rule] = list(ledger.entries(kind="rule"))  # only the uncalibrated one's
        assert rule.body["session"] == "s2" and rule.body["probability"] == pytest.approx(0.9)

        [entry] = [e for e in ledger.entries(kind="decision") if e.body.get("source") == "queue"][:1]
        ledger.append(
            "outcome",
            {"status": "label", "decider": "signal", "label": "neither", "signal": "person"},
            refs=(entry.id,),
        )
        samples = labelled_samples([*ledger.entries(kind="decision"), *ledger.entries(kind="outcome")])
        assert len(samples[(LARGER, "signal")][1]) == 13  # twelve live, one drained: one calibration
    finally:
        ledger.close()
        queue.close()
        await server.stop()


@pytest.mark.model
@pytest.mark.slow
async def test_a_real_llama_cpp_server_answers_the_queue_with_the_live_paths_probabilities(
    tmp_path: Path, store: tuple[Path, Any]
) -> None:
    """The drain against a real ``llama_cpp.server`` serving the 0.5B (one thread): each queued signal decision
    gets the model's own distribution over the options, the same numbers the live larger model reads for the
    same message on the same engine, so the two share one calibration."""
    from dataclasses import replace

    from models.laptop_kit import EngineProcess, free_port, need_engine

    from exo_core.decisions.calibration import starter_key
    from exo_core.decisions.logprobs import LogprobProvider
    from exo_core.decisions.starters import load_starters
    from exo_core.models import ModelRouter, load_catalog
    from exo_core.models.catalog import ROLES

    folder, recorder = store
    texts = ("From now on, always ask me before pushing anything.", "What's on my calendar tomorrow?")
    queue = ProposalQueue(tmp_path / "queue.sqlite")
    escalation = Escalation(Decider([Scripted("local", UNSURE)], recorder=recorder), queue=queue)
    for n, text in enumerate(texts):  # without the rules, which would settle both on the device
        await escalation.decide(replace(SIGNAL, rules=()), text, context={"session": f"s{n}", "draft": None})
    assert len(queue.pending()) == 2

    engine = EngineProcess(need_engine(), free_port(), tmp_path / "engine.log", threads=1).start()
    route = "laptop:qwen2.5-coder-0.5b-instruct"
    config = {
        "models": {
            "providers": {"laptop": {"kind": "openai", "base_url": engine.base_url, "api_key": engine.key}},
            "roles": {"main": [route]},
            "timeouts": {"first_byte": 240.0, "idle": 60.0},
        }
    }
    router = ModelRouter(load_catalog(config, env={}), env={})
    for role in ROLES:
        router.set_role(role, [route])
    ledger = Ledger.open_store(folder, signer=ensure_signing_key(tmp_path / "keys"))
    try:
        report = await drain(queue, router, ledger, route=route)
        live = LogprobProvider(router, name=f"{route}:chat", timeout=240.0)
        read_live = [dict(await live.probabilities(SIGNAL, text)) for text in texts]
    finally:
        ledger.close()
        queue.close()
        await router.aclose()
        engine.stop()
    assert (report.done, report.stopped) == (2, "empty")
    with Ledger.open_store(folder) as reopened:
        drained = _drained(reopened)
        rules = [e.body for e in reopened.entries(kind="rule")]
    for body, shares in zip(drained, read_live, strict=True):
        raw = body["raw"]
        assert body["provider"] == f"{route}:chat" and sum(raw.values()) == pytest.approx(1.0, abs=1e-5)
        assert all(value > 0.0 for value in raw.values()), raw  # a distribution, not one letter at 0.9
        assert raw == pytest.approx(shares, abs=0.02)  # what the live path reads for the same message
        # Calibrated by the 0.5B's shipped starter (the route serves it under its manifest's name), as the live
        # path's decisions of this route are: docs/decisions.md §4.
        used = body["p"]
        assert body["calibrated"] is True
        assert used == pytest.approx(load_starters()[(starter_key(route + ":chat"), "signal")].apply(raw), abs=1e-3)
        top = max(used, key=lambda o: used[o])
        assert body["chosen"] == (top if used[top] >= SIGNAL.threshold else None)
    rule, question = (max(b["raw"], key=lambda o: b["raw"][o]) for b in drained)
    assert (rule, question) == ("rule", "neither")
    if drained[0]["chosen"] == "rule":  # taught at the decision's probability
        assert [r["probability"] for r in rules] == [pytest.approx(drained[0]["p"]["rule"], abs=1e-3)]
    else:
        assert rules == []


def test_the_drainers_router_sends_every_role_to_the_learning_route(tmp_path: Path) -> None:
    """A queued decision asks the ``decision`` role and a reflection ``aux``: with the catalog's routes for
    them (here the device's own model), the drainer's router must still send both to the learning route alone,
    or another model would answer, and be recorded and calibrated, in the larger model's name."""
    from exo_core.models.catalog import ROLES
    from exo_core.seams.home import ExoHome
    from exo_edge.queue_drainer import learning_router

    home = tmp_path / "home"
    home.mkdir()
    (home / "config.toml").write_text(
        '[models.providers.laptop]\nkind = "openai"\nbase_url = "http://127.0.0.1:9/v1"\nkey_env = []\n\n'
        '[models.roles]\nmain = ["local:qwen2.5-coder-0.5b-instruct"]\ndecision = ["local:gemma-3-270m"]\n'
        'aux = ["local:gemma-3-270m"]\n',
        encoding="utf-8",
    )
    router = learning_router(ExoHome(home), ROUTE)
    assert {role: [str(r) for r in router.chain(role)] for role in ROLES} == {role: [ROUTE] for role in ROLES}
