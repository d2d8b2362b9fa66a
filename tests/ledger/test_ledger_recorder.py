"""LedgerRecorder satisfies the agent loop's Recorder seam and works from worker threads."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from exo_core.errors import BadBodyError
from exo_core.ledger import Ledger, LedgerRecorder, Signer
from exo_core.seams.recorder import Recorder


async def test_records_a_turn_from_a_worker_thread(tmp_path: Path, signer: Signer) -> None:
    recorder: Recorder = LedgerRecorder.for_store(tmp_path, signer, scope="person")
    said = await asyncio.to_thread(recorder.record, "utterance", {"text": "fix the typo and push"})
    assert said is not None
    action = await asyncio.to_thread(
        recorder.record,
        "action",
        {"tool": "bash", "outcome": "ask", "args": {"cmd": "git push"}, "result": {"stdout": "pushed"}},
        refs=(said,),
    )
    approval = await asyncio.to_thread(recorder.record, "approval", {"decision": "allow"}, refs=(action,))
    verdict = await asyncio.to_thread(recorder.record, "verdict", {"verdict": "edit", "judged": action}, refs=(action,))
    assert isinstance(recorder, LedgerRecorder)
    recorder.close()
    with Ledger.open_store(tmp_path) as ledger:
        kinds = [(e.kind, e.id) for e in ledger.entries()]
        assert kinds == [("utterance", said), ("action", action), ("approval", approval), ("verdict", verdict)]
        assert ledger.verify(pins=[signer.key_id]).ok


def test_refuses_checkpoints_and_bad_bodies(tmp_path: Path, signer: Signer) -> None:
    recorder = LedgerRecorder.for_store(tmp_path, signer)
    with pytest.raises(BadBodyError):
        recorder.record("checkpoint", {"size": 0, "head": "0" * 64})
    with pytest.raises(BadBodyError):
        recorder.record("gossip", {"text": "x"})
    with pytest.raises(BadBodyError):
        recorder.record("utterance", {"words": "missing text"})
    recorder.close()


def test_needs_a_signer(tmp_path: Path, signer: Signer) -> None:
    Ledger.open_store(tmp_path, signer=signer, create=True).close()
    with Ledger.open_store(tmp_path) as read_only, pytest.raises(BadBodyError):
        LedgerRecorder(read_only)
