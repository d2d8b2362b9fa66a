"""The simulated person through a real exod (issue 22 "must show", small version; the full run is
``exo bench learning``): person messages, not verdict calls; rules outside the catalog learned through the
larger model's reflection; nothing guarded promoted unasked."""

from __future__ import annotations

import json
from pathlib import Path

from exod_person import run


async def test_taste_is_learned_from_chat_messages_catalog_and_not(tmp_path: Path) -> None:
    result = await run(tmp_path, sessions=6, drafts=6, seed=7)
    print("\n" + json.dumps(result, indent=1))
    assert result["exod_exit"] == 0 and result["ledger_verified"] and result["queue_drained"]
    assert result["verdicts"] > 10 and result["reflections_proposed"] >= 4
    assert result["guarded_promoted_unasked"] == [], "a guarded lesson is never promoted unasked"
    assert result["catalog"]["precision"] >= 0.9 and result["noncatalog"]["precision"] >= 0.9
    assert result["noncatalog"]["recall"] >= 0.6, "most rules outside the catalog reach high weight"
