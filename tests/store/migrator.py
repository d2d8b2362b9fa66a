"""Runs a store migration and SIGKILLs itself at the K-th step (for test_migrate)."""

from __future__ import annotations

import os
import signal
import sys
from pathlib import Path

from exo_core.store.migrate import migrate_store


def main() -> None:
    root, target = Path(sys.argv[1]), int(sys.argv[2])
    steps: list[str] = []

    def on_step(name: str) -> None:
        if len(steps) == target:
            os.kill(os.getpid(), signal.SIGKILL)
        steps.append(name)

    migrate_store(root, on_step=on_step)
    print("\n".join(steps))


if __name__ == "__main__":
    main()
