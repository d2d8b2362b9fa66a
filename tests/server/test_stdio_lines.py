"""Issue 19 item 4: no line ends ``exo serve --stdio``; every line gets a typed answer.

On main an integer of more than 4,300 digits or a lone surrogate in ``id`` made
exod exit 0 with nothing on stderr, and the rest of a line over 8 MB was parsed
as a second command. Here one real ``exo serve --stdio`` reads every such line
and must answer each with a typed error response, then still answer ``hello``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from exo_testkit import ROOT, write_script
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from exo_core.protocol import MAX_BODY_BYTES

EXAMPLES = int(os.environ.get("EXO_FUZZ_EXAMPLES", "150"))
HELLO = b'{"id":"after","type":"hello","body":{"protocol":1}}'
TYPED = {"malformed", "unknown_command", "bad_body", "too_large", "not_found", "conflict", "unsupported", "bad_request"}


class StdioExod:
    """A real ``exo serve --stdio --no-unix``; one line in, one response line out."""

    def __init__(self, base: Path) -> None:
        ws = base / "ws"
        ws.mkdir(parents=True, exist_ok=True)
        script = write_script(base / "s.json", [{"text": "ok"}])
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "exo_core.cli", "serve", "--stdio", "--no-unix", "--home", str(base / "home")]
            + ["--model", f"scripted:{script}", "--workspace", str(ws), "--log-level", "WARNING"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env,
        )

    def send(self, line: bytes) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(line + b"\n")
        self.proc.stdin.flush()

    def answer(self) -> dict[str, Any]:
        assert self.proc.stdout is not None
        raw = self.proc.stdout.readline()
        if not raw:
            err = self.proc.stderr.read().decode(errors="replace") if self.proc.stderr else ""
            raise AssertionError(f"exod closed stdout (exit {self.proc.wait(10)}); stderr: {err[-2000:]}")
        return json.loads(raw)

    def close(self) -> int:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        try:
            return self.proc.wait(30)
        finally:
            for pipe in (self.proc.stdout, self.proc.stderr):
                if pipe is not None:
                    pipe.close()


@pytest.fixture(scope="module")
def stdio_exod(tmp_path_factory: pytest.TempPathFactory) -> Iterator[StdioExod]:
    d = StdioExod(tmp_path_factory.mktemp("stdio"))
    d.send(HELLO)
    assert d.answer()["ok"] is True
    yield d
    if d.proc.poll() is None:
        assert d.close() == 0


@pytest.mark.parametrize(
    "line",
    [
        b'{"id":"1","type":"hello","body":{"protocol":' + b"9" * 5000 + b"}}",
        b'{"id":"\\ud800","type":"hello","body":{"protocol":1}}',
        b'{"id":"x","type":"question.answer","body":{"request_id":"q","answer":"answer \\ud800 here"}}',
        b'{"id":"1","type":"config.set","body":{"key":"k","value":NaN}}',
        b'{"id":"1","type":"config.set","body":{"key":"k","value":' + b"[" * 20_000 + b"]" * 20_000 + b"}}",
        b'{"id":"1","type":"events.subscribe","body":{"since":99999999999999999999}}',
        b"\xff\xfe not utf-8",
        b"[]",
    ],
    ids=["big-int", "surrogate-id", "surrogate-answer", "nan", "deep", "huge-since", "bad-utf8", "not-object"],
)
def test_a_hostile_line_gets_a_typed_error_and_exod_goes_on(stdio_exod: StdioExod, line: bytes) -> None:
    stdio_exod.send(line)
    reply = stdio_exod.answer()
    assert reply["ok"] is False and reply["error"]["code"] in TYPED, reply
    stdio_exod.send(HELLO)
    after = stdio_exod.answer()
    assert after["id"] == "after" and after["ok"] is True


def test_the_rest_of_an_over_long_line_is_discarded_not_run(stdio_exod: StdioExod) -> None:
    smuggled = b'{"id":"smuggled","type":"hello","body":{"protocol":1}}'
    assert stdio_exod.proc.stdin is not None
    writer = threading.Thread(target=stdio_exod.proc.stdin.write, args=(b"x" * (MAX_BODY_BYTES + 4096),))
    writer.start()
    first = stdio_exod.answer()  # exod answers once the line passes the limit, before its end arrives
    writer.join(60)
    assert first["ok"] is False and first["error"]["code"] == "too_large", first
    stdio_exod.send(smuggled)  # the end of the same over-long line
    stdio_exod.send(HELLO)
    after = stdio_exod.answer()
    assert after["id"] == "after", f"the tail of the long line was run as a command: {after}"


lines = st.one_of(
    st.binary(max_size=300).map(lambda b: b.replace(b"\n", b" ")),
    st.recursive(
        st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
        lambda kids: st.lists(kids, max_size=4) | st.dictionaries(st.text(max_size=6), kids, max_size=4),
        max_leaves=15,
    ).map(lambda v: json.dumps({"id": "f", "type": "config.set", "body": {"key": "k", "value": v}}).encode()),
    st.text(max_size=30).map(
        lambda t: b'{"id":"' + t.encode("utf-8", "surrogatepass").replace(b'"', b"") + b'","type":"hello"}'
    ),
)


@given(lines)
@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_fuzzed_lines_always_get_one_typed_answer(stdio_exod: StdioExod, line: bytes) -> None:
    if not line.strip():
        return  # blank lines are skipped by design: no answer
    stdio_exod.send(line)
    reply = stdio_exod.answer()
    assert set(reply) == {"id", "ok", "result", "error"}
    if not reply["ok"]:
        assert reply["error"]["code"] in TYPED | {"bad_config"}, reply


@given(
    st.lists(st.binary(max_size=40).map(lambda b: b.replace(b"\n", b"")), max_size=8),
    st.lists(st.integers(min_value=1, max_value=50), min_size=1, max_size=10),
)
@settings(max_examples=EXAMPLES, deadline=None)
def test_read_lines_splits_any_chunking_and_drops_overlong_lines_whole(lines: list[bytes], cuts: list[int]) -> None:
    import asyncio

    from exo_core.server.stdio import read_lines

    limit = 20
    data = b"".join(line + b"\n" for line in lines)
    expected = [None if len(line) > limit else line for line in lines]

    async def run() -> list[bytes | None]:
        reader = asyncio.StreamReader()
        pos, i = 0, 0
        while pos < len(data):
            step = cuts[i % len(cuts)]
            reader.feed_data(data[pos : pos + step])
            pos, i = pos + step, i + 1
        reader.feed_eof()
        return [line async for line in read_lines(reader, limit)]

    assert asyncio.run(run()) == expected
