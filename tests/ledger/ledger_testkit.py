"""Helpers shared by the ledger tests (a uniquely named module: test dirs have no __init__)."""

from __future__ import annotations

import os

from exo_core.ledger import Ledger

STRESS = os.environ.get("EXO_STRESS") == "1"


class FakeClock:
    """An injectable clock: starts at a fixed epoch and steps 1 ms per reading."""

    def __init__(self, start: float = 1_780_000_000.0, step: float = 0.001) -> None:
        self.now = start
        self.step = step

    def __call__(self) -> float:
        self.now += self.step
        return self.now


def fill(ledger: Ledger, count: int) -> list[str]:
    """Append ``count`` entries of varied kinds (refs, verdicts, idem keys, scopes); return ids."""
    ids: list[str] = []
    for i in range(count):
        mod = i % 5
        if mod == 0 or not ids:
            e = ledger.append("utterance", {"text": f"message {i} — naïve ☃"}, idem=f"turn-{i}")
        elif mod == 1:
            e = ledger.append(
                "action", {"tool": "edit_file", "outcome": "allow", "result": {"lines": i}}, refs=[ids[-1]]
            )
        elif mod == 2:
            e = ledger.append("verdict", {"verdict": "edit", "judged": ids[-1]}, refs=[ids[-1]], scope="agent:writer")
        elif mod == 3:
            e = ledger.append("decision", {"decider": "rules", "p": 0.25, "input": "ab" * 8})
        else:
            e = ledger.append("retrieval", {"node_ids": ["n1", "n2"], "item_ids": []}, scope="group:team")
        ids.append(e.id)
    return ids
