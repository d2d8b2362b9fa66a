"""The §20 pipeline over a real store: real FTS5, real ledger, real sessions.sqlite."""

from __future__ import annotations

import asyncio
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from retrieval_kit import HashEmbedder, add_turns, make_store, node

from exo_core.ledger import Ledger, Signer, create_signing_key
from exo_core.retrieval import Doc, DocIndex, RetrievalSettings, Retriever, StoreMemory
from exo_core.retrieval.lexical import match_expression
from exo_core.retrieval.memory import PACK_HEADING, PROMPT_FLOOR, RECALL_HEADING, without_comments
from exo_core.retrieval.second_person import addressed
from exo_core.retrieval.rank import RRF_K
from exo_core.store import Store
from exo_edge.vectors import VectorIndex

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture()
def signer(tmp_path: Path) -> Signer:
    return create_signing_key(tmp_path / "home" / "keys")


@pytest.fixture()
def store(tmp_path: Path, signer: Signer) -> Store:
    return make_store(tmp_path / "store", signer)


@pytest.fixture()
def sessions(tmp_path: Path) -> Path:
    db = tmp_path / "home" / "sessions.sqlite"
    add_turns(
        db,
        "old",
        [("user", "I planted tomatoes in the garden last spring"), ("assistant", "Tomatoes need plenty of sun")],
    )
    add_turns(db, "now", [("user", "What about my tomatoes in the garden?")])
    return db


def _retriever(store: Store, sessions: Path | None = None, **kw: object) -> Retriever:
    return Retriever(store, sessions_db=sessions, today=lambda: "2025-01-01", **kw)  # type: ignore[arg-type]


def test_sources_carry_ids_and_kinds_and_the_current_session_is_excluded(store: Store, sessions: Path) -> None:
    r = _retriever(store, sessions)
    got = r.retrieve("tomatoes garden", session_id="now", record=False)
    kinds = {b.id: b.kind for b in got.packed.blocks}
    assert kinds and all(k == "turn" for k in kinds.values())
    assert all(i.startswith("turn:old:") for i in kinds)
    vim = r.retrieve("vim editor tips", record=False)
    ids = {b.id: b.kind for b in vim.packed.blocks}
    assert ids["work/editor"] == "node"
    assert any(k == "item" for k in ids.values())
    r.close()


def test_router_pins_come_first_in_full(store: Store) -> None:
    got = _retriever(store).retrieve("please git push the branch", record=False)
    first = got.packed.blocks[0]
    assert (first.id, first.pinned, first.form) == ("rules/ask-before-push", True, "full")
    assert got.pinned == ("rules/ask-before-push",)


def test_superseded_and_expired_beliefs_and_graph_expansion(store: Store) -> None:
    r = _retriever(store)
    ids = [i for i, _ in r.retrieve("formal tone in replies", record=False).ranking]
    assert "taste/old-tone" not in ids and "taste/casual-tone" in ids
    past = [i for i, _ in r.retrieve("what tone did I want before", record=False).ranking]
    assert "taste/old-tone" in past
    emoji = [i for i, _ in r.retrieve("emoji in chat", record=False).ranking]
    assert "taste/no-emoji" in emoji  # the contradicting side comes along
    editor = dict(r.retrieve("vim", record=False).ranking)
    assert editor["work/keyboard"] == pytest.approx(editor["work/editor"] * 0.5)


def test_private_nodes_hidden_from_agents_and_never_their_raw_text(store: Store) -> None:
    r = _retriever(store)
    person = r.retrieve("private health matter", record=False)
    assert "self/health" in {b.id for b in person.packed.blocks}
    assert "Raw private detail" not in person.render()
    agent = r.retrieve("private health matter", scope="agent:helper", record=False)
    assert "self/health" not in {i for i, _ in agent.ranking}
    assert not r.lexical.search("detail leak", 10)  # the private body is not even indexed


def test_unchanged_documents_are_not_rewritten_and_changes_are_picked_up(store: Store, sessions: Path) -> None:
    r = _retriever(store, sessions)
    assert r.refresh()
    assert not r.refresh()  # nothing changed: not even re-read
    docs = r.documents()
    assert r.lexical.sync(docs) == (0, 0)
    assert len({d.id for d in docs}) == len(docs)
    assert [d.hash for d in docs] == [d.hash for d in r.documents()]
    store.write_node(node("work/editor", "Editor", "Switched to the helix editor"))
    assert r.refresh()
    assert [i for i, _ in r.lexical.search("helix", 5)] == ["work/editor"]


