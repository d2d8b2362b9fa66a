"""The summary tree's rules as pure functions (§16.2)."""

from __future__ import annotations

from ctxutil import assert_tiles
from hypothesis import given, settings
from hypothesis import strategies as st

from exo_core.context.config import ContextConfig, estimate_tokens
from exo_core.context.tree import SummaryNode, choose_merge, node_positions, plan_view, tail_start
from exo_core.sessions.session_store import MessageRecord

CFG = ContextConfig()


def msgs(n: int, tool_at: frozenset[int] = frozenset()) -> list[MessageRecord]:
    return [
        MessageRecord(i + 1, "s", None, "tool" if i in tool_at else ("user" if i % 2 == 0 else "assistant"), f"m{i}")
        for i in range(n)
    ]


def node(level: int, idx: int, text: str = "x" * 40, status: str = "done", attempts: int = 1) -> SummaryNode:
    first, last = node_positions(level, idx, CFG.leaf_size)
    return SummaryNode(
        "s", level, idx, first + 1, last + 1, text if status == "done" else None, status, "live", attempts
    )


def test_defaults_are_the_papers() -> None:
    assert (CFG.tail, CFG.leaf_size, CFG.view_budget, CFG.live_limit, CFG.import_limit, CFG.settle_seconds) == (
        12,
        8,
        6000,
        8,
        2,
        60.0,
    )
    assert estimate_tokens("abcd") == 1 and estimate_tokens("abcde") == 2 and estimate_tokens("") == 0


def test_addresses_double_per_level() -> None:
    assert node_positions(0, 3, 8) == (24, 31)
    assert node_positions(2, 1, 8) == (32, 63)


def test_tail_starts_at_the_persons_message_and_never_on_a_tool_result() -> None:
    assert tail_start(msgs(39), 12) == 26  # 27 is the assistant's reply to 26
    m = msgs(40, tool_at=frozenset({28, 27}))
    assert tail_start(m, 12) == 26
    assert tail_start(msgs(5), 12) == 0
    long_round = [
        MessageRecord(i + 1, "s", None, "user" if i == 0 else ("tool" if i % 2 == 0 else "assistant"), "")
        for i in range(60)
    ]
    assert tail_start(long_round, 12) == 47  # no person's message within reach: only past tool results


@given(st.lists(st.sampled_from(["user", "assistant", "tool"]), max_size=120))
def test_the_tail_start_never_moves_back_as_messages_arrive(roles: list[str]) -> None:
    m = [MessageRecord(i + 1, "s", None, r, "") for i, r in enumerate(roles)]
    starts = [tail_start(m[:n], 12) for n in range(len(m) + 1)]
    assert starts == sorted(starts)


def test_no_leaf_until_a_full_chunk_is_older_than_the_tail() -> None:
    plan = plan_view({}, msgs(19), CFG)
    assert plan.full_leaves == 0 and [e.kind for e in plan.elements] == ["verbatim", "tail"]
    plan = plan_view({}, msgs(20), CFG)
    assert plan.full_leaves == 1 and [e.kind for e in plan.elements] == ["verbatim", "tail"]
    assert (plan.elements[0].first, plan.elements[0].last) == (0, 7)


def test_view_takes_the_coarsest_finished_nodes_and_leaves_unready_ones_verbatim() -> None:
    nodes = {n.key: n for n in [node(0, 0), node(0, 1), node(1, 0), node(0, 2), node(0, 3, status="pending")]}
    plan = plan_view(nodes, msgs(12 + 8 * 4), CFG)
    assert [(e.kind, e.first, e.last) for e in plan.elements] == [
        ("summary", 0, 15),
        ("summary", 16, 23),
        ("verbatim", 24, 31),
        ("tail", 32, 43),
    ]
    assert plan.elements[0].node.key == (1, 0)
    assert plan.summary_tokens == 20


def test_merge_only_over_budget_and_oldest_sibling_pair_first() -> None:
    small = {n.key: n for n in [node(0, i) for i in range(4)]}
    assert choose_merge(plan_view(small, msgs(44), CFG), small, CFG) is None
    tight = ContextConfig(view_budget=25)
    assert choose_merge(plan_view(small, msgs(44), tight), small, tight) == (1, 0)
    nodes = dict(small)
    nodes[(1, 0)] = node(1, 0)
    assert choose_merge(plan_view(nodes, msgs(44), tight), nodes, tight) == (1, 1)
    nodes[(1, 1)] = node(1, 1, status="pending", attempts=0)
    assert choose_merge(plan_view(nodes, msgs(44), tight), nodes, tight) is None  # one merge at a time


def test_merge_waits_for_an_older_pending_leaf_but_not_a_dead_one() -> None:
    tight = ContextConfig(view_budget=10, max_attempts=2)
    nodes = {n.key: n for n in [node(0, 0, status="pending", attempts=0), node(0, 1), node(0, 2), node(0, 3)]}
    assert choose_merge(plan_view(nodes, msgs(44), tight), nodes, tight) is None
    nodes[(0, 0)] = node(0, 0, status="failed", attempts=2)
    assert choose_merge(plan_view(nodes, msgs(44), tight), nodes, tight) == (1, 1)


@settings(max_examples=200, deadline=None)
@given(st.integers(0, 300), st.data())
def test_every_message_is_covered_exactly_once(count: int, data: st.DataObject) -> None:
    tools = frozenset(data.draw(st.sets(st.integers(1, max(1, count - 1)), max_size=count // 3)))
    m = msgs(count, tools)
    leaves = tail_start(m, CFG.tail) // CFG.leaf_size
    nodes = {}
    for level in range(0, max(1, leaves.bit_length())):
        for idx in range(leaves >> level):
            status = data.draw(st.sampled_from(["done", "pending", "failed", "absent"]))
            if status != "absent":
                nodes[(level, idx)] = node(level, idx, status=status)
    plan = plan_view(nodes, m, CFG)
    assert_tiles(plan, count)
    tail = [e for e in plan.elements if e.kind == "tail"]
    if tail:
        assert m[tail[0].first].role != "tool" or tail[0].first == 0
        assert min(count, CFG.tail) <= tail[0].last - tail[0].first + 1 <= 2 * CFG.tail + 1
