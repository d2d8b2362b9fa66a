"""The int8 ONNX sentence embedder (docs/retrieval.md): onnxruntime + tokenizers, loaded lazily.

The model is paraphrase-MiniLM-L3-v2, built by ``exo models fetch`` into
``$EXO_HOME/models`` (fp32 ``.onnx`` and its int8 build, plus a BERT-uncased
``tokenizer.json``). Its output ``461`` is the mean-pooled 384-dim vector;
this module L2-normalises it.

Why texts are run one at a time through the int8 model: ``quantize_dynamic``
quantises *activations* with a range taken over the whole input tensor, so an
int8 vector depends slightly on its batch mates and their padding (cosine
0.997 to itself alone, measured). One text per run makes a vector a function
of its text only, so a rebuilt index is identical to the old one, and on this
model it costs nothing (88 texts/s one at a time against 82 batched here).
The fp32 model is padded and batched (it pools with the attention mask).

Nothing heavy is imported until the first :meth:`OnnxEmbedder.embed`; the
async variant runs off the event loop in a worker thread.
"""

from __future__ import annotations

import asyncio
import hashlib
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from exo_core.errors import ConfigError, ModelError

if TYPE_CHECKING:
    import numpy as np

    from exo_core.seams.home import ExoHome

__all__ = ["OnnxEmbedder", "MODEL_FILES", "TOKENIZER_FILE", "MODEL_NAME", "quantize_rows"]

MODEL_NAME = "paraphrase-minilm-l3-v2"
MODEL_FILES = {"int8": "paraphrase-MiniLM-L3-v2.int8.onnx", "fp32": "paraphrase-MiniLM-L3-v2.onnx"}
TOKENIZER_FILE = "minilm-tokenizer.json"
_OUTPUT = "461"
_DIMS = 384


def quantize_rows(vectors: np.ndarray) -> np.ndarray:
    """Unit vectors as int8: each row scaled so its largest component is ±127.

    The per-row scale is not stored; search divides by the int8 row's own
    norm, so the cosine survives (within rounding).
    """
    import numpy as np

    peak = np.abs(vectors).max(axis=1, keepdims=True)
    peak[peak == 0] = 1.0
    return np.rint(vectors / peak * 127.0).astype(np.int8)


class OnnxEmbedder:
    """Sentence vectors from the local ONNX model; thread-safe after the first load."""

    def __init__(
        self,
        model_path: Path,
        tokenizer_path: Path,
        *,
        precision: str = "int8",
        threads: int | None = None,
        max_tokens: int = 128,
    ) -> None:
        if precision not in MODEL_FILES:
            raise ConfigError(f"precision must be one of {', '.join(MODEL_FILES)}, not {precision!r}")
        self.model_path = Path(model_path)
        self.tokenizer_path = Path(tokenizer_path)
        self.precision = precision
        self.threads = threads
        self.max_tokens = max_tokens
        self.dims = _DIMS
        self._lock = threading.Lock()
        self._session: Any = None
        self._tokenizer: Any = None
        self._model_id: str | None = None

    @classmethod
    def from_home(
        cls, home: ExoHome | None = None, *, precision: str = "int8", threads: int | None = None
    ) -> OnnxEmbedder | None:
        """The embedder whose files ``exo models fetch`` placed, or ``None`` when absent
        (or when onnxruntime/tokenizers are not installed): the core then runs BM25 only."""
        import importlib.util

        # find_spec, not import: importing onnxruntime maps numpy, OpenBLAS and the
        # runtime (about 35 MB RSS) into a daemon that may never embed a text
        if any(importlib.util.find_spec(m) is None for m in ("onnxruntime", "tokenizers")):
            return None
        from exo_edge.paths import locate_model_file

        model = locate_model_file(MODEL_FILES[precision], home)
        tokenizer = locate_model_file(TOKENIZER_FILE, home)
        if model is None or tokenizer is None:
            return None
        return cls(model, tokenizer, precision=precision, threads=threads)

    @property
    def model_id(self) -> str:
        """``name:precision:<12 hex of the model file's sha256>``: a changed file is a new model."""
        if self._model_id is None:
            digest = hashlib.sha256()
            with self.model_path.open("rb") as fh:
                for block in iter(lambda: fh.read(1 << 20), b""):
                    digest.update(block)
            self._model_id = f"{MODEL_NAME}:{self.precision}:{digest.hexdigest()[:12]}"
        return self._model_id

    def _load(self) -> None:
        with self._lock:
            if self._session is not None:
                return
            try:
                import onnxruntime as ort
                from tokenizers import Tokenizer
            except ImportError as exc:
                raise ConfigError(
                    "onnxruntime and tokenizers are needed for embeddings; "
                    "install the edge extras (scripts/install_edge.sh)"
                ) from exc
            options = ort.SessionOptions()
            if self.threads:
                options.intra_op_num_threads = self.threads
            try:
                tokenizer = Tokenizer.from_file(str(self.tokenizer_path))
                session = ort.InferenceSession(str(self.model_path), options, providers=["CPUExecutionProvider"])
            except Exception as exc:  # onnxruntime raises its own untyped errors
                raise ModelError(f"cannot load the embedder {self.model_path.name}: {exc}") from exc
            tokenizer.enable_truncation(self.max_tokens)
            tokenizer.enable_padding()
            self._tokenizer, self._session = tokenizer, session

    def _run(self, texts: Sequence[str]) -> np.ndarray:
        import numpy as np

        encoded = self._tokenizer.encode_batch(list(texts))
        ids = np.array([e.ids for e in encoded], dtype=np.int64)
        mask = np.array([e.attention_mask for e in encoded], dtype=np.int64)
        return self._session.run([_OUTPUT], {"input_ids": ids, "attention_mask": mask})[0]

    def embed(self, texts: Sequence[str], *, batch: int = 32) -> np.ndarray:
        """Unit float32 vectors, one row per text (shape ``(len(texts), 384)``)."""
        import numpy as np

        self._load()
        clean = [t.encode("utf-8", "replace").decode("utf-8") or " " for t in texts]
        if not clean:
            return np.zeros((0, self.dims), dtype=np.float32)
        if self.precision == "int8":
            rows = [self._run([t])[0] for t in clean]
        else:
            order = sorted(range(len(clean)), key=lambda i: len(clean[i]))
            out: list[Any] = [None] * len(clean)
            for start in range(0, len(order), batch):
                chunk = order[start : start + batch]
                for i, row in zip(chunk, self._run([clean[i] for i in chunk]), strict=True):
                    out[i] = row
            rows = out
        matrix = np.asarray(rows, dtype=np.float32)
        norms = np.linalg.norm(matrix, axis=1, keepdims=True)
        norms[norms == 0] = 1.0
        return matrix / norms

    def embed_int8(self, texts: Sequence[str]) -> np.ndarray:
        """The vectors as stored: int8 rows (see :func:`quantize_rows`)."""
        return quantize_rows(self.embed(texts))

    async def aembed(self, texts: Sequence[str]) -> np.ndarray:
        """:meth:`embed` in a worker thread, off the event loop."""
        return await asyncio.to_thread(self.embed, texts)