def test_deleting_the_indexes_and_rebuilding_gives_the_same_rankings(store: Store, sessions: Path) -> None:
    queries = ["vim editor", "tone of replies", "tomatoes", "emoji", "git push"]

    def rankings() -> list[object]:
        dense = VectorIndex(store.root / "indexes" / "vectors.sqlite", HashEmbedder())
        r = _retriever(store, sessions, dense=dense)
        out = [(r.retrieve(q, record=False).ranking, r.retrieve(q, record=False).render()) for q in queries]
        r.close()
        return out

    first = rankings()
    shutil.rmtree(store.root / "indexes")
    assert rankings() == first


def test_vectors_are_embedded_once_and_a_model_change_rebuilds(tmp_path: Path) -> None:
    emb = HashEmbedder()
    index = VectorIndex(tmp_path / "v.sqlite", emb)
    docs = [("a", "h1", "alpha beta"), ("b", "h2", "gamma"), ("c", "h1", "alpha beta")]
    counts = index.sync(docs)
    assert (counts.embedded, counts.reused, emb.embedded) == (2, 1, 2)  # same text under two ids: once
    assert index.sync(docs).embedded == 0 and emb.embedded == 2
    partial = index.sync(docs + [("d", "h3", "delta"), ("e", "h4", "eps")], max_new=1)
    assert partial.pending == 1
    assert [i for i, _ in index.search("gamma", 1)] == ["b"]
    other = VectorIndex(tmp_path / "v.sqlite", HashEmbedder("hash-v2"))
    assert other.sync(docs).rebuilt and other.count() == 3


def test_a_retrieval_ledger_entry_names_the_ids_and_token_count(store: Store, signer: Signer) -> None:
    ledger = Ledger.open_store(store.root, signer=signer)
    try:
        r = _retriever(store, log=ledger.append)
        got = r.retrieve("vim editor")
        entry = list(ledger.entries(kind="retrieval"))[-1]
        assert entry.body["tokens"] == got.packed.tokens
        assert entry.body["node_ids"] == got.packed.ids("node")
        assert entry.body["item_ids"] == got.packed.ids("item")
        assert "vim" not in json.dumps(entry.body)  # ids only, never the text
    finally:
        ledger.close()


def test_memory_provider_puts_the_pack_first_then_the_recalled_blocks(store: Store, sessions: Path) -> None:
    memory = StoreMemory(_retriever(store, sessions))
    block = asyncio.run(memory.system_block("now", "tell me about vim"))
    assert block.startswith(PACK_HEADING + "\n" + addressed(without_comments(store.pack_text())))
    assert block.index(RECALL_HEADING) < block.index("[work/editor]")
    recalled = asyncio.run(memory.recall("vim", limit=1))
    assert recalled.count("\n[") == 0 and recalled.startswith("[")
    asyncio.run(memory.on_exchange("now", "q", "a"))
    memory.close()


def test_the_recall_tool_leaves_the_asking_sessions_own_turns_out(store: Store, sessions: Path) -> None:
    """The person's current question came back from ``recall`` as a past turn (docs/benchmarks.md §15)."""
    memory = StoreMemory(_retriever(store, sessions))
    try:
        everyone = asyncio.run(memory.recall("tomatoes garden", limit=5))
        own_left_out = asyncio.run(memory.recall_for("tomatoes garden", limit=5, session_id="now"))
    finally:
        memory.close()
    assert "What about my tomatoes" in everyone
    assert "What about my tomatoes" not in own_left_out
    assert "I planted tomatoes" in own_left_out


def test_the_prompt_leaves_out_blocks_under_half_the_best_and_the_ledger_lists_only_what_it_showed(
    store: Store, sessions: Path, signer: Signer
) -> None:
    """A small model copies what it is shown: weak matches stay out of the prompt (docs/retrieval.md, "In the prompt")."""
    everything = _retriever(store, sessions).retrieve("what editor do I use", record=False)
    scores = {b.id: b.score for b in everything.packed.blocks}
    best = max(scores.values())
    strong = {i for i, score in scores.items() if score >= PROMPT_FLOOR * best}
    weak = set(scores) - strong
    assert "work/editor" in strong and weak, scores
    ledger = Ledger.open_store(store.root, signer=signer)
    memory = StoreMemory(_retriever(store, sessions, log=ledger.append))
    try:
        parts = asyncio.run(memory.system_parts("now", "what editor do I use"))
        recalled = asyncio.run(memory.recall("what editor do I use", limit=5))
        entries = list(ledger.entries(kind="retrieval"))
    finally:
        memory.close()
        ledger.close()
    shown = "\n".join(parts.recalled)
    assert "[work/editor]" in shown and not any(i in shown for i in weak)
    assert set(entries[0].body["node_ids"] + entries[0].body["item_ids"]) == strong
    assert all(i in recalled for i in weak)  # the recall tool is a search: it shows every match


