"""Fuzzing the command decoder and ``POST /command`` of a real exod.

Malformed JSON, wrong types, unknown fields, huge and deeply nested bodies and
bad UTF-8 must never crash the decoder or the server, never produce a 5xx, and
always come back as a typed error.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from exo_testkit import write_script
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from unixhttp import post_command

from exo_core.errors import ExoError
from exo_core.protocol import COMMANDS, MAX_BODY_BYTES, decode_command

KNOWN_CODES = {
    "malformed",
    "unknown_command",
    "bad_body",
    "too_large",
    "not_found",
    "conflict",
    "unsupported",
    "bad_request",
    "bad_config",
}
EXAMPLES = int(os.environ.get("EXO_FUZZ_EXAMPLES", "150"))

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=False)
    | st.text(max_size=20),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4),
    max_leaves=20,
)
command_types = st.sampled_from(sorted(COMMANDS)) | st.text(max_size=12)
field_names = st.sampled_from(
    [
        "session",
        "text",
        "mode",
        "protocol",
        "capabilities",
        "query",
        "limit",
        "since",
        "turns",
        "request_id",
        "decision",
        "role",
        "routes",
        "key",
        "value",
        "id",
    ]
) | st.text(max_size=6)
bodies = st.dictionaries(field_names, json_values, max_size=5)
commands = st.fixed_dictionaries(
    {"id": st.text(min_size=0, max_size=8) | st.integers(), "type": command_types, "body": bodies | json_values}
)
payloads = (
    st.binary(max_size=200)
    | commands.map(lambda c: json.dumps(c).encode())
    | st.builds(
        lambda c, extra: json.dumps({**c, **extra}).encode(),
        commands,
        st.dictionaries(st.text(max_size=5), json_values, max_size=2),
    )
    | st.integers(min_value=1, max_value=3000).map(
        lambda n: ('{"id":"1","type":"hello","body":' + "[" * n + "]" * n + "}").encode()
    )
    | commands.map(lambda c: json.dumps(c).encode()[:-1] + b"\xff}")
)


@given(payloads)
@settings(max_examples=EXAMPLES * 3, deadline=None)
def test_decoder_never_raises_anything_but_typed_errors(data: bytes) -> None:
    try:
        decode_command(data)
    except ExoError as exc:
        assert exc.code in KNOWN_CODES
        assert exc.message


@pytest.fixture(scope="module")
def fuzz_exod(tmp_path_factory: pytest.TempPathFactory):
    from exo_testkit import Exod

    base = tmp_path_factory.mktemp("fuzz")
    ws = base / "ws"
    ws.mkdir()
    d = Exod(base / "home", write_script(base / "s.json", [{"text": "ok"}]), ws).start()
    yield d
    d.stop()


@given(payloads)
@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_post_command_never_5xx_and_always_typed(fuzz_exod, data: bytes) -> None:
    status, response = post_command(str(fuzz_exod.socket), data)
    assert status < 500, response
    assert set(response) == {"id", "ok", "result", "error"}
    if not response["ok"]:
        assert response["error"]["code"] in KNOWN_CODES
        assert response["error"]["message"]


def test_huge_body_is_refused_with_too_large(fuzz_exod) -> None:
    body = b'{"id":"1","type":"search","body":{"query":"' + b"a" * (MAX_BODY_BYTES + 10) + b'"}}'
    status, response = post_command(str(fuzz_exod.socket), body)
    assert status == 413 and response["error"]["code"] == "too_large"
    # The server is still up and answering.
    status, response = post_command(str(fuzz_exod.socket), b'{"id":"2","type":"hello","body":{"protocol":1}}')
    assert status == 200 and response["ok"] is True
