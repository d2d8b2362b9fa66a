"""The answer benchmark's question set, halves and scoring rule (benchmarks/bench_store_answers.py, issue 18).

The benchmark itself needs the local model and minutes a question; this checks
what it is built on: the set's size per kind, the halves fixed by position,
the beliefs written in the store's own format, and the transcript parser and
scorer on `exo chat`'s real output format (exo_core/client/linechat.py).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchmarks import bench_store_answers as bench
from exo_core.store import Node, init_store
from exo_core.store.lint import lint_store


@pytest.fixture(scope="module")
def data() -> dict:
    return json.loads(bench.DATA.read_text(encoding="utf-8"))


def test_the_set_has_what_issue_18_asks_and_halves_split_each_kind(data: dict) -> None:
    questions = bench.load_questions(data)
    kinds = {k: [q for q in questions if q["kind"] == k] for k in bench.KINDS}
    assert len(kinds["store"]) >= 20 and len(kinds["general"]) >= 10 and len(kinds["file"]) >= 2
    assert len(data["nodes"]) >= 6 and "todo.txt" in data["workspace"]
    for kind, items in kinds.items():
        held = [q for q in items if q["half"] == bench.HELD_OUT]
        assert len(held) == len(items) // 2, kind
        assert [q["half"] for q in items][:2] == ["open", bench.HELD_OUT]
        assert [q["id"] for q in items] == sorted(q["id"] for q in items)
    assert [q["kind"] for q in questions][:3] == ["store", "general", "file"]
    assert len({q["q"] for q in questions}) == len(questions)


def test_the_beliefs_are_valid_store_nodes(tmp_path: Path, data: dict) -> None:
    from exo_core.ledger import create_signing_key

    signer = create_signing_key(tmp_path / "keys")
    store = init_store(tmp_path / "store", owner_key_ids=[signer.key_id])
    for item in data["nodes"]:
        store.write_node(
            Node(
                id=item["id"],
                title=item["title"],
                type=item["type"],
                domain=item["id"].split("/", 1)[0],
                summary=item["summary"],
                load_when=item["load_when"],
                confidence="high",
                stability="durable",
                valid_from="2025-01-01",
                body="\n" + item["body"] + "\n",
            )
        )
    report = lint_store(store.root)
    assert not [f for f in report.findings if f.severity == "error"], report.findings


def test_every_store_answer_is_in_a_belief_and_every_file_answer_in_the_file(data: dict) -> None:
    beliefs = " ".join(n["summary"] + " " + n["body"] for n in data["nodes"])
    todo = data["workspace"]["todo.txt"]
    for item in data["questions"]["store"]:
        assert bench.matches(beliefs, item["expect"]), item["q"]
    for item in data["questions"]["file"]:
        assert bench.matches(todo, item["expect"]), item["q"]


TRANSCRIPT = """session ses_1 — /help for commands
> Read the file todo.txt and tell me the first item on it.
  ⚙ read_file {"path": "todo.txt"}
  │ buy oat milk
  │ call the plumber
  ✓ read_file (12 ms)
The first item is to buy oat milk.
"""


def test_the_transcript_keeps_the_assistant_s_text_and_the_tools_it_called() -> None:
    parsed = bench.parse_transcript(TRANSCRIPT, "Read the file todo.txt and tell me the first item on it.")
    assert parsed == {
        "answer": "The first item is to buy oat milk.",
        "tools": ["read_file"],
        "stop": "end",
        "error": "",
    }
    assert bench.score("file", ["oat milk"], parsed)
    assert not bench.score("general", ["oat milk"], parsed)  # a general question must call no tool
    echoed = bench.parse_transcript(TRANSCRIPT.replace("The first item is to buy oat milk.", "Done."), "x")
    assert not bench.matches(echoed["answer"], ["oat milk"])  # the tool's output is not the answer
    failed = bench.parse_transcript("session s\n> q\n  [turn error: model_error: too long]\n", "q")
    assert failed["stop"] == "error" and "too long" in failed["error"] and not bench.score("store", [], failed)
    late = bench.parse_transcript("session s\n> q\nIlse\n  [turn timeout: no answer within 5 s]\n", "q")
    assert late["stop"] == "timeout" and not bench.score("store", ["ilse"], late)


@pytest.mark.parametrize(
    ("answer", "expect", "right"),
    [
        ("Ilse lives in Porto.", ["porto"], True),
        ("PORTO", ["porto"], True),
        ("Your birthday is on 14 March.", ["14", "march"], True),
        ("Your birthday is in March.", ["14", "march"], False),
        ("You cycle.", ["cycl|bicycle|bike"], True),
        ("I don't know.", ["no|not|vegetarian"], False),  # 'know' does not start with 'no' at a word start
        ("Not at all.", ["no|not|vegetarian"], True),
        ("Tomasz", ["tomasz"], True),
        ("Dr. Oka", ["okafor"], False),
    ],
)
def test_keywords_match_at_a_word_start_case_insensitive(answer: str, expect: list[str], right: bool) -> None:
    assert bench.matches(answer, expect) is right


def test_results_from_rows_keep_held_out_answers_apart() -> None:
    rows = [
        {
            "id": "store-00",
            "kind": "store",
            "half": "open",
            "answer": "Porto",
            "tools": [],
            "stop": "end",
            "right": True,
            "seconds": 3.0,
        },
        {
            "id": "store-01",
            "kind": "store",
            "half": "heldout",
            "answer": "secret",
            "tools": [],
            "stop": "end",
            "right": False,
            "seconds": 5.0,
        },
    ]
    result, held = bench.summarize(rows, {"board": "standard"})
    assert result["halves"]["open"]["right"] == 1 and result["halves"]["heldout"]["right"] == 0
    assert result["held_out_half"] == "heldout" and "secret" not in json.dumps(result)
    assert [r["answer"] for r in held] == ["secret"]
