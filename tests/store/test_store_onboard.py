"""Onboarding: protocol questions answered by any client build a new person's store, with no model."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from exo_testkit import write_script
from hypothesis import given, settings
from hypothesis import strategies as st
from store_fixtures import ledger, signer, store  # noqa: F401  (pytest fixtures)

from exo_core.client import ExoClient
from exo_core.errors import BadBodyError, ConflictError, NotFoundError
from exo_core.ledger import Ledger
from exo_core.store import Store
from exo_core.store.lint import lint_store
from exo_core.store.verify import verify_store
from exo_core.store.onboard import QUESTIONS, InterviewState, answer, apply_plan, next_question, plan

REPO = Path(__file__).resolve().parents[2]
FULL: list[tuple[int | None, str | None]] = [
    (None, "Sam"),
    (2, None),
    (1, None),
    (1, None),
    (2, None),
    (None, "Never book travel without showing me the price. password: hunter2abc"),
    (None, "English, Dutch"),
    (1, None),
]


def _run(replies: list[tuple[int | None, str | None]]) -> InterviewState:
    state = InterviewState()
    for option, text in replies:
        state = answer(state, option, text)
    return state


def test_plan_writes_a_store_that_lints(store: Store) -> None:
    state = _run(FULL)
    assert next_question(state) is None
    written = apply_plan(store, plan(state, today="2025-03-01"))
    assert len(written) == 7
    report = lint_store(store.root)
    assert report.clean, [str(f) for f in report.findings]
    pack = (store.root / "pack.md").read_text()
    assert "Name: Sam" in pack and "[[taste/tone]]" in pack
    rule = store.read_node("rules/standing-rule")
    assert "hunter2abc" not in rule.summary and "[redacted:password]" in rule.summary
    assert store.router("taste").pins("please draft a reply") == ("taste/answer-length", "taste/tone")
    with pytest.raises(ConflictError):
        apply_plan(store, plan(state))  # never over what the person already has


def test_a_store_made_with_the_older_blank_pack_can_still_be_onboarded(store: Store) -> None:
    older = subprocess.run(
        ["git", "show", "34b65a9:store_template/pack.md"], cwd=REPO, capture_output=True, text=True, check=False
    )
    if older.returncode != 0:
        pytest.skip(f"this checkout has no commit 34b65a9 to read the older template from: {older.stderr.strip()}")
    (store.root / "pack.md").write_text(older.stdout, encoding="utf-8")
    written = apply_plan(store, plan(_run(FULL), today="2025-03-01"))
    assert store.root / "pack.md" in written
    assert "Name: Sam" in (store.root / "pack.md").read_text()


def test_skips_start_over_and_bad_answers() -> None:
    state = _run(FULL[:5])
    with pytest.raises(BadBodyError) as info:
        answer(state, 2)
    assert info.value.field == "option"
    for option, text in ((None, "   "), (None, "x" * 501), (1, "both")):
        with pytest.raises(BadBodyError):
            answer(state, option, text)
    with pytest.raises(BadBodyError):
        answer(_run(FULL[:2]), text="free text is not an option here")
    state = answer(answer(state, 1), 1)
    assert answer(state, 2) == InterviewState()
    ids = {n.id for n in plan(answer(state, 1)).nodes}
    assert "rules/standing-rule" not in ids and "self/languages" not in ids


@given(st.lists(st.tuples(st.integers(-2, 7), st.one_of(st.none(), st.text(max_size=30))), max_size=30))
@settings(max_examples=200)
def test_any_reply_sequence_is_answered_or_refused(replies: list[tuple[int, str | None]]) -> None:
    state = InterviewState()
    for option, text in replies:
        if next_question(state) is None:
            break
        try:
            state = answer(state, option if text is None else None, text)
        except BadBodyError as exc:
            assert exc.field in ("option", "text")
    if next_question(state) is None:
        plan(state)


def _init_home(home: Path) -> Path:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    env.pop("EXO_HOME", None)
    done = subprocess.run(
        [sys.executable, "-m", "exo_core.cli", "init", "--home", str(home)],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    return home / "store"


async def _answer_interview(url: str, replies: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """A protocol client: start the interview and answer each question.asked by its text."""
    seen: list[str] = []
    async with ExoClient(url) as client, ExoClient(url) as rival:
        since = (await client.hello())["last_seq"]
        session = (await client.request("session.create", {"title": "Onboarding"}))["session"]["id"]
        with pytest.raises(NotFoundError):
            await client.request("store.onboard", {"session": "nope"})
        await client.request("store.onboard", {"session": session})
        with pytest.raises(ConflictError):  # one interview at a time
            await client.request("store.onboard", {"session": session})
        async for event in client.events(since=since, session=session):
            if event.type == "notice":
                seen.append("notice: " + event.body["text"])
            if event.type == "ui.panel" and event.body["kind"] == "onboarding":
                return event.body["data"], seen
            if event.type != "question.asked":
                continue
            # The confirm step lists what will be written below its first line: key by that line.
            text, qid = event.body["text"].split("\n")[0], event.body["question_id"]
            if text.startswith("Write this"):
                assert "- name: Sam" in event.body["text"] and "standing rule: Always show me" in event.body["text"]
            seen.append(text)
            if text.startswith("What should"):  # a wrong button press is refused, the question stays open
                with pytest.raises(BadBodyError):
                    await client.request("question.answer", {"question_id": qid, "option": 9})
            reply = replies[text][0] if isinstance(replies[text], list) else replies[text]
            if isinstance(replies[text], list) and len(replies[text]) > 1:
                replies[text].pop(0)
            await client.request("question.answer", {"question_id": qid, **reply})
            with pytest.raises(ConflictError):  # the first answer won
                await rival.request("question.answer", {"question_id": qid, "option": 1})
    raise AssertionError("the event stream ended")


def test_protocol_client_onboards_through_a_real_exod_with_no_model(
    tmp_path: Path, exod_factory: Any, workspace: Path
) -> None:
    home = tmp_path / "home"
    store_root = _init_home(home)
    exod = exod_factory(home, write_script(tmp_path / "unused.json", []), workspace, ["--model", "none"])
    q = {q.step: q.text for q in QUESTIONS}
    replies: dict[str, Any] = {
        q["name"]: {"text": "Sam"},
        q["focus"]: {"option": 1},
        q["length"]: {"option": 1},
        q["tone"]: {"option": 2},
        q["approval"]: {"option": 1},
        # Too long for the interview: reported as a notice and asked again.
        q["rule"]: [{"text": "x" * 501}, {"text": "Always show me the price first."}],
        q["languages"]: {"option": 1},
        q["confirm"]: {"option": 1},
    }
    data, seen = asyncio.run(_answer_interview(exod.url, replies))
    assert data["ok"], data
    assert sorted(data["written"]) == [
        "pack.md",
        "rules/approval.md",
        "rules/standing-rule.md",
        "taste/answer-length.md",
        "taste/tone.md",
        "work/focus.md",
    ]
    assert seen.count(q["rule"]) == 2 and any(s.startswith("notice: type an answer") for s in seen)
    assert [s for s in seen if not s.startswith("notice")] == [*q.values()][:5] + [q["rule"]] + [*q.values()][5:]
    report = lint_store(store_root)
    assert report.clean, [str(f) for f in report.findings]
    assert "Name: Sam" in (store_root / "pack.md").read_text()
    led = Ledger.open(store_root / "ledger.sqlite")
    said = [(e.kind, e.body["text"]) for e in led.entries() if e.body.get("source") == "onboarding"]
    led.close()
    assert said == [("utterance", "Call me Sam."), ("rule", "Always show me the price first.")]
    assert verify_store(store_root, live=True).ok

    async def again() -> str | None:
        async with ExoClient(exod.url) as client:
            session = (await client.request("session.create", {}))["session"]["id"]
            with pytest.raises(ConflictError, match="already edited"):
                await client.request("store.onboard", {"session": session})
            # This exod truly has no model: a chat turn ends with a clear error.
            await client.request("turn.send", {"session": session, "text": "hello"})
            async for event in client.events(since=0, session=session):
                if event.type == "turn.completed":
                    return event.body.get("error")
        return None

    assert "no model is configured" in (asyncio.run(again()) or "")


def test_exo_onboard_in_a_terminal_starts_its_own_exod(tmp_path: Path) -> None:
    """No exod running and no model configured: `exo onboard` starts one and answers from stdin."""
    home = tmp_path / "home"
    store_root = _init_home(home)
    env = {**os.environ, "PYTHONPATH": str(REPO), "EXO_HOME": str(home)}
    env.pop("EXO_MODEL", None)
    replies = "Sam\n9\n2\n1\n1\n1\n1\n1\n1\n"
    proc = subprocess.run(
        [sys.executable, "-m", "exo_core.cli", "onboard"],
        input=replies,
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=180,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "What should Exo call you?" in proc.stdout and "1 to 5" in proc.stdout
    assert f"wrote 5 files into {store_root}" in proc.stdout
    report = lint_store(store_root)
    assert report.clean and not report.findings
    assert not (home / "run" / "exod.sock").exists()  # the exod it started is stopped again


async def test_exo_onboard_holds_lines_typed_ahead_up_to_its_bound_and_refuses_more() -> None:
    """Lines wait for their questions in a bounded list (``TYPED_AHEAD``): the bound itself is kept, one more is refused.

    At the seam the command reads: its inbox of typed lines and events, with no question open yet.
    """
    from exo_core.cli.onboard_cmd import TYPED_AHEAD, _converse
    from exo_core.errors import UsageError
    from exo_core.protocol import Event

    done = Event("e1", 1, "s1", "ui.panel", "2026-01-01T00:00:00.000Z", {"kind": "onboarding", "data": {"ok": True}})
    held: asyncio.Queue[tuple[str, Any]] = asyncio.Queue(maxsize=TYPED_AHEAD + 1)
    for n in range(TYPED_AHEAD):
        held.put_nowait(("line", f"answer {n}\n"))
    held.put_nowait(("event", done))
    assert await _converse(None, held) == 0  # all TYPED_AHEAD lines were kept until the interview ended

    refused: asyncio.Queue[tuple[str, Any]] = asyncio.Queue(maxsize=TYPED_AHEAD + 1)
    for n in range(TYPED_AHEAD + 1):
        refused.put_nowait(("line", f"answer {n}\n"))
    with pytest.raises(UsageError, match=f"more than {TYPED_AHEAD} lines were typed") as caught:
        await _converse(None, refused)
    assert "Nothing was written" in caught.value.message


def test_exo_onboard_stops_with_a_clear_error_when_exod_dies_mid_interview(
    tmp_path: Path, exod_factory: Any, workspace: Path
) -> None:
    """The interview lives in exod: when exod is SIGKILLed, `exo onboard` says so and exits; nothing is written."""
    home = tmp_path / "home"
    store_root = _init_home(home)
    pack_before = (store_root / "pack.md").read_bytes()
    exod = exod_factory(home, write_script(tmp_path / "unused.json", []), workspace, ["--model", "none"])
    env = {**os.environ, "PYTHONPATH": str(REPO), "EXO_HOME": str(home)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "exo_core.cli", "onboard", "--no-spawn"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        cwd=tmp_path,
    )
    try:
        assert proc.stdout is not None
        for line in proc.stdout:
            if "What should Exo call you?" in line:
                break
        exod.kill()
        assert proc.stdin is not None
        proc.stdin.write("Sam\n")  # the person answers after exod died; stdin stays open
        proc.stdin.flush()
        proc.wait(timeout=120)
        assert proc.stderr is not None
        err = proc.stderr.read()
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode != 0
    assert "error [broken]" in err and "exod" in err, err
    assert (store_root / "pack.md").read_bytes() == pack_before


def test_exo_onboard_drops_a_question_another_screen_answered(tmp_path: Path) -> None:
    """A question answered elsewhere is dropped at once; the next typed line answers the next question."""
    import threading
    import time

    home = tmp_path / "home"
    store_root = _init_home(home)
    env = {**os.environ, "PYTHONPATH": str(REPO), "EXO_HOME": str(home)}
    env.pop("EXO_MODEL", None)
    proc = subprocess.Popen(
        [sys.executable, "-m", "exo_core.cli", "onboard"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        cwd=tmp_path,
    )
    lines: list[str] = []
    reader = threading.Thread(target=lambda: lines.extend(iter(proc.stdout.readline, "")), daemon=True)
    reader.start()
    try:
        deadline = time.monotonic() + 120
        while not any("What should Exo call you?" in line for line in lines):
            assert proc.poll() is None and time.monotonic() < deadline, "".join(lines) + proc.stderr.read()
            time.sleep(0.05)

        async def answer_elsewhere() -> None:
            async with ExoClient(f"unix://{home / 'run' / 'exod.sock'}") as client:
                page = await client.request("events.subscribe", {"since": 0, "limit": 1000})
                asked = [e for e in page["events"] if e["type"] == "question.asked"]
                await client.request(
                    "question.answer", {"question_id": asked[-1]["body"]["question_id"], "text": "Alex"}
                )

        asyncio.run(answer_elsewhere())
        while not any("answered on another screen: Alex" in line for line in lines):
            assert proc.poll() is None and time.monotonic() < deadline, "".join(lines)
            time.sleep(0.05)
        proc.stdin.write("1\n1\n1\n1\n1\n1\n1\n")
        proc.stdin.close()
        proc.wait(120)
        err = proc.stderr.read()
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, "".join(lines) + err
    assert "Name: Alex" in (store_root / "pack.md").read_text()


def test_a_declined_interview_question_stops_the_interview_and_writes_nothing(
    tmp_path: Path, exod_factory: Any, workspace: Path
) -> None:
    """Asked again, a client that cannot answer would decline for ever: the interview stops instead."""
    home = tmp_path / "home"
    store_root = _init_home(home)
    pack_before = (store_root / "pack.md").read_text()
    exod = exod_factory(home, write_script(tmp_path / "unused.json", []), workspace, ["--model", "none"])
    q = {q.step: q.text for q in QUESTIONS}
    data, seen = asyncio.run(_answer_interview(exod.url, {q["name"]: {"text": "Sam"}, q["focus"]: {"decline": True}}))
    assert data["ok"] is False and "declined" in data["error"] and "exo onboard" in data["error"]
    assert seen == [q["name"], q["focus"]]
    assert (store_root / "pack.md").read_text() == pack_before
