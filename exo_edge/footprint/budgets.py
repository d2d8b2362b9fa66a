"""The memory budgets of each board profile, and the model's major page faults after warm-up.

docs/models.md ("Board profiles"): the whole device stack (exod,
the local model, the embedder, the device client, the speech recogniser) in
one memory cgroup peaks at most at ``standard`` 1.2 GB and ``small`` 480 MB;
idle exod (no model loaded) at most 50 MB. The audit's memory limit defaults
to the board's budget, so a stack that does not fit is either OOM-killed or
forced to drop pages of the memory-mapped model and read them back: the
second is **thrashing**, a failure even when nothing is killed. It shows as
major page faults of exod after the first answer (the warm-up, when the
model's pages are first read); :func:`thrashing` is the rule.

A few faults after warm-up are normal: the GGUF is memory-mapped, and rows of
the token-embedding table for tokens not seen in the first answer are read
when first used. Thrashing is faults that re-read a sizeable part of the
file: more than ``THRASH_SHARE`` of the model file's pages.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

__all__ = [
    "BUDGETS",
    "IDLE_BUDGET_MB",
    "THRASH_SHARE",
    "BoardBudget",
    "budget_for",
    "cached_mb",
    "file_cached_mb",
    "major_faults",
    "thrashing",
]

IDLE_BUDGET_MB = 50.0
# Faults after warm-up above this share of the model file's pages count as thrashing.
THRASH_SHARE = 0.10


@dataclass(frozen=True, slots=True)
class BoardBudget:
    """One board's peak budget for the whole device stack, in MiB (the cgroup limit by default)."""

    board: str
    peak_mb: float
    idle_mb: float = IDLE_BUDGET_MB


# 1.2 GB read as 1200 MiB (the stricter reading of "GB"); 480 MB as 480 MiB.
BUDGETS: dict[str, BoardBudget] = {
    "small": BoardBudget("small", 480.0),
    "standard": BoardBudget("standard", 1200.0),
}


def budget_for(board: str) -> BoardBudget:
    """The budget of ``board``; a ``SystemExit`` naming the boards that have one otherwise."""
    try:
        return BUDGETS[board]
    except KeyError:
        raise SystemExit(
            f"footprint: no memory budget for board {board!r}; choose one of: {', '.join(BUDGETS)}"
        ) from None


def major_faults(pid: int) -> int | None:
    """Major page faults of ``pid`` so far (``majflt``, field 12 of ``/proc/PID/stat``); None once it is gone."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as fh:
            stat = fh.read()
    except OSError:
        return None
    fields = stat.rsplit(")", 1)[1].split()  # the command name may hold spaces and parentheses
    try:
        return int(fields[9])  # after ")": state ppid pgrp session tty_nr tpgid flags minflt cminflt majflt
    except (IndexError, ValueError):
        return None


def thrashing(faults_after_warmup: int | None, model_file: Path | None, page_size: int = 4096) -> bool | None:
    """Whether the faults after warm-up re-read more than ``THRASH_SHARE`` of the model file (None: unknown)."""
    if faults_after_warmup is None or model_file is None:
        return None
    try:
        pages = max(1, model_file.stat().st_size // page_size)
    except OSError:
        return None
    return faults_after_warmup > THRASH_SHARE * pages


def file_cached_mb(path: Path | None) -> float | None:
    """How much of the file at ``path`` is in the page cache now (None when it cannot be told)."""
    if path is None:
        return None
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return None
    try:
        return cached_mb(fd, os.fstat(fd).st_size)
    finally:
        os.close(fd)


def cached_mb(fd: int, size: int) -> float | None:
    """How much of an open file is in the page cache (``mincore`` over a read-only mapping)."""
    import ctypes
    import mmap

    if size == 0:
        return 0.0
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        # a private mapping: from_buffer needs a writable one, and nothing is written or read
        with mmap.mmap(fd, size, access=mmap.ACCESS_COPY) as mapped:
            pages = (size + mmap.PAGESIZE - 1) // mmap.PAGESIZE
            vec = (ctypes.c_ubyte * pages)()
            anchor = (ctypes.c_char * 1).from_buffer(mapped)
            try:
                failed = libc.mincore(ctypes.c_void_p(ctypes.addressof(anchor)), ctypes.c_size_t(size), vec)
            finally:
                del anchor  # the mapping can close only once no buffer points into it
            if failed:
                return None
            return round(sum(b & 1 for b in vec) * mmap.PAGESIZE / (1024 * 1024), 1)
    except (OSError, ValueError, BufferError):
        return None
