"""exod drains the proposal queue to the laptop's engine by itself (issue 18 item 7).

A real exod with ``[learning] route`` on a real ``llama_cpp.server`` process (the 0.5B, 1 thread): jobs
queued while the server is down stay queued with nothing written; the server starts and exod drains them;
the server is SIGKILLed mid-job and that job stays queued, nothing half-written; the server returns and
every job's result is in the ledger exactly once.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from exo_testkit import Exod, write_script

from exo_core.learning import Learner
from exo_core.ledger import Ledger, create_signing_key
from exo_core.store import init_store
from exo_edge.proposal_queue import ProposalQueue

from .laptop_kit import EngineProcess, free_port, need_engine, write_home_config

ALIAS = "qwen2.5-coder-0.5b-instruct"


def _queue_reflect_job(home: Path) -> None:
    """A person's two corrections make a lesson; the learner queues its wording for the larger model."""
    signer = create_signing_key(home / "keys")
    store = init_store(home / "store", owner_key_ids=[signer.key_id])
    queue = ProposalQueue(home / "learning" / "queue.sqlite")
    with Ledger.open_store(store.root, signer=signer) as ledger:
        for session in ("s1", "s2"):
            draft = ledger.append("action", {"tool": "reply", "outcome": "log", "session": session, "text": "Done!"})
            ledger.append("verdict", {"verdict": "edit", "judged": draft.id, "text": "Done."}, refs=(draft.id,))
        Learner(store, ledger, queue=queue).review(asked=True)
    queue.close()


def _results(home: Path) -> list[str]:
    """The idempotency keys of every queue result in the ledger."""
    with Ledger.open_store(home / "store") as ledger:
        return [e.idem for e in ledger.entries() if (e.idem or "").startswith("queue:")]


def _until(check: object, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():  # type: ignore[operator]  # a zero-argument predicate
            return
        time.sleep(0.2)
    raise AssertionError(f"timed out after {timeout:g} s waiting for {what}")


@pytest.mark.model
@pytest.mark.slow
def test_exod_drains_queued_jobs_to_the_engine_exactly_once(tmp_path: Path) -> None:
    model = need_engine()
    home, ws = tmp_path / "home", tmp_path / "ws"
    ws.mkdir()
    engine = EngineProcess(model, free_port(), tmp_path / "engine.log")
    fallback = write_script(tmp_path / "fallback.json", [{"text": "local"}] * 5)
    write_home_config(
        home,
        engine.base_url,
        [f"laptop:{ALIAS}", f"scripted:{fallback}"],
        extra=f'\n[learning]\nroute = "laptop:{ALIAS}"\ndrain_every = 0.5\n',
        api_key=engine.key,
    )
    _queue_reflect_job(home)
    queue = ProposalQueue(home / "learning" / "queue.sqlite")
    exod = Exod(home, fallback, ws).start(timeout=60)
    try:
        # Queued while exod runs and the engine is down: exod tries, the route rests, nothing is written.
        for n in range(2):
            queue.put(
                "judge",
                {"criterion": "Leads with the result.", "reply": f"Done: {n} files.", "item": f"i{n}"},
                key=f"judge-{n}",
            )
        jobs = {job.key: job.kind for job in queue.pending(100)}
        assert sorted(jobs.values()) == ["judge", "judge", "reflect"], jobs
        _until(lambda: any(job.attempts for job in queue.pending(100)), 30, "exod's first try at the route")
        time.sleep(2.0)
        assert queue.counts() == {"queued": 3} and _results(home) == []

        # The engine starts; once the route reopens exod sends the oldest job. SIGKILL while it answers.
        engine.start()
        log = tmp_path / "engine.log"
        _until(lambda: "POST /v1/chat/completions" in log.read_text(errors="replace"), 60, "a job sent to the engine")
        in_flight = queue.pending(1)[0].key
        engine.kill()
        time.sleep(1.0)
        assert in_flight in {job.key for job in queue.pending(100)}, "the job in flight stays queued"
        assert f"queue:{in_flight}" not in _results(home), "nothing of its answer is written"

        # The engine returns: every job drains, each result once.
        engine.start()
        _until(lambda: queue.counts() == {"done": 3}, 240, "every job drained")
        time.sleep(1.5)  # a few more drain rounds: nothing is asked twice
        results = _results(home)
        assert sorted(results) == sorted(f"queue:{key}" for key in jobs), results
        reflected = log.read_text(errors="replace").count("POST /v1/chat/completions")
        assert reflected >= 4, "the killed job was asked again after the engine came back"
    finally:
        exod.stop()
        engine.stop()
        queue.close()
    with Ledger.open_store(home / "store") as ledger:
        revised = [e for e in ledger.entries(kind="proposal") if e.body.get("by") == "reflection"]
        scores = [e.body["score"] for e in ledger.entries(kind="decision") if (e.idem or "").startswith("queue:")]
    assert len(revised) == 1 and revised[0].body["target"] == "taste/exclamation", revised
    assert len(scores) == 2 and all(0.0 <= s <= 1.0 for s in scores)
