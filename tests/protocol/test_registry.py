"""The registries: caps, names, and the frozen-slotted rule."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from exo_core.protocol import COMMANDS, EVENTS, MAX_TYPES, RegistryFullError, TypeRegistry


@dataclass(frozen=True, slots=True)
class _Body:
    x: int = 0


def test_a_31st_type_is_refused() -> None:
    reg = TypeRegistry("command")
    for i in range(MAX_TYPES):
        reg.add(f"thing.do{chr(97 + i // 26)}{chr(97 + i % 26)}", _Body)
    assert len(reg) == 30
    with pytest.raises(RegistryFullError, match="at most 30"):
        reg.add("thing.overflow", _Body)


def test_duplicates_and_bad_names_and_mutable_bodies_are_refused() -> None:
    reg = TypeRegistry("event")
    reg.add("turn.completed", _Body)
    with pytest.raises(RegistryFullError, match="already registered"):
        reg.add("turn.completed", _Body)
    with pytest.raises(RegistryFullError, match="noun.verb"):
        reg.add("Bad Name", _Body)

    @dataclass
    class Mutable:
        x: int = 0

    with pytest.raises(RegistryFullError, match="frozen and slotted"):
        reg.add("thing.mutable", Mutable)


def test_the_real_registries_stay_within_the_caps_and_hold_the_known_names() -> None:
    assert len(COMMANDS) <= 30 and len(EVENTS) <= 30
    for name in [
        "hello",
        "session.create",
        "session.list",
        "session.fork",
        "session.resume",
        "session.undo",
        "turn.send",
        "turn.interrupt",
        "approval.respond",
        "question.answer",
        "events.subscribe",
        "search",
        "models.set",
        "config.get",
        "config.set",
        "taste.list",
        "taste.edit",
    ]:
        assert name in COMMANDS
    for name in [
        "message.delta",
        "reasoning.delta",
        "message.completed",
        "turn.started",
        "turn.completed",
        "tool.started",
        "tool.output",
        "tool.completed",
        "usage.updated",
        "approval.requested",
        "approval.resolved",
        "question.asked",
        "session.updated",
        "context.compacted",
        "decision.queued",
        "taste.updated",
        "ui.panel",
        "notice",
    ]:
        assert name in EVENTS
