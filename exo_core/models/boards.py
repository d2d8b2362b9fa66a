"""Board profiles: which local model, context and threads a machine of a given size gets.

``exo init`` picks a profile from the machine's memory (``MemTotal`` in
``/proc/meminfo``), or takes ``--board NAME`` / ``$EXO_BOARD``, and writes
what the profile needs into ``config.toml`` (:func:`profile_config`). The
table is data here so ``exo_core`` needs nothing from ``exo_edge``; docs/models.md
("Board profiles") has the board classes, their memory budgets and the
reasons for each number.

Memory thresholds are on ``MemTotal``, which is below the board's nominal
size (the kernel and firmware keep some): a 1 GB Pi 3 reports about
0.9 GiB, a 2 GB Pi 4 about 1.8 GiB, an 8 GB Pi 5 about 7.6 GiB, a 16 GB
laptop about 15.5 GiB.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from exo_core.errors import ConfigError

__all__ = [
    "BoardProfile",
    "BOARDS",
    "DEFAULT_BOARD",
    "EMBEDDER",
    "SMALL_BELOW_MIB",
    "STANDARD_BELOW_MIB",
    "board",
    "pick_board",
    "read_memtotal_mib",
    "detect_board",
    "profile_threads",
    "profile_config",
]

# The retrieval embedder every profile needs (exo_edge/embedder.py).
EMBEDDER = "paraphrase-minilm-l3-v2"
# MemTotal below 1.5 GiB: a 512 MB - 1 GB board. Below 12 GiB: a 2 - 8 GB board
# (an 8 GB board reports ~7.6 GiB, so there is room for odd sizes); above: a laptop.
SMALL_BELOW_MIB = 1536
STANDARD_BELOW_MIB = 12 * 1024


@dataclass(frozen=True, slots=True)
class BoardProfile:
    """One board class: the ``main`` role's local model, its window and decode threads.

    ``max_threads`` caps decode threads; :func:`profile_threads` leaves one
    core free for exod, the speech recogniser and the device client, except on
    a 2-core machine, where 2 threads with ``OMP_WAIT_POLICY=PASSIVE`` (what
    exod sets) decoded 2.9-3.4x faster than 1 even at a load average of 11-14
    (docs/benchmarks.md §14; the 8-25x slowdown in docs/models.md, "Facts measured on
    the development machines", is the ACTIVE policy's). ``fetch`` lists the manifests ``exo models fetch`` gets for
    this profile.
    """

    name: str
    description: str
    model: str
    n_ctx: int
    max_threads: int
    fetch: tuple[str, ...]

    @property
    def main(self) -> tuple[str, ...]:
        """The ``main`` role's routes."""
        return (f"local:{self.model}",)


BOARDS: Mapping[str, BoardProfile] = {
    "small": BoardProfile(
        name="small",
        description="512 MB - 1 GB boards (Pi Zero 2 W, Pi 3): Gemma 3 270M base, 480 MB budget",
        model="gemma-3-270m",
        # 2048 is the window the 480 MB budget was measured with (docs/models.md).
        n_ctx=2048,
        max_threads=4,
        fetch=("gemma-3-270m", EMBEDDER),
    ),
    "standard": BoardProfile(
        name="standard",
        description="2 - 8 GB boards (Pi 4, Pi 5), the default: Qwen2.5-Coder 0.5B Instruct, 1.2 GB budget",
        model="qwen2.5-coder-0.5b-instruct",
        # The KV cache is 12 KiB a token (24 layers x 2 KV heads x 64 x K+V, f16): 48 MiB at 4096.
        n_ctx=4096,
        max_threads=4,
        fetch=("qwen2.5-coder-0.5b-instruct", EMBEDDER),
    ),
    "laptop": BoardProfile(
        name="laptop",
        description="a laptop or desktop: Qwen2.5-Coder 1.5B Instruct, also served to a device",
        model="qwen2.5-coder-1.5b-instruct",
        # 28 KiB a token (28 layers x 2 KV heads x 128 x K+V, f16): 224 MiB at 8192.
        n_ctx=8192,
        max_threads=8,
        fetch=("qwen2.5-coder-1.5b-instruct", EMBEDDER),
    ),
}
DEFAULT_BOARD = "standard"


def board(name: str) -> BoardProfile:
    """The profile called ``name``; a :class:`ConfigError` naming the known ones otherwise."""
    try:
        return BOARDS[name]
    except KeyError:
        raise ConfigError(f"unknown board profile {name!r}; choose one of: {', '.join(BOARDS)}") from None


def pick_board(memtotal_mib: int | None) -> BoardProfile:
    """The profile for a machine with ``memtotal_mib`` of memory (the default when unknown)."""
    if memtotal_mib is None:
        return BOARDS[DEFAULT_BOARD]
    if memtotal_mib < SMALL_BELOW_MIB:
        return BOARDS["small"]
    if memtotal_mib < STANDARD_BELOW_MIB:
        return BOARDS["standard"]
    return BOARDS["laptop"]


def read_memtotal_mib(meminfo: Path = Path("/proc/meminfo")) -> int | None:
    """``MemTotal`` from ``/proc/meminfo`` in MiB; ``None`` where there is no such file or line."""
    try:
        text = meminfo.read_text(encoding="ascii", errors="replace")
    except OSError:
        return None
    for line in text.splitlines():
        key, _, rest = line.partition(":")
        if key.strip() != "MemTotal":
            continue
        fields = rest.split()
        if not fields or not fields[0].isdigit():
            return None
        kib = int(fields[0])
        unit = fields[1].lower() if len(fields) > 1 else "kb"
        if unit != "kb":
            return None
        return kib // 1024
    return None


def detect_board(
    requested: str | None = None,
    *,
    env: Mapping[str, str] | None = None,
    memtotal: Callable[[], int | None] = read_memtotal_mib,
) -> tuple[BoardProfile, str]:
    """The profile to use and why: ``requested`` (``--board``), else ``$EXO_BOARD``, else by memory."""
    if requested:
        return board(requested), "chosen with --board"
    chosen = (env if env is not None else os.environ).get("EXO_BOARD")
    if chosen:
        return board(chosen), "chosen by $EXO_BOARD"
    mib = memtotal()
    if mib is None:
        return BOARDS[DEFAULT_BOARD], "memory size unknown: the default"
    return pick_board(mib), f"picked for {mib} MiB of memory"


def profile_threads(profile: BoardProfile, cpu_count: int | None) -> int:
    """Decode threads: the cores less one (for the rest of the stack), but both cores of a 2-core
    machine (measured faster with the PASSIVE wait policy: docs/benchmarks.md §14); at most the cap."""
    cores = cpu_count or 1
    spare_one = cores - 1
    both_of_two = min(cores, 2)
    return max(1, min(profile.max_threads, max(spare_one, both_of_two)))


def profile_config(profile: BoardProfile, *, cpu_count: int | None = None) -> tuple[str, str]:
    """The ``config.toml`` text for ``profile``: ``(top, tables)``.

    ``top`` is the ``board`` line, a top-level key that must come before any
    table; ``tables`` are ``[models.roles]`` and ``[models.local]``.
    """
    threads = profile_threads(profile, cpu_count if cpu_count is not None else os.cpu_count())
    routes = ", ".join(f'"{r}"' for r in profile.main)
    top = f'board = "{profile.name}"  # {profile.description}'
    tables = "\n".join(
        [
            "# Written by `exo init` for this board (docs/models.md, Board profiles). A laptop serving a",
            '# larger model goes first, e.g. main = ["laptop:qwen2.5-coder-1.5b-instruct", ...], with',
            '# [models.providers.laptop] kind = "openai" and its base_url.',
            "[models.roles]",
            f"main = [{routes}]",
            "",
            "[models.local]",
            f"n_ctx = {profile.n_ctx}",
            f"n_threads = {threads}",
            "",
        ]
    )
    return top, tables
