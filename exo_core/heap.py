"""The daemon's C heap: one malloc arena for the whole process (glibc).

glibc gives each thread that allocates its own malloc arena (up to 8 per
core), and each arena keeps pages of its own. exod's threads (the event loop,
``asyncio.to_thread`` workers for SQLite and the store, the stdin and ledger
threads) allocate little, so the extra arenas are mostly kept-but-unused pages.
Measured on a ``standard`` board home, idle exod's VmRSS after start-up was
50.2-50.5 MB with the default and 49.8-49.9 MB with this limit (49.7-49.8 MB
with ``MALLOC_ARENA_MAX=1`` set before the process starts), against the 50 MB
idle budget (docs/benchmarks.md §2, "Idle exod again"). The
model's weights and KV cache are ggml buffers, not malloc arenas, so the
threads that generate do not contend for this one.
"""

from __future__ import annotations

import ctypes
import os

__all__ = ["one_malloc_arena"]

# mallopt's parameter number for the arena limit (glibc's malloc.h: M_ARENA_MAX).
_M_ARENA_MAX = -8


def one_malloc_arena() -> bool:
    """Limit glibc's malloc to one arena; call before the process starts threads.

    Returns whether it applied: ``False`` where the C library is not glibc
    (nothing to limit there) or the person set ``MALLOC_ARENA_MAX`` themselves.
    """
    if "MALLOC_ARENA_MAX" in os.environ:
        return False  # the person's own setting wins
    try:
        libc = ctypes.CDLL("libc.so.6")
    except OSError:
        return False
    return bool(libc.mallopt(_M_ARENA_MAX, 1))
