"""Fusion, filters, graph expansion and budget packing, as pure functions."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from exo_core.retrieval import Doc, estimate_tokens, fuse, pack
from exo_core.retrieval.pack import forms
from exo_core.retrieval.rank import CONTEXT, KIND_PRIOR, RRF_K, about_past, context, expand, keep, ranked


def test_rrf_sums_reciprocal_ranks_with_k_60() -> None:
    scores = fuse([[("a", 9.0), ("b", 1.0)], [("b", 0.9), ("c", 0.1)]], weights=(1, 1), depth=10, k=RRF_K)
    assert scores["b"] == 1 / 62 + 1 / 61
    assert scores["a"] == 1 / 61 and scores["c"] == 1 / 62
    assert fuse([[("x", 1.0), ("a", 0.5)]], weights=(1,), depth=1, k=RRF_K) == {"x": 1 / 61}  # only the top depth
    assert KIND_PRIOR["node"] == 1.5 * KIND_PRIOR["item"]


BM25 = [("lex", 12.0), ("both", 9.0), ("deep", 3.0)]  # BM25 scores, best first
COSINE = [("sem", 0.80), ("both", 0.76), ("lex", 0.40)]


def test_score_fusion_divides_each_list_by_its_top_and_scales_it_by_its_confidence() -> None:
    scores = fuse([BM25, COSINE], weights=(0.4, 0.6), depth=2)
    assert set(scores) == {"lex", "both", "sem"}  # the top 2 of each list; "deep" is read, not a candidate
    # floors (last score read over the top): BM25 3/12, cosine 0.40/0.80; confidence = 1 - floor
    bm25, cos = 0.4 * (1 - 3 / 12), 0.6 * (1 - 0.40 / 0.80)
    assert scores["lex"] == pytest.approx(bm25 * 12 / 12 + cos * 0.40 / 0.80)
    assert scores["both"] == pytest.approx(bm25 * 9 / 12 + cos * 0.76 / 0.80)
    assert scores["sem"] == pytest.approx(bm25 * 3 / 12 + cos * 1.0)  # missing from BM25: that list's floor
    assert ranked(scores)[0][0] == "both"  # high in both lists beats the top of either
    assert ranked(fuse([BM25, COSINE], weights=(0.9, 0.1), depth=2))[0][0] == "lex"
    assert ranked(fuse([BM25, COSINE], weights=(0.02, 0.98), depth=2))[0][0] == "sem"


def test_a_flat_list_counts_less_than_a_steep_one_with_the_same_weight() -> None:
    steep = [("p", 10.0), ("q", 8.0), ("r", 1.0)]  # confidence 1 - 1/10 = 0.9
    flat = [("q", 1.0), ("p", 0.85), ("r", 0.8)]  # confidence 1 - 0.8 = 0.2
    scores = fuse([steep, flat], weights=(0.3, 0.7), depth=3)
    assert scores["p"] == pytest.approx(0.3 * 0.9 * 1.0 + 0.7 * 0.2 * 0.85)
    assert scores["q"] == pytest.approx(0.3 * 0.9 * 0.8 + 0.7 * 0.2 * 1.0)
    assert ranked(scores)[0][0] == "p"  # the flat list's weight of 0.7 does not carry its unsure order
    sure = [("q", 1.0), ("p", 0.5), ("r", 0.1)]  # the same order, said surely, wins
    assert ranked(fuse([steep, sure], weights=(0.3, 0.7), depth=3))[0][0] == "q"


def test_a_list_read_to_its_end_has_a_floor_of_zero() -> None:
    only = [("only", 7.0)]  # the one document that matched at all
    cut = fuse([only, COSINE], weights=(0.225, 0.775), depth=3)
    ended = fuse([only, COSINE], weights=(0.225, 0.775), depth=3, ended=[True, False])
    # read to its end, the list's floor is 0: confidence 1, and what it left out scores nothing
    cos = 0.775 * (1 - 0.40 / 0.80)
    assert ended["only"] == pytest.approx(0.225 + cos * 0.40 / 0.80)
    assert ended["sem"] == pytest.approx(cos * 1.0)
    assert ranked(ended)[0][0] == "only"
    # taken as cut at its one entry, its floor is its top: it could not tell anything apart
    assert cut["only"] == pytest.approx(cos * 0.40 / 0.80) and ranked(cut)[0][0] == "sem"
    assert fuse([only, COSINE], weights=(0.225, 0.775), depth=3, ended=[True, True])["lex"] == pytest.approx(
        0.775 * 0.40 / 0.80
    )  # both ended: plain weighted sums of score / top


def test_without_an_embedding_list_the_fusion_is_the_bm25_ranking() -> None:
    for weights in ((0.4, 0.6), (1.0, 1.0)):
        for k in (None, RRF_K):
            alone = ranked(fuse([BM25, []], weights=weights, depth=3, k=k))
            assert [i for i, _ in alone] == ["lex", "both", "deep"]
    assert fuse([[], []], weights=(0.4, 0.6), depth=10) == {}
    assert fuse([[("a", 0.0)], [("a", -0.2)]], weights=(0.4, 0.6), depth=5) == {"a": 0.0}  # no evidence, no crash


@given(
    st.lists(st.tuples(st.sampled_from("abcdefgh"), st.floats(0, 50)), max_size=8),
    st.lists(st.tuples(st.sampled_from("defghijk"), st.floats(-1, 1)), max_size=8),
    st.integers(1, 8),
    st.floats(0, 1),
    st.tuples(st.booleans(), st.booleans()),
)
@settings(max_examples=200, deadline=None)
def test_score_fusion_is_bounded_and_deterministic(
    bm25: list[tuple[str, float]], cosine: list[tuple[str, float]], depth: int, alpha: float, ended: tuple[bool, bool]
) -> None:
    lists = [sorted(dict(bm25).items(), key=lambda kv: -kv[1]), sorted(dict(cosine).items(), key=lambda kv: -kv[1])]
    scores = fuse(lists, weights=(alpha, 1 - alpha), depth=depth, ended=ended)
    assert set(scores) == {i for lst in lists for i, _ in lst[:depth]}
    assert all(-1e-9 <= s <= 1 + 1e-9 for s in scores.values())
    again = fuse([list(lst) for lst in lists], weights=(alpha, 1 - alpha), depth=depth, ended=ended)
    assert ranked(again) == ranked(scores)  # same input, same ranking; ties by id


def test_a_turn_between_two_matching_turns_borrows_from_both_and_rises() -> None:
    sessions = {"s": ["t1", "t2", "t3", "t4"], "u": ["u1", "u2"]}
    scores = {"t1": 0.8, "t3": 0.6, "u1": 0.65, "node/a": 0.9}
    out = context(scores, sessions, (0.5, 0.25))
    assert out["t2"] == pytest.approx(0.5 * 0.8 + 0.5 * 0.6)  # matched nothing itself
    assert out["t1"] == pytest.approx(0.8 + 0.25 * 0.6) and out["t3"] == pytest.approx(0.6 + 0.25 * 0.8)
    assert out["t4"] == pytest.approx(0.5 * 0.6)
    assert out["u2"] == pytest.approx(0.5 * 0.65) and out["u1"] == 0.65  # the other session lends t1-t4 nothing
    assert out["node/a"] == 0.9  # a node has no neighbours
    assert [i for i, _ in ranked(out)] == ["t1", "node/a", "t3", "t2", "u1", "u2", "t4"]  # t2 now above u1
    assert context(scores, sessions, ()) == scores and context(scores, {}, CONTEXT) == scores
    assert context(scores, sessions) == context(dict(reversed(scores.items())), sessions)  # order-free


def test_filters_validity_privacy_and_current_session() -> None:
    old = Doc("taste/old", "node", valid_until="2024-06-01")
    private = Doc("self/secret", "node", private=True)
    turn = Doc("turn:s1:3", "turn", session="s1")
    common = {"today": "2025-01-01", "scope": "person", "session": None}
    assert not keep(old, past=False, **common)
    assert keep(old, past=True, **common)  # a question about the past still sees it
    assert keep(Doc("taste/old", "node", valid_until="2026-01-01"), past=False, **common)
    assert keep(private, past=False, **common)
    assert not keep(private, past=False, **{**common, "scope": "agent:helper"})
    assert not keep(turn, past=False, **{**common, "session": "s1"})
    assert keep(turn, past=False, **{**common, "session": "s2"})
    assert about_past("what editor was I using before?") and about_past("my previous editor")
    assert not about_past("how long should replies be")


def _docs(*ids: str) -> dict[str, Doc]:
    return {i: Doc(i, "node") for i in ids}


def test_supersedes_swaps_in_the_newer_node_unless_the_query_is_about_the_past() -> None:
    links = {"d/new": (("supersedes", "d/old"),), "d/newest": (("supersedes", "d/new"),)}
    out = expand({"d/old": 0.5}, _docs("d/old"), links)
    assert out == {"d/newest": 0.5}  # follows the chain to the newest
    past = expand({"d/old": 0.5}, _docs("d/old"), links, past=True)
    assert past == {"d/old": 0.5, "d/newest": 0.5}


def test_contradicts_pulls_in_the_other_side_both_ways() -> None:
    links = {"d/a": (("contradicts", "d/b"),)}
    assert "d/a" in expand({"d/b": 1.0}, _docs("d/b"), links)
    assert "d/b" in expand({"d/a": 1.0}, _docs("d/a"), links)


def test_other_links_add_the_target_at_the_parents_score_times_its_weight() -> None:
    links = {"d/a": (("explains", "d/x"), ("part-of", "d/y"), ("see-also", "d/z"))}
    out = expand({"d/a": 1.0}, _docs("d/a"), links)
    assert (out["d/x"], out["d/y"], out["d/z"]) == (0.5, 0.4, 0.3)
    assert expand({"d/a": 1.0, "d/x": 0.9}, _docs("d/a", "d/x"), links)["d/x"] == 0.9  # never lowered
    assert "d/x" not in expand({"d/a": 1.0}, _docs("d/a"), links, ok=lambda i: i != "d/x")  # filtered


def test_expansion_starts_from_the_top_8_nodes_only() -> None:
    scores = {f"d/n{i}": 1.0 - i / 100 for i in range(10)}
    links = {"d/n9": (("explains", "d/far"),), "d/n0": (("explains", "d/near"),)}
    out = expand(scores, _docs(*scores), links)
    assert "d/near" in out and "d/far" not in out


def test_every_block_carries_its_id_and_nodes_degrade_to_their_summary_line() -> None:
    big = Doc("taste/long", "node", title="Long", summary="The summary", body="word " * 400)
    packed = pack([], [(big, 1.0)], budget=60)
    assert [b.form for b in packed.blocks] == ["summary"]
    assert packed.blocks[0].text.startswith("[taste/long]")
    roomy = pack([], [(big, 1.0)], budget=2000)
    assert roomy.blocks[0].form == "full"


def test_items_degrade_from_card_to_title_to_url() -> None:
    item = Doc("itm_1", "item", title="A title " * 8, body="body " * 300, url="https://e.org/x")
    sizes = {form: estimate_tokens(text) + 1 for form, text in forms(item)}
    assert list(sizes) == ["card", "title", "url"]
    for form, room in (("card", sizes["card"]), ("title", sizes["title"]), ("url", sizes["url"])):
        packed = pack([], [(item, 1.0)], budget=room, node_share=0.0)
        assert packed.blocks[0].form == form and packed.blocks[0].text.startswith("[item:itm_1]")


def test_pinned_come_first_and_private_nodes_never_show_their_body() -> None:
    pin = Doc("rules/ask", "node", title="Ask", summary="Ask first", body="details")
    secret = Doc("self/secret", "node", title="Secret", summary="a summary", body="raw private", private=True)
    packed = pack([pin], [(secret, 1.0)], budget=500)
    assert packed.blocks[0].id == "rules/ask" and packed.blocks[0].pinned and packed.blocks[0].form == "full"
    assert "raw private" not in packed.render()


def test_nodes_take_about_70_percent_and_items_what_is_left() -> None:
    nodes = [(Doc(f"d/n{i}", "node", title="t", summary="s " * 40), 1.0) for i in range(20)]
    items = [(Doc(f"itm_{i}", "item", title="t " * 40), 0.5) for i in range(20)]
    packed = pack([], nodes + items, budget=1000)
    node_tokens = sum(b.tokens for b in packed.blocks if b.kind == "node")
    assert 0 < sum(b.tokens for b in packed.blocks if b.kind == "item")
    assert node_tokens <= 0.7 * 1000 + 50


_text = st.text(st.characters(blacklist_categories=("Cs",)), max_size=400)
_doc = st.builds(
    lambda i, k, t, s, b, u, p: Doc(
        f"d/x{i}" if k == "node" else f"x{i}", k, title=t, summary=s, body=b, url=u, private=p
    ),
    st.integers(0, 30),
    st.sampled_from(["node", "item", "turn"]),
    _text,
    _text,
    _text,
    st.one_of(st.none(), st.just("https://e.org/" + "p" * 50)),
    st.booleans(),
)


@settings(max_examples=150, deadline=None)
@given(st.lists(_doc, max_size=25), st.lists(_doc, max_size=3), st.integers(0, 3000))
def test_never_over_budget(ranked: list[Doc], pinned: list[Doc], budget: int) -> None:
    packed = pack(pinned, [(d, 1.0 / (n + 1)) for n, d in enumerate(ranked)], budget)
    assert packed.tokens <= budget
    assert estimate_tokens(packed.render()) <= budget
    assert sum(b.tokens for b in packed.blocks) == packed.tokens
    assert len({b.id for b in packed.blocks}) == len(packed.blocks)
    assert all(b.text.startswith("[") for b in packed.blocks)
