"""Small synthetic GGUF files for tests: a real header (GGUF v3 layout) and real, tiny tensor data.

Written from the format description (llama.cpp ``docs/gguf.md``), independently
of the reader under test: values are given with their GGUF type explicitly.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

# GGUF value types
U8, I8, U16, I16, U32, I32, F32, BOOL, STRING, ARRAY, U64, I64, F64 = range(13)
_CODES = {U8: "B", I8: "b", U16: "H", I16: "h", U32: "I", I32: "i", F32: "f", BOOL: "?", U64: "Q", I64: "q", F64: "d"}
# ggml tensor types used here: (id, elements per block, bytes per block)
F32_T = (0, 1, 4)
Q8_0_T = (8, 32, 34)
Q4_K_T = (12, 256, 144)

QWEN_LIKE_TEMPLATE = (
    "{% for message in messages %}<|im_start|>{{ message['role'] }}\n{{ message['content'] }}<|im_end|>\n"
    "{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)


@dataclass
class Value:
    """A metadata value and its GGUF type; ``item`` is the element type of an array."""

    vtype: int
    value: object
    item: int | None = None


@dataclass
class Tensor:
    name: str
    dims: tuple[int, ...]
    ttype: tuple[int, int, int] = F32_T


@dataclass
class Synth:
    """A GGUF file description; :meth:`bytes` renders it."""

    metadata: dict[str, Value] = field(default_factory=dict)
    tensors: list[Tensor] = field(default_factory=list)
    version: int = 3
    order: str = "<"
    alignment: int = 32

    def _count(self, n: int) -> bytes:
        return struct.pack(self.order + ("I" if self.version == 1 else "Q"), n)

    def _string(self, text: str | bytes) -> bytes:
        raw = text.encode("utf-8") if isinstance(text, str) else text
        return self._count(len(raw)) + raw

    def _value(self, vtype: int, value: object, item: int | None) -> bytes:
        if vtype in _CODES:
            return struct.pack(self.order + _CODES[vtype], value)
        if vtype == STRING:
            assert isinstance(value, (str, bytes))
            return self._string(value)
        assert vtype == ARRAY and item is not None and isinstance(value, Sequence)
        out = struct.pack(self.order + "I", item) + self._count(len(value))
        for element in value:
            out += self._value(item, element, None)
        return out

    def header(self) -> bytes:
        out = b"GGUF" + struct.pack(self.order + "I", self.version)
        out += self._count(len(self.tensors)) + self._count(len(self.metadata))
        for key, v in self.metadata.items():
            out += self._string(key) + struct.pack(self.order + "I", v.vtype) + self._value(v.vtype, v.value, v.item)
        offset = 0
        for t in self.tensors:
            out += self._string(t.name) + struct.pack(self.order + "I", len(t.dims))
            for d in t.dims:
                out += self._count(d)
            out += struct.pack(self.order + "I", t.ttype[0]) + struct.pack(self.order + "Q", offset)
            offset += _padded(_nbytes(t), self.alignment)
        return out

    def bytes(self) -> bytes:
        head = self.header()
        out = head + b"\0" * (_padded(len(head), self.alignment) - len(head))
        for t in self.tensors:
            n = _nbytes(t)
            out += bytes((i * 7) & 0xFF for i in range(n)) + b"\0" * (_padded(n, self.alignment) - n)
        return out

    def write(self, path: Path) -> Path:
        path.write_bytes(self.bytes())
        return path


def _nbytes(t: Tensor) -> int:
    elements = 1
    for d in t.dims:
        elements *= d
    _, per_block, block_bytes = t.ttype
    return elements // per_block * block_bytes


def _padded(n: int, alignment: int) -> int:
    return -(-n // alignment) * alignment


def model_like(
    *,
    template: str | None = QWEN_LIKE_TEMPLATE,
    arch: str = "qwen2",
    name: str = "Tiny Test Model",
    context: int = 4096,
) -> Synth:
    """A header shaped like a small instruction model's: names, sizes, a vocabulary, a template."""
    meta = {
        "general.architecture": Value(STRING, arch),
        "general.name": Value(STRING, name),
        f"{arch}.context_length": Value(U32, context),
        f"{arch}.block_count": Value(U32, 2),
        f"{arch}.rope.freq_base": Value(F32, 10000.0),
        "tokenizer.ggml.model": Value(STRING, "gpt2"),
        "tokenizer.ggml.tokens": Value(ARRAY, ["<s>", "</s>", "a", "b", "ab"], STRING),
        "tokenizer.ggml.token_type": Value(ARRAY, [3, 3, 1, 1, 1], I32),
        "tokenizer.ggml.add_bos_token": Value(BOOL, False),
        "general.quantization_version": Value(U32, 2),
    }
    if template is not None:
        meta["tokenizer.chat_template"] = Value(STRING, template)
    tensors = [
        Tensor("token_embd.weight", (32, 5), Q8_0_T),
        Tensor("blk.0.attn_q.weight", (256, 2), Q4_K_T),
        Tensor("output_norm.weight", (32,), F32_T),
    ]
    return Synth(metadata=meta, tensors=tensors)
