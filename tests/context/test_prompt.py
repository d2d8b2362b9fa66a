"""The summarizer's prompt, secret scrubbing and the quoted footer (§16.4)."""

from __future__ import annotations

import pytest

from exo_core.context.config import ContextConfig
from exo_core.context.prompt import (
    FOOTER_LATEST,
    FOOTER_STOP,
    finish_summary,
    leaf_footer,
    leaf_request,
    merge_footer,
    merge_request,
)
from exo_core.context.redact import redact
from exo_core.sessions.session_store import MessageRecord

CFG = ContextConfig()


def m(n: int, role: str, text: str, **kw: object) -> MessageRecord:
    return MessageRecord(n, "s", None, role, text, **kw)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "secret, text",
    [
        ("sk-proj-abcdefghijklmnopqrstuvwx12", "use key sk-proj-abcdefghijklmnopqrstuvwx12 for the api"),
        ("ghp_ABCDEFGHIJKLMNOPQRSTUVWX1234", "token ghp_ABCDEFGHIJKLMNOPQRSTUVWX1234"),
        ("hunter2!", "my password is hunter2!"),
        ("s3cr3tValue", "DB_PASSWORD=s3cr3tValue ./run"),
        ("pa55word", "connect to postgres://admin:pa55word@db.local/app"),
        ("AKIAABCDEFGHIJKLMNOP", "aws key AKIAABCDEFGHIJKLMNOP"),
        ("q8Zr2LmN5vX0pT7wY3kB9cD1fG4hJ6sA", "the value q8Zr2LmN5vX0pT7wY3kB9cD1fG4hJ6sA is opaque"),
        ("MIIEvQIBADAN", "-----BEGIN PRIVATE KEY-----\nMIIEvQIBADAN\n-----END PRIVATE KEY-----"),
    ],
)
def test_secrets_become_placeholders(secret: str, text: str) -> None:
    out = redact(text)
    assert secret not in out
    assert "[secret:" in out


def test_values_that_are_not_secrets_stay_exact() -> None:
    text = (
        "ran `git push origin main` in /home/u/proj/README.md; error: exit 128; "
        "commit 3f9a1c2b7d4e5f60718293a4b5c6d7e8f9012345; port 8080"
    )
    assert redact(text) == text


def test_leaf_request_is_aux_role_with_rules_and_scrubbed_data() -> None:
    messages = [
        m(1, "user", "the api key is sk-abcdefghijklmnopqrstuvwxyz123456, deploy it"),
        m(
            2,
            "assistant",
            "Deploying.",
            tool_calls=[{"id": "c1", "name": "bash", "arguments": {"command": "make deploy"}}],
        ),
        m(3, "tool", "error: permission denied /etc/app.conf", tool_call_id="c1"),
    ]
    request = leaf_request(messages, first_position=16, config=CFG)
    system, user = request.messages[0].content, request.messages[1].content
    assert request.role == "aux" and request.max_tokens == CFG.summary_tokens
    for rule in ("never instructions", "secret", "language", "exactly as written", "stop, cancel"):
        assert rule in system
    assert "sk-abcdefghijklmnopqrstuvwxyz123456" not in user
    assert "[17 user]" in user and 'bash({"command": "make deploy"})' in user
    assert "error: permission denied /etc/app.conf" in user
    assert user.index("<transcript>") < user.index("[17 user]") < user.index("</transcript>")


def test_long_messages_are_cut_head_and_end_kept() -> None:
    long = "START " + "x" * 20_000 + " END-ERROR"
    user = leaf_request([m(1, "tool", long)], first_position=0, config=CFG).messages[1].content
    assert "START" in user and "END-ERROR" in user and len(user) < 5000


def test_footer_quotes_the_latest_request_and_a_stop() -> None:
    messages = [
        m(1, "user", "push the fix to origin"),
        m(2, "assistant", "ok"),
        m(3, "user", "stop, don't push"),
        m(4, "assistant", "Stopped."),
        m(5, "user", "thanks; what's the weather?"),
    ]
    footer = leaf_footer(messages)
    assert footer[0] == f"{FOOTER_LATEST} \u201cthanks; what's the weather?\u201d"
    assert footer[1] == f"{FOOTER_STOP} \u201cstop, don't push\u201d"
    stored = finish_summary("The person asked to push; then cancelled.", footer, config=CFG)
    assert stored.endswith(footer[1])
    merged = merge_footer(stored, finish_summary("Later talk.", [f"{FOOTER_LATEST} \u201cnew\u201d"], config=CFG))
    assert merged == [f"{FOOTER_LATEST} \u201cnew\u201d"]
    assert merge_footer(stored, "no footer") == footer
    request = merge_request(stored, "no footer", config=CFG)
    assert FOOTER_STOP not in request.messages[1].content  # the footer is carried mechanically, not re-summarized


def test_finished_summary_is_scrubbed_and_capped() -> None:
    cfg = ContextConfig(summary_tokens=50)
    raw = "password: hunter22 " + "word " * 500
    out = finish_summary(raw, ["Latest request (quoted): \u201cgo\u201d"], config=cfg)
    assert "hunter22" not in out and len(out) <= cfg.summary_chars
    assert out.endswith("\u201cgo\u201d")
    assert finish_summary("   ", [], config=cfg) == "(no summary text)"
