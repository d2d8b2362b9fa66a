"""Reading a GGUF file's header: what ``exo models add`` checks before it registers a file.

A GGUF file is ``GGUF`` (magic), a version (1-3), the tensor count, the
metadata count, the metadata key/values, the tensor table, then the tensor
data from an aligned offset (llama.cpp's ``ggml/include/gguf.h`` and
``docs/gguf.md`` upstream). This reader walks the header with a buffered file
and never reads the tensor data: large arrays (a tokenizer's 150,000 tokens)
are skipped, not kept, and every length is bounded, so a hostile or damaged
file costs at most :data:`MAX_HEADER_BYTES` of reading. From the tensor table
it works out how long the file must be, which catches the common damage: a
download cut short. See docs/models.md ("Registering a GGUF you have").
"""

from __future__ import annotations

import os
import struct
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

from exo_core.errors import NotFoundError, UsageError

__all__ = [
    "GGUFError",
    "NotGGUFError",
    "TruncatedGGUFError",
    "MalformedGGUFError",
    "GGUFHeader",
    "read_gguf_header",
    "parse_gguf_header",
    "MAX_HEADER_BYTES",
]

MAGIC = b"GGUF"
VERSIONS = (1, 2, 3)
# No real header comes near these (Gemma 3's 262,144-token tokenizer is ~6 MB of header).
MAX_HEADER_BYTES = 256 << 20
MAX_KV = 1 << 16
MAX_TENSORS = 1 << 20
MAX_KEY = 1 << 16
MAX_DIMS = 8
# Strings longer than this are skipped, not kept (chat templates are a few KB).
MAX_KEPT_STRING = 1 << 20
DEFAULT_ALIGNMENT = 32
MAX_ELEMENTS = 1 << 48

# value type -> struct code (scalars); 8 is a string, 9 an array.
_SCALARS: Mapping[int, str] = {
    0: "B",
    1: "b",
    2: "H",
    3: "h",
    4: "I",
    5: "i",
    6: "f",
    7: "?",
    10: "Q",
    11: "q",
    12: "d",
}
_STRING, _ARRAY = 8, 9

# ggml tensor type -> (elements per block, bytes per block), from ggml's type traits.
# Types that upstream removed (4, 5, 31-33, 36-38) are left out; an unknown type
# makes the length check impossible, and the header says so (``size_checked``).
GGML_BLOCKS: Mapping[int, tuple[int, int]] = {
    0: (1, 4),  # F32
    1: (1, 2),  # F16
    2: (32, 18),  # Q4_0
    3: (32, 20),  # Q4_1
    6: (32, 22),  # Q5_0
    7: (32, 24),  # Q5_1
    8: (32, 34),  # Q8_0
    9: (32, 36),  # Q8_1
    10: (256, 84),  # Q2_K
    11: (256, 110),  # Q3_K
    12: (256, 144),  # Q4_K
    13: (256, 176),  # Q5_K
    14: (256, 210),  # Q6_K
    15: (256, 292),  # Q8_K
    16: (256, 66),  # IQ2_XXS
    17: (256, 74),  # IQ2_XS
    18: (256, 98),  # IQ3_XXS
    19: (256, 50),  # IQ1_S
    20: (32, 18),  # IQ4_NL
    21: (256, 110),  # IQ3_S
    22: (256, 82),  # IQ2_S
    23: (256, 136),  # IQ4_XS
    24: (1, 1),  # I8
    25: (1, 2),  # I16
    26: (1, 4),  # I32
    27: (1, 8),  # I64
    28: (1, 8),  # F64
    29: (256, 56),  # IQ1_M
    30: (1, 2),  # BF16
    34: (256, 54),  # TQ1_0
    35: (256, 66),  # TQ2_0
    39: (32, 17),  # MXFP4
}


class GGUFError(UsageError):
    """The file offered as a GGUF model cannot be used; the message names why."""

    code = "bad_model_file"


class NotGGUFError(GGUFError):
    """The file does not start with the GGUF magic, or has a version this reader does not know."""

    code = "not_gguf"


class TruncatedGGUFError(GGUFError):
    """The file ends before its header, or before the tensor data its header describes."""

    code = "truncated_gguf"


class MalformedGGUFError(GGUFError):
    """The header is GGUF but breaks its own rules (an unknown value type, an absurd length)."""

    code = "malformed_gguf"


