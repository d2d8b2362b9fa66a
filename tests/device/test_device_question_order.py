"""The handheld's question card: the newest question on top, a closed one gone, a learning question quiet."""

from __future__ import annotations

import json

from device.state import ScreenState, apply_event
from exo_core.protocol import decode_event


def _event(type_: str, body: dict, seq: int) -> object:
    data = {"id": f"e{seq}", "seq": seq, "session": "s1", "type": type_, "ts": "2026-01-01T00:00:00Z", "body": body}
    return decode_event(json.dumps(data))


def test_a_new_question_replaces_the_older_on_top_and_question_closed_removes_it() -> None:
    state = ScreenState()
    learn = {
        "question_id": "q1",
        "text": 'Should I learn from "Add eggs"?',
        "options": ["a", "b", "c"],
        "short": "Learn from that?",
        "quiet": True,
    }
    state = apply_event(state, _event("question.asked", learn, 1), "s1")
    assert state.question is not None and state.question.text == "Learn from that?" and state.question.quiet
    state = apply_event(
        state, _event("question.asked", {"question_id": "q2", "text": "What do you want to do?"}, 2), "s1"
    )
    assert state.question is not None and state.question.question_id == "q2" and not state.question.quiet
    state = apply_event(state, _event("question.closed", {"question_id": "q1", "reason": "expired"}, 3), "s1")
    assert [q.question_id for q in state.questions] == ["q2"]
    state = apply_event(state, _event("question.closed", {"question_id": "q2", "reason": "its turn ended"}, 4), "s1")
    assert state.question is None