_queries = st.one_of(
    st.binary(max_size=200).map(lambda b: b.decode("utf-8", "surrogateescape")),
    st.text(max_size=200),
    st.sampled_from(['"', "NEAR(a b)", "a OR", "*", "-x", "^", "col:x"]),
)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(_queries)
def test_a_query_of_any_bytes_is_safe(store: Store, query: str) -> None:
    index = DocIndex(":memory:")
    index.sync([Doc("d/a", "node", title="alpha", body="beta gamma"), Doc("x1", "item", title="delta")])
    expression = match_expression(query)
    assert expression is None or all(part.startswith('"') for part in expression.split(" OR "))
    assert isinstance(index.search(query, 5), list)
    got = _retriever(store).retrieve(query, record=False)
    assert got.packed.tokens <= got.packed.budget


def test_exo_recall_prints_ids_kinds_scores_and_tokens(store: Store, tmp_path: Path) -> None:
    home = tmp_path / "home"
    env = {"PYTHONPATH": str(REPO), "EXO_HOME": str(home), "PATH": "/usr/bin:/bin"}
    cmd = [sys.executable, "-m", "exo_core.cli", "recall", "vim", "editor", "--store", str(store.root), "--no-embed"]
    out = subprocess.run(cmd + ["--json"], capture_output=True, text=True, env=env, cwd=tmp_path, timeout=60)
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    assert data["tokens"] <= data["budget"] and not data["embeddings"]
    assert {"id", "kind", "score", "tokens", "text"} <= set(data["blocks"][0])
    text = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=tmp_path, timeout=60)
    assert "work/editor" in text.stdout and "tokens" in text.stdout
    bad = subprocess.run(cmd + ["--budget", "0"], capture_output=True, text=True, env=env, cwd=tmp_path, timeout=60)
    assert bad.returncode == 2 and "budget" in bad.stderr


def test_the_packs_comments_are_for_the_person_and_stay_out_of_the_prompt(store: Store) -> None:
    # the template's guidance is a comment: a small model copied such page text as its answer
    assert "<!--" in store.pack_text() and "reads on every request" in store.pack_text()
    page = (
        "# Pack\n\n<!-- a note to myself\nover two lines -->\n\n\n## Who I am\n\n- Name: Sam\n\n"
        "<!-- exo:learned:begin -->\n## Learned taste\n\n- short answers\n<!-- exo:learned:end -->\n"
        "<!-- never closed"
    )
    (store.root / "pack.md").write_text(page, encoding="utf-8")
    memory = StoreMemory(_retriever(store))
    block = asyncio.run(memory.system_block("now", "vim"))
    memory.close()
    assert "<!--" not in block and "note to myself" not in block and "never closed" not in block
    assert "# Pack\n\n## Who you are\n\n- Name: Sam\n\n## Learned taste\n\n- short answers" in block
    assert without_comments("<!-- only a comment -->") == ""


def test_a_broken_store_file_leaves_the_pack_and_no_recall(store: Store, tmp_path: Path) -> None:
    memory = StoreMemory(_retriever(store))
    (store.root / "work" / "broken.md").write_text("---\nid: [not closed\n", encoding="utf-8")
    block = asyncio.run(memory.system_block("now", "vim"))
    assert block == PACK_HEADING + "\n" + addressed(without_comments(store.pack_text())) + "\n"
    memory.close()


def test_the_current_sessions_turns_never_take_a_candidates_place(store: Store, tmp_path: Path) -> None:
    db = tmp_path / "home" / "sessions.sqlite"
    add_turns(db, "old", [("user", "my tomatoes finally ripened")])
    add_turns(db, "now", [("user", f"tomatoes tomatoes question {n}") for n in range(15)])
    got = _retriever(store, db).retrieve("tomatoes", session_id="now", record=False)
    assert [i for i, _ in got.ranking] == ["turn:old:1"]


@pytest.mark.parametrize(
    "settings", [RetrievalSettings(context=()), RetrievalSettings(weights=(1.0, 1.0), rrf_k=RRF_K, context=())]
)
def test_without_an_embedder_or_the_context_stage_the_ranking_is_bm25s(
    store: Store, tmp_path: Path, settings: RetrievalSettings
) -> None:
    db = tmp_path / "home" / "sessions.sqlite"
    add_turns(db, "old", [("user", f"the garden {'tomatoes ' * n}and beans {n}") for n in range(1, 15)])
    r = _retriever(store, db, settings=settings)
    got = [i for i, _ in r.retrieve("tomatoes in the garden", record=False).ranking]
    assert got == [i for i, _ in r.lexical.search("tomatoes in the garden", settings.depth)]
    assert len(got) == settings.depth  # the top ``depth`` of the one list, in its order


