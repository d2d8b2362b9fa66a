"""Fuzzing the decoders of stored data: nothing but CorruptDataError may escape."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from exo_core.errors import CorruptDataError
from exo_core.ledger import Checkpoint, Signer
from exo_core.ledger.canonical import canonical_json
from exo_core.ledger.checkpoint import checkpoint_from_canonical
from exo_core.ledger.entry import build_content, check_seal, decode_row, genesis_hash, seal

SIGNER = Signer.from_seed(bytes(range(32)))
PREV = genesis_hash("fuzz")
CONTENT = build_content(
    kind="utterance", scope="person", author=SIGNER.key_id, ts=1, refs=[], body={"text": "hello"}, idem=None
)
ENTRY_ID, CHAIN, SIG = seal(CONTENT, PREV, SIGNER)
GOOD_ROW = (
    1,
    0,
    1,
    ENTRY_ID.encode(),
    PREV.encode(),
    CHAIN.encode(),
    SIGNER.key_id.encode(),
    SIG,
    b"utterance",
    b"person",
    1,
    None,
    CONTENT,
)

cells = st.one_of(
    st.none(), st.integers(-(2**63), 2**63 - 1), st.binary(max_size=80), st.text(max_size=40), st.floats(allow_nan=True)
)


def test_the_good_row_decodes() -> None:
    entry = decode_row(GOOD_ROW)
    assert check_seal(entry) is None and entry.body == {"text": "hello"}


@given(st.lists(cells, min_size=0, max_size=15))
@settings(max_examples=400, deadline=None)
def test_random_rows(row: list[object]) -> None:
    try:
        decode_row(row)
    except CorruptDataError:
        pass  # the only acceptable failure


@given(st.integers(0, 12), cells)
@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_one_replaced_cell_of_a_good_row(index: int, value: object) -> None:
    row = list(GOOD_ROW)
    row[index] = value
    try:
        entry = decode_row(row)
    except CorruptDataError:
        return
    if entry != decode_row(GOOD_ROW) and index not in (0, 1, 2):
        # decoded to something else: the seal must then be what catches it
        # (n, seg and pos are positional; verify() checks those against the chain)
        assert check_seal(entry) is not None


@given(st.binary(max_size=300))
@settings(max_examples=400, deadline=None)
def test_random_content_bytes(content: bytes) -> None:
    row = list(GOOD_ROW)
    row[12] = content
    try:
        decode_row(row)
    except CorruptDataError:
        pass


json_leaf = (
    st.none() | st.booleans() | st.integers() | st.text(max_size=70) | st.floats(allow_nan=False, allow_infinity=False)
)
json_doc = st.dictionaries(st.sampled_from(["ledger", "size", "head", "ts", "signer", "sig", "x"]), json_leaf)


@given(json_doc)
@settings(max_examples=400, deadline=None)
def test_checkpoint_decoder(doc: dict[str, object]) -> None:
    try:
        Checkpoint.from_json(doc)
        checkpoint_from_canonical(canonical_json(doc))
    except CorruptDataError:
        pass


@given(st.binary(max_size=200))
@settings(max_examples=300, deadline=None)
def test_checkpoint_bytes(data: bytes) -> None:
    try:
        checkpoint_from_canonical(data)
    except CorruptDataError:
        pass
