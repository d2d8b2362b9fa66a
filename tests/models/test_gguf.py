"""The GGUF header reader (exo_edge/gguf.py) on synthetic files, fuzzed with Hypothesis."""

from __future__ import annotations

import io
import struct
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from exo_core.errors import NotFoundError
from exo_edge.gguf import (
    GGUFError,
    MalformedGGUFError,
    NotGGUFError,
    TruncatedGGUFError,
    parse_gguf_header,
    read_gguf_header,
)

from .gguf_synth import (
    ARRAY,
    BOOL,
    F32,
    F64,
    I8,
    I16,
    I32,
    I64,
    QWEN_LIKE_TEMPLATE,
    STRING,
    U8,
    U16,
    U32,
    U64,
    Synth,
    Tensor,
    Value,
    model_like,
)


def parse(data: bytes, limit: int = 1 << 20) -> object:
    return parse_gguf_header(io.BytesIO(data), len(data), limit=limit)


def test_reads_what_the_header_says(tmp_path: Path) -> None:
    path = model_like(context=8192).write(tmp_path / "m.gguf")
    header = read_gguf_header(path)
    assert header.version == 3
    assert header.tensor_count == 3
    assert header.architecture == "qwen2"
    assert header.name == "Tiny Test Model"
    assert header.context_length == 8192
    assert header.chat_template == QWEN_LIKE_TEMPLATE
    assert header.metadata["qwen2.rope.freq_base"] == 10000.0
    assert header.metadata["tokenizer.ggml.add_bos_token"] is False
    # arrays are counted, not kept
    assert header.array_lengths == {"tokenizer.ggml.tokens": 5, "tokenizer.ggml.token_type": 5}
    assert "tokenizer.ggml.tokens" not in header.metadata
    # the tensor table says exactly how long the file is
    assert header.size_checked and header.expected_size == path.stat().st_size
    assert header.data_offset % 32 == 0 and header.data_offset >= header.header_bytes


def test_version_1_and_big_endian_files_are_read(tmp_path: Path) -> None:
    old = model_like()
    old.version = 1
    assert read_gguf_header(old.write(tmp_path / "v1.gguf")).context_length == 4096
    big = model_like()
    big.order = ">"
    header = read_gguf_header(big.write(tmp_path / "be.gguf"))
    assert header.chat_template == QWEN_LIKE_TEMPLATE and header.size_checked


def test_no_template_and_no_context_are_reported_as_absent(tmp_path: Path) -> None:
    synth = model_like(template=None)
    del synth.metadata["qwen2.context_length"]
    header = read_gguf_header(synth.write(tmp_path / "base.gguf"))
    assert header.chat_template is None and header.context_length is None
    assert header.architecture == "qwen2"


def test_a_text_file_is_not_a_gguf(tmp_path: Path) -> None:
    text = tmp_path / "notes.gguf"
    text.write_text("these are my notes, not a model\n")
    with pytest.raises(NotGGUFError) as info:
        read_gguf_header(text)
    assert str(text) in info.value.message and "not a GGUF" in info.value.message
    empty = tmp_path / "empty.gguf"
    empty.write_bytes(b"")
    with pytest.raises(NotGGUFError):
        read_gguf_header(empty)
    with pytest.raises(NotGGUFError):
        read_gguf_header(tmp_path)  # a folder
    with pytest.raises(NotFoundError):
        read_gguf_header(tmp_path / "absent.gguf")


def test_an_unknown_version_is_refused(tmp_path: Path) -> None:
    data = bytearray(model_like().bytes())
    data[4:8] = struct.pack("<I", 9)
    path = tmp_path / "v9.gguf"
    path.write_bytes(bytes(data))
    with pytest.raises(NotGGUFError) as info:
        read_gguf_header(path)
    assert "version 9" in info.value.message