def test_a_lone_bm25_match_keeps_its_weight_in_the_fusion(store: Store, tmp_path: Path) -> None:
    # BM25 matches one turn only: that list was read to its end, so it is sure of its one
    # document (confidence 1), not a flat list that cannot tell its candidates apart.
    db = tmp_path / "home" / "sessions.sqlite"
    add_turns(
        db,
        "old",
        [
            ("user", "when does my milk go off"),
            ("user", "does my car need oil when cold"),
            ("user", "passport renewed, valid to 2031"),
        ],
    )
    dense = VectorIndex(tmp_path / "v" / "v.sqlite", HashEmbedder("hash-v1"))
    r = _retriever(store, db, dense=dense, settings=RetrievalSettings(weights=(0.5, 0.5)))
    query = "when does my passport expire"
    r.refresh()
    assert [i for i, _ in r.lexical.search(query, 40)] == ["turn:old:3"]
    assert dense.search(query, 40)[0][0] == "turn:old:1"  # the embedding list prefers another turn
    assert r.retrieve(query, record=False).ranking[0][0] == "turn:old:3"
    r.close()


def test_the_fused_ranking_is_deterministic_and_weighs_the_two_lists(store: Store, tmp_path: Path) -> None:
    db = tmp_path / "home" / "sessions.sqlite"
    add_turns(
        db,
        "old",
        [
            ("user", f"note {n}: {w}")
            for n, w in enumerate(
                ["tomatoes in the garden", "garden beans", "a red sunset", "tomato soup recipe", "vim editor"]
            )
        ],
    )

    def ranking(weights: tuple[float, float], where: str) -> list[str]:
        dense = VectorIndex(tmp_path / where / "v.sqlite", HashEmbedder("hash-v1"))
        r = _retriever(store, db, dense=dense, settings=RetrievalSettings(weights=weights))
        out = [i for i, _ in r.retrieve("tomatoes garden", record=False).ranking]
        r.close()
        return out

    assert ranking((0.4, 0.6), "a") == ranking((0.4, 0.6), "b")  # a fresh index ranks the same
    lexical = ranking((1.0, 0.0), "c")
    semantic = ranking((0.0, 1.0), "d")
    assert lexical[0] == "turn:old:1" and lexical != semantic  # the weights decide between the lists


def test_the_turn_after_a_match_is_recalled_through_its_neighbours(store: Store, tmp_path: Path) -> None:
    db = tmp_path / "home" / "sessions.sqlite"
    add_turns(
        db,
        "trip",
        [
            ("user", "Where should we go hiking in the Alps this summer?"),
            ("assistant", "Try the Eiger trail near Grindelwald."),
            ("user", "Is hiking in the Alps hard with kids?"),
            ("user", "Something unrelated about bread."),
        ],
    )
    add_turns(db, "other", [("user", "A note on sourdough starters.")])  # message 5: next id, other session
    add_turns(db, "now", [("user", "hiking Alps")])
    plain = (
        _retriever(store, db, settings=RetrievalSettings(context=()))
        .retrieve("hiking Alps", session_id="now", record=False)
        .ranking
    )
    got = _retriever(store, db).retrieve("hiking Alps", session_id="now", record=False).ranking
    before, scores = dict(plain), dict(got)
    assert set(before) == {"turn:trip:1", "turn:trip:3"}  # the answer, turn 2, shares no word with the query
    assert {i for i, _ in got[:2]} == set(before) and got[2][0] == "turn:trip:2"
    # turn 2 sits between the two matches and borrows half of each; turn 1 is two from turn 3
    assert scores["turn:trip:2"] == pytest.approx(0.5 * before["turn:trip:1"] + 0.5 * before["turn:trip:3"])
    assert scores["turn:trip:4"] == pytest.approx(0.5 * before["turn:trip:3"])  # three from turn 1: nothing
    assert scores["turn:trip:1"] == pytest.approx(before["turn:trip:1"] + 0.25 * before["turn:trip:3"])
    assert not any(i.startswith(("turn:other:", "turn:now:")) for i in scores)  # other sessions borrow nothing


def test_neighbours_follow_message_order_past_nine_turns(store: Store, tmp_path: Path) -> None:
    db = tmp_path / "home" / "sessions.sqlite"
    add_turns(
        db,
        "long",
        [("user", f"small talk number {n}") for n in range(1, 9)]
        + [
            ("user", "the glacier walk was cold"),
            ("assistant", "Bring warm gloves then."),
            ("user", "another glacier next year"),
            ("assistant", "small talk again"),
        ],
    )
    r = _retriever(store, db)
    assert r.refresh()
    assert r.lexical.session_turns(["turn:long:9"]) == {"long": [f"turn:long:{n}" for n in range(1, 13)]}
    got = [i for i, _ in r.retrieve("glacier", record=False).ranking]
    assert set(got[:2]) == {"turn:long:9", "turn:long:11"} and got[2] == "turn:long:10"  # 10 sits between them
    assert r.lexical.session_turns(["work/editor", "turn:none:1"]) == {}  # nodes and unknown ids have no session
