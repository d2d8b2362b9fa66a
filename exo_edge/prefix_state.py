"""The model state of a prompt's fixed head, computed once and kept on disk (docs/models.md, "The fixed prefix").

Every prompt exod sends the local model begins with the same tokens: the
base prompt, the pack and the tools, rendered by the model's chat template
(the layout of :func:`exo_core.context.fit.render`). llama.cpp keeps the KV
state of the previous call, so a follow-up reads only what is new; but a
fresh process (exod restarted) has nothing, and reading ~1,100 fixed tokens
costs 5-30 s on a small board. So the state of that head is saved once:

* **Keyed** by what it depends on: the model file's sha256, llama-cpp-python's
  version, the settings that shape the KV cache (``n_ctx``, its type, flash
  attention, the sliding-window cache) and the head's tokens themselves (the
  rendering of template, base prompt, pack and tools: any change is a new
  key). A head that changes (a pack edit) is computed and saved again.
* **Checked** when loaded: the file's magic and format version, every key
  field and the data's length and sha256. A state from another model file, a
  truncated or corrupt file, or one written by an older format is discarded
  (deleted, with a log line) and the head is read from scratch.
* **Saved** atomically (a temp file renamed into place); a disk that refuses
  (full, read-only) costs a log line and nothing else. At most
  :data:`KEEP` states are kept, the least recently used removed first.

One state is a few MB per hundred tokens of the head (Qwen2.5 0.5B, f16
cache: 12 KiB a token): docs/benchmarks.md §18 has the measured sizes.
The file: :data:`MAGIC`, a 4-byte header length, the header (JSON), the
head's tokens (int32), then llama.cpp's sequence state.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import struct
import threading
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from exo_edge.grammar_decode import common_prefix

__all__ = ["FORMAT", "KEEP", "MAGIC", "PrefixKey", "PrefixStates", "evaluate_head", "model_digest"]

_log = logging.getLogger(__name__)

MAGIC = b"EXOKV\n"
FORMAT = 1  # raised whenever the file layout or what a state holds changes
KEEP = 4  # state files kept per folder (one per model and head in use)
_SUFFIX = ".kvstate"
_DIGESTS = "model-digests.json"

Writer = Callable[[Path, bytes], None]


def write_atomically(path: Path, data: bytes) -> None:
    """Replace ``path`` with ``data``: a private (0600) temp file, synced, then renamed into place."""
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}-{threading.get_ident()}")
    try:
        handle = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(handle, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except OSError:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise


def private_folder(folder: Path) -> None:
    """Make ``folder`` (0700 whatever the umask) and, when missing, its parent (``$EXO_HOME/cache``, 0700 too)."""
    if not folder.parent.is_dir():
        folder.parent.mkdir(mode=0o700)
        os.chmod(folder.parent, 0o700)
    folder.mkdir(mode=0o700, exist_ok=True)
    os.chmod(folder, 0o700)


@dataclass(frozen=True, slots=True)
class PrefixKey:
    """Everything a saved head state depends on."""

    model_sha256: str
    runtime: str  # llama-cpp-python's version
    n_ctx: int
    kv_type: str
    flash_attn: bool
    swa_full: bool
    tokens_sha256: str
    n_tokens: int
    format: int = FORMAT

    @property
    def name(self) -> str:
        """The file name of this key's state."""
        digest = hashlib.sha256(json.dumps(asdict(self), sort_keys=True).encode()).hexdigest()
        return digest[:40] + _SUFFIX


def tokens_digest(tokens: list[int]) -> str:
    """The sha256 of a token sequence (as little-endian int32)."""
    return hashlib.sha256(struct.pack(f"<{len(tokens)}i", *tokens)).hexdigest()


