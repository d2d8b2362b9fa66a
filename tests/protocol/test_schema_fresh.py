"""The committed JSON Schema and TypeScript types match the dataclasses."""

from __future__ import annotations

import json

from exo_core.protocol.schema import GENERATED_DIR, generated_files


def test_generated_files_are_up_to_date() -> None:
    for name, content in generated_files().items():
        path = GENERATED_DIR / name
        assert path.exists(), f"{path} missing: run `exo protocol export`"
        assert path.read_text(encoding="utf-8") == content, f"{path} is stale: run `exo protocol export`"


def test_schema_describes_every_command_strictly() -> None:
    schema = json.loads(generated_files()["protocol.schema.json"])
    send = schema["commands"]["turn.send"]
    assert send["required"] == ["session", "text"]
    assert send["additionalProperties"] is False
    assert send["properties"]["mode"] == {"enum": ["send", "steer", "queue"]}
    assert "Capabilities" in schema["$defs"]
    ts = generated_files()["protocol.d.ts"]
    assert "export interface TurnSendBody" in ts and '"turn.send": TurnSendBody;' in ts
