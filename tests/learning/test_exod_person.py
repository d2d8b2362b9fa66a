"""The simulated person through a real exod (issue 22 "must show", small version; the full run is
``exo bench learning``, docs/benchmarks.md): person messages, not verdict calls; rules outside the catalog
learned through the larger model's reflection, drained by exod itself; nothing guarded promoted unasked."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from exod_person import run


@pytest.mark.slow
async def test_taste_is_learned_from_chat_messages_catalog_and_not(tmp_path: Path) -> None:
    result = await run(tmp_path, sessions=8, drafts=6, seed=7)
    print("\n" + json.dumps(result, indent=1))
    assert result["exod_exit"] == 0 and result["ledger_verified"] and result["queue_drained"]
    assert result["reflections_proposed"] >= 4, "each rule outside the catalog was named by the larger model"
    assert result["guarded_high"] and result["guarded_promoted_unasked"] == [], "strong, and still never promoted"
    assert not any(target.startswith("rules/") for target in result["promoted"])
    catalog, other = result["catalog"], result["noncatalog"]
    assert catalog["precision"] >= 0.9 and other["precision"] >= 0.9 and not other["strays"]
    # The small run is short: the full run (12 sessions of 8 drafts) is the one held to recall >= 0.8.
    assert catalog["recall"] >= 0.5 and other["recall"] >= 0.6
    assert result["corrected_share_last_third"] < result["corrected_share_first_third"]