def model_digest(path: Path, folder: Path | None = None) -> str:
    """The sha256 of the model file; remembered in ``folder`` by path, size, inode and mtime."""
    stat = path.stat()
    mark = f"{path.resolve()}:{stat.st_size}:{stat.st_ino}:{stat.st_mtime_ns}"
    known: dict[str, str] = {}
    memo = folder / _DIGESTS if folder is not None else None
    if memo is not None and memo.is_file():
        with contextlib.suppress(OSError, ValueError):
            loaded = json.loads(memo.read_text(encoding="utf-8"))
            if isinstance(loaded, dict):
                known = {str(k): str(v) for k, v in loaded.items()}
    if mark in known:
        return known[mark]
    sha = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            sha.update(block)
    digest = sha.hexdigest()
    if memo is not None:
        known[mark] = digest
        try:
            private_folder(memo.parent)
            write_atomically(memo, json.dumps(known, sort_keys=True).encode())
        except OSError as exc:
            _log.warning("could not remember the model file's digest: %s", exc)
    return digest


class _BadState(Exception):
    """A saved state that cannot be used; the message says why."""


class PrefixStates:
    """Saved head states in one folder (``$EXO_HOME/cache/prefix``), for one running model.

    ``write`` puts a file's bytes in place (atomically by default: the seam a
    test uses to make the disk refuse).
    """

    def __init__(self, folder: Path, *, write: Writer = write_atomically, keep: int = KEEP) -> None:
        self.folder = folder
        self.write = write
        self.keep = keep
        self._lock = threading.Lock()

    def key(self, model_sha256: str, settings: Any, tokens: list[int]) -> PrefixKey:
        """The key of ``tokens``' state for a model with these :class:`~exo_edge.llama_load.LlamaSettings`."""
        import llama_cpp

        return PrefixKey(
            model_sha256=model_sha256,
            runtime=str(llama_cpp.__version__),
            n_ctx=int(settings.n_ctx),
            kv_type=str(settings.kv_type),
            flash_attn=bool(settings.flash_attn),
            swa_full=bool(settings.swa_full),
            tokens_sha256=tokens_digest(tokens),
            n_tokens=len(tokens),
        )

    # -- loading ------------------------------------------------------------------------
    def load(self, llm: Any, key: PrefixKey, tokens: list[int]) -> bool:
        """Put the saved state of ``tokens`` into ``llm``; False (and the file discarded) when it cannot be used."""
        path = self.folder / key.name
        if not path.is_file():
            return False
        try:
            raw, offset = self._read(path, key, tokens)
            _set_state(llm, raw, offset, tokens)
        except _BadState as exc:
            _log.warning("discarded the saved prompt state %s: %s; reading the prompt from scratch", path.name, exc)
            with contextlib.suppress(OSError):
                path.unlink()
            return False
        except OSError as exc:
            _log.warning("could not read the saved prompt state %s (%s); reading the prompt from scratch", path, exc)
            return False
        with contextlib.suppress(OSError):
            os.utime(path)  # recently used: kept longest
        return True

    def _read(self, path: Path, key: PrefixKey, tokens: list[int]) -> tuple[bytearray, int]:
        """The file's bytes (read once, into one buffer) and where its state begins, once all of it is checked."""
        raw = bytearray(path.stat().st_size)
        with open(path, "rb") as fh:
            got = fh.readinto(raw)
        del raw[got:]
        if not raw.startswith(MAGIC) or len(raw) < len(MAGIC) + 4:
            raise _BadState("not a prompt state file")
        (size,) = struct.unpack_from("<I", raw, len(MAGIC))
        start = len(MAGIC) + 4
        try:
            header = json.loads(raw[start : start + size])
        except (ValueError, UnicodeDecodeError) as exc:
            raise _BadState("its header is not readable (truncated?)") from exc
        if not isinstance(header, dict):
            raise _BadState("its header is not an object")
        if header.get("format") != FORMAT:
            raise _BadState(f"written by format {header.get('format')!r}, this is format {FORMAT}")
        wanted = asdict(key)
        for field_name, value in wanted.items():
            if header.get(field_name) != value:
                raise _BadState(f"its {field_name} is {header.get(field_name)!r}, not {value!r}")
        body = start + size
        count = key.n_tokens * 4
        if len(raw) - body != count + header.get("state_bytes", -1):
            held, wanted = len(raw) - body, count + header.get("state_bytes", 0)
            raise _BadState(f"it holds {held} bytes after its header, not {wanted}")
        saved = list(struct.unpack_from(f"<{key.n_tokens}i", raw, body))
        if saved != tokens:
            raise _BadState("its tokens are not the prompt's")
        offset = body + count
        if hashlib.sha256(memoryview(raw)[offset:]).hexdigest() != header.get("state_sha256"):
            raise _BadState("its state does not match its checksum")
        return raw, offset

    # -- saving -------------------------------------------------------------------------
    def save(self, llm: Any, key: PrefixKey, tokens: list[int]) -> bool:
        """Save ``llm``'s state, which must hold exactly ``tokens``; False when the disk refused."""
        data = _get_state(llm)
        header = asdict(key) | {"state_bytes": len(data), "state_sha256": hashlib.sha256(data).hexdigest()}
        encoded = json.dumps(header, sort_keys=True).encode()
        blob = b"".join(
            (MAGIC, struct.pack("<I", len(encoded)), encoded, struct.pack(f"<{len(tokens)}i", *tokens), data)
        )
        path = self.folder / key.name
        with self._lock:
            try:
                private_folder(self.folder)
                self.write(path, blob)
            except OSError as exc:
                _log.warning("could not save the prompt state (%s); the next start reads the prompt again", exc)
                return False
            self._evict()
        return True

    def _evict(self) -> None:
        states = sorted(self.folder.glob("*" + _SUFFIX), key=_mtime, reverse=True)
        for old in states[self.keep :]:
            with contextlib.suppress(OSError):
                old.unlink()

    def files(self) -> list[Path]:
        """The state files kept now."""
        return sorted(self.folder.glob("*" + _SUFFIX)) if self.folder.is_dir() else []