def test_truncated_inside_the_header_and_inside_the_data(tmp_path: Path) -> None:
    synth = model_like()
    full = synth.bytes()
    head = len(synth.header())
    for cut in (6, 20, head // 2, head - 1):
        path = tmp_path / f"cut{cut}.gguf"
        path.write_bytes(full[:cut])
        with pytest.raises(TruncatedGGUFError) as info:
            read_gguf_header(path)
        assert "cut short" in info.value.message
    path = tmp_path / "data.gguf"
    path.write_bytes(full[:-1])  # one byte of tensor data missing
    with pytest.raises(TruncatedGGUFError) as info:
        read_gguf_header(path)
    assert f"{len(full) - 1} bytes" in info.value.message and str(len(full)) in info.value.message


def test_malformed_headers_are_named(tmp_path: Path) -> None:
    bad_type = Synth(metadata={"x": Value(U32, 1)})
    data = bytearray(bad_type.bytes())
    key_end = 4 + 4 + 8 + 8 + 8 + 1  # magic, version, counts, key length, "x"
    data[key_end : key_end + 4] = struct.pack("<I", 77)
    with pytest.raises(MalformedGGUFError) as info:
        parse(bytes(data))
    assert "unknown value type 77" in info.value.message
    huge = b"GGUF" + struct.pack("<IQQ", 3, 0, 1 << 40)
    with pytest.raises(MalformedGGUFError):
        parse(huge)
    not_blocks = Synth(tensors=[Tensor("w", (33,), (8, 32, 34))])
    with pytest.raises(MalformedGGUFError) as info:
        parse(not_blocks.bytes())
    assert "whole blocks" in info.value.message


def test_a_header_past_the_limit_is_refused_without_reading_on() -> None:
    synth = Synth(metadata={"big": Value(STRING, "x" * 5000)})
    with pytest.raises(MalformedGGUFError) as info:
        parse(synth.bytes(), limit=1000)
    assert "longer than 1000 bytes" in info.value.message


def test_general_alignment_moves_the_data_and_must_be_a_power_of_two(tmp_path: Path) -> None:
    synth = model_like()
    synth.alignment = 64
    synth.metadata["general.alignment"] = Value(U32, 64)
    path = synth.write(tmp_path / "a64.gguf")
    header = read_gguf_header(path)
    assert header.data_offset % 64 == 0 and header.expected_size == path.stat().st_size
    for bad in (0, 48):
        synth.metadata["general.alignment"] = Value(U32, bad)
        with pytest.raises(MalformedGGUFError) as info:
            parse(synth.bytes())
        assert "power of two" in info.value.message


def test_unknown_tensor_types_leave_the_length_unchecked(tmp_path: Path) -> None:
    synth = Synth(tensors=[Tensor("w", (4,), (200, 1, 4))])
    data = synth.bytes()
    path = tmp_path / "new.gguf"
    path.write_bytes(data[: len(synth.header()) + 1])  # short, but the reader cannot know
    header = read_gguf_header(path)
    assert header.unknown_tensor_types == (200,) and not header.size_checked


# -- Hypothesis -------------------------------------------------------------------------------

_scalar = st.one_of(
    st.tuples(st.just(U8), st.integers(0, 255)),
    st.tuples(st.just(I8), st.integers(-128, 127)),
    st.tuples(st.just(U16), st.integers(0, 2**16 - 1)),
    st.tuples(st.just(I16), st.integers(-(2**15), 2**15 - 1)),
    st.tuples(st.just(U32), st.integers(0, 2**32 - 1)),
    st.tuples(st.just(I32), st.integers(-(2**31), 2**31 - 1)),
    st.tuples(st.just(U64), st.integers(0, 2**64 - 1)),
    st.tuples(st.just(I64), st.integers(-(2**63), 2**63 - 1)),
    st.tuples(st.just(F32), st.floats(width=32, allow_nan=False)),
    st.tuples(st.just(F64), st.floats(allow_nan=False)),
    st.tuples(st.just(BOOL), st.booleans()),
    st.tuples(st.just(STRING), st.text(max_size=40)),
)
_array = st.one_of(
    st.tuples(st.just(ARRAY), st.lists(st.integers(0, 2**32 - 1), max_size=20), st.just(U32)),
    st.tuples(st.just(ARRAY), st.lists(st.text(max_size=10), max_size=20), st.just(STRING)),
)
# general.alignment changes the layout the writer produces: tested on its own below
_keys = st.text(min_size=1, max_size=30).filter(lambda k: k != "general.alignment")
_metadata = st.dictionaries(_keys, st.one_of(_scalar, _array), max_size=12)


def _synth(meta: dict[str, tuple[object, ...]], version: int, order: str) -> Synth:
    values = {}
    for key, spec in meta.items():
        values[key] = Value(*spec)  # type: ignore[arg-type]  # (vtype, value[, item]) from the strategies
    return Synth(metadata=values, tensors=[Tensor("t", (32, 2), (8, 32, 34))], version=version, order=order)


@settings(max_examples=150, deadline=None)
@given(_metadata, st.sampled_from([1, 2, 3]), st.sampled_from(["<", ">"]))
def test_round_trip_of_random_metadata(meta: dict[str, tuple[object, ...]], version: int, order: str) -> None:
    synth = _synth(meta, version, order)
    data = synth.bytes()
    header = parse_gguf_header(io.BytesIO(data), len(data))
    assert header.version == version
    assert header.expected_size is not None
    assert header.expected_size <= len(data) < header.expected_size + synth.alignment  # the last tensor's padding
    for key, spec in meta.items():
        if spec[0] == ARRAY:
            assert header.array_lengths[key] == len(spec[1])  # type: ignore[arg-type]
        elif spec[0] == F32:
            assert header.metadata[key] == struct.unpack("<f", struct.pack("<f", spec[1]))[0]
        else:
            assert header.metadata[key] == spec[1]


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_damaged_headers_raise_only_gguf_errors(data: st.DataObject) -> None:
    """Cut, flipped or spliced bytes of a valid file: a header or a GGUFError, nothing else, within the limit."""
    good = model_like().bytes()
    mutated = bytearray(good)
    for _ in range(data.draw(st.integers(0, 6))):
        where = data.draw(st.integers(0, len(mutated) - 1))
        mutated[where] = data.draw(st.integers(0, 255))
    cut = data.draw(st.integers(0, len(mutated)))
    blob = bytes(mutated[:cut])
    reader = io.BytesIO(blob)
    try:
        header = parse_gguf_header(reader, len(blob), limit=64 << 10)
    except GGUFError:
        return
    assert header.header_bytes <= len(blob)
    assert reader.tell() <= len(blob)


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=300))
def test_arbitrary_bytes_raise_only_gguf_errors(blob: bytes) -> None:
    for data in (blob, b"GGUF" + blob, b"GGUF\x03\x00\x00\x00" + blob):
        try:
            parse_gguf_header(io.BytesIO(data), len(data), limit=64 << 10)
        except GGUFError:
            pass