@dataclass(frozen=True, slots=True)
class GGUFHeader:
    """What the header says. ``metadata`` holds the scalars and the strings up to
    :data:`MAX_KEPT_STRING`; arrays are recorded by their length in ``array_lengths``."""

    version: int
    tensor_count: int
    metadata: Mapping[str, object]
    array_lengths: Mapping[str, int] = field(default_factory=dict)
    header_bytes: int = 0
    data_offset: int = 0
    expected_size: int | None = None
    unknown_tensor_types: tuple[int, ...] = ()

    @property
    def architecture(self) -> str | None:
        """``general.architecture`` (``qwen2``, ``gemma3``, ``llama``...)."""
        value = self.metadata.get("general.architecture")
        return value if isinstance(value, str) else None

    @property
    def name(self) -> str | None:
        """``general.name``, the model's own name for itself."""
        value = self.metadata.get("general.name")
        return value if isinstance(value, str) else None

    @property
    def context_length(self) -> int | None:
        """``<architecture>.context_length``: the window the model was trained for."""
        if self.architecture is None:
            return None
        value = self.metadata.get(f"{self.architecture}.context_length")
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            return value
        return None

    @property
    def chat_template(self) -> str | None:
        """``tokenizer.chat_template``, when the file carries one."""
        value = self.metadata.get("tokenizer.chat_template")
        if isinstance(value, str) and value.strip():
            return value
        return None

    @property
    def size_checked(self) -> bool:
        """Whether every tensor's type was known, so ``expected_size`` is exact."""
        return self.expected_size is not None and not self.unknown_tensor_types


class _Reader:
    """Bounded little- or big-endian reads from a binary file; short reads are truncation."""

    def __init__(self, fh: BinaryIO, file_size: int, limit: int) -> None:
        self.fh = fh
        self.file_size = file_size
        self.limit = limit
        self.pos = 0
        self.order = "<"

    def take(self, n: int, what: str) -> bytes:
        if n < 0 or self.pos + n > self.limit:
            raise MalformedGGUFError(f"the GGUF header is longer than {self.limit} bytes at {what}")
        if self.pos + n > self.file_size:
            raise TruncatedGGUFError(
                f"the file ends at byte {self.file_size}, inside its GGUF header ({what}); "
                "it was cut short: copy or download it again"
            )
        data = self.fh.read(n)
        if len(data) != n:
            raise TruncatedGGUFError(f"the file ended while reading its GGUF header ({what})")
        self.pos += n
        return data

    def skip(self, n: int, what: str) -> None:
        if n < 0 or self.pos + n > self.limit:
            raise MalformedGGUFError(f"the GGUF header is longer than {self.limit} bytes at {what}")
        if self.pos + n > self.file_size:
            raise TruncatedGGUFError(
                f"the file ends at byte {self.file_size}, inside its GGUF header ({what}); "
                "it was cut short: copy or download it again"
            )
        self.fh.seek(n, os.SEEK_CUR)
        self.pos += n

    def unpack(self, code: str, what: str) -> object:
        fmt = self.order + code
        (value,) = struct.unpack(fmt, self.take(struct.calcsize(fmt), what))
        return value

    def u32(self, what: str) -> int:
        value = self.unpack("I", what)
        assert isinstance(value, int)
        return value

    def count(self, version: int, what: str) -> int:
        """A length: uint32 in version 1, uint64 after."""
        value = self.unpack("I" if version == 1 else "Q", what)
        assert isinstance(value, int)
        return value

    def string(self, version: int, what: str, *, keep: int) -> str | None:
        """A GGUF string; ``None`` (skipped) when longer than ``keep`` bytes."""
        length = self.count(version, what)
        if length > keep:
            self.skip(length, what)
            return None
        raw = self.take(length, what)
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise MalformedGGUFError(f"{what} is not UTF-8 text") from exc


def _value(r: _Reader, version: int, vtype: int, key: str, depth: int) -> tuple[object, int | None]:
    """One metadata value: ``(value, None)`` for scalars and strings, ``(None, length)`` for arrays."""
    code = _SCALARS.get(vtype)
    if code is not None:
        return r.unpack(code, key), None
    if vtype == _STRING:
        return r.string(version, key, keep=MAX_KEPT_STRING), None
    if vtype != _ARRAY:
        raise MalformedGGUFError(f"metadata {key!r} has unknown value type {vtype}")
    if depth > 1:
        raise MalformedGGUFError(f"metadata {key!r} nests arrays deeper than GGUF files do")
    item_type = r.u32(key)
    length = r.count(version, key)
    item_code = _SCALARS.get(item_type)
    if item_code is not None:
        r.skip(length * struct.calcsize(r.order + item_code), key)
        return None, length
    if length > r.limit:
        raise MalformedGGUFError(f"metadata {key!r} claims {length} items")
    for _ in range(length):
        if item_type == _STRING:  # a tokenizer's vocabulary: skipped, never decoded
            r.skip(r.count(version, key), key)
        else:
            _value(r, version, item_type, key, depth + 1)
    return None, length