def _mtime(path: Path) -> float:
    try:
        return path.stat().st_mtime
    except OSError:
        return 0.0


def _ctx(llm: Any) -> Any:
    return llm._ctx.ctx  # llama-cpp-python keeps the llama_context here


def _get_state(llm: Any) -> memoryview:
    """The KV state of ``llm``'s sequence 0 (llama.cpp's sequence state: the cache, no logits), not copied."""
    import ctypes

    import llama_cpp

    size = llama_cpp.llama_state_seq_get_size(_ctx(llm), 0)
    buffer = (ctypes.c_uint8 * size)()
    written = llama_cpp.llama_state_seq_get_data(_ctx(llm), buffer, size, 0)
    return memoryview(buffer).cast("B")[:written]


def _set_state(llm: Any, raw: bytearray, offset: int, tokens: list[int]) -> None:
    """Load the sequence state in ``raw`` from ``offset`` into ``llm`` (no copy) and make its token record say so."""
    import ctypes

    import llama_cpp

    size = len(raw) - offset
    llm.n_tokens = 0
    llm._ctx.kv_cache_clear()
    buffer = (ctypes.c_uint8 * size).from_buffer(raw, offset)
    if llama_cpp.llama_state_seq_set_data(_ctx(llm), buffer, size, 0) != size:
        llm._ctx.kv_cache_clear()
        raise _BadState("llama.cpp refused it")
    del buffer  # the bytearray may be freed once nothing views it
    llm.input_ids[: len(tokens)] = tokens
    llm.n_tokens = len(tokens)


def evaluate_head(llm: Any, tokens: list[int], *, stop: threading.Event | None = None) -> int:
    """Evaluate ``tokens`` after what ``llm`` already holds of them, a batch at a time.

    Returns how many it evaluated; between two batches ``stop`` (set by a
    live turn waiting for the model) ends it early, and what was evaluated
    stays for that turn to reuse.
    """
    cached = common_prefix(llm.input_ids[: llm.n_tokens].tolist(), tokens)
    llm.n_tokens = cached  # eval() drops the cache past this point
    done = cached
    step = max(1, int(llm.n_batch))
    while done < len(tokens):
        if stop is not None and stop.is_set():
            break
        llm.eval(tokens[done : done + step])
        done += len(tokens[done : done + step])
    return done - cached
