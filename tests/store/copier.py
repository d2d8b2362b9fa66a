"""A copier process for the interrupted-copy tests (run as a subprocess).

usage: python copier.py SRC DEST KEYS_DIR MODE [K]

MODE ``steps`` exports and prints every step name; ``kill-at`` SIGKILLs this
process at the K-th step (0-based); ``run`` prints ``start`` and exports (the
parent kills it at a random moment); ``writer`` appends ledger entries until
killed.
"""

from __future__ import annotations

import os
import signal
import sys
import time
from pathlib import Path

from exo_core.ledger import load_signing_key
from exo_core.store.ledger_bridge import checkpoint_hook, open_ledger
from exo_core.store.transfer import export_store


def main() -> None:
    src, dest, keys, mode = Path(sys.argv[1]), Path(sys.argv[2]), Path(sys.argv[3]), sys.argv[4]
    signer = load_signing_key(keys)
    if mode == "writer":
        ledger = open_ledger(src, signer=signer)
        i = 0
        print("start", flush=True)
        while True:
            ledger.append("utterance", {"text": f"live entry {i}"})
            i += 1
            time.sleep(0.002)  # a busy exod, not a lock-hogging loop (SQLite locks are not fair)
    steps: list[str] = []
    target = int(sys.argv[5]) if len(sys.argv) > 5 else -1

    def on_step(name: str) -> None:
        if len(steps) == target:
            os.kill(os.getpid(), signal.SIGKILL)
        steps.append(name)

    print("start", flush=True)
    result = export_store(src, dest, ledger_hook=checkpoint_hook(signer), on_step=on_step)
    if mode == "steps":
        print("\n".join(steps))
    print(f"export {result.export_id}", flush=True)


if __name__ == "__main__":
    main()
