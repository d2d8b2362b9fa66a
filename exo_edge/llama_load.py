"""How one local GGUF model is loaded and what it holds in memory (docs/models.md).

:class:`LlamaSettings` says how to run a model (sized for a small board by
default); :func:`load_llama` turns them into a llama-cpp-python ``Llama``
object, translating a missing file, a missing runtime or a file llama.cpp
cannot read into a :class:`~exo_core.seams.failures.ProviderError` that says
how to fix it. :func:`rss_bytes` and :func:`trim_heap` watch and give back the
process's memory around calls. ``llama_cpp`` is imported on first load, never
at import (docs/benchmarks.md §2).
"""

from __future__ import annotations

import ctypes
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from exo_core.seams.failures import FailureKind, ProviderError
from exo_core.seams.model import ModelRequest
from exo_edge.manifest import PromptFormat, Sampling

__all__ = ["KV_TYPES", "Draw", "LlamaSettings", "load_llama", "rss_bytes", "trim_heap"]


def rss_bytes() -> int:
    """This process's resident set size in bytes (Linux ``/proc``; 0 elsewhere)."""
    try:
        with open("/proc/self/status", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        return 0
    return 0


KV_TYPES = {"f16": 1, "q8_0": 8}  # llama.cpp's GGML_TYPE_* codes for the KV cache


@dataclass(frozen=True, slots=True)
class LlamaSettings:
    """How to run one GGUF model. Sized for a small board by default.

    ``n_ubatch`` bounds llama.cpp's compute buffer: it is reserved for the
    logits of ``n_ubatch`` tokens over the whole vocabulary (262,144 for
    Gemma 3: 1 MB a token), although a turn reads only the last token's, so
    most of it is never touched: 64 instead of 256 shrinks the reservation
    (address space, what ``prlimit --as`` counts) but the measured peak RSS
    by only 7 MB, and prompt speed moved within the noise (0.72x and 1.07x
    in two runs of ``benchmarks/bench_llama_memory.py``), so 256 stays.
    ``kv_type`` ``q8_0`` halves the KV cache (it needs ``flash_attn``) but
    changed one of two tool calls in ``benchmarks/bench_llama_memory.py``, so
    f16 stays the default.
    ``swa_full`` keeps a full-length cache for the sliding-window layers,
    which prefix reuse needs (llama.cpp cannot roll a windowed cache back).
    ``sampling`` is the model maker's recommended sampling (the manifest's
    ``[sampling]``); a request's own ``temperature`` wins over its temperature.
    ``use_mmap`` maps the GGUF (file-backed pages the kernel can drop and
    re-read under pressure) instead of copying it into anonymous memory.
    """

    model_path: Path
    prompt: PromptFormat = field(default_factory=PromptFormat)
    sampling: Sampling = field(default_factory=Sampling)
    n_ctx: int = 2048
    n_threads: int = 2
    n_batch: int = 256
    n_ubatch: int = 256
    kv_type: str = "f16"
    flash_attn: bool = False
    swa_full: bool = True
    use_mmap: bool = True
    seed: int = 0
    name: str = ""
    # Where the fixed head's saved states are kept (exo_edge.prefix_state); None keeps none.
    state_dir: Path | None = None

    @property
    def draw(self) -> Draw:
        """The sampling of this model's generations."""
        return Draw(seed=self.seed, sampling=self.sampling)


@dataclass(frozen=True, slots=True)
class Draw:
    """How one generation samples its tokens: the model's recommended sampling and the seed."""

    seed: int = 0
    sampling: Sampling = field(default_factory=Sampling)

    def kwargs(self, request: ModelRequest) -> dict[str, Any]:
        """llama-cpp-python's sampling arguments for ``request`` (its own temperature wins)."""
        sampling = self.sampling
        return {
            "temperature": request.temperature_or(sampling.temperature),
            "top_p": sampling.top_p,
            "top_k": sampling.top_k,
            "min_p": sampling.min_p,
            "repeat_penalty": sampling.repeat_penalty,
            "seed": self.seed,
        }


def load_llama(settings: LlamaSettings) -> Any:
    """A llama-cpp-python ``Llama`` for ``settings`` (blocking: call it in the model's worker).

    Raises :class:`ProviderError` (``UNAVAILABLE``) when the file is missing,
    llama-cpp-python is not installed, or llama.cpp cannot load the file.
    """
    path = settings.model_path
    if not path.is_file():
        raise ProviderError(
            f"local model file {path} is missing; run `exo models fetch`",
            kind=FailureKind.UNAVAILABLE,
            provider="local",
        )
    try:
        import llama_cpp
    except ImportError as exc:
        raise ProviderError(
            "llama-cpp-python is not installed; run scripts/install_edge.sh with this environment's python",
            kind=FailureKind.UNAVAILABLE,
            provider="local",
        ) from exc
    try:
        s = settings
        kv = KV_TYPES.get(s.kv_type)
        if kv is None:
            raise ValueError(f"kv_type must be one of {', '.join(KV_TYPES)}, not {s.kv_type!r}")
        return llama_cpp.Llama(
            model_path=str(path),
            n_ctx=s.n_ctx,
            n_threads=s.n_threads,
            n_threads_batch=s.n_threads,
            n_batch=s.n_batch,
            n_ubatch=min(s.n_ubatch, s.n_batch),
            type_k=kv,
            type_v=kv,
            flash_attn=s.flash_attn,
            swa_full=s.swa_full,
            use_mmap=s.use_mmap,
            seed=s.seed,
            verbose=False,
        )
    except (ValueError, RuntimeError) as exc:
        raise ProviderError(
            f"llama.cpp could not load {path} ({exc}); fetch it again with `exo models fetch`",
            kind=FailureKind.UNAVAILABLE,
            provider="local",
        ) from exc


def trim_heap() -> None:
    """Give freed heap back to the OS after a call (glibc's ``malloc_trim``).

    Without it, grammar sampling over Gemma's 262k-token vocabulary fragments
    the heap and RSS creeps up by megabytes a call; with it RSS stays flat.
    """
    try:
        libc = ctypes.CDLL("libc.so.6")
    except OSError:
        return  # not glibc: nothing to trim
    libc.malloc_trim(0)