def _open_reader(fh: BinaryIO, file_size: int, limit: int) -> tuple[_Reader, int]:
    r = _Reader(fh, file_size, limit)
    if file_size < 4:
        raise NotGGUFError(f"the file has {file_size} bytes; a GGUF file starts with 'GGUF' and a header")
    magic = r.take(4, "the magic")
    if magic != MAGIC:
        raise NotGGUFError(f"the file starts with {magic!r}, not b'GGUF': it is not a GGUF model file")
    raw_version = r.take(4, "the version")
    little = struct.unpack("<I", raw_version)[0]
    big = struct.unpack(">I", raw_version)[0]
    if little in VERSIONS:
        version = little
    elif big in VERSIONS:
        version = big
        r.order = ">"
    else:
        raise NotGGUFError(f"GGUF version {little} is not one of {VERSIONS}; convert the file with a current llama.cpp")
    return r, version


def parse_gguf_header(fh: BinaryIO, file_size: int, *, limit: int = MAX_HEADER_BYTES) -> GGUFHeader:
    """Parse the header of the GGUF in ``fh`` (positioned at 0) of ``file_size`` bytes."""
    r, version = _open_reader(fh, file_size, limit)
    tensor_count = r.count(version, "the tensor count")
    kv_count = r.count(version, "the metadata count")
    if tensor_count > MAX_TENSORS:
        raise MalformedGGUFError(f"the header claims {tensor_count} tensors (at most {MAX_TENSORS} are read)")
    if kv_count > MAX_KV:
        raise MalformedGGUFError(f"the header claims {kv_count} metadata entries (at most {MAX_KV} are read)")
    metadata: dict[str, object] = {}
    arrays: dict[str, int] = {}
    for index in range(kv_count):
        key = r.string(version, f"metadata key {index}", keep=MAX_KEY)
        if key is None:
            raise MalformedGGUFError(f"metadata key {index} is longer than {MAX_KEY} bytes")
        vtype = r.u32(key)
        value, length = _value(r, version, vtype, key, 0)
        if length is not None:
            arrays[key] = length
        elif value is not None:
            metadata[key] = value
    alignment = metadata.get("general.alignment", DEFAULT_ALIGNMENT)
    if not isinstance(alignment, int) or isinstance(alignment, bool) or alignment <= 0 or alignment & (alignment - 1):
        raise MalformedGGUFError(f"general.alignment {alignment!r} is not a power of two")
    data_end = 0
    unknown: set[int] = set()
    for index in range(tensor_count):
        what = f"tensor {index}"
        name = r.string(version, what, keep=MAX_KEY)
        if name is None:
            raise MalformedGGUFError(f"{what} has a name longer than {MAX_KEY} bytes")
        n_dims = r.u32(what)
        if n_dims > MAX_DIMS:
            raise MalformedGGUFError(f"tensor {name!r} has {n_dims} dimensions")
        elements = 1
        for _ in range(n_dims):
            elements *= r.count(version, what)
        if elements > MAX_ELEMENTS:
            raise MalformedGGUFError(f"tensor {name!r} claims {elements} elements")
        ttype = r.u32(what)
        offset = r.count(2, what)  # offsets are uint64 in every version
        block = GGML_BLOCKS.get(ttype)
        if block is None:
            unknown.add(ttype)
            continue
        per_block, block_bytes = block
        if elements % per_block:
            raise MalformedGGUFError(f"tensor {name!r} has {elements} elements, not whole blocks of {per_block}")
        data_end = max(data_end, offset + elements // per_block * block_bytes)
    data_offset = -(-r.pos // alignment) * alignment
    expected = data_offset + data_end if tensor_count else r.pos
    return GGUFHeader(
        version=version,
        tensor_count=tensor_count,
        metadata=metadata,
        array_lengths=arrays,
        header_bytes=r.pos,
        data_offset=data_offset,
        expected_size=expected,
        unknown_tensor_types=tuple(sorted(unknown)),
    )


def read_gguf_header(path: Path, *, limit: int = MAX_HEADER_BYTES) -> GGUFHeader:
    """The checked header of the GGUF file at ``path``.

    Raises :class:`NotGGUFError`, :class:`TruncatedGGUFError` (also when the
    file is shorter than the tensor data its header describes) or
    :class:`MalformedGGUFError`; a missing file is a ``NotFoundError``.
    """
    try:
        fh = path.open("rb")
    except FileNotFoundError as exc:
        raise NotFoundError(f"{path} does not exist; give the path of a .gguf file") from exc
    except IsADirectoryError as exc:
        raise NotGGUFError(f"{path} is a folder; give the path of a .gguf file") from exc
    with fh:
        size = os.fstat(fh.fileno()).st_size
        try:
            header = parse_gguf_header(fh, size, limit=limit)
        except GGUFError as exc:  # the same condition, with the file named
            raise type(exc)(f"{path}: {exc.message}") from exc
    if header.expected_size is not None and not header.unknown_tensor_types and size < header.expected_size:
        raise TruncatedGGUFError(
            f"{path} has {size} bytes but its header describes tensor data up to byte "
            f"{header.expected_size}: the file was cut short; copy or download it again"
        )
    return header
